//! The one-shot commands: `plan` ([`plan_once`]), `reconcile --once`
//! ([`reconcile_once`]), and what a reconcile would compute with now, read once: the OVN snapshot
//! and the node facts, for commands that ask the desired state a question
//! without planning (`explain`), and the connection every one-shot
//! command starts from.

use std::time::Duration;

use obgp_config::Config;
use obgp_desired::NodeFacts;
use obgp_ovn::Snapshot;

use crate::inputs::OvnSources;
use crate::kind::ReconcileKind;
use crate::options::{RunError, RunOptions};
use obgp_plan::Plan;

use crate::reconcile::{check_supported, unread_commands, Planned, ReconcileReport, Reconciler};
use crate::report_log::log_report;

/// How long the one-shot commands wait for the initial dumps:
/// `ovsdb_connection_timeout`.
fn sync_timeout(config: &Config) -> Duration {
    crate::timers::LoopTimers::for_config(config).sync_timeout
}

/// What the one-shot commands start from: the OVN sources synced and a
/// reconciler connected to the node, waiting for its command lane.
pub(crate) async fn connect_once(
    config: &Config,
    opts: &RunOptions,
) -> Result<(OvnSources, Reconciler), RunError> {
    check_supported(config)?;
    let sources = OvnSources::start(config, sync_timeout(config)).await?;
    sources.wait_synced(sync_timeout(config)).await?;
    crate::ops::log_stage("synced");
    let mut reconciler = Reconciler::connect(config.clone(), opts.kernel.clone()).await?;
    crate::ops::log_stage("node read");
    reconciler.wait_for_commands();
    if let Some(local) = &sources.local_nb {
        reconciler.write_local_cluster(local.clone());
    }
    Ok((sources, reconciler))
}

/// Connects to the configured databases and the node, waits for the
/// initial dumps, and returns the snapshot with the node facts a reconcile
/// would use (hostname, FRR's router-id, the VXLAN source the node's
/// addresses give). Changes nothing. The snapshot is of every cached row
/// ([`ReconcileInputs::unfiltered_snapshot`](crate::inputs::ReconcileInputs::unfiltered_snapshot)):
/// with `ovn_nb_monitor_all = true` it holds other nodes' ports too, which
/// a question about one (`explain`) needs; the desired state is the same
/// from either (the conditional oracle).
pub async fn inputs_once(
    config: &Config,
    opts: &RunOptions,
) -> Result<(Snapshot, NodeFacts), RunError> {
    let (sources, mut reconciler) = connect_once(config, opts).await?;
    let inputs = sources.converged_inputs().await?;
    // A plan gathers the facts exactly as a reconcile does.
    reconciler
        .compute_observe_and_plan(&inputs.snapshot, &inputs.ofports, ReconcileKind::one_shot())
        .await?;
    Ok((inputs.unfiltered_snapshot(), reconciler.facts().clone()))
}

/// What `capture` writes of a live node: the raw rows of the OVN database
/// the driver reads and of the local OVS (as their monitors hold them),
/// the node as observed, and the facts read beside it.
pub struct Captured {
    pub ovn: obgp_ovsdb_data::DbSnapshot,
    pub ovs: obgp_ovsdb_data::DbSnapshot,
    pub node: obgp_plan::Actual,
    pub facts: NodeFacts,
}

/// Reads everything a plan reads, as a plan does (the node observed in
/// the scope of the desired state), and returns it raw. Changes nothing.
pub async fn capture_once(config: &Config, opts: &RunOptions) -> Result<Captured, RunError> {
    let (sources, mut reconciler) = connect_once(config, opts).await?;
    let inputs = sources.converged_inputs().await?;
    let (planned, _) = reconciler
        .compute_observe_and_plan(&inputs.snapshot, &inputs.ofports, ReconcileKind::one_shot())
        .await?;
    Ok(Captured {
        ovn: inputs.raw_ovn,
        ovs: sources.ovs.client.cache().snapshot(),
        node: planned.actual,
        facts: reconciler.facts().clone(),
    })
}

/// Computes the pending plan against the live databases and node, changing nothing.
pub async fn plan_once(config: &Config, opts: &RunOptions) -> Result<Planned, RunError> {
    let (sources, mut reconciler) = connect_once(config, opts).await?;
    let inputs = sources.converged_inputs().await?;
    let (planned, _) = reconciler
        .compute_observe_and_plan(&inputs.snapshot, &inputs.ofports, ReconcileKind::one_shot())
        .await?;
    // The caches, the snapshot and the node mirror are freed on a thread of
    // their own: freeing them row by row took ~0.2 s at 50k ports, on the
    // way to printing the plan. A command that exits next does not wait.
    std::thread::spawn(move || drop((inputs, sources, reconciler)));
    Ok(planned)
}

/// Reconciles once and checks convergence: a second observe must plan nothing.
pub async fn reconcile_once(
    config: &Config,
    opts: &RunOptions,
) -> Result<ReconcileReport, RunError> {
    // It writes: one agent per node (a daemon running here holds the lock).
    check_supported(config)?;
    let _lock = match &opts.node_lock {
        Some(path) => Some(crate::node_lock::lock_once(path)?),
        None => None,
    };
    let (sources, mut reconciler) = connect_once(config, opts).await?;
    let inputs = sources.converged_inputs().await?;
    let report = reconciler
        .reconcile(&inputs.snapshot, &inputs.ofports, ReconcileKind::one_shot())
        .await?;
    log_report(&report, "reconcile --once");
    // A fresh read: the apply may have changed OVS (ports numbered since).
    let inputs = sources.converged_inputs().await?;
    let (again, _) = reconciler
        .compute_observe_and_plan(&inputs.snapshot, &inputs.ofports, ReconcileKind::one_shot())
        .await?;
    let unread = unread_commands(&again.actual);
    if !again.is_empty() || !unread.is_empty() {
        let mut pending = again.plan.to_string();
        let mut local_ops = 0;
        if let Some(local) = &again.local_nb {
            local_ops = local.ops.len();
            for op in &local.ops {
                pending.push_str(&format!("  local NB: {op}\n"));
            }
        }
        for what in &unread {
            pending.push_str(&format!("  ? {what}\n"));
        }
        return Err(RunError::NotConverged(
            again.plan.steps.len() + local_ops + unread.len(),
            pending,
        ));
    }
    Ok(report)
}

/// The plan as `ovn-bgp-agent plan` prints it.
pub fn render_plan(plan: &Plan) -> String {
    if plan.is_empty() {
        "nothing to do: the node matches OVN\n".to_string()
    } else {
        plan.to_string()
    }
}
