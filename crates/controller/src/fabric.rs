//! `explain`'s and `status`'s fabric side, read live: each prefix the
//! answer announces is looked up in FRR's tables, next to FRR's sessions
//! ([`obgp_ops::fabric`] composes the answer). Where it is looked up
//! follows how it is announced ([`Announced`]): leaked from `bgp_vrf`
//! into the default instance's unicast table, or (the EVPN modes) as a
//! type-5 or type-2 route of the `l2vpn evpn` table. On demand only, each
//! vtysh run within `vtysh_timeout`; a wedged FRR costs one deadline.

use obgp_config::{Config, Driver, ExposingMethod};
use obgp_desired::Desired;
use obgp_netmodel::frr::{BgpSession, EvpnRoute};
use obgp_netmodel::{DevName, IpNet};
use std::collections::BTreeMap;
use std::time::Instant;

use obgp_node::{
    read_advertised, read_bgp_prefix, read_bgp_sessions, read_bgp_table, read_evpn_advertised,
    read_evpn_routes, EvpnRouteType, IoError, KernelConfig,
};

use crate::ops::fabric::evpn::{own_route_keys, EVPN_FAMILY};
use crate::ops::fabric::{
    annotate_status, announced_in, announced_of_exposure, evpn_fabric_side, fabric_side, family_of,
    Announced, EvpnReads, FabricReads, FabricSide, StatusReads,
};
use crate::ops::status::Status;

/// Whether every exposure of the configured mode is an EVPN route (the
/// `vrf` and `l2vni` methods, the SB EVPN driver; `dynamic` mixes).
fn evpn_only(config: &Config) -> bool {
    let d = &config.default;
    matches!(
        (d.driver, d.exposing_method),
        (Driver::OvnEvpnDriver, _) | (_, ExposingMethod::Vrf | ExposingMethod::L2vni)
    )
}

/// FRR's sessions, and why FRR is taken as wedged: a sessions' read that
/// passed its deadline. Then nothing else is asked, so the answer comes
/// within one deadline.
fn sessions_and_wedged(kernel: &KernelConfig) -> (Result<Vec<BgpSession>, String>, Option<String>) {
    let sessions = read_bgp_sessions(kernel);
    let wedged = match &sessions {
        Err(e @ IoError::TimedOut { .. }) => Some(e.to_string()),
        _ => None,
    };
    (sessions.map_err(|e| e.to_string()), wedged)
}

/// The fabric side of each of `prefixes`, looked up by how `desired`
/// announces it ([`announced_in`]). `desired` is the desired state the
/// answer came from; when it could not be computed, the EVPN modes'
/// prefixes are unknown (the underlay modes need it not).
pub fn fabric_sides(
    config: &Config,
    kernel: &KernelConfig,
    desired: Result<&Desired, String>,
    prefixes: &[IpNet],
) -> Vec<FabricSide> {
    if prefixes.is_empty() {
        return Vec::new();
    }
    let bgp_vrf = DevName::new(&config.default.bgp_vrf).ok();
    let (sessions, wedged) = sessions_and_wedged(kernel);
    let guarded =
        |f: &dyn Fn() -> Result<Option<obgp_netmodel::frr::BgpPrefix>, IoError>| match &wedged {
            Some(why) => Err(why.clone()),
            None => f().map_err(|e| e.to_string()),
        };
    // Each EVPN table is read once, when a prefix first needs it.
    let mut evpn_tables: BTreeMap<&str, Result<Vec<EvpnRoute>, String>> = BTreeMap::new();
    let mut evpn_table = |kind: EvpnRouteType| -> Result<Vec<EvpnRoute>, String> {
        let name = if kind == EvpnRouteType::MacIp {
            "macip"
        } else {
            "prefix"
        };
        evpn_tables
            .entry(name)
            .or_insert_with(|| match &wedged {
                Some(why) => Err(why.clone()),
                None => read_evpn_routes(kernel, kind).map_err(|e| e.to_string()),
            })
            .clone()
    };
    let mut out = Vec::new();
    for &prefix in prefixes {
        let announced = match &desired {
            Ok(d) => announced_in(d, prefix),
            Err(why)
                if evpn_only(config)
                    || config.default.exposing_method == ExposingMethod::Dynamic =>
            {
                out.push(FabricSide {
                    prefix,
                    state: obgp_ops::fabric::FabricState::Unknown {
                        why: format!("where it is announced is not known: {why}"),
                    },
                });
                continue;
            }
            Err(_) => Announced::Leaked,
        };
        let side = match &announced {
            Announced::Leaked => {
                let default = guarded(&|| read_bgp_prefix(kernel, None, prefix));
                // The VRF's table tells a missing leak from a missing
                // route; read only when the default instance lacks it.
                let in_vrf = match (&default, &bgp_vrf) {
                    (Ok(None), Some(v)) => {
                        Some((v, guarded(&|| read_bgp_prefix(kernel, Some(v), prefix))))
                    }
                    _ => None,
                };
                fabric_side(&FabricReads {
                    prefix,
                    default: &default,
                    vrf: in_vrf.as_ref().map(|(v, r)| (v.as_str(), r)),
                    sessions: &sessions,
                })
            }
            Announced::Type5 { vrf, .. } => {
                let evpn = evpn_table(EvpnRouteType::Prefix);
                let own = |r: &EvpnRoute| r.local && Some(r.key) == announced.evpn_key(prefix);
                // The VNI's VRF table tells a missing export from a
                // missing route; read only when the EVPN table lacks it.
                let vrf_table = match &evpn {
                    Ok(routes) if !routes.iter().any(own) => {
                        Some(guarded(&|| read_bgp_prefix(kernel, Some(vrf), prefix)))
                    }
                    _ => None,
                };
                evpn_fabric_side(&EvpnReads {
                    prefix,
                    announced: &announced,
                    vrf_table: vrf_table.as_ref(),
                    evpn: &evpn,
                    sessions: &sessions,
                })
            }
            Announced::Type2 { .. } => evpn_fabric_side(&EvpnReads {
                prefix,
                announced: &announced,
                vrf_table: None,
                evpn: &evpn_table(EvpnRouteType::MacIp),
                sessions: &sessions,
            }),
        };
        out.push(side);
    }
    out
}

/// Gives `status`'s exposures their FRR state, read live: for the leaked
/// ones, the default instance's unicast table of each family they have
/// and the routes FRR sent each established peer of that family; for the
/// EVPN ones, the `l2vpn evpn` table's type-2 and/or type-5 routes and the
/// EVPN routes FRR sent each established `l2vpn evpn` peer. On demand only
/// (the `status` command, never the daemon's loop): one vtysh run for the
/// sessions, one per table, one per peer and family, each within
/// `vtysh_timeout`; a wedged FRR costs one deadline.
pub fn annotate_live(config: &Config, kernel: &KernelConfig, status: &mut Status) {
    if status.exposed.is_empty() {
        return;
    }
    let started = Instant::now();
    let announced: Vec<Announced> = status.exposed.iter().map(announced_of_exposure).collect();
    let mut families: Vec<&'static str> = status
        .exposed
        .iter()
        .zip(&announced)
        .filter(|(_, a)| **a == Announced::Leaked)
        .map(|(e, _)| family_of(e.prefix))
        .collect();
    families.sort_unstable();
    families.dedup();
    let needs = |f: fn(&Announced) -> bool| announced.iter().any(f);
    let mut evpn_kinds = Vec::new();
    if needs(|a| matches!(a, Announced::Type2 { .. })) {
        evpn_kinds.push(EvpnRouteType::MacIp);
    }
    if needs(|a| matches!(a, Announced::Type5 { .. })) {
        evpn_kinds.push(EvpnRouteType::Prefix);
    }
    let (sessions, wedged) = sessions_and_wedged(kernel);
    let read = |f: &dyn Fn() -> Result<Vec<IpNet>, IoError>| match &wedged {
        Some(why) => Err(why.clone()),
        None => f()
            .map(|v| v.into_iter().map(|p| p.trunc()).collect())
            .map_err(|e| e.to_string()),
    };
    let established = |family: &str| -> Vec<String> {
        match &sessions {
            Ok(all) => all
                .iter()
                .filter(|s| s.vrf == "default" && s.family == family && s.established())
                .map(|s| s.peer.clone())
                .collect(),
            Err(_) => Vec::new(),
        }
    };
    let mut reads = StatusReads {
        tables: BTreeMap::new(),
        advertised: BTreeMap::new(),
        evpn_routes: None,
        evpn_advertised: BTreeMap::new(),
        took_s: 0.0,
    };
    for &family in &families {
        let cli = if family == "ipv4Unicast" {
            "ipv4"
        } else {
            "ipv6"
        };
        reads
            .tables
            .insert(family, read(&|| read_bgp_table(kernel, cli)));
        for peer in established(family) {
            let a = read(&|| read_advertised(kernel, cli, &peer));
            reads.advertised.insert((peer, family), a);
        }
    }
    if !evpn_kinds.is_empty() {
        let guarded = |f: &dyn Fn() -> Result<_, IoError>| match &wedged {
            Some(why) => Err(why.clone()),
            None => f().map_err(|e: IoError| e.to_string()),
        };
        let mut own = Ok(std::collections::BTreeSet::new());
        for kind in evpn_kinds {
            match (guarded(&|| read_evpn_routes(kernel, kind)), &mut own) {
                (Ok(routes), Ok(keys)) => keys.extend(own_route_keys(&routes)),
                (Err(e), Ok(_)) => own = Err(e),
                (_, Err(_)) => {}
            }
        }
        reads.evpn_routes = Some(own);
        for peer in established(EVPN_FAMILY) {
            let a = match &wedged {
                Some(why) => Err(why.clone()),
                None => read_evpn_advertised(kernel, &peer).map_err(|e| e.to_string()),
            };
            reads.evpn_advertised.insert(peer, a);
        }
    }
    reads.took_s = started.elapsed().as_secs_f64();
    annotate_status(status, &reads);
    // In the EVPN-only modes every exposure is an EVPN route: one without
    // its VNI (a daemon's status from before the VNI was in it) is not
    // looked up, so unknown rather than "not in its table".
    if evpn_only(config) {
        for (e, a) in status.exposed.iter_mut().zip(&announced) {
            if *a == Announced::Leaked {
                e.frr = None;
            }
        }
    }
    if let Err(e) = sessions {
        if let Some(f) = status.fabric.as_mut() {
            f.errors.insert(0, format!("sessions: {e}"));
        }
    }
}
