//! FRR's BGP sessions, read with `vtysh -c 'show bgp vrf all summary json'`
//! within `vtysh_timeout`: every VRF, address family and peer, with its
//! state and prefix counts. Read in the background, never on a
//! reconcile's path (docs/operations.md, "BGP sessions").

use obgp_netmodel::frr::{BgpPrefix, BgpSession};
use obgp_netmodel::{DevName, IpNet};
use serde_json::Value;

use crate::commands::vtysh;
use crate::config::KernelConfig;
use crate::error::IoError;

mod evpn;
pub use evpn::{read_evpn_advertised, read_evpn_routes, EvpnRouteType};

/// What reads the sessions off the command lane's thread: the lane's
/// vtysh settings ([`crate::CommandLane::bgp_sessions_reader`]).
#[derive(Clone, Debug)]
pub struct BgpSessionsReader {
    pub(crate) config: KernelConfig,
}

impl BgpSessionsReader {
    /// Blocking: runs vtysh (within `vtysh_timeout`).
    pub fn read(&self) -> Result<Vec<BgpSession>, IoError> {
        read_bgp_sessions(&self.config)
    }
}

/// Reads FRR's sessions. A vtysh that fails or passes its deadline is an
/// error: the caller reports the sessions as unknown, never as absent.
pub fn read_bgp_sessions(config: &KernelConfig) -> Result<Vec<BgpSession>, IoError> {
    let out = vtysh(config, &["-c", "show bgp vrf all summary json"])?;
    parse_sessions(&out.stdout)
}

/// `prefix` in the unicast table of FRR's `vrf` (`None`: the default
/// instance): `Ok(None)` when FRR holds no path for it. On demand only
/// (`explain`), one vtysh run within `vtysh_timeout`; `vrf` is a checked
/// device name and `prefix` a parsed one, so nothing else reaches vtysh.
pub fn read_bgp_prefix(
    config: &KernelConfig,
    vrf: Option<&DevName>,
    prefix: IpNet,
) -> Result<Option<BgpPrefix>, IoError> {
    let family = if prefix.addr().is_ipv4() {
        "ipv4"
    } else {
        "ipv6"
    };
    let cmd = match vrf {
        Some(v) => format!("show bgp vrf {v} {family} unicast {prefix} json"),
        None => format!("show bgp {family} unicast {prefix} json"),
    };
    let out = vtysh(config, &["-c", &cmd])?;
    parse_prefix(vrf.map_or("default", DevName::as_str), &out.stdout)
}

/// A `show bgp ... PREFIX json` answer: `{prefix, advertisedTo: {peer:
/// {...}}, paths: [...]}`, or `{}` when FRR holds no path for it.
pub(crate) fn parse_prefix(vrf: &str, json: &[u8]) -> Result<Option<BgpPrefix>, IoError> {
    let v: Value = serde_json::from_slice(json)
        .map_err(|e| IoError::Invalid(format!("show bgp ... json: {e}")))?;
    let paths = v.get("paths").and_then(Value::as_array).map_or(0, Vec::len);
    if paths == 0 {
        return Ok(None);
    }
    let advertised_to = v
        .get("advertisedTo")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.keys())
        .filter(|p| p.parse::<std::net::IpAddr>().is_ok() || DevName::new(p).is_ok())
        .cloned()
        .collect();
    Ok(Some(BgpPrefix {
        vrf: vrf.to_string(),
        paths,
        advertised_to,
    }))
}

/// The prefixes of the default instance's `family` (`ipv4`, `ipv6`)
/// unicast table: `show bgp FAMILY unicast json`. On demand only
/// (`status`): one vtysh run within `vtysh_timeout`, whose answer grows
/// with the table.
pub fn read_bgp_table(config: &KernelConfig, family: &str) -> Result<Vec<IpNet>, IoError> {
    let family = checked_family(family)?;
    let out = vtysh(config, &["-c", &format!("show bgp {family} unicast json")])?;
    prefixes_under(&out.stdout, "routes")
}

/// The prefixes FRR sent to `peer` in the default instance's `family`
/// unicast: `show bgp FAMILY unicast neighbors PEER advertised-routes
/// json`. `peer` must be an IP address or an interface name.
pub fn read_advertised(
    config: &KernelConfig,
    family: &str,
    peer: &str,
) -> Result<Vec<IpNet>, IoError> {
    let family = checked_family(family)?;
    if peer.parse::<std::net::IpAddr>().is_err() && DevName::new(peer).is_err() {
        return Err(IoError::Invalid(peer.to_string()));
    }
    let cmd = format!("show bgp {family} unicast neighbors {peer} advertised-routes json");
    let out = vtysh(config, &["-c", &cmd])?;
    prefixes_under(&out.stdout, "advertisedRoutes")
}

fn checked_family(family: &str) -> Result<&str, IoError> {
    match family {
        "ipv4" | "ipv6" => Ok(family),
        other => Err(IoError::Invalid(other.to_string())),
    }
}

/// The keys of the object `member` of a JSON answer that parse as
/// prefixes (FRR's tables key their routes by prefix).
pub(crate) fn prefixes_under(json: &[u8], member: &str) -> Result<Vec<IpNet>, IoError> {
    let v: Value = serde_json::from_slice(json)
        .map_err(|e| IoError::Invalid(format!("show bgp ... json: {e}")))?;
    Ok(v.get(member)
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.keys())
        .filter_map(|k| k.parse::<IpNet>().ok())
        .collect())
}

/// The sessions of a `show bgp vrf all summary json` answer (FRR 8.4:
/// `{vrf: {family: {peers: {peer: {state, peerUptimeMsec, pfxRcd,
/// pfxSnt, remoteAs}}}}}`). A peer named neither by an IP address nor by
/// a valid interface name is left out (its name would reach labels and
/// texts); a family without peers has none.
pub(crate) fn parse_sessions(json: &[u8]) -> Result<Vec<BgpSession>, IoError> {
    let v: Value = serde_json::from_slice(json)
        .map_err(|e| IoError::Invalid(format!("show bgp vrf all summary json: {e}")))?;
    let mut out = Vec::new();
    let Some(vrfs) = v.as_object() else {
        return Ok(out);
    };
    for (vrf, families) in vrfs {
        if !plain_name(vrf) {
            continue;
        }
        for (family, summary) in families.as_object().into_iter().flatten() {
            let Some(peers) = summary.get("peers").and_then(Value::as_object) else {
                continue;
            };
            for (peer, p) in peers {
                if peer.parse::<std::net::IpAddr>().is_err() && DevName::new(peer).is_err() {
                    tracing::warn!(vrf, family, peer, "BGP peer with an unusable name left out");
                    continue;
                }
                out.push(BgpSession {
                    vrf: vrf.clone(),
                    family: family.clone(),
                    peer: peer.clone(),
                    remote_as: p.get("remoteAs").and_then(Value::as_u64),
                    state: p
                        .get("state")
                        .and_then(Value::as_str)
                        .filter(|s| plain_name(s))
                        .unwrap_or("unknown")
                        .to_string(),
                    uptime_s: p
                        .get("peerUptimeMsec")
                        .and_then(Value::as_u64)
                        .map(|ms| ms as f64 / 1000.0),
                    prefixes_received: p.get("pfxRcd").and_then(Value::as_u64),
                    prefixes_sent: p.get("pfxSnt").and_then(Value::as_u64),
                });
            }
        }
    }
    Ok(out)
}

/// A VRF name, family or state as FRR writes them: short, ASCII
/// letters, digits, `-`, `_` and `.`.
fn plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

#[cfg(test)]
mod tests;
