//! The OVSDB databases the agent reads, kept in sync in the background, and
//! the indexed OVN [`Snapshot`](obgp_ovn::Snapshot) built from their caches.
//!
//! NB driver: OVN_Northbound (`[ovn] ovn_nb_connection`) and the local
//! Open_vSwitch database (`[DEFAULT] ovsdb_connection`).

use std::time::Duration;

use obgp_config::Config;
use obgp_ovn::Snapshot;
use obgp_ovsdb::rpc::transport::parse_remotes;
use obgp_ovsdb::{Client, ClientConfig, MonitorSpec, Remote, TlsFiles, TlsSettings};

/// The NB tables the NB driver reads (upstream's `nb_ovn_bgp_driver.OVN_TABLES`).
pub const NB_TABLES: &[&str] = &[
    "Logical_Switch",
    "Logical_Switch_Port",
    "Logical_Router",
    "Logical_Router_Port",
    "NAT",
    "Load_Balancer",
    "NB_Global",
];

/// The local OVS tables: identity, bridge mappings, bridges and their ports.
pub const OVS_TABLES: &[&str] = &["Open_vSwitch", "Bridge", "Port", "Interface"];

/// The largest OVSDB message accepted. A 100k-port NB's initial dump is
/// about 125 MB, over the client's 64 MiB default; the bound stays so a
/// broken server cannot make the agent allocate without limit.
pub const MAX_MESSAGE: usize = 1 << 30;

/// Why the databases could not be reached or read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("[ovn] ovn_nb_connection is not set: the NB driver needs the OVN Northbound database")]
    NoNbConnection,
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
    #[error("{database} did not sync within {timeout:?} (remotes: {remotes})")]
    SyncTimeout {
        database: &'static str,
        timeout: Duration,
        remotes: String,
    },
}

/// The monitored databases.
pub struct OvnSources {
    pub nb: Client,
    pub ovs: Client,
    nb_remotes: String,
    ovs_remotes: String,
}

fn remotes(option: &'static str, value: &str) -> Result<Vec<Remote>, SourceError> {
    parse_remotes(value).map_err(|source| SourceError::BadRemote {
        option,
        value: value.to_string(),
        source,
    })
}

impl OvnSources {
    /// Starts connecting to the NB and local OVS databases in the background.
    pub fn start(config: &Config) -> Result<OvnSources, SourceError> {
        let nb_conn = config
            .ovn
            .ovn_nb_connection
            .as_deref()
            .ok_or(SourceError::NoNbConnection)?;
        let nb_remotes = remotes("[ovn] ovn_nb_connection", nb_conn)?;
        let mut nb_config = ClientConfig::new(
            nb_remotes,
            obgp_ovn::NB_DB,
            MonitorSpec::all(NB_TABLES.iter().copied()),
        );
        if nb_config
            .remotes
            .iter()
            .any(|r| matches!(r, Remote::Ssl { .. }))
        {
            let files = TlsFiles {
                private_key: config.ovn.ovn_nb_private_key.clone().into(),
                certificate: config.ovn.ovn_nb_certificate.clone().into(),
                ca_cert: config.ovn.ovn_nb_ca_cert.clone().into(),
            };
            nb_config.tls = Some(
                TlsSettings::load(&files).map_err(|source| SourceError::Tls {
                    option: "[ovn] ovn_nb_private_key/ovn_nb_certificate/ovn_nb_ca_cert",
                    source,
                })?,
            );
        }
        let ovs_conn = &config.default.ovsdb_connection;
        let ovs_config = ClientConfig::new(
            remotes("[DEFAULT] ovsdb_connection", ovs_conn)?,
            obgp_ovn::OVS_DB,
            MonitorSpec::all(OVS_TABLES.iter().copied()),
        );
        Ok(OvnSources {
            nb: Client::start(nb_config),
            ovs: Client::start(ovs_config),
            nb_remotes: nb_conn.to_string(),
            ovs_remotes: ovs_conn.clone(),
        })
    }

    /// Waits until both databases delivered their initial dump.
    pub async fn wait_synced(&self, timeout: Duration) -> Result<(), SourceError> {
        for (client, database, remotes) in [
            (&self.nb, obgp_ovn::NB_DB, &self.nb_remotes),
            (&self.ovs, obgp_ovn::OVS_DB, &self.ovs_remotes),
        ] {
            let synced = tokio::time::timeout(timeout, client.cache().wait_resynced(1)).await;
            if !matches!(synced, Ok(Ok(()))) {
                return Err(SourceError::SyncTimeout {
                    database,
                    timeout,
                    remotes: remotes.clone(),
                });
            }
        }
        Ok(())
    }

    /// The current indexed OVN snapshot, and the raw NB cache it was built
    /// from (the event filters' agent view reads raw rows).
    pub fn snapshot(&self) -> (obgp_ovsdb::Snapshot, Snapshot) {
        let nb = self.nb.cache().snapshot();
        let ovs = self.ovs.cache().snapshot();
        let snap = Snapshot::build(&nb, &ovs);
        (nb, snap)
    }
}
