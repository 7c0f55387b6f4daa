//! `explain`'s fabric side, read live: each prefix the answer announces is
//! looked up in FRR's tables, next to FRR's sessions
//! ([`obgp_ops::fabric`] composes the answer). On demand only: one vtysh
//! run for the sessions, then one per prefix (two when the default
//! instance lacks it), each within `vtysh_timeout`; a wedged FRR costs one
//! deadline.

use obgp_config::{Config, Driver, ExposingMethod};
use obgp_netmodel::{DevName, IpNet};
use std::collections::BTreeMap;
use std::time::Instant;

use obgp_node::{
    read_advertised, read_bgp_prefix, read_bgp_sessions, read_bgp_table, KernelConfig,
};

use crate::ops::fabric::{
    annotate_status, fabric_side, family_of, FabricReads, FabricSide, StatusReads,
};
use crate::ops::status::Status;

/// Where the node's announcements sit in FRR, or why they are not looked
/// up.
enum Lookup {
    /// Announced from `bgp_vrf` (`bgp_nic` in it, or its table's routes)
    /// and leaked into the default instance, whose peers get them.
    LeakedFrom(Option<DevName>),
    /// The EVPN modes announce type-5/type-2 routes from the VNIs' VRFs:
    /// not looked up yet.
    Evpn,
}

fn lookup(config: &Config) -> Lookup {
    let d = &config.default;
    match (d.driver, d.exposing_method) {
        (Driver::OvnEvpnDriver, _) => Lookup::Evpn,
        (_, ExposingMethod::Vrf | ExposingMethod::L2vni | ExposingMethod::Dynamic) => Lookup::Evpn,
        _ => Lookup::LeakedFrom(DevName::new(&d.bgp_vrf).ok()),
    }
}

/// The fabric side of each of `prefixes`; empty in the EVPN modes (the
/// caller says so: [`evpn_not_looked_up`]).
pub fn fabric_sides(config: &Config, kernel: &KernelConfig, prefixes: &[IpNet]) -> Vec<FabricSide> {
    let Lookup::LeakedFrom(vrf) = lookup(config) else {
        return Vec::new();
    };
    if prefixes.is_empty() {
        return Vec::new();
    }
    let text = |e: obgp_node::IoError| e.to_string();
    let sessions = read_bgp_sessions(kernel);
    // A FRR that let the sessions' read pass its deadline is wedged: the
    // prefixes are not asked too, so the answer comes within one deadline.
    let wedged = match &sessions {
        Err(e @ obgp_node::IoError::TimedOut { .. }) => Some(e.to_string()),
        _ => None,
    };
    let sessions = sessions.map_err(text);
    prefixes
        .iter()
        .map(|&prefix| {
            let default = match &wedged {
                Some(why) => Err(why.clone()),
                None => read_bgp_prefix(kernel, None, prefix).map_err(text),
            };
            // The VRF's table tells a missing leak from a missing route;
            // read only when the default instance lacks the prefix.
            let in_vrf = match (&default, &vrf) {
                (Ok(None), Some(v)) => {
                    Some((v, read_bgp_prefix(kernel, Some(v), prefix).map_err(text)))
                }
                _ => None,
            };
            fabric_side(&FabricReads {
                prefix,
                default: &default,
                vrf: in_vrf.as_ref().map(|(v, r)| (v.as_str(), r)),
                sessions: &sessions,
            })
        })
        .collect()
}

/// Whether the configured mode's routes are not looked up in FRR (the
/// EVPN modes), for `explain` to say so.
pub fn evpn_not_looked_up(config: &Config) -> bool {
    matches!(lookup(config), Lookup::Evpn)
}

/// Gives `status`'s exposures their FRR state, read live: the default
/// instance's table of each family the exposures have, and the routes FRR
/// sent each established peer of that family. On demand only (the
/// `status` command, never the daemon's loop): one vtysh run for the
/// sessions, one per family, one per peer and family, each within
/// `vtysh_timeout`; a wedged FRR costs one deadline. Nothing in the EVPN
/// modes (their routes are not looked up yet).
pub fn annotate_live(config: &Config, kernel: &KernelConfig, status: &mut Status) {
    if !matches!(lookup(config), Lookup::LeakedFrom(_)) || status.exposed.is_empty() {
        return;
    }
    let started = Instant::now();
    let mut families: Vec<&'static str> =
        status.exposed.iter().map(|e| family_of(e.prefix)).collect();
    families.sort_unstable();
    families.dedup();
    let sessions = read_bgp_sessions(kernel);
    let wedged = match &sessions {
        Err(e @ obgp_node::IoError::TimedOut { .. }) => Some(e.to_string()),
        _ => None,
    };
    let read = |f: &dyn Fn() -> Result<Vec<obgp_netmodel::IpNet>, obgp_node::IoError>| match &wedged
    {
        Some(why) => Err(why.clone()),
        None => f()
            .map(|v| v.into_iter().map(|p| p.trunc()).collect())
            .map_err(|e| e.to_string()),
    };
    let mut reads = StatusReads {
        tables: BTreeMap::new(),
        advertised: BTreeMap::new(),
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
        let Ok(all) = &sessions else { continue };
        for s in all {
            if s.vrf == "default" && s.family == family && s.established() {
                reads.advertised.insert(
                    (s.peer.clone(), family),
                    read(&|| read_advertised(kernel, cli, &s.peer)),
                );
            }
        }
    }
    reads.took_s = started.elapsed().as_secs_f64();
    annotate_status(status, &reads);
    if let Err(e) = sessions {
        if let Some(f) = status.fabric.as_mut() {
            f.errors.insert(0, format!("sessions: {e}"));
        }
    }
}
