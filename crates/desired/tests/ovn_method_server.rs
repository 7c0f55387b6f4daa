//! `exposing_method = ovn` against a real ovsdb-server serving the OVN NB
//! schema (`fixtures/schemas/ovn-nb.ovsschema`): the planner's transaction
//! is accepted as is, the rows read back plan nothing (no churn, same
//! uuids after a "restart" of the computation), a removed segment's rows
//! go, and a foreign row stays.

use obgp_desired::{desired_ovn_method, GoldenConfig, LocalFacts, NodeFacts};
use obgp_local_cluster::{plan, LocalClusterRows, NbTable, Observed};
use obgp_ovn::Snapshot;
use obgp_ovsdb_data::{Row, Uuid};
use obgp_testbed::ovsdb::OvsdbServer;
use serde_json::{json, Value};

fn fixture() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/ovn-local/basic.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn compute(doc: &Value) -> LocalClusterRows {
    let c = serde_json::from_value::<GoldenConfig>(doc["config"].clone())
        .expect("the fixture's config")
        .config();
    let facts =
        serde_json::from_value::<LocalFacts>(doc["facts"].clone()).expect("the fixture's facts");
    let snap = Snapshot::from_wire(&doc["ovn"]).unwrap();
    desired_ovn_method(&snap, &c, &NodeFacts::default(), &facts)
        .unwrap()
        .local_nb
}

/// The agent's tables as the server holds them.
fn observe(server: &OvsdbServer) -> Observed {
    let mut db = Observed::new();
    for t in NbTable::ALL {
        let rows = db.entry(t.name().to_string()).or_default();
        for mut r in server.select_all(t.name()).unwrap() {
            let obj = r.as_object_mut().unwrap();
            let uuid = Uuid::parse(obj.remove("_uuid").unwrap()[1].as_str().unwrap()).unwrap();
            obj.remove("_version");
            rows.insert(uuid, Row::from_wire(&r).unwrap());
        }
    }
    db
}

fn write(server: &OvsdbServer, desired: &LocalClusterRows) -> usize {
    let p = plan(desired, &observe(server));
    assert!(p.problems.is_empty(), "{:?}", p.problems);
    let ops: Vec<Value> = p.ops.iter().map(|o| o.wire()).collect();
    if !ops.is_empty() {
        server.transact(&ops).unwrap_or_else(|e| panic!("{e}\n{p}"));
    }
    ops.len()
}

fn uuids(db: &Observed) -> Vec<Uuid> {
    db.values().flat_map(|t| t.keys().copied()).collect()
}

#[test]
fn the_local_nb_transaction_applies_on_a_real_server_and_converges() {
    let server = OvsdbServer::start("ovn-nb.ovsschema").expect("ovsdb-server");
    let mut doc = fixture();
    let desired = compute(&doc);
    assert!(write(&server, &desired) > 0);
    let first = observe(&server);
    for t in NbTable::ALL {
        assert_eq!(first[t.name()].len(), desired.rows_of(t).count(), "{t}");
    }
    // A foreign switch, and a restart: the same computation from scratch
    // plans nothing and every uuid stays.
    server
        .transact(&[json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "ops-net"}})])
        .unwrap();
    assert_eq!(write(&server, &compute(&doc)), 0, "no churn");
    let again = observe(&server);
    assert_eq!(uuids(&again).len(), uuids(&first).len() + 1);
    assert!(uuids(&first).iter().all(|u| uuids(&again).contains(u)));

    // A segment leaves: its rows go, the rest (and the foreign switch) stay.
    let ext = doc["ovn"]["Open_vSwitch"]["Open_vSwitch"]["ffffffff-0000-4000-8000-000000000001"]
        ["external_ids"][1]
        .as_array_mut()
        .unwrap();
    for p in ext.iter_mut() {
        if p[0] == "ovn-bridge-mappings-bgp" {
            p[1] = json!("fabric1:br-ex,local:br-osp");
        }
    }
    let fewer = compute(&doc);
    assert!(write(&server, &fewer) > 0);
    let after = observe(&server);
    for t in NbTable::ALL {
        let foreign = usize::from(t == NbTable::LogicalSwitch);
        assert_eq!(
            after[t.name()].len(),
            fewer.rows_of(t).count() + foreign,
            "{t}"
        );
    }
    assert_eq!(write(&server, &fewer), 0);
    assert!(
        uuids(&after).iter().all(|u| uuids(&again).contains(u)),
        "nothing recreated"
    );
}

#[test]
fn a_local_nb_the_python_agent_filled_is_adopted_in_place() {
    // The rows as upstream's commands leave them: the same columns
    // (fixtures/ovn-local/basic.json's notes trace each to wire.py and
    // ovsdbapp), without the agent's owner mark.
    let server = OvsdbServer::start("ovn-nb.ovsschema").expect("ovsdb-server");
    let doc = fixture();
    let desired = compute(&doc);
    let ops: Vec<Value> = plan(&desired, &Observed::new())
        .ops
        .iter()
        .map(|o| {
            let mut w = o.wire();
            w["row"].as_object_mut().unwrap().remove("external_ids");
            w
        })
        .collect();
    server.transact(&ops).unwrap();
    let before = observe(&server);
    let p = plan(&desired, &before);
    assert!(
        p.ops
            .iter()
            .all(|o| matches!(o, obgp_local_cluster::NbOp::MarkOwned { .. })),
        "adoption marks rows, nothing else:\n{p}"
    );
    let with_external_ids = NbTable::ALL
        .iter()
        .filter(|t| t.has_external_ids())
        .map(|t| desired.rows_of(*t).count())
        .sum::<usize>();
    assert_eq!(p.ops.len(), with_external_ids);
    write(&server, &desired);
    assert_eq!(write(&server, &desired), 0);
    assert_eq!(
        uuids(&observe(&server)),
        uuids(&before),
        "every row kept its uuid"
    );
}
