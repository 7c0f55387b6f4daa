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
//! gets a permanent neighbour on `br-<vni>`, so that zebra knows its IP
//! and MAC without traffic (docs/evpn.md, "L2 (l2vni)").

use std::collections::BTreeMap;
use std::net::IpAddr;

use obgp_config::Config;
use obgp_netmodel::frr::{advertise_all_vni, l2_vni_block, Asn, L2Vni as L2VniText};
use obgp_netmodel::names::evpn as names;
use obgp_netmodel::{Class, DesiredNode, DevName, Link, LinkKind, MacAddr, Neighbour, OvsPort};
use obgp_ovn::{BgpVpnType, LogicalSwitch, Snapshot};
use serde::Serialize;

use crate::model::{Desired, RowRef};
use crate::nb_evpn::{annotation_of_type, mapped_localnet};
use crate::provenance::{Reason, Rejection, Trace};
use crate::DesiredError;

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
    /// a bridge), the veth pair and its OVS port, and a permanent
    /// neighbour on `br-<vni>` per host.
    pub fn add_to_node(&self, n: &mut DesiredNode) {
        n.links.insert(Link {
            name: self.bridge.clone(),
            kind: LinkKind::Bridge,
            master: None,
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

/// The NB driver's `exposing_method = l2vni`: the annotated networks
/// mapped here become L2 VNIs, with the NB driver's VM ports on them as
/// hosts. `evpn_local_ip` is required, as for the vrf method.
pub(crate) fn nb_l2vni(
    snap: &Snapshot,
    config: &Config,
    desired: &mut Desired,
    trace: &mut Trace,
) -> Result<(), DesiredError> {
    let d = &config.default;
    let Some(local_ip) = d.evpn_local_ip else {
        return Err(DesiredError::BadConfig {
            option: "evpn_local_ip",
            value: String::new(),
            reason: "exposing_method = l2vni needs the VXLAN source address".into(),
        });
    };
    let asn = d
        .bgp_as
        .parse::<Asn>()
        .map_err(|e| DesiredError::BadConfig {
            option: "bgp_AS",
            value: d.bgp_as.clone(),
            reason: e.to_string(),
        })?;
    let mut notes = Vec::new();
    let mut vnis = l2_networks(snap, (local_ip, d.evpn_udp_dstport), &mut notes, trace);
    add_hosts(desired, &mut vnis, trace);
    let mut evpn = crate::evpn::EvpnL3 {
        bridges: snap
            .ovs
            .bridge_mappings
            .iter()
            .map(|m| m.bridge.clone())
            .collect(),
        delete_vrf: d.delete_vrf_on_disconnect,
        ..Default::default()
    };
    evpn.l2 = vnis.into_values().map(|v| (v.vni, v)).collect();
    if !evpn.l2.is_empty() {
        let blocks: Vec<String> = evpn.l2.values().map(|v| v.frr_vni_block.clone()).collect();
        evpn.l2_frr_text = advertise_all_vni(&asn, &blocks);
    }
    desired.notes.extend(notes);
    desired.frr_config = None;
    desired.evpn = Some(evpn);
    Ok(())
}

/// The `type = l2` networks mapped here, by (provider bridge, VLAN); the
/// first (by Logical_Switch uuid) wins a VNI or a (bridge, VLAN) two of
/// them claim, with a note. A bad annotation skips its network with a
/// note naming the row.
fn l2_networks(
    snap: &Snapshot,
    (local_ip, udp_port): (IpAddr, u16),
    notes: &mut Vec<String>,
    trace: &mut Trace,
) -> BTreeMap<(DevName, Option<u16>), L2Vni> {
    let mut out: BTreeMap<(DevName, Option<u16>), L2Vni> = BTreeMap::new();
    for ls in snap.bgpvpn_switches() {
        let Some(vpn) = annotation_of_type(ls, BgpVpnType::L2, notes, trace) else {
            continue;
        };
        let Some((ln, ovs_bridge)) = mapped_localnet(snap, ls) else {
            continue;
        };
        let row = format!("{} {}", LogicalSwitch::TABLE, ls.uuid);
        let (Some(bridge), Some(vxlan), Some((bridge_end, ovs_end))) = (
            names::bridge(vpn.vni),
            names::vxlan(vpn.vni),
            names::nb_veth(&ln.uuid.to_string()),
        ) else {
            notes.push(format!("{row}: VNI {} gives no device names", vpn.vni));
            continue;
        };
        let key = (ovs_bridge.clone(), ln.tag);
        let taken = out
            .get(&key)
            .map(|v| v.vni)
            .or_else(|| out.values().find(|v| v.vni == vpn.vni).map(|v| v.vni));
        if let Some(first) = taken {
            notes.push(format!(
                "{row}: VNI {} on bridge {ovs_bridge} vlan {:?} clashes with VNI {first}; VNI {first} kept",
                vpn.vni, ln.tag
            ));
            continue;
        }
        let frr_vni_block = l2_vni_block(&L2VniText {
            vni: vpn.vni,
            rd: vpn.rd.first().copied(),
            route_targets: vpn.route_targets.clone(),
            import_targets: vpn.import_targets.clone(),
            export_targets: vpn.export_targets.clone(),
        });
        out.insert(
            key,
            L2Vni {
                vni: vpn.vni,
                network: RowRef {
                    table: LogicalSwitch::TABLE,
                    uuid: ls.uuid,
                },
                bridge,
                vxlan,
                local_ip,
                udp_port,
                bridge_end,
                ovs_end,
                ovs_bridge,
                vlan: ln.tag,
                hosts: BTreeMap::new(),
                frr_vni_block,
            },
        );
    }
    out
}

/// The NB driver's provider VM ports (bound here, by its binding rules)
/// become hosts of the VNI on their network; its other exposures are
/// recorded as refused in this mode.
fn add_hosts(
    underlay: &Desired,
    vnis: &mut BTreeMap<(DevName, Option<u16>), L2Vni>,
    trace: &mut Trace,
) {
    for e in underlay.exposed.values() {
        let (Class::Vm, Some(w)) = (e.class, &e.wiring) else {
            trace.reject(|| Rejection::of(e.source, Reason::NotAPortInL2vniMode).ip(e.ip));
            continue;
        };
        let key = (w.target.bridge.clone(), w.target.vlan);
        let Some(v) = vnis.get_mut(&key) else {
            trace.reject(|| {
                let (bridge, vlan) = key;
                Rejection::of(e.source, Reason::NoL2Vni { bridge, vlan }).ip(e.ip)
            });
            continue;
        };
        let Some(mac) = w.lladdr else {
            trace.reject(|| Rejection::of(e.source, Reason::NoAddresses).ip(e.ip));
            continue;
        };
        v.hosts.insert(
            e.ip,
            L2Host {
                mac,
                source: e.source,
            },
        );
    }
}
