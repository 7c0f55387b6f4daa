//! The L2 EVPN fabric on the CI kernel (bridge, veth and vxlan are all it
//! needs): two VTEPs with real FRR, the node's side built here by hand the
//! way `exposing_method = l2vni` builds it. It proves what the agent's
//! l2vni method relies on (docs/evpn.md, "EVPN L2"):
//!
//! - a static FDB entry for a VM's MAC on the bridge port towards it plus
//!   a permanent neighbour on `br-<vni>` make the node's zebra announce a
//!   MAC/IP (type-2) route, with the `vni` block's RD and route target,
//!   before the VM has sent a single frame;
//! - type-3 (IMET) routes go both ways, and a host behind the peer's
//!   bridge reaches the VM at L2 across the VXLAN;
//! - deleting the neighbour and the FDB entry withdraws both routes.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use obgp_testbed::evpn::l2;
use obgp_testbed::evpn::{EvpnFabric, NODE_VTEP, PEER_VTEP};

/// Bound of every wait; only a failure waits this long.
const WAIT: Duration = Duration::from_secs(60);
const VNI: u32 = 1001;
const ASN: u32 = 64999;
const RD: &str = "64999:1001";
const RT: &str = "64512:1001";
const VM_MAC: &str = "fa:16:3e:11:11:11";
const VM4: &str = "172.24.4.10";
const PEER_HOST_MAC: &str = "fa:16:3e:22:22:22";
const PEER_HOST4: &str = "172.24.4.20";
/// The node's bridge port towards the VM (the agent's would be the
/// provider veth end `vrf<ln[:11]>`).
const VM_PORT: &str = "vm1n";

fn step(t0: Instant, what: &str) {
    println!("evpn-l2 [{:6.1} s] {what}", t0.elapsed().as_secs_f64());
}

#[test]
fn static_fdb_and_neighbour_give_type2_before_traffic_and_an_l2_path() -> Result<()> {
    let t0 = Instant::now();
    let (_dir, mut f) = EvpnFabric::start_l2("obgp-evpn-l2-", VNI, ASN, RT)?;
    step(t0, "L2 fabric up, l2vpn evpn Established");
    let result = node_side_and_checks(t0, &mut f);
    result.with_context(|| {
        format!(
            "--- node FRR ---\n{}\n--- the segment ---\n{}",
            f.node.logs(),
            f.l2_path_evidence()
        )
    })
}

fn node_side_and_checks(t0: Instant, f: &mut EvpnFabric) -> Result<()> {
    // the FRR text first, then the devices (as the agent orders them)
    let text = f.node_l2_vni(ASN, VNI, Some(RD), &[RT.to_string()])?;
    println!("evpn-l2: node FRR: vtysh -f\n{text}");
    let br = format!("br-{VNI}");
    let vm_ns = f.add_host(VM_PORT, VM_MAC, &format!("{VM4}/24"), PEER_HOST4)?;
    // whatever the VM sent so far did not reach the bridge; from here on
    // it sends nothing until it is pinged
    let vm_tx = l2::silence_host(&vm_ns)?;
    f.node_ip(&["link", "set", VM_PORT, "master", &br])?;
    // before the VM sends anything: the static FDB entry and the neighbour
    for args in [
        &["fdb", "replace", VM_MAC, "dev", VM_PORT, "master", "static"][..],
        &["link", "show", "dev", VM_PORT][..],
    ] {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", f.node_netns(), "bridge"])
            .args(args)
            .output()?;
        ensure!(out.status.success(), "bridge {args:?}: {out:?}");
    }
    f.node_ip(&[
        "neigh",
        "replace",
        VM4,
        "lladdr",
        VM_MAC,
        "dev",
        &br,
        "nud",
        "permanent",
    ])?;
    step(
        t0,
        &format!("node: {br}, vxlan-{VNI}, {VM_PORT} (VM netns {vm_ns}); static FDB {VM_MAC} on {VM_PORT}, neighbour {VM4} on {br}"),
    );

    let took = f.wait_peer_macip(VM_MAC, Some(VM4), true, WAIT)?;
    let routes = f.peer_macip_from_node(VM_MAC)?;
    println!("evpn-l2: the peer's type-2 routes from the node: {routes:#?}");
    let r = routes
        .iter()
        .find(|r| r.ip.as_deref() == Some(VM4))
        .context("no MAC/IP route")?;
    ensure!(r.rd == RD, "RD {} instead of {RD}", r.rd);
    ensure!(
        r.route_targets == [RT],
        "route targets {:?} instead of [{RT}]",
        r.route_targets
    );
    ensure!(r.vni == Some(VNI), "VNI {:?}", r.vni);
    step(
        t0,
        &format!(
            "peer: [2] {VM_MAC} {VM4} rd {RD} RT {RT} from {NODE_VTEP} before any traffic ({:.1} s)",
            took.as_secs_f64()
        ),
    );
    let macs = f.peer_evpn_macs()?;
    ensure!(
        macs.iter().any(|m| m.mac == VM_MAC
            && m.kind == "remote"
            && m.remote_vtep.as_deref() == Some(NODE_VTEP)),
        "the peer's zebra has no remote {VM_MAC} behind {NODE_VTEP}: {macs:#?}"
    );
    step(
        t0,
        &format!("peer's zebra: {VM_MAC} remote via {NODE_VTEP}"),
    );
    let sent = l2::tx_packets(&vm_ns, "eth0")? - vm_tx;
    ensure!(
        sent == 0,
        "the VM sent {sent} frames before its route was seen: not a before-traffic proof"
    );
    step(t0, "the VM has sent nothing so far");

    f.wait_imet(&f.peer, NODE_VTEP, true, WAIT)?;
    f.wait_imet(&f.node, PEER_VTEP, true, WAIT)?;
    println!(
        "evpn-l2: the peer's type-3 routes: {:#?}",
        l2::router_imet_routes(&f.peer)?
    );
    step(t0, "type-3 both ways");

    let host_ns = f.add_peer_host(PEER_HOST_MAC, &format!("{PEER_HOST4}/24"))?;
    let ping = obgp_testbed::evpn::ping(&host_ns, None, VM4, WAIT)?;
    step(
        t0,
        &format!(
            "ping from the host behind the peer's {br} to {VM4} across the VXLAN: {}",
            ping.lines()
                .find(|l| l.contains("bytes from"))
                .unwrap_or("replied")
        ),
    );

    f.node_ip(&["neigh", "del", VM4, "dev", &br])?;
    f.wait_peer_macip(VM_MAC, Some(VM4), false, WAIT)?;
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", f.node_netns(), "bridge"])
        .args(["fdb", "del", VM_MAC, "dev", VM_PORT, "master"])
        .output()?;
    ensure!(out.status.success(), "bridge fdb del: {out:?}");
    let took = f.wait_peer_macip(VM_MAC, None, false, WAIT)?;
    step(
        t0,
        &format!(
            "neighbour and FDB entry deleted: the peer withdrew both type-2 routes ({:.1} s)",
            took.as_secs_f64()
        ),
    );
    Ok(())
}
