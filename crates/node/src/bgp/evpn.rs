//! FRR's `l2vpn evpn` table, for the EVPN modes' fabric side: the type-2
//! and type-5 routes it holds (with the peers it sent each to), and the
//! routes it sent one peer. On demand only (`status`, `explain`), one
//! vtysh run each within `vtysh_timeout`; the only value put into a
//! command is a peer already checked as an IP address or interface name.

use std::collections::BTreeSet;

use obgp_netmodel::frr::{EvpnRoute, EvpnRouteKey};
use obgp_netmodel::DevName;
use serde_json::Value;

use crate::commands::vtysh;
use crate::config::KernelConfig;
use crate::error::IoError;

/// Which EVPN routes to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvpnRouteType {
    /// Type-2: a VM's MAC/IP (`exposing_method = l2vni`).
    MacIp,
    /// Type-5: an IP prefix of a VNI's VRF (`exposing_method = vrf`, the
    /// SB EVPN driver).
    Prefix,
}

/// Every route of `kind` in the default instance's `l2vpn evpn` table,
/// this node's and those other VTEPs sent: `show bgp l2vpn evpn route
/// detail type macip|prefix json`. The answer grows with the fabric's
/// EVPN table (every VTEP's routes of that type).
pub fn read_evpn_routes(
    config: &KernelConfig,
    kind: EvpnRouteType,
) -> Result<Vec<EvpnRoute>, IoError> {
    let t = match kind {
        EvpnRouteType::MacIp => "macip",
        EvpnRouteType::Prefix => "prefix",
    };
    let cmd = format!("show bgp l2vpn evpn route detail type {t} json");
    let out = vtysh(config, &["-c", &cmd])?;
    parse_evpn_routes(&out.stdout)
}

/// The type-2 (with an IP) and type-5 routes FRR sent `peer` over
/// `l2vpn evpn`: `show bgp l2vpn evpn neighbors PEER advertised-routes
/// json`. `peer` must be an IP address or an interface name.
pub fn read_evpn_advertised(
    config: &KernelConfig,
    peer: &str,
) -> Result<BTreeSet<EvpnRouteKey>, IoError> {
    if peer.parse::<std::net::IpAddr>().is_err() && DevName::new(peer).is_err() {
        return Err(IoError::Invalid(format!("BGP peer {peer:?}")));
    }
    let cmd = format!("show bgp l2vpn evpn neighbors {peer} advertised-routes json");
    let out = vtysh(config, &["-c", &cmd])?;
    parse_evpn_advertised(&out.stdout)
}

/// A `show bgp l2vpn evpn route detail type ... json` answer (FRR 8.4):
/// `{RD: {"rd": RD, KEY: {advertisedTo: {peer: {..}}, paths: [[path..]]}},
/// "numPrefix": N}`. Members whose key is no type-2-with-IP or type-5
/// route are skipped.
pub(crate) fn parse_evpn_routes(json: &[u8]) -> Result<Vec<EvpnRoute>, IoError> {
    let v: Value = serde_json::from_slice(json)
        .map_err(|e| IoError::Invalid(format!("show bgp l2vpn evpn route ... json: {e}")))?;
    let mut out = Vec::new();
    for (rd, routes) in v.as_object().into_iter().flatten() {
        for (key, route) in routes.as_object().into_iter().flatten() {
            let Some(key) = EvpnRouteKey::of_frr_key(key) else {
                continue;
            };
            let paths: Vec<&Value> = route
                .get("paths")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .flat_map(|p| match p.as_array() {
                    Some(inner) => inner.iter().collect(),
                    None => vec![p],
                })
                .collect();
            if paths.is_empty() {
                continue;
            }
            out.push(EvpnRoute {
                rd: rd.clone(),
                key,
                local: paths.iter().any(|p| own_path(p)),
                vni: paths.first().and_then(|p| path_vni(p)),
                advertised_to: peers_of(route.get("advertisedTo")),
            });
        }
    }
    Ok(out)
}

/// A `show bgp l2vpn evpn neighbors PEER advertised-routes json` answer
/// (FRR 8.4): `{advertisedRoutes: {RD: {"rd": RD, KEY: {..}}}, ..}`.
pub(crate) fn parse_evpn_advertised(json: &[u8]) -> Result<BTreeSet<EvpnRouteKey>, IoError> {
    let v: Value = serde_json::from_slice(json).map_err(|e| {
        IoError::Invalid(format!(
            "show bgp l2vpn evpn neighbors ... advertised-routes json: {e}"
        ))
    })?;
    Ok(v.get("advertisedRoutes")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .flat_map(|(_, routes)| routes.as_object().into_iter().flatten())
        .filter_map(|(key, _)| EvpnRouteKey::of_frr_key(key))
        .collect())
}

/// FRR marks this node's own paths `local`/`sourced` in the detail JSON;
/// a path from no peer (`peerId` 0.0.0.0, `::` or `(unspec)`) is also one.
fn own_path(p: &Value) -> bool {
    let flag = |k: &str| p.get(k).and_then(Value::as_bool) == Some(true);
    let peer = p
        .pointer("/peer/peerId")
        .or_else(|| p.get("peerId"))
        .and_then(Value::as_str);
    flag("local") || flag("sourced") || matches!(peer, Some("0.0.0.0" | "::" | "(unspec)"))
}

/// The VNI of a path: FRR 8.4 writes it as a string (`"vni":"1001"`).
fn path_vni(p: &Value) -> Option<u32> {
    let v = p.get("vni")?;
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .or_else(|| v.as_str()?.parse().ok())
}

/// The keys of an `advertisedTo` object that name a peer (an IP address
/// or an interface name).
fn peers_of(v: Option<&Value>) -> BTreeSet<String> {
    v.and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.keys())
        .filter(|p| p.parse::<std::net::IpAddr>().is_ok() || DevName::new(p).is_ok())
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests;
