//! The fabric's side of an exposure, for `explain`: whether FRR's tables
//! hold a prefix this node announces, and which BGP peers FRR sent it to.
//! Pure: the reads are the caller's (`obgp_node::read_bgp_prefix` and
//! `read_bgp_sessions`, on demand, never on a reconcile's path).
//!
//! What it reports is FRR's own record on this node: "announced to" is
//! FRR's `advertisedTo`. Whether the peer accepted the route is the peer's
//! business (its inbound policy): ask the peer.
//!
//! The EVPN modes announce routes of the `l2vpn evpn` table instead
//! (type-5 from a VNI's VRF, type-2 for an `l2vni` VM): [`evpn`] says where
//! each exposure is announced and what FRR's EVPN table holds of it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use obgp_netmodel::frr::{BgpPrefix, BgpSession, EvpnRouteKey};
use obgp_netmodel::IpNet;
use serde::Serialize;

use crate::status::render::duration;
use crate::status::{ExposureFrr, FabricRead, Status};

pub mod evpn;
pub use evpn::{announced_in, announced_of_exposure, evpn_fabric_side, Announced, EvpnReads};

/// What the caller read for one prefix.
pub struct FabricReads<'a> {
    pub prefix: IpNet,
    /// The default instance's table: what its peers are sent.
    pub default: &'a Result<Option<BgpPrefix>, String>,
    /// The VRF the node announces from (`bgp_vrf`, leaked into the default
    /// instance), when the mode has one, with its table.
    pub vrf: Option<(&'a str, &'a Result<Option<BgpPrefix>, String>)>,
    pub sessions: &'a Result<Vec<BgpSession>, String>,
}

/// One prefix's fabric side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FabricSide {
    pub prefix: IpNet,
    #[serde(flatten)]
    pub state: FabricState,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "frr", rename_all = "snake_case")]
pub enum FabricState {
    /// FRR could not be read.
    Unknown { why: String },
    /// No table FRR holds has it: FRR announces nothing for it.
    NotInFrr { looked_in: Vec<String> },
    /// In the announcing VRF's table, not in the default instance's: the
    /// VRF leak is missing from FRR.
    NotLeaked { vrf: String },
    /// In the default instance's table; the peers of its family, by
    /// whether FRR sent it to them.
    InTable {
        vrf: String,
        advertised: Vec<PeerState>,
        not_advertised: Vec<PeerState>,
        /// The sessions could not be read (their states are unknown).
        #[serde(skip_serializing_if = "Option::is_none")]
        sessions_unknown: Option<String>,
    },
    /// EVPN: this node's route for it (type-5 or type-2) is in the
    /// default instance's `l2vpn evpn` table; its `l2vpn evpn` peers, by
    /// whether FRR sent it to them.
    InEvpn {
        /// `type-5 route 172.24.4.10/32`, `type-2 route MAC IP`.
        route: String,
        rd: String,
        vni: Option<u32>,
        advertised: Vec<PeerState>,
        not_advertised: Vec<PeerState>,
        #[serde(skip_serializing_if = "Option::is_none")]
        sessions_unknown: Option<String>,
    },
    /// EVPN type-5: in the VNI's VRF table, but FRR has no type-5 route
    /// of this node for it: the VRF's routes are not exported to EVPN.
    NotExported { vrf: String, route: String },
    /// EVPN: this node's route for it is in none of the tables looked in.
    NotInEvpn {
        route: String,
        looked_in: Vec<String>,
        /// What makes FRR hold it, for the next step.
        hint: &'static str,
    },
}

/// A peer and its session, as the last read saw it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PeerState {
    pub peer: String,
    /// `None`: the session is not in the read (or it failed).
    pub state: Option<String>,
    pub uptime_s: Option<f64>,
}

/// FRR's address family key for `prefix`, as the sessions name it.
pub fn family_of(prefix: IpNet) -> &'static str {
    match prefix {
        IpNet::V4(_) => "ipv4Unicast",
        IpNet::V6(_) => "ipv6Unicast",
    }
}

/// The fabric side of one prefix from what was read.
pub fn fabric_side(r: &FabricReads<'_>) -> FabricSide {
    let state = match (r.default, r.vrf) {
        (Err(why), _) => FabricState::Unknown { why: why.clone() },
        (Ok(Some(p)), _) => in_table(p, r),
        (Ok(None), Some((vrf, Ok(Some(_))))) => FabricState::NotLeaked {
            vrf: vrf.to_string(),
        },
        (Ok(None), Some((_, Err(why)))) => FabricState::Unknown { why: why.clone() },
        (Ok(None), vrf) => FabricState::NotInFrr {
            looked_in: std::iter::once("default".to_string())
                .chain(vrf.map(|(v, _)| v.to_string()))
                .collect(),
        },
    };
    FabricSide {
        prefix: r.prefix,
        state,
    }
}

fn in_table(p: &BgpPrefix, r: &FabricReads<'_>) -> FabricState {
    let (advertised, not_advertised) =
        peers_by_advertised(&p.advertised_to, &p.vrf, family_of(r.prefix), r.sessions);
    FabricState::InTable {
        vrf: p.vrf.clone(),
        advertised,
        not_advertised,
        sessions_unknown: r.sessions.as_ref().err().cloned(),
    }
}

/// The peers FRR sent a route to (`advertised_to`) with their sessions,
/// and the other peers of `vrf`'s `family`: (sent, not sent).
pub(crate) fn peers_by_advertised(
    advertised_to: &BTreeSet<String>,
    vrf: &str,
    family: &str,
    sessions: &Result<Vec<BgpSession>, String>,
) -> (Vec<PeerState>, Vec<PeerState>) {
    let sessions: Vec<&BgpSession> = match sessions {
        Ok(all) => all
            .iter()
            .filter(|s| s.vrf == vrf && s.family == family)
            .collect(),
        Err(_) => Vec::new(),
    };
    let state_of = |peer: &str| {
        let s = sessions.iter().find(|s| s.peer == peer);
        PeerState {
            peer: peer.to_string(),
            state: s.map(|s| s.state.clone()),
            uptime_s: s.and_then(|s| s.uptime_s),
        }
    };
    (
        advertised_to.iter().map(|peer| state_of(peer)).collect(),
        sessions
            .iter()
            .filter(|s| !advertised_to.contains(&s.peer))
            .map(|s| state_of(&s.peer))
            .collect(),
    )
}

/// What `status` read of FRR for its exposures: the default instance's
/// tables by family, and the routes FRR sent each established peer; in
/// the EVPN modes, this node's routes of the `l2vpn evpn` table and the
/// EVPN routes FRR sent each established `l2vpn evpn` peer.
pub struct StatusReads {
    /// `ipv4Unicast`/`ipv6Unicast` → the table's prefixes.
    pub tables: BTreeMap<&'static str, Result<BTreeSet<IpNet>, String>>,
    /// (peer, family) → the prefixes FRR sent it.
    pub advertised: BTreeMap<(String, &'static str), Result<BTreeSet<IpNet>, String>>,
    /// This node's own type-2/type-5 routes (`None`: no exposure is
    /// announced as one, not read).
    pub evpn_routes: Option<Result<BTreeSet<EvpnRouteKey>, String>>,
    /// `l2vpn evpn` peer → the EVPN routes FRR sent it.
    pub evpn_advertised: BTreeMap<String, Result<BTreeSet<EvpnRouteKey>, String>>,
    pub took_s: f64,
}

/// Gives each exposure of `status` its FRR state from `reads`: in the
/// table of its family, and the peers FRR sent it to. An exposure whose
/// family's table could not be read gets none (unknown, not absent); a
/// peer whose list could not be read is left out of every exposure's
/// peers, and both are listed in `status.fabric`.
pub fn annotate_status(status: &mut Status, reads: &StatusReads) {
    let mut fabric = FabricRead {
        took_s: reads.took_s,
        ..FabricRead::default()
    };
    for (family, t) in &reads.tables {
        if let Err(e) = t {
            fabric.errors.push(format!("{family} table: {e}"));
        }
    }
    for ((peer, family), a) in &reads.advertised {
        match a {
            Ok(_) if !fabric.peers.contains(peer) => fabric.peers.push(peer.clone()),
            Ok(_) => {}
            Err(e) => fabric.errors.push(format!("{peer} {family}: {e}")),
        }
    }
    evpn::note_evpn_reads(&mut fabric, reads);
    for e in &mut status.exposed {
        if let Some(key) = announced_of_exposure(e).evpn_key(e.prefix) {
            e.frr = evpn::exposure_frr(key, reads);
            continue;
        }
        let family = family_of(e.prefix);
        let Some(Ok(table)) = reads.tables.get(family) else {
            e.frr = None;
            continue;
        };
        let prefix = e.prefix.trunc();
        e.frr = Some(ExposureFrr {
            in_table: table.contains(&prefix),
            announced_to: reads
                .advertised
                .iter()
                .filter(|((_, f), a)| *f == family && a.as_ref().is_ok_and(|a| a.contains(&prefix)))
                .map(|((peer, _), _)| peer.clone())
                .collect(),
            evpn_route: None,
        });
    }
    status.fabric = Some(fabric);
}

impl fmt::Display for PeerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.state, self.uptime_s) {
            (Some(s), Some(up)) if s == "Established" => {
                write!(f, "{} (Established {})", self.peer, duration(up))
            }
            (Some(s), _) if s == "Established" => write!(f, "{} (Established)", self.peer),
            (Some(s), _) => write!(f, "{} (session {s})", self.peer),
            (None, _) => write!(f, "{} (session unknown)", self.peer),
        }
    }
}

impl fmt::Display for FabricSide {
    /// One line, `FRR: <prefix> ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.prefix;
        match &self.state {
            FabricState::Unknown { why } => {
                write!(f, "FRR: {p}: unknown, FRR could not be read: {why}")
            }
            FabricState::NotInFrr { looked_in } => write!(
                f,
                "FRR: {p} is in none of FRR's tables (looked in {}): FRR announces nothing for it; `status` shows FRR's last text",
                looked_in.join(" and ")
            ),
            FabricState::NotLeaked { vrf } => write!(
                f,
                "FRR: {p} is in {vrf}'s table but not in the default instance's: the VRF leak (`import vrf {vrf}`) is missing from FRR; `status` shows FRR's last text"
            ),
            FabricState::InTable {
                vrf,
                advertised,
                not_advertised,
                sessions_unknown,
            } => {
                write!(f, "FRR: {p} is in the {vrf} table")?;
                write_peers(f, advertised, not_advertised, sessions_unknown)
            }
            FabricState::InEvpn {
                route,
                rd,
                vni,
                advertised,
                not_advertised,
                sessions_unknown,
            } => {
                write!(f, "FRR: {p}: its {route} is in the l2vpn evpn table (rd {rd}")?;
                if let Some(vni) = vni {
                    write!(f, ", VNI {vni}")?;
                }
                write!(f, ")")?;
                write_peers(f, advertised, not_advertised, sessions_unknown)
            }
            FabricState::NotExported { vrf, route } => write!(
                f,
                "FRR: {p} is in {vrf}'s table but this node's {route} is not in the l2vpn evpn table: FRR does not export {vrf} to EVPN (`advertise ipv4|ipv6 unicast` of `router bgp ... vrf {vrf}`, or zebra lacks its L3 VNI); `status` shows FRR's last text"
            ),
            FabricState::NotInEvpn {
                route,
                looked_in,
                hint,
            } => write!(
                f,
                "FRR: {p}: this node's {route} is in none of FRR's tables (looked in {}): {hint}",
                looked_in.join(" and ")
            ),
        }
    }
}

/// `; announced to A (Established 3h12m); not to B (session Active)`,
/// and why an established peer was not sent it.
fn write_peers(
    f: &mut fmt::Formatter<'_>,
    advertised: &[PeerState],
    not_advertised: &[PeerState],
    sessions_unknown: &Option<String>,
) -> fmt::Result {
    let list = |peers: &[PeerState]| {
        peers
            .iter()
            .map(PeerState::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match advertised {
        [] => write!(f, "; announced to no peer")?,
        peers => write!(f, "; announced to {}", list(peers))?,
    }
    if !not_advertised.is_empty() {
        write!(f, "; not to {}", list(not_advertised))?;
    }
    let held_back = not_advertised
        .iter()
        .any(|s| s.state.as_deref() == Some("Established"));
    if held_back {
        write!(
            f,
            " (FRR held it back from an established peer: an outbound policy, or not its best path to send)"
        )?;
    }
    if let Some(why) = sessions_unknown {
        write!(f, " (the sessions could not be read: {why})")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
