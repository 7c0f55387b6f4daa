//! FRR's `vni <n>` blocks of the l2vni method (docs/evpn.md, "EVPN L2";
//! docs/ownership.md, "EVPN"): a wanted VNI's block loses the lines its
//! annotations no longer give, an unwanted VNI's block goes when it is the
//! agent's (the previous desired state had it, or its L2 devices are
//! structure-proven on the node), and an operator's block stays.

use std::collections::BTreeSet;

use obgp_netmodel::frr::{
    advertise_all_vni, l2_vni_block, l2_vnis_of_running_config, L2Vni, L2VniConfig,
};
use obgp_netmodel::{DesiredNode, EvpnCleanup, LinkKind};
use obgp_plan::plan::{order_violations, plan, plan_after};
use obgp_plan::{Actual, Op, SimulatedNode};
use support::dev;

mod support;

fn rt(s: &str) -> obgp_netmodel::frr::RouteTarget {
    s.parse().unwrap()
}

/// FRR's running configuration as FRR 8.4 prints it (see
/// crates/node/tests/frr.rs for the real one): VNI 3003 (the node's
/// proven L2 VNI), 4004 (no devices here), 5005 (an operator's).
const RUNNING: &str = "router bgp 64999\n bgp router-id 192.0.2.1\n !\n address-family l2vpn evpn\n  advertise-all-vni\n  vni 3003\n   rd 64512:3003\n   route-target import 64512:1\n   route-target import 64512:2\n   route-target export 64512:1\n  exit-vni\n  vni 4004\n   rd 64512:4004\n  exit-vni\n  vni 5005\n   route-target import 65000:5\n  exit-vni\n exit-address-family\nexit\n";

/// The node: L2 VNI 3003's devices, and FRR holding [`RUNNING`] with our
/// text applied.
fn node() -> Actual {
    let mut m = SimulatedNode::new(Actual::default());
    for op in [
        Op::AddLink {
            name: dev("br-3003"),
            kind: LinkKind::Bridge,
        },
        Op::AddLink {
            name: dev("vxlan-3003"),
            kind: LinkKind::Vxlan {
                vni: 3003,
                local: Some("10.1.1.1".parse().unwrap()),
                dstport: 4789,
            },
        },
        Op::SetMaster {
            name: dev("vxlan-3003"),
            master: dev("br-3003"),
        },
    ] {
        m.apply(&op).unwrap();
    }
    let mut a = m.actual;
    a.frr.learn_evpn(RUNNING);
    a.frr.has_our_config = true;
    a
}

fn l2vni_mode(wanted: &[(u32, L2VniConfig)]) -> DesiredNode {
    DesiredNode {
        evpn: Some(EvpnCleanup {
            delete_vrf: true,
            steering_flows: false,
            bridges: BTreeSet::new(),
        }),
        l2_vni_frr: wanted.iter().cloned().collect(),
        ..DesiredNode::default()
    }
}

fn removals(p: &obgp_plan::plan::Plan) -> Vec<String> {
    p.ops()
        .filter_map(|op| match op {
            Op::RemoveFrr { config } => Some(config.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_frr_state_reads_the_default_instances_blocks() {
    let a = node();
    assert_eq!(a.frr.default_asn.as_deref(), Some("64999"));
    assert_eq!(
        a.frr.l2_vnis.keys().copied().collect::<Vec<_>>(),
        [3003, 4004, 5005]
    );
}

#[test]
fn an_unwanted_block_goes_when_its_devices_are_proven_or_it_was_wanted_before() {
    let a = node();
    // Nothing wants an L2 VNI; without a previous state only 3003's
    // devices prove a block the agent's.
    let p = plan(&l2vni_mode(&[]), &a).unwrap();
    assert_eq!(
        removals(&p),
        ["\nrouter bgp 64999\n  address-family l2vpn evpn\n    no vni 3003\n  exit-address-family\n"],
        "{p}"
    );
    // The FRR removal comes after the devices' deletion.
    let ops: Vec<&Op> = p.ops().collect();
    let frr_at = ops
        .iter()
        .position(|o| matches!(o, Op::RemoveFrr { .. }))
        .unwrap();
    let del_at = ops
        .iter()
        .position(|o| matches!(o, Op::DelLink { .. }))
        .expect("teardown");
    assert!(del_at < frr_at, "{p}");
    assert!(order_violations(&p.steps).is_empty(), "{p}");

    // The previous reconcile wanted 4004: its block is the agent's too.
    let previous = l2vni_mode(&[(4004, L2VniConfig::default())]);
    let p = plan_after(&l2vni_mode(&[]), Some(&previous), &a).unwrap();
    assert_eq!(
        removals(&p),
        ["\nrouter bgp 64999\n  address-family l2vpn evpn\n    no vni 3003\n    no vni 4004\n  exit-address-family\n"],
        "5005 is the operator's: {p}"
    );
}

#[test]
fn a_wanted_block_loses_the_lines_its_annotations_dropped_and_converges() {
    let want = L2Vni {
        vni: 3003,
        rd: Some(rt("64512:3003")),
        route_targets: vec![rt("64512:1")],
        import_targets: Vec::new(),
        export_targets: Vec::new(),
    };
    let d = l2vni_mode(&[(3003, want.config())]);
    let mut a = node();
    let p = plan(&d, &a).unwrap();
    assert_eq!(
        removals(&p),
        ["\nrouter bgp 64999\n  address-family l2vpn evpn\n    vni 3003\n      no route-target import 64512:2\n    exit-vni\n  exit-address-family\n"],
        "4004 was never ours and has no devices: {p}"
    );
    let mut m = SimulatedNode::new(a.clone());
    for op in p.ops() {
        m.apply(op).unwrap();
    }
    a = m.actual;
    assert_eq!(a.frr.l2_vnis[&3003], want.config());
    let again = plan(&d, &a).unwrap();
    assert!(removals(&again).is_empty(), "{again}");
}

#[test]
fn a_replaced_rd_is_left_to_the_new_text_and_a_dropped_one_is_removed() {
    let text = |rd: Option<&str>| {
        let v = L2Vni {
            vni: 3003,
            rd: rd.map(rt),
            route_targets: vec![rt("64512:1")],
            import_targets: vec![rt("64512:2")],
            export_targets: Vec::new(),
        };
        (
            advertise_all_vni(&"64999".parse().unwrap(), &[l2_vni_block(&v)]),
            v.config(),
        )
    };
    let (new_text, new_config) = text(Some("64512:9"));
    assert_eq!(l2_vnis_of_running_config(&new_text).vnis[&3003], new_config);
    let mut a = node();
    a.frr.has_our_config = false;
    let p = plan(&l2vni_mode(&[(3003, new_config)]), &a).unwrap();
    assert!(removals(&p).is_empty(), "the new rd replaces the old: {p}");

    let (_, no_rd) = text(None);
    let p = plan(&l2vni_mode(&[(3003, no_rd)]), &node()).unwrap();
    assert_eq!(
        removals(&p),
        ["\nrouter bgp 64999\n  address-family l2vpn evpn\n    vni 3003\n      no rd 64512:3003\n    exit-vni\n  exit-address-family\n"],
        "{p}"
    );
}

#[test]
fn a_wanted_vni_without_annotations_loses_its_whole_block() {
    let p = plan(&l2vni_mode(&[(3003, L2VniConfig::default())]), &node()).unwrap();
    assert_eq!(
        removals(&p),
        ["\nrouter bgp 64999\n  address-family l2vpn evpn\n    no vni 3003\n  exit-address-family\n"],
        "{p}"
    );
}

#[test]
fn nothing_is_removed_from_an_unread_frr_or_outside_the_evpn_modes() {
    let mut a = node();
    let underlay = DesiredNode::default();
    assert!(removals(&plan(&underlay, &a).unwrap()).is_empty());
    a.frr.unknown = true;
    assert!(removals(&plan(&l2vni_mode(&[]), &a).unwrap()).is_empty());
}
