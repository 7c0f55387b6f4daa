//! The monitor task's side of the cache file: whether the rows loaded from
//! it may be resumed from, and recording the point to write next.

use obgp_ovsdb_data::cache_file::LoadedCache;
use obgp_ovsdb_data::MonitorSpec;

use super::Runner;
use crate::state_file::{self, ResumePoint};

impl Runner {
    /// The cache file's rows, if they may be resumed from with `spec` on
    /// this session's server; logs once why not otherwise and forgets them.
    pub(super) fn usable_seed(&mut self, spec: &MonitorSpec) -> Option<LoadedCache> {
        let seed = self.seed.as_ref()?;
        let why = if self.since_supported {
            state_file::unusable(
                seed,
                &self.config.database,
                &self.schema_json,
                self.cluster_id.as_deref(),
                spec,
            )
        } else {
            Some("the server lacks monitor_cond_since".into())
        };
        match why {
            None => Some(seed.clone()),
            Some(why) => {
                tracing::info!(db = %self.config.database, reason = %why, "OVSDB cache file not resumed: full dump");
                self.seed = None;
                None
            }
        }
    }

    /// Records the published snapshot, with the transaction id and monitor
    /// request it reflects, as the point the cache file resumes from. Not
    /// while a condition change is in flight (the cache then holds part of
    /// it) nor without a transaction id (a server without
    /// `monitor_cond_since`): the last point recorded stays.
    pub(super) fn record_resume_point(&self) {
        let (Some(state), Some(spec), Some(txn)) =
            (&self.state, &self.cache_spec, &self.last_txn_id)
        else {
            return;
        };
        // Cheap: shared pointers and one id; the header is built when the
        // point is written.
        state.record(ResumePoint {
            database: self.config.database.clone(),
            schema: self.schema_json.clone(),
            cluster_id: self.cluster_id.clone(),
            last_txn_id: txn.clone(),
            monitor: spec.clone(),
            snapshot: self.publisher.current(),
        });
    }
}
