//! The planner against the golden scenarios' node states, with desired states
//! built by hand for the NB provider-VM cases, applied to the simulated node.

use std::collections::BTreeMap;

use obgp_netmodel::{
    proto, scope, Address, Class, DesiredNode, DevName, Flow, FlowAction, Link, LinkKind,
    Neighbour, ProxyNeighbour, Route, RouteType, Rule, Sysctl, TableRef,
};
use obgp_plan::compare::differences;
use obgp_plan::plan::{order_violations, plan, plan_after, Group, PlanError};
use obgp_plan::{Actual, Op, RtTables, SimulatedNode};
use support::{announcing_node, dev, existing};

mod support;

const PATCH: &str = "patch-provnet-22222222-2222-4222-8222-222222222222-to-br-int";

fn scenario(name: &str) -> serde_json::Value {
    let path = format!(
        "{}/../../fixtures/conformance/scenarios/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn node(v: &serde_json::Value) -> Actual {
    serde_json::from_value(v.clone()).expect("node state loads into Actual")
}

/// The base wiring of the NB underlay driver for br-ex (bridge index 1).
#[test]
fn held_announcements_leave_the_wiring_and_the_withdrawals() {
    let s = scenario("nb-provider-vm");
    let mut p = plan(&with_vm(base("br-ex"), "br-ex"), &node(&s["initial_node"])).unwrap();
    let announced: Vec<Op> = p
        .steps
        .iter()
        .filter(|s| s.group == Group::Announce)
        .map(|s| s.op.clone())
        .collect();
    assert!(!announced.is_empty());
    let rest = p.steps.len() - announced.len();
    let held = p.hold_announcements();
    assert_eq!(held, announced);
    assert_eq!(p.steps.len(), rest);
    assert!(
        p.ops().any(|o| matches!(o, Op::AddRule { .. })),
        "wiring kept"
    );
    assert!(!p
        .ops()
        .any(|o| matches!(o, Op::AddAddress(a) if a.dev.as_str() == "bgp-nic")));
}

fn base(dev_for_vm: &str) -> DesiredNode {
    let br = dev("br-ex");
    let mut d = announcing_node(Some("router bgp 64999 vrf bgp-vrf\n"));
    d.links.insert(existing(&br));
    d.bridge_tables.insert(br.clone());
    let mut wire_dev = |name: &DevName, idx_addr: &str, idx6: &str| {
        d.sysctls
            .insert(Sysctl::conf(false, name, "proxy_arp", "1"));
        d.sysctls.insert(Sysctl::conf(true, name, "proxy_ndp", "1"));
        for net in [idx_addr, idx6] {
            d.addresses.insert(
                Address {
                    dev: name.clone(),
                    net: net.parse().unwrap(),
                },
                Class::Base,
            );
        }
    };
    wire_dev(&br, "169.254.1.1/32", "fd53:d91e:400:7f17::1:1/128");
    if dev_for_vm != "br-ex" {
        let vlan = dev(dev_for_vm);
        d.links.insert(Link {
            name: vlan.clone(),
            kind: LinkKind::Vlan {
                parent: br.clone(),
                vlan_id: 100,
            },
            master: None,
            mac: None,
            up: true,
        });
        wire_dev(&vlan, "169.254.1.100/32", "fd53:d91e:400:7f17::1:64/128");
    }
    for v6 in [false, true] {
        d.routes.insert(
            Route {
                table: TableRef::Bridge(br.clone()),
                v6,
                dst: None,
                dev: Some(br.clone()),
                via: None,
                proto: proto::BOOT,
                scope: if v6 { scope::UNIVERSE } else { scope::LINK },
                kind: RouteType::Unicast,
                metric: None,
            },
            Class::Base,
        );
        d.flows.insert(Flow {
            bridge: br.clone(),
            cookie: 999,
            table: 0,
            priority: 900,
            protocol: if v6 { "ipv6" } else { "ip" }.into(),
            in_port: PATCH.into(),
            matches: Vec::new(),
            actions: vec![FlowAction::ModDlDstBridgeMac, FlowAction::Normal],
        });
    }
    d
}

/// Adds the exposure of the provider VM 172.24.4.10 / 2001:db8::10.
fn with_vm(mut d: DesiredNode, wire_dev: &str) -> DesiredNode {
    let br = dev("br-ex");
    let wdev = dev(wire_dev);
    for ip in ["172.24.4.10/32", "2001:db8::10/128"] {
        let net: obgp_netmodel::IpNet = ip.parse().unwrap();
        d.addresses.insert(
            Address {
                dev: dev("bgp-nic"),
                net,
            },
            Class::Vm,
        );
        d.rules.insert(
            Rule {
                dst: net,
                table: TableRef::Bridge(br.clone()),
                priority: None,
            },
            Class::Vm,
        );
        d.routes.insert(
            Route {
                table: TableRef::Bridge(br.clone()),
                v6: ip.contains(':'),
                dst: Some(net),
                dev: Some(wdev.clone()),
                via: None,
                proto: proto::BOOT,
                scope: scope::LINK,
                kind: RouteType::Unicast,
                metric: None,
            },
            Class::Vm,
        );
        d.neighbours.insert(
            Neighbour {
                dev: wdev.clone(),
                dst: net.addr(),
                lladdr: "fa:16:3e:11:11:11".parse().unwrap(),
            },
            Class::Vm,
        );
    }
    d.proxy_neighbours.insert(
        ProxyNeighbour {
            dev: wdev,
            dst: "2001:db8::".parse().unwrap(),
        },
        Class::Vm,
    );
    d
}

fn apply(actual: &Actual, desired: &DesiredNode) -> (Actual, Vec<Op>) {
    let p = plan(desired, actual).expect("plan");
    assert!(
        order_violations(&p.steps).is_empty(),
        "{:?}",
        order_violations(&p.steps)
    );
    let mut m = SimulatedNode::new(actual.clone());
    m.apply_all(p.ops());
    assert!(m.failures().is_empty(), "model rejected ops: {:?}", m.log);
    (m.actual, p.ops().cloned().collect())
}

#[test]
fn scenario_states_round_trip_through_actual() {
    let s = scenario("nb-vlan-provider-vm");
    let a = node(&s["steps"][1]["node_after"]);
    let back: Actual = serde_json::from_value(serde_json::to_value(&a).unwrap()).unwrap();
    assert_eq!(a, back);
    assert!(a.links.contains_key(&dev("br-ex.100")));
    assert_eq!(a.rt_tables.lookup("br-ex"), Some(1));
}

#[test]
fn provider_vm_sync_reaches_the_golden_final_state_and_then_plans_nothing() {
    let s = scenario("nb-provider-vm");
    let desired = with_vm(base("br-ex"), "br-ex");
    let (got, ops) = apply(&node(&s["initial_node"]), &desired);
    let diff = differences(&node(&s["final_node"]), &got);
    assert!(diff.is_empty(), "{diff:#?}");
    // Table number: smallest free, as the golden data's harness.
    assert!(ops.contains(&Op::AddRtTable {
        number: 1,
        name: dev("br-ex")
    }));
    let again = plan(&desired, &got).unwrap();
    assert!(again.is_empty(), "second plan:\n{again}");
}

#[test]
fn node_configured_by_the_python_agent_is_adopted_with_an_empty_plan() {
    for name in ["nb-provider-vm", "nb-vlan-provider-vm"] {
        let s = scenario(name);
        let wire_dev = if name.contains("vlan") {
            "br-ex.100"
        } else {
            "br-ex"
        };
        let desired = with_vm(base(wire_dev), wire_dev);
        let after_sync = node(&s["steps"][1]["node_after"]);
        let p = plan(&desired, &after_sync).unwrap();
        assert!(p.is_empty(), "{name}:\n{p}");
    }
}

#[test]
fn vm_announcement_comes_after_its_wiring() {
    let s = scenario("nb-provider-vm");
    let p = plan(&with_vm(base("br-ex"), "br-ex"), &node(&s["initial_node"])).unwrap();
    let pos = |pred: &dyn Fn(&Op) -> bool| p.ops().position(pred).unwrap();
    let addr = pos(&|o| matches!(o, Op::AddAddress(a) if a.dev.as_str() == "bgp-nic"));
    let rule = pos(&|o| matches!(o, Op::AddRule { .. }));
    let neigh = pos(&|o| matches!(o, Op::ReplaceNeighbour(_)));
    let proxy = pos(&|o| matches!(o, Op::AddProxyNeighbour(_)));
    assert!(rule < addr && neigh < addr && proxy < addr);
    let groups: Vec<Group> = p.steps.iter().map(|s| s.group).collect();
    let mut sorted = groups.clone();
    sorted.sort();
    assert_eq!(groups, sorted, "groups in order");
}

#[test]
fn missed_withdraw_is_cleaned_by_sync_including_neighbours_and_proxy() {
    let s = scenario("nb-provider-vm-withdraw-by-sync");
    let before = node(&s["steps"][2]["node_after"]);
    let desired = base("br-ex");
    let p = plan_after(&desired, Some(&with_vm(base("br-ex"), "br-ex")), &before).unwrap();
    assert!(order_violations(&p.steps).is_empty());
    let ops: Vec<&Op> = p.ops().collect();
    // O2: both bgp-nic addresses go before any unwiring.
    let last_withdraw = ops
        .iter()
        .rposition(|o| matches!(o, Op::DelAddress(_)))
        .unwrap();
    let first_unwire = ops
        .iter()
        .position(|o| matches!(o, Op::DelRule { .. } | Op::DelRoute { .. }))
        .unwrap();
    assert!(last_withdraw < first_unwire, "{p}");
    let mut m = SimulatedNode::new(before);
    m.apply_all(p.ops());
    assert!(m.failures().is_empty(), "{:?}", m.log);
    // Upstream leaves the neighbours and the proxy entry; we remove them.
    let mut expected = node(&s["final_node"]);
    expected.neighbours.clear();
    expected.proxy_neighbours.clear();
    let diff = differences(&expected, &m.actual);
    assert!(diff.is_empty(), "{diff:#?}");
    assert!(plan(&desired, &m.actual).unwrap().is_empty());
}

#[test]
fn neighbour_without_evidence_of_ours_is_never_deleted() {
    let s = scenario("nb-provider-vm-withdraw-by-sync");
    // The upstream end state: rules and routes are gone, neighbours stayed.
    let after = node(&s["final_node"]);
    let p = plan(&base("br-ex"), &after).unwrap();
    assert!(p.is_empty(), "{p}");
    // With the previous desired state as evidence, they are ours.
    let p = plan_after(
        &base("br-ex"),
        Some(&with_vm(base("br-ex"), "br-ex")),
        &after,
    )
    .unwrap();
    assert_eq!(p.steps.len(), 3, "{p}");
}

#[test]
fn vlan_withdraw_and_provider_network_removal() {
    let s = scenario("nb-vlan-provider-vm");
    let exposed = node(&s["steps"][1]["node_after"]);
    // The VM leaves: unwired on br-ex.100 (not br-ex, upstream's defect).
    let (after_move, ops) = apply(&exposed, &base("br-ex.100"));
    assert!(ops
        .iter()
        .any(|o| matches!(o, Op::DelNeighbour(n) if n.dev.as_str() == "br-ex.100")));
    assert!(plan(&base("br-ex.100"), &after_move).unwrap().is_empty());
    // The provider network goes: the VLAN device is a leftover.
    let (gone, ops) = apply(&after_move, &base("br-ex"));
    assert_eq!(
        ops,
        vec![Op::DelLink {
            name: dev("br-ex.100")
        }]
    );
    // The recording keeps br-ex.100's sysctl keys after the device goes
    // (a fidelity limit of its fake node); Linux, and the simulated node,
    // drop them with the device.
    let mut expected = node(&s["final_node"]);
    expected.sysctls.retain(|k, _| !k.contains(".br-ex/100."));
    assert_eq!(expected.sysctls.len(), 2, "{:?}", expected.sysctls);
    let diff = differences(&expected, &gone);
    assert!(diff.is_empty(), "{diff:#?}");
}

#[test]
fn frr_routes_and_foreign_objects_are_never_deleted() {
    let s = scenario("nb-provider-vm");
    let mut a = node(&s["final_node"]);
    let extra: serde_json::Value = serde_json::json!({
        "routes": [
            {"table": 1, "family": "inet", "dst": "192.0.2.0/24", "dev": "br-ex", "via": null, "proto": 186, "scope": 0, "type": "unicast"},
            {"table": 10, "family": "inet", "dst": "198.51.100.0/24", "dev": "bgp-nic", "via": null, "proto": 186, "scope": 0, "type": "unicast"},
            {"table": 254, "family": "inet", "dst": "203.0.113.0/24", "dev": "eth0", "via": null, "proto": 3, "scope": 253, "type": "unicast"}
        ],
        "rules": [{"family": "inet", "dst": "203.0.113.7/32", "table": 254, "priority": 100}],
        "neighbours": [{"dev": "eth0", "dst": "172.24.4.99", "lladdr": "fa:16:3e:99:99:99", "state": "permanent", "proxy": false}],
        "addresses": {"bgp-nic": ["10.99.0.1/24"], "eth0": ["172.24.4.99/32"]}
    });
    let extra = node(&extra);
    a.routes.extend(extra.routes);
    a.rules.extend(extra.rules);
    a.neighbours.extend(extra.neighbours);
    a.addresses.extend(extra.addresses);
    let p = plan(&with_vm(base("br-ex"), "br-ex"), &a).unwrap();
    assert!(p.is_empty(), "{p}");
}

#[test]
fn leftovers_are_withdrawn_gateway_then_subnet_then_lb() {
    let s = scenario("nb-provider-vm");
    let mut previous = base("br-ex");
    let mut actual_ops = Vec::new();
    for (ip, class) in [
        ("172.24.4.50/32", Class::Lb),
        ("172.24.4.100/32", Class::Gateway),
        ("172.24.4.10/32", Class::Vm),
    ] {
        let net: obgp_netmodel::IpNet = ip.parse().unwrap();
        let a = Address {
            dev: dev("bgp-nic"),
            net,
        };
        previous.addresses.insert(a.clone(), class);
        actual_ops.push(Op::AddAddress(a));
    }
    let mut m = SimulatedNode::new(node(&s["final_node"]));
    m.actual.addresses.clear();
    m.apply_all(&actual_ops);
    let p = plan_after(&base("br-ex"), Some(&previous), &m.actual).unwrap();
    let order: Vec<String> = p
        .ops()
        .filter_map(|o| match o {
            Op::DelAddress(a) => Some(a.net.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        ["172.24.4.100/32", "172.24.4.50/32", "172.24.4.10/32"]
    );
}

#[test]
fn table_number_skips_rt_tables_entries_and_the_vrf_table() {
    let a = Actual {
        rt_tables: RtTables::from("255\tlocal\n1 br-a\n2 br-b\n"),
        ..Actual::default()
    };
    let mut d = DesiredNode {
        vrf_table: 3,
        ..DesiredNode::default()
    };
    d.bridge_tables.insert(dev("br-b"));
    d.bridge_tables.insert(dev("br-c"));
    let p = plan(&d, &a).unwrap();
    assert_eq!(p.tables[&dev("br-b")], 2);
    assert_eq!(p.tables[&dev("br-c")], 4);
    assert_eq!(
        p.ops().cloned().collect::<Vec<_>>(),
        vec![Op::AddRtTable {
            number: 4,
            name: dev("br-c")
        }]
    );
}

#[test]
fn table_exhaustion_is_the_fatal_error() {
    let a = Actual {
        rt_tables: RtTables::parse((1..=252).map(|n| format!("{n} t{n}\n")).collect::<String>()),
        ..Actual::default()
    };
    let mut d = DesiredNode::default();
    d.bridge_tables.insert(dev("br-ex"));
    assert_eq!(
        plan(&d, &a),
        Err(PlanError::TablesExhausted {
            bridge: dev("br-ex")
        })
    );
}

#[test]
fn flow_with_a_missing_port_is_skipped_and_the_rest_planned() {
    let s = scenario("nb-provider-vm");
    let mut a = node(&s["initial_node"]);
    a.bridges
        .get_mut(&dev("br-ex"))
        .unwrap()
        .ports
        .remove(PATCH);
    let p = plan(&with_vm(base("br-ex"), "br-ex"), &a).unwrap();
    assert_eq!(p.skipped.len(), 2, "{p}");
    assert!(p.skipped[0].reason.contains("not on the bridge"));
    assert!(p.ops().any(|o| matches!(o, Op::AddAddress(_))));
    assert!(!p.ops().any(|o| matches!(o, Op::AddFlow { .. })));
}

#[test]
fn undeclared_cookie_999_flow_is_deleted_other_cookies_kept() {
    let s = scenario("nb-provider-vm");
    let mut a = node(&s["final_node"]);
    let flows = &mut a.bridges.get_mut(&dev("br-ex")).unwrap().flows;
    let mut stale = flows.iter().find(|f| f.cookie == 999).unwrap().clone();
    stale.matches = ["ip".to_string(), "in_port=9".to_string()].into();
    flows.insert(stale.clone());
    let mut other = stale.clone();
    other.cookie = 0x1234;
    flows.insert(other);
    let p = plan(&with_vm(base("br-ex"), "br-ex"), &a).unwrap();
    assert_eq!(
        p.ops().cloned().collect::<Vec<_>>(),
        vec![Op::DelFlow {
            bridge: dev("br-ex"),
            flow: stale
        }]
    );
}

#[test]
fn cookie_999_flows_on_a_bridge_only_the_previous_state_used_are_deleted() {
    // `exposing_method = ovn`: a fabric bridge has flows but no table; its
    // segment went, so only the previous desired state names it.
    let s = scenario("nb-provider-vm");
    let mut a = node(&s["final_node"]);
    let fab = a.bridges[&dev("br-ex")].clone();
    let stale = fab.flows.iter().find(|f| f.cookie == 999).unwrap().clone();
    a.bridges.insert(dev("br-fab"), fab);
    let now = with_vm(base("br-ex"), "br-ex");
    let mut prev = now.clone();
    let mut on_fab = prev.flows.iter().next().unwrap().clone();
    on_fab.bridge = dev("br-fab");
    prev.flows.insert(on_fab);
    let dels = |p: &obgp_plan::Plan| -> Vec<Op> {
        p.ops()
            .filter(|o| matches!(o, Op::DelFlow { bridge, .. } if bridge.as_str() == "br-fab"))
            .cloned()
            .collect()
    };
    let p = plan_after(&now, Some(&prev), &a).unwrap();
    assert!(
        dels(&p).contains(&Op::DelFlow {
            bridge: dev("br-fab"),
            flow: stale
        }),
        "{p}"
    );
    // Without that history the bridge is nobody's concern of the agent.
    assert!(dels(&plan(&now, &a).unwrap()).is_empty());
}

#[test]
fn plan_prints_grouped_one_line_per_op() {
    let s = scenario("nb-provider-vm");
    let p = plan(&with_vm(base("br-ex"), "br-ex"), &node(&s["initial_node"])).unwrap();
    let text = p.to_string();
    assert!(text.starts_with("base wiring:\n"), "{text}");
    assert!(text.contains("\nexpose:\n"));
    assert!(
        text.contains("  + rule to 172.24.4.10/32 lookup br-ex (table 1)\n"),
        "{text}"
    );
    // One line per op; FRR texts follow, their lines marked `  | `.
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("  ") && !l.starts_with("  | "))
            .count(),
        p.steps.len()
    );
    let _: BTreeMap<String, serde_json::Value> =
        serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
}

#[test]
fn unreadable_frr_and_ovs_plan_no_frr_or_flow_op_but_still_expose() {
    // The initial node of the golden scenario, as observed while vtysh and
    // ovs-ofctl were wedged: FRR's state and br-ex's flows are unknown.
    let s = scenario("nb-provider-vm");
    let mut actual = node(&s["initial_node"]);
    actual.frr.unknown = true;
    actual.bridges.clear();
    actual.bridges_unknown.insert(dev("br-ex"));
    let desired = with_vm(base("br-ex"), "br-ex");
    let p = plan(&desired, &actual).unwrap();
    let ops: Vec<&Op> = p.ops().collect();
    assert!(
        !ops.iter().any(|o| matches!(
            o,
            Op::ApplyFrr { .. } | Op::AddFlow { .. } | Op::DelFlow { .. }
        )),
        "{p}"
    );
    // The netlink side goes on: the VM is wired and announced.
    let vm: obgp_netmodel::IpNet = "172.24.4.10/32".parse().unwrap();
    assert!(
        ops.iter()
            .any(|o| matches!(o, Op::AddAddress(a) if a.net == vm)),
        "{p}"
    );
    let reasons: Vec<&str> = p.skipped.iter().map(|s| s.reason.as_str()).collect();
    assert!(
        reasons.contains(&"FRR's running configuration could not be read"),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&"the bridge's flows could not be read"),
        "{reasons:?}"
    );
}

#[test]
fn a_device_the_agent_creates_that_exists_as_another_kind_is_refused() {
    // bgp_nic = lo, bgp_nic = eth0, bgp_vrf = eth0 on the golden node.
    let actual = node(&scenario("nb-provider-vm")["initial_node"]);
    for (name, want_vrf) in [("lo", false), ("eth0", false), ("eth0", true)] {
        let mut d = base("br-ex");
        let kind = if want_vrf {
            LinkKind::Vrf { table: 10 }
        } else {
            LinkKind::Dummy
        };
        d.links.insert(Link {
            name: dev(name),
            kind,
            master: None,
            mac: None,
            up: true,
        });
        match plan(&d, &actual) {
            Err(PlanError::ForeignDevice { name: n, .. }) => assert_eq!(n.as_str(), name),
            other => panic!("{name}: {other:?}"),
        }
    }
    // A dummy stand-in of the documented kind (ifb) and the agent's own
    // devices are adopted.
    let mut with_ifb = actual.clone();
    let mut nic = with_ifb.links[&dev("eth0")].clone();
    nic.kind = "ifb".into();
    with_ifb.links.insert(dev("bgp-nic"), nic);
    assert!(plan(&base("br-ex"), &with_ifb).is_ok());
}

#[test]
fn a_vrf_table_named_in_rt_tables_is_reported_not_changed() {
    let s = scenario("nb-provider-vm");
    let desired = with_vm(base("br-ex"), "br-ex");
    let mut actual = node(&s["initial_node"]);
    let quiet = plan(&desired, &actual).unwrap();
    assert!(quiet.warnings.is_empty(), "{:?}", quiet.warnings);
    // An operator's table with bgp_vrf_table_id's number (10).
    actual.rt_tables.append(10, "customer");
    let p = plan(&desired, &actual).unwrap();
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
    assert!(
        p.warnings[0].contains("table 10 \"customer\""),
        "{}",
        p.warnings[0]
    );
    assert!(p
        .to_string()
        .contains("warnings:\n  /etc/iproute2/rt_tables names table 10"));
    // Nothing else changes: the same ops, and rt_tables is not rewritten.
    assert_eq!(p.ops().collect::<Vec<_>>(), quiet.ops().collect::<Vec<_>>());
}

#[test]
fn a_vrf_route_through_a_gateway_comes_after_the_on_link_route_to_it() {
    // stretched L2: the tenant subnet sorts before its provider subnet, but
    // the kernel refuses `via 172.24.4.100` until 172.24.4.0/24 is on-link.
    let mut d = base("br-ex");
    let route = |dst: &str, via: Option<&str>, scope| Route {
        table: TableRef::Id(10),
        v6: false,
        dst: Some(dst.parse().unwrap()),
        dev: Some(dev("bgp-nic")),
        via: via.map(|v| v.parse().unwrap()),
        proto: proto::BOOT,
        scope,
        kind: RouteType::Unicast,
        metric: None,
    };
    d.routes.insert(
        route("10.0.0.0/24", Some("172.24.4.100"), scope::UNIVERSE),
        Class::Subnet,
    );
    d.routes
        .insert(route("172.24.4.0/24", None, scope::LINK), Class::Gateway);
    let (_, ops) = apply(&node(&scenario("nb-provider-vm")["initial_node"]), &d);
    let at = |dst: &str| {
        ops.iter()
            .position(|o| {
                matches!(o, Op::ReplaceRoute { route, .. }
                    if route.dst.map(|n| n.to_string()).as_deref() == Some(dst))
            })
            .unwrap_or_else(|| panic!("{dst} not planned: {ops:?}"))
    };
    assert!(at("172.24.4.0/24") < at("10.0.0.0/24"), "{ops:?}");
}

#[test]
fn a_static_fdb_entry_is_added_once_on_a_port_the_bridge_has_and_never_removed() {
    let s = scenario("nb-provider-vm");
    let a = node(&s["final_node"]);
    let entry = |port: &str, mac: &str| obgp_netmodel::FdbEntry {
        bridge: dev("br-ex"),
        port: port.into(),
        vlan: 0,
        mac: mac.parse().unwrap(),
    };
    let mut d = with_vm(base("br-ex"), "br-ex");
    // The bridge's own port, one of its ports, one it lacks.
    d.fdb = [
        entry("br-ex", "52:54:00:30:93:ea"),
        entry(PATCH, "52:54:00:30:93:eb"),
        entry("patch-gone", "52:54:00:30:93:ec"),
    ]
    .into();
    let p = plan(&d, &a).unwrap();
    let added: Vec<String> = p
        .ops()
        .filter(|o| matches!(o, Op::AddFdb(_)))
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        added,
        [
            "+ fdb br-ex br-ex vlan 0 52:54:00:30:93:ea".to_string(),
            format!("+ fdb br-ex {PATCH} vlan 0 52:54:00:30:93:eb"),
        ],
        "{p}"
    );
    assert_eq!(p.skipped.len(), 1, "{p}");
    assert!(
        p.skipped[0].reason.contains("patch-gone is not on br-ex"),
        "{p}"
    );
    let (after, _) = apply(&a, &d);
    let again = plan(&d, &after).unwrap();
    assert!(!again.ops().any(|o| matches!(o, Op::AddFdb(_))), "{again}");
    // Nothing wants them any more: they stay (no owner mark to judge by).
    let gone = plan(&with_vm(base("br-ex"), "br-ex"), &after).unwrap();
    assert!(gone.is_empty(), "{gone}");
    // The node state file carries them.
    let round = Actual::try_from(obgp_plan::actual::state::NodeState::from(after.clone())).unwrap();
    assert_eq!(
        round.bridges[&dev("br-ex")].fdb,
        after.bridges[&dev("br-ex")].fdb
    );
    // An unread bridge plans no entry.
    let mut unknown = a.clone();
    unknown.bridges.remove(&dev("br-ex"));
    unknown.bridges_unknown.insert(dev("br-ex"));
    let p = plan(&d, &unknown).unwrap();
    assert!(!p.ops().any(|o| matches!(o, Op::AddFdb(_))), "{p}");
}
