//! Tests of the snapshot: applying, replacing, bad rows, references.

use super::*;
use serde_json::json;

const LS1: &str = "11111111-1111-4111-8111-111111111111";
const LSP1: &str = "22222222-2222-4222-8222-222222222222";

fn nb() -> Arc<DatabaseSchema> {
    Arc::new(
        DatabaseSchema::from_file(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/schemas/ovn-nb.ovsschema"
        ))
        .unwrap(),
    )
}

fn updates(v: serde_json::Value) -> TableUpdates {
    serde_json::from_value(v).unwrap()
}

fn base() -> DbSnapshot {
    let s = DbSnapshot::empty(nb(), ["Logical_Switch", "Logical_Switch_Port"]);
    s.apply(updates(json!({
        "Logical_Switch": {LS1: {"initial": {"name": "ls1", "ports": ["uuid", LSP1]}}},
        "Logical_Switch_Port": {LSP1: {"initial": {
            "name": "p1", "addresses": ["set", ["fa:16:3e:00:00:01 10.0.0.5"]],
            "external_ids": ["map", [["a", "1"], ["b", "2"]]], "up": false}}}
    })))
    .unwrap()
    .0
}

#[test]
fn references_resolve_through_the_cache() {
    let s = base();
    let ls = s.get("Logical_Switch", Uuid::parse(LS1).unwrap()).unwrap();
    let ports = s.resolve("Logical_Switch", ls, "ports");
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].1.str("name"), Some("p1"));
}

#[test]
fn modify_applies_diffs_and_reports_old_columns() {
    let s = base();
    let (next, changes) = s
        .apply(updates(json!({"Logical_Switch_Port": {LSP1: {"modify": {
            "external_ids": ["map", [["a", "1"], ["b", "3"], ["c", "4"]]],
            "addresses": ["set", ["fa:16:3e:00:00:01 10.0.0.5", "unknown"]],
            // A column of at most one element: the diff is the new value.
            "up": true
        }}}})))
        .unwrap();
    let row = next
        .get("Logical_Switch_Port", Uuid::parse(LSP1).unwrap())
        .unwrap();
    assert_eq!(row.map_str("external_ids", "a"), None);
    assert_eq!(row.map_str("external_ids", "b"), Some("3"));
    assert_eq!(row.map_str("external_ids", "c"), Some("4"));
    assert_eq!(row.strs("addresses").collect::<Vec<_>>(), ["unknown"]);
    assert_eq!(row.bool("up"), Some(true));
    assert_eq!(changes.len(), 1);
    let old = changes[0].old.as_ref().unwrap();
    assert_eq!(old.bool("up"), Some(false));
    assert_eq!(old.map_str("external_ids", "a"), Some("1"));
    // The earlier snapshot is untouched.
    let before = s
        .get("Logical_Switch_Port", Uuid::parse(LSP1).unwrap())
        .unwrap();
    assert_eq!(before.map_str("external_ids", "a"), Some("1"));
}

#[test]
fn a_projected_modify_of_dropped_keys_only_changes_nothing() {
    let s = base();
    let projection =
        crate::wire::KeyProjection::default().keep("Logical_Switch_Port", "external_ids", ["a"]);
    // The server changed `b` and added `z`, both dropped by the projection.
    let text = json!({"Logical_Switch_Port": {LSP1: {"modify": {
        "external_ids": ["map", [["b", "3"], ["z", "9"]]]}}}})
    .to_string();
    let u = crate::wire::decode_table_updates(text.as_bytes(), &projection).unwrap();
    let (next, changes) = s.apply(u).unwrap();
    assert!(changes.is_empty(), "{changes:?}");
    assert_eq!(
        next.get("Logical_Switch_Port", Uuid::parse(LSP1).unwrap()),
        s.get("Logical_Switch_Port", Uuid::parse(LSP1).unwrap())
    );
    // With a kept key in the diff only that column is reported.
    let text = json!({"Logical_Switch_Port": {LSP1: {"modify": {
        "external_ids": ["map", [["a", "5"], ["b", "3"]]], "up": true}}}})
    .to_string();
    let u = crate::wire::decode_table_updates(text.as_bytes(), &projection).unwrap();
    let (next, changes) = s.apply(u).unwrap();
    let row = next
        .get("Logical_Switch_Port", Uuid::parse(LSP1).unwrap())
        .unwrap();
    assert_eq!(row.map_str("external_ids", "a"), Some("5"));
    assert_eq!(row.map_str("external_ids", "b"), Some("2"));
    let old = changes[0].old.as_ref().unwrap();
    assert_eq!(
        old.columns.keys().map(|k| k.as_str()).collect::<Vec<_>>(),
        ["external_ids", "up"]
    );
}

#[test]
fn a_bad_row_leaves_the_cache_untouched() {
    let s = base();
    let bad = updates(json!({"Logical_Switch_Port": {
        "33333333-3333-4333-8333-333333333333": {"insert": {"name": "p2"}},
        LSP1: {"modify": {"up": "not-a-bool"}}
    }}));
    let err = s.apply(bad).unwrap_err().to_string();
    assert!(err.contains(LSP1) && err.contains("column up"), "{err}");
    assert_eq!(s.table("Logical_Switch_Port").len(), 1);
    let unknown = updates(json!({"Nope": {LSP1: {"delete": null}}}));
    assert!(matches!(s.apply(unknown), Err(DataError::UnknownTable(_))));
    let missing = updates(
        json!({"Logical_Switch_Port": {"33333333-3333-4333-8333-333333333333": {"delete": null}}}),
    );
    assert!(s.apply(missing).is_err());
}

#[test]
fn a_bad_row_is_left_out_named_by_uuid_and_the_rest_applies() {
    let s = base();
    const P2: &str = "33333333-3333-4333-8333-333333333333";
    const P3: &str = "44444444-3333-4333-8333-333333333333";
    let text = json!({"Logical_Switch_Port": {
        P2: {"insert": {"name": "p2"}},
        P3: {"insert": {"name": "p3", "tag": "not-an-integer"}},
        "55555555-3333-4333-8333-333333333333": {"insert": {"no_such_column": 1}},
        LSP1: {"modify": {"up": "not-a-bool", "name": "renamed"}}
    }, "Nope": {P2: {"insert": {}}}})
    .to_string()
    .replace(&format!("\"{P3}\""), "\"zz\"");
    let u = crate::wire::decode_table_updates(text.as_bytes(), &Default::default()).unwrap();
    let applied = s.apply_skipping_bad_rows(u).unwrap();
    let ports = applied.snapshot.table("Logical_Switch_Port");
    assert_eq!(ports.len(), 2);
    assert_eq!(
        ports.get(&Uuid::parse(P2).unwrap()).unwrap().str("name"),
        Some("p2")
    );
    // The bad modify changed nothing, not even its good column.
    assert_eq!(
        ports.get(&Uuid::parse(LSP1).unwrap()),
        s.get("Logical_Switch_Port", Uuid::parse(LSP1).unwrap())
    );
    assert_eq!(applied.changes.len(), 1);
    let faults: Vec<String> = applied.skipped.iter().map(|f| f.to_string()).collect();
    assert_eq!(faults.len(), 4, "{faults:?}");
    assert!(
        faults.iter().any(|f| f.contains("\"zz\" is not a UUID")),
        "{faults:?}"
    );
    assert!(
        faults.iter().any(|f| f.contains("no_such_column")),
        "{faults:?}"
    );
    assert!(
        faults
            .iter()
            .any(|f| f.starts_with(&format!("Logical_Switch_Port row {LSP1}: column up"))),
        "{faults:?}"
    );
    assert!(
        faults
            .iter()
            .any(|f| f.starts_with("Nope: table not in the schema")),
        "{faults:?}"
    );
    // A batch out of step with the cache still fails whole.
    let missing = updates(json!({"Logical_Switch_Port": {P2: {"delete": null}}}));
    assert!(matches!(
        s.apply_skipping_bad_rows(missing),
        Err(DataError::MissingRow { .. })
    ));
}

#[test]
fn a_row_a_resync_dump_sends_malformed_keeps_its_last_good_version() {
    let s = base();
    let empty = DbSnapshot::empty(nb(), ["Logical_Switch", "Logical_Switch_Port"]);
    let applied = s
        .replace_skipping_bad_rows(empty, updates(json!({
            "Logical_Switch": {LS1: {"initial": {"name": "ls1-renamed", "ports": ["uuid", LSP1]}}},
            "Logical_Switch_Port": {LSP1: {"initial": {"name": ["set", [1, 2]]}}}
        })))
        .unwrap();
    assert_eq!(
        applied
            .snapshot
            .get("Logical_Switch_Port", Uuid::parse(LSP1).unwrap()),
        s.get("Logical_Switch_Port", Uuid::parse(LSP1).unwrap()),
        "not reported deleted"
    );
    assert_eq!(applied.changes.len(), 1);
    assert_eq!(applied.changes[0].table.as_ref(), "Logical_Switch");
    assert_eq!(applied.skipped.len(), 1);
    assert_eq!(applied.skipped[0].uuid, Uuid::parse(LSP1).ok());
}

#[test]
fn delete_reports_the_whole_row() {
    let (next, changes) = base()
        .apply(updates(
            json!({"Logical_Switch_Port": {LSP1: {"delete": null}}}),
        ))
        .unwrap();
    assert!(next.table("Logical_Switch_Port").is_empty());
    assert_eq!(changes[0].kind, ChangeKind::Delete);
    assert_eq!(changes[0].old.as_ref().unwrap().str("name"), Some("p1"));
}

#[test]
fn replace_keeps_the_rows_a_dump_left_unchanged_shared_with_the_old_snapshot() {
    let s = base();
    let lsp = Uuid::parse(LSP1).unwrap();
    let empty = DbSnapshot::empty(nb(), ["Logical_Switch", "Logical_Switch_Port"]);
    // The same port as in `base`, the switch renamed: a resync's dump.
    let (next, changes) = s
        .replace(empty, updates(json!({
            "Logical_Switch": {LS1: {"initial": {"name": "ls1-renamed", "ports": ["uuid", LSP1]}}},
            "Logical_Switch_Port": {LSP1: {"initial": {
                "name": "p1", "addresses": ["set", ["fa:16:3e:00:00:01 10.0.0.5"]],
                "external_ids": ["map", [["a", "1"], ["b", "2"]]], "up": false}}}
        })))
        .unwrap();
    assert_eq!(changes.len(), 1, "only the switch changed: {changes:?}");
    let old_port = s.table("Logical_Switch_Port").get(&lsp).unwrap();
    let new_port = next.table("Logical_Switch_Port").get(&lsp).unwrap();
    assert!(
        Arc::ptr_eq(old_port, new_port),
        "an unchanged row is the old snapshot's allocation, not the dump's copy"
    );
    let ls = Uuid::parse(LS1).unwrap();
    assert_eq!(
        next.get("Logical_Switch", ls).unwrap().str("name"),
        Some("ls1-renamed")
    );
}

#[test]
fn replace_reports_the_difference_to_the_new_dump() {
    let s = base();
    let empty = DbSnapshot::empty(nb(), ["Logical_Switch", "Logical_Switch_Port"]);
    let (next, changes) = s
        .replace(empty, updates(json!({
            "Logical_Switch": {LS1: {"initial": {"name": "ls1-renamed"}}},
            "Logical_Switch_Port": {"33333333-3333-4333-8333-333333333333": {"initial": {"name": "p3"}}}
        })))
        .unwrap();
    assert_eq!(next.table("Logical_Switch_Port").len(), 1);
    let mut kinds: Vec<_> = changes
        .iter()
        .map(|c| (c.table.to_string(), c.kind))
        .collect();
    kinds.sort_by_key(|k| format!("{k:?}"));
    assert_eq!(
        kinds,
        [
            ("Logical_Switch".to_string(), ChangeKind::Update),
            ("Logical_Switch_Port".to_string(), ChangeKind::Delete),
            ("Logical_Switch_Port".to_string(), ChangeKind::Insert),
        ]
    );
}
