//! The local-NB planner on plain values: small desired sets against
//! hand-written observed rows.

use obgp_local_cluster::{
    apply_in_memory, plan, LocalClusterRows, LocalRow, NbOp, NbTable, Observed, Value,
};
use obgp_ovsdb_data::{Row, Uuid};
use serde_json::json;

fn row(v: serde_json::Value) -> Row {
    Row::from_wire(&v).unwrap()
}

fn owned() -> serde_json::Value {
    json!(["map", [["ovn-bgp-agent", "managed"]]])
}

/// `bgp-router` with one port `p1`.
fn router_with_port() -> LocalClusterRows {
    let mut nb = LocalClusterRows::default();
    let lr = nb.insert(LocalRow::new(
        NbTable::LogicalRouter,
        None,
        vec![("name", Value::Str("bgp-router".into()))],
    ));
    let p = nb.insert(LocalRow::new(
        NbTable::LogicalRouterPort,
        None,
        vec![
            ("name", Value::Str("p1".into())),
            ("mac", Value::Str("40:44:00:00:00:06".into())),
            ("networks", Value::set(["172.16.0.0/16"])),
        ],
    ));
    nb.adopt(&lr, "ports", p);
    nb
}

fn db_with(table: &str, rows: Vec<(u128, serde_json::Value)>) -> Observed {
    let mut db = Observed::new();
    let t = db.entry(table.to_string()).or_default();
    for (u, r) in rows {
        t.insert(Uuid(u), row(r));
    }
    db
}

#[test]
fn a_new_port_on_an_existing_router_is_inserted_and_attached_by_mutate() {
    let desired = router_with_port();
    let mut db = db_with(
        "Logical_Router",
        vec![(1, json!({"name": "bgp-router", "external_ids": owned()}))],
    );
    let p = plan(&desired, &db);
    assert_eq!(p.ops.len(), 2, "{p}");
    assert!(
        matches!(&p.ops[0], NbOp::Insert { key, .. } if key.table == NbTable::LogicalRouterPort)
    );
    assert!(
        matches!(&p.ops[1], NbOp::AddChildren { uuid, column: "ports", .. } if *uuid == Uuid(1))
    );
    let wire = p.ops[1].wire();
    assert_eq!(wire["op"], "mutate");
    assert_eq!(wire["mutations"][0][1], "insert");
    apply_in_memory(&mut db, &p.ops).unwrap();
    assert!(plan(&desired, &db).is_empty());
}

#[test]
fn an_owned_duplicate_is_deleted_and_a_foreign_one_is_kept() {
    let mut desired = LocalClusterRows::default();
    desired.insert(LocalRow::new(
        NbTable::LogicalSwitch,
        None,
        vec![("name", Value::Str("local".into()))],
    ));
    let db = db_with(
        "Logical_Switch",
        vec![
            (1, json!({"name": "local", "external_ids": owned()})),
            (2, json!({"name": "local", "external_ids": owned()})),
            (3, json!({"name": "local"})),
        ],
    );
    let p = plan(&desired, &db);
    assert_eq!(p.ops.len(), 1, "{p}");
    assert!(matches!(&p.ops[0], NbOp::Delete { uuid, .. } if *uuid == Uuid(2)));
}

#[test]
fn a_deleted_router_takes_its_children_without_ops_of_their_own() {
    let mut db = db_with(
        "Logical_Router",
        vec![(
            1,
            json!({"name": "bgp-router", "external_ids": owned(), "ports": ["uuid", "00000000-0000-0000-0000-000000000002"]}),
        )],
    );
    db.entry("Logical_Router_Port".into()).or_default().insert(
        Uuid(2),
        row(json!({"name": "p1", "mac": "40:44:00:00:00:06", "external_ids": owned()})),
    );
    let p = plan(&LocalClusterRows::default(), &db);
    assert_eq!(p.ops.len(), 1, "{p}");
    assert!(matches!(&p.ops[0], NbOp::Delete { uuid, .. } if *uuid == Uuid(1)));
    apply_in_memory(&mut db, &p.ops).unwrap();
    assert!(db.values().all(|t| t.is_empty()), "{db:?}");
}

#[test]
fn a_row_without_its_key_columns_is_reported_and_left_alone() {
    let db = db_with(
        "Static_MAC_Binding",
        vec![(1, json!({"mac": "fa:16:3e:00:00:01"}))],
    );
    let p = plan(&LocalClusterRows::default(), &db);
    assert!(p.is_empty());
    assert_eq!(p.problems.len(), 1);
    assert!(
        p.problems[0].contains("Static_MAC_Binding"),
        "{:?}",
        p.problems
    );
}

#[test]
fn an_update_names_only_the_changed_columns_and_prints_them() {
    let desired = router_with_port();
    let mut db = Observed::new();
    let first = plan(&desired, &db);
    apply_in_memory(&mut db, &first.ops).unwrap();
    let port = *db["Logical_Router_Port"].keys().next().unwrap();
    let mut changed = desired.clone();
    let key = changed
        .rows_of(NbTable::LogicalRouterPort)
        .next()
        .unwrap()
        .key
        .clone();
    changed
        .rows
        .get_mut(&key)
        .unwrap()
        .columns
        .insert("networks", Value::set(["172.16.0.0/16", "2001:db8:5::/48"]));
    let p = plan(&changed, &db);
    assert_eq!(p.ops.len(), 1, "{p}");
    assert_eq!(
        p.to_string().trim(),
        format!(
            "update Logical_Router_Port p1 ({port}): networks=[\"172.16.0.0/16\", \"2001:db8:5::/48\"]"
        )
    );
    assert_eq!(
        p.ops[0].wire()["row"],
        json!({"networks": ["set", ["172.16.0.0/16", "2001:db8:5::/48"]]})
    );
}

#[test]
fn the_monitor_covers_every_table_written_bfd_included_and_they_exist_in_the_nb_schema() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../fixtures/schemas/ovn-nb.ovsschema"),
        )
        .unwrap(),
    )
    .unwrap();
    let spec = obgp_local_cluster::monitor_spec();
    let parsed = obgp_ovsdb_data::DatabaseSchema::from_json(&schema).unwrap();
    let monitored: Vec<&str> = spec.tables_in(&parsed).collect();
    for t in NbTable::ALL {
        let table = &schema["tables"][t.name()];
        assert!(table.is_object(), "{t} is in the OVN NB schema");
        assert_eq!(
            table["isRoot"].as_bool().unwrap_or(false),
            t.is_root(),
            "{t} rootness"
        );
        for c in t.key_columns() {
            assert!(table["columns"][c].is_object(), "{t}.{c}");
        }
        if let Some((p, col)) = t.parent() {
            assert_eq!(
                schema["tables"][p.name()]["columns"][col]["type"]["key"]["refTable"],
                t.name()
            );
        }
        assert!(monitored.contains(&t.name()), "{t} monitored");
    }
}

#[test]
fn applying_an_op_on_a_row_that_is_gone_is_an_error_naming_the_op() {
    let desired = router_with_port();
    let db = db_with(
        "Logical_Router",
        vec![(1, json!({"name": "bgp-router", "external_ids": owned()}))],
    );
    let p = plan(&desired, &db);
    let e = apply_in_memory(&mut Observed::new(), &p.ops).unwrap_err();
    assert!(e.op.starts_with("mutate Logical_Router bgp-router"), "{e}");
    assert_eq!(e.reason, "no such row");
}
