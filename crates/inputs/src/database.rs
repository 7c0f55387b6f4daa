//! One monitored OVSDB database ([`MonitoredDb`]): its client, started from a
//! connection option with TLS when a remote is `ssl:`, and why it could not
//! be reached or read ([`MonitoredDbError`]). The OVN sources, the port
//! conditions and the node-local NB all start and wait on it.

use std::time::Duration;

use obgp_ovsdb::rpc::transport::parse_remotes;
use obgp_ovsdb::{Client, ClientConfig, Remote, TlsFiles, TlsSettings};
use obgp_ovsdb_data::{Change, MonitorSpec};
use tokio::sync::{broadcast, watch};

/// Why the databases could not be reached or read.
#[derive(Debug, thiserror::Error)]
pub enum MonitoredDbError {
    #[error("[ovn] ovn_nb_connection is not set: the NB driver needs the OVN Northbound database")]
    NoNbConnection,
    #[error("[ovn] ovn_sb_connection is not set and the Open_vSwitch row has no external_ids:ovn-remote: the SB driver needs the OVN Southbound database")]
    NoSbConnection,
    #[error("{option} = {value:?}: {source}")]
    BadRemote {
        option: &'static str,
        value: String,
        source: obgp_ovsdb::Error,
    },
    #[error("TLS files for {option}: {source}")]
    Tls {
        option: &'static str,
        source: obgp_ovsdb::Error,
    },
    #[error("OVN_Northbound port conditions (ovn_nb_monitor_all = false) not converged: {0}")]
    Conditions(String),
    #[error("{database} did not sync within {timeout:?} (remotes: {remotes})")]
    SyncTimeout {
        database: &'static str,
        timeout: Duration,
        remotes: String,
    },
}

/// One monitored database.
pub struct MonitoredDb {
    pub database: &'static str,
    pub client: Client,
    pub(crate) remotes: String,
}

pub(crate) fn remotes(option: &'static str, value: &str) -> Result<Vec<Remote>, MonitoredDbError> {
    parse_remotes(value).map_err(|source| MonitoredDbError::BadRemote {
        option,
        value: value.to_string(),
        source,
    })
}

/// A client for an OVN database, with TLS when a remote is `ssl:`.
pub(crate) fn ovn_client(
    option: &'static str,
    conn: &str,
    database: &'static str,
    monitor: MonitorSpec,
    tls: (&str, &str, &str),
    writer: Option<Duration>,
    state_file: Option<std::path::PathBuf>,
) -> Result<MonitoredDb, MonitoredDbError> {
    // The session's default limits are the agent's: a 100k-port dump and
    // large updates are decoded while they arrive (bounded by
    // `max_streamed`), everything else is small (`max_message`), and no
    // string, nesting or stalled message can make it hold more
    // (docs/reliability.md, "Memory under a hostile server").
    let mut cfg = ClientConfig::new(remotes(option, conn)?, database, monitor);
    cfg.state_file = state_file;
    // A database the agent writes is read from the RAFT leader (a
    // follower's monitor may lag the writes), and its transactions are
    // bounded by the given deadline: the reconcile waits for them.
    if let Some(deadline) = writer {
        cfg.leader_only = true;
        cfg.transact_timeout = deadline;
    }
    if cfg.remotes.iter().any(|r| matches!(r, Remote::Ssl { .. })) {
        let files = TlsFiles {
            private_key: tls.0.into(),
            certificate: tls.1.into(),
            ca_cert: tls.2.into(),
        };
        cfg.tls = Some(
            TlsSettings::load(&files).map_err(|source| MonitoredDbError::Tls { option, source })?,
        );
    }
    Ok(MonitoredDb {
        database,
        client: Client::start(cfg),
        remotes: conn.to_string(),
    })
}

impl MonitoredDb {
    pub async fn wait_synced(&self, timeout: Duration) -> Result<(), MonitoredDbError> {
        let synced = tokio::time::timeout(timeout, self.client.cache().wait_resynced(1)).await;
        if matches!(synced, Ok(Ok(()))) {
            Ok(())
        } else {
            Err(MonitoredDbError::SyncTimeout {
                database: self.database,
                timeout,
                remotes: self.remotes.clone(),
            })
        }
    }

    /// Row changes from now on.
    pub fn changes(&self) -> broadcast::Receiver<Change> {
        self.client.cache().subscribe()
    }

    /// The resync generation (incremented after every (re)connect's dump).
    pub fn resynced(&self) -> watch::Receiver<u64> {
        self.client.cache().resynced()
    }
}
