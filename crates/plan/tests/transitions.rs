//! Property: from the node any desired state leaves, planning any other
//! desired state and applying it on the simulated node reaches a node that
//! plans empty, with no op rejected and the order O1–O4 respected.

use obgp_netmodel::{
    proto, scope, Address, Class, DesiredNode, Flow, FlowAction, IpNet, Link, LinkKind, Neighbour,
    ProxyNeighbour, Route, RouteType, Rule, Sysctl, TableRef,
};
use obgp_plan::op::Op;
use obgp_plan::plan::{order_violations, plan, plan_after};
use obgp_plan::{Actual, SimulatedNode};
use proptest::prelude::*;
use support::{announcing_node, dev, existing, CLASSES};

mod support;

const IPS: [&str; 6] = [
    "172.24.4.10/32",
    "172.24.4.11/32",
    "172.24.4.100/32",
    "2001:db8::10/128",
    "2001:db8::11/128",
    "2001:db8:1::5/128",
];

/// A desired node from a choice of exposed IPs, their classes, whether they
/// go through a VLAN device, whether a tenant subnet is advertised, and
/// whether the IPs are announced by routes in the VRF table
/// (`announce_with = route`) instead of addresses on bgp-nic.
fn desired(mask: u8, class_of: [usize; 6], vlan: bool, subnet: bool, routes: bool) -> DesiredNode {
    let br = dev("br-ex");
    let wire = if vlan { dev("br-ex.100") } else { br.clone() };
    let mut d = announcing_node(Some("router bgp 64999 vrf bgp-vrf\n"));
    d.links.insert(existing(&br));
    if vlan {
        d.links.insert(Link {
            name: wire.clone(),
            kind: LinkKind::Vlan {
                parent: br.clone(),
                vlan_id: 100,
            },
            master: None,
            mac: None,
            up: true,
        });
        d.sysctls
            .insert(Sysctl::conf(false, &wire, "proxy_arp", "1"));
    }
    d.bridge_tables.insert(br.clone());
    d.sysctls.insert(Sysctl::conf(false, &br, "proxy_arp", "1"));
    d.addresses.insert(
        Address {
            dev: br.clone(),
            net: "169.254.1.1/32".parse().unwrap(),
        },
        Class::Base,
    );
    for v6 in [false, true] {
        d.routes.insert(
            Route {
                table: TableRef::Bridge(br.clone()),
                v6,
                dst: None,
                dev: Some(br.clone()),
                via: None,
                proto: proto::BOOT,
                scope: scope::LINK,
                kind: RouteType::Unicast,
                metric: None,
            },
            Class::Base,
        );
    }
    d.flows.insert(Flow {
        bridge: br.clone(),
        cookie: 999,
        table: 0,
        priority: 900,
        protocol: "ip".into(),
        in_port: "patch-provnet-1".into(),
        matches: Vec::new(),
        actions: vec![FlowAction::ModDlDstBridgeMac, FlowAction::Normal],
    });
    for (i, ip) in IPS.iter().enumerate() {
        if mask & (1 << i) == 0 {
            continue;
        }
        let class = CLASSES[class_of[i] % CLASSES.len()];
        let net: IpNet = ip.parse().unwrap();
        let v6 = ip.contains(':');
        if routes {
            d.routes
                .insert(Route::announcement(net, 10, &dev("bgp-nic")), class);
        } else {
            d.addresses.insert(
                Address {
                    dev: dev("bgp-nic"),
                    net,
                },
                class,
            );
        }
        d.rules.insert(
            Rule {
                dst: net,
                table: TableRef::Bridge(br.clone()),
                priority: None,
            },
            class,
        );
        d.routes.insert(
            Route {
                table: TableRef::Bridge(br.clone()),
                v6,
                dst: Some(net),
                dev: Some(wire.clone()),
                via: None,
                proto: proto::BOOT,
                scope: scope::LINK,
                kind: RouteType::Unicast,
                metric: None,
            },
            class,
        );
        d.neighbours.insert(
            Neighbour {
                dev: wire.clone(),
                dst: net.addr(),
                lladdr: "fa:16:3e:11:11:11".parse().unwrap(),
            },
            class,
        );
        if v6 {
            let p = IpNet::new(net.addr(), 64).unwrap().trunc().addr();
            d.proxy_neighbours.insert(
                ProxyNeighbour {
                    dev: wire.clone(),
                    dst: p,
                },
                class,
            );
        }
    }
    if subnet {
        d.rules.insert(
            Rule {
                dst: "10.0.0.1/24".parse().unwrap(),
                table: TableRef::Bridge(br.clone()),
                priority: None,
            },
            Class::Subnet,
        );
        for table in [TableRef::Bridge(br.clone()), TableRef::Id(10)] {
            let dev_ = if table == TableRef::Id(10) {
                dev("bgp-nic")
            } else {
                br.clone()
            };
            d.routes.insert(
                Route {
                    table,
                    v6: false,
                    dst: Some("10.0.0.0/24".parse().unwrap()),
                    dev: Some(dev_),
                    via: Some("172.24.4.100".parse().unwrap()),
                    proto: proto::BOOT,
                    scope: scope::UNIVERSE,
                    kind: RouteType::Unicast,
                    metric: None,
                },
                Class::Subnet,
            );
        }
    }
    d
}

fn initial() -> Actual {
    let text = std::fs::read_to_string(format!(
        "{}/../../fixtures/conformance/scenarios/nb-provider-vm.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut a: Actual = serde_json::from_value(v["initial_node"].clone()).unwrap();
    let br = a.bridges.get_mut(&dev("br-ex")).unwrap();
    br.ports.insert("patch-provnet-1".into(), 5);
    a
}

fn converge(node: &mut SimulatedNode, d: &DesiredNode, prev: Option<&DesiredNode>) {
    let p = plan_after(d, prev, &node.actual).unwrap();
    let v = order_violations(&p.steps);
    assert!(v.is_empty(), "{v:#?}\n{p}");
    let start = node.log.len();
    node.apply_all(p.ops());
    let failed: Vec<_> = node.log[start..]
        .iter()
        .filter(|(_, r)| r.is_err())
        .collect();
    assert!(failed.is_empty(), "{failed:?}\n{p}");
    let again = plan(d, &node.actual).unwrap();
    assert!(again.is_empty(), "not idempotent:\n{again}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn any_transition_converges_in_one_plan(
        m1 in 0u8..64, c1 in any::<[usize; 6]>(), v1 in any::<bool>(), s1 in any::<bool>(),
        r1 in any::<bool>(),
        m2 in 0u8..64, c2 in any::<[usize; 6]>(), v2 in any::<bool>(), s2 in any::<bool>(),
        r2 in any::<bool>(),
    ) {
        let d1 = desired(m1, c1, v1, s1, r1);
        let d2 = desired(m2, c2, v2, s2, r2);
        let mut node = SimulatedNode::new(initial());
        converge(&mut node, &d1, None);
        converge(&mut node, &d2, Some(&d1));
        // Nothing of d1 that d2 does not want is left in the owned places.
        for a in &node.actual.addresses {
            if a.dev.as_str() == "bgp-nic" {
                prop_assert!(d2.addresses.contains_key(a), "stale {a:?}");
            }
        }
        for n in &node.actual.neighbours {
            prop_assert!(d2.neighbours.contains_key(n), "stale {n:?}");
        }
        for p in &node.actual.proxy_neighbours {
            prop_assert!(d2.proxy_neighbours.contains_key(p), "stale {p:?}");
        }
        prop_assert_eq!(
            node.actual.rules.iter().filter(|r| r.dst.is_some()).count(),
            d2.rules.len()
        );
        for r in node.actual.routes.iter().filter(|r| r.proto == proto::ANNOUNCE) {
            prop_assert!(
                d2.routes.keys().any(|w| w.dst == r.dst && w.proto == proto::ANNOUNCE),
                "stale announcement route {r:?}"
            );
        }
    }

    /// Switching between `announce_with = address` and `route` with the same
    /// exposures withdraws nothing: each prefix's new announcement is added
    /// before its old one goes, and neither removal counts as a withdrawal
    /// (the mass-withdrawal guard must not hold a mode switch).
    #[test]
    fn switching_how_ips_are_announced_withdraws_no_prefix(
        m in 1u8..64, c in any::<[usize; 6]>(), v in any::<bool>(), s in any::<bool>(),
        to_routes in any::<bool>(),
    ) {
        let before = desired(m, c, v, s, !to_routes);
        let after = desired(m, c, v, s, to_routes);
        let mut node = SimulatedNode::new(initial());
        converge(&mut node, &before, None);
        // Until FRR is known to hold the text that redistributes the new
        // announcements, the old ones stay.
        let mut blind = node.actual.clone();
        blind.frr.unknown = true;
        let waiting = plan_after(&after, Some(&before), &blind).unwrap();
        prop_assert!(
            waiting.steps.iter().all(|st| st.op.is_add()),
            "removed before FRR was read:\n{}", waiting
        );
        prop_assert_eq!(waiting.skipped.len(), m.count_ones() as usize + 1, "{}", waiting);
        let p = plan_after(&after, Some(&before), &node.actual).unwrap();
        prop_assert_eq!(p.withdrawals(), 0, "{}", p);
        let announced_at = |net: IpNet| {
            p.steps.iter().position(|st| match &st.op {
                Op::AddAddress(a) => a.net == net,
                Op::ReplaceRoute { route, .. } => {
                    route.table == 10 && route.dst == Some(net)
                }
                _ => false,
            })
        };
        let mut removed = 0;
        for (i, st) in p.steps.iter().enumerate() {
            let gone = match &st.op {
                Op::DelAddress(a) if a.dev.as_str() == "bgp-nic" => a.net,
                Op::DelRoute { route, .. } if route.table == 10 => match route.dst {
                    Some(d) => d,
                    None => continue,
                },
                _ => continue,
            };
            removed += 1;
            let added = announced_at(gone);
            prop_assert!(added.is_some_and(|a| a < i), "{gone} removed at #{i} before it is re-announced:\n{p}");
        }
        prop_assert_eq!(removed, m.count_ones() as usize);
        converge(&mut node, &after, Some(&before));
    }
}
