//! An NB that comes back nearly empty (a wrong backup, a fresh cluster)
//! against the real agent binary, real OVN databases and real FRR (VM
//! tier: the full agent needs vrf/dummy): the daemon holds the withdrawals
//! for `mass_withdrawal_grace`, then applies them when the database stays
//! empty. Ordinary withdrawals are not delayed: the main e2e scenario
//! withdraws a deleted VM within seconds with the guard on (its default).

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use obgp_e2e::{demo_topology, Bench, BenchOptions};
use serde_json::json;

/// Generous bounds: TCG makes every process spawn much slower.
const LEARN: Duration = Duration::from_secs(120);
const GRACE: Duration = Duration::from_secs(20);

/// Deletes every root row of OVN_Northbound but NB_Global (their ports,
/// router ports and NATs go with them): what a wrong backup looks like.
fn empty_the_nb(b: &Bench) -> Result<()> {
    let ops: Vec<_> = [
        "Logical_Switch",
        "Logical_Router",
        "Load_Balancer",
        "DHCP_Options",
        "Port_Group",
        "Address_Set",
    ]
    .iter()
    .map(|t| json!({"op": "delete", "table": t, "where": []}))
    .collect();
    b.nb.transact(&ops)?;
    Ok(())
}

#[test]
#[ignore = "vm tier: full agent needs vrf/dummy"]
fn an_emptied_nb_withdraws_nothing_for_the_grace_period_then_everything() -> Result<()> {
    let t0 = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("obgp-e2e-mass-")
        .tempdir_in("/tmp")?;
    let mut b = Bench::start(
        dir.path(),
        &demo_topology()?,
        &BenchOptions {
            extra_default: format!("mass_withdrawal_grace = {}", GRACE.as_secs()),
            ..BenchOptions::default()
        },
    )?;
    b.agent_ok(&["reconcile", "--once"])?;
    b.start_daemon()?;
    // The exposures (the kernel's IPv6 link-local address stays).
    let before: Vec<String> = b
        .bgp_nic_addrs()?
        .into_iter()
        .filter(|a| !a.starts_with("fe80:"))
        .collect();
    ensure!(before.len() >= 4, "the demo exposes: {before:?}");
    obgp_e2e::wait_for("the daemon's first reconcile", LEARN, || {
        Ok(b.agent_log().contains("reconciled reasons=").then_some(()))
    })?;

    empty_the_nb(&b)?;
    let emptied = Instant::now();
    obgp_e2e::wait_for("the guard's error line", LEARN, || {
        Ok(b.agent_log().contains("mass withdrawal").then_some(()))
    })
    .with_context(|| b.agent_log())?;
    // Nothing goes before the grace period is over.
    while emptied.elapsed() < GRACE - Duration::from_secs(5) {
        let now = b.bgp_nic_addrs()?;
        let lost: Vec<_> = before.iter().filter(|a| !now.contains(a)).collect();
        ensure!(
            lost.is_empty(),
            "withdrawn {:?} after {:?} of the grace period:\n{}",
            lost,
            emptied.elapsed(),
            b.agent_log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    println!(
        "mass [{:6.1} s] NB emptied: every prefix kept for {:?}",
        t0.elapsed().as_secs_f64(),
        emptied.elapsed()
    );
    // The database stayed empty: the withdrawals are applied.
    obgp_e2e::wait_for("the held withdrawals", LEARN, || {
        let now = b.bgp_nic_addrs()?;
        Ok(before.iter().all(|a| !now.contains(a)).then_some(()))
    })
    .with_context(|| b.agent_log())?;
    let took = emptied.elapsed();
    ensure!(took >= GRACE, "released after {took:?}");
    ensure!(
        b.agent_log().contains("applying the held withdrawals"),
        "{}",
        b.agent_log()
    );
    println!(
        "mass [{:6.1} s] released after {took:?} (grace {GRACE:?})",
        t0.elapsed().as_secs_f64()
    );
    b.stop_daemon()?;
    Ok(())
}
