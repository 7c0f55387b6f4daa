//! The NB driver monitors only [`nb::MONITORED_COLUMNS`]: every column the
//! parsers read must be in it, or the agent would read a default where the
//! database holds a value. The rows come from the Neutron-shaped topology
//! generator (VM, virtual, router and localnet ports, routers, NAT, load
//! balancers, NB_Global), applied like a server would.

use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::nb::{self, MONITORED_COLUMNS};
use obgp_ovn::{
    LoadBalancer, LogicalRouter, LogicalRouterPort, LogicalSwitch, LogicalSwitchPort, Nat,
    NbGlobal, NB_DB,
};
use obgp_ovsdb::datum::audit;
use obgp_ovsdb::{Row, Uuid};
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
    assert!(nb::monitored_columns("DHCP_Options").is_empty());
}
