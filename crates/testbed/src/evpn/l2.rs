//! The L2 VNI fabric ([`EvpnFabricOptions::l2`]): the segment stretched
//! over the VXLAN, the way the agent's `exposing_method = l2vni` builds
//! the node's side.
//!
//! ```text
//!  node namespace (the agent's)              peer namespace (fabric VTEP)
//!  br-<vni>/vxlan-<vni>, no VRF              br-<vni>/vxlan-<vni>, no VRF (created here)
//!   (created by the code under test)          └─ hp<n> ── veth ── host netns eth0
//!                                              (`add_peer_host`, an address in the
//!                                               stretched subnet)
//!  FRR: advertise-all-vni [+ vni block]      FRR: advertise-all-vni, vni <vni> with
//!                                             the fabric's route targets both ways
//! ```
//!
//! What the routers hold is read from FRR 8.4's JSON: type-2 (MAC/IP) and
//! type-3 (IMET) routes from `show bgp l2vpn evpn route detail type
//! macip|multicast json`, zebra's MAC table of the VNI from `show evpn
//! mac vni <vni> json`.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::{path_vni, run_in, say, EvpnFabric, EvpnFabricOptions, NODE_VTEP, POLL, VXLAN_PORT};
use crate::frr::{ip, FrrRouter, Netns};

/// Creates an L2 VNI's devices in `netns`: `br-<vni>` (no STP, in no VRF)
/// and `vxlan-<vni>` in it ([`super::create_bridge_with_vxlan`]). The
/// peer's side of an L2 fabric, and the node's where a test builds it
/// without the agent.
pub fn create_l2_vni_devices(netns: &str, vni: u32, local: &str, dstport: u16) -> Result<()> {
    super::create_bridge_with_vxlan(netns, vni, local, dstport, None)
}

/// A `vni <vni>` block of `address-family l2vpn evpn` with `route_targets`
/// imported and exported (and `rd` when given); empty without either, so
/// FRR's automatic RD and `<AS>:<VNI>` target hold.
pub fn vni_block(vni: u32, rd: Option<&str>, route_targets: &[String]) -> String {
    if rd.is_none() && route_targets.is_empty() {
        return String::new();
    }
    let mut s = format!("  vni {vni}\n");
    if let Some(rd) = rd {
        s.push_str(&format!("   rd {rd}\n"));
    }
    for rt in route_targets {
        s.push_str(&format!(
            "   route-target import {rt}\n   route-target export {rt}\n"
        ));
    }
    s.push_str("  exit-vni\n");
    s
}

/// The peer's `vni` block: the fabric's route targets both ways, FRR's
/// automatic RD (`<router-id>:<n>`).
pub(super) fn peer_vni_block(opts: &EvpnFabricOptions) -> String {
    vni_block(opts.vni, None, &opts.route_targets)
}

/// One type-2 (MAC/IP advertisement) route path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MacIpRoute {
    pub rd: String,
    /// Lower case, `fa:16:3e:11:11:11`.
    pub mac: String,
    /// The IP of a MAC/IP route; `None` for a MAC-only route.
    pub ip: Option<String>,
    /// The VTEP it points to.
    pub next_hop: String,
    /// Every `RT:` extended community without the prefix, sorted.
    pub route_targets: Vec<String>,
    pub vni: Option<u32>,
}

/// One type-3 (inclusive multicast Ethernet tag) route path: a VTEP's
/// membership of the VNI's flood list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImetRoute {
    pub rd: String,
    /// The originating VTEP (from the prefix).
    pub originator: String,
    pub next_hop: String,
    pub route_targets: Vec<String>,
}

/// One entry of zebra's MAC table of a VNI (`show evpn mac vni <n> json`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvpnMac {
    pub mac: String,
    /// `local` or `remote`.
    pub kind: String,
    /// For a remote MAC: the VTEP behind which it is.
    pub remote_vtep: Option<String>,
    /// For a local MAC: the bridge port it was seen on.
    pub interface: Option<String>,
}

/// Every path of every route of `route_type` (`2`, `3`) in a `show bgp
/// l2vpn evpn route [detail] type ... json` answer (`{RD: {"rd": RD,
/// "[2]:[0]:[48]:[MAC]:[32]:[IP]": {"paths": [[path, ..]]}}, "numPrefix":
/// N}`): (RD, the prefix's fields between brackets, the route, the path).
fn evpn_paths(v: &Value, route_type: u8) -> Vec<(String, Vec<String>, Value, Value)> {
    let mut out = Vec::new();
    let Some(rds) = v.as_object() else {
        return out;
    };
    let head = format!("[{route_type}]:");
    for (rd, entry) in rds {
        let Some(prefixes) = entry.as_object() else {
            continue;
        };
        for (key, route) in prefixes {
            if !key.starts_with(&head) {
                continue;
            }
            // "[2]:[0]:[48]:[fa:16:..]:[32]:[172.24.4.10]": the MAC and an
            // IPv6 address hold ':' but never "]:["
            let fields: Vec<String> = key
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split("]:[")
                .map(str::to_string)
                .collect();
            for path in route["paths"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|p| p.as_array().cloned().unwrap_or_else(|| vec![p.clone()]))
            {
                out.push((rd.clone(), fields.clone(), route.clone(), path));
            }
        }
    }
    out
}

fn route_targets(path: &Value) -> Vec<String> {
    let mut rts: Vec<String> = path["extendedCommunity"]["string"]
        .as_str()
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|c| c.strip_prefix("RT:").map(str::to_string))
        .collect();
    rts.sort();
    rts
}

fn next_hop(path: &Value) -> String {
    path["nexthops"][0]["ip"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The type-2 routes of a `show bgp l2vpn evpn route detail type macip
/// json` answer, one per path.
pub fn macip_routes(v: &Value) -> Vec<MacIpRoute> {
    evpn_paths(v, 2)
        .into_iter()
        .filter_map(|(rd, fields, _route, path)| {
            // [2] [ethtag] [48] [mac] ([iplen] [ip])
            let mac = fields.get(3)?.to_ascii_lowercase();
            let ip = fields.get(5).cloned();
            Some(MacIpRoute {
                rd,
                mac,
                ip,
                next_hop: next_hop(&path),
                route_targets: route_targets(&path),
                vni: path_vni(&path),
            })
        })
        .collect()
}

/// The type-3 routes of a `show bgp l2vpn evpn route detail type
/// multicast json` answer, one per path.
pub fn imet_routes(v: &Value) -> Vec<ImetRoute> {
    evpn_paths(v, 3)
        .into_iter()
        .filter_map(|(rd, fields, _route, path)| {
            // [3] [ethtag] [32] [originator]
            Some(ImetRoute {
                rd,
                originator: fields.get(3)?.clone(),
                next_hop: next_hop(&path),
                route_targets: route_targets(&path),
            })
        })
        .collect()
}

/// The MACs of a `show evpn mac vni <n> json` answer (`{"numMacs": N,
/// "macs": {MAC: {"type": "local"|"remote", "intf"|"remoteVtep": ..}}}`).
pub fn evpn_macs(v: &Value) -> Vec<EvpnMac> {
    let Some(macs) = v["macs"].as_object() else {
        return Vec::new();
    };
    macs.iter()
        .map(|(mac, m)| {
            let s = |k: &str| m[k].as_str().map(str::to_string);
            EvpnMac {
                mac: mac.to_ascii_lowercase(),
                kind: s("type").unwrap_or_default(),
                remote_vtep: s("remoteVtep"),
                interface: s("intf"),
            }
        })
        .collect()
}

/// Makes a host's `eth0` in `netns` silent on its own: IPv6 off (no
/// DAD, router solicitation or MLD frames), so that what it sends from now
/// on is only answers to traffic. Returns its transmitted-packet count,
/// for [`tx_packets`] to show later that it sent nothing in between.
pub fn silence_host(netns: &str) -> Result<u64> {
    for key in ["all", "default", "eth0"] {
        run_in(
            netns,
            "sysctl",
            &["-q", "-w", &format!("net.ipv6.conf.{key}.disable_ipv6=1")],
        )?;
    }
    tx_packets(netns, "eth0")
}

/// The packets `dev` in `netns` has transmitted (`ip -s link`).
pub fn tx_packets(netns: &str, dev: &str) -> Result<u64> {
    let text = ip(&["-n", netns, "-j", "-s", "link", "show", "dev", dev])?;
    let v: Value = serde_json::from_str(&text).with_context(|| format!("ip -s link: {text}"))?;
    v[0]["stats64"]["tx"]["packets"]
        .as_u64()
        .with_context(|| format!("no tx packet count for {dev} in netns {netns}: {text}"))
}

/// A router's type-2 routes.
pub fn router_macip_routes(router: &FrrRouter) -> Result<Vec<MacIpRoute>> {
    Ok(macip_routes(&router.show_json(
        "show bgp l2vpn evpn route detail type macip json",
    )?))
}

/// A router's type-3 routes.
pub fn router_imet_routes(router: &FrrRouter) -> Result<Vec<ImetRoute>> {
    Ok(imet_routes(&router.show_json(
        "show bgp l2vpn evpn route detail type multicast json",
    )?))
}

impl EvpnFabric {
    /// An L2 fabric for VNI `vni` (AS `asn`, route target `rt`) below a
    /// new directory of /tmp named `prefix...`, returned with it (the
    /// fabric's namespaces derive from it): [`EvpnFabric::start`].
    pub fn start_l2(
        prefix: &str,
        vni: u32,
        asn: u32,
        rt: &str,
    ) -> Result<(tempfile::TempDir, EvpnFabric)> {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir_in("/tmp")?;
        let fabric = EvpnFabric::start(dir.path(), &EvpnFabricOptions::l2(vni, asn, rt))?;
        Ok((dir, fabric))
    }

    /// The node's side of L2 VNI `vni` in the agent's order: the
    /// `router bgp <asn>` text with the VNI's block ([`vni_block`])
    /// through vtysh, then the VNI's devices ([`create_l2_vni_devices`]).
    /// Returns the text.
    pub fn node_l2_vni(
        &self,
        asn: u32,
        vni: u32,
        rd: Option<&str>,
        route_targets: &[String],
    ) -> Result<String> {
        let text = format!(
            "router bgp {asn}\n address-family l2vpn evpn\n{} exit-address-family\n",
            vni_block(vni, rd, route_targets)
        );
        let file = self.node.vty_dir().join("l2vni.conf");
        std::fs::write(&file, &text)?;
        self.node.vtysh_file(&file)?;
        create_l2_vni_devices(self.node_netns(), vni, NODE_VTEP, VXLAN_PORT)?;
        Ok(text)
    }

    /// A host on the stretched segment behind the peer: a namespace of its
    /// own whose `eth0` (MAC `mac`, address `cidr`) is a veth into the
    /// peer's `br-<vni>`. Returns the host's namespace name; deleted with
    /// the fabric. L2 fabrics only.
    pub fn add_peer_host(&mut self, mac: &str, cidr: &str) -> Result<String> {
        if !self.opts.l2 {
            bail!("add_peer_host: the fabric's VNI is not an L2 VNI (EvpnFabricOptions::l2)");
        }
        let n = self.hosts.len();
        let name = format!("{}-h{n}", self.peer_ns.0);
        let ns = Netns::add(&name)?;
        let p = self.peer_netns().to_string();
        let (end, br) = (format!("hp{n}"), format!("br-{}", self.opts.vni));
        say(&format!(
            "host behind the peer: netns {name} eth0 {mac} {cidr} <-> {end} in {br} of netns {p}"
        ));
        ip(&[
            "-n", &p, "link", "add", &end, "type", "veth", "peer", "name", "eth0",
        ])?;
        ip(&["-n", &p, "link", "set", "eth0", "netns", &name])?;
        ip(&["-n", &p, "link", "set", &end, "master", &br])?;
        ip(&["-n", &p, "link", "set", &end, "up"])?;
        ip(&["-n", &name, "link", "set", "lo", "up"])?;
        ip(&["-n", &name, "link", "set", "eth0", "address", mac])?;
        ip(&["-n", &name, "addr", "add", cidr, "dev", "eth0"])?;
        ip(&["-n", &name, "link", "set", "eth0", "up"])?;
        self.hosts.push(ns);
        Ok(name)
    }

    /// The peer's type-2 routes that came from the node (next hop
    /// [`EvpnFabric::node_vtep`]) for `mac`, MAC-only and MAC/IP.
    pub fn peer_macip_from_node(&self, mac: &str) -> Result<Vec<MacIpRoute>> {
        let (vtep, mac) = (self.node_vtep(), mac.to_ascii_lowercase());
        Ok(router_macip_routes(&self.peer)?
            .into_iter()
            .filter(|r| r.mac == mac && r.next_hop == vtep)
            .collect())
    }

    /// Waits until the peer has (`present`) or lacks a type-2 route from
    /// the node for `mac` with `ip` (`None`: the MAC-only route); returns
    /// how long it took. The error shows the peer's type-2 table.
    pub fn wait_peer_macip(
        &self,
        mac: &str,
        ip: Option<&str>,
        present: bool,
        timeout: Duration,
    ) -> Result<Duration> {
        let started = Instant::now();
        loop {
            let have = self
                .peer_macip_from_node(mac)?
                .iter()
                .any(|r| r.ip.as_deref() == ip);
            if have == present {
                return Ok(started.elapsed());
            }
            if started.elapsed() > timeout {
                bail!(
                    "the peer still {} the type-2 route {mac} {} from {} after {timeout:?}; its type-2 routes: {:#?}",
                    if present { "lacks" } else { "has" },
                    ip.unwrap_or("(MAC only)"),
                    self.node_vtep(),
                    router_macip_routes(&self.peer)?,
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// zebra's MAC table of the VNI on the peer.
    pub fn peer_evpn_macs(&self) -> Result<Vec<EvpnMac>> {
        let cmd = format!("show evpn mac vni {} json", self.opts.vni);
        Ok(evpn_macs(&self.peer.show_json(&cmd)?))
    }

    /// Waits until `router` has (`present`) or lacks the type-3 route of
    /// VTEP `originator`; returns how long it took.
    pub fn wait_imet(
        &self,
        router: &FrrRouter,
        originator: &str,
        present: bool,
        timeout: Duration,
    ) -> Result<Duration> {
        let started = Instant::now();
        loop {
            let routes = router_imet_routes(router)?;
            if routes.iter().any(|r| r.originator == originator) == present {
                return Ok(started.elapsed());
            }
            if started.elapsed() > timeout {
                bail!(
                    "{} still {} the type-3 route of {originator} after {timeout:?}: {routes:#?}",
                    router.netns(),
                    if present { "lacks" } else { "has" },
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// What the node and the peer know about the stretched segment, for a
    /// failure: `br-<vni>`'s FDB and neighbours, `vxlan-<vni>`'s FDB (the
    /// remote MACs and the flood list), the bridge ports and the hosts'
    /// neighbours.
    pub fn l2_path_evidence(&self) -> String {
        let vni = self.opts.vni;
        let (br, vx) = (format!("br-{vni}"), format!("vxlan-{vni}"));
        let mut out = String::new();
        let mut show = |ns: &str, program: &str, args: &[&str]| {
            let text = Command::new("ip")
                .args(["netns", "exec", ns, program])
                .args(args)
                .output()
                .map(|o| {
                    format!(
                        "{}{}",
                        String::from_utf8_lossy(&o.stdout),
                        String::from_utf8_lossy(&o.stderr)
                    )
                })
                .unwrap_or_else(|e| format!("({e})"));
            out.push_str(&format!(
                "$ netns {ns}: {program} {}\n{text}",
                args.join(" ")
            ));
        };
        for ns in [self.node_netns(), self.peer_netns()] {
            show(ns, "bridge", &["fdb", "show", "br", &br]);
            show(ns, "bridge", &["link", "show"]);
            show(ns, "ip", &["neigh", "show", "dev", &br]);
            show(ns, "bridge", &["fdb", "show", "dev", &vx]);
            show(ns, "ip", &["-br", "link"]);
        }
        for h in &self.hosts {
            show(&h.0, "ip", &["-s", "link", "show", "eth0"]);
            show(&h.0, "ip", &["neigh"]);
        }
        out
    }
}

#[cfg(test)]
mod tests;
