//! The node-local OVN NB of `exposing_method = ovn` (ADR 0008): a monitor
//! of the tables the agent writes there (`obgp_local_cluster::monitor_spec()`,
//! BFD included) on a `leader_only` connection to `[local_ovn_cluster]
//! ovn_nb_connection`, and the writer: plan the desired rows against the
//! monitored ones and run the operations as one `transact`.
//!
//! A failed transaction is returned (the caller logs it; the next
//! reconcile plans again from what the monitor shows), never a panic.
//! After a committed transaction the writer waits until the monitor shows
//! the inserted rows, so the next plan does not insert them again.

use std::time::Duration;

use obgp_config::Config;
use obgp_local_cluster::{LocalClusterPlan, LocalClusterRows, NbOp, NbTable, Observed};
use obgp_ovsdb_data::{Change, DbSnapshot, Uuid};
use serde_json::Value;
use tokio::sync::{broadcast, watch};

use super::database::{ovn_client, ClientOptions, MonitoredDb, MonitoredDbError};

/// Why the local NB could not be written.
#[derive(Debug, thiserror::Error)]
pub enum LocalClusterError {
    #[error("local NB {remotes}: the initial dump has not arrived: not planning against an unknown database")]
    NotSynced { remotes: String },
    #[error("local NB {remotes}: transaction of {ops} operations failed: {source}")]
    Transact {
        remotes: String,
        ops: usize,
        source: obgp_ovsdb::Error,
    },
    #[error("local NB {remotes}: the monitor did not show the {missing} inserted rows within {timeout:?}")]
    NotSeen {
        remotes: String,
        missing: usize,
        timeout: Duration,
    },
}

/// The monitored node-local NB.
pub struct LocalClusterSource {
    source: MonitoredDb,
    remotes: String,
}

/// How long the writer waits for the monitor to show its inserts.
const SEEN_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a local-NB transaction may take. The reconcile waits for it,
/// so a wedged local NB (connected, never answering) delays each
/// reconcile by this much instead of the client's default 180 s; a
/// transaction that commits after it is seen by the monitor, and the
/// planner removes a duplicate it may leave.
const TRANSACT_TIMEOUT: Duration = Duration::from_secs(5);

impl LocalClusterSource {
    /// Starts connecting (in the background, leader only) to
    /// `[local_ovn_cluster] ovn_nb_connection`.
    pub fn start(config: &Config) -> Result<LocalClusterSource, MonitoredDbError> {
        let conn = &config.local_ovn_cluster.ovn_nb_connection;
        let source = ovn_client(
            "[local_ovn_cluster] ovn_nb_connection",
            conn,
            obgp_ovn::NB_DB,
            obgp_local_cluster::monitor_spec(),
            // upstream has no TLS options for the local cluster.
            ("", "", ""),
            ClientOptions {
                writer: Some(TRANSACT_TIMEOUT),
                // The node-local NB is small and local: nothing to keep.
                state_file: None,
                max_update_mib: config.default.ovsdb_max_update_mib,
            },
        )?;
        Ok(LocalClusterSource {
            source,
            remotes: conn.clone(),
        })
    }

    /// Waits for the initial dump.
    pub async fn wait_synced(&self, timeout: Duration) -> Result<(), MonitoredDbError> {
        self.source.wait_synced(timeout).await
    }

    /// Row changes from now on: each schedules a reconcile.
    pub fn changes(&self) -> broadcast::Receiver<Change> {
        self.source.changes()
    }

    /// The resync generation (a reconnect's dump schedules a reconcile).
    pub fn resynced(&self) -> watch::Receiver<u64> {
        self.source.resynced()
    }

    /// The agent's tables as the monitor shows them now.
    pub fn observed(&self) -> Observed {
        observed_of(&self.source.client.cache().snapshot())
    }

    /// Plans `desired` against the monitored rows and, when anything
    /// differs, runs the operations as one transaction. Returns the plan
    /// (its `problems` name the rows the planner skipped).
    pub async fn write(
        &self,
        desired: &LocalClusterRows,
    ) -> Result<LocalClusterPlan, LocalClusterError> {
        let plan = self.plan(desired)?;
        self.run(&plan).await?;
        Ok(plan)
    }

    /// Plans `desired` against the monitored rows; refused before the
    /// initial dump (an unknown database is not an empty one).
    pub fn plan(&self, desired: &LocalClusterRows) -> Result<LocalClusterPlan, LocalClusterError> {
        if *self.source.resynced().borrow() == 0 {
            return Err(LocalClusterError::NotSynced {
                remotes: self.remotes.clone(),
            });
        }
        Ok(obgp_local_cluster::plan(desired, &self.observed()))
    }

    /// Runs `plan`'s operations as one transaction (nothing when empty)
    /// and waits until the monitor shows its inserts.
    pub async fn run(&self, plan: &LocalClusterPlan) -> Result<(), LocalClusterError> {
        if plan.is_empty() {
            return Ok(());
        }
        let ops: Vec<Value> = plan.ops.iter().map(NbOp::wire).collect();
        let n = ops.len();
        let results = self.source.client.transact(ops).await.map_err(|source| {
            LocalClusterError::Transact {
                remotes: self.remotes.clone(),
                ops: n,
                source,
            }
        })?;
        self.wait_seen(&inserted(plan, &results)).await
    }

    /// Waits until every row in `uuids` is in the monitored cache.
    async fn wait_seen(&self, uuids: &[(NbTable, Uuid)]) -> Result<(), LocalClusterError> {
        let mut snapshots = self.source.client.cache().watch();
        let missing = |s: &DbSnapshot| {
            uuids
                .iter()
                .filter(|(t, u)| s.get(t.name(), *u).is_none())
                .count()
        };
        let waited = tokio::time::timeout(SEEN_TIMEOUT, async {
            loop {
                if missing(&snapshots.borrow_and_update()) == 0 {
                    return true;
                }
                if snapshots.changed().await.is_err() {
                    return false;
                }
            }
        })
        .await;
        match waited {
            Ok(true) => Ok(()),
            _ => Err(LocalClusterError::NotSeen {
                remotes: self.remotes.clone(),
                missing: missing(&self.source.client.cache().snapshot()),
                timeout: SEEN_TIMEOUT,
            }),
        }
    }
}

/// The uuids the server gave the plan's inserts (a transaction's result
/// for an insert is `{"uuid": ["uuid", "<uuid>"]}`).
fn inserted(plan: &LocalClusterPlan, results: &[Value]) -> Vec<(NbTable, Uuid)> {
    plan.ops
        .iter()
        .zip(results)
        .filter_map(|(op, r)| {
            let NbOp::Insert { key, .. } = op else {
                return None;
            };
            let u = r.get("uuid")?.get(1)?.as_str()?;
            Some((key.table, Uuid::parse(u).ok()?))
        })
        .collect()
}

/// The agent's tables of a local-NB snapshot, as the planner reads them.
pub fn observed_of(snap: &DbSnapshot) -> Observed {
    NbTable::ALL
        .iter()
        .map(|t| {
            let rows = snap
                .table(t.name())
                .iter()
                .map(|(u, r)| (*u, (**r).clone()))
                .collect();
            (t.name().to_string(), rows)
        })
        .collect()
}
