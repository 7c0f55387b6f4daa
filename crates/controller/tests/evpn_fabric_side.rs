//! `status`'s fabric side in the EVPN L2 mode against real FRR (netns
//! tier: the L2 fabric needs bridge, veth and vxlan only; the agent's own
//! `l2vni` run needs vrf/dummy and is the VM tier's,
//! `crates/e2e/tests/evpn_l2.rs`). Two VTEPs with real FRR, the node's
//! side made as the `l2vni` method makes it (the testbed's
//! `EvpnFabricOptions::l2`); then `annotate_live`, what the `status`
//! command runs, on a status whose exposures are the bound VM and a MAC/IP
//! the node does not announce:
//!
//! - the VM's type-2 route is in FRR's l2vpn evpn table and was sent to
//!   the fabric VTEP; the other is not in the table and was sent nowhere;
//! - a SIGSTOPped bgpd: the answer comes within the deadline and both
//!   exposures' FRR state is unknown (no `frr`), never "absent".

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use obgp_controller::fabric::annotate_live;
use obgp_controller::ops::status::{ComputedBy, Exposure, ExposureFrr, Health, Status, Wiring};
use obgp_netmodel::Class;
use obgp_node::KernelConfig;
use obgp_testbed::evpn::l2;
use obgp_testbed::evpn::{EvpnFabric, PEER_VTEP};

const WAIT: Duration = Duration::from_secs(60);
const VTYSH_TIMEOUT: Duration = Duration::from_secs(3);
const VNI: u32 = 1001;
const ASN: u32 = 64999;
const RT: &str = "64512:1001";
const VM_MAC: &str = "fa:16:3e:11:11:11";
const VM4: &str = "172.24.4.10";
const OTHER_MAC: &str = "fa:16:3e:33:33:33";
const OTHER4: &str = "172.24.4.30";
const VM_PORT: &str = "vm1n";

/// SIGCONTs the process when dropped (also when the test fails).
struct Stopped(u32);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-CONT", &self.0.to_string()])
            .status();
    }
}

fn l2vni_config() -> obgp_config::Config {
    let options: std::collections::BTreeMap<String, serde_json::Value> = serde_json::from_value(
        serde_json::json!({"exposing_method": "l2vni", "driver": "nb_ovn_bgp_driver", "bgp_AS": ASN}),
    )
    .unwrap();
    obgp_config::Loader::new()
        .json_overrides(&options)
        .unwrap()
        .load()
        .unwrap()
        .config
}

fn exposure(mac: &str, ip: &str) -> Exposure {
    Exposure {
        prefix: format!("{ip}/32").parse().unwrap(),
        kind: Class::Vm,
        rows: Vec::new(),
        wiring: Wiring {
            bridge: Some("br-ex".into()),
            dev: Some(format!("br-{VNI}")),
            vni: Some(VNI),
            mac: Some(mac.parse().unwrap()),
            ..Wiring::default()
        },
        held: true,
        missing: Vec::new(),
        frr: None,
    }
}

fn status() -> Status {
    Status {
        origin: ComputedBy::Direct,
        driver: "nb_ovn_bgp_driver".into(),
        exposing_method: "l2vni".into(),
        chassis: "evpn-node".into(),
        exposed: vec![exposure(VM_MAC, VM4), exposure(OTHER_MAC, OTHER4)],
        vnis: Vec::new(),
        notes: Vec::new(),
        health: Health::default(),
        fabric: None,
    }
}

#[test]
fn status_gives_l2vni_exposures_their_type2_route_and_peers_and_unknown_when_bgpd_is_wedged(
) -> Result<()> {
    let t0 = Instant::now();
    let (_dir, mut f) = EvpnFabric::start_l2("obgp-evpn-side-", VNI, ASN, RT)?;
    let result = checks(t0, &mut f);
    result.with_context(|| format!("--- node FRR ---\n{}", f.node.logs()))
}

fn checks(t0: Instant, f: &mut EvpnFabric) -> Result<()> {
    f.node_l2_vni(ASN, VNI, None, &[RT.to_string()])?;
    let vm_ns = f.add_host(VM_PORT, VM_MAC, &format!("{VM4}/24"), OTHER4)?;
    l2::silence_host(&vm_ns)?;
    f.node_ip(&["link", "set", VM_PORT, "master", &format!("br-{VNI}")])?;
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", f.node_netns(), "bridge"])
        .args(["fdb", "replace", VM_MAC, "dev", VM_PORT, "master", "static"])
        .output()?;
    ensure!(out.status.success(), "bridge fdb replace: {out:?}");
    f.node_ip(&[
        "neigh",
        "replace",
        VM4,
        "lladdr",
        VM_MAC,
        "dev",
        &format!("br-{VNI}"),
        "nud",
        "permanent",
    ])?;
    f.wait_peer_macip(VM_MAC, Some(VM4), true, WAIT)?;
    println!(
        "evpn-side [{:5.1} s] the node announces [2] {VM_MAC} {VM4}; the peer has it",
        t0.elapsed().as_secs_f64()
    );

    let config = l2vni_config();
    let kernel = KernelConfig {
        vty_socket: Some(f.node.vty_dir().to_path_buf()),
        vtysh_timeout: VTYSH_TIMEOUT,
        ..KernelConfig::default()
    };
    // the peer's `advertised-routes` list may trail the table by an
    // update interval: read until FRR reports it sent
    let deadline = Instant::now() + WAIT;
    let s = loop {
        let mut s = status();
        annotate_live(&config, &kernel, &mut s);
        let sent = s.exposed[0]
            .frr
            .as_ref()
            .is_some_and(|f| f.announced_to.iter().any(|p| p == PEER_VTEP));
        if sent || Instant::now() > deadline {
            break s;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let fabric = s.fabric.clone().context("no fabric read")?;
    ensure!(
        s.exposed[0].frr
            == Some(ExposureFrr {
                in_table: true,
                announced_to: vec![PEER_VTEP.to_string()],
                evpn_route: Some(format!("type-2 route {VM_MAC} {VM4}")),
            }),
        "the VM: {:?} (fabric {fabric:?})",
        s.exposed[0].frr
    );
    ensure!(
        s.exposed[1].frr
            == Some(ExposureFrr {
                in_table: false,
                announced_to: Vec::new(),
                evpn_route: Some(format!("type-2 route {OTHER_MAC} {OTHER4}")),
            }),
        "the MAC/IP the node does not announce: {:?}",
        s.exposed[1].frr
    );
    ensure!(
        fabric.peers == [PEER_VTEP] && fabric.errors.is_empty(),
        "{fabric:?}"
    );
    println!(
        "evpn-side [{:5.1} s] status: {VM4} in l2vpn evpn, announced to {PEER_VTEP}; {OTHER4} not in it; reads took {:.3} s",
        t0.elapsed().as_secs_f64(),
        fabric.took_s
    );

    let bgpd = f.node.pid_of("bgpd").context("the node's bgpd")?;
    ensure!(std::process::Command::new("kill")
        .args(["-STOP", &bgpd.to_string()])
        .status()?
        .success());
    let stopped = Stopped(bgpd);
    let mut s = status();
    let asked = Instant::now();
    annotate_live(&config, &kernel, &mut s);
    let took = asked.elapsed();
    drop(stopped);
    let fabric = s.fabric.clone().context("no fabric read")?;
    ensure!(
        s.exposed.iter().all(|e| e.frr.is_none()),
        "a wedged bgpd must leave them unknown: {:?}",
        s.exposed
    );
    ensure!(
        fabric
            .errors
            .iter()
            .any(|e| e.contains("no answer within 3s")),
        "{fabric:?}"
    );
    ensure!(
        took < VTYSH_TIMEOUT + Duration::from_secs(2),
        "a wedged bgpd cost {took:?}, more than one deadline"
    );
    println!(
        "evpn-side [{:5.1} s] wedged bgpd: answered in {:.1} s (vtysh_timeout 3 s), both unknown: {:?}",
        t0.elapsed().as_secs_f64(),
        took.as_secs_f64(),
        fabric.errors
    );
    Ok(())
}
