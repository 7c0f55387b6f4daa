//! `[DEFAULT] state_dir` on the daemon loop (`run`), against real NB and
//! local OVS ovsdb-servers and a namespace node (root; the bench node):
//! stopping the daemon (the SIGTERM path: its shutdown token) writes the NB
//! cache file with every port the NB holds; a daemon started again on that
//! file after a port was removed from the NB meanwhile never exposes the
//! removed port: the file is not the truth, the server's answer is (this
//! standalone server keeps no transaction history, so the start falls back
//! to a full dump).

#[path = "../benches/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use obgp_controller::ops::status::Status;
use obgp_controller::{run, QueueConfig};
use obgp_ovsdb_data::cache_file;
use obgp_ovsdb_data::wire::KeyProjection;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(30);

async fn first_reconcile(addr: std::net::SocketAddr) -> Result<Status> {
    let t = Instant::now();
    loop {
        let got = common::daemon_status(addr).await;
        if let Ok(s) = &got {
            if s.health.last_reconcile.is_some() && !s.exposed.is_empty() {
                return got;
            }
        }
        ensure!(
            t.elapsed() < WAIT,
            "no reconcile in /status within {WAIT:?}: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_writes_its_nb_cache_on_stop_and_never_takes_it_for_the_truth() -> Result<()> {
    let node = common::start_node(200, 11, "std").await?;
    let state = tempfile::tempdir()?;
    let file = state.path().join("OVN_Northbound.cache");
    let addr: std::net::SocketAddr =
        format!("127.0.0.1:{}", obgp_testbed::ovsdb::free_port()?).parse()?;
    let mut config = node.config(3600);
    config.default.metrics_listen = Some(addr);
    config.default.state_dir = Some(state.path().display().to_string());

    let shutdown = CancellationToken::new();
    let agent = tokio::spawn(run(
        config.clone(),
        node.options(QueueConfig::default())?,
        shutdown.clone(),
    ));
    let first = first_reconcile(addr).await?;
    ensure!(!file.exists(), "written before the daemon stopped");
    shutdown.cancel();
    agent.await??;

    let bytes = std::fs::read(&file).context("no cache file after the daemon stopped")?;
    let loaded = cache_file::decode(&bytes, &KeyProjection::default())?;
    let ports = node.nb.select_all("Logical_Switch_Port")?.len();
    ensure!(
        loaded.snapshot.table("Logical_Switch_Port").len() == ports,
        "the file holds {} ports, the NB {ports}",
        loaded.snapshot.table("Logical_Switch_Port").len()
    );
    ensure!(loaded.header.database == "OVN_Northbound");

    // While the agent is down, an exposed VM port leaves the NB.
    let gone = first
        .exposed
        .iter()
        .filter(|e| e.prefix.addr().is_ipv4() && e.prefix.prefix_len() == 32)
        .find_map(|e| {
            let row = e
                .rows
                .iter()
                .find(|r| r.table == "Logical_Switch_Port" && r.found)?;
            Some((e.prefix, row.uuid.clone()))
        })
        .context("an exposed IPv4 VM port")?;
    node.nb.transact(&[json!({
        "op": "mutate", "table": "Logical_Switch",
        "where": [["ports", "includes", ["uuid", gone.1]]],
        "mutations": [["ports", "delete", ["uuid", gone.1]]]
    })])?;

    let shutdown = CancellationToken::new();
    let agent = tokio::spawn(run(
        config,
        node.options(QueueConfig::default())?,
        shutdown.clone(),
    ));
    let second = first_reconcile(addr).await?;
    ensure!(
        second.exposed.iter().all(|e| e.prefix != gone.0),
        "{} exposed from the cache file after its port left the NB",
        gone.0
    );
    ensure!(
        second.exposed.len() < first.exposed.len(),
        "{} exposed before, {} after one port left",
        first.exposed.len(),
        second.exposed.len()
    );
    shutdown.cancel();
    agent.await??;
    Ok(())
}
