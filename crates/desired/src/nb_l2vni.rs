//! The NB driver's `exposing_method = l2vni`: the annotated `type = l2`
//! provider networks mapped here become the L2 VNIs of [`crate::l2vni`],
//! with the NB driver's VM ports on them as hosts. Which ports are bound
//! here is the underlay method's decision ([`crate::nb_underlay`]).

use std::collections::BTreeMap;
use std::net::IpAddr;

use obgp_config::Config;
use obgp_netmodel::frr::{advertise_all_vni, l2_vni_block, Asn, L2Vni as L2VniText};
use obgp_netmodel::names::evpn as names;
use obgp_netmodel::{Class, DevName};
use obgp_ovn::{BgpVpnType, LogicalSwitch, Snapshot};

use crate::l2vni::{L2Host, L2Vni};
use crate::model::{Desired, RowRef};
use crate::nb_evpn::{annotation_of_type, mapped_bridges, mapped_localnet, vxlan_source_and_asn};
use crate::provenance::{Reason, Rejection, Trace};
use crate::DesiredError;

/// The NB driver's `exposing_method = l2vni`: the annotated networks
/// mapped here become L2 VNIs, with the NB driver's VM ports on them as
/// hosts. `evpn_local_ip` is required, as for the vrf method.
pub(crate) fn nb_l2vni(
    snap: &Snapshot,
    config: &Config,
    desired: &mut Desired,
    trace: &mut Trace,
) -> Result<(), DesiredError> {
    let mut notes = Vec::new();
    let evpn = l2vni_evpn(snap, config, desired, &mut notes, trace)?;
    desired.notes.extend(notes);
    desired.frr_config = None;
    desired.evpn = Some(evpn);
    Ok(())
}

/// The l2vni method's VNIs: every `l2` network mapped here, with the
/// provider VM ports of `exposures` (the NB driver's decisions) as hosts.
/// `exposing_method = dynamic` passes only the decisions on its `l2`
/// networks ([`crate::dynamic`]).
pub(crate) fn l2vni_evpn(
    snap: &Snapshot,
    config: &Config,
    exposures: &Desired,
    notes: &mut Vec<String>,
    trace: &mut Trace,
) -> Result<crate::evpn::EvpnL3, DesiredError> {
    let d = &config.default;
    let (local_ip, asn) = vxlan_source_and_asn(config)?;
    let mut vnis = l2_networks(snap, (local_ip, d.evpn_udp_dstport), notes, trace);
    add_hosts(exposures, &mut vnis, trace);
    let mut evpn = crate::evpn::EvpnL3 {
        bridges: mapped_bridges(snap),
        delete_vrf: d.delete_vrf_on_disconnect,
        ..Default::default()
    };
    evpn.l2 = vnis.into_values().map(|v| (v.vni, v)).collect();
    evpn.l2_frr_text = l2_frr_text(&asn, &evpn.l2);
    Ok(evpn)
}

/// `advertise-all-vni` with the VNIs' blocks; empty without L2 VNIs.
pub(crate) fn l2_frr_text(asn: &Asn, l2: &BTreeMap<u32, L2Vni>) -> String {
    if l2.is_empty() {
        return String::new();
    }
    let blocks: Vec<String> = l2.values().map(|v| v.frr_vni_block.clone()).collect();
    advertise_all_vni(asn, &blocks)
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
        let text = L2VniText {
            vni: vpn.vni,
            rd: vpn.rd.first().copied(),
            route_targets: vpn.route_targets.clone(),
            import_targets: vpn.import_targets.clone(),
            export_targets: vpn.export_targets.clone(),
        };
        let (frr_vni_block, frr_vni) = (l2_vni_block(&text), text.config());
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
                frr_vni,
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
