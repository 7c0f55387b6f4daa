//! The semantic desired state (what is exposed, where, and why) and its
//! flattening into the planner's node objects ([`DesiredNode`]).

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

use ipnet::IpNet;
use obgp_config::AnnounceWith;
use obgp_netmodel::{
    cookie, proto, scope, Address, Class, DesiredNode, DevName, Flow, FlowAction, Link, LinkKind,
    MacAddr, Neighbour, ProxyNeighbour, Route, RouteType, Rule, Sysctl, TableRef,
};
use serde::{Serialize, Serializer};

/// Rows are named in the model's terms too; the type lives with the
/// provenance that records them.
pub use crate::provenance::RowRef;

use crate::arp_ndp::arp_ndp_addresses;

pub mod dynamic;
mod union;

/// Everything the agent wants on this node, in the driver's terms.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Desired {
    /// The VRF holding the announcement device (`bgp_vrf`).
    pub vrf: DevName,
    /// `bgp_vrf_table_id`.
    pub vrf_table: u32,
    /// The device whose addresses (or VRF-table routes) BGP announces
    /// (`bgp_nic`).
    pub bgp_nic: DevName,
    /// Whether an exposed IP is an address on `bgp_nic` or a host route in
    /// the VRF table (`announce_with`).
    pub announce_with: AnnounceWith,
    /// Base wiring, one entry per valid `ovn-bridge-mappings` entry.
    pub bridges: Vec<BridgeWiring>,
    /// Every IP announced from this node, with its wiring.
    pub exposed: BTreeMap<IpAddr, ExposedIp>,
    /// Tenant subnets routed through a gateway hosted here.
    pub tenant_subnets: Vec<TenantSubnet>,
    /// Routes in the VRF table (`bgp_vrf_table_id`) on `bgp_nic` that stand
    /// on their own, not behind an exposed IP or a tenant subnet (the
    /// stretched-L2 driver's provider and tenant subnets), by destination.
    pub vrf_routes: BTreeMap<IpNet, VrfRoute>,
    /// The FRR VRF-leak text to apply with `vtysh -f`; `None` when no
    /// router-id is known (neither configured nor reported by FRR).
    pub frr_config: Option<String>,
    /// Why some OVN data was not exposed (missing identity, patch port not
    /// created yet, incomplete NAT...). Informational.
    pub notes: Vec<String>,
    /// The EVPN modes' per-VNI state: when set, it is what goes on the
    /// node, instead of the underlay objects (`bgp_vrf`, `bgp_nic`, bridge
    /// tables) of the fields above, which then only record the driver's
    /// exposure decisions.
    pub evpn: Option<crate::evpn::EvpnL3>,
    /// `exposing_method = ovn`: the node-local OVN cluster that reaches
    /// the exposures instead of kernel routing (its NB rows, the OVS flows
    /// and FDB entries). When set, `bridges` and `tenant_subnets` are
    /// empty and no exposure has a kernel `wiring`.
    pub local_cluster: Option<crate::local_cluster::LocalCluster>,
    /// `exposing_method = dynamic`: the method of each provider network
    /// and the decisions handed to the EVPN methods. When set, the node
    /// gets both the underlay objects of the fields above (the underlay
    /// networks' part) and the VNIs of `evpn`.
    pub dynamic: Option<dynamic::Dynamic>,
}

/// Base wiring of one provider bridge.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct BridgeWiring {
    pub bridge: DevName,
    /// 1-based position in `ovn-bridge-mappings` (drives the ARP/NDP addresses).
    pub index: u32,
    /// The physical network mapped to this bridge.
    pub network: String,
    /// VLAN devices for the tagged localnets of the network.
    pub vlans: Vec<VlanDevice>,
    /// OVS ports (patch ports to br-int) that get MAC-tweak flows.
    pub mac_tweak_ports: BTreeSet<String>,
    /// The bridge device's own (untagged) segment is stretched at L2 over
    /// EVPN (`exposing_method = dynamic`, a flat `l2` network): proxy
    /// ARP/NDP off on it and no ARP/NDP addresses, so that the node does
    /// not answer for the hosts behind remote VTEPs. Its VLAN devices keep
    /// theirs.
    pub flat_l2: bool,
}

/// A VLAN device on a provider bridge.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct VlanDevice {
    /// `<bridge[:10]>.<vlan>`.
    pub dev: DevName,
    pub vlan: u16,
}

/// One announced IP.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ExposedIp {
    pub ip: IpAddr,
    pub class: Class,
    /// How traffic for it reaches OVN; `None` for tenant IPs announced only
    /// (host advertisement method), which OVN routes through the gateway.
    pub wiring: Option<IpWiring>,
    /// The OVN row that asks for it.
    pub source: RowRef,
    /// The rule that exposed it (which pass of the driver).
    pub rule: crate::provenance::ExposeRule,
    /// The other row the decision rested on: the port of a FIP, the
    /// gateway port a tenant IP or VIP goes through.
    pub via: Option<RowRef>,
}

impl ExposedIp {
    /// Its provenance: rule, source and related row.
    pub fn origin(&self) -> crate::provenance::Origin {
        crate::provenance::Origin {
            rule: self.rule,
            source: self.source,
            via: self.via,
        }
    }
}

/// Where a provider network lands on this node: shared by every IP wired
/// through it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct WireTarget {
    pub bridge: DevName,
    pub vlan: Option<u16>,
    /// The device routes and neighbours use: the bridge or its VLAN device.
    pub dev: DevName,
}

fn ser_target<S: Serializer>(t: &Arc<WireTarget>, s: S) -> Result<S::Ok, S::Error> {
    t.as_ref().serialize(s)
}

/// The underlay wiring of an exposed IP: rule to the bridge table, a /32 or
/// /128 route to the bridge (or its VLAN device), optionally a permanent
/// neighbour and proxy-NDP entries.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct IpWiring {
    #[serde(serialize_with = "ser_target")]
    pub target: Arc<WireTarget>,
    /// Permanent neighbour MAC (VM MAC, gateway LRP MAC, FIP external MAC).
    pub lladdr: Option<MacAddr>,
    /// Network addresses of the IPv6 subnets to proxy NDP for.
    pub proxy_ndp: Vec<Ipv6Addr>,
}

/// A tenant subnet behind a gateway hosted here.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct TenantSubnet {
    /// The rule destination as upstream writes it: the router interface
    /// address with its prefix length (host method) or the network (subnet
    /// method).
    pub rule_dst: IpNet,
    /// The subnet.
    pub net: IpNet,
    /// The gateway (cr-lrp) IP of the same family, if the gateway has one.
    pub via: Option<IpAddr>,
    pub bridge: DevName,
    pub dev: DevName,
    /// Also route it in the VRF table through `bgp_nic` (subnet method).
    pub vrf_route: bool,
    /// The router id.
    pub router: String,
}

/// One route in the VRF table on `bgp_nic`, announced by `redistribute
/// kernel`: on-link (`via: None`, a provider subnet) or through a gateway.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct VrfRoute {
    /// The destination (a network: host bits cleared).
    pub net: IpNet,
    pub via: Option<IpAddr>,
    /// `gateway` for a provider subnet, `subnet` for a tenant subnet.
    pub class: Class,
    /// The OVN rows it rests on: the router interface of a tenant subnet,
    /// then the gateway ports (cr-lrp) that ask for it.
    pub rows: Vec<RowRef>,
}

impl VrfRoute {
    /// The node route: table `vrf_table`, device `dev`, `proto boot`; an
    /// on-link IPv4 route has scope link (IPv6 routes all report universe).
    pub fn route(&self, vrf_table: u32, dev: &DevName) -> Route {
        let v6 = self.net.addr().is_ipv6();
        Route {
            table: TableRef::Id(vrf_table),
            v6,
            dst: Some(self.net),
            dev: Some(dev.clone()),
            via: self.via,
            proto: proto::BOOT,
            scope: if self.via.is_some() {
                scope::UNIVERSE
            } else {
                link_scope(v6)
            },
            kind: RouteType::Unicast,
            metric: None,
        }
    }
}

/// The network addresses of the IPv6 `cidrs`: the proxy NDP entries of a
/// provider port (IPv4 needs none: the bridge does proxy ARP).
pub fn proxy_ndp_networks(cidrs: &[IpNet]) -> Vec<Ipv6Addr> {
    cidrs
        .iter()
        .filter_map(|c| match c.trunc() {
            IpNet::V6(n) => Some(n.network()),
            IpNet::V4(_) => None,
        })
        .collect()
}

pub use obgp_netmodel::names::vlan_device;

fn host_net(ip: IpAddr) -> IpNet {
    IpNet::from(ip)
}

fn bridge_table(b: &DevName) -> TableRef {
    TableRef::Bridge(b.clone())
}

fn link_scope(v6: bool) -> u8 {
    // The kernel reports scope 0 for every IPv6 route; upstream asks link for v4.
    if v6 {
        scope::UNIVERSE
    } else {
        scope::LINK
    }
}

impl Desired {
    /// How many IPs and prefixes this node announces: the exposed IPs, or
    /// in an EVPN mode the routes and `lo-<vni>` addresses of its VNIs and
    /// the type-2 hosts of its L2 VNIs
    /// (`exposed` then only records the NB driver's decisions).
    pub fn exposure_count(&self) -> usize {
        let underlay = self.exposed.len() + self.vrf_routes.len();
        match &self.evpn {
            None => underlay,
            Some(e) => {
                let underlay = if self.dynamic.is_some() { underlay } else { 0 };
                underlay
                    + e.vnis
                        .values()
                        .map(|v| {
                            v.ports.iter().map(|p| p.routes.len()).sum::<usize>()
                                + v.lo.as_ref().map_or(0, |(_, ips)| ips.len())
                        })
                        .sum::<usize>()
                    + e.l2.values().map(|v| v.hosts.len()).sum::<usize>()
            }
        }
    }

    /// Flattens into the node objects the planner diffs against the node.
    /// The rules, routes, addresses and neighbours keep the first class
    /// they are given, in this order: the bridges' base wiring, the
    /// exposures, the tenant subnets, the VRF routes.
    pub fn to_node(&self) -> DesiredNode {
        match (&self.evpn, &self.dynamic) {
            (Some(evpn), None) => evpn.to_node(),
            (Some(evpn), Some(_)) => {
                let mut n = self.underlay_node();
                union::add_node(&mut n, evpn.to_node());
                n
            }
            (None, _) => self.underlay_node(),
        }
    }

    /// The underlay objects: `bgp_vrf`, `bgp_nic`, the bridges' base
    /// wiring, the exposures, the tenant subnets and the VRF routes.
    fn underlay_node(&self) -> DesiredNode {
        let mut n = DesiredNode {
            announce_dev: Some(self.bgp_nic.clone()),
            vrf_table: self.vrf_table,
            frr_config: self.frr_config.clone(),
            ..DesiredNode::default()
        };
        let mut objects = KeyedObjects::default();
        self.add_announcement_devices(&mut n);
        for bw in &self.bridges {
            add_bridge_wiring(bw, &mut n, &mut objects);
        }
        self.add_exposures(&mut objects);
        self.add_tenant_subnets(&mut objects);
        for r in self.vrf_routes.values() {
            objects
                .routes
                .entry(r.route(self.vrf_table, &self.bgp_nic))
                .or_insert(r.class);
        }
        objects.move_into(&mut n);
        if let Some(local) = &self.local_cluster {
            n.flows.extend(local.flows.iter().cloned());
            n.fdb.extend(local.fdb.iter().cloned());
        }
        n
    }

    /// The VRF and, in it, the dummy `bgp_nic` that carries what BGP
    /// announces.
    fn add_announcement_devices(&self, n: &mut DesiredNode) {
        n.links.insert(Link {
            name: self.vrf.clone(),
            kind: LinkKind::Vrf {
                table: self.vrf_table,
            },
            master: None,
            mac: None,
            up: true,
        });
        n.links.insert(Link {
            name: self.bgp_nic.clone(),
            kind: LinkKind::Dummy,
            master: Some(self.vrf.clone()),
            mac: None,
            up: true,
        });
    }

    /// Each exposed IP's objects (announcement, rule, route, neighbours),
    /// with its class.
    fn add_exposures(&self, objects: &mut KeyedObjects) {
        for e in self.exposed.values() {
            let o = self.exposure_objects(e);
            if let Some(rule) = o.rule {
                objects.rules.entry(rule).or_insert(e.class);
            }
            if let Some(route) = o.route {
                objects.routes.entry(route).or_insert(e.class);
            }
            if let Some(neighbour) = o.neighbour {
                objects.neighbours.entry(neighbour).or_insert(e.class);
            }
            for p in o.proxy_neighbours {
                objects.proxy_neighbours.entry(p).or_insert(e.class);
            }
            if let Some(address) = o.address {
                objects.addresses.entry(address).or_insert(e.class);
            }
            if let Some(route) = o.announce_route {
                objects.routes.entry(route).or_insert(e.class);
            }
        }
    }

    /// Each tenant subnet: the rule into its bridge's table and, with a
    /// gateway, the route there via it (and the same route in the VRF
    /// table when the subnet asks for one).
    fn add_tenant_subnets(&self, objects: &mut KeyedObjects) {
        for s in &self.tenant_subnets {
            objects
                .rules
                .entry(Rule {
                    dst: s.rule_dst,
                    table: bridge_table(&s.bridge),
                    priority: None,
                })
                .or_insert(Class::Subnet);
            let Some(via) = s.via else {
                continue;
            };
            let v6 = s.net.addr().is_ipv6();
            objects
                .routes
                .entry(Route {
                    table: bridge_table(&s.bridge),
                    v6,
                    dst: Some(s.net),
                    dev: Some(s.dev.clone()),
                    via: Some(via),
                    proto: proto::BOOT,
                    scope: scope::UNIVERSE,
                    kind: RouteType::Unicast,
                    metric: None,
                })
                .or_insert(Class::Subnet);
            if s.vrf_route {
                objects
                    .routes
                    .entry(Route {
                        table: TableRef::Id(self.vrf_table),
                        v6,
                        dst: Some(s.net),
                        dev: Some(self.bgp_nic.clone()),
                        via: Some(via),
                        proto: proto::BOOT,
                        scope: scope::UNIVERSE,
                        kind: RouteType::Unicast,
                        metric: None,
                    })
                    .or_insert(Class::Subnet);
            }
        }
    }
}

/// The keyed node objects of a [`Desired::to_node`], collected first, then
/// sorted and bulk-built into the maps: much cheaper than tens of
/// thousands of tree inserts.
#[derive(Default)]
struct KeyedObjects {
    addresses: FirstWins<Address>,
    rules: FirstWins<Rule>,
    routes: FirstWins<Route>,
    neighbours: FirstWins<Neighbour>,
    proxy_neighbours: FirstWins<ProxyNeighbour>,
}

impl KeyedObjects {
    fn move_into(self, n: &mut DesiredNode) {
        n.addresses = self.addresses.into_map();
        n.rules = self.rules.into_map();
        n.routes = self.routes.into_map();
        n.neighbours = self.neighbours.into_map();
        n.proxy_neighbours = self.proxy_neighbours.into_map();
    }
}

/// One provider bridge's base wiring: the bridge and its VLAN devices,
/// their ARP/NDP addresses and proxy ARP/NDP, the default routes of the
/// bridge's table, and the cookie-999 flows that give traffic from OVN's
/// patch ports the bridge's MAC.
fn add_bridge_wiring(bw: &BridgeWiring, n: &mut DesiredNode, objects: &mut KeyedObjects) {
    let b = &bw.bridge;
    n.links.insert(Link {
        name: b.clone(),
        kind: LinkKind::Existing,
        master: None,
        mac: None,
        up: true,
    });
    n.bridge_tables.insert(b.clone());
    let mut devs = vec![(b.clone(), None)];
    for v in &bw.vlans {
        n.links.insert(Link {
            name: v.dev.clone(),
            kind: LinkKind::Vlan {
                parent: b.clone(),
                vlan_id: v.vlan,
            },
            master: None,
            mac: None,
            up: true,
        });
        devs.push((v.dev.clone(), Some(v.vlan)));
    }
    for (dev, vlan) in devs {
        if vlan.is_none() && bw.flat_l2 {
            n.sysctls
                .insert(Sysctl::conf(false, &dev, "proxy_arp", "0"));
            n.sysctls.insert(Sysctl::conf(true, &dev, "proxy_ndp", "0"));
            continue;
        }
        for net in arp_ndp_addresses(bw.index, vlan) {
            objects
                .addresses
                .entry(Address {
                    dev: dev.clone(),
                    net,
                })
                .or_insert(Class::Base);
        }
        n.sysctls
            .insert(Sysctl::conf(false, &dev, "proxy_arp", "1"));
        n.sysctls.insert(Sysctl::conf(true, &dev, "proxy_ndp", "1"));
    }
    for v6 in [false, true] {
        objects
            .routes
            .entry(Route {
                table: bridge_table(b),
                v6,
                dst: None,
                dev: Some(b.clone()),
                via: None,
                proto: proto::BOOT,
                scope: link_scope(v6),
                kind: RouteType::Unicast,
                metric: None,
            })
            .or_insert(Class::Base);
    }
    for port in &bw.mac_tweak_ports {
        for protocol in ["ip", "ipv6"] {
            n.flows.insert(Flow {
                bridge: b.clone(),
                cookie: cookie::MAC_TWEAK,
                table: 0,
                priority: 900,
                protocol: protocol.to_string(),
                in_port: port.clone(),
                matches: Vec::new(),
                actions: vec![FlowAction::ModDlDstBridgeMac, FlowAction::Normal],
            });
        }
    }
}

/// The node objects one exposure asks for (all with its class).
pub(crate) struct ExposureObjects {
    /// What BGP announces, by `announce_with`: the /32 or /128 on the
    /// announcement device, or the host route in the VRF table on it.
    pub address: Option<Address>,
    pub announce_route: Option<Route>,
    /// With a wiring: the rule to the bridge table, the route there, the
    /// permanent neighbour (with a MAC) and proxy NDP entries.
    pub rule: Option<Rule>,
    pub route: Option<Route>,
    pub neighbour: Option<Neighbour>,
    pub proxy_neighbours: Vec<ProxyNeighbour>,
}

impl Desired {
    pub(crate) fn exposure_objects(&self, e: &ExposedIp) -> ExposureObjects {
        let net = host_net(e.ip);
        let (address, announce_route) = match self.announce_with {
            AnnounceWith::Address => (
                Some(Address {
                    dev: self.bgp_nic.clone(),
                    net,
                }),
                None,
            ),
            AnnounceWith::Route => (
                None,
                Some(Route::announcement(net, self.vrf_table, &self.bgp_nic)),
            ),
        };
        let mut o = ExposureObjects {
            address,
            announce_route,
            rule: None,
            route: None,
            neighbour: None,
            proxy_neighbours: Vec::new(),
        };
        if let Some(w) = &e.wiring {
            o.rule = Some(Rule {
                dst: net,
                table: bridge_table(&w.target.bridge),
                priority: None,
            });
            o.route = Some(Route {
                table: bridge_table(&w.target.bridge),
                v6: e.ip.is_ipv6(),
                dst: Some(net),
                dev: Some(w.target.dev.clone()),
                via: None,
                proto: proto::BOOT,
                scope: link_scope(e.ip.is_ipv6()),
                kind: RouteType::Unicast,
                metric: None,
            });
            o.neighbour = w.lladdr.map(|mac| Neighbour {
                dev: w.target.dev.clone(),
                dst: e.ip,
                lladdr: mac,
            });
            o.proxy_neighbours = w
                .proxy_ndp
                .iter()
                .map(|p| ProxyNeighbour {
                    dev: w.target.dev.clone(),
                    dst: IpAddr::V6(*p),
                })
                .collect();
        }
        o
    }
}

/// Node objects with the class of the first exposure that asked for them
/// (the rule [`DesiredNode`] documents), built in bulk.
struct FirstWins<K>(Vec<(K, Class)>);

impl<K> Default for FirstWins<K> {
    fn default() -> Self {
        FirstWins(Vec::new())
    }
}

/// An insertion waiting for its class, mirroring `BTreeMap::entry(..).or_insert(..)`.
struct Pending<'m, K> {
    list: &'m mut FirstWins<K>,
    key: K,
}

impl<K: Ord> FirstWins<K> {
    fn entry(&mut self, key: K) -> Pending<'_, K> {
        Pending { list: self, key }
    }

    fn into_map(mut self) -> BTreeMap<K, Class> {
        // Stable sort keeps insertion order among equal keys: dedup keeps the first.
        self.0.sort_by(|a, b| a.0.cmp(&b.0));
        self.0.dedup_by(|later, first| later.0 == first.0);
        self.0.into_iter().collect()
    }
}

impl<K> Pending<'_, K> {
    fn or_insert(self, class: Class) {
        self.list.0.push((self.key, class));
    }
}

impl From<&Desired> for DesiredNode {
    fn from(d: &Desired) -> DesiredNode {
        d.to_node()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_objects_keep_the_class_of_the_first_exposure_asking_for_them() {
        let mut f = FirstWins::default();
        f.entry(2).or_insert(Class::Vm);
        f.entry(1).or_insert(Class::Gateway);
        f.entry(2).or_insert(Class::Fip);
        f.entry(1).or_insert(Class::Base);
        let m = f.into_map();
        assert_eq!(
            m.into_iter().collect::<Vec<_>>(),
            [(1, Class::Gateway), (2, Class::Vm)]
        );
    }
}
