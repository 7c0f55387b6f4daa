//! In-memory OVSDB databases loaded from wire notation, and an applier of
//! `transact` operations (insert, update, delete, mutate with `where`
//! conditions and named uuids), so scenario steps replay without a server.
//!
//! It implements what the scenarios use of RFC 7047 § 5.2, plus garbage
//! collection of unreferenced rows in non-root tables when a schema says
//! which tables are roots (deleting a Logical_Switch drops its ports, as
//! ovsdb-server does).

use std::collections::{BTreeMap, HashMap, HashSet};

use obgp_ovsdb_data::{Atom, Datum, DatumError, DatumKind, Row, Uuid};
use serde_json::Value;

use crate::snapshot::{Snapshot, Table, Tables, NB_DB, OVS_DB, SB_DB};

/// Why a fixture or an operation could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    #[error("fixture is not an object of databases: {0}")]
    NotAnObject(String),
    /// The decoding error is in the text and not a `source`: printed with
    /// its chain (`{:#}`), it would show twice.
    #[error("{db}.{table} row {uuid}: {error}")]
    BadRow {
        db: String,
        table: String,
        uuid: String,
        error: DatumError,
    },
    #[error("invalid row uuid {0:?}")]
    BadUuid(String),
    #[error("operation {index}: {reason}")]
    BadOp { index: usize, reason: String },
}

/// Several databases' tables, as a server would hold them.
#[derive(Clone, Debug, Default)]
pub struct FixtureDb {
    pub dbs: BTreeMap<String, Tables>,
    /// Per database, the tables the schema marks as roots. A database
    /// without an entry is never garbage-collected.
    roots: HashMap<String, HashSet<String>>,
    next_uuid: u128,
}

fn op_err(index: usize, reason: impl Into<String>) -> FixtureError {
    FixtureError::BadOp {
        index,
        reason: reason.into(),
    }
}

impl FixtureDb {
    /// Loads `{"<db>": {"<table>": {"<uuid>": {row}}}}`.
    pub fn from_wire(v: &Value) -> Result<FixtureDb, FixtureError> {
        let obj = v
            .as_object()
            .ok_or_else(|| FixtureError::NotAnObject(v.to_string()))?;
        let mut out = FixtureDb {
            next_uuid: 0xf1c7_0000_0000_4000_8000_0000_0000_0000,
            ..FixtureDb::default()
        };
        for (db, tables) in obj {
            let tables = tables
                .as_object()
                .ok_or_else(|| FixtureError::NotAnObject(tables.to_string()))?;
            let mut parsed = Tables::new();
            for (table, rows) in tables {
                let rows = rows
                    .as_object()
                    .ok_or_else(|| FixtureError::NotAnObject(rows.to_string()))?;
                let mut t = Table::new();
                for (uuid_s, row) in rows {
                    let uuid =
                        Uuid::parse(uuid_s).map_err(|_| FixtureError::BadUuid(uuid_s.clone()))?;
                    let row = Row::from_wire(row).map_err(|error| FixtureError::BadRow {
                        db: db.clone(),
                        table: table.clone(),
                        uuid: uuid_s.clone(),
                        error,
                    })?;
                    t.insert(uuid, row);
                }
                parsed.insert(table.clone(), t);
            }
            out.dbs.insert(db.clone(), parsed);
        }
        Ok(out)
    }

    /// Declares the root tables of a database from its `.ovsschema`, which
    /// enables garbage collection of unreferenced non-root rows.
    pub fn with_schema(mut self, schema: &Value) -> FixtureDb {
        let name = schema["name"].as_str().unwrap_or_default().to_string();
        let roots = schema["tables"]
            .as_object()
            .map(|t| {
                t.iter()
                    .filter(|(_, def)| def["isRoot"].as_bool().unwrap_or(false))
                    .map(|(n, _)| n.clone())
                    .collect()
            })
            .unwrap_or_default();
        self.roots.insert(name, roots);
        self
    }

    /// The snapshot of the current NB and local OVS contents.
    pub fn snapshot(&self) -> Snapshot {
        let empty = Tables::new();
        Snapshot::build(
            self.dbs.get(NB_DB).unwrap_or(&empty),
            self.dbs.get(OVS_DB).unwrap_or(&empty),
        )
    }

    fn fresh_uuid(&mut self) -> Uuid {
        self.next_uuid += 1;
        Uuid(self.next_uuid)
    }

    /// Applies the operations of one `transact` to database `db`, in order,
    /// all or nothing.
    pub fn apply(&mut self, db: &str, ops: &[Value]) -> Result<(), FixtureError> {
        let mut work = self.dbs.get(db).cloned().unwrap_or_default();
        let mut named: HashMap<String, Uuid> = HashMap::new();
        // Every insert gets its uuid before any op runs: a named uuid may be
        // used by an operation listed before the insert that defines it.
        let mut insert_uuid: HashMap<usize, Uuid> = HashMap::new();
        for (i, op) in ops.iter().enumerate() {
            if op["op"] == "insert" {
                let uuid = match op.get("uuid").and_then(Value::as_str) {
                    Some(u) => Uuid::parse(u).map_err(|_| op_err(i, format!("bad uuid {u:?}")))?,
                    None => self.fresh_uuid(),
                };
                if let Some(n) = op.get("uuid-name").and_then(Value::as_str) {
                    named.insert(n.to_string(), uuid);
                }
                insert_uuid.insert(i, uuid);
            }
        }
        for (i, op) in ops.iter().enumerate() {
            let table = op["table"]
                .as_str()
                .ok_or_else(|| op_err(i, "missing table"))?;
            match op["op"].as_str().unwrap_or_default() {
                "insert" => {
                    let uuid = insert_uuid[&i];
                    let row = resolve_row(&op["row"], &named).map_err(|e| op_err(i, e))?;
                    work.entry(table.to_string()).or_default().insert(uuid, row);
                }
                "update" => {
                    let new = resolve_row(&op["row"], &named).map_err(|e| op_err(i, e))?;
                    let rows =
                        matching(&work, table, &op["where"], &named).map_err(|e| op_err(i, e))?;
                    let t = work.entry(table.to_string()).or_default();
                    for u in rows {
                        if let Some(r) = t.get_mut(&u) {
                            for (c, d) in &new.columns {
                                r.columns.insert(c.clone(), d.clone());
                            }
                        }
                    }
                }
                "delete" => {
                    let rows =
                        matching(&work, table, &op["where"], &named).map_err(|e| op_err(i, e))?;
                    let t = work.entry(table.to_string()).or_default();
                    let gone: HashSet<Uuid> =
                        rows.into_iter().filter(|u| t.remove(u).is_some()).collect();
                    drop_references(&mut work, &gone);
                }
                "mutate" => {
                    let rows =
                        matching(&work, table, &op["where"], &named).map_err(|e| op_err(i, e))?;
                    let muts = op["mutations"]
                        .as_array()
                        .ok_or_else(|| op_err(i, "missing mutations"))?;
                    let t = work.entry(table.to_string()).or_default();
                    for m in muts {
                        let (col, mutator, val) = match m.as_array().map(Vec::as_slice) {
                            Some([c, f, v]) => (
                                c.as_str().ok_or_else(|| op_err(i, "bad mutation column"))?,
                                f.as_str().ok_or_else(|| op_err(i, "bad mutator"))?,
                                resolve_datum(v, &named).map_err(|e| op_err(i, e))?,
                            ),
                            _ => return Err(op_err(i, format!("bad mutation {m}"))),
                        };
                        for u in &rows {
                            if let Some(r) = t.get_mut(u) {
                                let cur = r.columns.remove(col).unwrap_or_else(Datum::empty_set);
                                let next = mutate(cur, mutator, &val).map_err(|e| op_err(i, e))?;
                                r.columns.insert(col.to_string(), next);
                            }
                        }
                    }
                }
                other => return Err(op_err(i, format!("unsupported op {other:?}"))),
            }
        }
        if let Some(roots) = self.roots.get(db) {
            collect_garbage(&mut work, roots);
        }
        self.dbs.insert(db.to_string(), work);
        Ok(())
    }
}

/// Here, not in `snapshot`, so that the snapshot module does not depend on
/// the fixture loader.
impl Snapshot {
    /// Builds a snapshot from `{"OVN_Northbound": {table: {uuid: row}},
    /// "OVN_Southbound": {...}, "Open_vSwitch": {...}}` in OVSDB wire
    /// notation (the scenarios' `ovn`); any database may be absent.
    pub fn from_wire(v: &serde_json::Value) -> Result<Snapshot, FixtureError> {
        let dbs = FixtureDb::from_wire(v)?;
        let empty = Tables::new();
        let db = |name: &str| dbs.dbs.get(name).unwrap_or(&empty);
        Ok(Snapshot::build_with_sb(db(NB_DB), db(SB_DB), db(OVS_DB)))
    }
}

fn resolve_atom(a: Atom, named: &HashMap<String, Uuid>) -> Result<Atom, String> {
    match a {
        Atom::NamedUuid(n) => named
            .get(n.as_str())
            .map(|u| Atom::Uuid(*u))
            .ok_or_else(|| format!("unknown named-uuid {n:?}")),
        other => Ok(other),
    }
}

fn resolve_datum(v: &Value, named: &HashMap<String, Uuid>) -> Result<Datum, String> {
    let d = Datum::from_wire(v).map_err(|e| e.to_string())?;
    Ok(match d.into_kind() {
        DatumKind::Set(items) => Datum::set(
            items
                .into_iter()
                .map(|a| resolve_atom(a, named))
                .collect::<Result<_, _>>()?,
        ),
        DatumKind::Map(pairs) => Datum::map(
            pairs
                .into_iter()
                .map(|(k, v)| Ok((resolve_atom(k, named)?, resolve_atom(v, named)?)))
                .collect::<Result<_, String>>()?,
        ),
    })
}

fn resolve_row(v: &Value, named: &HashMap<String, Uuid>) -> Result<Row, String> {
    let obj = v.as_object().ok_or("row is not an object")?;
    let mut row = Row::default();
    for (c, d) in obj {
        row.columns.insert(c.clone(), resolve_datum(d, named)?);
    }
    Ok(row)
}

/// Order-insensitive canonical form of a datum, for `==` and `includes`.
fn canon(d: &Datum) -> Vec<String> {
    let mut v: Vec<String> = match d.kind() {
        DatumKind::Set(items) => items.iter().map(|a| a.to_wire().to_string()).collect(),
        DatumKind::Map(pairs) => pairs
            .iter()
            .map(|(k, v)| format!("{}={}", k.to_wire(), v.to_wire()))
            .collect(),
    };
    v.sort();
    v
}

fn matching(
    tables: &Tables,
    table: &str,
    conds: &Value,
    named: &HashMap<String, Uuid>,
) -> Result<Vec<Uuid>, String> {
    let conds = match conds {
        Value::Null => &[][..],
        Value::Array(a) => a.as_slice(),
        _ => return Err("where is not an array".into()),
    };
    let mut parsed = Vec::new();
    for c in conds {
        match c.as_array().map(Vec::as_slice) {
            Some([col, f, v]) => parsed.push((
                col.as_str().ok_or("bad where column")?,
                f.as_str().ok_or("bad where function")?,
                canon(&resolve_datum(v, named)?),
            )),
            _ => return Err(format!("bad condition {c}")),
        }
    }
    let Some(t) = tables.get(table) else {
        return Ok(Vec::new());
    };
    let mut out: Vec<Uuid> = t
        .iter()
        .filter(|(uuid, row)| {
            parsed.iter().all(|(col, f, want)| {
                let have = if *col == "_uuid" {
                    vec![Atom::Uuid(**uuid).to_wire().to_string()]
                } else {
                    row.get(col).map(canon).unwrap_or_default()
                };
                match *f {
                    "==" => &have == want,
                    "!=" => &have != want,
                    "includes" => want.iter().all(|w| have.contains(w)),
                    "excludes" => want.iter().all(|w| !have.contains(w)),
                    _ => false,
                }
            })
        })
        .map(|(u, _)| *u)
        .collect();
    out.sort();
    Ok(out)
}

fn mutate(cur: Datum, mutator: &str, val: &Datum) -> Result<Datum, String> {
    if matches!(mutator, "+=" | "-=") {
        let (Some(a), Some(b)) = (
            cur.as_scalar().and_then(Atom::as_i64),
            val.as_scalar().and_then(Atom::as_i64),
        ) else {
            return Err("arithmetic mutation on a non-integer".into());
        };
        let r = if mutator == "+=" {
            a.wrapping_add(b)
        } else {
            a.wrapping_sub(b)
        };
        return Ok(Datum::scalar(Atom::Integer(r)));
    }
    match (cur.into_kind(), mutator) {
        (DatumKind::Set(mut items), "insert") => {
            for a in val.atoms() {
                if !items.contains(a) {
                    items.push(a.clone());
                }
            }
            Ok(Datum::set(items))
        }
        (DatumKind::Set(items), "delete") if items.is_empty() && !val.pairs().is_empty() => {
            Ok(Datum::empty_map())
        }
        (DatumKind::Set(items), "delete") => Ok(Datum::set(
            items
                .into_iter()
                .filter(|a| !val.atoms().contains(a))
                .collect(),
        )),
        (DatumKind::Map(mut pairs), "insert") => {
            for (k, v) in val.pairs() {
                if !pairs.iter().any(|(pk, _)| pk == k) {
                    pairs.push((k.clone(), v.clone()));
                }
            }
            Ok(Datum::map(pairs))
        }
        (DatumKind::Map(pairs), "delete") => Ok(Datum::map(
            pairs
                .into_iter()
                .filter(|(k, v)| {
                    !val.atoms().contains(k)
                        && !val.pairs().iter().any(|(dk, dv)| dk == k && dv == v)
                })
                .collect(),
        )),
        (_, m) => Err(format!("unsupported mutator {m:?}")),
    }
}

/// Removes references to deleted rows (as weak references would).
fn drop_references(tables: &mut Tables, gone: &HashSet<Uuid>) {
    if gone.is_empty() {
        return;
    }
    let is_gone = |a: &Atom| a.as_uuid().is_some_and(|u| gone.contains(&u));
    for t in tables.values_mut() {
        for row in t.values_mut() {
            for d in row.columns.values_mut() {
                *d = match std::mem::replace(d, Datum::empty_set()).into_kind() {
                    DatumKind::Set(mut items) => {
                        items.retain(|a| !is_gone(a));
                        Datum::set(items)
                    }
                    DatumKind::Map(mut pairs) => {
                        pairs.retain(|(k, v)| !is_gone(k) && !is_gone(v));
                        Datum::map(pairs)
                    }
                };
            }
        }
    }
}

/// Deletes rows of non-root tables that no row references, until none is left.
fn collect_garbage(tables: &mut Tables, roots: &HashSet<String>) {
    loop {
        let mut referenced = HashSet::new();
        for t in tables.values() {
            for row in t.values() {
                for d in row.columns.values() {
                    match d.kind() {
                        DatumKind::Set(items) => {
                            referenced.extend(items.iter().filter_map(Atom::as_uuid))
                        }
                        DatumKind::Map(pairs) => referenced.extend(
                            pairs
                                .iter()
                                .flat_map(|(k, v)| [k.as_uuid(), v.as_uuid()])
                                .flatten(),
                        ),
                    }
                }
            }
        }
        let mut gone = HashSet::new();
        for (name, t) in tables.iter_mut() {
            if roots.contains(name) {
                continue;
            }
            t.retain(|u, _| {
                let keep = referenced.contains(u);
                if !keep {
                    gone.insert(*u);
                }
                keep
            });
        }
        if gone.is_empty() {
            return;
        }
        drop_references(tables, &gone);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn db() -> FixtureDb {
        FixtureDb::from_wire(&json!({"OVN_Northbound": {
            "Logical_Switch": {"11111111-1111-4111-8111-111111111111": {
                "name": "sw", "ports": ["set", [["uuid", "22222222-2222-4222-8222-222222222222"]]]}},
            "Logical_Switch_Port": {"22222222-2222-4222-8222-222222222222": {"name": "p1", "up": true}}
        }}))
        .unwrap()
        .with_schema(&json!({"name": "OVN_Northbound", "tables": {
            "Logical_Switch": {"isRoot": true}, "Logical_Switch_Port": {"isRoot": false}}}))
    }

    fn lsp_names(d: &FixtureDb) -> Vec<String> {
        let mut v: Vec<String> = d.dbs[NB_DB]["Logical_Switch_Port"]
            .values()
            .filter_map(|r| r.str("name").map(str::to_string))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn insert_with_named_uuid_and_mutate_links_the_new_row() {
        let mut d = db();
        d.apply(NB_DB, &[
            json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "n", "row": {"name": "p2"}}),
            json!({"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw"]],
                   "mutations": [["ports", "insert", ["set", [["named-uuid", "n"]]]]]}),
        ])
        .unwrap();
        assert_eq!(lsp_names(&d), ["p1", "p2"]);
        let sw = d.dbs[NB_DB]["Logical_Switch"].values().next().unwrap();
        assert_eq!(sw.uuids("ports").count(), 2);
    }

    #[test]
    fn removing_the_last_reference_garbage_collects_a_non_root_row() {
        let mut d = db();
        d.apply(NB_DB, &[json!({"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "sw"]],
            "mutations": [["ports", "delete", ["set", [["uuid", "22222222-2222-4222-8222-222222222222"]]]]]})])
            .unwrap();
        assert!(lsp_names(&d).is_empty());
    }

    #[test]
    fn deleting_a_switch_drops_its_ports() {
        let mut d = db();
        d.apply(
            NB_DB,
            &[json!({"op": "delete", "table": "Logical_Switch", "where": [["name", "==", "sw"]]})],
        )
        .unwrap();
        assert!(d.dbs[NB_DB]["Logical_Switch"].is_empty());
        assert!(lsp_names(&d).is_empty());
    }

    #[test]
    fn update_replaces_only_the_given_columns() {
        let mut d = db();
        d.apply(
            NB_DB,
            &[json!({"op": "update", "table": "Logical_Switch_Port",
            "where": [["name", "==", "p1"]], "row": {"up": ["set", [false]]}})],
        )
        .unwrap();
        let p = d.dbs[NB_DB]["Logical_Switch_Port"].values().next().unwrap();
        assert_eq!(p.bool("up"), Some(false));
        assert_eq!(p.str("name"), Some("p1"));
    }

    #[test]
    fn unknown_named_uuid_is_an_error_and_changes_nothing() {
        let mut d = db();
        let err = d.apply(
            NB_DB,
            &[
                json!({"op": "mutate", "table": "Logical_Switch", "where": [],
            "mutations": [["ports", "insert", ["set", [["named-uuid", "nope"]]]]]}),
            ],
        );
        assert!(err.is_err());
        assert_eq!(lsp_names(&d), ["p1"]);
    }

    #[test]
    fn a_bad_rows_error_says_its_column_once_with_its_chain() {
        let e = FixtureDb::from_wire(&json!({"OVN_Northbound": {"Logical_Switch_Port": {
            "22222222-2222-4222-8222-222222222222": {"tag": ["bogus", 1]}}}}))
        .unwrap_err();
        // What `{:#}` of an anyhow error prints: the message, then each source's.
        let mut chain = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            chain.push_str(&format!(": {s}"));
            source = s.source();
        }
        assert_eq!(chain.matches("column tag").count(), 1, "{chain}");
        assert!(
            chain.contains("22222222-2222-4222-8222-222222222222"),
            "{chain}"
        );
    }
}
