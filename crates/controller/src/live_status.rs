//! Where a [`Status`]'s values come from: the daemon's run loop, which
//! answers a `/status` request between two reconciles ([`answer`]), the
//! `status` command without a daemon ([`direct`]), or files ([`offline`]).

use obgp_config::Config;
use obgp_desired::NodeFacts;
use obgp_ovn::Snapshot;
use obgp_pipeline::PipelineError;
use obgp_plan::Actual;

use crate::inputs::OvnSources;
use crate::kind::ReconcileKind;
use crate::one_shot::connect_once;
use crate::ops::status::{
    db_health, health_only, status, ComputedBy, Health, Status, StatusInputs,
};
use crate::options::{RunError, RunOptions};
use crate::reconcile::{unread_commands, Planned, Reconciler};

/// The daemon's status now: its last desired state against the node as
/// observed now (through the same observer and planner as a reconcile,
/// changing nothing), with `health`, the loop's (`Telemetry::health`).
/// Rows are looked up in the databases' current contents.
pub async fn answer(
    reconciler: &mut Reconciler,
    sources: &OvnSources,
    mut health: Health,
    config: &Config,
) -> Status {
    let inputs = sources.inputs();
    // Taken with the snapshot: the next reconcile's computation patches
    // from them.
    reconciler.note_ovn_changes(inputs.changes);
    let planned = match reconciler.observe_desired(&inputs.ofports).await {
        Ok(Some(p)) => p,
        Ok(None) => return health_only(config, ComputedBy::Daemon, health),
        Err(e) => {
            health
                .unread
                .push(format!("observing the node failed: {e}"));
            return health_only(config, ComputedBy::Daemon, health);
        }
    };
    of_reconciler(
        reconciler,
        config,
        &inputs.snapshot,
        &planned,
        ComputedBy::Daemon,
        health,
    )
}

/// The status of `planned`, the node observed against `reconciler`'s
/// desired state; `health` gets the plan's size and what was unread.
fn of_reconciler(
    reconciler: &Reconciler,
    config: &Config,
    snapshot: &Snapshot,
    planned: &Planned,
    origin: ComputedBy,
    mut health: Health,
) -> Status {
    health.pending_ops = Some(planned.plan.steps.len());
    health.unread = unread_commands(&planned.actual);
    let (Some(desired), Some(node)) = (reconciler.desired(), reconciler.desired_node()) else {
        return health_only(config, origin, health);
    };
    let i = StatusInputs {
        config,
        snapshot,
        desired,
        node,
        actual: &planned.actual,
    };
    status(&i, origin, reconciler.chassis_name(snapshot), health)
}

/// The status from the live databases and node, as `plan` computes its
/// plan (no daemon: no reconcile history, no probes).
pub async fn direct(config: &Config, opts: &RunOptions) -> Result<Status, RunError> {
    let (sources, mut reconciler) = connect_once(config, opts).await?;
    let inputs = sources.converged_inputs().await?;
    let (planned, _) = reconciler
        .compute_observe_and_plan(&inputs.snapshot, &inputs.ofports, ReconcileKind::one_shot())
        .await?;
    let health = Health {
        databases: vec![db_health(&sources.ovn, None), db_health(&sources.ovs, None)],
        ..Health::default()
    };
    Ok(of_reconciler(
        &reconciler,
        config,
        &inputs.snapshot,
        &planned,
        ComputedBy::Direct,
        health,
    ))
}

/// The status of OVN rows and a node state read from files (`status
/// --ovn`): no database, no node; computed through the same pipeline.
pub fn offline(
    config: &Config,
    snapshot: &Snapshot,
    facts: &NodeFacts,
    actual: &Actual,
) -> Result<Status, PipelineError> {
    let once = obgp_pipeline::once(snapshot, config, facts, actual)?;
    let health = Health {
        pending_ops: Some(once.plan.steps.len()),
        ..Health::default()
    };
    let i = StatusInputs {
        config,
        snapshot,
        desired: &once.desired,
        node: &once.node,
        actual,
    };
    // A capture records the node's hostname, the NB driver's chassis name
    // when the Open_vSwitch row has no external_ids:hostname.
    let chassis = obgp_desired::chassis_name(config, snapshot, facts.system_hostname.as_deref())
        .unwrap_or_default()
        .to_string();
    Ok(status(&i, ComputedBy::Offline, chassis, health))
}
