//! `exposing_method = dynamic` with one provider network of each kind on
//! one node, over a fabric whose peer holds an L3 VNI (a VRF), an L2 VNI
//! and an `ipv4 unicast` session (VM tier: the agent's base wiring needs
//! vrf and dummy devices, the EVPN methods vxlan).
//!
//! ```text
//!  host: OVN_Northbound, Open_vSwitch ovsdb-servers
//!  node netns: ovn-bgp-agent (dynamic), FRR node, ovs-vswitchd
//!     U physnet1 br-ex  (unannotated)  VM 172.24.4.10 on bgp-nic (bgp-vrf)
//!     A physnet2 br-ex2 (l3, VNI 1001) br-ex2 ── veth ── vrf-1001 ── br-1001 ── vxlan-1001
//!     B physnet3 br-ex3 (l2, VNI 1002) br-ex3 ── veth in br-1002 ── vxlan-1002 (no VRF)
//!          ── underlay 10.1.1.1 <-> 10.1.1.2, iBGP l2vpn evpn + ipv4 unicast ──
//!  peer netns: FRR peer: vrf-1001 (L3 VNI 1001, RT 64512:1001),
//!              br-1002/vxlan-1002 (L2 VNI 1002, RT 64512:1002)
//! ```
//!
//! One test, one bench, in order:
//! 1. the three side by side: U's /32 at the peer over `ipv4 unicast`
//!    (next hop the node), A's type-5 /32 with its RD, RT and VNI and in
//!    the peer's `vrf-1001` kernel table, B's MAC/IP type-2 route with its
//!    RD, RT and VNI; each network announced only its own way, all three
//!    in one observation, `plan` at 0 steps;
//! 2. B switched l2 → l3 (same VNI 1002), the peer polled: the type-2
//!    route withdrawn no later than the type-5 route comes
//!    (break-before-make, docs/adr/0011-l3-l2-switch-break-before-make.md),
//!    the gap printed; U and A untouched; `plan` at 0 steps;
//! 3. U switched underlay → l3 (VNI 1003), the peer polled: the VM IP
//!    leaves `bgp-nic` only once `vxlan-1003` exists, and the peer holds
//!    the unicast route until the type-5 route is there (make-before-break
//!    as the peer sees it; the peer also watched alone, ~100 ms apart,
//!    beside the slower whole observation); A and B untouched; `plan` at
//!    0 steps.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use obgp_e2e::evpn::{
    nb_evpn_config, node_ovs_rows_with, provider_nets_rows, Bgpvpn, EvpnBench, ProviderBridge,
    ProviderNet, VmPort, BR_EX,
};
use obgp_e2e::watch::{first, held_until, watch};
use obgp_testbed::evpn::l2::router_macip_routes;
use obgp_testbed::evpn::{
    type5_routes, unicast_has_path_via, EvpnFabricOptions, PeerL2Vni, NODE_VTEP,
};
use obgp_testbed::frr::FrrRouter;
use serde_json::{json, Value};

/// Bounds for the VM tier (TCG: ~10x slower CPU); only a failure waits this long.
const LEARN: Duration = Duration::from_secs(60);
const ASN: u32 = 64999;
const CHASSIS: &str = "evpn-node";
/// The agent's default `bgp_nic`.
const BGP_NIC: &str = "bgp-nic";

/// One provider network of the test and its VM port bound here.
struct Net {
    /// `U`, `A`, `B`: for the output.
    tag: &'static str,
    switch: &'static str,
    bridge: ProviderBridge<'static>,
    vm: VmPort<'static>,
}

const U: Net = Net {
    tag: "U",
    switch: "neutron-11111111-1111-4111-8111-111111111111",
    bridge: BR_EX,
    vm: VmPort {
        name: "77777777-7777-4777-8777-777777777771",
        mac: "fa:16:3e:11:11:11",
        ip: "172.24.4.10",
        prefix_len: 24,
        chassis: CHASSIS,
    },
};

const A: Net = Net {
    tag: "A",
    switch: "neutron-11111111-1111-4111-8111-111111111112",
    bridge: ProviderBridge {
        physnet: "physnet2",
        bridge: "br-ex2",
        localnet: "provnet-22222222-2222-4222-8222-222222222223",
    },
    vm: VmPort {
        name: "77777777-7777-4777-8777-777777777772",
        mac: "fa:16:3e:11:11:12",
        ip: "172.24.5.10",
        prefix_len: 24,
        chassis: CHASSIS,
    },
};

const B: Net = Net {
    tag: "B",
    switch: "neutron-11111111-1111-4111-8111-111111111113",
    bridge: ProviderBridge {
        physnet: "physnet3",
        bridge: "br-ex3",
        localnet: "provnet-22222222-2222-4222-8222-222222222224",
    },
    vm: VmPort {
        name: "77777777-7777-4777-8777-777777777773",
        mac: "fa:16:3e:11:11:13",
        ip: "172.24.6.10",
        prefix_len: 24,
        chassis: CHASSIS,
    },
};

/// A's annotation: the L3 VNI the peer's VRF has.
const A_L3: Bgpvpn = Bgpvpn {
    kind: "l3",
    vni: 1001,
    rd: "64999:1001",
    rt: "64512:1001",
};
/// B's annotation at start: the L2 VNI the peer has.
const B_L2: Bgpvpn = Bgpvpn {
    kind: "l2",
    vni: 1002,
    rd: "64999:1002",
    rt: "64512:1002",
};
/// B's annotation after the switch: the same VNI, now L3.
const B_L3: Bgpvpn = Bgpvpn { kind: "l3", ..B_L2 };
/// U's annotation after the switch: a VNI of its own.
const U_L3: Bgpvpn = Bgpvpn {
    kind: "l3",
    vni: 1003,
    rd: "64999:1003",
    rt: "64512:1003",
};

fn step(t0: Instant, what: &str) {
    println!(
        "evpn-dynamic-mixed [{:6.1} s] {what}",
        t0.elapsed().as_secs_f64()
    );
}

fn host(net: &Net) -> String {
    format!("{}/32", net.vm.ip)
}

/// The databases: U unannotated, A `l3`, B `l2`, each with its VM bound
/// here; the three provider bridges and br-int.
fn topology() -> Value {
    let (a_ids, b_ids) = (A_L3.pairs(), B_L2.pairs());
    let (a_ids, b_ids) = (borrowed(&a_ids), borrowed(&b_ids));
    fn net<'a>(n: &'a Net, external_ids: &'a [(&'a str, &'a str)]) -> ProviderNet<'a> {
        ProviderNet {
            switch: n.switch,
            localnet: n.bridge.localnet,
            physnet: n.bridge.physnet,
            external_ids,
            vms: std::slice::from_ref(&n.vm),
        }
    }
    json!({
        "OVN_Northbound": provider_nets_rows(&[net(&U, &[]), net(&A, &a_ids), net(&B, &b_ids)]),
        "Open_vSwitch": node_ovs_rows_with(CHASSIS, NODE_VTEP, &[U.bridge, A.bridge, B.bridge]),
    })
}

fn borrowed<'a>(pairs: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    pairs.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// What the test watches of one network, read in one observation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct NetSeen {
    /// The VM IP is an address of `bgp-nic` on the node.
    nic: bool,
    /// The peer has the VM /32 over `ipv4 unicast` from the node.
    unicast: bool,
    /// The peer has the type-5 VM /32 from the node.
    type5: bool,
    /// The peer has the VM's MAC/IP type-2 route from the node.
    type2: bool,
}

/// One observation: the three networks, and whether `vxlan-<vni>` and
/// `vrf-<vni>` exist on the node for the VNI being switched to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    u: NetSeen,
    a: NetSeen,
    b: NetSeen,
    vxlan: bool,
    vrf: bool,
}

/// Reads, in this order (see `obgp_e2e::watch` for why the order
/// matters): the node's `bgp-nic` addresses (before the links: "off
/// bgp-nic only once vxlan-<vni> exists"), the peer's unicast table
/// (before its type-5 table: "unicast withdrawn no earlier than the
/// type-5 comes"), the node's links, the peer's type-5 table (before its
/// type-2 table: "type-2 withdrawn no later than the type-5 comes").
fn look(b: &EvpnBench, vni: u32) -> Result<Seen> {
    let nic: Vec<String> = b
        .node_json(&["addr", "show"])?
        .iter()
        .filter(|l| l["ifname"] == BGP_NIC)
        .flat_map(|l| l["addr_info"].as_array().cloned().unwrap_or_default())
        .filter_map(|i| i["local"].as_str().map(str::to_string))
        .collect();
    let unicast = b.fabric.peer.show_bgp_json()?;
    let links = b.node_links()?;
    let type5 = b.fabric.peer_type5_routes()?;
    let type2 = router_macip_routes(&b.fabric.peer)?;
    let vtep = b.fabric.node_vtep();
    let one = |n: &Net| NetSeen {
        nic: nic.iter().any(|a| a == n.vm.ip),
        unicast: unicast_has_path_via(&unicast, &host(n), NODE_VTEP),
        type5: type5
            .iter()
            .any(|r| r.prefix == host(n) && r.next_hop == vtep),
        type2: type2
            .iter()
            .any(|r| r.mac == n.vm.mac && r.ip.as_deref() == Some(n.vm.ip) && r.next_hop == vtep),
    };
    Ok(Seen {
        u: one(&U),
        a: one(&A),
        b: one(&B),
        vxlan: links.iter().any(|l| *l == format!("vxlan-{vni}")),
        vrf: links.iter().any(|l| *l == format!("vrf-{vni}")),
    })
}

/// What the peer has of U's VM, for the tight watch of the underlay ->
/// l3 switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PeerSeen {
    unicast: bool,
    type5: bool,
}

/// The peer's unicast table, then its type-5 table (the order the
/// make-before-break claim needs, see [`look`]).
fn look_peer(peer: &FrrRouter, vtep: &str) -> Result<PeerSeen> {
    let unicast = unicast_has_path_via(&peer.show_bgp_json()?, &host(&U), NODE_VTEP);
    let type5 = type5_routes(&peer.show_json("show bgp l2vpn evpn route detail type prefix json")?)
        .iter()
        .any(|r| r.prefix == host(&U) && r.next_hop == vtep);
    Ok(PeerSeen { unicast, type5 })
}

/// How each kind is announced, and nothing else: underlay on `bgp-nic`
/// and over unicast, l3 as type-5 only, l2 as type-2 only.
fn underlay(s: &NetSeen) -> bool {
    *s == NetSeen {
        nic: true,
        unicast: true,
        type5: false,
        type2: false,
    }
}
fn l3(s: &NetSeen) -> bool {
    *s == NetSeen {
        type5: true,
        ..NetSeen::default()
    }
}
fn l2(s: &NetSeen) -> bool {
    *s == NetSeen {
        type2: true,
        ..NetSeen::default()
    }
}

/// The peer's routes for `net` carry `want`'s RD, RT and VNI: its
/// type-5 route when `want` is `l3`, else its type-2 route.
fn check_attributes(b: &EvpnBench, net: &Net, want: &Bgpvpn) -> Result<()> {
    let (rd, rts, vni) = if want.kind == "l3" {
        let r = b
            .fabric
            .peer_type5_from_node(&host(net))?
            .into_iter()
            .next()
            .with_context(|| format!("{}: no type-5 {} at the peer", net.tag, host(net)))?;
        (r.rd, r.route_targets, r.vni)
    } else {
        let r = b
            .fabric
            .peer_macip_from_node(net.vm.mac)?
            .into_iter()
            .find(|r| r.ip.as_deref() == Some(net.vm.ip))
            .with_context(|| format!("{}: no type-2 {} at the peer", net.tag, net.vm.mac))?;
        (r.rd, r.route_targets, r.vni)
    };
    ensure!(
        rd == want.rd && rts.contains(&want.rt.to_string()) && vni == Some(want.vni),
        "{}: the peer's {} route of {}: RD {rd} RT {rts:?} VNI {vni:?}, not {} {} {}",
        net.tag,
        want.kind,
        net.vm.ip,
        want.rd,
        want.rt,
        want.vni
    );
    Ok(())
}

fn wait_converged(b: &EvpnBench) -> Result<Duration> {
    let t = Instant::now();
    obgp_e2e::wait_for("the agent's plan to converge (0 steps)", LEARN, || {
        Ok((b.agent.plan_op_count()? == 0).then_some(()))
    })?;
    Ok(t.elapsed())
}

#[test]
#[ignore = "vm tier: needs vrf/dummy (the agent's base wiring) and vxlan"]
fn agent_dynamic_mode_runs_three_kinds_side_by_side_and_switches_l2_l3_and_underlay_l3(
) -> Result<()> {
    let t0 = Instant::now();
    let (_dir, mut b) = EvpnBench::start_in_tmp(
        "obgp-evpn-dynmix-",
        &topology(),
        &EvpnFabricOptions {
            vni: A_L3.vni,
            asn: ASN,
            route_targets: vec![A_L3.rt.to_string()],
            peer_l2_vnis: vec![PeerL2Vni {
                vni: B_L2.vni,
                route_targets: vec![B_L2.rt.to_string()],
            }],
            ipv4_unicast: true,
            ..EvpnFabricOptions::default()
        },
        &nb_evpn_config("dynamic", ASN),
    )?;
    step(
        t0,
        "bench up: L3 fabric (vrf-1001) + L2 VNI 1002 + ipv4 unicast, Established; three bridges",
    );
    let result = side_by_side(t0, &mut b)
        .and_then(|()| b_l2_to_l3(t0, &b))
        .and_then(|()| u_underlay_to_l3(t0, &b));
    result.with_context(|| b.evidence())
}

fn side_by_side(t0: Instant, b: &mut EvpnBench) -> Result<()> {
    b.agent.start_daemon()?;
    step(t0, "agent daemon started (exposing_method = dynamic)");
    let seen = watch(
        "evpn-dynamic-mixed",
        "U underlay, A l3, B l2 at the peer at once",
        LEARN,
        || look(b, A_L3.vni),
        |s| underlay(&s.u) && l3(&s.a) && l2(&s.b),
    )?;
    // each network only ever announced its own way on the way there
    ensure!(
        seen.iter().all(|(_, s)| !s.u.type5
            && !s.u.type2
            && !s.a.nic
            && !s.a.unicast
            && !s.a.type2
            && !s.b.nic
            && !s.b.unicast
            && !s.b.type5),
        "a network was announced another method's way: {seen:#?}"
    );
    check_attributes(b, &A, &A_L3)?;
    check_attributes(b, &B, &B_L2)?;
    b.fabric
        .wait_peer_vrf_route(A.vm.ip, true, LEARN)
        .context("A's VM in the peer's vrf-1001 kernel table")?;
    let at = |f: fn(&Seen) -> bool| first(&seen, f).map_or(f64::NAN, |d| d.as_secs_f64());
    step(
        t0,
        &format!(
            "side by side: U {} on {BGP_NIC} and at the peer over ipv4 unicast ({:.2} s); A [5] {} rd {} RT {} VNI {} at the peer and in its vrf-1001 ({:.2} s); B [2] {} {} rd {} RT {} VNI {} ({:.2} s)",
            U.vm.ip, at(|s| s.u.unicast),
            host(&A), A_L3.rd, A_L3.rt, A_L3.vni, at(|s| s.a.type5),
            B.vm.mac, B.vm.ip, B_L2.rd, B_L2.rt, B_L2.vni, at(|s| s.b.type2),
        ),
    );
    let took = wait_converged(b)?;
    let now = look(b, A_L3.vni)?;
    ensure!(
        underlay(&now.u) && l3(&now.a) && l2(&now.b),
        "after convergence: {now:?}"
    );
    step(
        t0,
        &format!(
            "plan converged: 0 steps ({:.1} s), all three still there",
            took.as_secs_f64()
        ),
    );
    Ok(())
}

fn b_l2_to_l3(t0: Instant, b: &EvpnBench) -> Result<()> {
    b.set_bgpvpn(B.switch, Some(&B_L3))?;
    let seen = watch(
        "evpn-dynamic-mixed",
        "B: type-2 withdrawn, type-5 at the peer, vrf-1002",
        LEARN,
        || look(b, B_L3.vni),
        |s| l3(&s.b) && s.vrf && s.vxlan,
    )?;
    let t2_gone = first(&seen, |s| !s.b.type2).context("type-2 never withdrawn")?;
    let t5_at = first(&seen, |s| s.b.type5).context("type-5 never seen")?;
    ensure!(
        seen.iter().all(|(_, s)| underlay(&s.u) && l3(&s.a)),
        "U or A moved while B switched: {seen:#?}"
    );
    ensure!(
        seen.iter().all(|(_, s)| !s.b.nic && !s.b.unicast),
        "B went through the underlay during l2 -> l3: {seen:#?}"
    );
    // break-before-make (docs/adr/0011-l3-l2-switch-break-before-make.md):
    // the VXLAN device is deleted out of the L2 bridge and made again once
    // FRR holds the L3 text
    ensure!(
        t2_gone <= t5_at,
        "l2 -> l3 was make-before-break ([5] at {t5_at:?} before [2] withdrawn at {t2_gone:?}): the decision record says otherwise"
    );
    check_attributes(b, &B, &B_L3)?;
    step(
        t0,
        &format!(
            "B l2 -> l3: [2] {} {} withdrawn at {:.2} s, [5] {} rd {} RT {} VNI {} at the peer at {:.2} s: break-before-make gap {:.2} s; vrf-{} up; U and A untouched",
            B.vm.mac,
            B.vm.ip,
            t2_gone.as_secs_f64(),
            host(&B),
            B_L3.rd,
            B_L3.rt,
            B_L3.vni,
            t5_at.as_secs_f64(),
            t5_at.as_secs_f64() - t2_gone.as_secs_f64(),
            B_L3.vni,
        ),
    );
    let took = wait_converged(b)?;
    step(
        t0,
        &format!("plan converged: 0 steps ({:.1} s)", took.as_secs_f64()),
    );
    Ok(())
}

fn u_underlay_to_l3(t0: Instant, b: &EvpnBench) -> Result<()> {
    b.set_bgpvpn(U.switch, Some(&U_L3))?;
    // The whole observation takes seconds under TCG; the peer alone is
    // watched beside it, two reads of bgpd's vty socket each (~100 ms
    // apart), for the make-before-break claim at the peer.
    let (seen, at_peer) = std::thread::scope(|scope| {
        let peer = &b.fabric.peer;
        let vtep = b.fabric.node_vtep();
        let at_peer = scope.spawn(move || {
            watch(
                "evpn-dynamic-mixed (peer)",
                "U at the peer: type-5 there, unicast withdrawn",
                LEARN,
                || look_peer(peer, &vtep),
                |s| s.type5 && !s.unicast,
            )
        });
        let seen = watch(
            "evpn-dynamic-mixed",
            "U: type-5 at the peer, unicast withdrawn, off bgp-nic, vxlan-1003",
            LEARN,
            || look(b, U_L3.vni),
            |s| l3(&s.u) && s.vxlan,
        );
        let at_peer = at_peer.join().expect("the peer watch panicked");
        (seen, at_peer)
    });
    let (seen, at_peer) = (seen?, at_peer?);
    let vxlan_at = first(&seen, |s| s.vxlan).context("vxlan never seen")?;
    let t5_at = first(&seen, |s| s.u.type5).context("type-5 never seen")?;
    let off_nic = first(&seen, |s| !s.u.nic).context("never off bgp-nic")?;
    let unicast_gone = first(&seen, |s| !s.u.unicast).context("unicast never withdrawn")?;
    ensure!(
        seen.iter().all(|(_, s)| l3(&s.a) && l3(&s.b)),
        "A or B moved while U switched: {seen:#?}"
    );
    ensure!(
        held_until(&seen, vxlan_at, |s| s.u.nic || s.vxlan),
        "{} left {BGP_NIC} before vxlan-{} existed: {seen:#?}",
        U.vm.ip,
        U_L3.vni
    );
    // make-before-break as the peer sees it: the unicast route stays
    // until the type-5 route is there
    ensure!(
        seen.iter().all(|(_, s)| s.u.unicast || s.u.type5)
            && at_peer.iter().all(|(_, s)| s.unicast || s.type5),
        "the peer had neither the unicast nor the type-5 route of {} at one point: {at_peer:#?} {seen:#?}",
        U.vm.ip
    );
    let peer_t5 = first(&at_peer, |s| s.type5).context("type-5 never seen at the peer")?;
    let peer_unicast_gone =
        first(&at_peer, |s| !s.unicast).context("unicast never withdrawn at the peer")?;
    check_attributes(b, &U, &U_L3)?;
    step(
        t0,
        &format!(
            "U underlay -> l3: vxlan-{} at {:.2} s, [5] {} at the peer at {:.2} s, {} off {BGP_NIC} at {:.2} s, unicast withdrawn at the peer at {:.2} s; the peer alone: [5] at {:.2} s, unicast withdrawn at {:.2} s: overlap {:.2} s; A and B untouched",
            U_L3.vni,
            vxlan_at.as_secs_f64(),
            host(&U),
            t5_at.as_secs_f64(),
            U.vm.ip,
            off_nic.as_secs_f64(),
            unicast_gone.as_secs_f64(),
            peer_t5.as_secs_f64(),
            peer_unicast_gone.as_secs_f64(),
            peer_unicast_gone.as_secs_f64() - peer_t5.as_secs_f64(),
        ),
    );
    let took = wait_converged(b)?;
    step(
        t0,
        &format!("plan converged: 0 steps ({:.1} s)", took.as_secs_f64()),
    );
    Ok(())
}
