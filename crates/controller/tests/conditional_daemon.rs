//! The daemon loop (`run`) with the NB port conditions, sent to the server
//! (`ovn_nb_monitor_all = false`) or applied as the follower's local filter
//! (`true`), against real NB and local OVS ovsdb-servers and a namespace
//! node (root; the bench node of the latency and soak benchmarks): what
//! `/status` says it exposes equals the desired state of a build of every
//! row of a full monitor's cache of the same NB, at
//! start, after a gateway moves here (its networks' ports join the
//! conditions), after a VM starts migrating here (with
//! `activation-strategy`, and without it, its VIF plugged here first), and after the gateway
//! moves away again (its ports leave the cache: no mass-withdrawal hold).

#[path = "../benches/common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use obgp_config::Config;
use obgp_controller::inputs::OvnSources;
use obgp_controller::{run, QueueConfig};
use obgp_desired::{desired_state, NodeFacts};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(30);

/// The IPs the desired state of a full snapshot exposes, once `landed`
/// holds in that snapshot's NB cache.
async fn full_exposed(
    full: &OvnSources,
    config: &Config,
    landed: impl Fn(&obgp_ovsdb_data::DbSnapshot) -> bool,
) -> Result<BTreeSet<String>> {
    let t = Instant::now();
    loop {
        let inputs = full.inputs();
        if landed(&inputs.raw_ovn) {
            // Every row of the full cache: its own snapshot keeps only
            // this node's rows, through filters not converged here.
            let truth = inputs.unfiltered_snapshot();
            let desired = desired_state(&truth, config, &NodeFacts::default())?;
            return Ok(desired.exposed.keys().map(|ip| ip.to_string()).collect());
        }
        ensure!(t.elapsed() < WAIT, "the write never reached the full cache");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the daemon's `/status` exposes exactly `want` (host
/// prefixes; tenant subnets aside).
async fn daemon_exposes(
    addr: std::net::SocketAddr,
    want: &BTreeSet<String>,
    step: &str,
) -> Result<()> {
    let t = Instant::now();
    loop {
        let got: Option<BTreeSet<String>> = common::daemon_status(addr).await.ok().map(|s| {
            s.exposed
                .iter()
                .filter(|e| e.prefix.prefix_len() == e.prefix.max_prefix_len())
                .map(|e| e.prefix.addr().to_string())
                .collect()
        });
        if got.as_ref() == Some(want) {
            return Ok(());
        }
        ensure!(
            t.elapsed() < WAIT,
            "{step}: the daemon exposes {got:?}, a full monitor {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn uuid_ref(u: obgp_ovsdb_data::Uuid) -> serde_json::Value {
    json!(["uuid", u.to_string()])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_with_port_conditions_exposes_what_a_full_monitor_would() -> Result<()> {
    daemon_follows_the_conditions(false, "cnd").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_with_a_local_filter_exposes_what_a_full_monitor_would() -> Result<()> {
    daemon_follows_the_conditions(true, "cnf").await
}

/// The steps of the module doc, with the daemon's `ovn_nb_monitor_all`
/// set to `monitor_all`, on a node named `ns`.
async fn daemon_follows_the_conditions(monitor_all: bool, ns: &str) -> Result<()> {
    let node = common::start_node(300, 11, ns).await?;
    let port = obgp_testbed::ovsdb::free_port()?;
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse()?;
    let mut config = node.config(3600);
    config.default.metrics_listen = Some(addr);
    let full = OvnSources::start(&config, WAIT).await?;
    full.wait_synced(WAIT).await?;

    config.default.ovn_nb_monitor_all = monitor_all;
    let opts = node.options(QueueConfig::default())?;
    let shutdown = CancellationToken::new();
    let agent = tokio::spawn(run(config.clone(), opts, shutdown.clone()));

    let want = full_exposed(&full, &config, |_| true).await?;
    ensure!(!want.is_empty(), "the topology exposes something here");
    daemon_exposes(addr, &want, "start").await?;

    // `explain` reads with the full monitor (whatever the option) through
    // `inputs_once`: a port the converged snapshot leaves out (another
    // node's) is still found.
    let filtered = full.converged_inputs().await?;
    let (_, elsewhere) = filtered
        .raw_ovn
        .table("Logical_Switch_Port")
        .iter()
        .filter_map(|(u, r)| Some((*u, r.str("name")?.to_string())))
        .find(|(_, name)| filtered.snapshot.lsp(name).is_none())
        .context("a port the full monitor's snapshot leaves out")?;
    let mut whole = config.clone();
    whole.default.ovn_nb_monitor_all = true;
    let (explained, _) =
        obgp_controller::inputs_once(&whole, &node.options(QueueConfig::default())?).await?;
    ensure!(
        explained.lsp(&elsewhere).is_some(),
        "explain's snapshot lacks {elsewhere}, a port of another node"
    );

    // A gateway hosted elsewhere moves here.
    let db = full.inputs().raw_ovn;
    let (lrp, _) = db
        .table("Logical_Router_Port")
        .iter()
        .find(|(_, r)| {
            r.map_str("status", "hosting-chassis")
                .is_some_and(|c| c != "chassis-000")
        })
        .context("a gateway hosted elsewhere")?;
    let lrp = *lrp;
    node.nb
        .transact(&[json!({"op": "update", "table": "Logical_Router_Port",
        "where": [["_uuid", "==", uuid_ref(lrp)]],
        "row": {"status": ["map", [["hosting-chassis", "chassis-000"]]]}})])?;
    let moved = full_exposed(&full, &config, |db| {
        db.get("Logical_Router_Port", lrp)
            .and_then(|r| r.map_str("status", "hosting-chassis"))
            == Some("chassis-000")
    })
    .await?;
    ensure!(moved.len() > want.len(), "the gateway brought exposures");
    daemon_exposes(addr, &moved, "gateway moved here").await?;

    // A provider VM bound elsewhere starts migrating here.
    let (vm, name) = db
        .table("Logical_Switch_Port")
        .iter()
        .find(|(_, r)| {
            r.str("type").unwrap_or("").is_empty()
                && r.map_str("options", "requested-chassis") != Some("host-000")
                && r.map_str("external_ids", "neutron:network_name")
                    == Some(node.topo.provider_switch().as_str())
        })
        .map(|(u, r)| (*u, r.str("name").unwrap_or("").to_string()))
        .context("a provider VM bound elsewhere")?;
    let src = db
        .get("Logical_Switch_Port", vm)
        .and_then(|r| r.map_str("options", "requested-chassis"))
        .unwrap_or("")
        .to_string();
    node.nb
        .transact(&[json!({"op": "update", "table": "Logical_Switch_Port",
        "where": [["_uuid", "==", uuid_ref(vm)]],
        "row": {"options": ["map", [["requested-chassis", format!("{src},host-000")],
                                    ["activation-strategy", "rarp"]]]}})])?;
    let migrating = full_exposed(&full, &config, |db| {
        db.get("Logical_Switch_Port", vm)
            .and_then(|r| r.map_str("options", "requested-chassis"))
            .is_some_and(|c| c.ends_with(",host-000"))
    })
    .await?;
    ensure!(
        migrating.len() > moved.len(),
        "{name} migrating here is exposed"
    );
    daemon_exposes(addr, &migrating, "VM migrating here").await?;

    // Another one, written without `activation-strategy` (a vhost-user
    // port): Nova plugs its VIF here first (an OVS port whose interface
    // carries `iface-id`), then Neutron lists this chassis.
    let (vm2, name2) = db
        .table("Logical_Switch_Port")
        .iter()
        .find(|(u, r)| {
            **u != vm
                && r.str("type").unwrap_or("").is_empty()
                && r.map_str("options", "requested-chassis") != Some("host-000")
                && r.map_str("external_ids", "neutron:network_name")
                    == Some(node.topo.provider_switch().as_str())
        })
        .map(|(u, r)| (*u, r.str("name").unwrap_or("").to_string()))
        .context("a second provider VM bound elsewhere")?;
    let src2 = db
        .get("Logical_Switch_Port", vm2)
        .and_then(|r| r.map_str("external_ids", "neutron:host_id"))
        .context("the second VM's binding host")?
        .to_string();
    node.ovs.transact(&[
        json!({"op": "insert", "table": "Interface", "uuid-name": "i", "row": {
            "name": "vhu-migrating", "type": "dpdkvhostuserclient",
            "external_ids": ["map", [["iface-id", name2.as_str()]]]}}),
        json!({"op": "insert", "table": "Port", "uuid-name": "p", "row": {
            "name": "vhu-migrating", "interfaces": ["set", [["named-uuid", "i"]]]}}),
        json!({"op": "insert", "table": "Bridge", "uuid-name": "brint", "row": {
            "name": "br-int", "ports": ["set", [["named-uuid", "p"]]]}}),
        json!({"op": "mutate", "table": "Open_vSwitch", "where": [],
            "mutations": [["bridges", "insert", ["set", [["named-uuid", "brint"]]]]]}),
    ])?;
    // The daemon reconciles on the local OVS change; Neutron's write
    // follows (here after a moment, as after Nova's plug).
    tokio::time::sleep(Duration::from_millis(500)).await;
    node.nb
        .transact(&[json!({"op": "update", "table": "Logical_Switch_Port",
        "where": [["_uuid", "==", uuid_ref(vm2)]],
        "row": {"options": ["map", [["requested-chassis", format!("{src2},host-000")]]]}})])?;
    let migrating = full_exposed(&full, &config, |db| {
        db.get("Logical_Switch_Port", vm2)
            .and_then(|r| r.map_str("options", "requested-chassis"))
            .is_some_and(|c| c.ends_with(",host-000"))
    })
    .await?;
    ensure!(
        migrating.len() > moved.len() + 1,
        "{name2} migrating here without the strategy is exposed"
    );
    daemon_exposes(addr, &migrating, "VM migrating here without the strategy").await?;

    // The gateway moves away again: its networks' ports leave the
    // conditional cache (or the filtered snapshot), most of it, while most of the node's prefixes
    // are withdrawn. No database lost rows: the mass-withdrawal guard must
    // not hold the withdrawals (its grace is 120 s, over this test's wait).
    let elsewhere = db
        .get("Logical_Router_Port", lrp)
        .and_then(|r| r.map_str("status", "hosting-chassis"))
        .context("the gateway's first chassis")?
        .to_string();
    node.nb
        .transact(&[json!({"op": "update", "table": "Logical_Router_Port",
        "where": [["_uuid", "==", uuid_ref(lrp)]],
        "row": {"status": ["map", [["hosting-chassis", elsewhere.as_str()]]]}})])?;
    let gone = full_exposed(&full, &config, |db| {
        db.get("Logical_Router_Port", lrp)
            .and_then(|r| r.map_str("status", "hosting-chassis"))
            == Some(elsewhere.as_str())
    })
    .await?;
    ensure!(
        gone.len() * 2 < migrating.len(),
        "the gateway held most of the exposures"
    );
    daemon_exposes(addr, &gone, "gateway moved away").await?;
    let (_, metrics) = common::http_get(addr, "/metrics", WAIT).await?;
    let holds = metrics
        .lines()
        .find_map(|l| l.strip_prefix("ovn_bgp_agent_mass_withdrawal_holds_total "))
        .context("the mass_withdrawal_holds metric")?;
    ensure!(
        holds.trim() == "0",
        "the gateway moving away was held as a mass withdrawal ({holds} holds)"
    );

    shutdown.cancel();
    agent.await??;
    Ok(())
}
