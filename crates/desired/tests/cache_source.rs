//! The snapshot built straight from the OVSDB client's cache (through
//! `RowSource`, no row copies) gives the same desired state as the one built
//! from plain tables, on every NB golden scenario's OVN contents.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use obgp_config::{AdvertisementMethod, Config, Driver, ExposingMethod};
use obgp_desired::{desired_state, NodeFacts};
use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::{Snapshot, Tables, NB_DB, OVS_DB};
use obgp_ovsdb_data::wire::{RowOp, RowUpdate, TableUpdate, TableUpdates};
use obgp_ovsdb_data::DatabaseSchema;
use obgp_ovsdb_data::DbSnapshot;
use serde_json::Value;

fn read(p: &Path) -> Result<Value> {
    Ok(serde_json::from_str(
        &std::fs::read_to_string(p).with_context(|| p.display().to_string())?,
    )?)
}

/// Loads `tables` into an OVSDB cache snapshot of `schema`, as a monitor's
/// initial dump would.
fn cache_of(schema: &Value, tables: &Tables) -> Result<DbSnapshot> {
    let schema = Arc::new(DatabaseSchema::from_json(schema)?);
    let names: Vec<&str> = tables.keys().map(String::as_str).collect();
    let empty = DbSnapshot::empty(schema, names.iter().copied());
    let updates = TableUpdates(
        tables
            .iter()
            .map(|(table, rows)| {
                TableUpdate::new(
                    table.clone(),
                    rows.iter()
                        .map(|(uuid, row)| RowUpdate {
                            uuid: *uuid,
                            op: RowOp::Initial,
                            columns: row
                                .columns
                                .iter()
                                .map(|(c, d)| (c.clone(), d.clone()))
                                .collect(),
                        })
                        .collect(),
                )
            })
            .collect(),
    );
    Ok(empty.apply(updates)?.0)
}

#[test]
fn snapshot_from_the_ovsdb_cache_matches_snapshot_from_tables() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let nb_schema = read(&root.join("schemas/ovn-nb.ovsschema"))?;
    let ovs_schema = read(&root.join("schemas/vswitch.ovsschema"))?;
    let mut config = Config::default();
    config.default.driver = Driver::NbOvnBgpDriver;
    config.default.exposing_method = ExposingMethod::Underlay;
    config.default.bgp_router_id = Some("192.0.2.1".into());
    config.default.expose_tenant_networks = true;
    config.default.advertisement_method_tenant_networks = AdvertisementMethod::Host;
    let mut compared = 0;
    for entry in std::fs::read_dir(root.join("conformance/scenarios"))? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if !name.starts_with("nb-") {
            continue;
        }
        let db = FixtureDb::from_wire(&read(&path)?["ovn"])?;
        let nb = db.dbs.get(NB_DB).cloned().unwrap_or_default();
        let ovs = db.dbs.get(OVS_DB).cloned().unwrap_or_default();
        let from_tables = Snapshot::build(&nb, &ovs);
        let from_cache = Snapshot::build(
            &cache_of(&nb_schema, &nb).with_context(|| name.clone())?,
            &cache_of(&ovs_schema, &ovs).with_context(|| name.clone())?,
        );
        let facts = NodeFacts::default();
        assert_eq!(
            desired_state(&from_cache, &config, &facts)?,
            desired_state(&from_tables, &config, &facts)?,
            "{name}"
        );
        assert!(
            !desired_state(&from_cache, &config, &facts)?
                .exposed
                .is_empty(),
            "{name}"
        );
        compared += 1;
    }
    assert!(compared >= 12);
    Ok(())
}
