//! The output of `ovsdb-client -f json dump`, read as OVN content.
//!
//! That command prints one JSON object per table, one per line:
//! `{"caption": "<Table> table", "headings": ["_uuid", col, ...], "data":
//! [[cell, ...], ...]}`, every cell in OVSDB wire notation (`-f json`
//! implies `--data=json`), so no schema is needed to decode it. It does
//! not name its database: each table goes to the database the agent reads
//! it from (the driver's NB or SB, or the local Open_vSwitch), and its
//! rows keep the columns that database's monitor asks for. Several dumps
//! concatenated in one file (NB, then the local OVS) read as one.

use serde_json::{Map, Value};

use crate::snapshot::{NB_DB, OVS_DB, SB_DB};

/// Why a dump could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    #[error("JSON value {index} of the dump is not valid JSON: {reason}")]
    Json { index: usize, reason: String },
    #[error("JSON value {index} of the dump is not an ovsdb-client table (an object with caption, headings and data): {value}")]
    NotATable { index: usize, value: String },
    #[error("table {table}: {reason}")]
    BadTable { table: String, reason: String },
}

/// A dump converted to `{db: {table: {uuid: row}}}`.
#[derive(Debug, Default)]
pub struct ConvertedDump {
    /// The rows, by database, table and uuid, in wire notation.
    pub wire: Value,
    /// The dump's tables the agent does not read, left out.
    pub skipped: Vec<String>,
    /// The number of rows kept.
    pub rows: usize,
}

/// Whether `v` is one table of an `ovsdb-client -f json dump`.
pub fn is_dump_table(v: &Value) -> bool {
    v.get("caption").is_some() && v.get("headings").is_some() && v.get("data").is_some()
}

/// The database the agent reads `table` from, with the SB drivers
/// (`reads_sb`) or the NB one; `None` for a table it does not read.
pub fn database_of(table: &str, reads_sb: bool) -> Option<&'static str> {
    let (ovn_db, ovn_columns): (&'static str, fn(&str) -> &'static [&'static str]) = if reads_sb {
        (SB_DB, crate::sb::monitored_columns)
    } else {
        (NB_DB, crate::nb::monitored_columns)
    };
    if !ovn_columns(table).is_empty() {
        Some(ovn_db)
    } else if !crate::ovs::monitored_columns(table).is_empty() {
        Some(OVS_DB)
    } else {
        None
    }
}

/// The monitored columns of `table` in `db` (none for a table or a
/// database the agent does not read).
fn columns_of(db: &str, table: &str) -> &'static [&'static str] {
    match db {
        SB_DB => crate::sb::monitored_columns(table),
        NB_DB => crate::nb::monitored_columns(table),
        OVS_DB => crate::ovs::monitored_columns(table),
        _ => &[],
    }
}

/// Whether the agent monitors `table` of `db` (with a driver that reads `db`).
pub fn reads_table(db: &str, table: &str) -> bool {
    !columns_of(db, table).is_empty()
}

/// Converts the text of one or more concatenated dumps.
pub fn convert(text: &str, reads_sb: bool) -> Result<ConvertedDump, DumpError> {
    let mut dbs: Map<String, Value> = Map::new();
    let mut out = ConvertedDump::default();
    let values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    for (index, value) in values.enumerate() {
        let value = value.map_err(|e| DumpError::Json {
            index,
            reason: e.to_string(),
        })?;
        // `ovsdb-client transact` prints its result as an array: a capture
        // script may have left one in; it holds no rows.
        if value.is_array() {
            continue;
        }
        if !is_dump_table(&value) {
            let mut shown = value.to_string();
            shown.truncate(120);
            return Err(DumpError::NotATable {
                index,
                value: shown,
            });
        }
        let (table, rows) = table_rows(&value)?;
        let Some(db) = database_of(&table, reads_sb) else {
            out.skipped.push(table);
            continue;
        };
        let columns = columns_of(db, &table);
        let into = dbs
            .entry(db.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        let into = into
            .as_object_mut()
            .expect("inserted as an object")
            .entry(table)
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .expect("inserted as an object");
        for (uuid, mut row) in rows {
            row.retain(|column, _| columns.contains(&column.as_str()));
            into.insert(uuid, Value::Object(row));
            out.rows += 1;
        }
    }
    out.wire = Value::Object(dbs);
    Ok(out)
}

/// One row of a dump table: its uuid and its columns in wire notation.
type DumpRow = (String, Map<String, Value>);

/// One dump table's name and its rows.
fn table_rows(v: &Value) -> Result<(String, Vec<DumpRow>), DumpError> {
    let caption = v["caption"].as_str().unwrap_or_default();
    let table = caption
        .strip_suffix(" table")
        .unwrap_or(caption)
        .to_string();
    let bad = |reason: String| DumpError::BadTable {
        table: table.clone(),
        reason,
    };
    let headings: Vec<&str> = v["headings"]
        .as_array()
        .ok_or_else(|| bad("headings is not an array".into()))?
        .iter()
        .map(|h| h.as_str().unwrap_or_default())
        .collect();
    let uuid_at = headings
        .iter()
        .position(|h| *h == "_uuid")
        .ok_or_else(|| bad("no _uuid heading (dump it with ovsdb-client -f json dump)".into()))?;
    let data = v["data"]
        .as_array()
        .ok_or_else(|| bad("data is not an array".into()))?;
    let mut rows = Vec::with_capacity(data.len());
    for (n, cells) in data.iter().enumerate() {
        let cells = cells
            .as_array()
            .filter(|c| c.len() == headings.len())
            .ok_or_else(|| bad(format!("row {n} does not have one cell per heading")))?;
        let uuid = match &cells[uuid_at] {
            Value::Array(pair) if pair.len() == 2 && pair[0] == "uuid" => pair[1].as_str(),
            Value::String(s) => Some(s.as_str()),
            _ => None,
        }
        .ok_or_else(|| bad(format!("row {n}: _uuid is {}", cells[uuid_at])))?;
        let row: Map<String, Value> = headings
            .iter()
            .zip(cells)
            .filter(|(h, _)| !h.starts_with('_'))
            .map(|(h, c)| (h.to_string(), c.clone()))
            .collect();
        rows.push((uuid.to_string(), row));
    }
    Ok((table, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two lines as `ovsdb-client -f json dump` printed them for an NB
    /// server (cut to three tables), then the local OVS's Open_vSwitch.
    const DUMP: &str = r#"{"caption":"ACL table","data":[],"headings":["_uuid","action"]}
{"caption":"Logical_Switch_Port table","data":[[["uuid","8c78f1be-c47a-4ef7-a884-90857e212d3a"],"fa:16:3e:00:00:01 10.0.0.5",["map",[]],"p1",["set",[]],5,""]],"headings":["_uuid","addresses","external_ids","name","options","tag","type"]}
{"caption":"Logical_Switch table","data":[[["uuid","8138477c-a79f-45c0-8cd5-993e3a271f68"],"sw",["uuid","8c78f1be-c47a-4ef7-a884-90857e212d3a"]]],"headings":["_uuid","name","ports"]}
{"caption":"Open_vSwitch table","data":[[["uuid","0f3a1b2c-0000-4000-8000-000000000001"],["map",[["hostname","compute-1"]]]]],"headings":["_uuid","external_ids"]}
"#;

    #[test]
    fn a_dump_becomes_rows_of_the_databases_the_nb_driver_reads() {
        let c = convert(DUMP, false).unwrap();
        let lsp = &c.wire[NB_DB]["Logical_Switch_Port"]["8c78f1be-c47a-4ef7-a884-90857e212d3a"];
        assert_eq!(lsp["name"], "p1");
        assert_eq!(lsp["addresses"], "fa:16:3e:00:00:01 10.0.0.5");
        assert_eq!(
            c.wire[NB_DB]["Logical_Switch"]["8138477c-a79f-45c0-8cd5-993e3a271f68"]["ports"],
            serde_json::json!(["uuid", "8c78f1be-c47a-4ef7-a884-90857e212d3a"])
        );
        assert_eq!(
            c.wire[OVS_DB]["Open_vSwitch"]["0f3a1b2c-0000-4000-8000-000000000001"]["external_ids"],
            serde_json::json!(["map", [["hostname", "compute-1"]]])
        );
        assert_eq!(c.skipped, ["ACL"]);
        assert_eq!(c.rows, 3);
        let snap = crate::Snapshot::from_wire(&c.wire).unwrap();
        assert_eq!(
            snap.ovs.chassis_name(crate::ChassisNaming::Hostname, None),
            Some("compute-1")
        );
    }

    #[test]
    fn an_sb_driver_leaves_out_the_nb_tables() {
        let c = convert(DUMP, true).unwrap();
        assert!(c.wire.get(NB_DB).is_none());
        assert_eq!(c.skipped, ["ACL", "Logical_Switch_Port", "Logical_Switch"]);
    }

    #[test]
    fn a_value_that_is_no_table_is_refused_with_its_place() {
        let e = convert("{\"caption\":\"ACL table\",\"data\":[],\"headings\":[\"_uuid\"]}\n{\"OVN_Northbound\":{}}", false)
            .unwrap_err();
        assert!(matches!(e, DumpError::NotATable { index: 1, .. }), "{e}");
        let e = convert(
            "{\"caption\":\"Logical_Switch table\",\"data\":[[\"x\"]],\"headings\":[\"_uuid\",\"name\"]}",
            false,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "table Logical_Switch: row 0 does not have one cell per heading"
        );
    }
}
