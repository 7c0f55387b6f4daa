//! What an operator sees when the command line or the configuration is not
//! right: each subcommand's help with its own options apart from the global
//! ones, "did you mean" and file order in the warnings, the environment
//! variable behind a bad value, and a missing connection refused as
//! invalid configuration before anything connects.

mod common;

use common::{agent, scratch, stderr, stdout, write};
use std::path::Path;
use std::time::{Duration, Instant};

/// The `--long` options listed under `heading` in a help text (up to the
/// next heading).
fn options_under(help: &str, heading: &str) -> Vec<String> {
    let mut lines = help.lines().skip_while(|l| *l != heading).skip(1);
    let mut out = Vec::new();
    for line in lines.by_ref() {
        if !line.starts_with(' ') && !line.is_empty() {
            break;
        }
        // `-d, --debug`, `--ovn <FILE>`; description lines start otherwise.
        let option = line.trim_start();
        let option = match option.as_bytes() {
            [b'-', short, b',', b' ', ..] if *short != b'-' => &option[4..],
            _ => option,
        };
        if let Some(name) = option.strip_prefix("--") {
            out.push(name.split([' ', ',']).next().unwrap().to_string());
        }
    }
    out
}

fn help(args: &[&str]) -> String {
    let out = agent(args, &[]);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

#[test]
fn a_subcommands_help_lists_its_own_options_apart_from_the_global_ones() {
    let plan = help(&["plan", "--help"]);
    assert_eq!(
        options_under(&plan, "Options:"),
        ["format", "ovn", "node-state", "local-nb", "help"],
        "{plan}"
    );
    let global = options_under(&plan, "Global options:");
    assert!(global.contains(&"config-file".to_string()), "{plan}");
    assert!(global.contains(&"log-file".to_string()), "{plan}");
    assert!(options_under(&plan, "Node options:").contains(&"netns".to_string()));
    // The merge window is the daemon's alone.
    assert!(!plan.contains("--merge-window-ms"), "{plan}");
    assert!(help(&["--help"]).contains("--merge-window-ms"));
}

#[test]
fn version_help_lists_no_option_that_does_not_apply_to_it() {
    let version = help(&["version", "--help"]);
    for option in ["--netns", "--config-file", "--debug", "--merge-window-ms"] {
        assert!(!version.contains(option), "{option} in:\n{version}");
    }
    // `config` reads the configuration but does not touch the node.
    let config = help(&["config", "--help"]);
    assert!(config.contains("--config-file"), "{config}");
    assert!(!config.contains("--netns"), "{config}");
    // Hidden, not removed: a shared command line still parses.
    let out = agent(&["version", "--netns", "x"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn config_warnings_offer_the_name_meant_in_file_order() {
    let dir = scratch("typos");
    let f = write(
        &dir,
        "a.conf",
        "[ovn]\novn_nb_conection = tcp:192.0.2.1:6641\n[DEFAULT]\nbgp_as = 65000\n",
    )
    .display()
    .to_string();
    let out = agent(&["--config-file", &f, "config"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    let first = err
        .find("a.conf:2: unknown option [ovn] ovn_nb_conection, ignored; did you mean ovn_nb_connection?")
        .unwrap_or_else(|| panic!("{err}"));
    let second = err
        .find("a.conf:4: unknown option [DEFAULT] bgp_as, ignored; did you mean bgp_AS?")
        .unwrap_or_else(|| panic!("{err}"));
    assert!(first < second, "file order: {err}");
}

#[test]
fn a_bad_environment_value_names_the_variable() {
    let out = agent(&["config"], &[("OVN_BGP_AGENT_DEFAULT__DRIVER", "bogus")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("(set in environment variable OVN_BGP_AGENT_DEFAULT__DRIVER)"),
        "{err}"
    );
}

#[test]
fn the_nb_driver_without_ovn_nb_connection_exits_2_before_connecting() {
    let dir = scratch("no-nb");
    // An OVS socket that nothing serves: the agent must not get that far.
    let f = write(
        &dir,
        "a.conf",
        &format!(
            "[DEFAULT]\ndriver = nb_ovn_bgp_driver\nuse_stderr = true\n\
             ovsdb_connection = unix:{}/no-ovs.sock\n",
            dir.display()
        ),
    )
    .display()
    .to_string();
    for command in [
        &[][..],
        &["reconcile", "--once"][..],
        &["plan"][..],
        &["explain", "192.0.2.10"][..],
        &["status", "--direct"][..],
    ] {
        let mut args = vec!["--config-file", f.as_str()];
        args.extend_from_slice(command);
        let started = Instant::now();
        let out = agent(&args, &[]);
        let said = format!("{}{}", stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(2), "{command:?}: {said}");
        assert!(
            stderr(&out).contains(
                "[ovn] ovn_nb_connection: must be set: driver = nb_ovn_bgp_driver reads \
                 the OVN Northbound database from it (unset)"
            ),
            "{command:?}: {said}"
        );
        assert!(!said.contains("reconnecting"), "{command:?}: {said}");
        assert!(started.elapsed() < Duration::from_secs(10), "{command:?}");
    }
    // Offline, the connection is not needed.
    let topology = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo/topology.json");
    let out = agent(
        &[
            "--config-file",
            &f,
            "plan",
            "--ovn",
            topology.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
