//! How an [`EvpnFabric`](super::EvpnFabric) is built: its VNI, AS, route
//! targets and the optional parts (an L2 VNI, the peer's extra L2 VNIs,
//! the node VTEP on `lo`, an IPv4 unicast session).

use std::net::Ipv4Addr;

/// How to build an [`EvpnFabric`](super::EvpnFabric).
#[derive(Clone, Debug)]
pub struct EvpnFabricOptions {
    /// The L3 VNI (also the VRF table and the device suffix).
    pub vni: u32,
    /// Both routers' AS (iBGP: next hops stay the VTEP addresses).
    pub asn: u32,
    /// The route targets the peer's VRF imports and exports: the node's
    /// exported targets must meet them for the peer to install the routes.
    /// Empty: FRR's automatic `<AS>:<VNI>` both ways.
    pub route_targets: Vec<String>,
    /// A /32 on the node's `lo` to be its VTEP (the VXLAN source, the
    /// type-5 routes' next hop) instead of the underlay address [`NODE_VTEP`](super::NODE_VTEP),
    /// the way a routed fabric gives each node a loopback; the peer routes
    /// it over the underlay. `None`: the VTEP is [`NODE_VTEP`](super::NODE_VTEP).
    pub node_lo_vtep: Option<Ipv4Addr>,
    /// The VNI is an L2 VNI (the `l2vni` method): the peer's `br-<vni>`
    /// and `vxlan-<vni>` are in no VRF and its FRR holds a `vni <vni>`
    /// block with [`EvpnFabricOptions::route_targets`] under the default
    /// instance's `address-family l2vpn evpn`, instead of a VRF instance
    /// ([`l2`](super::l2)).
    pub l2: bool,
    /// L2 VNIs the peer holds besides [`EvpnFabricOptions::vni`] (on an
    /// L3 fabric: beside its VRF): `br-<n>`/`vxlan-<n>` in no VRF and a
    /// `vni <n>` block with their route targets. For a node with networks
    /// of both EVPN kinds at once (`exposing_method = dynamic`).
    pub peer_l2_vnis: Vec<PeerL2Vni>,
    /// The session also carries `ipv4 unicast` (both sides activate it),
    /// so the peer receives what the node's default instance announces:
    /// the underlay method's `bgp_nic` addresses, leaked from `bgp-vrf`
    /// ([`EvpnFabric::peer_unicast_from_node`](super::EvpnFabric::peer_unicast_from_node)).
    pub ipv4_unicast: bool,
}

/// An L2 VNI of the peer beside the fabric's own VNI
/// ([`EvpnFabricOptions::peer_l2_vnis`]).
#[derive(Clone, Debug)]
pub struct PeerL2Vni {
    pub vni: u32,
    /// Imported and exported by its `vni` block; empty: FRR's automatic
    /// `<AS>:<VNI>`.
    pub route_targets: Vec<String>,
}

impl Default for EvpnFabricOptions {
    fn default() -> Self {
        EvpnFabricOptions {
            vni: 1001,
            asn: 64999,
            route_targets: vec!["64999:1001".to_string()],
            node_lo_vtep: None,
            l2: false,
            peer_l2_vnis: Vec::new(),
            ipv4_unicast: false,
        }
    }
}

impl EvpnFabricOptions {
    /// An L2 VNI `vni` of AS `asn` with route target `rt`, both sides.
    pub fn l2(vni: u32, asn: u32, rt: &str) -> EvpnFabricOptions {
        EvpnFabricOptions {
            l2: true,
            ..EvpnFabricOptions::l3(vni, asn, rt)
        }
    }

    /// An L3 VNI `vni` of AS `asn` with route target `rt`, both sides.
    pub fn l3(vni: u32, asn: u32, rt: &str) -> EvpnFabricOptions {
        EvpnFabricOptions {
            vni,
            asn,
            route_targets: vec![rt.to_string()],
            ..EvpnFabricOptions::default()
        }
    }
}
