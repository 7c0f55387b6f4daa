//! The OVSDB databases the agent reads, kept in sync in the background, and
//! the indexed OVN [`Snapshot`](obgp_ovn::Snapshot) built from their caches.
//!
//! Every driver reads the local Open_vSwitch database (`[DEFAULT]
//! ovsdb_connection`: identity, bridge mappings, bridges and ports). The NB
//! driver reads OVN_Northbound (`[ovn] ovn_nb_connection`); the SB driver
//! reads OVN_Southbound (`[ovn] ovn_sb_connection`, else the OVS row's
//! `external_ids:ovn-remote`, as upstream).
//!
//! The indexed snapshot is maintained from the caches' change streams
//! ([`SnapshotFollower`]): a reconcile after a one-row change re-reads that
//! row, not the database.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use obgp_config::Config;
use obgp_ovn::{NbChanges, NbRowFilter, Snapshot};
use obgp_ovsdb::{Client, ClientConfig};
use tokio::sync::watch;

use super::database::{ovn_client, remotes, ClientOptions, MonitoredDb, MonitoredDbError};
use super::follower::SnapshotFollower;
use super::host::system_hostname;
use super::local_cluster::LocalClusterSource;
use super::ofports::{ofports, OfPorts};
use super::port_conditions::{ConditionTarget, PortConditions};

/// The monitored databases: the OVN one the driver reads, the local OVS,
/// and with `exposing_method = ovn` the node-local NB the agent writes.
pub struct OvnSources {
    /// OVN_Northbound (NB driver) or OVN_Southbound (SB driver).
    pub ovn: MonitoredDb,
    pub ovs: MonitoredDb,
    /// `[local_ovn_cluster] ovn_nb_connection` (`exposing_method = ovn`).
    pub local_nb: Option<Arc<LocalClusterSource>>,
    /// The NB driver's port conditions: sent to the server
    /// (`ovn_nb_monitor_all = false`) or the follower's local filter
    /// (`true`); `None` for the SB drivers.
    pub port_conditions: Option<PortConditions>,
    /// Behind a lock so that `inputs` can take `&self`; only the reconcile
    /// loop calls it, so it is never contended.
    maintained: Mutex<SnapshotFollower>,
}

impl OvnSources {
    /// Starts connecting to the local OVS and the driver's OVN database in
    /// the background. The SB driver without `ovn_sb_connection` first
    /// waits (up to `timeout`) for the OVS row to learn `ovn-remote`.
    pub async fn start(config: &Config, timeout: Duration) -> Result<OvnSources, MonitoredDbError> {
        let ovs_conn = &config.default.ovsdb_connection;
        let ovs = MonitoredDb {
            database: obgp_ovn::OVS_DB,
            client: Client::start(ClientConfig::new(
                remotes("[DEFAULT] ovsdb_connection", ovs_conn)?,
                obgp_ovn::OVS_DB,
                obgp_ovn::ovs::monitor_spec(),
            )),
            remotes: ovs_conn.clone(),
        };
        let o = &config.ovn;
        let driver = config.default.driver;
        let port_conditions = (driver == obgp_config::Driver::NbOvnBgpDriver)
            .then(|| PortConditions::new(config, system_hostname()));
        let sent_to_server = port_conditions
            .as_ref()
            .filter(|pc| pc.target() == ConditionTarget::Server);
        let ovn = match driver {
            d if d.reads_sb() => {
                let conn = match &o.ovn_sb_connection {
                    Some(c) => c.clone(),
                    None => {
                        ovs.wait_synced(timeout).await?;
                        let snap = Snapshot::build(
                            &obgp_ovn::Tables::new(),
                            &ovs.client.cache().snapshot(),
                        );
                        snap.ovs
                            .ovn_remote
                            .clone()
                            .ok_or(MonitoredDbError::NoSbConnection)?
                    }
                };
                ovn_client(
                    "[ovn] ovn_sb_connection",
                    &conn,
                    obgp_ovn::SB_DB,
                    obgp_ovn::sb::monitor_spec(),
                    (
                        &o.ovn_sb_private_key,
                        &o.ovn_sb_certificate,
                        &o.ovn_sb_ca_cert,
                    ),
                    ClientOptions {
                        writer: None,
                        state_file: None,
                        max_update_mib: config.default.ovsdb_max_update_mib,
                    },
                )?
            }
            _ => ovn_client(
                "[ovn] ovn_nb_connection",
                config
                    .ovn
                    .ovn_nb_connection
                    .as_deref()
                    .ok_or(MonitoredDbError::NoNbConnection)?,
                obgp_ovn::NB_DB,
                match sent_to_server {
                    // The first request already asks for this node's ports
                    // (its names come from the local OVS).
                    // With a cache file filled by this same request under
                    // other conditions, its conditions: the start resumes.
                    Some(pc) => match nb_state_file(config)
                        .and_then(|f| obgp_ovsdb::read_cache_header(&f))
                        .and_then(|h| {
                            PortConditions::spec_of_cache_file(&obgp_ovn::nb::monitor_spec(), &h)
                        }) {
                        Some(spec) => pc.resume_spec(spec),
                        None => {
                            ovs.wait_synced(timeout).await?;
                            let local = Snapshot::build(
                                &obgp_ovn::Tables::new(),
                                &ovs.client.cache().snapshot(),
                            );
                            pc.initial_spec(obgp_ovn::nb::monitor_spec(), &local)
                        }
                    },
                    // Every row: the conditions, if any, filter in-process.
                    None => obgp_ovn::nb::monitor_spec(),
                },
                (
                    &o.ovn_nb_private_key,
                    &o.ovn_nb_certificate,
                    &o.ovn_nb_ca_cert,
                ),
                ClientOptions {
                    writer: None,
                    state_file: nb_state_file(config),
                    max_update_mib: config.default.ovsdb_max_update_mib,
                },
            )?,
        };
        let local_nb = if driver == obgp_config::Driver::NbOvnBgpDriver
            && config.default.exposing_method == obgp_config::ExposingMethod::Ovn
        {
            Some(Arc::new(LocalClusterSource::start(config)?))
        } else {
            None
        };
        let follower = SnapshotFollower::new(
            ovn.client.cache(),
            ovs.client.cache(),
            driver,
            sent_to_server.is_some(),
        );
        let maintained = Mutex::new(match &port_conditions {
            // A full monitor: the first snapshot already holds only this
            // node's rows, selected by the conditions the local OVS calls for.
            Some(pc) if pc.target() == ConditionTarget::LocalFilter => {
                ovs.wait_synced(timeout).await?;
                let local =
                    Snapshot::build(&obgp_ovn::Tables::new(), &ovs.client.cache().snapshot());
                follower.with_local_filter(pc.initial_filter(&local))
            }
            _ => follower,
        });
        Ok(OvnSources {
            ovn,
            ovs,
            local_nb,
            port_conditions,
            maintained,
        })
    }

    /// Writes the NB cache file (`[DEFAULT] state_dir`) if the cache
    /// changed since it was last written; a failure is logged (the next
    /// start then reads the NB whole, or from an older file).
    pub async fn save_state(&self) {
        if let Err(e) = self.ovn.client.save_state().await {
            tracing::warn!(error = %e, "the OVN_Northbound cache was not written; the next start may read the NB whole");
        }
    }

    /// Waits until every database delivered its initial dump.
    pub async fn wait_synced(&self, timeout: Duration) -> Result<(), MonitoredDbError> {
        self.ovn.wait_synced(timeout).await?;
        self.ovs.wait_synced(timeout).await?;
        match &self.local_nb {
            Some(local) => local.wait_synced(timeout).await,
            None => Ok(()),
        }
    }

    /// What the next reconcile reads: the maintained snapshot brought up to
    /// date with every change received so far (see [`SnapshotFollower`]),
    /// with what changed since the last call.
    pub fn inputs(&self) -> ReconcileInputs {
        let mut maintained = self.maintained();
        let caught = maintained.catch_up(self.ovn.client.cache(), self.ovs.client.cache());
        ReconcileInputs {
            ofports: ofports(&caught.raw_ovs),
            raw_ovn: caught.raw_ovn,
            raw_ovs: caught.raw_ovs,
            snapshot: caught.snapshot,
            local_filter: caught.filter,
            changes: maintained.take_changes(),
        }
    }

    /// Patches the maintained snapshot with the changes received so far,
    /// between reconciles: rows no event asked for (another node's port, a
    /// switch's `ports` growing) are then not patched on the next event's
    /// path, which finds only its own rows left to apply.
    pub fn follow_changes(&self) {
        let mut maintained = self.maintained();
        drop(maintained.catch_up(self.ovn.client.cache(), self.ovs.client.cache()));
    }

    fn maintained(&self) -> std::sync::MutexGuard<'_, SnapshotFollower> {
        match self.maintained.lock() {
            Ok(m) => m,
            Err(poisoned) => {
                // A panic mid-update may have left it half-patched.
                self.maintained.clear_poison();
                let mut m = poisoned.into_inner();
                m.invalidate();
                m
            }
        }
    }

    /// Whether the NB port conditions are sent to the server
    /// (`ovn_nb_monitor_all = false`): the cache then holds only the
    /// Logical_Switch_Port and NAT rows this node needs. With a local
    /// filter the cache holds every row.
    pub fn conditions_sent_to_server(&self) -> bool {
        self.port_conditions
            .as_ref()
            .is_some_and(|pc| pc.target() == ConditionTarget::Server)
    }

    /// Ticks whenever the driver's OVN database cache changed.
    pub fn ovn_changed(&self) -> watch::Receiver<obgp_ovsdb_data::DbSnapshot> {
        self.ovn.client.cache().watch()
    }
}

impl OvnSources {
    /// [`OvnSources::inputs`], for the NB driver once its port conditions
    /// converged ([`PortConditions::converged`], sent to the server or set
    /// as the follower's local filter): what every reconcile and one-shot
    /// command computes from.
    pub async fn converged_inputs(&self) -> Result<ReconcileInputs, MonitoredDbError> {
        // Each round reads the inputs (and takes their changes) again:
        // the rounds' changes add up.
        let changes = Mutex::new(NbChanges::none());
        let read = || {
            let mut inputs = self.inputs();
            changes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .then(std::mem::take(&mut inputs.changes));
            inputs
        };
        match &self.port_conditions {
            Some(pc) => pc
                .converged(
                    &self.ovn.client,
                    |filter| self.maintained().set_local_filter(filter),
                    read,
                    |i| &i.snapshot,
                    || changes.lock().unwrap_or_else(|p| p.into_inner()).clone(),
                )
                .await
                .map(|mut inputs| {
                    // What changed over every round, handed out with the last.
                    inputs.changes = changes.into_inner().unwrap_or_else(|p| p.into_inner());
                    inputs
                })
                .map_err(MonitoredDbError::Conditions),
            None => Ok(self.inputs()),
        }
    }
}

/// What one reconcile reads from the databases.
pub struct ReconcileInputs {
    /// The raw cache of the OVN database the driver reads (NB or SB): the
    /// event filters' agent view reads raw rows.
    pub raw_ovn: obgp_ovsdb_data::DbSnapshot,
    /// The local OVS cache snapshot `snapshot` was built with.
    pub raw_ovs: obgp_ovsdb_data::DbSnapshot,
    /// The indexed OVN snapshot `desired_state` reads: with a local filter
    /// (`ovn_nb_monitor_all = true`), of the NB rows it keeps only.
    pub snapshot: Snapshot,
    /// The local filter `snapshot` holds the NB rows of; `None`: every
    /// cached row.
    pub local_filter: Option<Arc<NbRowFilter>>,
    /// Bridge → interface → ofport, from the local OVS database.
    pub ofports: OfPorts,
    /// What changed in the NB and local OVS rows since the previous
    /// `inputs()` ([`NbChanges::Full`] when not known): the reconcile
    /// hands it to the incremental desired state
    /// ([`Reconciler::note_ovn_changes`](crate::Reconciler::note_ovn_changes)).
    pub changes: NbChanges,
}

impl ReconcileInputs {
    /// The NB snapshot of every cached row, whatever the local filter
    /// keeps: what a question about another node's port reads (`explain`).
    /// Built afresh: O(the database).
    pub fn unfiltered_snapshot(&self) -> Snapshot {
        match self.local_filter {
            Some(_) => Snapshot::build(&self.raw_ovn, &self.raw_ovs),
            None => self.snapshot.clone(),
        }
    }
}

/// The NB driver's cache file, `<state_dir>/OVN_Northbound.cache`, with
/// `[DEFAULT] state_dir` set (the agent's own option).
fn nb_state_file(config: &Config) -> Option<std::path::PathBuf> {
    let dir = config
        .default
        .state_dir
        .as_deref()
        .filter(|d| !d.is_empty())?;
    Some(std::path::Path::new(dir).join(format!("{}.cache", obgp_ovn::NB_DB)))
}
