//! The built `ovn-bgp-agent` binary: configuration output, exit codes,
//! warnings and logging, as an operator sees them.

mod common;

use common::{agent, scratch, stderr, stdout, write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use obgp_config::{effective_json, Config};
use serde_json::Value;

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/config/bgp-agent.conf.sample")
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn config_json_of_the_sample_shows_upstream_defaults() {
    let out = agent(
        &[
            "--config-file",
            path(&sample()),
            "config",
            "--format",
            "json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "the sample loads with no warning");
    let j = json(&out);
    assert_eq!(j, effective_json(&Config::default()));
    assert_eq!(j["DEFAULT"]["bgp_AS"], "64999");
    assert_eq!(j["DEFAULT"]["reconcile_interval"], 300);
    assert_eq!(j["DEFAULT"]["driver"], "ovn_bgp_driver");
    assert_eq!(j["DEFAULT"]["use_stderr"], false);
    assert_eq!(j["agent"]["root_helper"], "sudo");
    assert_eq!(j["ovn"]["ovn_sb_connection"], Value::Null);
    assert_eq!(
        j["local_ovn_cluster"]["external_nics"],
        serde_json::json!([])
    );
    let sections: Vec<&String> = j.as_object().unwrap().keys().collect();
    assert_eq!(sections, ["DEFAULT", "agent", "local_ovn_cluster", "ovn"]);
}

#[test]
fn ovn_sb_connection_in_default_shows_under_ovn() {
    let dir = scratch("sb");
    let f = write(
        &dir,
        "a.conf",
        "[DEFAULT]\novn_sb_connection = tcp:127.0.0.1:6642\n",
    );
    let out = agent(
        &["--config-file", path(&f), "config", "--format", "json"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out)["ovn"]["ovn_sb_connection"], "tcp:127.0.0.1:6642");
    assert!(stderr(&out).contains("deprecated"), "{}", stderr(&out));
}

#[test]
fn an_invalid_driver_exits_2_naming_driver() {
    let dir = scratch("bogus");
    let f = write(&dir, "a.conf", "[DEFAULT]\ndriver = bogus\n");
    for args in [
        vec!["--config-file", path(&f)],
        vec!["--config-file", path(&f), "config"],
    ] {
        let out = agent(&args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("[DEFAULT] driver: must be one of"), "{err}");
        assert!(err.contains("(bogus)"), "{err}");
        assert_eq!(stdout(&out), "", "nothing starts");
    }
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    assert_eq!(agent(&["--no-such-flag"], &[]).status.code(), Some(2));
    assert_eq!(
        agent(&["config", "--format", "yaml"], &[]).status.code(),
        Some(2)
    );
    assert_eq!(
        agent(&["reconcile"], &[]).status.code(),
        Some(2),
        "--once is required"
    );
    let help = agent(&["--help"], &[]);
    assert_eq!(help.status.code(), Some(0));
    assert!(
        stdout(&help).contains("level-triggered reconciler"),
        "--help says what the daemon does"
    );
}

#[test]
fn a_missing_config_file_exits_2() {
    let out = agent(
        &["--config-file", "/nonexistent/bgp-agent.conf", "config"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("/nonexistent/bgp-agent.conf: not found"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn version_prints_the_version() {
    let out = agent(&["version"], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        format!("ovn-bgp-agent {}\n", env!("CARGO_PKG_VERSION"))
    );
}

/// An exposing method whose desired state is not implemented yet (l2vni):
/// every command that would run it says so and exits 1, before connecting
/// anywhere. The logging tests use it as a quick, deterministic way through
/// start-up.
const UNIMPLEMENTED_DRIVER: (&str, &str) = ("OVN_BGP_AGENT_DEFAULT__EXPOSING_METHOD", "l2vni");
const UNSUPPORTED: &str = "with exposing_method = l2vni is not supported yet";

#[test]
fn commands_refuse_an_unimplemented_driver_with_exit_1() {
    let s = path(&sample()).to_string();
    let plan = agent(
        &["--config-file", &s, "plan", "--format", "json"],
        &[UNIMPLEMENTED_DRIVER],
    );
    assert_eq!(plan.status.code(), Some(1));
    assert!(stderr(&plan).contains(UNSUPPORTED), "{}", stderr(&plan));
    let rec = agent(
        &["--config-file", &s, "reconcile", "--once"],
        &[UNIMPLEMENTED_DRIVER],
    );
    assert_eq!(rec.status.code(), Some(1));
    assert!(stderr(&rec).contains(UNSUPPORTED), "{}", stderr(&rec));
}

#[test]
fn the_vrf_mode_without_evpn_local_ip_exits_2_naming_the_option() {
    let s = path(&sample()).to_string();
    let env = [
        ("OVN_BGP_AGENT_DEFAULT__DRIVER", "nb_ovn_bgp_driver"),
        ("OVN_BGP_AGENT_DEFAULT__EXPOSING_METHOD", "vrf"),
        // Set, so that the missing connection is not what is refused.
        (
            "OVN_BGP_AGENT_OVN__OVN_NB_CONNECTION",
            "unix:/nonexistent/nb.sock",
        ),
    ];
    for args in [
        &["--config-file", &s, "reconcile", "--once"][..],
        &["--config-file", &s][..],
    ] {
        let out = agent(args, &env);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let said = format!("{}{}", stdout(&out), stderr(&out));
        assert!(said.contains("evpn_local_ip"), "{args:?}: {said}");
    }
}

#[test]
fn the_daemon_logs_why_it_cannot_run_and_exits_1_logging_to_stdout_by_default() {
    let out = agent(&["--config-file", path(&sample())], &[UNIMPLEMENTED_DRIVER]);
    assert_eq!(out.status.code(), Some(1));
    // oslo.log's fallback handler is stdout.
    assert!(stdout(&out).contains(UNSUPPORTED), "{}", stdout(&out));
    assert_eq!(stderr(&out), "");
}

#[test]
fn use_stderr_and_use_json_route_and_format_the_logs() {
    let dir = scratch("stderr");
    let f = write(
        &dir,
        "a.conf",
        "[DEFAULT]\nuse_stderr = true\nuse_json = true\n",
    );
    let out = agent(&["--config-file", path(&f)], &[UNIMPLEMENTED_DRIVER]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "");
    let lines: Vec<Value> = stderr(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(lines.iter().any(|l| l["level"] == "ERROR"
        && l["message"]
            .as_str()
            .unwrap()
            .contains("is not supported yet")));
}

#[test]
fn debug_adds_debug_records_and_a_file_plus_use_stderr_writes_both() {
    let dir = scratch("debug");
    let log = dir.join("agent.log");
    let f = write(
        &dir,
        "a.conf",
        &format!(
            "[DEFAULT]\nlog_file = {}\nuse_stderr = true\n",
            log.display()
        ),
    );
    let quiet = agent(&["--config-file", path(&f)], &[UNIMPLEMENTED_DRIVER]);
    assert_eq!(quiet.status.code(), Some(1));
    assert!(
        !stderr(&quiet).contains("configuration loaded"),
        "{}",
        stderr(&quiet)
    );
    let loud = agent(
        &["--config-file", path(&f), "--debug"],
        &[UNIMPLEMENTED_DRIVER],
    );
    assert_eq!(loud.status.code(), Some(1));
    assert!(stderr(&loud).contains("DEBUG"), "{}", stderr(&loud));
    assert!(
        stderr(&loud).contains("configuration loaded"),
        "{}",
        stderr(&loud)
    );
    let file = std::fs::read_to_string(&log).unwrap();
    assert_eq!(file.matches("is not supported yet").count(), 2, "{file}");
    assert!(file.contains("configuration loaded"));
    assert_eq!(stdout(&loud), "");
}

#[test]
fn log_file_under_log_dir_receives_the_logs() {
    let dir = scratch("logfile");
    let logs = dir.join("logs");
    std::fs::create_dir(&logs).unwrap();
    let f = write(
        &dir,
        "a.conf",
        &format!(
            "[DEFAULT]\nlog_dir = {}\nlog_file = agent.log\ndebug = true\n",
            logs.display()
        ),
    );
    let out = agent(&["--config-file", path(&f)], &[UNIMPLEMENTED_DRIVER]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "", "a log file replaces stdout");
    let text = std::fs::read_to_string(logs.join("agent.log")).unwrap();
    assert!(text.contains("is not supported yet"), "{text}");
}

#[test]
fn an_unopenable_log_file_is_a_runtime_failure() {
    let out = agent(&["--log-file", "/nonexistent/dir/agent.log"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("/nonexistent/dir/agent.log"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn environment_overrides_reach_the_effective_config() {
    let out = agent(
        &[
            "--config-file",
            path(&sample()),
            "config",
            "--format",
            "json",
        ],
        &[
            ("OVN_BGP_AGENT_DEFAULT__DRIVER", "nb_ovn_bgp_driver"),
            (
                "OVN_BGP_AGENT_OVN__OVN_NB_CONNECTION",
                "ssl:192.0.2.10:6641",
            ),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["DEFAULT"]["driver"], "nb_ovn_bgp_driver");
    assert_eq!(j["ovn"]["ovn_nb_connection"], "ssl:192.0.2.10:6641");
}

#[test]
fn files_and_a_dir_layer_in_command_line_order() {
    let dir = scratch("layers");
    let a = write(
        &dir,
        "a.conf",
        "[DEFAULT]\nbgp_AS = 65001\nbgp_nic = nic-a\n",
    );
    let b = write(
        &dir,
        "b.conf",
        "[DEFAULT]\nbgp_nic = nic-b\nbgp_vrf = vrf-b\n",
    );
    let d = dir.join("conf.d");
    std::fs::create_dir(&d).unwrap();
    write(&d, "10.conf", "[DEFAULT]\nbgp_vrf = vrf-10\n");
    write(&d, "20.conf", "[DEFAULT]\nbgp_vrf = vrf-20\n");
    let out = agent(
        &[
            "--config-file",
            path(&a),
            "--config-file",
            path(&b),
            "--config-dir",
            path(&d),
            "config",
            "--format",
            "json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["DEFAULT"]["bgp_AS"], "65001");
    assert_eq!(j["DEFAULT"]["bgp_nic"], "nic-b");
    assert_eq!(j["DEFAULT"]["bgp_vrf"], "vrf-20");
}

#[test]
fn unknown_and_ignored_options_warn_on_stderr_without_spoiling_stdout() {
    let dir = scratch("warn");
    let f = write(
        &dir,
        "a.conf",
        "[DEFAULT]\nbgp_as = 65000\nuse_syslog = true\n[nope]\nx = 1\n",
    );
    let out = agent(
        &["--config-file", path(&f), "config", "--format", "json"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(err.contains("unknown option [DEFAULT] bgp_as"), "{err}");
    assert!(err.contains("unknown section [nope]"), "{err}");
    assert_eq!(
        err.matches("use_syslog is set but ignored by this agent")
            .count(),
        1,
        "{err}"
    );
    json(&out);
}

#[test]
fn oslo_log_flags_override_the_file() {
    let dir = scratch("flags");
    let f = write(&dir, "a.conf", "[DEFAULT]\ndebug = false\n");
    let out = agent(
        &[
            "--config-file",
            path(&f),
            "--debug",
            "config",
            "--format",
            "json",
        ],
        &[],
    );
    assert_eq!(json(&out)["DEFAULT"]["debug"], true);
    let out = agent(
        &[
            "--config-file",
            path(&f),
            "--debug",
            "--nodebug",
            "config",
            "--format",
            "json",
        ],
        &[],
    );
    assert_eq!(json(&out)["DEFAULT"]["debug"], false);
}

#[test]
fn config_text_is_an_ini_listing_that_loads_back_to_the_same_config() {
    let dir = scratch("text");
    let f = write(
        &dir,
        "a.conf",
        "[DEFAULT]\nbgp_AS = 65001\naddress_scopes = a, b\n[local_ovn_cluster]\npeer_ips = 10.0.0.1,10.0.0.2\n",
    );
    let text = agent(&["--config-file", path(&f), "config"], &[]);
    assert_eq!(text.status.code(), Some(0));
    let listing = stdout(&text);
    assert!(listing.starts_with("[DEFAULT]\n"), "{listing}");
    // `<None>` is how the sample spells unset; drop those lines to feed it back.
    let reloadable: String = listing
        .lines()
        .filter(|l| !l.ends_with("= <None>"))
        .map(|l| format!("{l}\n"))
        .collect();
    let g = write(&dir, "b.conf", &reloadable);
    let a = agent(
        &["--config-file", path(&f), "config", "--format", "json"],
        &[],
    );
    let b = agent(
        &["--config-file", path(&g), "config", "--format", "json"],
        &[],
    );
    assert_eq!(json(&a), json(&b));
}

#[test]
fn key_and_certificate_options_show_paths_never_contents() {
    let dir = scratch("pki");
    let key = write(
        &dir,
        "agent.key",
        "-----BEGIN PRIVATE KEY-----\nSECRETSECRET\n-----END PRIVATE KEY-----\n",
    );
    let f = write(
        &dir,
        "a.conf",
        &format!("[ovn]\novn_sb_private_key = {}\n", key.display()),
    );
    for format in ["json", "text"] {
        let out = agent(
            &["--config-file", path(&f), "config", "--format", format],
            &[],
        );
        assert_eq!(out.status.code(), Some(0));
        let text = stdout(&out);
        assert!(text.contains(path(&key)), "{text}");
        assert!(!text.contains("SECRETSECRET"), "{text}");
    }
}

/// The daemon, still waiting for its databases: SIGHUP is logged and does
/// not stop it (no reload yet), SIGTERM stops it with exit 0.
#[test]
fn sighup_is_ignored_and_sigterm_exits_0() {
    let dir = scratch("signals");
    let f = write(
        &dir,
        "a.conf",
        &format!(
            "[DEFAULT]\ndriver = nb_ovn_bgp_driver\nuse_stderr = true\n\
             ovsdb_connection = unix:{0}/no-ovs.sock\n\
             [ovn]\novn_nb_connection = unix:{0}/no-nb.sock\n",
            dir.display()
        ),
    );
    let home = scratch("home");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ovn-bgp-agent"))
        .args(["--config-file", path(&f), "--debug"])
        .env_clear()
        .env("HOME", &home)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Collect stderr as it comes, to know when the handlers are in place.
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stderr_pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr_pipe)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let mut log: Vec<String> = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !log.iter().any(|l| l.contains("signal handlers installed")) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        log.push(rx.recv_timeout(left).expect("the daemon starts"));
    }
    let pid = child.id().to_string();
    let signal = |sig: &str| {
        let ok = Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig}");
    };
    signal("-HUP");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "SIGHUP must not stop the agent"
    );
    signal("-TERM");
    let status = child.wait().unwrap();
    reader.join().unwrap();
    log.extend(rx.try_iter());
    let log = log.join("\n");
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(
        log.contains("SIGHUP: configuration reload is not supported"),
        "{log}"
    );
}

#[test]
fn a_bgp_nic_or_bgp_vrf_naming_a_device_of_the_node_exits_2_with_the_reason() {
    // The golden scenario's node has `lo` (loopback) and `eth0` (a NIC).
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/conformance/scenarios/nb-provider-vm.json");
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo/bgp-agent.conf");
    for (option, device) in [("BGP_NIC", "lo"), ("BGP_NIC", "eth0"), ("BGP_VRF", "eth0")] {
        let var = format!("OVN_BGP_AGENT_DEFAULT__{option}");
        let out = agent(
            &[
                "--config-file",
                path(&config),
                "plan",
                "--ovn",
                path(&scenario),
            ],
            &[(var.as_str(), device)],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{option}={device}: {err}");
        assert!(
            err.contains(&format!("device {device} exists as a"))
                && err.contains("not the agent's"),
            "{option}={device}: {err}"
        );
        assert!(
            stdout(&out).is_empty(),
            "no plan is printed: {}",
            stdout(&out)
        );
    }
    // The agent's own names plan as usual on the same node.
    let out = agent(
        &[
            "--config-file",
            path(&config),
            "plan",
            "--ovn",
            path(&scenario),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn explain_ovn_answers_from_a_scenario_in_text_and_json() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scenario = dir.join("fixtures/conformance/scenarios/nb-provider-vm.json");
    let sc: Value = serde_json::from_str(&std::fs::read_to_string(&scenario).unwrap()).unwrap();
    let config = dir.join("fixtures/demo/bgp-agent.conf");
    // The scenario's chassis and its VM port bound there, from its rows.
    let ovs = sc["ovn"]["Open_vSwitch"]["Open_vSwitch"]
        .as_object()
        .unwrap();
    let ids = &ovs.values().next().unwrap()["external_ids"][1];
    let hostname = ids
        .as_array()
        .unwrap()
        .iter()
        .find(|kv| kv[0] == "hostname")
        .map(|kv| kv[1].as_str().unwrap().to_string())
        .unwrap();
    let lsps = sc["ovn"]["OVN_Northbound"]["Logical_Switch_Port"]
        .as_object()
        .unwrap();
    let (uuid, vm) = lsps
        .iter()
        .find(|(_, p)| p["type"].as_str().unwrap_or("").is_empty() && p["up"] == true)
        .unwrap();
    let ip = vm["addresses"].as_str().unwrap().split(' ').nth(1).unwrap();
    let run = |args: &[&str]| {
        let mut all = vec![
            "--config-file",
            path(&config),
            "explain",
            "--ovn",
            path(&scenario),
        ];
        all.extend_from_slice(args);
        agent(&all, &[])
    };
    let out = run(&[ip]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!("{ip}: exposed on this node")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "exposed: {ip} as provider-network VM port bound here"
        )),
        "{text}"
    );
    assert!(text.contains(&hostname), "{text}");

    let out = run(&["--format", "json", uuid]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = json(&out);
    assert_eq!(j["query"], uuid.as_str());
    assert_eq!(j["hostname"], hostname.as_str());
    let finding = &j["findings"][0];
    assert_eq!(finding["verdict"], "exposed");
    assert_eq!(finding["rule"], "provider_vm");
    assert_eq!(finding["source"]["uuid"], uuid.as_str());

    let out = run(&["no-such-port"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no port named \"no-such-port\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_ovn_file_without_the_database_the_driver_reads_is_refused_naming_both() {
    // The demo topology holds NB rows only; without a config file the
    // driver is upstream's default, the SB ovn_bgp_driver.
    let topology = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo/topology.json");
    for command in [
        vec!["explain", "--ovn", path(&topology), "172.24.4.10"],
        vec!["plan", "--ovn", path(&topology)],
        vec!["status", "--ovn", path(&topology)],
    ] {
        let out = agent(&command, &[]);
        assert_eq!(out.status.code(), Some(1), "{command:?}: {}", stdout(&out));
        let err = stderr(&out);
        assert!(
            err.contains(
                "has no OVN_Southbound rows, and driver = ovn_bgp_driver reads OVN_Southbound"
            ),
            "{command:?}: {err}"
        );
        assert!(stdout(&out).is_empty(), "{command:?}: {}", stdout(&out));
    }
}
