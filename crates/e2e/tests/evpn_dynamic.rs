//! `exposing_method = dynamic` over a real EVPN fabric (VM tier: the
//! agent's base wiring needs vrf and dummy devices, the EVPN methods vxlan).
//!
//! ```text
//!  host: OVN_Northbound, Open_vSwitch ovsdb-servers
//!  node netns: ovn-bgp-agent (dynamic), FRR node, ovs-vswitchd: br-ex
//!     underlay: VM IP on bgp-nic (bgp-vrf)
//!     l3:       br-ex ── ovs<ln>/vrf<ln> ── vrf-1001 ── br-1001 ── vxlan-1001
//!     l2:       br-ex ── ovs<ln>/vrf<ln> in br-1001 ── vxlan-1001 (no VRF)
//!          ── underlay 10.1.1.1 <-> 10.1.1.2, iBGP l2vpn evpn ──
//!  peer netns (fabric VTEP): FRR peer (L2 VNI 1001, RT 64512:1001)
//! ```
//!
//! One flat provider network with a VM port bound here, moved between the
//! methods by its annotation alone (one transaction), the node and the
//! peer polled during each switch. Two tests, each from a fresh bench:
//! - underlay → l2 → none: the VM IP leaves `bgp-nic` only once
//!   `vxlan-1001` exists, the peer gets the MAC/IP (type-2) route with the
//!   annotation's RD, RT and VNI, never a VRF or a type-5 route; with the
//!   annotation removed, the VM is on `bgp-nic` or behind `vxlan-1001` at
//!   every observation and the type-2 route is withdrawn;
//! - underlay → l3 → l2: the VM IP leaves `bgp-nic` only once `vxlan-1001`
//!   exists, the peer gets the type-5 /32 with RD, RT and VNI; l3 → l2 (same
//!   VNI) is break-before-make (docs/evpn.md, "Known limits (dynamic)"):
//!   the type-5 route is withdrawn no later than the type-2 route comes, the
//!   gap is printed, `vrf-1001` goes.
//!
//! Three networks side by side, l2 → l3 and the underlay announcement at
//! a unicast peer: `evpn_dynamic_mixed.rs`.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use obgp_e2e::evpn::{
    nb_evpn_config, node_ovs_rows, provider_nets_rows, Bgpvpn, EvpnBench, ProviderNet, VmPort,
    LOCALNET,
};
use obgp_e2e::watch::{first, held_until};
use obgp_testbed::evpn::{EvpnFabricOptions, NODE_VTEP};
use serde_json::{json, Value};

/// Bounds for the VM tier (TCG: ~10x slower CPU); only a failure waits this long.
const LEARN: Duration = Duration::from_secs(60);
const VNI: u32 = 1001;
const ASN: u32 = 64999;
/// The annotations' RD.
const RD: &str = "64999:1001";
/// The annotations' `rt`. Not FRR's automatic `64999:1001` (see tests/evpn.rs).
const RT: &str = "64512:1001";
const CHASSIS: &str = "evpn-node";
const PROVIDER_LS: &str = "neutron-11111111-1111-4111-8111-111111111111";
const VM_PORT: &str = "77777777-7777-4777-8777-777777777777";
const VM_MAC: &str = "fa:16:3e:11:11:11";
const VM4: &str = "172.24.4.10";
const VM: VmPort = VmPort {
    name: VM_PORT,
    mac: VM_MAC,
    ip: VM4,
    prefix_len: 24,
    chassis: CHASSIS,
};
/// The agent's default `bgp_nic`.
const BGP_NIC: &str = "bgp-nic";

fn step(t0: Instant, what: &str) {
    println!("evpn-dynamic [{:6.1} s] {what}", t0.elapsed().as_secs_f64());
}

/// The databases: the unannotated flat provider switch with its localnet
/// port (physnet1) and a VM port bound here; br-ex (physnet1) and br-int.
fn topology() -> Value {
    json!({
        "OVN_Northbound": provider_nets_rows(&[ProviderNet {
            switch: PROVIDER_LS,
            localnet: LOCALNET,
            physnet: "physnet1",
            external_ids: &[],
            vms: &[VM],
        }]),
        "Open_vSwitch": node_ovs_rows(CHASSIS, NODE_VTEP),
    })
}

/// What the test watches, read once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    /// The VM IP is an address of `bgp-nic` on the node (underlay).
    on_bgp_nic: bool,
    /// `vxlan-1001` exists on the node.
    vxlan: bool,
    /// `vrf-1001` exists on the node.
    vrf: bool,
    /// The peer has the type-5 VM /32 from the node.
    type5: bool,
    /// The peer has the MAC/IP type-2 route of the VM from the node.
    type2: bool,
}

/// Which node fact [`look`] reads first. One observation is several
/// reads (each `ip` and `vtysh` call takes a while under TCG), so an
/// order claim "A before B" is only checked soundly when B's fact is read
/// before A's: a violation seen is then a real one.
#[derive(Clone, Copy)]
enum ReadOrder {
    /// `bgp-nic` then the links: for "the VM leaves bgp-nic only once
    /// vxlan-1001 exists".
    NicFirst,
    /// The links then `bgp-nic`: for "the VM is back on bgp-nic before
    /// vxlan-1001 goes".
    LinksFirst,
}

fn look(b: &EvpnBench, order: ReadOrder) -> Result<Seen> {
    let nic = || -> Result<bool> {
        Ok(b.node_json(&["addr", "show"])?.iter().any(|l| {
            l["ifname"] == BGP_NIC
                && l["addr_info"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|i| i["local"] == VM4))
        }))
    };
    let (on_bgp_nic, links) = match order {
        ReadOrder::NicFirst => {
            let on = nic()?;
            (on, b.node_links()?)
        }
        ReadOrder::LinksFirst => {
            let links = b.node_links()?;
            (nic()?, links)
        }
    };
    Ok(Seen {
        on_bgp_nic,
        vxlan: links.iter().any(|l| *l == format!("vxlan-{VNI}")),
        vrf: links.iter().any(|l| *l == format!("vrf-{VNI}")),
        type5: !b
            .fabric
            .peer_type5_from_node(&format!("{VM4}/32"))?
            .is_empty(),
        type2: b
            .fabric
            .peer_macip_from_node(VM_MAC)?
            .iter()
            .any(|r| r.ip.as_deref() == Some(VM4)),
    })
}

/// The provider switch annotated `kind` with the VNI, RD and RT
/// (one transaction); `None` removes the annotation.
fn annotate(b: &EvpnBench, kind: Option<&'static str>) -> Result<()> {
    let bgpvpn = kind.map(|kind| Bgpvpn {
        kind,
        vni: VNI,
        rd: RD,
        rt: RT,
    });
    b.set_bgpvpn(PROVIDER_LS, bgpvpn.as_ref())
}

/// Observations of [`look`] until `done` holds, up to [`LEARN`].
fn watch(
    b: &EvpnBench,
    order: ReadOrder,
    what: &str,
    done: impl Fn(&Seen) -> bool,
) -> Result<Vec<(Duration, Seen)>> {
    obgp_e2e::watch::watch("evpn-dynamic", what, LEARN, || look(b, order), done)
}

/// Starts the bench (the L2 fabric, the unannotated network), runs
/// `body` on it, and adds the evidence to its error.
fn on_bench(body: impl FnOnce(Instant, &mut EvpnBench) -> Result<()>) -> Result<()> {
    let t0 = Instant::now();
    let (_dir, mut b) = EvpnBench::start_in_tmp(
        "obgp-evpn-dyn-",
        &topology(),
        &EvpnFabricOptions::l2(VNI, ASN, RT),
        &nb_evpn_config("dynamic", ASN),
    )?;
    step(
        t0,
        "bench up: L2 fabric Established, databases loaded, vswitchd owns br-ex",
    );
    let result = body(t0, &mut b);
    result.with_context(|| b.evidence())
}

/// The agent started on the unannotated network: the VM IP on `bgp-nic`,
/// no VNI, nothing from the node at the peer.
fn start_underlay(t0: Instant, b: &mut EvpnBench) -> Result<()> {
    b.agent.start_daemon()?;
    step(
        t0,
        "agent daemon started (exposing_method = dynamic), network unannotated",
    );
    let seen = watch(b, ReadOrder::NicFirst, "the VM IP on bgp-nic", |s| {
        s.on_bgp_nic
    })?;
    let now = seen.last().context("no observation")?.1;
    ensure!(
        !now.type5 && !now.type2 && !now.vxlan && !now.vrf,
        "unannotated network built or announced EVPN state: {now:?}"
    );
    step(
        t0,
        &format!("underlay: {VM4} on {BGP_NIC}, no VNI, nothing from {NODE_VTEP} at the peer"),
    );
    Ok(())
}

/// Checks the peer's MAC/IP route of the VM: the annotation's RD, RT, VNI.
fn check_type2(b: &EvpnBench) -> Result<()> {
    let r = b
        .fabric
        .peer_macip_from_node(VM_MAC)?
        .into_iter()
        .find(|r| r.ip.as_deref() == Some(VM4))
        .context("the MAC/IP route went again")?;
    ensure!(
        r.rd == RD && r.route_targets == [RT] && r.vni == Some(VNI),
        "the peer's [2] {VM_MAC} {VM4}: RD {} RT {:?} VNI {:?}, not {RD} [{RT}] {VNI}",
        r.rd,
        r.route_targets,
        r.vni
    );
    Ok(())
}

#[test]
#[ignore = "vm tier: needs vrf/dummy (the agent's base wiring) and vxlan"]
fn agent_dynamic_mode_moves_a_network_underlay_l2_underlay() -> Result<()> {
    on_bench(underlay_then_l2_then_underlay)
}

fn underlay_then_l2_then_underlay(t0: Instant, b: &mut EvpnBench) -> Result<()> {
    start_underlay(t0, b)?;

    // underlay -> l2: the VM stays on bgp-nic until vxlan-1001 exists
    annotate(b, Some("l2"))?;
    let seen = watch(
        b,
        ReadOrder::NicFirst,
        "type-2 at the peer, the VM IP off bgp-nic, vxlan-1001",
        |s| s.type2 && !s.on_bgp_nic && s.vxlan,
    )?;
    let vxlan_at = first(&seen, |s| s.vxlan).context("vxlan never seen")?;
    let t2_at = first(&seen, |s| s.type2).context("type-2 never seen")?;
    let off_nic_at = first(&seen, |s| !s.on_bgp_nic).context("never off bgp-nic")?;
    ensure!(
        held_until(&seen, vxlan_at, |s| s.on_bgp_nic || s.vxlan),
        "{VM4} left {BGP_NIC} before vxlan-{VNI} existed: {seen:#?}"
    );
    ensure!(
        seen.iter().all(|(_, s)| !s.vrf && !s.type5),
        "an l2 network got a VRF or a type-5 route: {seen:#?}"
    );
    check_type2(b)?;
    step(
        t0,
        &format!(
            "underlay -> l2: vxlan-{VNI} at {:.2} s, {VM4} off {BGP_NIC} at {:.2} s, [2] {VM_MAC} {VM4} rd {RD} RT {RT} VNI {VNI} at the peer at {:.2} s; no vrf-{VNI}, no [5]",
            vxlan_at.as_secs_f64(),
            off_nic_at.as_secs_f64(),
            t2_at.as_secs_f64(),
        ),
    );
    let took = wait_converged(b)?;
    step(
        t0,
        &format!("plan converged: 0 steps ({:.1} s)", took.as_secs_f64()),
    );

    // l2 -> underlay: the VM is back on bgp-nic before the VNI goes
    annotate(b, None)?;
    let seen = watch(
        b,
        ReadOrder::LinksFirst,
        "type-2 withdrawn, the VM IP on bgp-nic, vxlan-1001 gone",
        |s| !s.type2 && s.on_bgp_nic && !s.vxlan,
    )?;
    let on_nic_at = first(&seen, |s| s.on_bgp_nic).context("never on bgp-nic")?;
    let t2_gone = first(&seen, |s| !s.type2).context("type-2 never withdrawn")?;
    let vxlan_gone = first(&seen, |s| !s.vxlan).context("vxlan never gone")?;
    ensure!(
        seen.iter().all(|(_, s)| s.on_bgp_nic || s.vxlan),
        "{VM4} was neither on {BGP_NIC} nor behind vxlan-{VNI} at one point: {seen:#?}"
    );
    step(
        t0,
        &format!(
            "l2 -> underlay: {VM4} on {BGP_NIC} at {:.2} s, vxlan-{VNI} gone at {:.2} s, [2] withdrawn at the peer at {:.2} s",
            on_nic_at.as_secs_f64(),
            vxlan_gone.as_secs_f64(),
            t2_gone.as_secs_f64(),
        ),
    );
    let took = wait_converged(b)?;
    step(
        t0,
        &format!("plan converged: 0 steps ({:.1} s)", took.as_secs_f64()),
    );
    Ok(())
}

#[test]
#[ignore = "vm tier: needs vrf/dummy (the agent's base wiring) and vxlan"]
fn agent_dynamic_mode_moves_a_network_underlay_l3_l2() -> Result<()> {
    on_bench(underlay_then_l3_then_l2)
}

fn underlay_then_l3_then_l2(t0: Instant, b: &mut EvpnBench) -> Result<()> {
    start_underlay(t0, b)?;

    // underlay -> l3
    annotate(b, Some("l3"))?;
    let seen = watch(
        b,
        ReadOrder::NicFirst,
        "type-5 at the peer, the VM IP off bgp-nic, vxlan-1001",
        |s| s.type5 && !s.on_bgp_nic && s.vxlan,
    )?;
    let vxlan_at = first(&seen, |s| s.vxlan).context("vxlan never seen")?;
    let t5_at = first(&seen, |s| s.type5).context("type-5 never seen")?;
    let off_nic_at = first(&seen, |s| !s.on_bgp_nic).context("never off bgp-nic")?;
    ensure!(
        held_until(&seen, vxlan_at, |s| s.on_bgp_nic || s.vxlan),
        "{VM4} left {BGP_NIC} before vxlan-{VNI} existed: {seen:#?}"
    );
    let route = b
        .fabric
        .peer_type5_from_node(&format!("{VM4}/32"))?
        .into_iter()
        .next()
        .context("the type-5 route went again")?;
    ensure!(
        route.rd == RD && route.route_targets.contains(&RT.to_string()) && route.vni == Some(VNI),
        "the peer's type-5 {VM4}/32: RD {} RT {:?} VNI {:?}, not {RD} {RT} {VNI}",
        route.rd,
        route.route_targets,
        route.vni
    );
    step(
        t0,
        &format!(
            "underlay -> l3: vxlan-{VNI} at {:.2} s, [5] {VM4}/32 rd {RD} RT {RT} VNI {VNI} at the peer at {:.2} s, {VM4} off {BGP_NIC} at {:.2} s (peer-side {}: {:.2} s)",
            vxlan_at.as_secs_f64(),
            t5_at.as_secs_f64(),
            off_nic_at.as_secs_f64(),
            if off_nic_at >= t5_at { "overlap" } else { "gap" },
            off_nic_at.as_secs_f64() - t5_at.as_secs_f64()
        ),
    );
    let took = wait_converged(b)?;
    step(
        t0,
        &format!("plan converged: 0 steps ({:.1} s)", took.as_secs_f64()),
    );

    // l3 -> l2
    annotate(b, Some("l2"))?;
    let seen = watch(
        b,
        ReadOrder::NicFirst,
        "type-2 at the peer, type-5 withdrawn, vrf gone",
        |s| s.type2 && !s.type5 && !s.vrf,
    )?;
    let t5_gone = first(&seen, |s| !s.type5).context("type-5 never withdrawn")?;
    let t2_at = first(&seen, |s| s.type2).context("type-2 never seen")?;
    ensure!(
        seen.iter().all(|(_, s)| !s.on_bgp_nic),
        "{VM4} back on {BGP_NIC} during l3 -> l2: {seen:#?}"
    );
    // break-before-make, as documented: the one veth pair moves from the
    // VRF to the bridge, so the type-5 route goes before the type-2 comes
    ensure!(
        t5_gone <= t2_at,
        "l3 -> l2 was make-before-break ([2] at {t2_at:?} before [5] withdrawn at {t5_gone:?}): docs/evpn.md says otherwise"
    );
    step(
        t0,
        &format!(
            "l3 -> l2: [5] {VM4}/32 withdrawn at {:.2} s, [2] {VM_MAC} {VM4} at the peer at {:.2} s: break-before-make gap {:.2} s; vrf-{VNI} gone",
            t5_gone.as_secs_f64(),
            t2_at.as_secs_f64(),
            t2_at.as_secs_f64() - t5_gone.as_secs_f64()
        ),
    );
    // zebra makes vxlan-1001 an L2 VNI as soon as vrf-1001 goes, before
    // FRR holds the `vni` block: the first type-2 route can carry FRR's
    // own RD and RT; the annotation's replace them
    let first_rd = b
        .fabric
        .peer_macip_from_node(VM_MAC)?
        .into_iter()
        .find(|r| r.ip.as_deref() == Some(VM4))
        .map(|r| format!("rd {} RT {:?}", r.rd, r.route_targets));
    let took = Instant::now();
    obgp_e2e::wait_for(
        "the type-2 route with the annotation's RD and RT",
        LEARN,
        || Ok(check_type2(b).ok()),
    )
    .with_context(|| format!("{:?}", check_type2(b)))?;
    step(
        t0,
        &format!(
            "l3 -> l2: the first [2] at the peer had {}; rd {RD} RT {RT} after {:.2} s more",
            first_rd.as_deref().unwrap_or("(gone)"),
            took.elapsed().as_secs_f64()
        ),
    );
    let took = wait_converged(b)?;
    step(
        t0,
        &format!("plan converged: 0 steps ({:.1} s)", took.as_secs_f64()),
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
