//! The fabric side in the EVPN modes. An exposure of the `vrf` method
//! (and of the SB EVPN driver) is announced as a type-5 route that FRR
//! makes from the VNI's VRF (`vrf-<vni>`, its BGP instance's unicast
//! table); one of `l2vni` as the bound VM's type-2 (MAC/IP) route, made by
//! zebra from the static FDB entry and neighbour on `br-<vni>`. Both sit
//! in the default instance's `l2vpn evpn` table, whose peers get them.
//! `dynamic` mixes them: each exposure is looked up by its network's
//! method. Pure: the reads are the caller's.

use std::collections::BTreeSet;

use obgp_desired::Desired;
use obgp_netmodel::frr::{BgpPrefix, BgpSession, EvpnRoute, EvpnRouteKey};
use obgp_netmodel::{DevName, IpNet, MacAddr};

use super::{peers_by_advertised, FabricSide, FabricState, StatusReads};
use crate::status::{Exposure, ExposureFrr, FabricRead};

/// FRR's address family key of the EVPN sessions.
pub const EVPN_FAMILY: &str = "l2VpnEvpn";

/// Where FRR announces one exposure from, so where to look it up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Announced {
    /// From `bgp_vrf`, leaked into the default instance (the underlay
    /// modes and `dynamic`'s underlay networks).
    Leaked,
    /// A type-5 route made from the VNI's VRF.
    Type5 { vni: u32, vrf: DevName },
    /// The VM's type-2 route in the VNI.
    Type2 { vni: u32, mac: MacAddr },
}

impl Announced {
    /// The EVPN route that announces `prefix` (`None`: not an EVPN one).
    pub fn evpn_key(&self, prefix: IpNet) -> Option<EvpnRouteKey> {
        match self {
            Announced::Leaked => None,
            Announced::Type5 { .. } => Some(EvpnRouteKey::Prefix(prefix.trunc())),
            Announced::Type2 { mac, .. } => Some(EvpnRouteKey::MacIp {
                mac: *mac,
                ip: prefix.addr(),
            }),
        }
    }
}

/// How the desired state announces `prefix`: a route of an L3 VNI's
/// VRF (its ports' routes, the SB driver's `lo-<vni>` addresses) is a
/// type-5 route, an L2 VNI's host a type-2 one, anything else leaked.
pub fn announced_in(desired: &Desired, prefix: IpNet) -> Announced {
    let Some(evpn) = &desired.evpn else {
        return Announced::Leaked;
    };
    for v in evpn.vnis.values() {
        let routed = v
            .ports
            .iter()
            .flat_map(|p| &p.routes)
            .any(|r| r.dst == prefix);
        let on_lo = v.lo.as_ref().is_some_and(|(_, ips)| ips.contains(&prefix));
        if routed || on_lo {
            return Announced::Type5 {
                vni: v.vni,
                vrf: v.vrf.clone(),
            };
        }
    }
    if prefix.prefix_len() == prefix.max_prefix_len() {
        for v in evpn.l2.values() {
            if let Some(h) = v.hosts.get(&prefix.addr()) {
                return Announced::Type2 {
                    vni: v.vni,
                    mac: h.mac,
                };
            }
        }
    }
    Announced::Leaked
}

/// How `status`'s exposure is announced, from its wiring: a VNI with a
/// MAC is a type-2 route, a VNI alone a type-5 route of its VRF.
pub fn announced_of_exposure(e: &Exposure) -> Announced {
    match (e.wiring.vni, e.wiring.mac) {
        (Some(vni), Some(mac)) => Announced::Type2 { vni, mac },
        (Some(vni), None) => {
            let vrf = e
                .wiring
                .vrf
                .as_deref()
                .and_then(|v| DevName::new(v).ok())
                .or_else(|| DevName::new(&format!("vrf-{vni}")).ok());
            match vrf {
                Some(vrf) => Announced::Type5 { vni, vrf },
                None => Announced::Leaked,
            }
        }
        _ => Announced::Leaked,
    }
}

/// What the caller read for one EVPN exposure.
pub struct EvpnReads<'a> {
    pub prefix: IpNet,
    /// A type-5 or type-2 announcement ([`announced_in`]).
    pub announced: &'a Announced,
    /// Type-5: `prefix` in the VNI's VRF table (its BGP instance).
    pub vrf_table: Option<&'a Result<Option<BgpPrefix>, String>>,
    /// The `l2vpn evpn` table's routes of the announcement's type.
    pub evpn: &'a Result<Vec<EvpnRoute>, String>,
    pub sessions: &'a Result<Vec<BgpSession>, String>,
}

/// The fabric side of one EVPN exposure: this node's route in the `l2vpn
/// evpn` table and the `l2vpn evpn` peers FRR sent it to; for a type-5
/// route missing there, whether the VNI's VRF holds the prefix (the
/// export is missing) or not (FRR has nothing to export). An unread table
/// is "unknown", never "absent".
pub fn evpn_fabric_side(r: &EvpnReads<'_>) -> FabricSide {
    let unknown = |why: &String| FabricSide {
        prefix: r.prefix,
        state: FabricState::Unknown { why: why.clone() },
    };
    let Some(key) = r.announced.evpn_key(r.prefix) else {
        return unknown(&"not an EVPN announcement".to_string());
    };
    let routes = match r.evpn {
        Ok(routes) => routes,
        Err(why) => return unknown(why),
    };
    let state = match routes.iter().find(|route| route.local && route.key == key) {
        Some(route) => {
            let (advertised, not_advertised) =
                peers_by_advertised(&route.advertised_to, "default", EVPN_FAMILY, r.sessions);
            FabricState::InEvpn {
                route: key.to_string(),
                rd: route.rd.clone(),
                vni: route.vni,
                advertised,
                not_advertised,
                sessions_unknown: r.sessions.as_ref().err().cloned(),
            }
        }
        None => match (r.announced, r.vrf_table) {
            (Announced::Type5 { vrf, .. }, Some(Ok(Some(_)))) => FabricState::NotExported {
                vrf: vrf.to_string(),
                route: key.to_string(),
            },
            (Announced::Type5 { .. }, Some(Err(why))) => return unknown(why),
            (Announced::Type5 { vrf, .. }, _) => FabricState::NotInEvpn {
                route: key.to_string(),
                looked_in: vec![format!("{vrf}'s table"), "l2vpn evpn".to_string()],
                hint: "FRR announces nothing for it (the VRF's `redistribute connected` takes it from the VNI's device); `status` shows FRR's last text",
            },
            (Announced::Type2 { vni, .. }, _) => FabricState::NotInEvpn {
                route: key.to_string(),
                looked_in: vec![format!("l2vpn evpn (VNI {vni})")],
                hint: "zebra announces it from the static FDB entry and the permanent neighbour on the VNI's bridge: `status` shows whether the node holds them, and FRR's last text (the VNI's `vni` block)",
            },
            (Announced::Leaked, _) => return unknown(&"not an EVPN announcement".to_string()),
        },
    };
    FabricSide {
        prefix: r.prefix,
        state,
    }
}

/// The EVPN reads' peers and errors, for `status.fabric`.
pub(super) fn note_evpn_reads(fabric: &mut FabricRead, reads: &StatusReads) {
    if let Some(Err(e)) = &reads.evpn_routes {
        fabric.errors.push(format!("l2vpn evpn table: {e}"));
    }
    for (peer, a) in &reads.evpn_advertised {
        match a {
            Ok(_) if !fabric.peers.contains(peer) => fabric.peers.push(peer.clone()),
            Ok(_) => {}
            Err(e) => fabric.errors.push(format!("{peer} l2vpn evpn: {e}")),
        }
    }
}

/// What FRR holds of an exposure announced as `key`: `None` (unknown)
/// when the EVPN table was not read.
pub(super) fn exposure_frr(key: EvpnRouteKey, reads: &StatusReads) -> Option<ExposureFrr> {
    let Some(Ok(own)) = &reads.evpn_routes else {
        return None;
    };
    Some(ExposureFrr {
        in_table: own.contains(&key),
        announced_to: reads
            .evpn_advertised
            .iter()
            .filter(|(_, a)| a.as_ref().is_ok_and(|a| a.contains(&key)))
            .map(|(peer, _)| peer.clone())
            .collect(),
        evpn_route: Some(key.to_string()),
    })
}

/// This node's own routes among `routes`, for [`StatusReads::evpn_routes`].
pub fn own_route_keys(routes: &[EvpnRoute]) -> BTreeSet<EvpnRouteKey> {
    routes.iter().filter(|r| r.local).map(|r| r.key).collect()
}

#[cfg(test)]
mod tests;
