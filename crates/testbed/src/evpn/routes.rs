//! What the routers and kernels of an [`EvpnFabric`](super::EvpnFabric)
//! hold, read from FRR 8.4's JSON and `ip -j`: type-5 routes and VRF
//! tables.

use anyhow::{Context, Result};
use serde_json::Value;

/// One type-5 (IP prefix) route of a router's `show bgp l2vpn evpn route
/// detail type prefix json`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Type5Route {
    /// The route distinguisher it was advertised under.
    pub rd: String,
    /// `172.24.4.10/32`, `2001:db8::10/128`.
    pub prefix: String,
    /// The VTEP it points to.
    pub next_hop: String,
    /// Every `RT:` extended community, without the prefix (`64999:1001`),
    /// sorted.
    pub route_targets: Vec<String>,
    /// The VNI (label) the route carries, when FRR shows it.
    pub vni: Option<u32>,
    /// The advertiser's router MAC (`Rmac:` community).
    pub rmac: Option<String>,
}

/// A route of a kernel VRF table (`ip -j route show vrf NAME`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRoute {
    pub dst: String,
    pub dev: Option<String>,
    pub gateway: Option<String>,
    pub protocol: Option<String>,
}

/// The type-5 routes of a `show bgp l2vpn evpn route [detail] type prefix
/// json` answer: `{RD: {"rd": RD, "[5]:[0]:[32]:[IP]": {"paths": [[path,
/// ..]]}}, "numPrefix": N, ..}`, one entry per path.
pub fn type5_routes(v: &Value) -> Vec<Type5Route> {
    let mut out = Vec::new();
    let Some(rds) = v.as_object() else {
        return out;
    };
    for (rd, entry) in rds {
        let Some(prefixes) = entry.as_object() else {
            continue;
        };
        for (key, route) in prefixes {
            if !key.starts_with("[5]") {
                continue;
            }
            for path in route["paths"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|p| p.as_array().cloned().unwrap_or_else(|| vec![p.clone()]))
            {
                // the detail answer has them on the prefix, the brief one on
                // each path
                let field = |k: &str| route.get(k).or_else(|| path.get(k)).cloned();
                let (Some(ip), Some(len)) = (
                    field("ip").and_then(|v| v.as_str().map(str::to_string)),
                    field("ipLen").and_then(|v| v.as_u64()),
                ) else {
                    continue;
                };
                let communities = path["extendedCommunity"]["string"]
                    .as_str()
                    .unwrap_or_default();
                let mut route_targets: Vec<String> = communities
                    .split_whitespace()
                    .filter_map(|c| c.strip_prefix("RT:").map(str::to_string))
                    .collect();
                route_targets.sort();
                let rmac = communities
                    .split_whitespace()
                    .find_map(|c| c.strip_prefix("Rmac:").map(str::to_string));
                let next_hop = path["nexthops"][0]["ip"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                out.push(Type5Route {
                    rd: rd.clone(),
                    prefix: format!("{ip}/{len}"),
                    next_hop,
                    route_targets,
                    vni: path_vni(&path),
                    rmac,
                });
            }
        }
    }
    out
}

/// The VNI of a path: FRR's detail JSON shows the label as `"vni"` (a
/// number or a string, by version).
pub(crate) fn path_vni(path: &Value) -> Option<u32> {
    let v = path.get("vni")?;
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .or_else(|| v.as_str()?.parse().ok())
}

pub(crate) fn kernel_routes(text: &str) -> Result<Vec<KernelRoute>> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let v: Value = serde_json::from_str(text).with_context(|| format!("ip -j route: {text}"))?;
    let s = |r: &Value, k: &str| r[k].as_str().map(str::to_string);
    Ok(v.as_array()
        .into_iter()
        .flatten()
        .map(|r| KernelRoute {
            dst: s(r, "dst").unwrap_or_default(),
            dev: s(r, "dev"),
            gateway: s(r, "gateway"),
            protocol: s(r, "protocol"),
        })
        .collect())
}

/// Whether a `show bgp ipv4|ipv6 unicast json` answer (`{"routes":
/// {PREFIX: [path, ..]}}`, each path with `"nexthops": [{"ip": ..}]`) has
/// a path for `prefix` through `next_hop`.
pub fn unicast_has_path_via(v: &Value, prefix: &str, next_hop: &str) -> bool {
    v["routes"][prefix]
        .as_array()
        .into_iter()
        .flatten()
        .any(|path| {
            path["nexthops"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|h| h["ip"] == next_hop)
        })
}
