//! The record of `exposing_method = dynamic` in [`Desired`]: the method
//! each provider network got and why, and the NB driver's decisions handed
//! to the EVPN methods. Built by [`crate::dynamic`].

use std::collections::BTreeMap;
use std::net::IpAddr;

use obgp_netmodel::DevName;
use serde::Serialize;

use super::{BridgeWiring, Desired, ExposedIp, RowRef, TenantSubnet};

/// The method a provider network got under `exposing_method = dynamic`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkMethod {
    Underlay,
    /// EVPN L3, type-5 (`neutron_bgpvpn:type = l3`).
    Vrf,
    /// EVPN L2, type-2/3 (`neutron_bgpvpn:type = l2`).
    L2vni,
    /// Annotated for EVPN but not served (a bad annotation, no
    /// `evpn_local_ip`, a VNI another network has): nothing of it is
    /// exposed, not even through the underlay.
    Skipped,
}

impl NetworkChoice {
    /// `<method> (<why>)`, as `status` and `explain` say it.
    pub fn describe(&self) -> String {
        format!("{} ({})", self.method.as_str(), self.why)
    }
}

impl NetworkMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMethod::Underlay => "underlay",
            NetworkMethod::Vrf => "vrf",
            NetworkMethod::L2vni => "l2vni",
            NetworkMethod::Skipped => "skipped",
        }
    }
}

/// One provider network mapped here and the method it got.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct NetworkChoice {
    /// The Logical_Switch's name (`neutron-<id>`).
    pub switch: String,
    pub row: RowRef,
    /// Where its localnet lands here: the provider bridge and VLAN.
    pub bridge: DevName,
    pub vlan: Option<u16>,
    /// Its localnet port's name (`provnet-<id>`).
    pub localnet: String,
    pub method: NetworkMethod,
    /// Why: the annotation read, or what was missing.
    pub why: String,
}

/// What `exposing_method = dynamic` decided, beside the underlay fields
/// of [`Desired`] (which then hold the underlay networks' part only).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Dynamic {
    /// Every provider network mapped here, by (bridge, VLAN).
    pub networks: Vec<NetworkChoice>,
    /// The NB driver's decisions on the EVPN networks (handed to the vrf
    /// and l2vni builders), by IP: out of [`Desired::exposed`], which holds
    /// what goes through `bgp_nic`.
    pub evpn_exposed: BTreeMap<IpAddr, ExposedIp>,
    /// The tenant subnets behind gateways on the EVPN networks.
    pub evpn_subnets: Vec<TenantSubnet>,
}

impl Dynamic {
    /// The network (bridge, VLAN) `target` lands on.
    pub fn network_at(&self, bridge: &DevName, vlan: Option<u16>) -> Option<&NetworkChoice> {
        self.networks
            .iter()
            .find(|n| &n.bridge == bridge && n.vlan == vlan)
    }

    /// The network the tenant subnet `s` (of `desired` or
    /// [`Self::evpn_subnets`]) is routed to.
    pub fn network_of_subnet(&self, desired: &Desired, s: &TenantSubnet) -> Option<&NetworkChoice> {
        let (bridge, vlan) = subnet_target(s, &desired.bridges);
        self.network_at(&bridge, vlan)
    }

    /// The NB driver's decision for `ip`: through `bgp_nic`
    /// ([`Desired::exposed`]) or handed to an EVPN method.
    pub fn decision<'a>(&'a self, desired: &'a Desired, ip: IpAddr) -> Option<&'a ExposedIp> {
        desired
            .exposed
            .get(&ip)
            .or_else(|| self.evpn_exposed.get(&ip))
    }

    /// The network an exposure of `desired` (or of [`Self::evpn_exposed`])
    /// belongs to, by its wiring or, announced without wiring (a tenant
    /// IP of the host method), by the tenant subnet holding it.
    pub fn network_of(&self, desired: &Desired, e: &ExposedIp) -> Option<&NetworkChoice> {
        let subnets = desired.tenant_subnets.iter().chain(&self.evpn_subnets);
        let (bridge, vlan) = target_of(e, subnets, &desired.bridges)?;
        self.network_at(&bridge, vlan)
    }
}

pub(crate) type Target = (DevName, Option<u16>);

/// The bridge and VLAN a tenant subnet is routed to (its device is the
/// bridge, or one of the bridge's VLAN devices).
pub(crate) fn subnet_target(s: &TenantSubnet, bridges: &[BridgeWiring]) -> Target {
    if s.dev == s.bridge {
        return (s.bridge.clone(), None);
    }
    let vlan = bridges
        .iter()
        .filter(|b| b.bridge == s.bridge)
        .flat_map(|b| &b.vlans)
        .find(|v| v.dev == s.dev)
        .map(|v| v.vlan);
    (s.bridge.clone(), vlan)
}

/// Where exposure `e` lands: its wiring's bridge and VLAN, or for an IP
/// announced without wiring, the target of the tenant subnet holding it.
pub(crate) fn target_of<'s>(
    e: &ExposedIp,
    mut subnets: impl Iterator<Item = &'s TenantSubnet>,
    bridges: &[BridgeWiring],
) -> Option<Target> {
    match &e.wiring {
        Some(w) => Some((w.target.bridge.clone(), w.target.vlan)),
        None => subnets
            .find(|s| s.net.contains(&e.ip))
            .map(|s| subnet_target(s, bridges)),
    }
}
