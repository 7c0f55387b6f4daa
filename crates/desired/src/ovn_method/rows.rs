//! The rows of the node-local NB: the `bgp-router` with its policies and
//! ECMP default routes (BFD), one switch per segment with its localnet
//! and router ports, and a Static_MAC_Binding per announced IP. Names and
//! values are upstream's (`utils/wire.py`, `_ensure_*_ovn`) so a local NB
//! the Python agent filled is adopted, not rebuilt.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;
use obgp_local_cluster::{LocalClusterRows, LocalRow, NbTable, RowKey, Value};
use obgp_netmodel::MacAddr;

use super::LocalFacts;
use crate::local_cluster::Segment;
use crate::model::Desired;

/// The local router (upstream `OVN_CLUSTER_ROUTER`).
pub const ROUTER: &str = "bgp-router";
/// The MAC of the router's internal port (upstream
/// `OVN_CLUSTER_ROUTER_INTERNAL_MAC`): the egress flows' `mod_dl_dst`.
pub const ROUTER_INTERNAL_MAC: MacAddr = MacAddr([0x40, 0x44, 0x00, 0x00, 0x00, 0x06]);
/// The priority of the reroute policies.
pub const ROUTER_POLICY_PRIORITY: i64 = 10;

/// The router port of the internal segment (upstream's fixed name).
pub fn internal_router_port() -> String {
    format!("{ROUTER}-openstack")
}

/// The name upstream's `lrp_set_gateway_chassis` (ovsdbapp) gives the row,
/// so a Python agent's row is found again (`ovn-nbctl` would say
/// `<port>-<chassis>`).
pub fn gateway_chassis_name(port: &str, chassis: &str) -> String {
    format!("{port}_{chassis}")
}

pub(super) struct RowInputs<'a> {
    pub segments: &'a [Segment],
    pub peers: &'a [IpAddr],
    pub pool: &'a [IpNet],
    pub chassis: &'a str,
    pub local: &'a LocalFacts,
    pub exposure: &'a Desired,
}

/// What the OVS side needs from the rows built.
#[derive(Default)]
pub(super) struct Built {
    /// The MAC of each external segment's router port, by network.
    pub external_macs: BTreeMap<String, MacAddr>,
}

fn s(v: impl Into<String>) -> Value {
    Value::Str(v.into())
}

/// A router port with its gateway chassis, attached to the router.
fn router_port(
    nb: &mut LocalClusterRows,
    router: &RowKey,
    name: &str,
    mac: MacAddr,
    networks: Vec<String>,
    chassis: &str,
) -> RowKey {
    let gc = nb.insert(LocalRow::new(
        NbTable::GatewayChassis,
        None,
        vec![
            ("name", s(gateway_chassis_name(name, chassis))),
            ("chassis_name", s(chassis)),
            ("priority", Value::Int(1)),
        ],
    ));
    let lrp = nb.insert(LocalRow::new(
        NbTable::LogicalRouterPort,
        None,
        vec![
            ("name", s(name)),
            ("mac", s(mac.to_string())),
            ("networks", Value::set(networks)),
            ("peer", Value::set::<[String; 0], String>([])),
        ],
    ));
    nb.adopt(&lrp, "gateway_chassis", gc);
    nb.adopt(router, "ports", lrp.clone());
    lrp
}

/// A switch with its localnet port and the port facing `router_port`.
fn switch(
    nb: &mut LocalClusterRows,
    seg: &Segment,
    lsp_name: &str,
    router_port: &str,
    arp_proxy: Option<&str>,
) {
    let ls = nb.insert(LocalRow::new(
        NbTable::LogicalSwitch,
        None,
        vec![("name", s(&seg.network))],
    ));
    let localnet = nb.insert(LocalRow::new(
        NbTable::LogicalSwitchPort,
        None,
        vec![
            ("name", s(format!("{}-localnet", seg.network))),
            ("type", s("localnet")),
            ("addresses", Value::set(["unknown"])),
            (
                "options",
                Value::map([("network_name", seg.network.as_str())]),
            ),
            ("tag", Value::OptInt(seg.vlan.map(i64::from))),
        ],
    ));
    let mut options = vec![("router-port", router_port.to_string())];
    if let Some(cidrs) = arp_proxy {
        options.push(("arp_proxy", cidrs.to_string()));
    }
    let rport = nb.insert(LocalRow::new(
        NbTable::LogicalSwitchPort,
        None,
        vec![
            ("name", s(lsp_name)),
            ("type", s("router")),
            ("addresses", Value::set(["router"])),
            ("options", Value::map(options)),
        ],
    ));
    nb.adopt(&ls, "ports", localnet);
    nb.adopt(&ls, "ports", rport);
}

/// The external router port's networks: the bridge's first IPv4 address
/// and first global IPv6 address (upstream: the first address only).
fn external_networks(addrs: &[IpNet]) -> Vec<String> {
    let v4 = addrs.iter().find(|a| a.addr().is_ipv4());
    let v6 = addrs.iter().find(|a| match a.addr() {
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) != 0xfe80,
        IpAddr::V4(_) => false,
    });
    v4.into_iter().chain(v6).map(|a| a.to_string()).collect()
}

pub(super) fn build(nb: &mut LocalClusterRows, inp: RowInputs, notes: &mut Vec<String>) -> Built {
    let mut built = Built::default();
    let router = nb.insert(LocalRow::new(
        NbTable::LogicalRouter,
        None,
        vec![("name", s(ROUTER))],
    ));
    let internal_port = internal_router_port();
    let mut external_ports = Vec::new();
    for seg in inp.segments {
        if seg.internal {
            let pool: Vec<String> = inp.pool.iter().map(|p| p.to_string()).collect();
            router_port(
                nb,
                &router,
                &internal_port,
                ROUTER_INTERNAL_MAC,
                pool.clone(),
                inp.chassis,
            );
            switch(
                nb,
                seg,
                &format!("openstack-{ROUTER}"),
                &internal_port,
                Some(&pool.join(" ")),
            );
            continue;
        }
        let facts = inp.local.bridges.get(seg.bridge.as_str());
        let (Some(mac), networks) = (
            facts.and_then(|f| f.mac),
            facts
                .map(|f| external_networks(&f.addrs))
                .unwrap_or_default(),
        ) else {
            notes.push(format!(
                "bridge {}: its MAC is unknown: no router port for segment {}",
                seg.bridge, seg.network
            ));
            continue;
        };
        if networks.is_empty() {
            notes.push(format!(
                "bridge {}: no address to give router port {ROUTER}-{}",
                seg.bridge, seg.network
            ));
            continue;
        }
        let port = format!("{ROUTER}-{}", seg.network);
        router_port(nb, &router, &port, mac, networks.clone(), inp.chassis);
        switch(nb, seg, &format!("{}-{ROUTER}", seg.network), &port, None);
        built.external_macs.insert(seg.network.clone(), mac);
        external_ports.push((port, networks));
    }
    if inp.peers.is_empty() {
        notes.push("peer_ips is empty: no reroute policy and no default route".into());
    }
    policies(nb, &router, &internal_port, inp.peers);
    default_routes(nb, &router, &external_ports, inp.peers, notes);
    if inp.segments.iter().any(|s| s.internal) {
        static_mac_bindings(nb, &internal_port, inp.exposure, notes);
    }
    built
}

/// Traffic entering from OpenStack is rerouted to the peers (ECMP). With
/// IPv4 peers only, upstream's one policy (`inport=="bgp-router-openstack"`,
/// adopted as is); with IPv6 peers, one per family, each matching its
/// family (a reroute's next hops must be of the packet's family).
fn policies(nb: &mut LocalClusterRows, router: &RowKey, internal_port: &str, peers: &[IpAddr]) {
    let v4: Vec<String> = peers
        .iter()
        .filter(|p| p.is_ipv4())
        .map(|p| p.to_string())
        .collect();
    let v6: Vec<String> = peers
        .iter()
        .filter(|p| p.is_ipv6())
        .map(|p| p.to_string())
        .collect();
    let base = format!("inport==\"{internal_port}\"");
    let families: Vec<(String, Vec<String>)> = if v6.is_empty() {
        vec![(base, v4)]
    } else {
        vec![
            (format!("{base} && ip4"), v4),
            (format!("{base} && ip6"), v6),
        ]
    };
    for (m, hops) in families.into_iter().filter(|(_, h)| !h.is_empty()) {
        let p = nb.insert(LocalRow::new(
            NbTable::LogicalRouterPolicy,
            Some(ROUTER),
            vec![
                ("priority", Value::Int(ROUTER_POLICY_PRIORITY)),
                ("match", s(m)),
                ("action", s("reroute")),
                ("nexthops", Value::set(hops)),
                ("nexthop", Value::set::<[String; 0], String>([])),
            ],
        ));
        nb.adopt(router, "policies", p);
    }
}

/// One default route (`0.0.0.0/0` or `::/0`) per peer, ECMP, each watched
/// by BFD from the external port that reaches it: the peer whose address
/// lies in a port's networks, else the peer of the same position
/// (upstream pairs peers and ports by position).
fn default_routes(
    nb: &mut LocalClusterRows,
    router: &RowKey,
    ports: &[(String, Vec<String>)],
    peers: &[IpAddr],
    notes: &mut Vec<String>,
) {
    for (i, peer) in peers.iter().enumerate() {
        let on_link = ports.iter().find(|(_, nets)| {
            nets.iter()
                .filter_map(|n| n.parse::<IpNet>().ok())
                .any(|n| n.contains(peer))
        });
        let Some((port, _)) = on_link.or_else(|| ports.get(i)) else {
            notes.push(format!(
                "peer {peer}: no external router port reaches it: no default route"
            ));
            continue;
        };
        let bfd = nb.insert(LocalRow::new(
            NbTable::Bfd,
            None,
            vec![("logical_port", s(port)), ("dst_ip", s(peer.to_string()))],
        ));
        let prefix = if peer.is_ipv4() { "0.0.0.0/0" } else { "::/0" };
        let route = nb.insert(LocalRow::new(
            NbTable::LogicalRouterStaticRoute,
            Some(ROUTER),
            vec![
                ("ip_prefix", s(prefix)),
                ("nexthop", s(peer.to_string())),
                // ovsdbapp's lr_route_add writes it; the default anyway.
                ("policy", Value::set(["dst-ip"])),
                ("bfd", Value::Ref(Some(bfd))),
            ],
        ));
        nb.adopt(router, "static_routes", route);
    }
}

/// Per announced IP with a MAC, the binding that makes the router send to
/// the port's MAC rather than resolve it through the proxy-ARP port.
fn static_mac_bindings(
    nb: &mut LocalClusterRows,
    port: &str,
    exposure: &Desired,
    notes: &mut Vec<String>,
) {
    for (ip, e) in &exposure.exposed {
        let Some(mac) = e.wiring.as_ref().and_then(|w| w.lladdr) else {
            notes.push(format!(
                "{ip} ({}): no MAC known: no Static_MAC_Binding",
                e.source
            ));
            continue;
        };
        nb.insert(LocalRow::new(
            NbTable::StaticMacBinding,
            None,
            vec![
                ("logical_port", s(port)),
                ("ip", s(ip.to_string())),
                ("mac", s(mac.to_string())),
                ("override_dynamic_mac", Value::Bool(true)),
            ],
        ));
    }
}
