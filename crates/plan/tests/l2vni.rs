//! The L2 VNIs' ownership rule (`exposing_method = l2vni`,
//! docs/ownership.md, "EVPN"): `br-<n>` in no VRF holding `vxlan-<n>`
//! with VNI `n` is the agent's, with its agent-named veth ends and the
//! permanent neighbours on the bridge and the static FDB entries on those
//! veth ends; foreign `br-*` and `vxlan-*` look-alikes, the FDB entries on
//! any other port or bridge, and routes in a table numbered like the VNI,
//! are never touched.

use std::collections::BTreeSet;

use obgp_netmodel::{
    proto, scope, BridgeFdbEntry, BridgePort, Class, DesiredNode, EvpnCleanup, Link, LinkKind,
    MacAddr, Neighbour, RouteType,
};
use obgp_plan::plan::{order_violations, plan};
use obgp_plan::{Actual, KernelRoute, Op, SimulatedNode};
use proptest::prelude::*;
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

fn vxlan(vni: u32) -> LinkKind {
    LinkKind::Vxlan {
        vni,
        local: Some("10.1.1.1".parse().unwrap()),
        dstport: 4789,
    }
}

fn neighbour(dev_name: &str, ip: &str, last: u8) -> Neighbour {
    Neighbour {
        dev: dev(dev_name),
        dst: ip.parse().unwrap(),
        lladdr: MacAddr([0xfa, 0x16, 0x3e, 0, 0, last]),
    }
}

/// A node with the agent's L2 VNI 3003 (bridge, VXLAN, veth end in the
/// bridge, a neighbour on the bridge, a route in a table 3003 that is not
/// its) and foreign look-alikes: `br-foo` holding `vxlan-9`, a lone
/// `br-7`, `br-8` holding `vxlan-8` with VNI 80, and `br-5` holding
/// `vxlan-5` but enslaved to a foreign VRF.
fn node() -> Actual {
    let mut m = SimulatedNode::new(Actual::default());
    add(&mut m, "br-3003", LinkKind::Bridge, None);
    add(&mut m, "vxlan-3003", vxlan(3003), Some("br-3003"));
    let veth = LinkKind::Veth {
        peer: dev("ovsabcdef12-34"),
    };
    add(&mut m, "vrfabcdef12-34", veth, Some("br-3003"));
    add(&mut m, "br-foo", LinkKind::Bridge, None);
    add(&mut m, "vxlan-9", vxlan(9), Some("br-foo"));
    add(&mut m, "br-7", LinkKind::Bridge, None);
    add(&mut m, "br-8", LinkKind::Bridge, None);
    add(&mut m, "vxlan-8", vxlan(80), Some("br-8"));
    add(&mut m, "vrf-blue", LinkKind::Vrf { table: 77 }, None);
    add(&mut m, "br-5", LinkKind::Bridge, Some("vrf-blue"));
    add(&mut m, "vxlan-5", vxlan(5), Some("br-5"));
    let mut a = m.actual;
    a.neighbours
        .insert(neighbour("br-3003", "192.0.2.30", 0x30));
    a.neighbours.insert(neighbour("br-foo", "192.0.2.40", 0x40));
    a.neighbours.insert(neighbour("br-8", "192.0.2.80", 0x80));
    a.routes.insert(KernelRoute {
        table: 3003,
        v6: false,
        dst: Some("10.30.0.0/24".parse().unwrap()),
        metric: None,
        dev: Some(dev("br-foo")),
        via: None,
        proto: proto::BOOT,
        scope: scope::LINK,
        kind: RouteType::Unicast,
    });
    a
}

fn l2vni_mode() -> DesiredNode {
    DesiredNode {
        evpn: Some(EvpnCleanup {
            delete_vrf: true,
            steering_flows: false,
            bridges: BTreeSet::new(),
        }),
        ..DesiredNode::default()
    }
}

const FOREIGN: [&str; 9] = [
    "br-foo",
    "vxlan-9",
    "br-7 ",
    "br-8",
    "vxlan-8",
    "br-5",
    "vxlan-5",
    "vrf-blue",
    "10.30.0.0",
];

#[test]
fn an_l2_vni_nothing_wants_is_torn_down_and_foreign_bridges_and_vxlans_stay() {
    let p = plan(&l2vni_mode(), &node()).unwrap();
    let ops: Vec<&Op> = p.ops().collect();
    let deleted: BTreeSet<String> = ops
        .iter()
        .filter_map(|op| match op {
            Op::DelLink { name } => Some(name.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        deleted,
        ["br-3003", "vrfabcdef12-34", "vxlan-3003"]
            .map(String::from)
            .into(),
        "{p}"
    );
    assert!(
        ops.iter().any(|op| matches!(op,
            Op::DelNeighbour(n) if n.dev.as_str() == "br-3003")),
        "{p}"
    );
    // No VRF, no table, no FRR VRF to delete for an L2 VNI.
    assert!(
        !ops.iter()
            .any(|op| matches!(op, Op::DelRoute { .. } | Op::RemoveFrr { .. })),
        "{p}"
    );
    assert!(order_violations(&p.steps).is_empty(), "{p}");
    let text = p.to_string();
    for foreign in FOREIGN {
        assert!(!text.contains(foreign), "{foreign} touched:\n{text}");
    }
}

#[test]
fn a_wanted_l2_vni_keeps_its_devices_gets_its_flags_and_swaps_its_neighbours() {
    let mut d = l2vni_mode();
    d.links.insert(Link {
        name: dev("br-3003"),
        kind: LinkKind::Bridge,
        master: None,
        mac: None,
        up: true,
    });
    d.links.insert(Link {
        name: dev("vxlan-3003"),
        kind: vxlan(3003),
        master: Some(dev("br-3003")),
        mac: None,
        up: true,
    });
    d.links.insert(Link {
        name: dev("vrfabcdef12-34"),
        kind: LinkKind::Veth {
            peer: dev("ovsabcdef12-34"),
        },
        master: Some(dev("br-3003")),
        mac: None,
        up: true,
    });
    d.neighbours
        .insert(neighbour("br-3003", "192.0.2.31", 0x31), Class::Vm);
    let p = plan(&d, &node()).unwrap();
    let ops: Vec<&Op> = p.ops().collect();
    assert!(
        !ops.iter().any(|op| matches!(op, Op::DelLink { .. })),
        "{p}"
    );
    assert!(
        ops.iter().any(|op| matches!(op,
            Op::SetBridgePort { name, flags } if name.as_str() == "vxlan-3003" && *flags == BridgePort::EVPN)),
        "{p}"
    );
    let neigh: Vec<String> = ops
        .iter()
        .filter_map(|op| match op {
            Op::ReplaceNeighbour(n) => Some(format!("+{}", n.dst)),
            Op::DelNeighbour(n) => Some(format!("-{}", n.dst)),
            _ => None,
        })
        .collect();
    assert_eq!(neigh.len(), 2, "{p}");
    assert!(
        neigh.contains(&"+192.0.2.31".into()) && neigh.contains(&"-192.0.2.30".into()),
        "{p}"
    );
    let text = p.to_string();
    for foreign in FOREIGN {
        assert!(!text.contains(foreign), "{foreign} touched:\n{text}");
    }
}

fn fdb(bridge: &str, port: &str, last: u8) -> BridgeFdbEntry {
    BridgeFdbEntry {
        bridge: dev(bridge),
        mac: MacAddr([0xfa, 0x16, 0x3e, 0, 0, last]),
        vlan: None,
        port: dev(port),
    }
}

/// [`node`] with static FDB entries: the agent's (the neighbour's MAC on
/// its veth end in `br-3003`) and foreign ones: a remote MAC on
/// `vxlan-3003` (zebra's), one on an operator's port `tap1` in `br-3003`,
/// and one on an agent-named veth end in the operator's `br-foo`.
fn node_with_fdb() -> Actual {
    let mut m = SimulatedNode::new(node());
    let veth = |peer: &str| LinkKind::Veth { peer: dev(peer) };
    add(&mut m, "tap1", veth("tap1-p"), Some("br-3003"));
    add(
        &mut m,
        "vrfee000000-01",
        veth("ovsee000000-01"),
        Some("br-foo"),
    );
    let mut a = m.actual;
    for e in FDB_FOREIGN {
        a.bridge_fdb.insert(e());
    }
    a.bridge_fdb.insert(fdb("br-3003", "vrfabcdef12-34", 0x30));
    a
}

const FDB_FOREIGN: [fn() -> BridgeFdbEntry; 3] = [
    || fdb("br-3003", "vxlan-3003", 0x91),
    || fdb("br-3003", "tap1", 0x92),
    || fdb("br-foo", "vrfee000000-01", 0x93),
];

/// The positions in `p` of the ops that `is` picks.
fn positions(p: &obgp_plan::plan::Plan, is: impl Fn(&Op) -> bool) -> Vec<usize> {
    p.ops()
        .enumerate()
        .filter(|(_, op)| is(op))
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn a_torn_down_vni_loses_its_fdb_entry_after_its_neighbour_and_foreign_entries_stay() {
    let p = plan(&l2vni_mode(), &node_with_fdb()).unwrap();
    let fdb_ops: Vec<&Op> = p
        .ops()
        .filter(|op| matches!(op, Op::AddBridgeFdb(_) | Op::DelBridgeFdb(_)))
        .collect();
    assert_eq!(
        fdb_ops,
        [&Op::DelBridgeFdb(fdb("br-3003", "vrfabcdef12-34", 0x30))],
        "{p}"
    );
    // zebra withdraws the MAC/IP route with the neighbour, then the MAC
    // route with the FDB entry; the devices go last.
    let neigh = positions(
        &p,
        |op| matches!(op, Op::DelNeighbour(n) if n.dev.as_str() == "br-3003"),
    );
    let entry = positions(&p, |op| matches!(op, Op::DelBridgeFdb(_)));
    let links = positions(&p, |op| matches!(op, Op::DelLink { .. }));
    assert!(neigh[0] < entry[0] && entry[0] < links[0], "{p}");
    assert!(order_violations(&p.steps).is_empty(), "{p}");
    let text = p.to_string();
    for mac in [
        "fa:16:3e:00:00:91",
        "fa:16:3e:00:00:92",
        "fa:16:3e:00:00:93",
    ] {
        assert!(!text.contains(mac), "{mac} touched:\n{text}");
    }
    // The simulated kernel takes the entries of deleted ports along, and
    // the plan converges.
    let mut m = SimulatedNode::new(node_with_fdb());
    m.apply_all(p.ops());
    assert!(m.failures().is_empty(), "{:?}", m.log);
    assert!(plan(&l2vni_mode(), &m.actual).unwrap().is_empty());
    let left: BTreeSet<BridgeFdbEntry> = m.actual.bridge_fdb.iter().cloned().collect();
    assert_eq!(left, [fdb("br-foo", "vrfee000000-01", 0x93)].into());
}

/// l2vni mode wanting the VNI 3003 of [`node`]: its bridge, VXLAN device
/// and veth end, no host yet.
fn wanting_vni_3003() -> DesiredNode {
    let mut d = l2vni_mode();
    for (name, kind, master) in [
        ("br-3003", LinkKind::Bridge, None),
        ("vxlan-3003", vxlan(3003), Some("br-3003")),
        (
            "vrfabcdef12-34",
            LinkKind::Veth {
                peer: dev("ovsabcdef12-34"),
            },
            Some("br-3003"),
        ),
    ] {
        d.links.insert(Link {
            name: dev(name),
            kind,
            master: master.map(dev),
            mac: None,
            up: true,
        });
    }
    d
}

#[test]
fn a_wanted_vni_pins_each_host_mac_before_its_neighbour_and_unpins_the_gone() {
    let mut d = wanting_vni_3003();
    // A VM bound here now (MAC 31), and one whose MAC zebra had learnt
    // from a remote VTEP (91, on vxlan-3003) that migrated here.
    for last in [0x31, 0x91] {
        d.neighbours.insert(
            neighbour("br-3003", &format!("192.0.2.{last}"), last),
            Class::Vm,
        );
        d.bridge_fdb
            .insert(fdb("br-3003", "vrfabcdef12-34", last), Class::Vm);
    }
    let p = plan(&d, &node_with_fdb()).unwrap();
    let added = |last: u8| {
        positions(&p, |op| {
            *op == Op::AddBridgeFdb(fdb("br-3003", "vrfabcdef12-34", last))
        })
    };
    for last in [0x31, 0x91] {
        let ip = format!("192.0.2.{last}");
        let neigh = positions(
            &p,
            |op| matches!(op, Op::ReplaceNeighbour(n) if n.dst.to_string() == ip),
        );
        assert!(added(last)[0] < neigh[0], "{p}");
    }
    let gone = positions(&p, |op| {
        *op == Op::DelBridgeFdb(fdb("br-3003", "vrfabcdef12-34", 0x30))
    });
    let gone_neigh = positions(
        &p,
        |op| matches!(op, Op::DelNeighbour(n) if n.dst.to_string() == "192.0.2.30"),
    );
    assert!(gone_neigh[0] < gone[0], "{p}");
    // The remote entry is moved by the replace, never deleted; the other
    // foreign entries are not touched.
    assert_eq!(
        p.ops()
            .filter(|op| matches!(op, Op::DelBridgeFdb(_)))
            .count(),
        1,
        "{p}"
    );
    let text = p.to_string();
    for mac in ["fa:16:3e:00:00:92", "fa:16:3e:00:00:93"] {
        assert!(!text.contains(mac), "{mac} touched:\n{text}");
    }
    assert!(order_violations(&p.steps).is_empty(), "{p}");
    let mut m = SimulatedNode::new(node_with_fdb());
    m.apply_all(p.ops());
    let again = plan(&d, &m.actual).unwrap();
    assert!(
        !again
            .ops()
            .any(|op| matches!(op, Op::AddBridgeFdb(_) | Op::DelBridgeFdb(_))),
        "{again}"
    );
}

/// The kernel's copy of a wanted entry on the port's VLAN: a bridge built
/// with VLAN support (Debian's 6.1 kernel) adds, for `bridge fdb replace
/// MAC dev PORT master static` without a VLAN, the entry once without and
/// once per VLAN of the port (its default PVID 1, even with
/// vlan_filtering off), and deletes them together. zebra keys the MACs of
/// a VLAN-unaware bridge without VLAN: deleting the copy made it drop the
/// VM's MAC and withdraw its routes (seen in the VM-tier two-VTEP test).
#[test]
fn the_kernels_per_vlan_copy_of_a_wanted_entry_is_not_a_leftover() {
    let mut d = l2vni_mode();
    d.links.insert(Link {
        name: dev("br-3003"),
        kind: LinkKind::Bridge,
        master: None,
        mac: None,
        up: true,
    });
    d.bridge_fdb
        .insert(fdb("br-3003", "vrfabcdef12-34", 0x30), Class::Vm);
    let mut a = node_with_fdb();
    let copy = BridgeFdbEntry {
        vlan: Some(1),
        ..fdb("br-3003", "vrfabcdef12-34", 0x30)
    };
    a.bridge_fdb.insert(copy.clone());
    let p = plan(&d, &a).unwrap();
    assert!(
        !p.ops()
            .any(|op| matches!(op, Op::AddBridgeFdb(_) | Op::DelBridgeFdb(_))),
        "{p}"
    );
    // once the entry is not wanted, both go (the kernel deletes the
    // copies with the entry; deleting the copy too is harmless)
    let p = plan(&l2vni_mode(), &a).unwrap();
    let gone: Vec<&Op> = p
        .ops()
        .filter(|op| matches!(op, Op::DelBridgeFdb(_)))
        .collect();
    assert!(
        gone.contains(&&Op::DelBridgeFdb(fdb("br-3003", "vrfabcdef12-34", 0x30))),
        "{p}"
    );
}

#[test]
fn the_underlay_modes_never_judge_l2_vnis() {
    let p = plan(&DesiredNode::default(), &node_with_fdb()).unwrap();
    assert!(p.is_empty(), "{p}");
}

/// The bridge ports of [`node_with_fdb`], with their bridge: only the
/// first is the agent's (its veth end in the proven `br-3003`).
const FDB_PORTS: [(&str, &str); 4] = [
    ("br-3003", "vrfabcdef12-34"),
    ("br-3003", "vxlan-3003"),
    ("br-3003", "tap1"),
    ("br-foo", "vrfee000000-01"),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Whatever static entries the node holds on the ports of
    /// [`FDB_PORTS`] and whichever MACs the wanted VNI 3003 pins: an entry
    /// is deleted exactly when it is on the agent's veth end and no wanted
    /// entry has its MAC; every wanted one the node lacks is added; the
    /// simulated node then plans no FDB op.
    #[test]
    fn only_the_agents_unwanted_fdb_entries_are_deleted(
        held in proptest::collection::btree_map(0u8..8, 0usize..4, 0..8),
        wanted in proptest::collection::btree_set(0u8..8, 0..4),
    ) {
        let mut a = node_with_fdb();
        a.bridge_fdb = held
            .iter()
            .map(|(mac, port)| fdb(FDB_PORTS[*port].0, FDB_PORTS[*port].1, *mac))
            .collect();
        let mut d = wanting_vni_3003();
        for mac in &wanted {
            d.bridge_fdb.insert(fdb("br-3003", "vrfabcdef12-34", *mac), Class::Vm);
        }
        let p = plan(&d, &a).unwrap();
        let deleted: BTreeSet<(u8, usize)> = p
            .ops()
            .filter_map(|op| match op {
                Op::DelBridgeFdb(e) => {
                    let port = FDB_PORTS
                        .iter()
                        .position(|(b, n)| e.bridge.as_str() == *b && e.port.as_str() == *n);
                    Some((e.mac.0[5], port.expect("a port of the node")))
                }
                _ => None,
            })
            .collect();
        let expected: BTreeSet<(u8, usize)> = held
            .iter()
            .filter(|(mac, port)| **port == 0 && !wanted.contains(mac))
            .map(|(mac, port)| (*mac, *port))
            .collect();
        prop_assert_eq!(deleted, expected, "{}", p);
        let added = p.ops().filter(|op| matches!(op, Op::AddBridgeFdb(_))).count();
        let lacking = wanted.iter().filter(|mac| held.get(mac) != Some(&0)).count();
        prop_assert_eq!(added, lacking, "{}", p);
        prop_assert!(order_violations(&p.steps).is_empty(), "{}", p);
        let mut m = SimulatedNode::new(a);
        m.apply_all(p.ops());
        let again = plan(&d, &m.actual).unwrap();
        prop_assert!(
            !again.ops().any(|op| matches!(op, Op::AddBridgeFdb(_) | Op::DelBridgeFdb(_))),
            "{}",
            again
        );
    }

    /// A bridge `br-<b>` (in a foreign VRF or none) holding `vxlan-<x>`
    /// with VNI `v` is torn down in l2vni mode exactly when it has the
    /// agent's structure: `b == x == v` and no VRF.
    #[test]
    fn only_the_agents_structure_is_torn_down(
        b in 1u32..4, x in 1u32..4, v in 1u32..4, in_vrf in any::<bool>()
    ) {
        let mut m = SimulatedNode::new(Actual::default());
        let br = format!("br-{b}");
        if in_vrf {
            add(&mut m, "vrf-blue", LinkKind::Vrf { table: 77 }, None);
        }
        add(&mut m, &br, LinkKind::Bridge, in_vrf.then_some("vrf-blue"));
        add(&mut m, &format!("vxlan-{x}"), vxlan(v), Some(&br));
        let p = plan(&l2vni_mode(), &m.actual).unwrap();
        let ours = b == x && x == v && !in_vrf;
        if ours {
            prop_assert_eq!(p.ops().filter(|op| matches!(op, Op::DelLink { .. })).count(), 2);
        } else {
            prop_assert!(p.is_empty(), "{}", p);
        }
    }
}
