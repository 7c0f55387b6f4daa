//! EVPN L3 (type-5 routes): the per-VNI objects of the NB driver's
//! `exposing_method = vrf`, and their flattening into node objects.
//!
//! A provider network annotated by networking-bgpvpn (`neutron_bgpvpn:type
//! = l3` and `:vni` on its Logical_Switch) whose localnet is mapped to a
//! bridge here gets, while at least one IP is exposed through it (upstream
//! builds the devices at the first exposure and tears them down at the
//! last): `vrf-<vni>` (table = VNI), `br-<vni>` in it, `vxlan-<vni>` in the
//! bridge, and a veth pair `vrf<ln[:11]>` (in the VRF, with the anycast
//! MAC) / `ovs<ln[:11]>` (a port of the provider bridge, tagged on VLAN
//! networks). Each exposed IP is a host route in table VNI through the veth
//! with a permanent neighbour; FRR gets the add-vrf text. Which IPs are
//! exposed is the NB driver's decision (the same passes as the underlay
//! method, [`crate::nb_underlay`]); only their wiring differs.
//!
//! This module is the model both EVPN drivers fill and its flattening; the
//! NB mode fills it in [`crate::nb_evpn`], the SB driver in
//! [`crate::sb_evpn`].

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipnet::IpNet;
use obgp_netmodel::{
    cookie, proto, scope, Address, Class, DesiredNode, DevName, EvpnCleanup, Flow, FlowAction,
    Link, LinkKind, MacAddr, Neighbour, OvsPort, ProxyNeighbour, Route, RouteType, Sysctl,
    TableRef,
};
use serde::Serialize;

use obgp_netmodel::frr::{add_vrf, AddVrf, RouteDistinguisher};

use crate::arp_ndp::arp_ndp_addresses;

/// The EVPN desired state: the VNIs this node serves. The L3 VNIs (VRF,
/// type-5) of the vrf method and the SB driver, and the L2 VNIs (no VRF,
/// type-2) of the l2vni method.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct EvpnL3 {
    pub vnis: BTreeMap<u32, EvpnVni>,
    /// `exposing_method = l2vni`'s VNIs ([`crate::l2vni`]).
    pub l2: BTreeMap<u32, crate::l2vni::L2Vni>,
    /// The L2 VNIs' FRR text (`advertise-all-vni` and their `vni`
    /// blocks); empty without L2 VNIs.
    pub l2_frr_text: String,
    /// The SB driver's base wiring of each mapped bridge: its ARP/NDP
    /// addresses (by its 1-based position in the mappings) and proxy
    /// ARP/NDP, as the underlay drivers do.
    pub bridge_base: Vec<(DevName, u32)>,
    /// The provider bridges of `ovn-bridge-mappings` (where the agent's
    /// EVPN ports and flows are judged).
    pub bridges: BTreeSet<DevName>,
    /// `delete_vrf_on_disconnect`.
    pub delete_vrf: bool,
    /// The SB driver's cookie-998 steering flows are the agent's.
    pub steering_flows: bool,
}

/// One VNI's devices and what goes through them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct EvpnVni {
    pub vni: u32,
    pub vrf: DevName,
    pub bridge: DevName,
    pub vxlan: DevName,
    /// The VXLAN source address.
    pub local_ip: IpAddr,
    pub udp_port: u16,
    /// The VRF end of each provider network's veth pair.
    pub ports: Vec<EvpnPort>,
    /// The SB driver's `lo-<vni>` and the tenant VM IPs on it (what zebra
    /// announces as type-5 routes).
    pub lo: Option<(DevName, Vec<IpNet>)>,
    /// The SB driver's unreachable IPv4 and IPv6 defaults in table VNI
    /// (traffic for unknown tenant IPs stops at the VRF).
    pub unreachable_defaults: bool,
    /// Flows steering tenant traffic into the VRF (the SB driver's
    /// cookie-998 flows).
    pub flows: Vec<Flow>,
    pub proxy_neighbours: Vec<ProxyNeighbour>,
    pub sysctls: Vec<Sysctl>,
    /// The add-vrf text (and the ND texts of its ports) for `vtysh -f`.
    pub frr_text: String,
}

/// A provider network's connection to its VNI: a veth pair between the VRF
/// and the provider bridge, or an OVS internal port in the VRF.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct EvpnPort {
    /// The VRF-side device: a veth end (`vrf<ln[:11]>`, `veth-vrf-<n>`),
    /// or the OVS internal port itself (`vlan-<n>`).
    pub vrf_end: DevName,
    /// The veth's OVS end (`ovs<ln[:11]>`, `veth-ovs-<n>`); `None` for an
    /// OVS internal port.
    pub ovs_end: Option<DevName>,
    pub ovs_bridge: DevName,
    pub vlan: Option<u16>,
    /// The MAC of the VRF end: the NB mode's anycast MAC (the same on
    /// every node); `None`: the kernel's.
    pub mac: Option<MacAddr>,
    /// The localnet's patch port on the provider bridge whose traffic goes
    /// to `mac` (the NB mode's cookie-999 flows). `None` until
    /// ovn-controller created it, or without an anycast MAC.
    pub patch_port: Option<String>,
    /// Addresses of the VRF end: the networks' DHCP router IPs, then the
    /// 169.254 / fd53 ARP/NDP addresses.
    pub addresses: Vec<IpNet>,
    pub sysctls: Vec<Sysctl>,
    /// Host routes (and subnet routes via a gateway) in table VNI.
    pub routes: Vec<EvpnRoute>,
}

/// One route in a VNI's table through an [`EvpnPort`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct EvpnRoute {
    pub dst: IpNet,
    pub via: Option<IpAddr>,
    /// The permanent neighbour of a host route.
    pub lladdr: Option<MacAddr>,
    pub class: Class,
}

/// The anycast MAC of a VNI's port for `vlan` (upstream's
/// `_offset_for_vni_and_vlan` added to `02:00:00:00:00:00`): the VNI in
/// the next three bytes, the VLAN in the last two, so every node answers
/// with the same MAC for the same network.
pub fn anycast_mac(vni: u32, vlan: Option<u16>) -> MacAddr {
    // Upstream folds out-of-range values the same way (with a warning).
    let vni = if vni > 16_777_214 {
        vni % 0xff_ffff
    } else {
        vni
    };
    let vlan = u32::from(vlan.unwrap_or(0));
    let vlan = if vlan > 4094 { vlan % 0xfff } else { vlan };
    let v = (u64::from(vni) << 16) + u64::from(vlan);
    let m = 0x02_00_00_00_00_00u64 + v;
    let b = m.to_be_bytes();
    MacAddr([b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// The metric of the SB driver's unreachable defaults (upstream's
/// `add_unreachable_route`).
pub const UNREACHABLE_METRIC: u32 = 4_278_198_272;

fn host_route_scope(v6: bool) -> u8 {
    if v6 {
        scope::UNIVERSE
    } else {
        scope::LINK
    }
}

impl EvpnL3 {
    /// Flattens into node objects. The EVPN modes have no `bgp_nic` and no
    /// per-bridge tables: what zebra announces is the VNI tables' routes
    /// and connected addresses.
    pub fn to_node(&self) -> DesiredNode {
        let mut n = DesiredNode {
            evpn: Some(EvpnCleanup {
                delete_vrf: self.delete_vrf,
                steering_flows: self.steering_flows,
                bridges: self.bridges.clone(),
            }),
            ..DesiredNode::default()
        };
        let mut frr = String::new();
        for v in self.vnis.values() {
            close_router_bgp_vrf(&mut frr);
            frr.push_str(&v.frr_text);
            v.add_to_node(&mut n);
        }
        for v in self.l2.values() {
            v.add_to_node(&mut n);
        }
        frr.push_str(&self.l2_frr_text);
        self.add_bridge_bases(&mut n);
        if !self.vnis.is_empty() || !self.l2.is_empty() {
            n.frr_config = Some(frr);
        }
        n
    }

    /// Each mapped provider bridge keeps its base wiring of the non-EVPN
    /// modes: the ARP/NDP addresses of its mapping index, proxy ARP and
    /// proxy NDP.
    fn add_bridge_bases(&self, n: &mut DesiredNode) {
        for (bridge, index) in &self.bridge_base {
            for net in arp_ndp_addresses(*index, None) {
                n.addresses.insert(
                    Address {
                        dev: bridge.clone(),
                        net,
                    },
                    Class::Base,
                );
            }
            n.sysctls
                .insert(Sysctl::conf(false, bridge, "proxy_arp", "1"));
            n.sysctls
                .insert(Sysctl::conf(true, bridge, "proxy_ndp", "1"));
        }
    }
}

impl EvpnVni {
    /// The VNI's objects, in this order (a later insert of an address
    /// replaces an earlier one's class): its devices, sysctls, flows and
    /// proxy neighbours, `lo-<vni>` with the announced IPs, the
    /// unreachable defaults, then each connection to a provider bridge.
    fn add_to_node(&self, n: &mut DesiredNode) {
        n.evpn_vnis.insert(self.vni);
        self.add_devices(n);
        n.sysctls.extend(self.sysctls.iter().cloned());
        for f in &self.flows {
            n.flows.insert(f.clone());
        }
        for pn in &self.proxy_neighbours {
            n.proxy_neighbours.insert(pn.clone(), Class::Gateway);
        }
        self.add_announced_ips(n);
        if self.unreachable_defaults {
            self.add_unreachable_defaults(n);
        }
        for p in &self.ports {
            p.add_to_node(self, n);
        }
    }

    /// `vrf-<vni>` (table = VNI), `br-<vni>` in it, `vxlan-<vni>` in the
    /// bridge from the VXLAN source in use.
    fn add_devices(&self, n: &mut DesiredNode) {
        n.links.insert(Link {
            name: self.vrf.clone(),
            kind: LinkKind::Vrf { table: self.vni },
            master: None,
            mac: None,
            up: true,
        });
        let vni_bridge = crate::l2vni::VniBridge {
            bridge: &self.bridge,
            vxlan: &self.vxlan,
            vni: self.vni,
            local_ip: self.local_ip,
            udp_port: self.udp_port,
        };
        vni_bridge.add_to_node(Some(&self.vrf), n);
    }

    /// The dummy `lo-<vni>` in the VRF with the IPs zebra announces, each
    /// without the kernel's local route.
    fn add_announced_ips(&self, n: &mut DesiredNode) {
        let Some((lo, ips)) = &self.lo else {
            return;
        };
        n.links.insert(Link {
            name: lo.clone(),
            kind: LinkKind::Dummy,
            master: Some(self.vrf.clone()),
            mac: None,
            up: true,
        });
        for net in ips {
            n.addresses.insert(
                Address {
                    dev: lo.clone(),
                    net: *net,
                },
                Class::TenantVm,
            );
            // The kernel's local route of the address would make
            // the node take traffic for the VM: only zebra's
            // announcement is wanted.
            n.suppressed_local_routes.insert(Route {
                table: TableRef::Id(self.vni),
                v6: net.addr().is_ipv6(),
                dst: Some(*net),
                dev: Some(lo.clone()),
                via: None,
                proto: proto::KERNEL,
                scope: scope::HOST,
                kind: RouteType::Local,
                metric: None,
            });
        }
    }

    /// Unreachable IPv4 and IPv6 defaults in the VNI table, so that what
    /// the VRF does not route is dropped there, not looked up elsewhere.
    fn add_unreachable_defaults(&self, n: &mut DesiredNode) {
        for v6 in [false, true] {
            n.routes.insert(
                Route {
                    table: TableRef::Id(self.vni),
                    v6,
                    dst: None,
                    dev: None,
                    via: None,
                    proto: proto::BOOT,
                    scope: scope::UNIVERSE,
                    kind: RouteType::Unreachable,
                    metric: Some(UNREACHABLE_METRIC),
                },
                Class::Base,
            );
        }
    }
}

impl EvpnPort {
    /// One connection of the VNI's VRF to a provider bridge: its devices
    /// and OVS port, addresses and sysctls, the MAC-rewrite flows, and the
    /// routes (with neighbours) through it.
    fn add_to_node(&self, v: &EvpnVni, n: &mut DesiredNode) {
        self.add_connection(v, n);
        self.add_mac_tweak_flows(n);
        self.add_routes(v, n);
    }

    /// The VRF's end in the VRF (a veth whose other end is plugged into
    /// the bridge, or an OVS internal port), its addresses and sysctls.
    fn add_connection(&self, v: &EvpnVni, n: &mut DesiredNode) {
        let (kind, internal) = match &self.ovs_end {
            Some(peer) => (LinkKind::Veth { peer: peer.clone() }, false),
            None => (LinkKind::Existing, true),
        };
        n.links.insert(Link {
            name: self.vrf_end.clone(),
            kind,
            master: Some(v.vrf.clone()),
            mac: self.mac,
            up: true,
        });
        if let Some(ovs_end) = &self.ovs_end {
            n.links.insert(Link {
                name: ovs_end.clone(),
                kind: LinkKind::Existing,
                master: None,
                mac: None,
                up: true,
            });
        }
        n.ovs_ports.insert(OvsPort {
            bridge: self.ovs_bridge.clone(),
            name: self.ovs_end.clone().unwrap_or_else(|| self.vrf_end.clone()),
            tag: self.vlan,
            internal,
        });
        for net in &self.addresses {
            n.addresses.insert(
                Address {
                    dev: self.vrf_end.clone(),
                    net: *net,
                },
                Class::Base,
            );
        }
        n.sysctls.extend(self.sysctls.iter().cloned());
    }

    /// The NB mode's cookie-999 flows: with a patch port and an anycast
    /// MAC, what the localnet's patch port sends into the bridge goes to
    /// that MAC, the VRF end's.
    fn add_mac_tweak_flows(&self, n: &mut DesiredNode) {
        let (Some(patch), Some(mac)) = (&self.patch_port, self.mac) else {
            return;
        };
        for protocol in ["ip", "ipv6"] {
            n.flows.insert(Flow {
                bridge: self.ovs_bridge.clone(),
                cookie: cookie::MAC_TWEAK,
                table: 0,
                priority: 900,
                protocol: protocol.into(),
                in_port: patch.clone(),
                matches: Vec::new(),
                actions: vec![FlowAction::ModDlDst(mac), FlowAction::Normal],
            });
        }
    }

    /// The routes through the VRF's end in the VNI table (a host route
    /// without gateway in link scope for IPv4), and a permanent neighbour
    /// for each that names its MAC. The first class given to a route or
    /// neighbour stays.
    fn add_routes(&self, v: &EvpnVni, n: &mut DesiredNode) {
        for r in &self.routes {
            let v6 = r.dst.addr().is_ipv6();
            let host = r.dst.prefix_len() == r.dst.max_prefix_len();
            n.routes
                .entry(Route {
                    table: TableRef::Id(v.vni),
                    v6,
                    dst: Some(r.dst),
                    dev: Some(self.vrf_end.clone()),
                    via: r.via,
                    proto: proto::BOOT,
                    scope: if host && r.via.is_none() {
                        host_route_scope(v6)
                    } else {
                        scope::UNIVERSE
                    },
                    kind: RouteType::Unicast,
                    metric: None,
                })
                .or_insert(r.class);
            if let Some(mac) = r.lladdr {
                n.neighbours
                    .entry(Neighbour {
                        dev: self.vrf_end.clone(),
                        dst: r.dst.addr(),
                        lladdr: mac,
                    })
                    .or_insert(r.class);
            }
        }
    }
}

/// Closes the `router bgp ... vrf` block the text so far ends in (an
/// add-vrf text without ND stanza) before the next VNI's text: FRR reads
/// that text's `vrf vrf-<n>` stanza inside the block and refuses the
/// whole text (`% Unknown command: exit-vrf`). Upstream applies each VNI
/// with its own vtysh call and never meets this. A text ending with the
/// ND stanza's `exit` is at the top level already, where another `exit`
/// would leave configuration mode; an empty text needs nothing.
fn close_router_bgp_vrf(frr: &mut String) {
    if frr.trim_end().ends_with("exit-address-family") {
        frr.push_str("exit\n");
    }
}

/// The add-vrf text of a VNI, with a note for each route target FRR will
/// not keep: one equal to FRR's automatic `<AS>:<VNI>` is refused as
/// already configured, and an explicit export then replaces the automatic
/// one (FRR 8.4; docs/evpn.md, "Known limits"). The text stays upstream's.
pub(crate) fn add_vrf_text(v: &AddVrf, row: &str, notes: &mut Vec<String>) -> String {
    let auto = v
        .asn
        .as_str()
        .parse::<u32>()
        .ok()
        .map(|asn| RouteDistinguisher::As { asn, number: v.vni });
    let all = v
        .route_targets
        .iter()
        .chain(&v.import_targets)
        .chain(&v.export_targets);
    for rt in all {
        if Some(*rt) == auto {
            notes.push(format!(
                "{row}: route target {rt} is FRR's automatic one for VNI {}: FRR refuses it, and an explicit export target replaces the automatic one",
                v.vni
            ));
        }
    }
    add_vrf(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anycast_mac_carries_the_vni_and_the_vlan_like_upstream() {
        assert_eq!(anycast_mac(1001, None).to_string(), "02:00:03:e9:00:00");
        assert_eq!(
            anycast_mac(1001, Some(100)).to_string(),
            "02:00:03:e9:00:64"
        );
        assert_eq!(
            anycast_mac(16_777_214, Some(4094)).to_string(),
            "02:ff:ff:fe:0f:fe"
        );
        // Folded as upstream folds them.
        assert_eq!(
            anycast_mac(16_777_215, None).to_string(),
            "02:00:00:00:00:00"
        );
    }
}
