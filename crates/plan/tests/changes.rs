//! `plan_changes` against `plan_after`: on a node that holds a previous
//! desired state (and objects of earlier runs at the changed keys),
//! planning only the changed keys gives the full plan's steps, in its
//! order, and its skips; and it plans in full where the changed keys alone
//! cannot tell.

use std::collections::{BTreeMap, BTreeSet};

use obgp_netmodel::{
    proto, scope, Address, Class, DesiredNode, DevName, IpNet, MacAddr, Neighbour, NodeChanges,
    ProxyNeighbour, Route, RouteType, Rule, TableRef,
};
use obgp_plan::plan::{plan_after, plan_changes, Coverage, Plan};
use obgp_plan::{Actual, ActualLink, KernelRoute, KernelRule, SimulatedNode};
use proptest::prelude::*;
use support::{announcing_node, dev, existing, CLASSES};

mod support;

const IPS: [&str; 8] = [
    "172.24.4.10/32",
    "172.24.4.11/32",
    "172.24.4.12/32",
    "172.24.4.100/32",
    "10.0.0.5/32",
    "2001:db8::10/128",
    "2001:db8::11/128",
    "2001:db8:1::5/128",
];
const BRIDGES: [&str; 2] = ["br-ex", "br-vlan"];

/// One exposed IP: its class, the bridge it is wired to (or none: announced
/// only), the neighbour's MAC (or none) and, for IPv6, a proxy NDP entry.
#[derive(Clone, Copy, Debug)]
struct Exposure {
    class: usize,
    bridge: Option<usize>,
    mac: Option<u8>,
    proxy: bool,
}

fn exposure() -> impl Strategy<Value = Exposure> {
    (
        0..CLASSES.len(),
        prop::option::weighted(0.8, 0..BRIDGES.len()),
        prop::option::weighted(0.7, 0u8..3),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(class, bridge, mac, proxy)| Exposure {
            class,
            bridge,
            mac,
            proxy,
        })
}

/// The exposures of each IP of [`IPS`] (none: not exposed).
fn exposures() -> impl Strategy<Value = Vec<Option<Exposure>>> {
    prop::collection::vec(prop::option::weighted(0.6, exposure()), IPS.len())
}

fn route(table: TableRef, v6: bool, dst: Option<IpNet>, dev: DevName) -> Route {
    Route {
        table,
        v6,
        dst,
        dev: Some(dev),
        via: None,
        proto: proto::BOOT,
        scope: if v6 { scope::UNIVERSE } else { scope::LINK },
        kind: RouteType::Unicast,
        metric: None,
    }
}

/// A node's desired objects: bgp-vrf and bgp-nic, both bridges mapped
/// (their ARP address and default routes) and the exposures.
fn desired(exposed: &[Option<Exposure>]) -> DesiredNode {
    let mut d = announcing_node(None);
    for (i, b) in BRIDGES.iter().enumerate() {
        let br = dev(b);
        d.links.insert(existing(&br));
        d.bridge_tables.insert(br.clone());
        let arp: IpNet = format!("169.254.{}.{}/32", i + 1, i + 1).parse().unwrap();
        d.addresses.insert(
            Address {
                dev: br.clone(),
                net: arp,
            },
            Class::Base,
        );
        for v6 in [false, true] {
            d.routes.insert(
                route(TableRef::Bridge(br.clone()), v6, None, br.clone()),
                Class::Base,
            );
        }
    }
    for (ip, e) in IPS.iter().zip(exposed) {
        let Some(e) = e else { continue };
        let class = CLASSES[e.class];
        let net: IpNet = ip.parse().unwrap();
        let v6 = net.addr().is_ipv6();
        d.addresses.insert(
            Address {
                dev: dev("bgp-nic"),
                net,
            },
            class,
        );
        let Some(b) = e.bridge else { continue };
        let br = dev(BRIDGES[b]);
        let table = TableRef::Bridge(br.clone());
        d.rules.insert(
            Rule {
                dst: net,
                table: table.clone(),
                priority: None,
            },
            class,
        );
        d.routes
            .insert(route(table, v6, Some(net), br.clone()), class);
        if let Some(m) = e.mac {
            d.neighbours.insert(
                Neighbour {
                    dev: br.clone(),
                    dst: net.addr(),
                    lladdr: MacAddr([0xfa, 0x16, 0x3e, 0, 0, m]),
                },
                class,
            );
        }
        if v6 && e.proxy {
            let p = IpNet::new(net.addr(), 64).unwrap().trunc().addr();
            d.proxy_neighbours
                .entry(ProxyNeighbour { dev: br, dst: p })
                .or_insert(class);
        }
    }
    d
}

/// A node with both bridges and the kernel's default rules, before the
/// agent.
fn bare() -> Actual {
    let mut a = Actual::booted();
    for (i, b) in BRIDGES.iter().enumerate() {
        let mac = MacAddr([0xaa, 0, 0, 0, 0, i as u8 + 1]);
        a.links.insert(
            dev(b),
            ActualLink::new(i as u32 + 2, "openvswitch", Some(mac), true),
        );
    }
    a
}

/// The node after the agent converged it on `d`.
fn converged(d: &DesiredNode) -> Actual {
    let mut m = SimulatedNode::new(bare());
    let p = plan_after(d, None, &m.actual).unwrap();
    m.apply_all(p.ops());
    let failed: Vec<_> = m.log.iter().filter(|(_, r)| r.is_err()).collect();
    assert!(failed.is_empty(), "{failed:?}");
    m.actual
}

/// The keys whose class differs (or that one side lacks).
fn diff<K: Ord + Clone>(a: &BTreeMap<K, Class>, b: &BTreeMap<K, Class>) -> BTreeSet<K> {
    let keys: BTreeSet<&K> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

/// What a patch from `from` to `to` lists, with `extra` of `from`'s keys
/// to hosts that did not change (a patch that removed and re-added an
/// object lists it too).
fn changes(from: &DesiredNode, to: &DesiredNode, extra: usize) -> NodeChanges {
    let mut c = NodeChanges {
        addresses: diff(&from.addresses, &to.addresses),
        rules: diff(&from.rules, &to.rules),
        routes: diff(&from.routes, &to.routes),
        neighbours: diff(&from.neighbours, &to.neighbours),
        proxy_neighbours: from.proxy_neighbours != to.proxy_neighbours,
    };
    c.addresses
        .extend(from.addresses.keys().take(extra).cloned());
    c.rules.extend(from.rules.keys().take(extra).cloned());
    c.routes.extend(
        from.routes
            .keys()
            .filter(|r| r.dst.is_some_and(|d| d.prefix_len() == d.max_prefix_len()))
            .take(extra)
            .cloned(),
    );
    c.neighbours
        .extend(from.neighbours.keys().take(extra).cloned());
    c
}

/// The plans agree on steps (in order) and skips.
fn assert_same(inc: &Plan, full: &Plan) {
    assert_eq!(inc.steps, full.steps, "incremental:\n{inc}\nfull:\n{full}");
    assert_eq!(inc.skipped, full.skipped);
    assert_eq!(inc.warnings, full.warnings);
}

/// Puts an FRR route (proto 186) on the kernel key of each route of `d`
/// into `table` whose destination is `ip`.
fn frr_route_at(a: &mut Actual, ip: &str) {
    let net: IpNet = ip.parse().unwrap();
    for b in BRIDGES {
        let Some(table) = a.rt_tables.lookup(b) else {
            continue;
        };
        a.routes.insert(KernelRoute {
            table,
            v6: net.addr().is_ipv6(),
            dst: Some(net),
            metric: None,
            dev: Some(dev("eth9")),
            via: None,
            proto: proto::FRR,
            scope: scope::UNIVERSE,
            kind: RouteType::Unicast,
        });
    }
}

/// An object of the agent's kinds at IP `ip` (an index into [`IPS`]) that
/// no desired state asked for: left by an earlier run.
#[derive(Clone, Copy, Debug)]
enum Stale {
    Address,
    /// A rule into a bridge's table, at a priority the kernel chose.
    Rule {
        bridge: usize,
        priority: u32,
    },
    Neighbour {
        bridge: usize,
        mac: u8,
    },
}

fn stale() -> impl Strategy<Value = (usize, Stale)> {
    let what = prop_oneof![
        Just(Stale::Address),
        (0..BRIDGES.len(), 100u32..103)
            .prop_map(|(bridge, priority)| Stale::Rule { bridge, priority }),
        (0..BRIDGES.len(), 7u8..9).prop_map(|(bridge, mac)| Stale::Neighbour { bridge, mac }),
    ];
    (0..IPS.len(), what)
}

/// Puts the stale object on the node, and its key in the changes: the
/// incremental planner judges the kernel at the keys it is given.
fn put_stale(a: &mut Actual, c: &mut NodeChanges, ip: usize, what: Stale) {
    let net: IpNet = IPS[ip].parse().unwrap();
    match what {
        Stale::Address => {
            let ad = Address {
                dev: dev("bgp-nic"),
                net,
            };
            a.addresses.insert(ad.clone());
            c.addresses.insert(ad);
        }
        Stale::Rule { bridge, priority } => {
            let b = dev(BRIDGES[bridge]);
            let table = a.rt_tables.lookup(b.as_str()).unwrap();
            let v6 = net.addr().is_ipv6();
            a.rules.insert(KernelRule {
                v6,
                priority,
                dst: Some(net),
                table,
            });
            c.rules.insert(Rule {
                dst: net,
                table: TableRef::Bridge(b),
                priority: None,
            });
        }
        Stale::Neighbour { bridge, mac } => {
            let n = Neighbour {
                dev: dev(BRIDGES[bridge]),
                dst: net.addr(),
                lladdr: MacAddr([0xfa, 0x16, 0x3e, 0, 0, mac]),
            };
            a.neighbours.insert(n.clone());
            c.neighbours.insert(Neighbour {
                lladdr: MacAddr([0; 6]),
                ..n
            });
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn planning_the_changes_equals_planning_the_node(
        before in exposures(),
        after in exposures(),
        extra in 0usize..3,
        frr in prop::option::weighted(0.2, 0..IPS.len()),
        stale in prop::collection::vec(stale(), 0..3),
    ) {
        let (prev, now) = (desired(&before), desired(&after));
        let mut actual = converged(&prev);
        if let Some(i) = frr {
            frr_route_at(&mut actual, IPS[i]);
        }
        // The node holds the previous desired state.
        let held = plan_after(&prev, Some(&prev), &actual).unwrap();
        prop_assert!(held.steps.is_empty(), "{}", held);

        let mut c = changes(&prev, &now, extra);
        for (ip, what) in stale {
            put_stale(&mut actual, &mut c, ip, what);
        }
        let full = plan_after(&now, Some(&prev), &actual).unwrap();
        let (inc, how) = plan_changes(&now, Some(&prev), &actual, &c).unwrap();
        if c.proxy_neighbours {
            prop_assert_eq!(how, Coverage::Full("the proxy NDP entries changed"));
        } else {
            prop_assert_eq!(how, Coverage::Changes);
        }
        assert_same(&inc, &full);
    }
}

/// A VM exposed on br-ex with a neighbour.
fn vm(class: usize) -> Option<Exposure> {
    Some(Exposure {
        class,
        bridge: Some(0),
        mac: Some(1),
        proxy: false,
    })
}

#[test]
fn a_vm_coming_and_going_is_planned_from_its_keys_alone() {
    let mut exposed = vec![None; IPS.len()];
    exposed[3] = vm(3);
    let prev = desired(&exposed);
    exposed[0] = vm(0);
    let now = desired(&exposed);
    let actual = converged(&prev);

    let c = changes(&prev, &now, 0);
    assert_eq!(c.len(), 4, "{c:?}");
    let (up, how) = plan_changes(&now, Some(&prev), &actual, &c).unwrap();
    assert_eq!(how, Coverage::Changes);
    let ops: Vec<String> = up.ops().map(|op| op.to_string()).collect();
    assert_eq!(ops.len(), 4, "{up}");
    assert!(ops.iter().all(|op| op.starts_with('+')), "{up}");
    assert_same(&up, &plan_after(&now, Some(&prev), &actual).unwrap());

    // And back: the VM's objects are withdrawn, then unwired.
    let after = converged(&now);
    let (down, how) = plan_changes(&prev, Some(&now), &after, &changes(&now, &prev, 0)).unwrap();
    assert_eq!(how, Coverage::Changes);
    assert_eq!(down.withdrawals(), 1, "{down}");
    assert_eq!(down.steps.len(), 4, "{down}");
    assert!(
        down.steps.iter().all(|s| s.class == Some(Class::Vm)),
        "{down}"
    );
    assert_same(&down, &plan_after(&prev, Some(&now), &after).unwrap());
}

#[test]
fn no_change_plans_nothing_even_where_the_node_drifted() {
    let mut exposed = vec![None; IPS.len()];
    exposed[1] = vm(0);
    let d = desired(&exposed);
    let mut actual = converged(&d);
    // Drift the full plan repairs: the address is gone.
    actual.addresses.clear();
    let (p, how) = plan_changes(&d, Some(&d), &actual, &NodeChanges::default()).unwrap();
    assert_eq!(how, Coverage::Changes);
    assert!(p.is_empty(), "{p}");
    assert!(!plan_after(&d, Some(&d), &actual).unwrap().is_empty());
}

#[test]
fn what_the_changed_keys_cannot_tell_is_planned_in_full() {
    let mut exposed = vec![None; IPS.len()];
    exposed[0] = vm(0);
    let prev = desired(&exposed);
    exposed[1] = vm(1);
    let now = desired(&exposed);
    let actual = converged(&prev);
    let c = changes(&prev, &now, 0);
    let full = plan_after(&now, Some(&prev), &actual).unwrap();

    let (p, how) = plan_changes(&now, None, &actual, &c).unwrap();
    assert_eq!(how, Coverage::Full("no previous desired state"));
    assert_eq!(p, plan_after(&now, None, &actual).unwrap());

    let mut proxies = c.clone();
    proxies.proxy_neighbours = true;
    let (p, how) = plan_changes(&now, Some(&prev), &actual, &proxies).unwrap();
    assert_eq!(how, Coverage::Full("the proxy NDP entries changed"));
    assert_eq!(p, full);

    let mut subnet = c.clone();
    subnet.rules.insert(Rule {
        dst: "10.0.0.1/24".parse().unwrap(),
        table: TableRef::Bridge(dev("br-ex")),
        priority: None,
    });
    let (_, how) = plan_changes(&now, Some(&prev), &actual, &subnet).unwrap();
    assert_eq!(how, Coverage::Full("a changed destination is not a host"));

    // br-vlan lost its rt_tables entry: the full plan allocates one.
    let mut no_table = actual.clone();
    no_table.rt_tables = obgp_plan::RtTables::parse(
        no_table
            .rt_tables
            .text_lossy()
            .lines()
            .filter(|l| !l.ends_with("br-vlan"))
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    );
    let (p, how) = plan_changes(&now, Some(&prev), &no_table, &c).unwrap();
    assert_eq!(how, Coverage::Full("a bridge has no rt_tables entry yet"));
    assert!(
        p.ops()
            .any(|op| matches!(op, obgp_plan::Op::AddRtTable { .. })),
        "{p}"
    );

    // The bridge of the new VM is gone from the node.
    let mut no_bridge = actual.clone();
    no_bridge.links.remove(&dev("br-ex"));
    let (_, how) = plan_changes(&now, Some(&prev), &no_bridge, &c).unwrap();
    assert_eq!(
        how,
        Coverage::Full("the device of a changed object is missing")
    );
}

#[test]
fn a_stale_neighbour_of_a_changed_key_is_judged_by_the_same_evidence() {
    // The kernel holds a neighbour on br-ex for an IP that neither desired
    // state has (a leftover from an agent run before the previous one):
    // the full plan deletes it because a host rule into br-ex's table has
    // its destination, and so does the incremental one when the key changed.
    let mut exposed = vec![None; IPS.len()];
    exposed[2] = Some(Exposure {
        class: 0,
        bridge: Some(0),
        mac: None,
        proxy: false,
    });
    let d = desired(&exposed);
    let mut actual = converged(&d);
    let stale = Neighbour {
        dev: dev("br-ex"),
        dst: "172.24.4.12".parse().unwrap(),
        lladdr: MacAddr([0xfa, 0x16, 0x3e, 0, 0, 9]),
    };
    actual.neighbours.insert(stale.clone());
    let mut c = NodeChanges::default();
    c.neighbours.insert(Neighbour {
        lladdr: MacAddr([0xfa, 0x16, 0x3e, 0, 0, 1]),
        ..stale.clone()
    });
    let (p, how) = plan_changes(&d, Some(&d), &actual, &c).unwrap();
    assert_eq!(how, Coverage::Changes);
    assert_eq!(
        p.ops().cloned().collect::<Vec<_>>(),
        [obgp_plan::Op::DelNeighbour(stale)]
    );
    assert_same(&p, &plan_after(&d, Some(&d), &actual).unwrap());
}

#[test]
fn the_few_object_kinds_are_planned_whole_and_a_created_device_plans_in_full() {
    let mut exposed = vec![None; IPS.len()];
    exposed[0] = vm(0);
    let d = desired(&exposed);
    let mut actual = converged(&d);
    // A link drifted: an event's plan repairs it, as the full plan does.
    actual.links.get_mut(&dev("bgp-nic")).expect("created").up = false;
    let (p, how) = plan_changes(&d, Some(&d), &actual, &NodeChanges::default()).unwrap();
    assert_eq!(how, Coverage::Changes);
    assert_eq!(
        p.ops().cloned().collect::<Vec<_>>(),
        [obgp_plan::Op::SetLinkUp {
            name: dev("bgp-nic")
        }]
    );
    assert_same(&p, &plan_after(&d, Some(&d), &actual).unwrap());

    // bgp-nic is gone, and its addresses with it: created again, it needs
    // every one of them, which only the full plan judges.
    actual.links.remove(&dev("bgp-nic"));
    actual.addresses.retain(|a| a.dev != dev("bgp-nic"));
    let (p, how) = plan_changes(&d, Some(&d), &actual, &NodeChanges::default()).unwrap();
    assert_eq!(how, Coverage::Full("a device is created"));
    assert!(
        p.ops()
            .any(|op| matches!(op, obgp_plan::Op::AddAddress(a) if a.dev == dev("bgp-nic"))),
        "{p}"
    );
}
