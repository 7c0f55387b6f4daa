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

/// A node namespace with real zebra + bgpd started with `config`, and the
/// agent's node layer on it (FRR reached through the router's vty socket).
/// Taken apart as `FrrNode { _ns, _dir, router, mut k }`: locals drop in
/// reverse, so the daemons stop before their directory and namespace go.
struct FrrNode {
    router: FrrRouter,
    k: KernelNode,
    _dir: tempfile::TempDir,
    _ns: Netns,
}

impl FrrNode {
    async fn start(tag: &str, config: &str) -> FrrNode {
        let ns = Netns::new(tag).expect("netns (root)");
        let dir = tempfile::tempdir().unwrap();
        let router = FrrRouter::start(ns.name(), &dir.path().join("frr"), config)
            .expect("FRR (apt package frr)");
        let k = KernelNode::connect(KernelConfig {
            netns: Some(ns.path()),
            rt_tables: dir.path().join("rt_tables"),
            vty_socket: Some(router.vty_dir().to_path_buf()),
            frr_config_dir: dir.path().to_path_buf(),
            ..KernelConfig::default()
        })
        .await
        .unwrap();
        FrrNode {
            router,
            k,
            _dir: dir,
            _ns: ns,
        }
    }
}

#[tokio::test]
async fn vrf_leak_is_applied_once_and_then_recognised_as_ours() {
    let FrrNode {
        _ns,
        _dir,
        router,
        mut k,
    } = FrrNode::start("frr", "router bgp 64999\n bgp router-id 192.168.100.11\n").await;
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

/// An EVPN VRF applied to a real FRR (its add-vrf text) is read back as
/// the agent's (`vrf vrf-1001` holding `vni 1001`, `router bgp 64999 vrf
/// vrf-1001`) by an EVPN scope without a text of ours; its del-vrf text,
/// applied as `Op::RemoveFrr`, removes it. FRR takes the VRF stanza
/// without a kernel VRF device (this kernel has no vrf module).
#[tokio::test]
async fn an_evpn_vrf_is_read_back_and_its_del_vrf_removes_it() {
    use obgp_netmodel::frr::{add_vrf, del_vrf, AddVrf, DelVrf, RedistSource, RouteDistinguisher};
    let FrrNode {
        _ns,
        _dir,
        router,
        mut k,
    } = FrrNode::start(
        "frr-evpn",
        "router bgp 64999\n bgp router-id 192.168.100.11\n",
    )
    .await;
    let scope = Scope {
        evpn: true,
        ..Scope::default()
    };
    let a = k.observe(&scope).await.unwrap();
    assert!(!a.frr.unknown && a.frr.evpn_vrfs.is_empty(), "{:?}", a.frr);

    let vrf = obgp_netmodel::names::evpn::vrf(1001).unwrap();
    let asn: obgp_netmodel::frr::Asn = "64999".parse().unwrap();
    let add = add_vrf(&AddVrf {
        vrf: vrf.clone(),
        vni: 1001,
        asn: asn.clone(),
        redistribute: vec![RedistSource::Connected],
        rd: RouteDistinguisher::of_ip_and_vni("192.168.100.11".parse().unwrap(), 1001).unwrap(),
        route_targets: vec!["64999:1001".parse().unwrap()],
        import_targets: Vec::new(),
        export_targets: Vec::new(),
    });
    k.apply(&Op::ApplyFrr { config: add }).await.unwrap();
    let a = k.observe(&scope).await.unwrap();
    let running = router.vtysh("show running-config").unwrap();
    assert_eq!(
        a.frr.evpn_vrfs.keys().copied().collect::<Vec<_>>(),
        [1001],
        "{running}"
    );
    assert_eq!(
        a.frr.evpn_vrfs[&1001].asn.as_deref(),
        Some("64999"),
        "{running}"
    );

    let removal = del_vrf(&DelVrf {
        vrf,
        asn,
        interfaces: Vec::new(),
    });
    k.apply(&Op::RemoveFrr { config: removal }).await.unwrap();
    let a = k.observe(&scope).await.unwrap();
    let running = router.vtysh("show running-config").unwrap();
    assert!(a.frr.evpn_vrfs.is_empty(), "{running}");
    assert!(!running.contains("vrf-1001"), "{running}");
    assert!(running.contains("router bgp 64999\n"), "{running}");
}

/// The l2vni method's `vni` blocks against a real bgpd: the agent's text
/// is read back as the config it was rendered from; when the annotations
/// drop a route target and change the RD, and a VNI is no longer wanted,
/// the plan makes FRR hold exactly what the desired state gives, and a
/// block the operator wrote by hand stays.
#[tokio::test]
async fn l2_vni_blocks_are_read_back_trimmed_and_removed_and_an_operators_block_stays() {
    use obgp_netmodel::frr::{advertise_all_vni, l2_vni_block, Asn, L2Vni};
    use obgp_netmodel::EvpnCleanup;
    use obgp_plan::plan::plan_after;

    let FrrNode {
        _ns,
        _dir,
        router,
        mut k,
    } = FrrNode::start("frr-l2vni", "router bgp 64999\n bgp router-id 192.168.100.11\n address-family l2vpn evpn\n  advertise-all-vni\n  vni 5005\n   rd 65000:5\n   route-target import 65000:5\n  exit-vni\n exit-address-family\n").await;
    let rt = |s: &str| s.parse().unwrap();
    let asn: Asn = "64999".parse().unwrap();
    let desired = |vnis: &[L2Vni]| {
        let blocks: Vec<String> = vnis.iter().map(l2_vni_block).collect();
        DesiredNode {
            evpn: Some(EvpnCleanup {
                delete_vrf: true,
                steering_flows: false,
                bridges: Default::default(),
            }),
            l2_vni_frr: vnis.iter().map(|v| (v.vni, v.config())).collect(),
            frr_config: Some(advertise_all_vni(&asn, &blocks)),
            ..DesiredNode::default()
        }
    };
    let first = desired(&[
        L2Vni {
            vni: 2001,
            rd: Some(rt("64512:2001")),
            route_targets: vec![rt("64512:1")],
            import_targets: Vec::new(),
            export_targets: vec![rt("64512:3")],
        },
        L2Vni {
            vni: 2002,
            rd: Some(rt("192.168.100.11:7")),
            route_targets: Vec::new(),
            import_targets: Vec::new(),
            export_targets: Vec::new(),
        },
    ]);
    let scope = Scope::for_desired(&first);
    assert!(scope.evpn, "an EVPN desired state reads FRR's EVPN objects");
    let a = k.observe(&scope).await.unwrap();
    let operators = a
        .frr
        .l2_vnis
        .get(&5005)
        .cloned()
        .expect("the operator's block");
    assert!(
        operators.rd.is_some() && !operators.import.is_empty(),
        "{operators:?}"
    );
    let p = plan_after(&first, None, &a).unwrap();
    assert!(!a.frr.has_our_config, "FRR lacks the L2 lines: {p}");
    let report = apply_plan(&mut k, &p).await;
    assert!(report.ok(), "{report:?}");
    let a = k.observe(&scope).await.unwrap();
    let running = router.vtysh("show running-config").unwrap();
    assert!(a.frr.has_our_config, "{running}");
    for (vni, want) in &first.l2_vni_frr {
        assert_eq!(a.frr.l2_vnis.get(vni), Some(want), "{running}");
    }

    // The annotations of 2001 drop `et` and change the RD; 2002 goes.
    let second = desired(&[L2Vni {
        vni: 2001,
        rd: Some(rt("64512:9")),
        route_targets: vec![rt("64512:1")],
        import_targets: Vec::new(),
        export_targets: Vec::new(),
    }]);
    let scope = Scope::for_desired(&second);
    let a = k.observe(&scope).await.unwrap();
    let p = plan_after(&second, Some(&first), &a).unwrap();
    let report = apply_plan(&mut k, &p).await;
    assert!(report.ok(), "{report:?}\n{p}");
    let a = k.observe(&scope).await.unwrap();
    let running = router.vtysh("show running-config").unwrap();
    assert_eq!(
        a.frr.l2_vnis.keys().copied().collect::<Vec<_>>(),
        [2001, 5005],
        "{running}"
    );
    assert_eq!(a.frr.l2_vnis[&2001], second.l2_vni_frr[&2001], "{running}");
    assert_eq!(a.frr.l2_vnis[&5005], operators, "{running}");
    let again = plan_after(&second, Some(&second), &a).unwrap();
    assert_eq!(again.ops().count(), 0, "converged: {again}");
}

/// A text FRR's parser refuses is not applied at all, not even its lines
/// before the bad one, and the error carries FRR's message; the same text
/// without the bad line is then applied.
#[tokio::test]
async fn a_text_frrs_parser_rejects_is_not_applied_and_says_why() {
    let FrrNode {
        _ns,
        _dir,
        router,
        mut k,
    } = FrrNode::start(
        "frr-reject",
        "router bgp 64999\n bgp router-id 192.168.100.11\n",
    )
    .await;
    let good = "\nrouter bgp 64999\n  address-family l2vpn evpn\n    advertise-all-vni\n  exit-address-family\n";
    let bad = format!("{good}\nrouter bgp 64999 vrf bgp-vrf\n  bgp router-idd 192.0.2.1\n");
    let err = k
        .apply(&Op::ApplyFrr { config: bad })
        .await
        .expect_err("FRR's parser refuses `bgp router-idd`");
    let msg = err.to_string();
    assert!(
        matches!(err, obgp_node::IoError::FrrRejected { .. }),
        "{err:?}"
    );
    assert!(msg.contains("router-idd") && msg.contains("line"), "{msg}");
    let running = router.vtysh("show running-config").unwrap();
    assert!(
        !running.contains("advertise-all-vni") && !running.contains("bgp-vrf"),
        "nothing of the rejected text was applied: {running}"
    );
    k.apply(&Op::ApplyFrr {
        config: good.to_string(),
    })
    .await
    .unwrap();
    let running = router.vtysh("show running-config").unwrap();
    assert!(running.contains("advertise-all-vni"), "{running}");
}
