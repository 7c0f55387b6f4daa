//! `desired_state`: what must exist on this node, computed from OVN and the
//! configuration, as a pure function (no I/O: values that need it, such as
//! the router-id FRR reports or the system hostname, come in [`NodeFacts`]).
//!
//! [`Desired`] says it in the driver's terms (exposed IPs with their class
//! and wiring, bridge wiring, tenant subnets, FRR text);
//! [`Desired::to_node`] flattens it into the planner's
//! [`obgp_netmodel::DesiredNode`].

mod arp_ndp;
pub mod dynamic;
pub mod evpn;
pub mod explain;
pub mod frr;
mod incremental;
pub mod l2vni;
mod local_cluster;
pub mod model;
mod nb_evpn;
mod nb_l2vni;
mod nb_underlay;
pub mod ovn_method;
pub mod provenance;
mod sb_evpn;
mod sb_stretched_l2;
mod sb_underlay;
mod wiring;

use std::net::Ipv4Addr;

use obgp_config::{AdvertisementMethod, AnnounceWith, Config, Driver, ExposingMethod};
use obgp_netmodel::DevName;
use obgp_ovn::{ChassisNaming, Snapshot};

pub use explain::{explain, ExplainError, Explanation, Finding, Query, RowInfo};
pub use incremental::{Computed, DesiredCache, DesiredCheck, ExposedIps};
pub use local_cluster::{LocalCluster, Segment};
pub use model::{
    BridgeWiring, Desired, ExposedIp, IpWiring, RowRef, TenantSubnet, VlanDevice, WireTarget,
};
pub use ovn_method::{
    desired_ovn_method, external_bridges, local_facts, BridgeFacts, FdbEntry, GoldenConfig,
    LocalFacts, OvnMethod,
};
pub use provenance::{ExposeRule, Origin, Reason, Rejection, Trace};
pub use sb_evpn::vxlan_source;

/// Facts about the node that would otherwise need I/O, gathered by the
/// caller before each computation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeFacts {
    /// The system hostname, used as chassis name when the Open_vSwitch row
    /// has no `external_ids:hostname` (upstream `socket.gethostname()`).
    pub system_hostname: Option<String>,
    /// The router-id FRR reports (`show ip bgp summary json`), used when
    /// `bgp_router_id` is unset.
    pub frr_router_id: Option<String>,
    /// The VXLAN source the SB EVPN driver uses when `evpn_local_ip` is
    /// unset: the node's /32 on `lo`, else `evpn_nic`'s address
    /// ([`vxlan_source`] of the node's addresses).
    pub vxlan_source: Option<std::net::IpAddr>,
    /// `exposing_method = ovn`: the MAC and addresses of the local
    /// cluster's external bridges ([`local_facts`] over
    /// [`external_bridges`]).
    pub local_bridges: LocalFacts,
}

/// Why no desired state could be computed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DesiredError {
    #[error("driver = {} with exposing_method = {} is not supported yet", driver.as_str(), method.as_str())]
    Unsupported {
        driver: Driver,
        method: ExposingMethod,
    },
    #[error("option {option} = {value:?} is invalid: {reason}")]
    BadConfig {
        option: &'static str,
        value: String,
        reason: String,
    },
}

fn dev_option(option: &'static str, value: &str) -> Result<DevName, DesiredError> {
    DevName::new(value).map_err(|e| DesiredError::BadConfig {
        option,
        value: value.to_string(),
        reason: e.to_string(),
    })
}

/// Computes what must exist on this node for `config`'s driver.
///
/// Supported: `nb_ovn_bgp_driver` (from the NB rows; `exposing_method`
/// underlay, vrf, l2vni or dynamic), `ovn_bgp_driver` (from the SB rows, see
/// [`Snapshot::build_with_sb`]; underlay), `ovn_evpn_driver` and
/// `ovn_stretched_l2_bgp_driver` (SB; both ignore `exposing_method`, as
/// upstream does), and `nb_ovn_bgp_driver` with `exposing_method = ovn`
/// (the underlay decisions reached through the node-local cluster:
/// [`Desired::local_cluster`], [`ovn_method`]). Any
/// other combination is [`DesiredError::Unsupported`], never an empty state.
/// Bad OVN rows never fail the computation (the snapshot skipped them);
/// invalid values in the configuration that would reach a device name or a
/// vtysh script do.
pub fn desired_state(
    snap: &Snapshot,
    config: &Config,
    facts: &NodeFacts,
) -> Result<Desired, DesiredError> {
    compute(snap, config, facts).map(|(desired, _)| desired)
}

/// [`desired_state`], with what the NB driver's computation read (`None`
/// for the SB driver).
fn compute(
    snap: &Snapshot,
    config: &Config,
    facts: &NodeFacts,
) -> Result<(Desired, Option<nb_underlay::Reads>), DesiredError> {
    compute_traced(snap, config, facts, Trace::default()).map(|(d, reads, _)| (d, reads))
}

/// The one computation behind [`desired_state`] and [`explain`]: with a
/// recording `trace`, every refusal is recorded with its reason.
pub(crate) fn compute_traced(
    snap: &Snapshot,
    config: &Config,
    facts: &NodeFacts,
    mut trace: Trace,
) -> Result<(Desired, Option<nb_underlay::Reads>, Trace), DesiredError> {
    let d = &config.default;
    let driver = match (d.driver, d.exposing_method) {
        (
            Driver::NbOvnBgpDriver,
            ExposingMethod::Underlay
            | ExposingMethod::Vrf
            | ExposingMethod::L2vni
            | ExposingMethod::Dynamic,
        ) => Underlay::Nb,
        (Driver::OvnBgpDriver, ExposingMethod::Underlay) => Underlay::Sb,
        // Upstream's stretched-L2 driver never reads exposing_method.
        (Driver::OvnStretchedL2BgpDriver, _) => Underlay::StretchedL2,
        // The SB EVPN driver has one way of exposing (upstream ignores
        // exposing_method with it).
        (Driver::OvnEvpnDriver, _) => {
            let desired = sb_evpn_desired(snap, config, facts, &mut trace)?;
            return Ok((desired, None, trace));
        }
        // What is exposed is the underlay driver's decision (recorded in
        // the same trace); the node-local cluster is how it is reached.
        (Driver::NbOvnBgpDriver, ExposingMethod::Ovn) => {
            let (local, trace) =
                ovn_method::traced(snap, config, facts, &facts.local_bridges, trace)?;
            return Ok((local.into_desired(), None, trace));
        }
        (driver, method) => return Err(DesiredError::Unsupported { driver, method }),
    };
    let base = underlay_base(config, facts, driver)?;
    match driver {
        Underlay::Nb => {}
        Underlay::Sb => {
            let (desired, trace) = sb_underlay::SbUnderlay::new(snap, config, base, trace).run();
            return Ok((desired, None, trace));
        }
        Underlay::StretchedL2 => {
            let mut desired = base;
            desired.vrf_routes =
                sb_stretched_l2::stretched_l2(snap, config, &mut desired.notes, &mut trace);
            return Ok((desired, None, trace));
        }
    }
    let (mut desired, reads, mut trace) =
        nb_underlay::NbUnderlay::new(snap, config, base, trace).run(chassis_hostname(snap, facts));
    match d.exposing_method {
        ExposingMethod::Vrf => nb_evpn::nb_vrf(snap, config, &mut desired, &mut trace)?,
        ExposingMethod::L2vni => nb_l2vni::nb_l2vni(snap, config, &mut desired, &mut trace)?,
        ExposingMethod::Dynamic => dynamic::nb_dynamic(snap, config, &mut desired, &mut trace)?,
        ExposingMethod::Underlay | ExposingMethod::Ovn => {}
    }
    Ok((desired, Some(reads), trace))
}

/// The SB EVPN driver's desired state: its VNIs, from the local gateways
/// ([`sb_evpn`]), and nothing announced through `bgp_nic`.
fn sb_evpn_desired(
    snap: &Snapshot,
    config: &Config,
    facts: &NodeFacts,
    trace: &mut Trace,
) -> Result<Desired, DesiredError> {
    let d = &config.default;
    let mut notes = Vec::new();
    let local_ip = d.evpn_local_ip.or(facts.vxlan_source);
    let l3 = sb_evpn::sb_evpn(snap, config, local_ip, &mut notes, trace);
    Ok(Desired {
        vrf: dev_option("bgp_vrf", &d.bgp_vrf)?,
        vrf_table: d.bgp_vrf_table_id,
        bgp_nic: dev_option("bgp_nic", &d.bgp_nic)?,
        announce_with: d.announce_with,
        bridges: Vec::new(),
        exposed: Default::default(),
        tenant_subnets: Vec::new(),
        vrf_routes: Default::default(),
        frr_config: None,
        notes,
        evpn: Some(l3),
        local_cluster: None,
        dynamic: None,
    })
}

/// The part of the desired state every underlay driver shares: `bgp_vrf`,
/// `bgp_nic` and the VRF leak's FRR text, with the options they take
/// validated.
fn underlay_base(
    config: &Config,
    facts: &NodeFacts,
    driver: Underlay,
) -> Result<Desired, DesiredError> {
    let d = &config.default;
    let vrf = dev_option("bgp_vrf", &d.bgp_vrf)?;
    let bgp_nic = dev_option("bgp_nic", &d.bgp_nic)?;
    if !frr::valid_asn(&d.bgp_as) {
        return Err(DesiredError::BadConfig {
            option: "bgp_AS",
            value: d.bgp_as.clone(),
            reason: "not an AS number".into(),
        });
    }

    let mut notes = Vec::new();
    let router_id = router_id(d, facts, &mut notes)?;
    let redistribute = redistribution(driver, d);
    let frr_config = router_id.map(|rid| frr::vrf_leak(vrf.as_str(), &d.bgp_as, rid, redistribute));

    Ok(Desired {
        vrf,
        vrf_table: d.bgp_vrf_table_id,
        bgp_nic,
        announce_with: d.announce_with,
        bridges: Vec::new(),
        exposed: Default::default(),
        tenant_subnets: Vec::new(),
        vrf_routes: Default::default(),
        frr_config,
        notes,
        evpn: None,
        local_cluster: None,
        dynamic: None,
    })
}

/// The router-id of the VRF leak: `bgp_router_id` (invalid fails), else
/// what FRR reports (invalid is noted); `None`, noted, when neither says.
fn router_id(
    d: &obgp_config::DefaultSection,
    facts: &NodeFacts,
    notes: &mut Vec<String>,
) -> Result<Option<Ipv4Addr>, DesiredError> {
    Ok(match (&d.bgp_router_id, &facts.frr_router_id) {
        (Some(configured), _) => {
            Some(
                configured
                    .parse::<Ipv4Addr>()
                    .map_err(|_| DesiredError::BadConfig {
                        option: "bgp_router_id",
                        value: configured.clone(),
                        reason: "not an IPv4 address".into(),
                    })?,
            )
        }
        (None, Some(reported)) => match reported.parse::<Ipv4Addr>() {
            Ok(rid) => Some(rid),
            Err(_) => {
                notes.push(format!("FRR reported an invalid router-id {reported:?}"));
                None
            }
        },
        (None, None) => {
            notes.push(
                "router-id unknown (bgp_router_id unset, FRR reported none): no VRF leak".into(),
            );
            None
        }
    })
}

/// What FRR redistributes into `bgp_vrf` for `driver`.
fn redistribution(driver: Underlay, d: &obgp_config::DefaultSection) -> frr::Redistribute {
    match (
        driver,
        d.advertisement_method_tenant_networks,
        d.announce_with,
    ) {
        // Upstream's start() sets the default redistribution to kernel only.
        (Underlay::StretchedL2, _, _) => frr::Redistribute::Kernel,
        // Announcing with routes keeps `connected` too: switching a node
        // between the two ways never leaves a prefix that neither
        // redistribution covers (the text is the subnet method's).
        (_, AdvertisementMethod::Subnet, _) | (_, _, AnnounceWith::Route) => {
            frr::Redistribute::KernelAndConnected
        }
        (_, AdvertisementMethod::Host, AnnounceWith::Address) => frr::Redistribute::Connected,
    }
}

/// The drivers that announce through `bgp_nic` in `bgp_vrf`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Underlay {
    /// `nb_ovn_bgp_driver` (underlay or vrf).
    Nb,
    /// `ovn_bgp_driver`, underlay.
    Sb,
    /// `ovn_stretched_l2_bgp_driver`.
    StretchedL2,
}

/// This node's name in the rows `config`'s driver reads: the OVS
/// `system-id` for the SB drivers (Port_Binding `chassis`), the hostname
/// (OVS `hostname`, else `system_hostname`) for the NB driver's LSP
/// `requested-chassis`/`neutron:host_id`. `None` when the node has none.
pub fn chassis_name<'a>(
    config: &Config,
    snap: &'a Snapshot,
    system_hostname: Option<&'a str>,
) -> Option<&'a str> {
    let naming = if config.default.driver.reads_sb() {
        ChassisNaming::SystemId
    } else {
        ChassisNaming::Hostname
    };
    snap.ovs.chassis_name(naming, system_hostname)
}

/// The NB driver's chassis name ([`ChassisNaming::Hostname`]) with the
/// system hostname of `facts`.
pub(crate) fn chassis_hostname<'a>(snap: &'a Snapshot, facts: &'a NodeFacts) -> Option<&'a str> {
    snap.ovs
        .chassis_name(ChassisNaming::Hostname, facts.system_hostname.as_deref())
}
