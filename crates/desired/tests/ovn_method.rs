//! `exposing_method = ovn`: the desired node-local NB rows, OVS flows, FDB
//! entries and announcements, against the golden scenarios of
//! `fixtures/ovn-local/` and variations of them, and the local-NB planner
//! on those rows (full create, no churn, deletion of what is no longer
//! desired, foreign rows left alone).

use std::collections::BTreeMap;
use std::path::PathBuf;

use obgp_config::Config;
use obgp_desired::{
    desired_ovn_method, Finding, GoldenConfig, LocalFacts, NodeFacts, OvnMethod, Query, Reason,
};
use obgp_local_cluster::{apply_in_memory, plan, LocalClusterRows, NbOp, NbTable, Observed};
use obgp_ovn::Snapshot;
use obgp_ovsdb_data::{Row, Uuid};
use serde_json::{json, Value};

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/ovn-local")
        .join(name)
}

struct Case {
    doc: Value,
}

impl Case {
    fn load(name: &str) -> Case {
        let text = std::fs::read_to_string(fixture_path(name)).expect("fixture");
        Case {
            doc: serde_json::from_str(&text).expect("fixture JSON"),
        }
    }

    fn config(&self) -> Config {
        serde_json::from_value::<GoldenConfig>(self.doc["config"].clone())
            .expect("the case's config")
            .config()
    }

    fn facts(&self) -> LocalFacts {
        match self.doc.get("facts") {
            Some(v) => serde_json::from_value::<LocalFacts>(v.clone()).expect("the case's facts"),
            None => LocalFacts::default(),
        }
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot::from_wire(&self.doc["ovn"]).expect("snapshot")
    }

    fn compute(&self) -> OvnMethod {
        desired_ovn_method(
            &self.snapshot(),
            &self.config(),
            &NodeFacts::default(),
            &self.facts(),
        )
        .expect("ovn mode computes")
    }

    /// The central NB table `table`, to edit.
    fn nb(&mut self, table: &str) -> &mut serde_json::Map<String, Value> {
        self.doc["ovn"]["OVN_Northbound"][table]
            .as_object_mut()
            .expect("table")
    }

    /// Replaces an `external_ids` entry of the Open_vSwitch row.
    fn ovs_ext(&mut self, key: &str, value: Option<&str>) {
        let row = self.doc["ovn"]["Open_vSwitch"]["Open_vSwitch"]
            .as_object_mut()
            .unwrap()
            .values_mut()
            .next()
            .unwrap();
        let pairs = row["external_ids"][1].as_array_mut().unwrap();
        pairs.retain(|p| p[0] != key);
        if let Some(v) = value {
            pairs.push(json!([key, v]));
        }
    }
}

// The golden files themselves (`expected`: announced IPs, rows, flows,
// FDB entries) are checked by `conformance scenario fixtures/ovn-local/*.json`
// (crates/conformance/src/ovn_method.rs), through `desired_state`.

/// Plans `desired` against `db`, applies the plan to `db` and returns it.
fn converge(desired: &LocalClusterRows, db: &mut Observed) -> Vec<NbOp> {
    let p = plan(desired, db);
    assert!(p.problems.is_empty(), "{:?}", p.problems);
    apply_in_memory(db, &p.ops).expect("plan applies");
    p.ops
}

fn count(db: &Observed, t: NbTable) -> usize {
    db.get(t.name()).map_or(0, |r| r.len())
}

#[test]
fn empty_local_nb_gets_every_row_and_a_second_plan_is_empty() {
    let desired = Case::load("basic.json").compute().local_nb;
    let mut db = Observed::new();
    let ops = converge(&desired, &mut db);
    let inserts = ops
        .iter()
        .filter(|o| matches!(o, NbOp::Insert { .. }))
        .count();
    assert_eq!(inserts, desired.rows.len(), "one insert per desired row");
    for t in NbTable::ALL {
        assert_eq!(count(&db, t), desired.rows_of(t).count(), "{t}");
    }
    // The same desired state again (a restart: same keys, the uuids found
    // again by key) plans nothing.
    let again = plan(&Case::load("basic.json").compute().local_nb, &db);
    assert!(again.is_empty(), "no churn:\n{again}");
}

#[test]
fn transact_params_name_the_database_and_use_named_uuids_for_new_rows() {
    let desired = Case::load("basic.json").compute().local_nb;
    let p = plan(&desired, &Observed::new());
    let params = p.transact_params();
    assert_eq!(params[0], "OVN_Northbound");
    let router = params
        .as_array()
        .unwrap()
        .iter()
        .find(|op| op["table"] == "Logical_Router")
        .expect("router insert");
    assert_eq!(router["op"], "insert");
    assert_eq!(router["row"]["name"], "bgp-router");
    assert_eq!(
        router["row"]["external_ids"],
        json!(["map", [["ovn-bgp-agent", "managed"]]])
    );
    let ports = router["row"]["ports"][1].as_array().unwrap();
    assert_eq!(ports.len(), 3, "internal and two external router ports");
    assert!(ports.iter().all(|p| p[0] == "named-uuid"));
    // Every named uuid used is defined by an earlier insert.
    let mut defined = std::collections::HashSet::new();
    for op in params.as_array().unwrap().iter().skip(1) {
        let text = op.to_string();
        for used in text.split("[\"named-uuid\",\"").skip(1) {
            let name = used.split('"').next().unwrap();
            assert!(
                defined.contains(name),
                "{name} used before its insert: {op}"
            );
        }
        if let Some(n) = op["uuid-name"].as_str() {
            defined.insert(n.to_string());
        }
    }
}

#[test]
fn a_removed_provider_segment_loses_its_rows_and_nothing_else_moves() {
    let mut case = Case::load("basic.json");
    let mut db = Observed::new();
    converge(&case.compute().local_nb, &mut db);
    let before: BTreeMap<Uuid, Row> = db["Logical_Router"].clone();
    case.ovs_ext(
        "ovn-bridge-mappings-bgp",
        Some("fabric1:br-ex,local:br-osp"),
    );
    let desired = case.compute().local_nb;
    let ops = converge(&desired, &mut db);
    assert!(
        ops.iter()
            .all(|o| !matches!(o, NbOp::Insert { .. } | NbOp::Update { .. })),
        "only removals: {ops:?}"
    );
    let removed = obgp_local_cluster::plan::removed_keys(&obgp_local_cluster::LocalClusterPlan {
        ops,
        problems: vec![],
    });
    let removed: Vec<String> = removed.iter().map(ToString::to_string).collect();
    assert!(
        removed.contains(&"Logical_Switch fabric2".to_string()),
        "{removed:?}"
    );
    assert!(
        removed.contains(&"Logical_Router_Port bgp-router-fabric2".to_string()),
        "{removed:?}"
    );
    assert!(
        removed.contains(&"BFD bgp-router-fabric2 100.65.1.5".to_string()),
        "{removed:?}"
    );
    assert!(
        removed
            .contains(&"Logical_Router_Static_Route bgp-router 0.0.0.0/0 100.65.1.5".to_string()),
        "{removed:?}"
    );
    for t in NbTable::ALL {
        assert_eq!(
            count(&db, t),
            desired.rows_of(t).count(),
            "{t} after removal"
        );
    }
    // The router row kept its uuid: removal is a mutate, not a recreate.
    assert_eq!(
        db["Logical_Router"].keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    assert!(plan(&desired, &db).is_empty());
}

fn row(v: Value) -> Row {
    Row::from_wire(&v).unwrap()
}

#[test]
fn foreign_rows_are_left_alone_and_unmarked_desired_rows_are_adopted() {
    let desired = Case::load("basic.json").compute().local_nb;
    let mut db = Observed::new();
    converge(&desired, &mut db);
    let router = *db["Logical_Router"].keys().next().unwrap();
    // An operator's switch, an operator's route on bgp-router and a
    // binding on a port that is not the agent's.
    let foreign_ls = Uuid(0xf0);
    let foreign_route = Uuid(0xf1);
    let foreign_smb = Uuid(0xf2);
    db.entry("Logical_Switch".into())
        .or_default()
        .insert(foreign_ls, row(json!({"name": "ops-net"})));
    db.entry("Logical_Router_Static_Route".into())
        .or_default()
        .insert(
            foreign_route,
            row(json!({"ip_prefix": "10.9.0.0/16", "nexthop": "100.64.1.6"})),
        );
    let lr = db
        .get_mut("Logical_Router")
        .unwrap()
        .get_mut(&router)
        .unwrap();
    let mut routes: Vec<Value> = lr
        .uuids("static_routes")
        .map(|u| json!(["uuid", u.to_string()]))
        .collect();
    routes.push(json!(["uuid", foreign_route.to_string()]));
    lr.columns.insert(
        "static_routes",
        obgp_ovsdb_data::Datum::from_wire(&json!(["set", routes])).unwrap(),
    );
    db.entry("Static_MAC_Binding".into()).or_default().insert(
        foreign_smb,
        row(json!({"logical_port": "ops-port", "ip": "10.9.0.1", "mac": "fa:16:3e:00:00:01", "override_dynamic_mac": true})),
    );
    assert!(
        plan(&desired, &db).is_empty(),
        "foreign rows are not touched"
    );
    // With nothing desired, only the agent's rows go.
    converge(&LocalClusterRows::default(), &mut db);
    assert_eq!(
        db["Logical_Switch"].keys().collect::<Vec<_>>(),
        [&foreign_ls]
    );
    assert_eq!(
        db["Static_MAC_Binding"].keys().collect::<Vec<_>>(),
        [&foreign_smb]
    );
    assert_eq!(count(&db, NbTable::LogicalRouter), 0);

    // A row the Python agent created (no owner mark) is adopted in place.
    let mut db = Observed::new();
    db.entry("Logical_Router".into())
        .or_default()
        .insert(Uuid(0xa0), row(json!({"name": "bgp-router"})));
    let p = plan(&desired, &db);
    assert!(
        p.ops
            .iter()
            .any(|o| matches!(o, NbOp::MarkOwned { uuid, .. } if *uuid == Uuid(0xa0))),
        "{p}"
    );
    assert!(!p.ops.iter().any(|o| matches!(o, NbOp::Delete { .. })));
    apply_in_memory(&mut db, &p.ops).unwrap();
    assert_eq!(
        db["Logical_Router"].keys().collect::<Vec<_>>(),
        [&Uuid(0xa0)]
    );
    assert!(plan(&desired, &db).is_empty());
}

#[test]
fn a_changed_column_is_updated_alone() {
    let mut case = Case::load("basic.json");
    let mut db = Observed::new();
    converge(&case.compute().local_nb, &mut db);
    case.doc["facts"]["br-ex"]["addrs"] = json!(["100.64.1.8/30"]);
    let ops = converge(&case.compute().local_nb, &mut db);
    assert_eq!(ops.len(), 1, "{ops:?}");
    let NbOp::Update { key, columns, .. } = &ops[0] else {
        panic!("{ops:?}");
    };
    assert_eq!(key.to_string(), "Logical_Router_Port bgp-router-fabric1");
    assert_eq!(
        columns.iter().map(|c| c.0).collect::<Vec<_>>(),
        ["networks"]
    );
}

#[test]
fn a_vm_that_leaves_loses_its_binding_and_announcement() {
    let mut case = Case::load("basic.json");
    let mut db = Observed::new();
    converge(&case.compute().local_nb, &mut db);
    case.nb("Logical_Switch_Port")
        .remove("00000000-0000-4000-8000-000000000002");
    let o = case.compute();
    assert!(!o
        .exposure
        .exposed
        .keys()
        .any(|ip| ip.to_string() == "172.16.5.10"));
    let ops = converge(&o.local_nb, &mut db);
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert!(
        matches!(&ops[0], NbOp::Delete { key, .. } if key.key == "bgp-router-openstack 172.16.5.10")
    );
}

#[test]
fn malformed_central_rows_are_skipped_and_the_rest_is_computed() {
    let mut case = Case::load("basic.json");
    let lsps = case.nb("Logical_Switch_Port");
    lsps.insert(
        "00000000-0000-4000-8000-0000000000a1".into(),
        json!({"name": "badmac", "up": true, "addresses": "fa:16:3e:11 172.16.5.20",
               "external_ids": ["map", [["neutron:network_name", "neutron-pub"], ["neutron:host_id", "compute-1"]]]}),
    );
    lsps.insert(
        "00000000-0000-4000-8000-0000000000a2".into(),
        json!({"name": "badip", "up": true, "addresses": "fa:16:3e:11:11:21 172.16.5.300",
               "external_ids": ["map", [["neutron:network_name", "neutron-pub"], ["neutron:host_id", "compute-1"]]]}),
    );
    let good = Case::load("basic.json").compute();
    let o = case.compute();
    assert!(!case.snapshot().warnings().is_empty());
    assert_eq!(
        o.exposure.exposed.keys().collect::<Vec<_>>(),
        good.exposure.exposed.keys().collect::<Vec<_>>()
    );
    assert_eq!(o.local_nb, good.local_nb);
}

#[test]
fn tenant_networks_are_refused_with_a_note_naming_them() {
    let mut case = Case::load("basic.json");
    case.doc["config"]["expose_tenant_networks"] = json!(true);
    let lsps = case.nb("Logical_Switch_Port");
    lsps.insert(
        "00000000-0000-4000-8000-0000000000b1".into(),
        json!({"name": "iface-priv", "type": "router", "up": true, "addresses": "router",
               "external_ids": ["map", [["neutron:network_name", "neutron-priv"],
                  ["neutron:device_owner", "network:router_interface"], ["neutron:device_id", "r1"],
                  ["neutron:cidrs", "10.0.0.1/24"]]]}),
    );
    case.nb("Logical_Switch").insert(
        "00000000-0000-4000-8000-0000000000b2".into(),
        json!({"name": "neutron-priv", "ports": ["uuid", "00000000-0000-4000-8000-0000000000b1"]}),
    );
    let o = case.compute();
    assert!(o.exposure.tenant_subnets.is_empty());
    assert!(
        o.notes
            .iter()
            .any(|n| n.contains("10.0.0.0/24") && n.contains("does not route tenant networks")),
        "{:?}",
        o.notes
    );
    assert_eq!(o.local_nb, Case::load("basic.json").compute().local_nb);
}

#[test]
fn without_the_suffixed_mappings_only_the_router_is_desired_and_nothing_is_announced() {
    let mut case = Case::load("basic.json");
    case.ovs_ext("ovn-bridge-mappings-bgp", None);
    let o = case.compute();
    assert!(
        o.exposure.exposed.is_empty(),
        "unreachable IPs are not announced"
    );
    assert!(
        o.notes
            .iter()
            .any(|n| n.contains("ovn-bridge-mappings-bgp")),
        "{:?}",
        o.notes
    );
    assert_eq!(o.local_nb.rows_of(NbTable::LogicalSwitch).count(), 0);
    assert!(o.fdb.is_empty());
}

#[test]
fn explain_names_the_local_cluster_when_it_does_not_reach_an_ip() {
    let vm: std::net::IpAddr = "172.16.5.10".parse().unwrap();
    let explain = |case: &Case| {
        let facts = NodeFacts {
            local_bridges: case.facts(),
            ..NodeFacts::default()
        };
        obgp_desired::explain(&case.snapshot(), &case.config(), &facts, &Query::Ip(vm)).unwrap()
    };
    let mut case = Case::load("basic.json");
    let e = explain(&case);
    assert!(
        e.findings
            .iter()
            .any(|f| matches!(f, Finding::Exposed { ip, .. } if *ip == vm)),
        "{e:?}"
    );
    case.ovs_ext("ovn-bridge-mappings-bgp", None);
    let e = explain(&case);
    assert!(
        e.findings.iter().any(|f| matches!(f,
            Finding::NotExposed {
                ip: Some(ip),
                reason: Reason::NotReachedByLocalCluster { why },
                ..
            } if *ip == vm && why.contains("no internal segment"))),
        "{e:?}"
    );
}

#[test]
fn bad_ovn_mode_options_are_errors_naming_the_option() {
    let case = Case::load("basic.json");
    let mut c = case.config();
    c.local_ovn_cluster.provider_networks_pool_prefixes.clear();
    let e =
        desired_ovn_method(&case.snapshot(), &c, &NodeFacts::default(), &case.facts()).unwrap_err();
    assert!(
        e.to_string().contains("provider_networks_pool_prefixes"),
        "{e}"
    );
    let mut c = case.config();
    c.local_ovn_cluster.peer_ips = vec!["not-an-ip".into()];
    let e =
        desired_ovn_method(&case.snapshot(), &c, &NodeFacts::default(), &case.facts()).unwrap_err();
    assert!(e.to_string().contains("peer_ips"), "{e}");
    let mut c = case.config();
    c.local_ovn_cluster.bgp_chassis_id = "bgp,x".into();
    let e =
        desired_ovn_method(&case.snapshot(), &c, &NodeFacts::default(), &case.facts()).unwrap_err();
    assert!(e.to_string().contains("bgp_chassis_id"), "{e}");
    // A chassis id longer than a device name is fine.
    let mut c = case.config();
    c.local_ovn_cluster.bgp_chassis_id = "5f8e4a1c-0c4b-4e8f-9f43-2a7d3c1b9e01".into();
    assert!(desired_ovn_method(&case.snapshot(), &c, &NodeFacts::default(), &case.facts()).is_ok());
}

#[test]
fn to_node_announces_on_bgp_nic_without_kernel_wiring_and_carries_the_flows() {
    let case = Case::load("basic.json");
    let o = case.compute();
    // The underlay driver wires these exposures in the kernel.
    assert!(o.exposure.exposed.values().any(|e| e.wiring.is_some()));
    let node = o.to_node();
    let announced: Vec<String> = node
        .addresses
        .keys()
        .map(|a| {
            assert_eq!(a.dev, o.exposure.bgp_nic, "{a:?}");
            a.net.addr().to_string()
        })
        .collect();
    let want: Vec<String> = o.exposure.exposed.keys().map(|ip| ip.to_string()).collect();
    assert_eq!(announced, want);
    assert!(node.rules.is_empty(), "{:?}", node.rules);
    assert!(node.routes.is_empty(), "{:?}", node.routes);
    assert!(node.neighbours.is_empty() && node.proxy_neighbours.is_empty());
    assert!(node.bridge_tables.is_empty() && node.sysctls.is_empty());
    assert_eq!(node.flows, o.flows);
    assert_eq!(node.announce_dev.as_ref(), Some(&o.exposure.bgp_nic));
    assert!(
        node.frr_config.is_some(),
        "the VRF leak, as the underlay driver"
    );
}

#[test]
fn bridge_facts_read_from_json_refuse_a_garbled_mac_address_or_key_naming_it() {
    let read = |v: Value| serde_json::from_value::<LocalFacts>(v).map_err(|e| e.to_string());
    let ok = read(
        json!({"br-ex": {"mac": "52:54:00:30:93:ea", "addrs": ["100.64.1.4/30"]},
                         "br-ex-2": {}}),
    )
    .unwrap();
    assert_eq!(
        ok.bridges["br-ex"].addrs,
        vec!["100.64.1.4/30".parse().unwrap()]
    );
    assert_eq!(ok.bridges["br-ex-2"], Default::default());
    let e = read(json!({"br-ex": {"mac": "52:54:00:zz:93:ea"}})).unwrap_err();
    assert!(e.contains("52:54:00:zz:93:ea"), "{e}");
    let e = read(json!({"br-ex": {"addrs": ["100.64.1.400/30"]}})).unwrap_err();
    assert!(e.contains("address"), "{e}");
    let e = read(json!({"br-ex": {"macs": "52:54:00:30:93:ea"}})).unwrap_err();
    assert!(e.contains("macs"), "{e}");
}

#[test]
fn split_in_two_the_plan_writes_the_new_rows_first_and_removes_the_old_after() {
    let mut case = Case::load("basic.json");
    case.ovs_ext(
        "ovn-bridge-mappings-bgp",
        Some("fabric1:br-ex,local:br-osp"),
    );
    let mut db = Observed::new();
    converge(&case.compute().local_nb, &mut db);
    // fabric1 goes, fabric2 comes, in one reconcile.
    case.ovs_ext(
        "ovn-bridge-mappings-bgp",
        Some("fabric2:br-ex-2,local:br-osp"),
    );
    let desired = case.compute().local_nb;
    let mut whole = db.clone();
    converge(&desired, &mut whole);

    let (writes, removals) = plan(&desired, &db).split_removals();
    assert!(
        !writes.is_empty() && !removals.is_empty(),
        "{writes}\n{removals}"
    );
    apply_in_memory(&mut db, &writes.ops).expect("the writes apply");
    let switch = |db: &Observed, name: &str| {
        db["Logical_Switch"].values().any(|r| {
            r.get("name")
                .and_then(|d| d.as_scalar().and_then(|a| a.as_str()))
                == Some(name)
        })
    };
    // Between the two: every desired row is there, the old ones still are.
    let between = plan(&desired, &db);
    assert!(
        between
            .ops
            .iter()
            .all(|o| matches!(o, NbOp::Delete { .. } | NbOp::RemoveChildren { .. })),
        "only removals are left: {between}"
    );
    assert!(switch(&db, "fabric2") && switch(&db, "fabric1"));
    apply_in_memory(&mut db, &removals.ops).expect("the removals apply");
    assert!(!switch(&db, "fabric1"));
    assert!(plan(&desired, &db).is_empty());
    assert_eq!(db, whole, "the two transactions end where the one does");
}
