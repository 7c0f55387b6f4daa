//! The EVPN modes' desired state from the golden scenarios' OVN rows, and
//! what bad annotations, a missing VXLAN source and a shared VNI do.

use obgp_config::Config;
use obgp_desired::{desired_state, NodeFacts};
use obgp_netmodel::{DesiredNode, LinkKind, TableRef};
use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::{NB_DB, SB_DB};
use serde_json::{json, Value};

mod golden;
use golden::snapshot;

fn scenario(name: &str) -> Value {
    let p = format!(
        "{}/../../fixtures/conformance/scenarios/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

fn config(sc: &Value, extra: Value) -> Config {
    let mut c = sc["config"].clone();
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    obgp_config::Loader::new()
        .json_overrides(c.as_object().unwrap())
        .unwrap()
        .load()
        .unwrap()
        .config
}

fn node(db: &FixtureDb, c: &Config, facts: &NodeFacts) -> (DesiredNode, Vec<String>) {
    let d = desired_state(&snapshot(db), c, facts).unwrap();
    (d.to_node(), d.notes)
}

fn links(n: &DesiredNode) -> Vec<String> {
    n.links.iter().map(|l| l.name.to_string()).collect()
}

fn update(db: &mut FixtureDb, name: &str, table: &str, key: &str, row: Value) {
    let op = json!([{"op": "update", "table": table, "where": [[key, "==", name]], "row": row}]);
    let which = if table == "Port_Binding" {
        SB_DB
    } else {
        NB_DB
    };
    db.apply(which, op.as_array().unwrap()).unwrap();
}

#[test]
fn sb_gateway_builds_its_vni_with_subnet_lo_ips_and_the_rd_of_the_vxlan_source() {
    let sc = scenario("evpn-sb-basic");
    let db = FixtureDb::from_wire(&sc["ovn"]).unwrap();
    let (n, _) = node(&db, &config(&sc, json!({})), &NodeFacts::default());
    assert_eq!(
        links(&n),
        [
            "br-1001",
            "lo-1001",
            "veth-ovs-1001",
            "veth-vrf-1001",
            "vrf-1001",
            "vxlan-1001"
        ]
    );
    assert!(n.links.iter().any(|l| l.name.as_str() == "vxlan-1001"
        && l.kind
            == LinkKind::Vxlan {
                vni: 1001,
                local: Some("10.1.1.1".parse().unwrap()),
                dstport: 4789
            }));
    let lo: Vec<String> = n
        .addresses
        .keys()
        .filter(|a| a.dev.as_str() == "lo-1001")
        .map(|a| a.net.to_string())
        .collect();
    assert_eq!(lo, ["10.0.0.5/32"]);
    assert_eq!(n.suppressed_local_routes.len(), 1);
    let subnet = n
        .routes
        .keys()
        .find(|r| r.dst.map(|d| d.to_string()) == Some("10.0.0.0/24".into()))
        .expect("the tenant subnet is routed in table 1001");
    assert_eq!(subnet.table, TableRef::Id(1001));
    assert_eq!(subnet.via, Some("172.24.4.100".parse().unwrap()));
    assert_eq!(n.flows.iter().filter(|f| f.cookie == 998).count(), 1);
    assert!(n
        .frr_config
        .as_deref()
        .unwrap()
        .contains("rd 10.1.1.1:1001"));
    assert!(n.evpn.as_ref().unwrap().steering_flows);
}

#[test]
fn sb_without_evpn_local_ip_uses_the_node_vxlan_source_or_builds_nothing() {
    let sc = scenario("evpn-sb-lo-local-ip");
    let db = FixtureDb::from_wire(&sc["ovn"]).unwrap();
    let c = config(&sc, json!({}));
    let (n, notes) = node(&db, &c, &NodeFacts::default());
    assert!(n.evpn_vnis.is_empty() && n.frr_config.is_none());
    assert!(
        notes.iter().any(|m| m.contains("no VXLAN source")),
        "{notes:?}"
    );
    let facts = NodeFacts {
        vxlan_source: Some("10.1.1.1".parse().unwrap()),
        ..NodeFacts::default()
    };
    let (n, _) = node(&db, &c, &facts);
    let text = n.frr_config.unwrap();
    assert!(
        text.contains("rd 10.1.1.1:1001") && !text.contains("None"),
        "{text}"
    );
}

#[test]
fn sb_a_bad_annotation_skips_that_router_with_a_note_naming_the_row() {
    let sc = scenario("evpn-sb-basic");
    let mut db = FixtureDb::from_wire(&sc["ovn"]).unwrap();
    update(
        &mut db,
        "55555555-5555-4555-8555-555555555555",
        "Port_Binding",
        "logical_port",
        json!({"external_ids": ["map", [["neutron_bgpvpn:as", "64999"], ["neutron_bgpvpn:vni", "1001\nexit"]]]}),
    );
    let (n, notes) = node(&db, &config(&sc, json!({})), &NodeFacts::default());
    assert!(n.evpn_vnis.is_empty(), "{:?}", n.evpn_vnis);
    assert!(
        notes
            .iter()
            .any(|m| m.contains("Port_Binding") && m.contains("neutron_bgpvpn:vni")),
        "{notes:?}"
    );
}

#[test]
fn sb_a_router_port_with_another_vni_adds_no_subnet() {
    let sc = scenario("evpn-sb-basic");
    let mut db = FixtureDb::from_wire(&sc["ovn"]).unwrap();
    update(
        &mut db,
        "66666666-6666-4666-8666-666666666666",
        "Port_Binding",
        "logical_port",
        json!({"external_ids": ["map", [["neutron_bgpvpn:as", "64999"], ["neutron_bgpvpn:vni", "2002"]]]}),
    );
    let (n, notes) = node(&db, &config(&sc, json!({})), &NodeFacts::default());
    assert_eq!(n.evpn_vnis.iter().copied().collect::<Vec<_>>(), [1001]);
    assert!(!n.flows.iter().any(|f| f.cookie == 998));
    assert!(
        notes.iter().any(|m| m.contains("differs from the gateway")),
        "{notes:?}"
    );
}

#[test]
fn nb_a_bad_route_distinguisher_skips_that_network_with_a_note() {
    let sc = scenario("evpn-nb-vrf");
    let mut db = FixtureDb::from_wire(&sc["ovn"]).unwrap();
    let c = config(&sc, json!({}));
    let (n, _) = node(&db, &c, &NodeFacts::default());
    assert_eq!(n.evpn_vnis.iter().copied().collect::<Vec<_>>(), [1001]);
    update(
        &mut db,
        "neutron-11111111-1111-4111-8111-111111111111",
        "Logical_Switch",
        "name",
        json!({"external_ids": ["map", [
            ["neutron:network_name", "public"],
            ["neutron_bgpvpn:type", "l3"],
            ["neutron_bgpvpn:vni", "1001"],
            ["neutron_bgpvpn:rd", "__import__('os')"]
        ]]}),
    );
    let (n, notes) = node(&db, &c, &NodeFacts::default());
    assert!(
        n.evpn_vnis.is_empty() && n.links.is_empty(),
        "{:?}",
        links(&n)
    );
    assert!(
        notes
            .iter()
            .any(|m| m.contains("Logical_Switch") && m.contains("neutron_bgpvpn:rd")),
        "{notes:?}"
    );
}

#[test]
fn nb_vrf_mode_has_no_bgp_vrf_and_no_vrf_leak() {
    let sc = scenario("evpn-nb-vrf");
    let db = FixtureDb::from_wire(&sc["ovn"]).unwrap();
    let (n, notes) = node(&db, &config(&sc, json!({})), &NodeFacts::default());
    // rt ['64999:1001'] is FRR's automatic target for VNI 1001: said once.
    let auto: Vec<&String> = notes
        .iter()
        .filter(|m| m.contains("automatic one"))
        .collect();
    assert_eq!(auto.len(), 1, "{notes:?}");
    assert!(auto[0].contains("Logical_Switch") && auto[0].contains("64999:1001"));
    assert!(n.announce_dev.is_none());
    assert!(!links(&n).iter().any(|l| l == "bgp-vrf" || l == "bgp-nic"));
    let text = n.frr_config.unwrap();
    assert!(!text.contains("import vrf"), "{text}");
    assert!(text.contains("route-target export 64999:3001"), "{text}");
    // The anycast MAC on the VRF end, the OVS end a port of br-ex.
    let veth = n
        .links
        .iter()
        .find(|l| l.name.as_str() == "vrfdd3b5a95-aa")
        .unwrap();
    assert_eq!(veth.mac.unwrap().to_string(), "02:00:03:e9:00:00");
    assert!(n
        .ovs_ports
        .iter()
        .any(|p| p.bridge.as_str() == "br-ex" && p.name.as_str() == "ovsdd3b5a95-aa"));
}

#[test]
fn sb_on_a_vlan_network_the_vrf_end_is_the_tagged_internal_port_vlan_vni() {
    let sc = scenario("evpn-sb-basic");
    let mut db = FixtureDb::from_wire(&sc["ovn"]).unwrap();
    update(
        &mut db,
        "provnet-22222222-2222-4222-8222-222222222222",
        "Port_Binding",
        "logical_port",
        json!({"tag": 100}),
    );
    let (n, _) = node(&db, &config(&sc, json!({})), &NodeFacts::default());
    let port = n.ovs_ports.iter().next().expect("one OVS port");
    assert_eq!(
        (
            port.bridge.as_str(),
            port.name.as_str(),
            port.tag,
            port.internal
        ),
        ("br-ex", "vlan-1001", Some(100), true)
    );
    assert!(
        !links(&n).iter().any(|l| l.starts_with("veth")),
        "{:?}",
        links(&n)
    );
    let vlan = n
        .links
        .iter()
        .find(|l| l.name.as_str() == "vlan-1001")
        .unwrap();
    assert_eq!(vlan.master.as_ref().map(|m| m.as_str()), Some("vrf-1001"));
    // Proxy NDP on the VLAN port, its sysctl, and the VLAN stripped on the
    // way into the VXLAN.
    assert!(n
        .proxy_neighbours
        .keys()
        .any(|p| p.dev.as_str() == "vlan-1001"));
    assert!(n
        .sysctls
        .iter()
        .any(|s| s.key == "net.ipv6.conf.vlan-1001.proxy_ndp"));
    let flow = n.flows.iter().find(|f| f.cookie == 998).unwrap();
    assert!(flow.actions.contains(&obgp_netmodel::FlowAction::StripVlan));
    assert_eq!(
        flow.actions.last(),
        Some(&obgp_netmodel::FlowAction::Output("vlan-1001".into()))
    );
}

#[test]
fn sb_two_routers_sharing_a_vni_share_its_vrf_and_it_stays_while_one_is_here() {
    let sc = scenario("evpn-sb-basic");
    let mut db = FixtureDb::from_wire(&sc["ovn"]).unwrap();
    let sb = |t: &str, k: &str| -> String {
        // The uuid of the SB row of table `t` whose logical_port is `k`.
        let rows = &sc["ovn"]["OVN_Southbound"][t];
        rows.as_object()
            .unwrap()
            .iter()
            .find(|(_, r)| r["logical_port"] == k)
            .map(|(u, _)| u.clone())
            .unwrap()
    };
    let gw = sb(
        "Port_Binding",
        "cr-lrp-55555555-5555-4555-8555-555555555555",
    );
    let row = &sc["ovn"]["OVN_Southbound"]["Port_Binding"][&gw];
    let chassis = row["chassis"].clone();
    let provider_dp = sc["ovn"]["OVN_Southbound"]["Port_Binding"]
        [&sb("Port_Binding", "55555555-5555-4555-8555-555555555555")]["datapath"]
        .clone();
    // A second router on the same provider network, its gateway bound
    // here, annotated with the same VNI and AS.
    let ops = json!([
        {"op": "insert", "table": "Datapath_Binding", "uuid-name": "r2",
         "row": {"tunnel_key": 9, "external_ids": ["map", [["name", "neutron-r2"]]]}},
        {"op": "insert", "table": "Port_Binding", "row": {
            "logical_port": "cr-lrp-99999999-9999-4999-8999-999999999999",
            "type": "chassisredirect", "tunnel_key": 1,
            "datapath": ["named-uuid", "r2"], "chassis": chassis,
            "mac": "fa:16:3e:99:99:01 172.24.4.200/24"}},
        {"op": "insert", "table": "Port_Binding", "row": {
            "logical_port": "99999999-9999-4999-8999-999999999999",
            "type": "patch", "tunnel_key": 7, "mac": "router",
            "datapath": provider_dp,
            "external_ids": ["map", [["neutron_bgpvpn:as", "64999"], ["neutron_bgpvpn:vni", "1001"]]]}}
    ]);
    db.apply(SB_DB, ops.as_array().unwrap()).unwrap();
    let c = config(&sc, json!({}));
    let (n, notes) = node(&db, &c, &NodeFacts::default());
    assert_eq!(
        n.evpn_vnis.iter().copied().collect::<Vec<_>>(),
        [1001],
        "{notes:?}"
    );
    // One VRF, both gateways routed through the same veth.
    let gws: Vec<String> = n
        .routes
        .keys()
        .filter(|r| r.dev.as_ref().map(|d| d.as_str()) == Some("veth-vrf-1001") && r.via.is_none())
        .filter_map(|r| r.dst.map(|d| d.to_string()))
        .collect();
    for want in ["172.24.4.100/32", "172.24.4.200/32"] {
        assert!(gws.contains(&want.to_string()), "{gws:?}");
    }
    // The first router's gateway leaves: the VNI stays for the second.
    db.apply(
        SB_DB,
        json!([{"op": "delete", "table": "Port_Binding", "where": [["logical_port", "==", "cr-lrp-55555555-5555-4555-8555-555555555555"]]}])
            .as_array()
            .unwrap(),
    )
    .unwrap();
    let (n, _) = node(&db, &c, &NodeFacts::default());
    assert_eq!(n.evpn_vnis.iter().copied().collect::<Vec<_>>(), [1001]);
    assert!(n.links.iter().any(|l| l.name.as_str() == "vrf-1001"));
    assert!(n
        .routes
        .keys()
        .any(|r| r.dst.map(|d| d.to_string()) == Some("172.24.4.200/32".into())));
    assert!(!n
        .routes
        .keys()
        .any(|r| r.dst.map(|d| d.to_string()) == Some("172.24.4.100/32".into())));
}

#[test]
fn sb_a_second_router_asking_for_the_vni_on_another_vlan_is_refused_with_both_wirings() {
    let sc = scenario("evpn-sb-basic");
    let mut db = FixtureDb::from_wire(&sc["ovn"]).unwrap();
    let gw = &sc["ovn"]["OVN_Southbound"]["Port_Binding"]["6146a6ec-2a15-4181-b8f4-43c50dce37c2"];
    // A second provider network on physnet1, tagged 100, whose router's
    // gateway is bound here and annotated with the first one's VNI.
    let ops = json!([
        {"op": "insert", "table": "Datapath_Binding", "uuid-name": "pn2",
         "row": {"tunnel_key": 8, "external_ids": ["map", [["name", "neutron-pn2"]]]}},
        {"op": "insert", "table": "Datapath_Binding", "uuid-name": "r2",
         "row": {"tunnel_key": 9, "external_ids": ["map", [["name", "neutron-r2"]]]}},
        {"op": "insert", "table": "Port_Binding", "row": {
            "logical_port": "provnet-pn2", "type": "localnet", "tunnel_key": 1,
            "datapath": ["named-uuid", "pn2"], "tag": 100, "mac": "unknown",
            "options": ["map", [["network_name", "physnet1"]]]}},
        {"op": "insert", "table": "Port_Binding", "row": {
            "logical_port": "cr-lrp-99999999-9999-4999-8999-999999999999",
            "type": "chassisredirect", "tunnel_key": 1,
            "datapath": ["named-uuid", "r2"], "chassis": gw["chassis"].clone(),
            "mac": "fa:16:3e:99:99:01 198.51.100.200/24"}},
        {"op": "insert", "table": "Port_Binding", "row": {
            "logical_port": "99999999-9999-4999-8999-999999999999",
            "type": "patch", "tunnel_key": 7, "mac": "router",
            "datapath": ["named-uuid", "pn2"],
            "external_ids": ["map", [["neutron_bgpvpn:as", "64999"], ["neutron_bgpvpn:vni", "1001"]]]}}
    ]);
    db.apply(SB_DB, ops.as_array().unwrap()).unwrap();
    let c = config(&sc, json!({}));
    let (n, notes) = node(&db, &c, &NodeFacts::default());
    // The first router keeps the VNI; nothing of the second is routed.
    assert_eq!(n.evpn_vnis.iter().copied().collect::<Vec<_>>(), [1001]);
    assert!(!n
        .routes
        .keys()
        .any(|r| r.dst.map(|d| d.to_string()) == Some("198.51.100.200/32".into())));
    assert!(
        notes.iter().any(|n| n.contains("asks for VNI 1001")),
        "{notes:?}"
    );

    let cr = "cr-lrp-99999999-9999-4999-8999-999999999999";
    let e = obgp_desired::explain(
        &snapshot(&db),
        &c,
        &NodeFacts::default(),
        &obgp_desired::Query::Port(cr.into()),
    )
    .unwrap();
    assert!(!e.exposed(), "{e}");
    let reasons: Vec<&obgp_desired::Reason> = e.reasons().collect();
    match reasons.as_slice() {
        [obgp_desired::Reason::VniWiredElsewhere {
            vni: 1001,
            bridge,
            vlan: Some(100),
            wired_bridge,
            wired_vlan: None,
        }] => {
            assert_eq!((bridge.as_str(), wired_bridge.as_str()), ("br-ex", "br-ex"));
        }
        other => panic!("{other:?}\n{e}"),
    }
    assert!(
        e.to_string()
            .contains("already wires it on bridge br-ex (flat)"),
        "{e}"
    );
}
