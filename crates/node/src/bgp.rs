//! FRR's BGP sessions, read with `vtysh -c 'show bgp vrf all summary json'`
//! within `vtysh_timeout`: every VRF, address family and peer, with its
//! state and prefix counts. Read in the background, never on a
//! reconcile's path (docs/operations.md, "BGP sessions").

use obgp_netmodel::frr::BgpSession;
use obgp_netmodel::DevName;
use serde_json::Value;

use crate::commands::vtysh;
use crate::config::KernelConfig;
use crate::error::IoError;

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
