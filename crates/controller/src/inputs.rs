//! What a reconcile would compute with now, read once: the OVN snapshot
//! and the node facts, for commands that ask the desired state a question
//! without planning (`explain`).

use obgp_config::Config;
use obgp_desired::NodeFacts;
use obgp_ovn::Snapshot;

use crate::reconcile::{check_supported, Reconciler};
use crate::run::{sync_timeout, RunError, RunOptions};
use crate::sources::OvnSources;

/// Connects to the configured databases and the node, waits for the
/// initial dumps, and returns the snapshot with the node facts a reconcile
/// would use (hostname, FRR's router-id, the VXLAN source the node's
/// addresses give). Changes nothing.
pub async fn inputs_once(
    config: &Config,
    opts: &RunOptions,
) -> Result<(Snapshot, NodeFacts), RunError> {
    check_supported(config)?;
    let sources = OvnSources::start(config, sync_timeout(config)).await?;
    sources.wait_synced(sync_timeout(config)).await?;
    let mut reconciler = Reconciler::connect(config.clone(), opts.kernel.clone()).await?;
    reconciler.wait_for_commands();
    let inputs = sources.inputs();
    // A plan gathers the facts exactly as a reconcile does.
    reconciler
        .plan(&inputs.snapshot, &inputs.ofports, true)
        .await?;
    Ok((inputs.snapshot, reconciler.facts().clone()))
}
