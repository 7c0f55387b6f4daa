//! The NB driver's `exposing_method = l2vni` (EVPN L2, type-2 and type-3
//! routes): a provider network annotated `neutron_bgpvpn:type = l2` is
//! stretched at L2 over the fabric on its VNI.
//!
//! Upstream lists the method and leaves it unreachable (`EvpnBridge(mode
//! = 'l2')` builds the bridge and the VXLAN device without a VRF;
//! `VlanDev.setup` enslaves the provider veth to the bridge without the
//! anycast MAC, the 169.254 addresses or proxy ARP). Per VNI this node
//! gets `br-<vni>` (no VRF), `vxlan-<vni>` in it, a veth pair from the
//! provider bridge into it (`vrf<ln[:11]>` in the bridge, `ovs<ln[:11]>`
//! a port of the provider bridge, tagged on VLAN networks: the vrf
//! method's names, so one ownership rule covers both), and FRR's
//! `advertise-all-vni` with the annotations' `vni` block. Each port bound
//! here on the network (the NB driver's own decision, [`crate::nb_underlay`])
//! gets a static FDB entry (its MAC on the veth end in `br-<vni>`) and a
//! permanent neighbour on `br-<vni>`, so that zebra advertises its MAC/IP
//! route without traffic (docs/evpn.md, "EVPN L2").

use std::collections::BTreeMap;
use std::net::IpAddr;

use obgp_netmodel::{
    BridgeFdbEntry, Class, DesiredNode, DevName, Link, LinkKind, MacAddr, Neighbour, OvsPort,
};
use serde::Serialize;

use crate::provenance::RowRef;

/// One L2 VNI: its devices, the provider network's connection and the
/// hosts zebra announces as type-2 routes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct L2Vni {
    pub vni: u32,
    /// The annotated Logical_Switch.
    pub network: RowRef,
    pub bridge: DevName,
    pub vxlan: DevName,
    /// The VXLAN source address (`evpn_local_ip`).
    pub local_ip: IpAddr,
    pub udp_port: u16,
    /// The veth end enslaved to `br-<vni>`.
    pub bridge_end: DevName,
    /// The veth end plugged into the provider bridge.
    pub ovs_end: DevName,
    pub ovs_bridge: DevName,
    pub vlan: Option<u16>,
    /// The ports bound here on the network, by IP.
    pub hosts: BTreeMap<IpAddr, L2Host>,
    /// Its `vni` block of FRR's `address-family l2vpn evpn` (empty
    /// without RD and route-target annotations).
    pub frr_vni_block: String,
}

/// A port bound here whose IP and MAC the VNI announces (type-2).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct L2Host {
    pub mac: MacAddr,
    /// The Logical_Switch_Port.
    pub source: RowRef,
}

impl L2Vni {
    /// Adds the VNI's node objects: `br-<vni>`, `vxlan-<vni>` in it (its
    /// bridge-port flags are the planner's, as for every VXLAN device in
    /// a bridge), the veth pair and its OVS port, and per host the static
    /// FDB entry of its MAC on the veth end (zebra's local MAC) and a
    /// permanent neighbour on `br-<vni>` (zebra's local IP for that MAC).
    pub fn add_to_node(&self, n: &mut DesiredNode) {
        let vxlan = VniBridge {
            bridge: &self.bridge,
            vxlan: &self.vxlan,
            vni: self.vni,
            local_ip: self.local_ip,
            udp_port: self.udp_port,
        };
        vxlan.add_to_node(None, n);
        n.links.insert(Link {
            name: self.bridge_end.clone(),
            kind: LinkKind::Veth {
                peer: self.ovs_end.clone(),
            },
            master: Some(self.bridge.clone()),
            mac: None,
            up: true,
        });
        n.links.insert(Link {
            name: self.ovs_end.clone(),
            kind: LinkKind::Existing,
            master: None,
            mac: None,
            up: true,
        });
        n.ovs_ports.insert(OvsPort {
            bridge: self.ovs_bridge.clone(),
            name: self.ovs_end.clone(),
            tag: self.vlan,
            internal: false,
        });
        for (ip, h) in &self.hosts {
            // One entry per MAC: a host with an IPv4 and an IPv6 address
            // pins its MAC once.
            n.bridge_fdb
                .entry(BridgeFdbEntry {
                    bridge: self.bridge.clone(),
                    mac: h.mac,
                    vlan: None,
                    port: self.bridge_end.clone(),
                })
                .or_insert(Class::Vm);
            n.neighbours
                .entry(Neighbour {
                    dev: self.bridge.clone(),
                    dst: *ip,
                    lladdr: h.mac,
                })
                .or_insert(Class::Vm);
        }
    }
}

/// A VNI's `br-<vni>` and its `vxlan-<vni>` port: the same two devices in
/// both EVPN modes; in L3 mode the bridge sits in the VNI's VRF.
pub(crate) struct VniBridge<'a> {
    pub bridge: &'a DevName,
    pub vxlan: &'a DevName,
    pub vni: u32,
    pub local_ip: IpAddr,
    pub udp_port: u16,
}

impl VniBridge<'_> {
    /// Adds the bridge (enslaved to `vrf`, if any) and the VXLAN device in
    /// it, from the VXLAN source in use.
    pub(crate) fn add_to_node(&self, vrf: Option<&DevName>, n: &mut DesiredNode) {
        n.links.insert(Link {
            name: self.bridge.clone(),
            kind: LinkKind::Bridge,
            master: vrf.cloned(),
            mac: None,
            up: true,
        });
        n.links.insert(Link {
            name: self.vxlan.clone(),
            kind: LinkKind::Vxlan {
                vni: self.vni,
                local: Some(self.local_ip),
                dstport: self.udp_port,
            },
            master: Some(self.bridge.clone()),
            mac: None,
            up: true,
        });
    }
}
