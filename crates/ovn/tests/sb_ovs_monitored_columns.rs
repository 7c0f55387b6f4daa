//! The SB drivers monitor only [`sb::MONITORED_COLUMNS`] and every driver
//! only [`ovs::MONITORED_COLUMNS`] of the local Open_vSwitch database: every
//! column their parsers read must be in those lists, and every listed
//! column must exist in the schema. The rows are the golden scenarios'
//! (`fixtures/conformance/scenarios`); the SB ones are fed to the parsers
//! one table at a time so that each read is charged to its table.

use std::collections::BTreeSet;
use std::path::Path;

use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::{ovs, sb, SbIndex, Snapshot, Tables, OVS_DB, SB_DB};
use obgp_ovsdb_data::datum::audit;

fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures"))
}

fn read(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every golden scenario's rows of `db` (those that have any).
fn scenario_rows(db: &str) -> Vec<Tables> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(fixtures().join("conformance/scenarios")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let scenario = read(&path);
        let fixture = FixtureDb::from_wire(&scenario["ovn"]).unwrap();
        if let Some(tables) = fixture.dbs.get(db).filter(|t| !t.is_empty()) {
            out.push(tables.clone());
        }
    }
    out
}

/// `tables` keeping only `table`.
fn only(tables: &Tables, table: &str) -> Tables {
    let mut out = Tables::new();
    if let Some(rows) = tables.get(table) {
        out.insert(table.into(), rows.clone());
    }
    out
}

/// Checks that `parse`, given one monitored table at a time, reads only
/// that table's monitored columns; returns how many tables were read and
/// every column read.
fn check(
    db: &str,
    monitored: &[(&str, &[&str])],
    parse: impl Fn(&Tables),
) -> (usize, BTreeSet<String>) {
    let (mut checked, mut read_anywhere) = (0, BTreeSet::new());
    for tables in scenario_rows(db) {
        for (table, columns) in monitored {
            if tables.get(*table).is_none_or(|t| t.is_empty()) {
                continue;
            }
            let ((), read) = audit::record(|| parse(&only(&tables, table)));
            let strays: Vec<&String> = read
                .iter()
                .filter(|c| !columns.contains(&c.as_str()))
                .collect();
            assert!(
                strays.is_empty(),
                "{db} {table}: the parsers read {strays:?}, which the monitored columns leave out"
            );
            read_anywhere.extend(read);
            checked += 1;
        }
    }
    (checked, read_anywhere)
}

#[test]
fn sb_parsers_read_only_monitored_columns() {
    let (checked, read) = check(SB_DB, sb::MONITORED_COLUMNS, |t| {
        SbIndex::build(t, &mut Vec::new());
    });
    assert!(checked >= 10, "only {checked} SB tables read");
    for column in ["logical_port", "mac", "nat_addresses", "chassis", "name"] {
        assert!(read.contains(column), "no parser read {column}: {read:?}");
    }
}

#[test]
fn ovs_parser_reads_only_monitored_columns() {
    // The Open_vSwitch row leads to its bridges and their ports, so the
    // tables are parsed together and checked against every monitored
    // column of the database.
    let monitored: BTreeSet<&str> = ovs::MONITORED_COLUMNS
        .iter()
        .flat_map(|(_, columns)| columns.iter().copied())
        .collect();
    let mut read_anywhere = BTreeSet::new();
    let scenarios = scenario_rows(OVS_DB);
    assert!(scenarios.len() >= 10, "only {} scenarios", scenarios.len());
    for tables in scenarios {
        let (_, read) = audit::record(|| Snapshot::build(&Tables::new(), &tables));
        let strays: Vec<&String> = read
            .iter()
            .filter(|c| !monitored.contains(c.as_str()))
            .collect();
        assert!(
            strays.is_empty(),
            "the OVS parser reads {strays:?}, which ovs::MONITORED_COLUMNS leaves out"
        );
        read_anywhere.extend(read);
    }
    for column in ["external_ids", "ports", "name"] {
        assert!(
            read_anywhere.contains(column),
            "no parser read {column}: {read_anywhere:?}"
        );
    }
}

fn assert_in_schema(schema: &str, monitored: &[(&str, &[&str])], lookup: fn(&str) -> &[&str]) {
    let schema = read(&fixtures().join("schemas").join(schema));
    for (table, columns) in monitored {
        for c in *columns {
            assert!(
                schema["tables"][table]["columns"].get(c).is_some(),
                "{table}.{c} is not in the {} schema",
                schema["name"]
            );
        }
        assert_eq!(lookup(table), *columns);
    }
    assert!(lookup("NoSuchTable").is_empty());
}

#[test]
fn monitored_columns_exist_in_the_schemas() {
    assert_in_schema(
        "ovn-sb.ovsschema",
        sb::MONITORED_COLUMNS,
        sb::monitored_columns,
    );
    assert_in_schema(
        "vswitch.ovsschema",
        ovs::MONITORED_COLUMNS,
        ovs::monitored_columns,
    );
}

#[test]
fn the_monitors_ask_for_exactly_the_monitored_columns_of_every_row() {
    let no_keys: &[(&str, &str, &[&str])] = &[];
    for (spec, monitored, keys) in [
        (sb::monitor_spec(), sb::MONITORED_COLUMNS, no_keys),
        (
            ovs::monitor_spec(),
            ovs::MONITORED_COLUMNS,
            ovs::MONITORED_KEYS,
        ),
    ] {
        assert_eq!(spec.tables.len(), monitored.len());
        for (table, columns) in monitored {
            let tm = &spec.tables[*table];
            let want: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
            assert_eq!(tm.columns.as_ref(), Some(&want), "{table}");
            assert!(tm.conditions.is_none(), "{table}");
            let want_keys: std::collections::BTreeMap<String, Vec<String>> = keys
                .iter()
                .filter(|(t, _, _)| t == table)
                .map(|(_, c, ks)| (c.to_string(), ks.iter().map(|k| k.to_string()).collect()))
                .collect();
            assert_eq!(tm.map_keys, want_keys, "{table}");
        }
    }
}
