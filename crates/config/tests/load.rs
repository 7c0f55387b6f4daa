//! The loader against real files: upstream's sample, layered files and
//! dirs, deprecated names, environment overrides, every class of bad value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use obgp_config::options::OPTIONS;
use obgp_config::{effective_json, Config, ConfigError, ConfigSource, Driver, Loader, WarningKind};
use serde_json::Value;

fn sample_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/config/bgp-agent.conf.sample")
}

/// A fresh directory under cargo's per-test-target tmp dir.
fn scratch(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "load-{}-{name}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn load_text(text: &str) -> Result<obgp_config::Loaded, ConfigError> {
    let dir = scratch("one");
    let f = write(&dir, "a.conf", text);
    Loader::new().sources([ConfigSource::File(f)]).load()
}

fn invalid(text: &str) -> Vec<obgp_config::InvalidValue> {
    match load_text(text) {
        Err(ConfigError::Invalid(v)) => v,
        other => panic!("expected invalid values for {text:?}, got {other:?}"),
    }
}

/// The sample's commented `#name = value` lines: section → option → text.
fn sample_defaults() -> BTreeMap<String, BTreeMap<String, String>> {
    let text = std::fs::read_to_string(sample_path()).unwrap();
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut section = String::new();
    for line in text.lines() {
        if line.starts_with('[') && line.ends_with(']') {
            section = line[1..line.len() - 1].to_string();
        } else if let Some(rest) = line.strip_prefix('#') {
            let Some((name, value)) = rest.split_once(" =") else {
                continue;
            };
            let ident =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if ident {
                out.entry(section.clone())
                    .or_default()
                    .insert(name.to_string(), value.trim().to_string());
            }
        }
    }
    out
}

#[test]
fn every_default_equals_the_one_in_upstreams_sample() {
    let sample = sample_defaults();
    let ours = effective_json(&Config::default());
    for spec in OPTIONS.iter().filter(|o| o.agent_only.is_none()) {
        let text = sample
            .get(spec.section)
            .and_then(|s| s.get(spec.name))
            .unwrap_or_else(|| panic!("[{}] {} is not in the sample", spec.section, spec.name));
        let expected = if text == "<None>" {
            Value::Null
        } else {
            spec.parse(text)
                .unwrap_or_else(|e| {
                    panic!("sample default of [{}] {}: {e}", spec.section, spec.name)
                })
                .to_json()
        };
        assert_eq!(
            ours[spec.section][spec.name], expected,
            "[{}] {}",
            spec.section, spec.name
        );
    }
}

#[test]
fn the_agents_own_options_are_not_upstreams() {
    // An option marked as the agent's own must not shadow one of upstream's
    // (whose default and meaning the sample fixes).
    let sample = sample_defaults();
    let own: Vec<_> = OPTIONS.iter().filter(|o| o.agent_only.is_some()).collect();
    assert!(!own.is_empty());
    for spec in own {
        assert!(
            sample
                .get(spec.section)
                .and_then(|s| s.get(spec.name))
                .is_none(),
            "[{}] {} is upstream's",
            spec.section,
            spec.name
        );
    }
}

#[test]
fn every_agent_option_of_the_sample_is_registered() {
    // Sections the agent owns must not hold an option the registry lacks.
    for (section, opts) in sample_defaults() {
        if !["agent", "ovn", "local_ovn_cluster"].contains(&section.as_str()) {
            continue;
        }
        for name in opts.keys() {
            assert!(
                OPTIONS
                    .iter()
                    .any(|o| o.section == section && o.name == name),
                "[{section}] {name} missing from the registry"
            );
        }
    }
}

#[test]
fn the_sample_loads_with_no_warning_and_upstream_defaults() {
    let loaded = Loader::new()
        .sources([ConfigSource::File(sample_path())])
        .load()
        .unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.config, Config::default());
}

#[test]
fn a_file_setting_every_option_to_its_default_loads_as_default() {
    // Uncomment every `#name = value` line of the sample that has a value.
    let text = std::fs::read_to_string(sample_path()).unwrap();
    let explicit: String = text
        .lines()
        .map(|l| match l.strip_prefix('#') {
            Some(rest)
                if rest.contains(" =") && !rest.starts_with(' ') && !rest.ends_with("<None>") =>
            {
                format!("{rest}\n")
            }
            _ => format!("{l}\n"),
        })
        .collect();
    assert!(explicit.contains("\nbgp_AS = 64999\n"));
    let loaded = load_text(&explicit).unwrap();
    assert_eq!(loaded.config, Config::default());
    // The only warnings are for oslo.log options the agent does not act on,
    // once each.
    assert!(!loaded.warnings.is_empty());
    for w in &loaded.warnings {
        assert!(matches!(w.kind, WarningKind::Ignored { .. }), "{w}");
    }
    let debug_levels = loaded
        .warnings
        .iter()
        .filter(|w| w.to_string().contains("default_log_levels"))
        .count();
    assert_eq!(debug_levels, 1);
}

#[test]
fn ovn_options_are_read_from_default_and_ovn_wins_in_the_same_file() {
    let loaded = load_text("[DEFAULT]\novn_sb_connection = tcp:127.0.0.1:6642\n").unwrap();
    assert_eq!(
        loaded.config.ovn.ovn_sb_connection.as_deref(),
        Some("tcp:127.0.0.1:6642")
    );
    assert!(matches!(
        &loaded.warnings[..],
        [w] if matches!(&w.kind, WarningKind::Deprecated { use_section, .. } if use_section == "ovn")
    ));

    let both = "[ovn]\novn_nb_connection = tcp:10.0.0.1:6641\n[DEFAULT]\novn_nb_connection = tcp:10.0.0.2:6641\n";
    let loaded = load_text(both).unwrap();
    assert_eq!(
        loaded.config.ovn.ovn_nb_connection.as_deref(),
        Some("tcp:10.0.0.1:6641")
    );
    // The deprecated group is [ovn]'s: [local_ovn_cluster] keeps its default.
    assert_eq!(
        loaded.config.local_ovn_cluster.ovn_nb_connection,
        "unix:/var/run/ovn/ovnnb_db.sock"
    );
}

#[test]
fn a_later_file_wins_even_through_a_deprecated_name() {
    let dir = scratch("deprecated-later");
    let a = write(
        &dir,
        "a.conf",
        "[ovn]\novn_sb_connection = tcp:10.0.0.1:6642\n",
    );
    let b = write(
        &dir,
        "b.conf",
        "[DEFAULT]\novn_sb_connection = tcp:10.0.0.2:6642\n",
    );
    let loaded = Loader::new()
        .sources([ConfigSource::File(a), ConfigSource::File(b)])
        .load()
        .unwrap();
    assert_eq!(
        loaded.config.ovn.ovn_sb_connection.as_deref(),
        Some("tcp:10.0.0.2:6642")
    );
}

#[test]
fn oslo_log_deprecated_names_still_work() {
    let loaded = load_text("[DEFAULT]\nlogfile = agent.log\nlogdir = /var/log/x\n").unwrap();
    assert_eq!(loaded.config.log.log_file.as_deref(), Some("agent.log"));
    assert_eq!(loaded.config.log.log_dir.as_deref(), Some("/var/log/x"));
    let loaded = load_text("[DEFAULT]\nlogfile = old.log\nlog_file = new.log\n").unwrap();
    assert_eq!(loaded.config.log.log_file.as_deref(), Some("new.log"));
}

#[test]
fn files_layer_in_order_and_a_dir_adds_its_conf_files_sorted_after_them() {
    let dir = scratch("layers");
    let a = write(
        &dir,
        "a.conf",
        "[DEFAULT]\nbgp_AS = 65001\nbgp_nic = nic-a\nbgp_vrf = vrf-a\nreconcile_interval = 10\n",
    );
    let b = write(
        &dir,
        "b.conf",
        "[DEFAULT]\nbgp_nic = nic-b\nbgp_vrf = vrf-b\n",
    );
    let d = dir.join("conf.d");
    std::fs::create_dir(&d).unwrap();
    write(&d, "20-last.conf", "[DEFAULT]\nbgp_vrf = vrf-20\n");
    write(
        &d,
        "10-first.conf",
        "[DEFAULT]\nbgp_vrf = vrf-10\ndriver = nb_ovn_bgp_driver\n",
    );
    write(
        &d,
        "99-skipped.conf.disabled",
        "[DEFAULT]\nbgp_vrf = never\n",
    );
    write(&d, ".hidden.conf", "[DEFAULT]\nbgp_vrf = hidden\n");

    let loaded = Loader::new()
        .sources([
            ConfigSource::File(a),
            ConfigSource::File(b),
            ConfigSource::Dir(d.clone()),
        ])
        .load()
        .unwrap();
    let c = &loaded.config.default;
    assert_eq!(c.bgp_as, "65001");
    assert_eq!(c.reconcile_interval, 10);
    assert_eq!(c.bgp_nic, "nic-b");
    assert_eq!(c.bgp_vrf, "vrf-20");
    assert_eq!(c.driver, Driver::NbOvnBgpDriver);
    let names: Vec<_> = loaded
        .files
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap())
        .collect();
    assert_eq!(names, ["a.conf", "b.conf", "10-first.conf", "20-last.conf"]);
}

#[test]
fn a_file_after_a_dir_on_the_command_line_wins_over_it() {
    // oslo reads --config-file and --config-dir in command-line order.
    let dir = scratch("dir-then-file");
    let d = dir.join("conf.d");
    std::fs::create_dir(&d).unwrap();
    write(&d, "x.conf", "[DEFAULT]\nbgp_nic = from-dir\n");
    let f = write(&dir, "last.conf", "[DEFAULT]\nbgp_nic = from-file\n");
    let loaded = Loader::new()
        .sources([ConfigSource::Dir(d), ConfigSource::File(f)])
        .load()
        .unwrap();
    assert_eq!(loaded.config.default.bgp_nic, "from-file");
}

#[test]
fn an_overridden_bad_value_is_not_an_error() {
    let dir = scratch("overridden");
    let a = write(&dir, "a.conf", "[DEFAULT]\ndriver = bogus\n");
    let b = write(&dir, "b.conf", "[DEFAULT]\ndriver = ovn_evpn_driver\n");
    let loaded = Loader::new()
        .sources([ConfigSource::File(a), ConfigSource::File(b)])
        .load()
        .unwrap();
    assert_eq!(loaded.config.default.driver, Driver::OvnEvpnDriver);
}

#[test]
fn environment_overrides_files_and_beats_oslos_own_prefix() {
    let dir = scratch("env");
    let f = write(
        &dir,
        "a.conf",
        "[DEFAULT]\ndriver = ovn_bgp_driver\nbgp_AS = 65000\n",
    );
    let env = [
        ("OVN_BGP_AGENT_DEFAULT__DRIVER", "nb_ovn_bgp_driver"),
        ("OVN_BGP_AGENT_OVN__OVN_NB_CONNECTION", "tcp:192.0.2.1:6641"),
        ("OVN_BGP_AGENT_DEFAULT__BGP_AS", "65010"),
        ("OS_DEFAULT__BGP_AS", "65020"),
        ("OS_DEFAULT__EXPOSE_TENANT_NETWORKS", "True"),
        ("OS_CLOUD", "unrelated"),
        ("OS_FOO__BAR", "unrelated, not reported"),
        ("PATH", "/usr/bin"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()));
    let loaded = Loader::new()
        .sources([ConfigSource::File(f)])
        .env(env)
        .load()
        .unwrap();
    let c = &loaded.config;
    assert_eq!(c.default.driver, Driver::NbOvnBgpDriver);
    assert_eq!(
        c.ovn.ovn_nb_connection.as_deref(),
        Some("tcp:192.0.2.1:6641")
    );
    assert_eq!(c.default.bgp_as, "65010");
    assert!(c.default.expose_tenant_networks);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn a_bad_environment_value_names_the_variable_it_came_from() {
    let env = [(
        "OVN_BGP_AGENT_DEFAULT__EVPN_UDP_DSTPORT".to_string(),
        "70000".to_string(),
    )];
    match Loader::new().env(env).load() {
        Err(ConfigError::Invalid(v)) => {
            assert_eq!(
                v[0].to_string(),
                "[DEFAULT] evpn_udp_dstport: must be between 1 and 65535 (70000)"
            );
            assert_eq!(
                v[0].origin.as_deref(),
                Some("environment variable OVN_BGP_AGENT_DEFAULT__EVPN_UDP_DSTPORT")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unknown_environment_option_is_a_warning() {
    let env = [
        (
            "OVN_BGP_AGENT_DEFAULT__NO_SUCH".to_string(),
            "1".to_string(),
        ),
        (
            "OVN_BGP_AGENT_DRIVER".to_string(),
            "nb_ovn_bgp_driver".to_string(),
        ),
    ];
    let loaded = Loader::new().env(env).load().unwrap();
    let text: Vec<String> = loaded.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(text.len(), 2, "{text:?}");
    assert!(text[0].contains("OVN_BGP_AGENT_DEFAULT__NO_SUCH: unknown option [DEFAULT] NO_SUCH"));
    assert!(text[1].contains("OVN_BGP_AGENT_DRIVER: not of the form"));
    assert_eq!(loaded.config.default.driver, Driver::OvnBgpDriver);
}

#[test]
fn command_line_overrides_beat_the_environment() {
    let env = [(
        "OVN_BGP_AGENT_DEFAULT__DEBUG".to_string(),
        "false".to_string(),
    )];
    let loaded = Loader::new()
        .env(env)
        .cli_override("DEFAULT", "debug", "true")
        .load()
        .unwrap();
    assert!(loaded.config.log.debug);
}

#[test]
fn overrides_take_any_option_by_any_name_and_refuse_unknown_ones() {
    let loaded = Loader::new()
        .cli_override("OVN", "ovn_sb_connection", "tcp:192.0.2.1:6642")
        .cli_override("DEFAULT", "ovn_nb_connection", "tcp:192.0.2.1:6641")
        .cli_override("local_ovn_cluster", "peer_ips", "192.0.2.7")
        .load()
        .unwrap();
    assert_eq!(
        loaded.config.ovn.ovn_sb_connection.as_deref(),
        Some("tcp:192.0.2.1:6642")
    );
    assert_eq!(
        loaded.config.ovn.ovn_nb_connection.as_deref(),
        Some("tcp:192.0.2.1:6641")
    );
    assert_eq!(loaded.config.local_ovn_cluster.peer_ips, ["192.0.2.7"]);
    match Loader::new().cli_override("DEFAULT", "nope", "1").load() {
        Err(ConfigError::Invalid(v)) => {
            assert_eq!(v[0].to_string(), "[DEFAULT] nope: no such option (1)")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_sections_and_options_are_warnings_naming_them() {
    let loaded = load_text(
        "[DEFAULT]\nbgp_as = 65000\n[ovn]\novn_sb_conection = tcp:x:1\n[bogus]\na = 1\n[privsep_vtysh]\nuser = root\n[oslo_concurrency]\nlock_path = /tmp\n",
    )
    .unwrap();
    let text: Vec<String> = loaded.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(text.len(), 3, "{text:?}");
    assert!(text
        .iter()
        .any(|w| w.contains("unknown option [DEFAULT] bgp_as") && w.contains("a.conf:2")));
    assert!(text
        .iter()
        .any(|w| w.contains("unknown option [ovn] ovn_sb_conection")));
    assert!(
        text.iter()
            .any(|w| w.contains("a.conf:5: unknown section [bogus]")),
        "{text:?}"
    );
    // Options are case-sensitive, as in oslo: bgp_as is not bgp_AS.
    assert_eq!(loaded.config.default.bgp_as, "64999");
}

#[test]
fn ignored_oslo_log_options_warn_once() {
    let dir = scratch("ignored");
    let a = write(&dir, "a.conf", "[DEFAULT]\nuse_syslog = true\n");
    let b = write(
        &dir,
        "b.conf",
        "[DEFAULT]\nuse_syslog = false\nlog_config = /etc/log.conf\n",
    );
    let loaded = Loader::new()
        .sources([ConfigSource::File(a), ConfigSource::File(b)])
        .load()
        .unwrap();
    let text: Vec<String> = loaded.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        text.iter().filter(|w| w.contains("use_syslog")).count(),
        1,
        "{text:?}"
    );
    assert!(text
        .iter()
        .any(|w| w.contains("log_config is set but ignored by this agent")));
}

#[test]
fn a_value_of_the_wrong_type_is_refused() {
    let v = invalid("[DEFAULT]\nreconcile_interval = 5m\n");
    assert_eq!(
        v[0].to_string(),
        "[DEFAULT] reconcile_interval: must be an integer (5m)"
    );
    let v = invalid("[DEFAULT]\nexpose_tenant_networks = maybe\n");
    assert!(v[0]
        .to_string()
        .starts_with("[DEFAULT] expose_tenant_networks: must be a boolean"));
    let v = invalid("[DEFAULT]\nevpn_local_ip = 10.0.0.300\n");
    assert_eq!(v[0].option, "evpn_local_ip");
}

#[test]
fn a_value_outside_the_choices_is_refused() {
    let v = invalid("[DEFAULT]\ndriver = bogus\n");
    assert_eq!(
        v[0].to_string(),
        "[DEFAULT] driver: must be one of ovn_bgp_driver, ovn_evpn_driver, ovn_stretched_l2_bgp_driver, nb_ovn_bgp_driver (bogus)"
    );
    let v = invalid("[DEFAULT]\nexposing_method = Underlay\n");
    assert_eq!(v[0].option, "exposing_method");
}

#[test]
fn a_value_not_matching_the_regex_is_refused() {
    let v = invalid("[ovn]\novn_sb_connection = 127.0.0.1:6642\n");
    assert_eq!(
        v[0].to_string(),
        "[ovn] ovn_sb_connection: must match ^(tcp|ssl|unix):.+ (127.0.0.1:6642)"
    );
    let v = invalid("[local_ovn_cluster]\novn_nb_connection = \n");
    assert_eq!(v[0].section, "local_ovn_cluster");
}

#[test]
fn a_value_out_of_range_is_refused() {
    let v = invalid("[DEFAULT]\nevpn_udp_dstport = 65536\n");
    assert_eq!(
        v[0].to_string(),
        "[DEFAULT] evpn_udp_dstport: must be between 1 and 65535 (65536)"
    );
    let v = invalid("[DEFAULT]\nbgp_vrf_table_id = 254\n");
    assert_eq!(v[0].option, "bgp_vrf_table_id");
    let v = invalid("[DEFAULT]\novsdb_connection_timeout = -1\n");
    assert_eq!(v[0].option, "ovsdb_connection_timeout");
}

#[test]
fn values_reaching_frr_and_netlink_are_checked() {
    let v = invalid("[DEFAULT]\nbgp_AS = 64999\\nexit\nbgp_router_id = 1.2.3\nbgp_nic = way-too-long-name\nbgp_vrf = a b\n");
    let names: Vec<&str> = v.iter().map(|i| i.option.as_str()).collect();
    assert_eq!(names, ["bgp_AS", "bgp_router_id", "bgp_nic", "bgp_vrf"]);
    let ok = load_text("[DEFAULT]\nbgp_AS = 1.10\nbgp_router_id =\nevpn_nic =\n").unwrap();
    assert_eq!(ok.config.default.bgp_as, "1.10");
    assert_eq!(ok.config.default.bgp_router_id, None);
    assert_eq!(ok.config.default.evpn_nic, None);
}

#[test]
fn every_invalid_value_is_reported_at_once() {
    let v = invalid("[DEFAULT]\ndriver = x\nexposing_method = y\n");
    assert_eq!(v.len(), 2);
}

#[test]
fn lists_and_booleans_read_like_oslo() {
    let loaded = load_text(
        "[DEFAULT]\naddress_scopes = s1 , s2,\ndelete_vrf_on_disconnect = OFF\n[local_ovn_cluster]\nexternal_nics = eth1, eth2\npeer_ips = 172.16.0.1,\n  172.16.0.2\n",
    )
    .unwrap();
    let c = &loaded.config;
    assert_eq!(
        c.default.address_scopes,
        Some(vec!["s1".to_string(), "s2".to_string()])
    );
    assert!(!c.default.delete_vrf_on_disconnect);
    assert_eq!(c.local_ovn_cluster.external_nics, ["eth1", "eth2"]);
    // A continuation line joins with a newline; list items are trimmed.
    assert_eq!(c.local_ovn_cluster.peer_ips, ["172.16.0.1", "172.16.0.2"]);
}

#[test]
fn missing_files_and_dirs_and_syntax_errors_are_errors() {
    let dir = scratch("missing");
    let e = Loader::new()
        .sources([ConfigSource::File(dir.join("nope.conf"))])
        .load()
        .unwrap_err();
    assert!(matches!(e, ConfigError::FileNotFound(_)), "{e}");
    let e = Loader::new()
        .sources([ConfigSource::Dir(dir.join("nope.d"))])
        .load()
        .unwrap_err();
    assert!(matches!(e, ConfigError::Dir { .. }), "{e}");
    let f = write(&dir, "bad.conf", "[DEFAULT]\nthis line has no separator\n");
    let e = Loader::new()
        .sources([ConfigSource::File(f)])
        .load()
        .unwrap_err();
    assert!(e.to_string().contains("bad.conf: line 2"), "{e}");
}

#[test]
fn default_files_and_dirs_are_found_like_oslo() {
    let root = scratch("defaults");
    let home = root.join("home");
    let etc = root.join("etc");
    std::fs::create_dir_all(home.join(".bgp-agent")).unwrap();
    std::fs::create_dir_all(etc.join("bgp-agent/bgp-agent.conf.d")).unwrap();
    write(
        &home.join(".bgp-agent"),
        "bgp-agent.conf",
        "[DEFAULT]\nbgp_nic = home-nic\n",
    );
    // Shadowed: only the first existing bgp-agent.conf is read.
    write(
        &etc.join("bgp-agent"),
        "bgp-agent.conf",
        "[DEFAULT]\nbgp_nic = etc-nic\n",
    );
    write(
        &etc,
        "ovn-bgp-agent.conf",
        "[DEFAULT]\nbgp_vrf = prog-vrf\n",
    );
    write(
        &etc.join("bgp-agent/bgp-agent.conf.d"),
        "a.conf",
        "[DEFAULT]\nbgp_AS = 65123\n",
    );

    let sources = obgp_config::default_sources(Some(&home), &etc, true, true);
    let loaded = Loader::new().sources(sources).load().unwrap();
    assert_eq!(loaded.config.default.bgp_nic, "home-nic");
    assert_eq!(loaded.config.default.bgp_vrf, "prog-vrf");
    assert_eq!(loaded.config.default.bgp_as, "65123");
    assert!(obgp_config::default_sources(Some(&home), &etc, false, false).is_empty());
}

#[test]
fn dollar_references_substitute_like_oslo() {
    let loaded = load_text(
        "[DEFAULT]\nbgp_vrf = vrf-$bgp_vrf_table_id\n[agent]\nroot_helper = sudo \\$HOME\n",
    )
    .unwrap();
    assert_eq!(loaded.config.default.bgp_vrf, "vrf-10");
    assert_eq!(loaded.config.agent.root_helper, "sudo $HOME");
    let v = invalid("[DEFAULT]\nlog_dir = $state_path/log\n");
    assert_eq!(
        v[0].to_string(),
        "[DEFAULT] log_dir: substitution key state_path not found ($state_path/log)"
    );
}

#[test]
fn json_options_load_as_the_golden_scenarios_write_them() {
    let options: BTreeMap<String, Value> = serde_json::from_value(serde_json::json!({
        "bgp_AS": 64999,
        "expose_tenant_networks": true,
        "ovn.ovn_nb_connection": ["tcp:192.0.2.1:6641", "tcp:192.0.2.2:6641"],
        "bgp_router_id": null,
    }))
    .unwrap();
    let loaded = Loader::new()
        .json_overrides(&options)
        .unwrap()
        .load()
        .unwrap();
    let c = loaded.config;
    assert_eq!(c.default.bgp_as, "64999");
    assert!(c.default.expose_tenant_networks);
    assert_eq!(
        c.ovn.ovn_nb_connection.as_deref(),
        Some("tcp:192.0.2.1:6641,tcp:192.0.2.2:6641")
    );
    assert_eq!(c.default.bgp_router_id, None);
    let nested: BTreeMap<String, Value> =
        serde_json::from_value(serde_json::json!({"bgp_nic": {"a": 1}})).unwrap();
    assert_eq!(
        Loader::new().json_overrides(&nested).err().as_deref(),
        Some("bgp_nic")
    );
}

/// An option the agent accepts and does not act on warns, with where it
/// was set and why, only when set to something but its default.
#[test]
fn an_option_not_acted_on_warns_with_its_reason_only_when_changed() {
    let loaded = load_text("[DEFAULT]\nclear_vrf_routes_on_startup = true\n[agent]\nroot_helper = sudo obgp-rootwrap\n").unwrap();
    let mut texts: Vec<String> = loaded.warnings.iter().map(|w| w.to_string()).collect();
    texts.sort();
    assert_eq!(texts.len(), 2, "{texts:#?}");
    assert!(texts[0].contains("a.conf: [DEFAULT] clear_vrf_routes_on_startup = true is ignored by this agent: every reconcile"), "{}", texts[0]);
    assert!(texts[1].contains("a.conf: [agent] root_helper = sudo obgp-rootwrap is ignored by this agent: the agent runs"), "{}", texts[1]);
    for w in &loaded.warnings {
        assert!(matches!(w.kind, WarningKind::NotActedOn { .. }), "{w}");
    }

    // Set to the default (as upstream's sample does): nothing to say.
    let loaded =
        load_text("[DEFAULT]\nclear_vrf_routes_on_startup = false\n[agent]\nroot_helper = sudo\n")
            .unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);

    // Every marked option warns when changed, whatever its kind.
    for spec in OPTIONS.iter().filter(|o| o.ignored.is_some()) {
        let other = match spec.default_value() {
            Some(obgp_config::Typed::Bool(b)) => (!b).to_string(),
            _ => "something-else".to_string(),
        };
        let loaded = Loader::new()
            .cli_override(spec.section, spec.name, &other)
            .load()
            .unwrap();
        assert!(
            loaded.warnings.iter().any(
                |w| matches!(&w.kind, WarningKind::NotActedOn { option, .. } if option == spec.name)
            ),
            "[{}] {} = {other}: {:?}",
            spec.section,
            spec.name,
            loaded.warnings
        );
    }
}
