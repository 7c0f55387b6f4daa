//! The real daemon with every interval and timeout at the largest value the
//! configuration accepts (365 days), against real OVN databases, FRR and
//! a node namespace: it starts its timers, reconciles and stays healthy,
//! with no panic in any thread. Near the integer limit the same options
//! used to panic the daemon at start or kill its timer task (the values
//! past the limit now exit 2: `tests/config_limits.rs`).

use std::time::Duration;

use anyhow::{ensure, Context, Result};

const WAIT: Duration = Duration::from_secs(60);
const AGENT_PORT: u16 = 19477;
/// `obgp_config::options::MAX_DURATION_S`.
const LONGEST: u64 = 365 * 24 * 3600;

#[test]
fn the_daemon_runs_with_every_interval_at_its_largest_accepted_value() -> Result<()> {
    let (_dir, mut b) = obgp_e2e::demo_bench(
        "limits",
        &format!(
            "metrics_listen = 127.0.0.1:{AGENT_PORT}\nreconcile_interval = {LONGEST}\n\
             frr_reconcile_interval = {LONGEST}\novsdb_connection_timeout = {LONGEST}"
        ),
    )?;
    // One past it, from the environment over the same files: refused
    // before anything starts.
    let out = b
        .agent_command(&["plan"])
        .env(
            "OVN_BGP_AGENT_DEFAULT__FRR_RECONCILE_INTERVAL",
            (LONGEST + 1).to_string(),
        )
        .output()?;
    let err = String::from_utf8_lossy(&out.stderr);
    ensure!(out.status.code() == Some(2), "{err}");
    ensure!(
        err.contains(&format!(
            "[DEFAULT] frr_reconcile_interval: must be between 1 and {LONGEST} ({})",
            LONGEST + 1
        )),
        "{err}"
    );

    b.start_daemon()?;
    obgp_e2e::wait_for("the daemon's first reconcile", WAIT, || {
        Ok(b.agent_log().contains("reconciled reasons=").then_some(()))
    })
    .with_context(|| b.agent_log())?;
    // The timers started before that reconcile; give a dying task time to
    // show in the log, then ask the probe, which follows the timers.
    std::thread::sleep(Duration::from_secs(2));
    let (code, body) = b.http_get(&format!("http://127.0.0.1:{AGENT_PORT}/healthz"))?;
    ensure!(code == 200, "/healthz {code}: {body}\n{}", b.agent_log());
    let log = b.agent_log();
    ensure!(!log.contains("panicked"), "{log}");
    let stopped = b.stop_daemon()?;
    ensure!(
        stopped < Duration::from_secs(30),
        "SIGTERM took {stopped:?}:\n{}",
        b.agent_log()
    );
    ensure!(
        b.agent_log().contains("ovn-bgp-agent stopped"),
        "{}",
        b.agent_log()
    );
    Ok(())
}
