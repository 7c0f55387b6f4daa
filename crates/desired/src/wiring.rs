//! The wiring steps every driver shares: bridges, wire targets, provider and tenant exposures.
//!
//! A driver reads its own rows (NB or SB) to decide *what* is exposed; how
//! an exposure lands on the node is decided here, once:
//!
//! - **Base wiring** ([`Wiring::wire_bridges`]): one [`BridgeWiring`] per
//!   `ovn-bridge-mappings` entry, with a VLAN device per tag of the
//!   network's localnets and the `patch-provnet-*` ports already on the
//!   bridge as MAC-tweak ports.
//! - **Wire target** ([`wire_target`]): a localnet on physical network `N`
//!   with tag `T` lands on the bridge the last mapping of `N` names, on its
//!   VLAN device `<bridge[:10]>.<T>` when tagged; an unmapped network is not
//!   wired here at all.
//! - **Provider exposure** ([`Wiring::expose_provider`]): an IP on a
//!   provider network gets its [`IpWiring`] (rule and route to the target,
//!   permanent neighbour when a MAC is known, proxy NDP for its IPv6
//!   subnets), and the localnet's patch port its MAC-tweak flow.
//! - **Tenant exposure** ([`TenantRules`], [`Wiring::route_tenant_subnet`],
//!   [`Wiring::announce`]): tenant subnets behind a gateway hosted here are
//!   routed through the gateway's provider target; in the host method their
//!   IPs are announced without wiring (OVN routes them through the gateway).
//!
//! What may differ between drivers is a [`DriverPolicy`] value, stated in
//! each driver with its reason; everything else here is the same rule for all.

use std::cell::Cell;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::net::IpAddr;
use std::rc::Rc;
use std::sync::Arc;

use ipnet::IpNet;
use obgp_config::{AdvertisementMethod, Config};
use obgp_netmodel::exposable::{unexposable_ip, unusable_lladdr};
use obgp_netmodel::MacAddr;
use obgp_ovn::hash::FastHash;
use obgp_ovn::{neutron, LocalOvs};

use crate::model::{
    proxy_ndp_networks, vlan_device, BridgeWiring, Desired, ExposedIp, IpWiring, RowRef,
    TenantSubnet, VlanDevice, WireTarget,
};
use crate::provenance::{Origin, Reason, Rejection, Trace};

/// The OVS ports the base wiring gives MAC-tweak flows on their bridge:
/// the patch ports of Neutron's localnets (`patch-provnet-<id>-to-br-int`).
const BASE_MAC_TWEAK_PREFIX: &str = "patch-provnet-";

/// How a driver's exposures combine where the drivers' upstream
/// counterparts behave differently. Everything not named here is shared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DriverPolicy {
    /// Which exposure of an IP asked for twice is kept.
    pub same_ip: SameIp,
    /// What "ask for the MAC-tweak flow once" is counted per.
    pub mac_tweak_once: MacTweakOnce,
}

/// Which exposure wins when two rows expose the same IP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SameIp {
    /// The first exposure stays whole.
    FirstWins,
    /// The first exposure keeps its class and source; a later one that
    /// carries a wiring replaces the wiring (as a later `ip neigh replace`
    /// would).
    LaterWiringWins,
}

/// The unit the MAC-tweak flow is asked for once per. The two differ only
/// when two provider networks share a localnet name: per localnet, the
/// second is not asked for (no second "deferred" note, no MAC-tweak port on
/// the second's bridge).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MacTweakOnce {
    /// Once per [`ProviderNetwork`] value the driver resolved.
    PerProvider,
    /// Once per localnet port name.
    PerLocalnet,
}

/// The wire target of a localnet on physical network `network` with VLAN
/// `tag`: the bridge of `network`'s mapping (the last entry naming it, as
/// [`LocalOvs::bridge_for_network`] says), and as device the bridge itself
/// or, when tagged, its VLAN device. `None` when `network` is not mapped
/// on this node: nothing on it is wired here.
pub(crate) fn wire_target(ovs: &LocalOvs, network: &str, tag: Option<u16>) -> Option<WireTarget> {
    let m = ovs.bridge_for_network(network)?;
    Some(WireTarget {
        bridge: m.bridge.clone(),
        vlan: tag,
        dev: tag
            .map(|v| vlan_device(&m.bridge, v))
            .unwrap_or_else(|| m.bridge.clone()),
    })
}

/// A provider network mapped here: its localnet port and where it is wired.
#[derive(Debug)]
pub(crate) struct ProviderNetwork<'a> {
    /// The localnet port name (`provnet-<id>`): its patch port is
    /// `patch-<name>-to-br-int`.
    pub localnet: &'a str,
    /// Shared by every IP wired through this network.
    pub target: Arc<WireTarget>,
    /// Whether the MAC-tweak flow was asked for ([`MacTweakOnce::PerProvider`]).
    mac_tweak_asked: Cell<bool>,
}

impl<'a> ProviderNetwork<'a> {
    pub fn new(localnet: &'a str, target: WireTarget) -> Self {
        ProviderNetwork {
            localnet,
            target: Arc::new(target),
            mac_tweak_asked: Cell::new(false),
        }
    }

    /// The MAC-tweak patch port of the localnet.
    pub fn patch_port(&self) -> String {
        localnet_patch_port(self.localnet)
    }
}

/// The patch port ovn-controller creates on the provider bridge for the
/// localnet port `localnet`.
pub(crate) fn localnet_patch_port(localnet: &str) -> String {
    format!("patch-{localnet}-to-br-int")
}

/// A gateway router port (cr-lrp) hosted here: tenant subnets behind its
/// router are routed through its provider network.
#[derive(Clone, Debug)]
pub(crate) struct Gateway<'a> {
    pub provider: Rc<ProviderNetwork<'a>>,
    /// The gateway's IPs, in row order.
    pub ips: Vec<IpAddr>,
    /// Its row (NB Logical_Router_Port, SB cr-lrp Port_Binding).
    pub row: RowRef,
}

/// Why a network has no wire target here, as the drivers' provider lookups
/// find it (borrowed from the snapshot: nothing is allocated unless a
/// trace asks for the [`Reason`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NoProvider<'a> {
    /// No localnet port: a tenant network.
    NoLocalnet,
    /// The localnet has no `options:network_name`.
    NoPhysnet { localnet: &'a str },
    /// The localnet's physical network is not in `ovn-bridge-mappings`.
    Unmapped { localnet: &'a str, physnet: &'a str },
}

impl NoProvider<'_> {
    /// The reason, for the network named `network`.
    pub fn reason(self, ovs: &LocalOvs, network: &str) -> Reason {
        match self {
            NoProvider::NoLocalnet => Reason::NoLocalnet {
                network: network.to_string(),
            },
            NoProvider::NoPhysnet { localnet } => Reason::LocalnetWithoutPhysnet {
                localnet: localnet.to_string(),
            },
            NoProvider::Unmapped { localnet, physnet } => Reason::PhysnetNotMapped {
                physnet: physnet.to_string(),
                localnet: localnet.to_string(),
                mappings: ovs
                    .bridge_mappings
                    .iter()
                    .map(|m| format!("{}:{}", m.network, m.bridge))
                    .collect(),
            },
        }
    }
}

/// The wire target of `localnet` (named `name`, on physical network
/// `physnet` with VLAN `tag`), or why there is none.
pub(crate) fn localnet_target<'a>(
    ovs: &LocalOvs,
    name: &'a str,
    physnet: Option<&'a str>,
    tag: Option<u16>,
) -> Result<WireTarget, NoProvider<'a>> {
    let physnet = physnet.ok_or(NoProvider::NoPhysnet { localnet: name })?;
    wire_target(ovs, physnet, tag).ok_or(NoProvider::Unmapped {
        localnet: name,
        physnet,
    })
}

/// The tenant-network options, read once from the configuration.
#[derive(Debug)]
pub(crate) struct TenantRules<'a> {
    expose_all: bool,
    expose_ipv6_gua: bool,
    subnet_method: bool,
    /// `address_scopes`; empty: every scope is allowed.
    allowed_scopes: HashSet<&'a str>,
}

impl<'a> TenantRules<'a> {
    pub fn new(cfg: &'a Config) -> Self {
        let d = &cfg.default;
        TenantRules {
            expose_all: d.expose_tenant_networks,
            expose_ipv6_gua: d.expose_ipv6_gua_tenant_networks,
            subnet_method: d.advertisement_method_tenant_networks == AdvertisementMethod::Subnet,
            allowed_scopes: d
                .address_scopes
                .iter()
                .flatten()
                .map(String::as_str)
                .collect(),
        }
    }

    /// Whether any tenant network is exposed (`expose_tenant_networks` or
    /// `expose_ipv6_gua_tenant_networks`).
    pub fn any(&self) -> bool {
        self.expose_all || self.expose_ipv6_gua
    }

    /// A tenant subnet or IP is exposed when every tenant network is, or
    /// when it is an IPv6 GUA and GUA tenant networks are.
    pub fn exposes(&self, addr: IpAddr) -> bool {
        self.expose_all || (self.expose_ipv6_gua && neutron::is_ipv6_gua(addr))
    }

    /// The subnet method (`advertisement_method_tenant_networks = subnet`):
    /// subnets are routed in the VRF too and their IPs are not announced one
    /// by one; otherwise the host method announces each IP.
    pub fn subnet_method(&self) -> bool {
        self.subnet_method
    }

    /// Whether an address whose subnet is in address scope `scope` may be
    /// exposed: with `address_scopes` set, only from a listed scope.
    pub fn allows_scope(&self, scope: Option<&str>) -> bool {
        self.allowed_scopes.is_empty() || scope.is_some_and(|s| self.allowed_scopes.contains(s))
    }

    /// The refusal of an address in `scope` that [`Self::allows_scope`]
    /// refused, built only when a trace asks for it.
    pub fn scope_reason<'s>(&'s self, scope: Option<&'s str>) -> impl FnOnce() -> Reason + 's {
        move || {
            let mut allowed: Vec<String> =
                self.allowed_scopes.iter().map(|s| s.to_string()).collect();
            allowed.sort();
            Reason::AddressScope {
                scope: scope.map(str::to_string),
                allowed,
            }
        }
    }
}

/// An IP as a hash key: hashed as one or two words, where `IpAddr`'s own
/// `Hash` goes through the hasher's byte-slice path (a third of the
/// exposure bookkeeping's time).
#[derive(Clone, Copy, PartialEq, Eq)]
struct IpKey(IpAddr);

impl Hash for IpKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        match self.0 {
            IpAddr::V4(a) => h.write_u32(u32::from(a)),
            IpAddr::V6(a) => {
                let bits = u128::from(a);
                h.write_u64(bits as u64);
                h.write_u64((bits >> 64) as u64);
            }
        }
    }
}

/// The exposures while computing, one per IP, combined by a [`SameIp`]
/// rule; in insertion order (each slot is taken when they are sorted out
/// at the end), with an index by IP.
struct Exposures {
    same_ip: SameIp,
    slots: Vec<Option<ExposedIp>>,
    at: HashMap<IpKey, u32, FastHash>,
    /// IPs exposed more than once: which exposure wins depends on the order.
    contested: HashSet<IpAddr>,
}

impl Exposures {
    fn new(same_ip: SameIp) -> Self {
        Exposures {
            same_ip,
            slots: Vec::with_capacity(1024),
            at: HashMap::with_capacity_and_hasher(1024, FastHash::default()),
            contested: HashSet::new(),
        }
    }

    fn expose(&mut self, ip: IpAddr, wiring: Option<IpWiring>, origin: Origin) {
        match self.at.entry(IpKey(ip)) {
            Entry::Occupied(at) => {
                self.contested.insert(ip);
                if self.same_ip == SameIp::LaterWiringWins {
                    if let (Some(wiring), Some(e)) = (wiring, &mut self.slots[*at.get() as usize]) {
                        e.wiring = Some(wiring);
                    }
                }
            }
            Entry::Vacant(at) => {
                at.insert(self.slots.len() as u32);
                self.slots.push(Some(ExposedIp {
                    ip,
                    class: origin.rule.class(),
                    wiring,
                    source: origin.source,
                    rule: origin.rule,
                    via: origin.via,
                }));
            }
        }
    }

    /// The exposures by IP.
    fn into_map(self) -> BTreeMap<IpAddr, ExposedIp> {
        // Every IP has one slot: sort the (IP, slot) pairs, not the
        // exposures, and move each exposure once, into the map. Both
        // vectors are sized up front: a filtered collect grows by doubling,
        // copying the exposures again at each step.
        let mut order: Vec<(IpAddr, u32)> = Vec::with_capacity(self.slots.len());
        order.extend(
            self.slots
                .iter()
                .enumerate()
                .filter_map(|(i, e)| Some((e.as_ref()?.ip, i as u32))),
        );
        order.sort_unstable();
        let mut slots = self.slots;
        let mut sorted = Vec::with_capacity(order.len());
        sorted.extend(
            order
                .into_iter()
                .filter_map(|(ip, i)| Some((ip, slots[i as usize].take()?))),
        );
        // From a vector, the map reuses it for its sort check and builds in bulk.
        sorted.into_iter().collect()
    }
}

/// The desired state under construction, with the steps that wire it.
/// A driver owns one, reads its rows, and calls these steps; [`Wiring::finish`]
/// gives the result.
pub(crate) struct Wiring<'a> {
    ovs: &'a LocalOvs,
    policy: DriverPolicy,
    pub tenant: TenantRules<'a>,
    /// The state so far; its `exposed` is filled by [`Wiring::finish`].
    out: Desired,
    exposures: Exposures,
    /// Localnets whose MAC-tweak flow was asked for ([`MacTweakOnce::PerLocalnet`]).
    mac_tweak_asked: HashSet<&'a str>,
    /// The refusals, when recording (`explain`).
    pub trace: Trace,
}

impl<'a> Wiring<'a> {
    pub fn new(
        ovs: &'a LocalOvs,
        cfg: &'a Config,
        policy: DriverPolicy,
        base: Desired,
        trace: Trace,
    ) -> Self {
        Wiring {
            ovs,
            policy,
            tenant: TenantRules::new(cfg),
            out: base,
            exposures: Exposures::new(policy.same_ip),
            mac_tweak_asked: HashSet::new(),
            trace,
        }
    }

    /// Base wiring, one [`BridgeWiring`] per bridge mapping in order: a VLAN
    /// device per tag in `tags_on(network)` (the tags of the localnets on
    /// the mapping's physical network, read from the driver's rows), and as
    /// MAC-tweak ports the `patch-provnet-*` ports on the bridge.
    pub fn wire_bridges(&mut self, mut tags_on: impl FnMut(&str) -> BTreeSet<u16>) {
        let ovs = self.ovs;
        for m in &ovs.bridge_mappings {
            let vlans = tags_on(&m.network);
            let mac_tweak_ports = ovs
                .bridge_ports
                .get(m.bridge.as_str())
                .into_iter()
                .flatten()
                .filter(|p| p.starts_with(BASE_MAC_TWEAK_PREFIX))
                .cloned()
                .collect();
            self.out.bridges.push(BridgeWiring {
                bridge: m.bridge.clone(),
                index: m.index,
                network: m.network.clone(),
                vlans: vlans
                    .into_iter()
                    .map(|vlan| VlanDevice {
                        dev: vlan_device(&m.bridge, vlan),
                        vlan,
                    })
                    .collect(),
                mac_tweak_ports,
                flat_l2: false,
            });
        }
    }

    /// Whether the base wiring already lists `provider`'s patch port as a
    /// MAC-tweak port, so that asking for it changes nothing.
    pub fn mac_tweak_in_base(&self, provider: &ProviderNetwork<'a>) -> bool {
        let patch = provider.patch_port();
        patch.starts_with(BASE_MAC_TWEAK_PREFIX)
            && self
                .ovs
                .bridge_has_port(provider.target.bridge.as_str(), &patch)
    }

    /// Wires and announces `ips` through `provider` (upstream
    /// `_expose_provider_port`): per IP a rule and a route to the target,
    /// the permanent neighbour `lladdr` if given, proxy NDP for the IPv6
    /// `proxy_cidrs`; then asks once for the MAC-tweak flow of the
    /// localnet's patch port.
    pub fn expose_provider(
        &mut self,
        ips: &[IpAddr],
        lladdr: Option<MacAddr>,
        provider: &ProviderNetwork<'a>,
        proxy_cidrs: &[IpNet],
        origin: Origin,
    ) {
        let source = origin.source;
        if let Some((mac, why)) = lladdr.and_then(|m| Some((m, unusable_lladdr(m)?))) {
            self.note(format!(
                "{source}: MAC {mac} is a {why} address: none of its IPs is exposed"
            ));
            self.trace
                .reject(|| Rejection::of(source, Reason::UnusableMac { mac, why }));
            return;
        }
        let proxy_ndp = proxy_ndp_networks(proxy_cidrs);
        for &ip in ips {
            if !self.exposable(ip, source) {
                continue;
            }
            self.exposures.expose(
                ip,
                Some(IpWiring {
                    target: provider.target.clone(),
                    lladdr,
                    proxy_ndp: proxy_ndp.clone(),
                }),
                origin,
            );
        }
        let first_ask = match self.policy.mac_tweak_once {
            MacTweakOnce::PerProvider => !provider.mac_tweak_asked.replace(true),
            MacTweakOnce::PerLocalnet => self.mac_tweak_asked.insert(provider.localnet),
        };
        if first_ask {
            self.ask_mac_tweak(provider, source);
        }
    }

    /// Routes the tenant subnet of router interface address `rule_dst`
    /// (`router` names the router) through `gw`: a rule to the gateway's
    /// bridge table, a route there to the subnet via the gateway's first IP
    /// of the same family (no such IP: the rule only), and in the subnet
    /// method the same route in the VRF table through `bgp_nic`.
    pub fn route_tenant_subnet(&mut self, gw: &Gateway<'a>, rule_dst: IpNet, router: String) {
        if let Some(why) = unexposable_ip(rule_dst.addr()) {
            self.note(format!(
                "router {router}: tenant subnet {rule_dst} is a {why} network: not routed"
            ));
            return;
        }
        self.out.tenant_subnets.push(TenantSubnet {
            rule_dst,
            net: rule_dst.trunc(),
            via: gw
                .ips
                .iter()
                .copied()
                .find(|g| g.is_ipv6() == rule_dst.addr().is_ipv6()),
            bridge: gw.provider.target.bridge.clone(),
            dev: gw.provider.target.dev.clone(),
            vrf_route: self.tenant.subnet_method(),
            router,
        });
    }

    /// Records why some OVN data was not exposed ([`Desired::notes`]).
    pub fn note(&mut self, note: String) {
        self.out.notes.push(note);
    }

    /// Whether anything was noted so far.
    pub fn has_notes(&self) -> bool {
        !self.out.notes.is_empty()
    }

    /// Announces `ip` without wiring: a tenant IP (or VIP) that OVN routes
    /// through a gateway hosted here.
    pub fn announce(&mut self, ip: IpAddr, origin: Origin) {
        if self.exposable(ip, origin.source) {
            self.exposures.expose(ip, None, origin);
        }
    }

    /// Whether `ip` may be exposed at all ([`unexposable_ip`]); a note names
    /// the row when not.
    fn exposable(&mut self, ip: IpAddr, source: RowRef) -> bool {
        match unexposable_ip(ip) {
            None => true,
            Some(why) => {
                self.note(format!("{source}: {ip} is a {why} address: not exposed"));
                self.trace
                    .reject(|| Rejection::of(source, Reason::UnexposableIp { why }).ip(ip));
                false
            }
        }
    }

    /// Asks for the MAC-tweak flow (cookie 999) on the localnet's patch port
    /// when OVS has it on the provider's bridge. Upstream then drops the
    /// announcement until the next sync; we announce anyway and only note
    /// that the flow waits until ovn-controller creates the patch port (an
    /// OVS change triggers a reconcile).
    fn ask_mac_tweak(&mut self, provider: &ProviderNetwork<'a>, source: RowRef) {
        let bridge = &provider.target.bridge;
        let patch = provider.patch_port();
        if self.ovs.bridge_has_port(bridge.as_str(), &patch) {
            if let Some(bw) = self.out.bridges.iter_mut().find(|b| &b.bridge == bridge) {
                bw.mac_tweak_ports.insert(patch);
            }
        } else {
            self.out.notes.push(format!(
                "patch port {patch} not on {bridge}: MAC-tweak flow deferred (first seen for {source})"
            ));
        }
    }

    /// The exposures so far, in the order they were first asked for, and
    /// the contested IPs.
    pub fn into_exposures(self) -> (Vec<ExposedIp>, HashSet<IpAddr>) {
        let e = self.exposures;
        (e.slots.into_iter().flatten().collect(), e.contested)
    }

    /// The desired state, the IPs exposed more than once, and the trace.
    pub fn finish(self) -> (Desired, HashSet<IpAddr>, Trace) {
        let (mut out, mut exposures) = (self.out, self.exposures);
        let contested = std::mem::take(&mut exposures.contested);
        out.exposed = exposures.into_map();
        (out, contested, self.trace)
    }
}

#[cfg(test)]
mod tests;
