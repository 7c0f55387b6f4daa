//! The agent's configuration: every option upstream's `bgp-agent.conf` knows,
//! with upstream's names, defaults and choices.
//!
//! [`Config`] is the typed result the rest of the agent reads. Loading it
//! (oslo-style INI files layered with figment, deprecated aliases,
//! validation) lives in the loader module.

use std::net::IpAddr;

use serde::Serialize;

mod error;
mod fields;
pub mod ini;
mod load;
pub mod options;
mod render;
mod subst;
mod suggest;
mod values;

pub use error::{ConfigError, InvalidValue, Warning, WarningKind};
pub use load::{
    default_sources, ConfigSource, Loaded, Loader, ENV_PREFIX, OSLO_ENV_PREFIX, PROG, PROJECT,
};
pub use render::{effective_json, effective_text, markdown_table};
pub use values::Typed;

/// `[DEFAULT] driver`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Driver {
    OvnBgpDriver,
    OvnEvpnDriver,
    OvnStretchedL2BgpDriver,
    NbOvnBgpDriver,
}

impl Driver {
    /// Whether the driver reads OVN_Southbound (and names this chassis by
    /// its OVS `system-id`) rather than OVN_Northbound.
    pub fn reads_sb(self) -> bool {
        match self {
            Driver::OvnBgpDriver | Driver::OvnEvpnDriver | Driver::OvnStretchedL2BgpDriver => true,
            Driver::NbOvnBgpDriver => false,
        }
    }
}

/// `[DEFAULT] exposing_method`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExposingMethod {
    Underlay,
    L2vni,
    Vrf,
    Dynamic,
    Ovn,
}

/// `[DEFAULT] announce_with` (the agent's own option): what puts an
/// exposed IP into BGP on `bgp_nic`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnnounceWith {
    /// A /32 or /128 address on `bgp_nic`, redistributed as connected
    /// (upstream's way; the default).
    Address,
    /// A host route in the `bgp_vrf` table on `bgp_nic`, redistributed as
    /// kernel: O(log n) to add where an address costs O(addresses).
    Route,
}

/// `[DEFAULT] advertisement_method_tenant_networks`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AdvertisementMethod {
    Host,
    Subnet,
}

/// The whole effective configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Config {
    pub default: DefaultSection,
    pub agent: AgentSection,
    pub ovn: OvnSection,
    pub local_ovn_cluster: LocalOvnClusterSection,
    pub log: LogSection,
}

/// The agent's own `[DEFAULT]` options.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DefaultSection {
    pub reconcile_interval: u64,
    pub frr_reconcile_interval: u64,
    pub expose_tenant_networks: bool,
    pub advertisement_method_tenant_networks: AdvertisementMethod,
    pub require_snat_disabled_for_tenant_networks: bool,
    pub expose_ipv6_gua_tenant_networks: bool,
    pub driver: Driver,
    pub ovsdb_connection: String,
    pub ovsdb_connection_timeout: u64,
    /// `bgp_AS`: a string upstream, rendered as-is into FRR texts after validation.
    pub bgp_as: String,
    pub bgp_router_id: Option<String>,
    pub evpn_local_ip: Option<IpAddr>,
    pub evpn_nic: Option<String>,
    pub evpn_udp_dstport: u16,
    pub clear_vrf_routes_on_startup: bool,
    pub delete_vrf_on_disconnect: bool,
    pub bgp_nic: String,
    pub bgp_vrf: String,
    pub bgp_vrf_table_id: u32,
    pub address_scopes: Option<Vec<String>>,
    pub exposing_method: ExposingMethod,
    /// Deadline of one `vtysh` run, seconds (the agent's own option).
    pub vtysh_timeout: u64,
    /// Deadline of one `ovs-ofctl` run, seconds (the agent's own option).
    pub ovs_ofctl_timeout: u64,
    /// MiB the decoded rows of one OVSDB update (an initial dump included)
    /// may take before the session is dropped (the agent's own option).
    pub ovsdb_max_update_mib: u64,
    /// Seconds a mass withdrawal is held; 0 turns the guard off (the
    /// agent's own option).
    pub mass_withdrawal_grace: u64,
    /// The share, in percent, of the node's prefixes (and of the database's
    /// rows) from which a withdrawal counts as a mass withdrawal (the
    /// agent's own option).
    pub mass_withdrawal_percent: u8,
    /// Where the daemon serves `/metrics`, `/healthz` and `/readyz`;
    /// `None`: no listener (the agent's own option).
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// How exposed IPs are announced (the agent's own option).
    pub announce_with: AnnounceWith,
    /// `false` (the default): the NB driver monitors only the
    /// Logical_Switch_Port and NAT rows that can matter on this node, by
    /// conditions that follow the state; `true`: every one of them
    /// (ovn-controller's `ovn-monitor-all`; the agent's own option, which
    /// the other drivers, reading OVN_Southbound, do not read).
    pub ovn_nb_monitor_all: bool,
    /// Where the agent keeps state between runs (the NB cache file, so a
    /// restart resumes instead of re-reading the NB); `None`: nothing is
    /// kept (the agent's own option).
    pub state_dir: Option<String>,
}

/// `[agent]`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AgentSection {
    pub root_helper: String,
}

/// `[ovn]` (each option also read from `[DEFAULT]`, deprecated; `[ovn]` wins).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OvnSection {
    pub ovn_sb_private_key: String,
    pub ovn_sb_certificate: String,
    pub ovn_sb_ca_cert: String,
    pub ovn_sb_connection: Option<String>,
    pub ovn_nb_private_key: String,
    pub ovn_nb_certificate: String,
    pub ovn_nb_ca_cert: String,
    pub ovn_nb_connection: Option<String>,
}

/// `[local_ovn_cluster]`, for `exposing_method = ovn`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LocalOvnClusterSection {
    pub ovn_nb_connection: String,
    pub external_nics: Vec<String>,
    pub peer_ips: Vec<String>,
    pub provider_networks_pool_prefixes: Vec<String>,
    pub bgp_chassis_id: String,
}

/// The oslo.log options the agent honours (they live in `[DEFAULT]`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogSection {
    pub debug: bool,
    pub log_file: Option<String>,
    pub log_dir: Option<String>,
    pub use_json: bool,
    pub use_stderr: bool,
}

impl Config {
    /// The connection option the configured driver cannot start without,
    /// when it is unset: `[ovn] ovn_nb_connection` for `nb_ovn_bgp_driver`
    /// (upstream's option has no default). The SB drivers need none: without
    /// `[ovn] ovn_sb_connection` they read the Open_vSwitch row's
    /// `external_ids:ovn-remote`, as upstream. Not a load error, because the
    /// commands that read OVN from a file, and `config`, need no connection.
    pub fn missing_connection(&self) -> Option<InvalidValue> {
        let driver = self.default.driver;
        (!driver.reads_sb() && self.ovn.ovn_nb_connection.is_none()).then(|| InvalidValue {
            section: "ovn".into(),
            option: "ovn_nb_connection".into(),
            why: format!(
                "must be set: driver = {} reads the OVN Northbound database from it",
                driver.as_str()
            ),
            value: "unset".into(),
            origin: None,
        })
    }
}

impl Default for Config {
    /// Upstream's defaults (stable/2026.2 sample), and the agent's own
    /// options' defaults.
    fn default() -> Self {
        let pki_key = "/etc/pki/tls/private/ovn_bgp_agent.key".to_string();
        let pki_crt = "/etc/pki/tls/certs/ovn_bgp_agent.crt".to_string();
        let ca = "/etc/ipa/ca.crt".to_string();
        Config {
            default: DefaultSection {
                reconcile_interval: 300,
                frr_reconcile_interval: 15,
                expose_tenant_networks: false,
                advertisement_method_tenant_networks: AdvertisementMethod::Host,
                require_snat_disabled_for_tenant_networks: false,
                expose_ipv6_gua_tenant_networks: false,
                driver: Driver::OvnBgpDriver,
                ovsdb_connection: "unix:/usr/local/var/run/openvswitch/db.sock".into(),
                ovsdb_connection_timeout: 180,
                bgp_as: "64999".into(),
                bgp_router_id: None,
                evpn_local_ip: None,
                evpn_nic: None,
                evpn_udp_dstport: 4789,
                clear_vrf_routes_on_startup: false,
                delete_vrf_on_disconnect: true,
                bgp_nic: "bgp-nic".into(),
                bgp_vrf: "bgp-vrf".into(),
                bgp_vrf_table_id: 10,
                address_scopes: None,
                exposing_method: ExposingMethod::Underlay,
                // Well under frr_reconcile_interval (15 s), so a wedged FRR
                // is noticed and retried within one FRR check.
                vtysh_timeout: 5,
                mass_withdrawal_grace: 120,
                mass_withdrawal_percent: 50,
                metrics_listen: None,
                ovn_nb_monitor_all: false,
                state_dir: None,
                ovs_ofctl_timeout: 5,
                ovsdb_max_update_mib: 160,
                announce_with: AnnounceWith::Address,
            },
            agent: AgentSection {
                root_helper: "sudo".into(),
            },
            ovn: OvnSection {
                ovn_sb_private_key: pki_key.clone(),
                ovn_sb_certificate: pki_crt.clone(),
                ovn_sb_ca_cert: ca.clone(),
                ovn_sb_connection: None,
                ovn_nb_private_key: pki_key,
                ovn_nb_certificate: pki_crt,
                ovn_nb_ca_cert: ca,
                ovn_nb_connection: None,
            },
            local_ovn_cluster: LocalOvnClusterSection {
                ovn_nb_connection: "unix:/var/run/ovn/ovnnb_db.sock".into(),
                external_nics: Vec::new(),
                peer_ips: Vec::new(),
                provider_networks_pool_prefixes: vec!["192.168.0.0/16".into()],
                bgp_chassis_id: "bgp".into(),
            },
            log: LogSection {
                debug: false,
                log_file: None,
                log_dir: None,
                use_json: false,
                use_stderr: false,
            },
        }
    }
}
