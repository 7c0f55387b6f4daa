//! An OVN event's reconcile plans only what the event changed, against
//! real NB and local OVS ovsdb-servers and a namespace node (root; the
//! bench node of the latency and soak benchmarks): a VM port bound here
//! comes up and its address is added, while an address removed by hand
//! stays removed until a reconcile for another reason plans the whole node
//! and repairs it. That repair counts as one; the ops every plan fails
//! (this kernel has no `vrf`) do not.

#[path = "../benches/common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use obgp_controller::inputs::{OvnSources, ReconcileInputs};
use obgp_controller::{QueueConfig, ReconcileKind, Reconciler};
use obgp_ovn::NbChanges;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

/// The kind of reconcile an OVN event's batch runs: the desired state
/// patched, only what its patches changed planned.
const AN_OVN_EVENT: ReconcileKind = ReconcileKind {
    plan_changes_only: true,
    ..A_TIMER
};

/// The kind a timer's batch runs: nothing read afresh (that is left to the
/// background), the whole node planned.
const A_TIMER: ReconcileKind = ReconcileKind {
    reread: obgp_controller::Reread {
        node_dumps: false,
        ovs_flows: false,
        frr: false,
    },
    recompute_desired: false,
    plan_changes_only: false,
};

/// The host addresses on bgp-nic, as `ip` shows them.
fn on_bgp_nic(node: &common::BenchNode) -> Result<BTreeSet<String>> {
    let out = node
        .ns
        .ip(&["-4", "-o", "addr", "show", "dev", "bgp-nic"])?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_whitespace().nth(3).map(String::from))
        .collect())
}

/// Puts a VM port bound here on the provider network, up, and returns
/// the sources' inputs once they show it, with what changed since the
/// inputs read before.
async fn vm_up(
    node: &common::BenchNode,
    sources: &OvnSources,
    name: &str,
    ip: &str,
) -> Result<ReconcileInputs> {
    let addr = format!("fa:16:3f:00:09:{:02x} {ip}", name.len());
    let provider = node.topo.provider_switch();
    node.nb_session
        .transact(
            "OVN_Northbound",
            vec![
                json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p", "row": {
                    "name": name, "type": "", "addresses": addr, "port_security": addr,
                    "up": true, "enabled": true,
                    "options": ["map", [["requested-chassis", "host-000"]]],
                    "external_ids": ["map", [
                        ["neutron:cidrs", format!("{ip}/12")],
                        ["neutron:device_owner", "compute:nova"],
                        ["neutron:host_id", "host-000"],
                        ["neutron:network_name", provider.clone()]]]}}),
                json!({"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", provider]],
                    "mutations": [["ports", "insert", ["set", [["named-uuid", "p"]]]]]}),
            ],
        )
        .await?;
    let t = Instant::now();
    let mut changes = NbChanges::none();
    loop {
        let mut inputs = sources.converged_inputs().await?;
        changes.then(std::mem::take(&mut inputs.changes));
        if inputs.snapshot.lsp(name).is_some() {
            inputs.changes = changes;
            return Ok(inputs);
        }
        if t.elapsed() > WAIT {
            bail!("the NB monitor never showed {name}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_plans_its_changes_and_a_full_reconcile_repairs_drift() -> Result<()> {
    let node = common::start_node(200, 7, "inc").await?;
    let config = node.config(3600);
    let opts = node.options(QueueConfig::default())?;
    let sources = OvnSources::start(&config, WAIT).await?;
    sources.wait_synced(WAIT).await?;
    let mut r = Reconciler::connect(config, opts.kernel.clone()).await?;
    // FRR read and written before each plan: what it holds is no drift.
    r.wait_for_commands();
    let inputs = sources.converged_inputs().await?;
    r.note_ovn_changes(inputs.changes);
    r.reconcile(&inputs.snapshot, &inputs.ofports, ReconcileKind::one_shot())
        .await?;
    let settled = r
        .reconcile(&inputs.snapshot, &inputs.ofports, ReconcileKind::one_shot())
        .await?;
    ensure!(
        !settled.failed.is_empty() && settled.planned == settled.failed.len(),
        "converged but for the refused VRF ops: {settled:?}"
    );
    // A first event: from here on the sources patch the snapshot and say
    // what changed (the first one after the initial dumps may be rebuilt).
    let inputs = vm_up(&node, &sources, "incremental-vm-1", "172.30.9.1").await?;
    r.note_ovn_changes(inputs.changes);
    r.reconcile(&inputs.snapshot, &inputs.ofports, AN_OVN_EVENT)
        .await?;

    // Drift: an exposed address removed by hand.
    let before = on_bgp_nic(&node)?;
    let gone = before
        .iter()
        .next()
        .context("addresses on bgp-nic")?
        .clone();
    node.ns.ip(&["addr", "del", &gone, "dev", "bgp-nic"])?;

    // An event: another VM port bound here comes up.
    let ip = "172.30.9.2";
    let inputs = vm_up(&node, &sources, "incremental-vm-2", ip).await?;
    r.note_ovn_changes(inputs.changes);
    let event = r
        .reconcile(&inputs.snapshot, &inputs.ofports, AN_OVN_EVENT)
        .await?;
    ensure!(event.desired_patched && event.plan_incremental, "{event:?}");
    let now = on_bgp_nic(&node)?;
    ensure!(
        now.contains(&format!("{ip}/32")),
        "the VM's address: {now:?}"
    );
    ensure!(!now.contains(&gone), "the event's plan repaired {gone}");

    // A reconcile for another reason (a timer's) plans the whole node.
    let full = r
        .reconcile(&inputs.snapshot, &inputs.ofports, A_TIMER)
        .await?;
    ensure!(!full.plan_incremental, "{full:?}");
    ensure!(on_bgp_nic(&node)?.contains(&gone), "{gone} not repaired");
    ensure!(
        full.drift_repairs.get("address") == Some(&1) && full.drift_repairs.len() == 1,
        "one drift repair, and the refused ops planned again are none: {:?}",
        full.drift_repairs
    );
    Ok(())
}
