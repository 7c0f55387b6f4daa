//! The node-local OVN NB of `exposing_method = ovn` in a reconcile: the
//! local-NB transaction planned with the node plan, and its two parts run
//! around the node's writes (writes before, removals after; docs/modes.md).
//! The external bridges' kernel facts are read with the other node facts
//! (`Reconciler::read_facts`).

use std::sync::Arc;

use obgp_local_cluster::LocalClusterPlan;

use super::{ReconcileError, ReconcileReport, Reconciler};
use crate::inputs::{LocalClusterError, LocalClusterSource};

impl Reconciler {
    /// Writes the desired state's node-local NB rows (`exposing_method =
    /// ovn`) through `source`: planned with the node, transacted by
    /// [`Reconciler::reconcile`] around the node's plan (O1).
    pub fn write_local_cluster(&mut self, source: Arc<LocalClusterSource>) {
        self.local_nb = Some(source);
    }

    /// The local-NB transaction the desired state asks for, when this mode
    /// has one and a local NB to write.
    pub(super) fn plan_local_cluster(&self) -> Result<Option<LocalClusterPlan>, ReconcileError> {
        let (Some(source), Some(cluster)) = (
            &self.local_nb,
            self.desired
                .desired()
                .and_then(|d| d.local_cluster.as_ref()),
        ) else {
            return Ok(None);
        };
        Ok(Some(source.plan(&cluster.local_nb)?))
    }

    /// Runs one local-NB transaction (nothing when empty), counting its
    /// operations in `report` under `kind`, applied or failed.
    pub(super) async fn run_local_cluster(
        &self,
        plan: &LocalClusterPlan,
        kind: &str,
        report: &mut ReconcileReport,
    ) -> Result<(), LocalClusterError> {
        let Some(source) = &self.local_nb else {
            return Ok(());
        };
        if plan.is_empty() {
            return Ok(());
        }
        for line in plan.ops.iter() {
            tracing::info!(op = %line, "local NB");
        }
        match source.run(plan).await {
            Ok(()) => {
                *report.applied.entry(kind.to_string()).or_default() += plan.ops.len();
                Ok(())
            }
            Err(e) => {
                report.failed.push(format!("{kind}: {e}"));
                *report.failed_kinds.entry(kind.to_string()).or_default() += 1;
                Err(e)
            }
        }
    }
}
