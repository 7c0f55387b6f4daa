//! `driver = ovn_stretched_l2_bgp_driver` end to end (VM tier: the agent
//! builds the bgp-vrf VRF and the bgp-nic dummy).
//!
//! The real agent in the node namespace of the bench (real Open_vSwitch and
//! OVN_Southbound ovsdb-servers, the node's FRR and an eBGP peer) against
//! stretched-l2-basic.json's SB rows: a router whose gateway (cr-lrp
//! 172.24.4.100/24, 2001:db8::100/64) is bound to another chassis, with a
//! dual-stack router interface (10.0.0.1/24, 2620:52:0:10::1/64). The node
//! does not host the gateway, yet the peer learns the tenant subnets and
//! the provider subnets; deleting the router interface's Port_Binding
//! withdraws them all.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use obgp_e2e::{Bench, BenchOptions};
use serde_json::{json, Value};

const LEARN: Duration = Duration::from_secs(90);
const ROUTER_INTERFACE: &str = "lrp-66666666-6666-4666-8666-666666666666";
const GATEWAY_CHASSIS: &str = "a1b2c3d4-0000-4000-8000-00000000c001";
const ANNOUNCED: [&str; 4] = [
    "10.0.0.0/24",
    "172.24.4.0/24",
    "2001:db8::/64",
    "2620:52:0:10::/64",
];

fn step(t0: Instant, what: &str) {
    println!("stretched-l2 [{:6.1} s] {what}", t0.elapsed().as_secs_f64());
}

/// The demo's Open_vSwitch rows (system-id `demo-chassis`, br-ex), no NB
/// rows, and the scenario's OVN_Southbound rows.
fn topology() -> Result<Value> {
    let demo = obgp_e2e::demo_topology()?;
    let path = obgp_testbed::fixtures_dir().join("conformance/scenarios/stretched-l2-basic.json");
    let sc: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    Ok(json!({
        "OVN_Northbound": {},
        "Open_vSwitch": demo["Open_vSwitch"],
        "OVN_Southbound": sc["ovn"]["OVN_Southbound"],
    }))
}

fn vrf_routes(b: &Bench) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for fam in ["-4", "-6"] {
        // the agent's (proto boot), not the kernel's fe80::/64 or multicast
        for r in b.node_json(&[fam, "route", "show", "table", "10", "proto", "boot"])? {
            let dst = r["dst"].as_str().unwrap_or_default().to_string();
            match r["gateway"].as_str() {
                Some(g) => out.push(format!("{dst} via {g}")),
                None => out.push(dst),
            }
        }
    }
    out.sort();
    Ok(out)
}

#[test]
#[ignore = "vm tier: full agent needs vrf/dummy"]
fn a_node_not_hosting_the_gateway_announces_the_tenant_subnets_until_the_interface_goes(
) -> Result<()> {
    let t0 = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("obgp-e2e-stretched-")
        .tempdir_in("/tmp")?;
    let topo = topology()?;
    let system_id = topo["Open_vSwitch"]
        .as_object()
        .and_then(|t| t.values().next())
        .map(|r| r["external_ids"].to_string())
        .unwrap_or_default();
    ensure!(
        !system_id.contains(GATEWAY_CHASSIS),
        "the node must not be the gateway's chassis: {system_id}"
    );
    let mut b = Bench::start(
        dir.path(),
        &topo,
        &BenchOptions {
            extra_default: "driver = ovn_stretched_l2_bgp_driver\nreconcile_interval = 3"
                .to_string(),
            ..BenchOptions::default()
        },
    )?;
    step(
        t0,
        "bench up: SB + OVS ovsdb-servers, FRR node + peer Established",
    );

    b.start_daemon()?;
    b.wait_peer(&ANNOUNCED, true, LEARN)?;
    step(t0, &format!("peer learned {ANNOUNCED:?}"));
    let routes = vrf_routes(&b)?;
    ensure!(
        routes.contains(&"10.0.0.0/24 via 172.24.4.100".to_string())
            && routes.contains(&"2620:52:0:10::/64 via 2001:db8::100".to_string()),
        "table 10: {routes:?}"
    );
    // the kernel's own IPv6 link-local aside
    let addrs: Vec<String> = b
        .bgp_nic_addrs()?
        .into_iter()
        .filter(|a| !a.starts_with("fe80:"))
        .collect();
    ensure!(
        addrs.is_empty(),
        "no address on bgp-nic in this mode: {addrs:?}"
    );
    step(t0, &format!("table 10 on bgp-nic: {routes:?}"));

    let sb = b.sb.as_ref().context("the bench has OVN_Southbound")?;
    let r = sb.transact(&[json!({
        "op": "delete", "table": "Port_Binding",
        "where": [["logical_port", "==", ROUTER_INTERFACE]],
    })])?;
    ensure!(r[0]["count"].as_u64() == Some(1), "delete: {r:?}");
    step(t0, &format!("deleted Port_Binding {ROUTER_INTERFACE}"));
    let took = b.wait_peer(&ANNOUNCED, false, LEARN)?;
    step(
        t0,
        &format!("peer withdrew them all ({:.1} s)", took.as_secs_f64()),
    );
    let routes = vrf_routes(&b)?;
    ensure!(routes.is_empty(), "table 10 after the removal: {routes:?}");
    Ok(())
}
