//! `GET /status` on the daemon loop (`run`), against real NB and local
//! OVS ovsdb-servers and a namespace node (root; the bench node of the
//! latency and soak benchmarks, with an ifb bgp-nic): after the first
//! reconcile every exposed IP names rows the NB server holds, and the
//! held flags follow the node as `ip` shows it, also after an address is
//! removed by hand.

#[path = "../benches/common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use obgp_controller::ops::status::{ComputedBy, Status};
use obgp_controller::{run, QueueConfig};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(30);

/// The host addresses on bgp-nic, as `ip` shows them.
fn on_bgp_nic(node: &common::BenchNode) -> Result<BTreeSet<String>> {
    let out = node.ns.ip(&["-o", "addr", "show", "dev", "bgp-nic"])?;
    Ok(out
        .lines()
        .filter_map(|l| {
            l.split_whitespace()
                .skip_while(|w| !w.starts_with("inet"))
                .nth(1)
        })
        .filter(|a| !a.starts_with("fe80:"))
        .map(String::from)
        .collect())
}

/// The exposures whose address the status says is on bgp-nic.
fn announced(s: &Status) -> BTreeSet<String> {
    s.exposed
        .iter()
        .filter(|e| e.prefix.prefix_len() == e.prefix.max_prefix_len())
        .filter(|e| {
            !e.missing
                .contains(&format!("address {} on bgp-nic", e.prefix))
        })
        .map(|e| e.prefix.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_serves_what_it_exposes_with_rows_and_what_the_node_holds() -> Result<()> {
    let node = common::start_node(200, 7, "sts").await?;
    let port = obgp_testbed::ovsdb::free_port()?;
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse()?;
    // No periodic reconcile during the test: a removed address stays
    // removed until the test looks.
    let mut config = node.config(3600);
    config.default.metrics_listen = Some(addr);
    let opts = node.options(QueueConfig::default())?;
    let shutdown = CancellationToken::new();
    let agent = tokio::spawn(run(config, opts, shutdown.clone()));

    let t = Instant::now();
    let first = loop {
        let got = common::daemon_status(addr).await;
        if let Ok(s) = &got {
            if s.health.last_reconcile.is_some() && !s.exposed.is_empty() {
                break got?;
            }
        }
        ensure!(
            t.elapsed() < WAIT,
            "no reconcile in /status within {WAIT:?}: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    ensure!(first.origin == ComputedBy::Daemon);
    ensure!(first.chassis == "host-000", "{}", first.chassis);
    ensure!(first.health.databases.len() == 2);
    for db in &first.health.databases {
        ensure!(db.connected_to.is_some() && db.syncs >= 1, "{db:?}");
        ensure!(db.last_update_unix.is_some(), "{db:?}");
    }
    ensure!(first.health.ready.is_some() && first.health.healthy.as_ref().is_some_and(|h| h.ok));
    println!(
        "status: {} exposed, {} held, {:?} pending, last reconcile {:?}",
        first.exposed.len(),
        first.exposed.iter().filter(|e| e.held).count(),
        first.health.pending_ops,
        first.health.last_reconcile
    );

    // Every row is one the NB server holds.
    for e in &first.exposed {
        ensure!(!e.rows.is_empty(), "{} has no row", e.prefix);
        for r in &e.rows {
            let rows = node.nb.select_all(&r.table)?;
            let there = rows.iter().any(|row| row["_uuid"][1] == r.uuid.as_str());
            ensure!(r.found && there, "{}: {r:?} not in the NB server", e.prefix);
        }
    }

    // The held flags follow the node: the addresses `ip` shows on bgp-nic
    // are exactly the exposures the status says are announced, and a held
    // exposure is announced.
    let nic = on_bgp_nic(&node)?;
    ensure!(!nic.is_empty(), "the daemon announced nothing");
    ensure!(
        announced(&first) == nic,
        "{:?} vs {nic:?}",
        announced(&first)
    );
    for e in first.exposed.iter().filter(|e| e.held) {
        ensure!(
            e.prefix.prefix_len() < e.prefix.max_prefix_len()
                || nic.contains(&e.prefix.to_string()),
            "{} held but not on bgp-nic",
            e.prefix
        );
    }

    // An address removed by hand: that exposure is no longer held.
    let gone = first
        .exposed
        .iter()
        .find(|e| e.held && e.prefix.addr().is_ipv4() && e.prefix.prefix_len() == 32)
        .context("a held IPv4 exposure")?;
    node.ns
        .ip(&["addr", "del", &gone.prefix.to_string(), "dev", "bgp-nic"])?;
    let t = Instant::now();
    let after = loop {
        let s = common::daemon_status(addr).await?;
        if s.exposed.iter().any(|e| e.prefix == gone.prefix && !e.held) {
            break s;
        }
        ensure!(
            t.elapsed() < WAIT,
            "{} still held after its removal",
            gone.prefix
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let e = after
        .exposed
        .iter()
        .find(|e| e.prefix == gone.prefix)
        .context("still exposed")?;
    ensure!(
        e.missing == [format!("address {} on bgp-nic", gone.prefix)],
        "{:?}",
        e.missing
    );
    ensure!(
        after.health.pending_ops >= Some(1),
        "the re-add is pending: {:?}",
        after.health.pending_ops
    );
    println!("status: {} removed by hand shows as missing", gone.prefix);
    shutdown.cancel();
    agent.await??;
    Ok(())
}
