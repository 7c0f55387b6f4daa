//! The first monitor request of a session: resume from the cache (the
//! in-process one, or the file's at start) or take a full dump.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::Value;

use super::Runner;
use crate::error::{Error, Result};
use crate::rpc::session::Session;
use crate::rpc::transport::Remote;
use obgp_ovsdb_data::schema::DatabaseSchema;
use obgp_ovsdb_data::{AppliedUpdate, DbSnapshot, MonitorSpec};

impl Runner {
    /// Starts the monitor on `session` and returns the batch to publish:
    /// only the changes since the last transaction when the server still
    /// has it and the cache (or the cache file) was filled with `spec` on
    /// `schema`, else the full dump as the change from what readers hold.
    pub(super) async fn monitor_and_sync(
        &mut self,
        session: &Session,
        remote: &Remote,
        schema: &Arc<DatabaseSchema>,
        spec: &MonitorSpec,
        monitor_id: &Value,
    ) -> Result<AppliedUpdate> {
        let db = self.config.database.clone();
        let published = self.publisher.current();
        let empty = DbSnapshot::empty(schema.clone(), spec.tables_in(schema));
        let seeded = self.usable_seed(spec);
        // A resume only makes sense on the same schema we cached with, and
        // the same conditions (see the module comment). The cache file's
        // rows, checked for both, stand in for the cache until the first
        // sync, but only as the base the server's changes apply to.
        let (current, same_schema, same_conditions, last_txn_id) = match &seeded {
            Some(seed) => (
                seed.snapshot.clone(),
                true,
                true,
                Some(seed.header.last_txn_id.clone()),
            ),
            None => (
                published.clone(),
                published.schema() == schema,
                self.cache_spec.as_deref() == Some(spec),
                self.last_txn_id.clone(),
            ),
        };
        let mut reply = None;
        if self.since_supported {
            let last = if same_schema && same_conditions {
                last_txn_id.as_deref()
            } else {
                None
            };
            match session
                .monitor_cond_since(&db, monitor_id, spec, schema, last)
                .await
            {
                Ok(r) => reply = Some(r),
                Err(Error::Rpc { .. }) => {
                    tracing::info!(%remote, "server lacks monitor_cond_since, using monitor_cond");
                    self.since_supported = false;
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(r) = &reply {
            self.sync_rows
                .store(r.updates.row_count() as u64, Ordering::Relaxed);
        }
        let applied = match reply {
            Some(r) if r.found && same_schema && same_conditions => {
                self.resumes.fetch_add(1, Ordering::Relaxed);
                let changes = r.updates.row_count();
                let from = if seeded.is_some() {
                    "the cache file's"
                } else {
                    "the last"
                };
                tracing::info!(%remote, changes, "resumed monitor from {from} transaction id");
                self.last_txn_id = Some(r.last_txn_id);
                current
                    .apply_skipping_bad_rows(r.updates)
                    .map(|applied| match seeded {
                        // Published as the change from what readers hold.
                        Some(_) => {
                            self.resumed_at_start.store(true, Ordering::Relaxed);
                            let (snapshot, changes) = published.replaced_by(applied.snapshot);
                            AppliedUpdate {
                                snapshot,
                                changes,
                                skipped: applied.skipped,
                            }
                        }
                        None => applied,
                    })
            }
            Some(r) => {
                if let Some(seed) = &seeded {
                    tracing::info!(%remote, last_txn_id = %seed.header.last_txn_id, "OVSDB cache file not resumed: the server no longer has its transaction (history expired, or a standalone server); full dump");
                }
                self.last_txn_id = Some(r.last_txn_id);
                published.replace_skipping_bad_rows(empty, r.updates)
            }
            None => {
                let dump = session.monitor_cond(&db, monitor_id, spec, schema).await?;
                self.sync_rows
                    .store(dump.row_count() as u64, Ordering::Relaxed);
                published.replace_skipping_bad_rows(empty, dump)
            }
        };
        applied.map_err(Error::from)
    }
}
