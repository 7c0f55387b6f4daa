//! What a reconcile would compute with now, read once: the OVN snapshot
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
use crate::reconcile::{check_supported, Reconciler};

/// How long the one-shot commands wait for the initial dumps:
/// `ovsdb_connection_timeout`.
fn sync_timeout(config: &Config) -> Duration {
    Duration::from_secs(config.default.ovsdb_connection_timeout.max(1))
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
        reconciler.write_local_nb(local.clone());
    }
    Ok((sources, reconciler))
}

/// Connects to the configured databases and the node, waits for the
/// initial dumps, and returns the snapshot with the node facts a reconcile
/// would use (hostname, FRR's router-id, the VXLAN source the node's
/// addresses give). Changes nothing.
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
    Ok((inputs.snapshot, reconciler.facts().clone()))
}
