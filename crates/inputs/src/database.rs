//! One monitored OVSDB database ([`MonitoredDb`]): its client, started from a
//! connection option with TLS when a remote is `ssl:`, and why it could not
//! be reached or read ([`MonitoredDbError`]). The OVN sources, the port
//! conditions and the node-local NB all start and wait on it.

use std::time::Duration;

use obgp_ovsdb::rpc::transport::parse_remotes;
use obgp_ovsdb::{Client, ClientConfig, Remote, SessionConfig, TlsFiles, TlsSettings};
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

/// What differs between the agent's OVN database clients.
pub(crate) struct ClientOptions {
    /// `Some(deadline)`: the agent writes this database (read from the RAFT
    /// leader, transactions bounded by the deadline).
    pub writer: Option<Duration>,
    /// Where the cache is kept between runs (`[DEFAULT] state_dir`).
    pub state_file: Option<std::path::PathBuf>,
    /// `[DEFAULT] ovsdb_max_update_mib`.
    pub max_update_mib: u64,
}

/// A client for an OVN database, with TLS when a remote is `ssl:`.
pub(crate) fn ovn_client(
    option: &'static str,
    conn: &str,
    database: &'static str,
    monitor: MonitorSpec,
    tls: (&str, &str, &str),
    options: ClientOptions,
) -> Result<MonitoredDb, MonitoredDbError> {
    let ClientOptions {
        writer,
        state_file,
        max_update_mib,
    } = options;
    // The session's default limits are the agent's: a 100k-port dump and
    // large updates are decoded while they arrive (bounded by
    // `max_streamed`), everything else is small (`max_message`), and no
    // string, nesting or stalled message can make it hold more
    // (docs/reliability.md, "Memory under a hostile server").
    let mut cfg = ClientConfig::new(remotes(option, conn)?, database, monitor);
    cfg.state_file = state_file;
    cfg.session = session_limits(cfg.session, max_update_mib);
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

/// The session's limits with `[DEFAULT] ovsdb_max_update_mib`: the decoded
/// rows of one update may take that many MiB, and its bytes on the wire 1.6
/// times that (the default's ratio, 256 to 160 MiB), never below the
/// default's 256 MiB.
pub(crate) fn session_limits(mut session: SessionConfig, max_update_mib: u64) -> SessionConfig {
    let decoded = usize::try_from(max_update_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
    session.max_decoded = decoded;
    session.max_streamed = session.max_streamed.max(decoded.saturating_mul(8) / 5);
    session
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_bound_follows_the_decoded_bound_never_below_the_default() {
        let default = SessionConfig::default();
        let same = session_limits(default.clone(), 160);
        assert_eq!(same.max_decoded, default.max_decoded);
        assert_eq!(same.max_streamed, default.max_streamed);
        let small = session_limits(default.clone(), 1);
        assert_eq!(small.max_decoded, 1 << 20);
        assert_eq!(small.max_streamed, default.max_streamed);
        let big = session_limits(default.clone(), 640);
        assert_eq!(big.max_decoded, 640 << 20);
        assert_eq!(big.max_streamed, 1024 << 20);
    }
}
