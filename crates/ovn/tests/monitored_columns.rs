//! The NB driver monitors only [`nb::MONITORED_COLUMNS`]: every column the
//! parsers read must be in it, or the agent would read a default where the
//! database holds a value. Likewise it keeps only [`nb::MONITORED_KEYS`] of
//! some map columns: every key the parsers read must be kept. The rows come
//! from the Neutron-shaped topology generator (VM, virtual, router and
//! localnet ports, routers, NAT, load balancers, NB_Global), applied like a
//! server would.

use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::nb::{self, MONITORED_COLUMNS, MONITORED_KEYS};
use obgp_ovn::{
    DhcpOptions, LoadBalancer, LogicalRouter, LogicalRouterPort, LogicalSwitch, LogicalSwitchPort,
    Nat, NbGlobal, NB_DB,
};
use obgp_ovsdb_data::datum::audit;
use obgp_ovsdb_data::wire::{decode_table_updates, TableUpdates};
use obgp_ovsdb_data::{Atom, Datum, Row, Uuid};
use obgp_topogen::{Params, Topology};

/// The generated topology's NB rows, table by table.
fn nb_rows() -> obgp_ovn::Tables {
    let topo = Topology::generate(Params {
        vms: 300,
        ..Params::default()
    });
    let mut db = FixtureDb::from_wire(&serde_json::json!({ NB_DB: {} })).unwrap();
    for ops in topo.nb_transactions() {
        db.apply(NB_DB, &ops).unwrap();
    }
    db.dbs.remove(NB_DB).unwrap()
}

/// Parses a row with its table's parser; the result as text, to compare.
fn parse(table: &str, uuid: Uuid, row: &Row) -> String {
    match table {
        "Logical_Switch" => format!("{:?}", LogicalSwitch::parse(uuid, row)),
        "Logical_Switch_Port" => format!("{:?}", LogicalSwitchPort::parse(uuid, row)),
        "Logical_Router" => format!("{:?}", LogicalRouter::parse(uuid, row)),
        "Logical_Router_Port" => format!("{:?}", LogicalRouterPort::parse(uuid, row)),
        "NAT" => format!("{:?}", Nat::parse(uuid, row)),
        "Load_Balancer" => format!("{:?}", LoadBalancer::parse(uuid, row)),
        "NB_Global" => format!("{:?}", NbGlobal::parse(uuid, row)),
        "DHCP_Options" => format!("{:?}", DhcpOptions::parse(uuid, row)),
        other => panic!("no parser for monitored table {other}"),
    }
}

#[test]
fn parsers_read_only_monitored_columns() {
    let tables = nb_rows();
    for (table, monitored) in MONITORED_COLUMNS {
        let rows = tables.get(*table).map(|t| t.len()).unwrap_or(0);
        assert!(rows > 0, "the topology has no {table} row to check");
        for (uuid, row) in &tables[*table] {
            let (_, read) = audit::record(|| parse(table, *uuid, row));
            assert!(!read.is_empty(), "{table} parser read no column");
            let strays: Vec<&String> = read
                .iter()
                .filter(|c| !monitored.contains(&c.as_str()))
                .collect();
            assert!(
                strays.is_empty(),
                "{table} row {uuid}: the parser reads {strays:?}, which nb::MONITORED_COLUMNS leaves out"
            );
        }
    }
}

#[test]
fn monitored_columns_parse_like_whole_rows() {
    let tables = nb_rows();
    let mut compared = 0;
    for (table, monitored) in MONITORED_COLUMNS {
        for (uuid, row) in &tables[*table] {
            let projected = row.project(monitored);
            assert_eq!(
                parse(table, *uuid, &projected),
                parse(table, *uuid, row),
                "{table} row {uuid} parses differently from its monitored columns"
            );
            compared += 1;
        }
    }
    assert!(compared > 300, "only {compared} rows compared");
}

#[test]
fn monitored_columns_exist_in_the_schema() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/schemas/ovn-nb.ovsschema"
        ))
        .unwrap(),
    )
    .unwrap();
    for (table, columns) in MONITORED_COLUMNS {
        for c in *columns {
            assert!(
                schema["tables"][table]["columns"].get(c).is_some(),
                "{table}.{c} is not in the OVN_Northbound schema"
            );
        }
        assert_eq!(nb::monitored_columns(table), *columns);
    }
    assert!(nb::monitored_columns("ACL").is_empty());
}

/// `row` as the NB driver's monitor delivers it: its monitored columns,
/// sent as an `initial` row update and decoded with the monitor's key
/// projection (the decoder the client runs, not a copy of its logic).
fn as_monitored(table: &str, uuid: Uuid, row: &Row) -> Row {
    let columns: serde_json::Map<String, serde_json::Value> = row
        .project(nb::monitored_columns(table))
        .columns
        .iter()
        .map(|(c, d)| (c.to_string(), d.to_wire()))
        .collect();
    let text =
        serde_json::json!({ table: { uuid.to_string(): { "initial": columns } } }).to_string();
    let updates: TableUpdates =
        decode_table_updates(text.as_bytes(), &nb::monitor_spec().key_projection()).unwrap();
    let update = updates.0.into_iter().next().unwrap().rows.remove(0);
    Row {
        columns: update.columns.into_iter().collect(),
    }
}

/// Every key constant the crate names (`pub const X: &str = "...";` in
/// `neutron::key`), read from the source so a new one is probed too.
fn key_constants() -> Vec<(String, String)> {
    let src = include_str!("../src/neutron.rs");
    let module = &src[src.find("pub mod key {").unwrap()..];
    let module = &module[..module.find("\n}").unwrap()];
    module
        .lines()
        .filter_map(|l| {
            let l = l.trim().strip_prefix("pub const ")?;
            let (name, rest) = l.split_once(':')?;
            let value = rest.split('"').nth(1)?;
            Some((name.trim().to_string(), value.to_string()))
        })
        .collect()
}

#[test]
fn parsers_read_only_monitored_keys() {
    // Each row's projected maps are probed with every key constant the
    // crate knows, set to a value: a parser that reads a probed key the
    // projection drops parses the whole row and the monitored row
    // differently.
    let keys = key_constants();
    assert!(keys.len() > 15, "only {} key constants found", keys.len());
    let tables = nb_rows();
    let mut probed = 0;
    for (table, column, _) in MONITORED_KEYS {
        for (uuid, row) in &tables[*table] {
            for (_, key) in &keys {
                let mut probe = row.clone();
                let mut pairs = probe
                    .get(column)
                    .map(|d| d.pairs().to_vec())
                    .unwrap_or_default();
                pairs.retain(|(k, _)| k.as_str() != Some(key));
                pairs.push((
                    Atom::String(key.as_str().into()),
                    Atom::String("probe".into()),
                ));
                pairs.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
                probe.columns.insert(*column, Datum::map(pairs));
                assert_eq!(
                    parse(table, *uuid, &as_monitored(table, *uuid, &probe)),
                    parse(table, *uuid, &probe),
                    "{table} row {uuid}: the parser reads a key of {column} that nb::MONITORED_KEYS drops (probed with {key:?})"
                );
                probed += 1;
            }
        }
    }
    assert!(probed > 1000, "only {probed} probes");
}

#[test]
fn parser_key_reads_are_in_the_allow_list() {
    // The source check behind the probe: every `key::X` the parsers name
    // is kept in the column it is read from where the call names the
    // column, else in some projected column; `status` is kept whole.
    let keys = key_constants();
    let src = include_str!("../src/nb.rs");
    let src = &src[..src.find("#[cfg(test)]").unwrap_or(src.len())];
    let mut checked = 0;
    for (at, _) in src.match_indices("key::") {
        let name: String = src[at + 5..]
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if name.is_empty() {
            continue; // `key::*` in a comment
        }
        let value = &keys
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("key::{name} is not a constant of neutron::key"))
            .1;
        // The column named on the same line, if any (`ext(row, "status", key::X)`).
        let line_start = src[..at].rfind('\n').map_or(0, |i| i + 1);
        let column = src[line_start..at].rsplit('"').nth(1);
        let kept_somewhere = MONITORED_KEYS
            .iter()
            .any(|(_, c, k)| column.is_none_or(|col| col == *c) && k.contains(&value.as_str()));
        let whole = column.is_some_and(|col| !MONITORED_KEYS.iter().any(|(_, c, _)| *c == col));
        assert!(
            kept_somewhere || whole,
            "nb.rs reads key::{name} ({value:?}{}), which nb::MONITORED_KEYS drops",
            column.map(|c| format!(" of {c}")).unwrap_or_default()
        );
        checked += 1;
    }
    assert!(checked > 20, "only {checked} key reads found");
}

#[test]
fn monitored_rows_parse_like_whole_rows() {
    let tables = nb_rows();
    let mut compared = 0;
    for (table, _) in MONITORED_COLUMNS {
        for (uuid, row) in &tables[*table] {
            let monitored = as_monitored(table, *uuid, row);
            assert_eq!(
                parse(table, *uuid, &monitored),
                parse(table, *uuid, row),
                "{table} row {uuid} parses differently from what the monitor keeps of it"
            );
            compared += 1;
        }
    }
    assert!(compared > 300, "only {compared} rows compared");
    // The projection does drop something on these rows: on the port with
    // the most `external_ids` (not the table's first, which a hash map
    // picks at random: a localnet there has none to drop).
    let (uuid, lsp) = tables["Logical_Switch_Port"]
        .iter()
        .max_by_key(|(u, r)| (r.get("external_ids").map_or(0, |d| d.pairs().len()), **u))
        .unwrap();
    let kept = as_monitored("Logical_Switch_Port", *uuid, lsp);
    assert!(
        kept.get("external_ids").map_or(0, |d| d.pairs().len())
            < lsp.get("external_ids").map_or(0, |d| d.pairs().len())
    );
}

#[test]
fn monitored_keys_name_monitored_map_columns() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/schemas/ovn-nb.ovsschema"
        ))
        .unwrap(),
    )
    .unwrap();
    for (table, column, keys) in MONITORED_KEYS {
        assert!(
            nb::monitored_columns(table).contains(column),
            "{table}.{column} is not monitored"
        );
        let ty = &schema["tables"][table]["columns"][column]["type"];
        assert!(
            ty.get("value").is_some(),
            "{table}.{column} is not a map: {ty}"
        );
        assert!(!keys.is_empty());
        assert_eq!(nb::monitored_keys(table, column), Some(*keys));
        let spec = nb::monitor_spec();
        assert_eq!(
            spec.key_projection()
                .keys(table, column)
                .map(|k| k.to_vec()),
            Some(keys.iter().map(|k| k.to_string()).collect())
        );
    }
    assert_eq!(nb::monitored_keys("Logical_Router_Port", "status"), None);
}
