//! `nb-monitor-bench small-batches`: the cost of a one-row update batch
//! on a large table.

use std::time::Instant;

use anyhow::Result;

/// Applies single-row update batches to a snapshot holding `rows`
/// Logical_Switch_Port rows and reports the cost per batch: the persistent
/// tables must make it independent of the table size.
pub fn small_batches(rows: usize) -> Result<()> {
    use obgp_ovsdb_data::wire::TableUpdates;
    let schema = std::sync::Arc::new(obgp_ovsdb_data::DatabaseSchema::from_file(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/schemas/ovn-nb.ovsschema"
    ))?);
    let uuid = |i: usize| obgp_ovsdb_data::Uuid(0x4000_8000_0000_0000_0000 + i as u128).to_string();
    let mut initial = serde_json::Map::new();
    for i in 0..rows {
        initial.insert(
            uuid(i),
            serde_json::json!({"initial": {"name": format!("port-{i}"),
                "external_ids": ["map", [["neutron:host_id", "host-001"], ["neutron:cidrs", "10.0.0.5/24"]]]}}),
        );
    }
    let dump: TableUpdates =
        serde_json::from_value(serde_json::json!({"Logical_Switch_Port": initial}))?;
    let (mut snap, _) =
        obgp_ovsdb_data::DbSnapshot::empty(schema, ["Logical_Switch_Port"]).apply(dump)?;
    let batches = 2000;
    let mut held = Vec::new();
    let t0 = Instant::now();
    for b in 0..batches {
        let u: TableUpdates = serde_json::from_value(serde_json::json!({"Logical_Switch_Port": {
            uuid(b * 7919 % rows): {"modify": {"external_ids": ["map", [["neutron:host_id", format!("host-{b}")]]]}}
        }}))?;
        let (next, _) = snap.apply(u)?;
        // Readers keep old snapshots alive: keep every 100th.
        if b % 100 == 0 {
            held.push(snap);
        }
        snap = next;
    }
    let per_batch = t0.elapsed() / batches as u32;
    println!(
        "rows={rows} single-row batches={batches} per_batch_us={:.1} snapshots_held={}",
        per_batch.as_secs_f64() * 1e6,
        held.len()
    );
    Ok(())
}
