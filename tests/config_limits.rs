//! The built binary with configuration values at their limits: past the
//! limit the agent exits 2 naming the option and the value, before it
//! starts anything; an option it does not act on is reported when set.
//! (The daemon running with the largest accepted intervals, against real
//! databases and a node namespace, is `crates/e2e/tests/config_limits.rs`.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A config file for a daemon that would wait for databases that never
/// answer: whatever it does with the values happens before that, or not at all.
fn config(dir: &Path, extra: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("bgp-agent.conf");
    let text = format!(
        "[DEFAULT]\ndriver = nb_ovn_bgp_driver\nuse_stderr = true\n\
         ovsdb_connection = unix:{0}/no-ovs.sock\n{extra}\n\
         [ovn]\novn_nb_connection = unix:{0}/no-nb.sock\n",
        dir.display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn scratch(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("limits-{}-{name}", std::process::id()))
}

/// Runs the agent with `args`, a clean environment and an empty HOME.
fn agent(args: &[&str]) -> Output {
    let home = scratch("home");
    std::fs::create_dir_all(&home).unwrap();
    Command::new(env!("CARGO_BIN_EXE_ovn-bgp-agent"))
        .args(args)
        .env_clear()
        .env("HOME", &home)
        .output()
        .expect("running ovn-bgp-agent")
}

/// The daemon used to accept `reconcile_interval` near the integer limit
/// and panic at start ("overflow when adding durations", exit 101); with
/// `frr_reconcile_interval` there, its timer task died while it ran on.
/// Now every interval and timeout past its range is an invalid value.
#[test]
fn the_daemon_with_an_interval_past_its_limit_exits_2_naming_it() {
    for option in [
        "reconcile_interval",
        "frr_reconcile_interval",
        "ovsdb_connection_timeout",
    ] {
        for value in ["9223372036854775807", "31536001", "0", "-1"] {
            let dir = scratch(&format!("{option}-{value}"));
            let file = config(&dir, &format!("{option} = {value}"));
            let out = agent(&["--config-file", file.to_str().unwrap()]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{option} = {value}: {err}");
            let line = format!("[DEFAULT] {option}: must be between 1 and 31536000 ({value})");
            assert!(err.contains(&line), "{option} = {value}: {err}");
            assert!(!err.contains("panicked"), "{err}");
        }
    }
}

/// `clear_vrf_routes_on_startup` and `[agent] root_helper` are accepted and
/// not acted on: set, each is named with the reason, on every command.
#[test]
fn options_not_acted_on_are_reported_when_set() {
    let dir = scratch("ignored");
    let file = config(
        &dir,
        "clear_vrf_routes_on_startup = true\n[agent]\nroot_helper = sudo rootwrap",
    );
    let out = agent(&["--config-file", file.to_str().unwrap(), "config"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("[DEFAULT] clear_vrf_routes_on_startup = true is ignored by this agent: every reconcile, the start-up one first, already deletes the routes of the bgp_vrf_table_id table"),
        "{err}"
    );
    assert!(
        err.contains("[agent] root_helper = sudo rootwrap is ignored by this agent"),
        "{err}"
    );
    let dir = scratch("defaults");
    let file = config(&dir, "clear_vrf_routes_on_startup = false");
    let out = agent(&["--config-file", file.to_str().unwrap(), "config"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "the default says nothing"
    );
}
