//! A provider network moving from underlay to an EVPN VNI (what
//! `exposing_method = dynamic` plans when an `l3` annotation appears), in
//! plain values: while the VNI's VXLAN device waits for FRR to hold its
//! text, the VM keeps its `bgp_nic` announcement, its wiring and its
//! MAC-tweak flow; the reconcile that creates the device switches them,
//! after it, and the flow whose actions change is replaced in place, not
//! deleted.

use obgp_netmodel::{
    proto, scope, Address, Class, DesiredNode, EvpnCleanup, Flow, FlowAction, IpNet, Link,
    LinkKind, MacAddr, Neighbour, OvsPort, Route, RouteType, Rule, TableRef,
};
use obgp_plan::plan::{order_violations, plan, plan_after};
use obgp_plan::{Actual, ActualLink, Op, SimulatedNode};
use support::{announcing_node, dev, existing};

mod support;

const VM: &str = "172.24.4.10/32";
const ANYCAST: MacAddr = MacAddr([0x02, 0, 0x03, 0xe9, 0, 0]);

fn vm() -> IpNet {
    VM.parse().unwrap()
}

fn host_route(table: TableRef, via_dev: &str) -> Route {
    Route {
        table,
        v6: false,
        dst: Some(vm()),
        dev: Some(dev(via_dev)),
        via: None,
        proto: proto::BOOT,
        scope: scope::LINK,
        kind: RouteType::Unicast,
        metric: None,
    }
}

fn mac_tweak(action: FlowAction) -> Flow {
    Flow {
        bridge: dev("br-ex"),
        cookie: 999,
        table: 0,
        priority: 900,
        protocol: "ip".into(),
        in_port: "patch-provnet-1".into(),
        matches: Vec::new(),
        actions: vec![action, FlowAction::Normal],
    }
}

/// The provider bridge's side both states share.
fn base(frr: &str) -> DesiredNode {
    let mut d = announcing_node(Some(frr));
    d.links.insert(existing(&dev("br-ex")));
    d.bridge_tables.insert(dev("br-ex"));
    d
}

/// The VM through the underlay: on bgp-nic, ruled and routed into the
/// bridge's table, its neighbour on the bridge, the bridge-MAC flow.
fn underlay() -> DesiredNode {
    let mut d = base("leak\n");
    let addr = Address {
        dev: dev("bgp-nic"),
        net: vm(),
    };
    d.addresses.insert(addr, Class::Vm);
    let rule = Rule {
        dst: vm(),
        table: TableRef::Bridge(dev("br-ex")),
        priority: None,
    };
    d.rules.insert(rule, Class::Vm);
    d.routes.insert(
        host_route(TableRef::Bridge(dev("br-ex")), "br-ex"),
        Class::Vm,
    );
    let n = Neighbour {
        dev: dev("br-ex"),
        dst: vm().addr(),
        lladdr: "fa:16:3e:11:11:11".parse().unwrap(),
    };
    d.neighbours.insert(n, Class::Vm);
    d.flows.insert(mac_tweak(FlowAction::ModDlDstBridgeMac));
    d
}

/// The VM through VNI 1001: routed in table 1001 through the VRF's veth
/// end (anycast MAC), the anycast flow on the same patch port.
fn evpn() -> DesiredNode {
    let mut d = base("leak\nvrf vrf-1001\n vni 1001\nexit-vrf\n");
    let link = |name: &str, kind, master: Option<&str>, mac| Link {
        name: dev(name),
        kind,
        master: master.map(dev),
        mac,
        up: true,
    };
    d.links
        .insert(link("vrf-1001", LinkKind::Vrf { table: 1001 }, None, None));
    d.links
        .insert(link("br-1001", LinkKind::Bridge, Some("vrf-1001"), None));
    let vxlan = LinkKind::Vxlan {
        vni: 1001,
        local: Some("10.1.1.1".parse().unwrap()),
        dstport: 4789,
    };
    d.links
        .insert(link("vxlan-1001", vxlan, Some("br-1001"), None));
    let veth = LinkKind::Veth {
        peer: dev("ovsdd3b5a95-aa"),
    };
    d.links.insert(link(
        "vrfdd3b5a95-aa",
        veth,
        Some("vrf-1001"),
        Some(ANYCAST),
    ));
    d.links.insert(existing(&dev("ovsdd3b5a95-aa")));
    d.ovs_ports.insert(OvsPort {
        bridge: dev("br-ex"),
        name: dev("ovsdd3b5a95-aa"),
        tag: None,
        internal: false,
    });
    d.routes
        .insert(host_route(TableRef::Id(1001), "vrfdd3b5a95-aa"), Class::Vm);
    let n = Neighbour {
        dev: dev("vrfdd3b5a95-aa"),
        dst: vm().addr(),
        lladdr: "fa:16:3e:11:11:11".parse().unwrap(),
    };
    d.neighbours.insert(n, Class::Vm);
    d.flows.insert(mac_tweak(FlowAction::ModDlDst(ANYCAST)));
    d.evpn_vnis.insert(1001);
    d.evpn = Some(EvpnCleanup {
        delete_vrf: true,
        steering_flows: false,
        bridges: [dev("br-ex")].into(),
    });
    d
}

/// A node holding `underlay()`.
fn underlay_node() -> SimulatedNode {
    let mut a = Actual::booted();
    let mac = MacAddr([0x02, 0, 0, 0, 0xbe, 1]);
    a.links.insert(
        dev("br-ex"),
        ActualLink::new(2, "openvswitch", Some(mac), true),
    );
    let bridge = a.bridges.entry(dev("br-ex")).or_default();
    bridge.ports.insert("patch-provnet-1".into(), 5);
    let mut node = SimulatedNode::new(a);
    let d = underlay();
    node.apply_all(plan(&d, &node.actual).unwrap().ops());
    assert!(plan_after(&d, Some(&d), &node.actual).unwrap().is_empty());
    node
}

fn on_br_ex_flows(p: &obgp_plan::Plan) -> Vec<String> {
    p.ops()
        .filter(|o| matches!(o, Op::AddFlow { .. } | Op::DelFlow { .. }))
        .map(ToString::to_string)
        .collect()
}

#[test]
fn the_old_announcement_waits_for_the_new_vni_and_the_flow_is_replaced_in_place() {
    let mut node = underlay_node();
    let (old, new) = (underlay(), evpn());
    // The text changed: FRR does not hold it yet.
    node.actual.frr.has_our_config = false;
    let first = plan_after(&new, Some(&old), &node.actual).unwrap();
    assert!(order_violations(&first.steps).is_empty(), "{first}");
    assert!(
        first.ops().all(|o| o.is_add() || o.subject() != Some(vm())),
        "nothing of the VM is withdrawn or unwired yet:\n{first}"
    );
    assert!(on_br_ex_flows(&first).is_empty(), "{first}");
    assert!(first.ops().any(|o| o
        .to_string()
        .starts_with("+ route 172.24.4.10/32 dev vrfdd3b5a95-aa")));
    let held: Vec<&str> = first
        .skipped
        .iter()
        .filter(|s| s.reason.contains("held until VNI 1001"))
        .map(|s| s.what.as_str())
        .collect();
    assert_eq!(
        held.len(),
        5,
        "address, rule, route, neighbour, the flow: {held:?}"
    );
    node.apply_all(first.ops());
    assert!(node.actual.addresses.iter().any(|a| a.net == vm()));

    // FRR read back: the VXLAN device, then the switch.
    node.actual.frr.has_our_config = true;
    let second = plan_after(&new, Some(&new), &node.actual).unwrap();
    assert!(order_violations(&second.steps).is_empty(), "{second}");
    let ops: Vec<String> = second.ops().map(ToString::to_string).collect();
    let vxlan = ops.iter().position(|o| o.starts_with("+ link vxlan-1001"));
    let withdraw = ops
        .iter()
        .position(|o| o == "- address 172.24.4.10/32 dev bgp-nic");
    assert!(vxlan.is_some() && vxlan < withdraw, "{second}");
    assert_eq!(
        on_br_ex_flows(&second),
        ["+ flow br-ex cookie=999,priority=900,ip,in_port=5,actions=mod_dl_dst:02:00:03:e9:00:00,NORMAL"],
        "the flow is replaced in place, not deleted after"
    );
    node.apply_all(second.ops());
    let third = plan_after(&new, Some(&new), &node.actual).unwrap();
    assert!(third.is_empty(), "converged:\n{third}");
}
