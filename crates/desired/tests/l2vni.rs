//! `exposing_method = l2vni` from the scenario `fixtures/l2vni/basic.json`
//! (the rewrite's own, derived from upstream's matrix and the L3 code; its
//! description says how): the node objects and FRR text of its state, and
//! what a bad annotation, an annotation removed, a port that migrates and a
//! missing `evpn_local_ip` do; `explain` names the VNI and the method.

use obgp_config::Config;
use obgp_desired::{desired_state, explain, Finding, NodeFacts, Query};
use obgp_netmodel::{DesiredNode, Link, LinkKind};
use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::NB_DB;
use proptest::prelude::*;
use serde_json::{json, Value};

mod golden;
use golden::{scenario_config, snapshot};

fn scenario() -> Value {
    let p = format!(
        "{}/../../fixtures/l2vni/basic.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

fn setup() -> (Value, FixtureDb, Config) {
    let sc = scenario();
    let db = FixtureDb::from_wire(&sc["ovn"]).unwrap();
    let c = scenario_config(&sc).expect("the scenario's config loads");
    (sc, db, c)
}

fn node(db: &FixtureDb, c: &Config) -> (DesiredNode, Vec<String>) {
    let d = desired_state(&snapshot(db), c, &NodeFacts::default()).unwrap();
    (d.to_node(), d.notes)
}

fn link_line(l: &Link) -> String {
    let kind = match &l.kind {
        LinkKind::Bridge => "bridge".to_string(),
        LinkKind::Existing => "existing".to_string(),
        LinkKind::Veth { peer } => format!("veth peer {peer}"),
        LinkKind::Vxlan {
            vni,
            local,
            dstport,
        } => format!(
            "vxlan vni {vni} local {} dstport {dstport}",
            local.map_or("-".into(), |l| l.to_string())
        ),
        other => format!("{other:?}"),
    };
    match &l.master {
        Some(m) => format!("{} {kind} master {m}", l.name),
        None => format!("{} {kind}", l.name),
    }
}

fn links(n: &DesiredNode) -> Vec<String> {
    n.links.iter().map(link_line).collect()
}

fn neighbours(n: &DesiredNode) -> Vec<String> {
    n.neighbours
        .keys()
        .map(|x| format!("{} {} {}", x.dev, x.dst, x.lladdr))
        .collect()
}

/// The static bridge FDB entries, `<bridge> <port> <mac>`.
fn bridge_fdb(n: &DesiredNode) -> Vec<String> {
    n.bridge_fdb.keys().map(ToString::to_string).collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn update_switch(db: &mut FixtureDb, uuid: &str, row: Value) {
    let op = json!([{"op": "update", "table": "Logical_Switch",
        "where": [["_uuid", "==", ["uuid", uuid]]], "row": row}]);
    db.apply(NB_DB, op.as_array().unwrap()).unwrap();
}

const FLAT_SWITCH: &str = "d285c50e-2b1e-4fec-ad3b-b97dcaf458d8";

#[test]
fn the_scenario_gives_its_expected_devices_neighbours_fdb_ports_and_frr_text() {
    let (sc, db, c) = setup();
    let (n, notes) = node(&db, &c);
    let want = &sc["expected"];
    assert_eq!(links(&n), strings(&want["links"]), "{notes:?}");
    assert_eq!(neighbours(&n), strings(&want["neighbours"]));
    // One static entry per MAC bound here (the flat VM's IPv4 and IPv6
    // share one), on the veth end in the VNI's bridge, with the
    // neighbours' class: the VM's.
    assert_eq!(bridge_fdb(&n), strings(&want["bridge_fdb"]));
    assert!(n
        .bridge_fdb
        .values()
        .all(|c| *c == obgp_netmodel::Class::Vm));
    let ports: Vec<String> = n
        .ovs_ports
        .iter()
        .map(|p| match p.tag {
            Some(t) => format!("{} {} tag={t}", p.bridge, p.name),
            None => format!("{} {}", p.bridge, p.name),
        })
        .collect();
    assert_eq!(ports, strings(&want["ovs_ports"]));
    assert_eq!(n.frr_config.as_deref(), want["frr_config"].as_str());
    // No VRF, no L3 VNI, no routes, no addresses, no flows.
    assert!(n.evpn_vnis.is_empty());
    assert!(!n
        .links
        .iter()
        .any(|l| matches!(l.kind, LinkKind::Vrf { .. })));
    assert!(n.routes.is_empty() && n.addresses.is_empty() && n.flows.is_empty());
    // The VM bound to compute-2 is no host here.
    assert!(!neighbours(&n).iter().any(|x| x.contains("172.24.4.20")));
    assert!(n.evpn.is_some(), "the EVPN ownership rule applies");
}

#[test]
fn a_bad_annotation_skips_that_network_with_a_note_naming_the_row() {
    let (_, mut db, c) = setup();
    update_switch(
        &mut db,
        FLAT_SWITCH,
        json!({"external_ids": ["map", [
            ["neutron_bgpvpn:type", "l2"],
            ["neutron_bgpvpn:vni", "2001"],
            ["neutron_bgpvpn:rt", "['64512:1'] + __import__('os')"]
        ]]}),
    );
    let (n, notes) = node(&db, &c);
    assert!(
        !links(&n).iter().any(|l| l.contains("2001")),
        "{:?}",
        links(&n)
    );
    assert!(links(&n).iter().any(|l| l.starts_with("br-2002 ")));
    assert!(
        notes
            .iter()
            .any(|m| m.contains(FLAT_SWITCH) && m.contains("neutron_bgpvpn:rt")),
        "{notes:?}"
    );
}

#[test]
fn removing_the_annotation_or_switching_it_to_l3_takes_the_vni_away() {
    for ids in [
        json!(["map", [["neutron:network_name", "public"]]]),
        json!([
            "map",
            [
                ["neutron_bgpvpn:type", "l3"],
                ["neutron_bgpvpn:vni", "2001"]
            ]
        ]),
    ] {
        let (_, mut db, c) = setup();
        update_switch(&mut db, FLAT_SWITCH, json!({ "external_ids": ids }));
        let (n, _) = node(&db, &c);
        let l = links(&n);
        assert!(!l.iter().any(|x| x.contains("2001")), "{l:?}");
        assert!(!neighbours(&n).iter().any(|x| x.starts_with("br-2001")));
        assert!(!bridge_fdb(&n).iter().any(|x| x.starts_with("br-2001")));
        let frr = n.frr_config.unwrap();
        assert!(!frr.contains("vni 2001"), "{frr}");
    }
}

#[test]
fn a_port_that_migrates_away_is_no_longer_a_host_here() {
    let (_, mut db, c) = setup();
    let op = json!([{"op": "update", "table": "Logical_Switch_Port",
        "where": [["name", "==", "77777777-7777-4777-8777-777777777777"]],
        "row": {"options": ["map", [["requested-chassis", "compute-2"]]],
                "external_ids": ["map", [["neutron:host_id", "compute-2"]]]}}]);
    db.apply(NB_DB, op.as_array().unwrap()).unwrap();
    let (n, _) = node(&db, &c);
    assert_eq!(neighbours(&n), ["br-2002 10.100.0.10 fa:16:3e:33:33:33"]);
    // Its MAC is no longer pinned either (withdrawn with the neighbour).
    assert_eq!(bridge_fdb(&n), ["br-2002 vrfe2000000-00 fa:16:3e:33:33:33"]);
    // The VNI stays: the network is still stretched here.
    assert!(links(&n).iter().any(|l| l.starts_with("vxlan-2001 ")));
}

#[test]
fn a_port_that_goes_down_loses_its_fdb_entry_and_neighbours() {
    let (_, mut db, c) = setup();
    let op = json!([{"op": "update", "table": "Logical_Switch_Port",
        "where": [["name", "==", "77777777-7777-4777-8777-777777777777"]],
        "row": {"up": false}}]);
    db.apply(NB_DB, op.as_array().unwrap()).unwrap();
    let (n, _) = node(&db, &c);
    assert!(!neighbours(&n).iter().any(|x| x.starts_with("br-2001")));
    assert!(
        !bridge_fdb(&n).iter().any(|x| x.starts_with("br-2001")),
        "{:?}",
        bridge_fdb(&n)
    );
    assert_eq!(bridge_fdb(&n), ["br-2002 vrfe2000000-00 fa:16:3e:33:33:33"]);
}

#[test]
fn the_l2vni_method_needs_evpn_local_ip() {
    let (_, db, mut c) = setup();
    c.default.evpn_local_ip = None;
    let e = desired_state(&snapshot(&db), &c, &NodeFacts::default()).unwrap_err();
    assert!(e.to_string().contains("evpn_local_ip"), "{e}");
}

#[test]
fn explain_names_the_l2_vni_and_the_method_of_a_host() {
    let (_, db, c) = setup();
    let e = explain(
        &snapshot(&db),
        &c,
        &NodeFacts::default(),
        &Query::Ip("172.24.4.10".parse().unwrap()),
    )
    .unwrap();
    let through: Vec<&String> = e
        .findings
        .iter()
        .filter_map(|f| match f {
            Finding::Exposed { through, .. } => Some(through),
            _ => None,
        })
        .collect();
    assert_eq!(
        through,
        ["L2 VNI 2001 (exposing_method = l2vni: type-2 MAC/IP on br-2001)"],
        "{e}"
    );
    // The port bound elsewhere is explained, not exposed.
    let e = explain(
        &snapshot(&db),
        &c,
        &NodeFacts::default(),
        &Query::Ip("172.24.4.20".parse().unwrap()),
    )
    .unwrap();
    assert!(
        !e.findings
            .iter()
            .any(|f| matches!(f, Finding::Exposed { .. })),
        "{e}"
    );
}

/// Annotates the flat network with `vni` (no RD/RT) and returns its node.
fn flat_with_vni(vni: u32) -> (DesiredNode, Vec<String>) {
    let (_, mut db, c) = setup();
    update_switch(
        &mut db,
        FLAT_SWITCH,
        json!({"external_ids": ["map", [
            ["neutron_bgpvpn:type", "l2"],
            ["neutron_bgpvpn:vni", vni.to_string()]
        ]]}),
    );
    node(&db, &c)
}

#[test]
fn two_networks_with_one_vni_keep_the_first_by_uuid_with_a_note() {
    let (n, notes) = flat_with_vni(2002);
    let l = links(&n);
    assert!(
        l.contains(&"vrfdd3b5a95-aa veth peer ovsdd3b5a95-aa master br-2002".to_string()),
        "{l:?}"
    );
    assert!(!l.iter().any(|x| x.starts_with("vrfe2000000-00")), "{l:?}");
    assert!(
        notes
            .iter()
            .any(|m| m.contains("e1000000-0000-4000-8000-000000000002")
                && m.contains("clashes with VNI 2002")),
        "{notes:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever VNI the flat network is annotated with, the node gets
    /// `br-<vni>` and `vxlan-<vni>` (that VNI, in that bridge, from
    /// evpn_local_ip) for it, the veth end in that bridge, the bound VM's
    /// two neighbours on it, and no VRF.
    #[test]
    fn any_vni_gives_its_bridge_vxlan_and_neighbours(vni in 1u32..=16_777_215) {
        let (n, _) = flat_with_vni(vni);
        let l = links(&n);
        let br = format!("br-{vni}");
        prop_assert!(l.contains(&format!("{br} bridge")), "{:?}", l);
        prop_assert!(l.contains(&format!(
            "vxlan-{vni} vxlan vni {vni} local 10.1.1.1 dstport 4789 master {br}"
        )), "{:?}", l);
        prop_assert!(l.contains(&format!(
            "vrfdd3b5a95-aa veth peer ovsdd3b5a95-aa master {br}"
        )), "{:?}", l);
        let on_br = neighbours(&n)
            .into_iter()
            .filter(|x| x.starts_with(&format!("{br} ")))
            .count();
        prop_assert_eq!(on_br, 2);
        prop_assert_eq!(
            bridge_fdb(&n)
                .into_iter()
                .filter(|x| x.starts_with(&format!("{br} ")))
                .collect::<Vec<_>>(),
            vec![format!("{br} vrfdd3b5a95-aa fa:16:3e:11:11:11")]
        );
        let vrfs = n.links.iter().filter(|l| matches!(l.kind, LinkKind::Vrf { .. })).count();
        prop_assert_eq!(vrfs, 0);
    }
}
