//! The NB driver's `exposing_method = dynamic`: the method is chosen per
//! provider network (a Logical_Switch whose localnet is mapped here) from
//! its networking-bgpvpn annotation: `neutron_bgpvpn:type = l3` → the
//! vrf method ([`crate::nb_evpn`]), `l2` → the l2vni method
//! ([`crate::nb_l2vni`]), no type → underlay ([`crate::nb_underlay`]).
//!
//! Upstream lists the method ("a mix between underlay, l2vni and vrf,
//! depending on the annotations") and refuses it. Here the NB driver's
//! decisions (which IPs are exposed, from which rows) are made once, by
//! the underlay passes; each decision then belongs to the network its
//! wiring lands on (the provider bridge and VLAN of its localnet, the
//! key the vrf method already re-wires by), and each method's builder gets
//! only its networks' decisions. The three coexist on one node: the
//! underlay objects (`bgp_nic`, bridge tables, the VRF leak) and the
//! EVPN VNIs ([`Desired::to_node`] takes the union). docs/evpn.md,
//! "dynamic".

use std::collections::{BTreeMap, BTreeSet};

use obgp_config::Config;
use obgp_netmodel::names::vlan_device;
use obgp_ovn::{BgpVpnType, LogicalSwitch, Snapshot};

use crate::evpn::EvpnL3;
use crate::model::dynamic::{subnet_target, target_of, Target};
pub use crate::model::dynamic::{Dynamic, NetworkChoice, NetworkMethod};
use crate::model::{Desired, RowRef};
use crate::provenance::{Reason, Rejection, Trace};
use crate::wiring::localnet_patch_port;
use crate::DesiredError;

/// The provider networks mapped here and their methods, first by switch
/// uuid on a (bridge, VLAN) two of them share.
fn choose(snap: &Snapshot, config: &Config, notes: &mut Vec<String>) -> Vec<NetworkChoice> {
    let mut by_target: BTreeMap<Target, NetworkChoice> = BTreeMap::new();
    let mut candidates = Vec::new();
    // A switch's first localnet whose physical network is mapped here
    // (as the EVPN methods take it).
    for (ls, localnets) in snap.switches_with_localnets() {
        let mapped = localnets.iter().find_map(|ln| {
            let physnet = ln.localnet_network.as_deref()?;
            let m = snap
                .ovs
                .bridge_mappings
                .iter()
                .find(|m| m.network == physnet)?;
            Some((m.bridge.clone(), ln))
        });
        if let Some((bridge, ln)) = mapped {
            candidates.push((ls, bridge, ln.tag, ln.name.to_string()));
        }
    }
    candidates.sort_by_key(|(ls, _, _, _)| ls.uuid);
    for (ls, bridge, vlan, localnet) in candidates {
        let (method, why) = method_of(ls, config);
        let row = RowRef {
            table: LogicalSwitch::TABLE,
            uuid: ls.uuid,
        };
        let key = (bridge.clone(), vlan);
        if let Some(first) = by_target.get(&key) {
            if first.row != row {
                notes.push(format!(
                    "dynamic: {row} and {} both land on bridge {bridge} vlan {vlan:?}; {} kept",
                    first.row, first.row
                ));
            }
            continue;
        }
        let choice = NetworkChoice {
            switch: ls.name.clone(),
            row,
            bridge,
            vlan,
            localnet,
            method,
            why,
        };
        by_target.insert(key, choice);
    }
    let mut out: Vec<NetworkChoice> = by_target.into_values().collect();
    skip_clashing_vnis(snap, &mut out);
    for n in out.iter().filter(|n| n.method == NetworkMethod::Skipped) {
        notes.push(format!(
            "dynamic: {} ({}) skipped: {}",
            n.row, n.switch, n.why
        ));
    }
    out
}

/// The method `ls`'s annotation asks for, and why.
fn method_of(ls: &LogicalSwitch, config: &Config) -> (NetworkMethod, String) {
    let vpn = match &ls.bgpvpn {
        None => {
            return (
                NetworkMethod::Underlay,
                "no neutron_bgpvpn annotation".into(),
            )
        }
        Some(Err(e)) => return (NetworkMethod::Skipped, format!("bad annotation: {e}")),
        Some(Ok(v)) => v,
    };
    let (method, kind) = match vpn.kind {
        None => {
            return (
                NetworkMethod::Underlay,
                "neutron_bgpvpn annotations without neutron_bgpvpn:type".into(),
            )
        }
        Some(BgpVpnType::L3) => (NetworkMethod::Vrf, "l3"),
        Some(BgpVpnType::L2) => (NetworkMethod::L2vni, "l2"),
    };
    if config.default.evpn_local_ip.is_none() {
        let why = format!(
            "neutron_bgpvpn:type={kind} needs evpn_local_ip (the VXLAN source), which is unset"
        );
        return (NetworkMethod::Skipped, why);
    }
    let why = format!("neutron_bgpvpn:type={kind}, neutron_bgpvpn:vni={}", vpn.vni);
    (method, why)
}

/// An `l2` network whose VNI an `l3` network has is skipped: both would
/// be `br-<vni>`/`vxlan-<vni>`, one in a VRF and one not.
fn skip_clashing_vnis(snap: &Snapshot, networks: &mut [NetworkChoice]) {
    let vni_of = |row: RowRef| {
        snap.bgpvpn_switches()
            .into_iter()
            .find(|s| s.uuid == row.uuid)
            .and_then(|s| s.bgpvpn.as_ref()?.as_ref().ok())
            .map(|v| v.vni)
    };
    let l3: BTreeSet<u32> = networks
        .iter()
        .filter(|n| n.method == NetworkMethod::Vrf)
        .filter_map(|n| vni_of(n.row))
        .collect();
    for n in networks.iter_mut() {
        if n.method != NetworkMethod::L2vni {
            continue;
        }
        if let Some(vni) = vni_of(n.row).filter(|v| l3.contains(v)) {
            n.method = NetworkMethod::Skipped;
            n.why = format!("its l2 VNI {vni} is an l3 network's VNI too");
        }
    }
}

/// `exposing_method = dynamic`: splits the NB driver's decisions in
/// `desired` by the method of the network each lands on, builds the EVPN
/// VNIs of the `l3` and `l2` networks from theirs, and leaves in `desired`
/// the underlay networks' part (its base wiring without the EVPN
/// networks' VLAN devices and MAC-tweak ports, which those methods
/// replace).
pub(crate) fn nb_dynamic(
    snap: &Snapshot,
    config: &Config,
    desired: &mut Desired,
    trace: &mut Trace,
) -> Result<(), DesiredError> {
    let mut notes = Vec::new();
    let networks = choose(snap, config, &mut notes);
    let network_at = |t: &Option<Target>| {
        t.as_ref()
            .and_then(|(b, v)| networks.iter().find(|n| &n.bridge == b && n.vlan == *v))
    };

    // The tenant subnets first: unwired tenant IPs follow theirs.
    let mut parts: BTreeMap<NetworkMethod, Desired> = BTreeMap::new();
    let empty = Desired {
        exposed: BTreeMap::new(),
        tenant_subnets: Vec::new(),
        ..desired.clone()
    };
    for s in &desired.tenant_subnets {
        let t = Some(subnet_target(s, &desired.bridges));
        let method = network_at(&t).map_or(NetworkMethod::Underlay, |n| n.method);
        let part = parts.entry(method).or_insert_with(|| empty.clone());
        part.tenant_subnets.push(s.clone());
    }
    for e in desired.exposed.values() {
        let t = target_of(e, desired.tenant_subnets.iter(), &desired.bridges);
        let network = network_at(&t);
        let method = network.map_or(NetworkMethod::Underlay, |n| n.method);
        if let (NetworkMethod::Skipped, Some(n)) = (method, network) {
            trace.reject(|| {
                let why = n.why.clone();
                Rejection::of(e.source, Reason::NetworkSkipped { why })
                    .ip(e.ip)
                    .network(n.switch.clone())
            });
            continue;
        }
        let part = parts.entry(method).or_insert_with(|| empty.clone());
        part.exposed.insert(e.ip, e.clone());
    }

    let mut evpn = EvpnL3 {
        bridges: crate::nb_evpn::mapped_bridges(snap),
        delete_vrf: config.default.delete_vrf_on_disconnect,
        ..EvpnL3::default()
    };
    let evpn_networks = networks
        .iter()
        .any(|n| matches!(n.method, NetworkMethod::Vrf | NetworkMethod::L2vni));
    if evpn_networks {
        let (_, asn) = crate::nb_evpn::vxlan_source_and_asn(config)?;
        let l3_part = parts.get(&NetworkMethod::Vrf).unwrap_or(&empty);
        let l3 = crate::nb_evpn::vrf_evpn(snap, config, l3_part, &mut notes, trace)?;
        let l2_part = parts.get(&NetworkMethod::L2vni).unwrap_or(&empty);
        let mut l2 = crate::nb_l2vni::l2vni_evpn(snap, config, l2_part, &mut notes, trace)?;
        // The l2 builder serves every `l2` network; the ones skipped here
        // (a VNI an l3 network has) go.
        let skipped: BTreeSet<RowRef> = networks
            .iter()
            .filter(|n| n.method == NetworkMethod::Skipped)
            .map(|n| n.row)
            .collect();
        l2.l2.retain(|_, v| !skipped.contains(&v.network));
        evpn.vnis = l3.vnis;
        evpn.l2_frr_text = crate::nb_l2vni::l2_frr_text(&asn, &l2.l2);
        evpn.l2 = l2.l2;
    }

    let mut dynamic = Dynamic {
        networks,
        ..Dynamic::default()
    };
    for m in [NetworkMethod::Vrf, NetworkMethod::L2vni] {
        if let Some(p) = parts.remove(&m) {
            dynamic.evpn_exposed.extend(p.exposed);
            dynamic.evpn_subnets.extend(p.tenant_subnets);
        }
    }
    let underlay = parts.remove(&NetworkMethod::Underlay).unwrap_or(empty);
    desired.exposed = underlay.exposed;
    desired.tenant_subnets = underlay.tenant_subnets;
    without_evpn_base_wiring(desired, &dynamic.networks);
    // The builders note a bad annotation once each; the underlay pass's
    // deferred MAC-tweak flows of the EVPN networks are not wanted.
    let mut seen = BTreeSet::new();
    notes.retain(|n| seen.insert(n.clone()));
    let evpn_patch_ports: Vec<String> = dynamic
        .networks
        .iter()
        .filter(|n| n.method != NetworkMethod::Underlay)
        .map(|n| localnet_patch_port(&n.localnet))
        .collect();
    desired
        .notes
        .retain(|n| !evpn_patch_ports.iter().any(|p| n.contains(p.as_str())));
    desired.notes.extend(notes);
    desired.evpn = Some(evpn);
    desired.dynamic = Some(dynamic);
    Ok(())
}

/// Drops from the bridges' base wiring what the EVPN (and skipped)
/// networks must not get: the VLAN device of their VLAN (its proxy ARP
/// would answer for the stretched segment's hosts), proxy ARP/NDP on the
/// bridge itself when its flat network is an `l2` one, and the underlay
/// MAC-tweak flow on their localnet's patch port (the vrf method has its
/// own, to the anycast MAC; an L2 network keeps its frames' MACs).
fn without_evpn_base_wiring(desired: &mut Desired, networks: &[NetworkChoice]) {
    for n in networks
        .iter()
        .filter(|n| n.method != NetworkMethod::Underlay)
    {
        for bw in desired.bridges.iter_mut().filter(|b| b.bridge == n.bridge) {
            if let Some(vlan) = n.vlan {
                let dev = vlan_device(&n.bridge, vlan);
                bw.vlans.retain(|v| v.dev != dev);
            }
            bw.mac_tweak_ports.remove(&localnet_patch_port(&n.localnet));
            if n.vlan.is_none() && n.method == NetworkMethod::L2vni {
                bw.flat_l2 = true;
            }
        }
    }
}
