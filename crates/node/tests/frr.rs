//! FRR: the observer tells whether FRR's running configuration holds our
//! VRF-leak fragment, and `Op::ApplyFrr` applies it with
//! `vtysh --vty_socket DIR -f FILE` against real zebra + bgpd in a netns
//! (root; apt package frr).

use obgp_netmodel::DesiredNode;
use obgp_node::{KernelConfig, KernelNode, Scope};
use obgp_plan::plan::plan;
use obgp_plan::{apply_plan, Op};
use obgp_testbed::frr::FrrRouter;
use obgp_testbed::netns::Netns;

/// Upstream's VRF-leak rendering for AS 64999, VRF bgp-vrf (scenario nb-provider-vm).
const VRF_LEAK: &str = "
router bgp 64999
  address-family ipv4 unicast
    import vrf bgp-vrf
  exit-address-family

  address-family ipv6 unicast
    import vrf bgp-vrf
  exit-address-family

router bgp 64999 vrf bgp-vrf
  bgp router-id 192.168.100.11
  address-family ipv4 unicast

    redistribute connected

  exit-address-family

  address-family ipv6 unicast

    redistribute connected

  exit-address-family
";

#[tokio::test]
async fn vrf_leak_is_applied_once_and_then_recognised_as_ours() {
    let ns = Netns::new("frr").expect("netns (root)");
    let dir = tempfile::tempdir().unwrap();
    let router = FrrRouter::start(
        ns.name(),
        &dir.path().join("frr"),
        "router bgp 64999\n bgp router-id 192.168.100.11\n",
    )
    .expect("FRR (apt package frr)");
    let mut k = KernelNode::connect(KernelConfig {
        netns: Some(ns.path()),
        rt_tables: dir.path().join("rt_tables"),
        vty_socket: Some(router.vty_dir().to_path_buf()),
        frr_config_dir: dir.path().to_path_buf(),
        ..KernelConfig::default()
    })
    .await
    .unwrap();
    let d = DesiredNode {
        vrf_table: 10,
        frr_config: Some(VRF_LEAK.into()),
        ..DesiredNode::default()
    };
    let scope = Scope::for_desired(&d);
    assert!(scope
        .frr_lines
        .contains(&"router bgp 64999 vrf bgp-vrf".to_string()));
    let a = k.observe(&scope).await.unwrap();
    assert!(!a.frr.has_our_config);
    let p = plan(&d, &a).unwrap();
    assert!(
        matches!(p.ops().collect::<Vec<_>>()[..], [Op::ApplyFrr { .. }]),
        "{p}"
    );
    let report = apply_plan(&mut k, &p).await;
    assert!(report.ok(), "{report:?}");
    let running = router.vtysh("show running-config").unwrap();
    assert!(
        running.contains("router bgp 64999 vrf bgp-vrf"),
        "{running}"
    );
    let a = k.observe(&scope).await.unwrap();
    assert!(a.frr.has_our_config, "{running}");
    assert!(plan(&d, &a).unwrap().is_empty());
}
