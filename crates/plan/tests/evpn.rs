//! The EVPN ownership rule (docs/ownership.md, "EVPN"): a VNI's devices are
//! the agent's only with the structure the agent builds, and foreign
//! `br-foo`, `vrf-blue`, `lo-1` are never touched.

use std::collections::BTreeSet;

use obgp_netmodel::{proto, scope, BridgePort, DesiredNode, EvpnCleanup, LinkKind, RouteType};
use obgp_plan::plan::{order_violations, plan};
use obgp_plan::{Actual, FrrEvpnVrf, KernelRoute, Op, SimulatedNode};
use support::dev;

mod support;

fn add(m: &mut SimulatedNode, name: &str, kind: LinkKind, master: Option<&str>) {
    m.apply(&Op::AddLink {
        name: dev(name),
        kind,
    })
    .unwrap();
    if let Some(master) = master {
        m.apply(&Op::SetMaster {
            name: dev(name),
            master: dev(master),
        })
        .unwrap();
    }
}

fn route(table: u32, dst: &str, dev_name: Option<&str>) -> KernelRoute {
    KernelRoute {
        table,
        v6: false,
        dst: Some(dst.parse().unwrap()),
        metric: None,
        dev: dev_name.map(dev),
        via: None,
        proto: proto::BOOT,
        scope: scope::LINK,
        kind: RouteType::Unicast,
    }
}

/// A node with the agent's VNI 1001 (the SB shape) and foreign devices
/// that look like EVPN ones: `br-foo`, `vrf-blue` (table 77), a lone
/// `lo-1`, and a `vrf-2002` with table 2002 but no VXLAN structure.
fn node() -> Actual {
    let mut m = SimulatedNode::new(Actual::default());
    add(&mut m, "vrf-1001", LinkKind::Vrf { table: 1001 }, None);
    add(&mut m, "br-1001", LinkKind::Bridge, Some("vrf-1001"));
    let vxlan = LinkKind::Vxlan {
        vni: 1001,
        local: Some("10.1.1.1".parse().unwrap()),
        dstport: 4789,
    };
    add(&mut m, "vxlan-1001", vxlan, Some("br-1001"));
    add(&mut m, "lo-1001", LinkKind::Dummy, Some("vrf-1001"));
    let veth = LinkKind::Veth {
        peer: dev("veth-ovs-1001"),
    };
    add(&mut m, "veth-vrf-1001", veth, Some("vrf-1001"));
    add(&mut m, "br-foo", LinkKind::Bridge, None);
    add(&mut m, "vrf-blue", LinkKind::Vrf { table: 77 }, None);
    add(&mut m, "lo-1", LinkKind::Dummy, None);
    add(&mut m, "vrf-2002", LinkKind::Vrf { table: 2002 }, None);
    add(&mut m, "br-2002", LinkKind::Bridge, Some("vrf-2002"));
    let mut a = m.actual;
    a.routes
        .insert(route(1001, "10.0.0.5/32", Some("veth-vrf-1001")));
    a.routes.insert(KernelRoute {
        dev: None,
        kind: RouteType::Unreachable,
        scope: scope::UNIVERSE,
        metric: Some(4_278_198_272),
        ..route(1001, "0.0.0.0/0", None)
    });
    a.routes.insert(route(77, "10.9.9.9/32", Some("vrf-blue")));
    a.routes.insert(route(2002, "10.8.8.8/32", Some("br-2002")));
    a
}

fn evpn_mode(delete_vrf: bool) -> DesiredNode {
    DesiredNode {
        evpn: Some(EvpnCleanup {
            delete_vrf,
            steering_flows: true,
            bridges: BTreeSet::new(),
        }),
        ..DesiredNode::default()
    }
}

fn deleted_links(ops: &[&Op]) -> BTreeSet<String> {
    ops.iter()
        .filter_map(|op| match op {
            Op::DelLink { name } => Some(name.to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn evpn_a_proven_vni_nothing_wants_is_torn_down_and_foreign_look_alikes_stay() {
    let mut a = node();
    a.frr.evpn_vrfs.insert(
        1001,
        FrrEvpnVrf {
            asn: Some("64999".into()),
            interfaces: ["veth-vrf-1001".to_string()].into(),
        },
    );
    let p = plan(&evpn_mode(true), &a).unwrap();
    let ops: Vec<&Op> = p.ops().collect();
    assert_eq!(
        deleted_links(&ops),
        [
            "br-1001",
            "lo-1001",
            "veth-vrf-1001",
            "vrf-1001",
            "vxlan-1001"
        ]
        .map(String::from)
        .into(),
        "{p}"
    );
    // The table's routes go, the device-less unreachable default included;
    // table 77 and the unproven table 2002 are not the agent's.
    let del_routes: Vec<u32> = ops
        .iter()
        .filter_map(|op| match op {
            Op::DelRoute { route, .. } => Some(route.table),
            _ => None,
        })
        .collect();
    assert_eq!(del_routes, vec![1001, 1001], "{p}");
    // del-vrf last: FRR refuses to delete an active VRF.
    let Some(Op::RemoveFrr { config }) = ops.last() else {
        panic!("del-vrf is the last op: {p}")
    };
    assert_eq!(
        config,
        "\nno vrf vrf-1001\nno interface veth-vrf-1001\nno router bgp 64999 vrf vrf-1001\n"
    );
    assert!(order_violations(&p.steps).is_empty(), "{p}");
    let text = p.to_string();
    for foreign in ["br-foo", "vrf-blue", "lo-1 ", "vrf-2002", "br-2002"] {
        assert!(!text.contains(foreign), "{foreign} touched:\n{text}");
    }
}

#[test]
fn evpn_the_vrf_stays_without_delete_vrf_on_disconnect() {
    let mut a = node();
    a.frr.evpn_vrfs.insert(1001, FrrEvpnVrf::default());
    let p = plan(&evpn_mode(false), &a).unwrap();
    let ops: Vec<&Op> = p.ops().collect();
    let gone = deleted_links(&ops);
    assert!(
        !gone.contains("vrf-1001") && gone.contains("br-1001"),
        "{p}"
    );
    assert!(
        !ops.iter().any(|o| matches!(o, Op::RemoveFrr { .. })),
        "{p}"
    );
}

#[test]
fn evpn_names_without_the_structure_prove_nothing() {
    // vxlan-1001 carries another VNI: the group is not the agent's.
    let mut a = node();
    a.links
        .get_mut(&dev("vxlan-1001"))
        .unwrap()
        .vxlan
        .as_mut()
        .unwrap()
        .vni = 7;
    let p = plan(&evpn_mode(true), &a).unwrap();
    assert!(p.is_empty(), "{p}");
}

#[test]
fn evpn_objects_are_never_judged_by_the_underlay_modes() {
    let p = plan(&DesiredNode::default(), &node()).unwrap();
    assert!(p.is_empty(), "{p}");
}

#[test]
fn evpn_a_wanted_vxlan_gets_its_bridge_port_flags_once() {
    let mut d = evpn_mode(true);
    let a = node();
    for l in a.links.iter() {
        let kind = match l.1.kind.as_str() {
            "vrf" if l.0.as_str() == "vrf-1001" => LinkKind::Vrf { table: 1001 },
            "bridge" if l.0.as_str() == "br-1001" => LinkKind::Bridge,
            "vxlan" => LinkKind::Vxlan {
                vni: 1001,
                local: Some("10.1.1.1".parse().unwrap()),
                dstport: 4789,
            },
            _ => continue,
        };
        d.links.insert(obgp_netmodel::Link {
            name: l.0.clone(),
            kind,
            master: l.1.master.clone(),
            mac: None,
            up: true,
        });
    }
    d.evpn_vnis.insert(1001);
    let p = plan(&d, &a).unwrap();
    let flags: Vec<&Op> = p
        .ops()
        .filter(|o| matches!(o, Op::SetBridgePort { .. }))
        .collect();
    assert_eq!(
        flags,
        vec![&Op::SetBridgePort {
            name: dev("vxlan-1001"),
            flags: BridgePort::EVPN
        }],
        "{p}"
    );
    let mut m = SimulatedNode::new(a);
    for op in p.ops() {
        m.apply(op).unwrap();
    }
    let again = plan(&d, &m.actual).unwrap();
    assert!(
        !again.ops().any(|o| matches!(o, Op::SetBridgePort { .. })),
        "{again}"
    );
}

#[test]
fn evpn_the_kernel_local_route_of_a_lo_vni_address_is_removed_and_no_other() {
    let mut a = node();
    let local = |dst: &str, dev_name: &str| KernelRoute {
        proto: proto::KERNEL,
        scope: scope::HOST,
        kind: RouteType::Local,
        ..route(1001, dst, Some(dev_name))
    };
    a.routes.insert(local("10.0.0.5/32", "lo-1001"));
    // The kernel's local route of an address that is not a suppressed one.
    a.routes.insert(local("172.24.4.1/32", "veth-vrf-1001"));
    let mut d = evpn_mode(true);
    d.suppressed_local_routes.insert(obgp_netmodel::Route {
        table: obgp_netmodel::TableRef::Id(1001),
        v6: false,
        dst: Some("10.0.0.5/32".parse().unwrap()),
        dev: Some(dev("lo-1001")),
        via: None,
        proto: proto::KERNEL,
        scope: scope::HOST,
        kind: RouteType::Local,
        metric: None,
    });
    let p = plan(&d, &a).unwrap();
    let dels: Vec<String> = p
        .ops()
        .filter_map(|op| match op {
            Op::DelRoute { route, .. } if route.kind == RouteType::Local => Some(format!(
                "{} {}",
                route.dst.unwrap(),
                route.dev.as_ref().unwrap()
            )),
            _ => None,
        })
        .collect();
    assert_eq!(dels, ["10.0.0.5/32 lo-1001"], "{p}");
}
