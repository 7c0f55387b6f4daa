//! The cache's data: point-in-time snapshots of the monitored tables, and
//! the row changes that applying an update batch produces.
//!
//! A [`DbSnapshot`] is a point-in-time view of every monitored table. Tables are
//! persistent B-trees ([`imbl::OrdMap`]) of `Arc<Row>`, so cloning a
//! snapshot costs a handful of reference counts, and applying a batch of one
//! row to a 100k-row table copies a few tree nodes, not the table. A B-tree,
//! not imbl's hash trie: with random UUIDs the trie's sparse 32-slot nodes
//! cost ~180 bytes per row, the B-tree's dense nodes ~31. Readers
//! keep whatever snapshot they took for as long as they like; the writer
//! builds the next one beside it and swaps it in whole.
//!
//! An update batch is applied to a copy and only published whole, so a
//! message that fails never leaves the cache half-applied: the caller drops
//! the connection and resynchronises instead. The client applies batches
//! with their bad rows left out ([`DbSnapshot::apply_skipping_bad_rows`]):
//! one malformed row costs that row, not the database's sync.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::datum::{Columns, Datum, Row, Uuid};
use crate::error::{DataError, Result};
use crate::schema::{DatabaseSchema, TableSchema};
use crate::wire::{RowFault, RowOp, RowUpdate, TableUpdates};

/// One table's rows by UUID (persistent map: clones share structure;
/// iteration is in UUID order).
pub type DbTable = imbl::OrdMap<Uuid, Arc<Row>>;

/// What happened to a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// A row that was not in the cache.
    Insert,
    /// A row whose columns changed.
    Update,
    /// A row that left the cache.
    Delete,
}

/// One row change, as the event filters see it.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// The table the row belongs to.
    pub table: Arc<str>,
    /// The row's UUID.
    pub uuid: Uuid,
    /// What happened.
    pub kind: ChangeKind,
    /// The row after the change (`None` for a delete).
    pub new: Option<Arc<Row>>,
    /// Insert: `None`. Update: the previous values of the columns that
    /// changed only (a column that was absent, i.e. default, is present here
    /// with its default value). Delete: the whole deleted row.
    pub old: Option<Arc<Row>>,
}

/// An immutable, consistent view of a database's monitored tables.
#[derive(Clone, Debug)]
pub struct DbSnapshot {
    schema: Arc<DatabaseSchema>,
    tables: BTreeMap<Arc<str>, DbTable>,
}

static EMPTY: std::sync::OnceLock<DbTable> = std::sync::OnceLock::new();

impl DbSnapshot {
    /// An empty snapshot of `schema`, with (empty) tables `monitored`.
    pub fn empty<'a>(
        schema: Arc<DatabaseSchema>,
        monitored: impl IntoIterator<Item = &'a str>,
    ) -> DbSnapshot {
        let tables = monitored
            .into_iter()
            .map(|t| (Arc::from(t), DbTable::new()))
            .collect();
        DbSnapshot { schema, tables }
    }

    /// The schema the rows were decoded with.
    pub fn schema(&self) -> &Arc<DatabaseSchema> {
        &self.schema
    }

    /// The rows of `table` (empty if the table is not monitored).
    pub fn table(&self, table: &str) -> &DbTable {
        self.tables
            .get(table)
            .unwrap_or_else(|| EMPTY.get_or_init(DbTable::new))
    }

    /// One row by table and UUID.
    pub fn get(&self, table: &str, uuid: Uuid) -> Option<&Arc<Row>> {
        self.tables.get(table)?.get(&uuid)
    }

    /// Names of the tables this snapshot holds.
    pub fn tables(&self) -> impl Iterator<Item = &str> {
        self.tables.keys().map(|k| &**k)
    }

    /// Follows the references in `row`'s `column` of `table` to the rows
    /// they name in the column's `refTable` (keys of a map, or set
    /// elements). Dangling references (e.g. to an unmonitored table) are
    /// skipped.
    pub fn resolve(&self, table: &str, row: &Row, column: &str) -> Vec<(Uuid, Arc<Row>)> {
        let Some(ty) = self
            .schema
            .table(table)
            .and_then(|t| t.column(column))
            .map(|c| &c.ty)
        else {
            return Vec::new();
        };
        let Some(ref_table) = ty
            .key
            .ref_table
            .as_deref()
            .or(ty.value.as_ref().and_then(|v| v.ref_table.as_deref()))
        else {
            return Vec::new();
        };
        let uuids: Vec<Uuid> = match row.get(column) {
            Some(Datum::Set(atoms)) => atoms.iter().filter_map(|a| a.as_uuid()).collect(),
            Some(Datum::Map(pairs)) => pairs
                .iter()
                .flat_map(|(k, v)| [k.as_uuid(), v.as_uuid()])
                .flatten()
                .collect(),
            None => Vec::new(),
        };
        uuids
            .into_iter()
            .filter_map(|u| Some((u, self.get(ref_table, u)?.clone())))
            .collect()
    }

    /// Applies one update batch (a monitor reply, `update2` or `update3`) to
    /// a copy of this snapshot. Returns the new snapshot and the changes, or
    /// an error naming the table and row, in which case nothing was applied.
    pub fn apply(&self, updates: TableUpdates) -> Result<(DbSnapshot, Vec<Change>)> {
        let applied = self.apply_rows(updates, Faults::Fail)?;
        Ok((applied.snapshot, applied.changes))
    }

    /// As [`DbSnapshot::apply`], but a row that is malformed or does not fit
    /// the schema (an unknown column, a value of the wrong type), and a
    /// table the schema lacks, are left out into [`Applied::skipped`]
    /// while the rest applies. A row left out keeps the version this
    /// snapshot has of it, if any (a bad modify changes nothing). Only a
    /// batch that contradicts the cache (a modify or delete of a row it does
    /// not have) fails: the cache is out of step and must resync.
    pub fn apply_skipping_bad_rows(&self, updates: TableUpdates) -> Result<Applied> {
        self.apply_rows(updates, Faults::Skip)
    }

    fn apply_rows(&self, updates: TableUpdates, faults: Faults) -> Result<Applied> {
        let mut next = self.clone();
        let mut changes = Vec::with_capacity(updates.row_count());
        let mut skipped = Vec::new();
        // Borrowed through its own Arc, not cloned per table update: the
        // copy (every column's schema) was a visible part of a one-row
        // update's cost.
        let schema = Arc::clone(&next.schema);
        for tu in updates.0 {
            if let Some(f) = tu.skipped.first() {
                if faults == Faults::Fail {
                    return Err(DataError::BadRow {
                        table: f.table.clone(),
                        uuid: f.uuid.map_or_else(|| "?".into(), |u| u.to_string()),
                        reason: f.reason.clone(),
                    });
                }
            }
            skipped.extend(tu.skipped);
            let Some(ts) = schema.table(&tu.table) else {
                if faults == Faults::Fail {
                    return Err(DataError::UnknownTable(tu.table));
                }
                skipped.push(RowFault {
                    reason: format!("table not in the schema ({} row updates)", tu.rows.len()),
                    table: tu.table,
                    uuid: None,
                });
                continue;
            };
            let name: Arc<str> = match next.tables.get_key_value(tu.table.as_str()) {
                Some((k, _)) => k.clone(),
                None => Arc::from(tu.table.as_str()),
            };
            let table = next.tables.entry(name.clone()).or_default();
            for ru in tu.rows {
                let uuid = ru.uuid;
                match apply_row(ts, &name, table, ru) {
                    Ok(Some(c)) => changes.push(c),
                    Ok(None) => {}
                    Err(DataError::BadRow { reason, .. }) if faults == Faults::Skip => skipped
                        .push(RowFault {
                            table: tu.table.clone(),
                            uuid: Some(uuid),
                            reason,
                        }),
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(Applied {
            snapshot: next,
            changes,
            skipped,
        })
    }

    /// Builds the snapshot a full initial dump describes (every row is
    /// `initial`), replacing this one's rows, and returns the changes that
    /// turn this snapshot into it: used after a reconnect without a
    /// transaction-history resume.
    /// `empty` is the (empty) snapshot to build on: it carries the schema,
    /// which may be newer than this snapshot's after a server upgrade.
    pub fn replace(
        &self,
        empty: DbSnapshot,
        dump: TableUpdates,
    ) -> Result<(DbSnapshot, Vec<Change>)> {
        let (next, _) = empty.apply(dump)?;
        Ok(self.changes_to(next))
    }

    /// As [`DbSnapshot::replace`], with bad rows left out as
    /// [`DbSnapshot::apply_skipping_bad_rows`] leaves them: a row of the
    /// dump left out keeps the version this snapshot has (it is not
    /// reported deleted because the server now sends it malformed).
    pub fn replace_skipping_bad_rows(
        &self,
        empty: DbSnapshot,
        dump: TableUpdates,
    ) -> Result<Applied> {
        let Applied {
            snapshot: mut next,
            skipped,
            ..
        } = empty.apply_skipping_bad_rows(dump)?;
        for fault in &skipped {
            let Some(uuid) = fault.uuid else { continue };
            let Some((name, old)) = self
                .tables
                .get_key_value(fault.table.as_str())
                .and_then(|(name, rows)| Some((name, rows.get(&uuid)?)))
            else {
                continue;
            };
            if let Some(rows) = next.tables.get_mut(name) {
                rows.insert(uuid, old.clone());
            }
        }
        let (snapshot, changes) = self.changes_to(next);
        Ok(Applied {
            snapshot,
            changes,
            skipped,
        })
    }

    /// `next` and the changes that turn this snapshot into it.
    fn changes_to(&self, next: DbSnapshot) -> (DbSnapshot, Vec<Change>) {
        let mut changes = Vec::new();
        for (name, old_rows) in &self.tables {
            let new_rows = next.table(name);
            for (uuid, old) in old_rows {
                match new_rows.get(uuid) {
                    None => changes.push(Change {
                        table: name.clone(),
                        uuid: *uuid,
                        kind: ChangeKind::Delete,
                        new: None,
                        old: Some(old.clone()),
                    }),
                    Some(new) if new != old => {
                        let ts = next.schema.table(name);
                        changes.push(Change {
                            table: name.clone(),
                            uuid: *uuid,
                            kind: ChangeKind::Update,
                            new: Some(new.clone()),
                            old: Some(Arc::new(changed_columns(ts, old, new))),
                        })
                    }
                    Some(_) => {}
                }
            }
        }
        for (name, new_rows) in &next.tables {
            let old_rows = self.table(name);
            for (uuid, new) in new_rows {
                if !old_rows.contains_key(uuid) {
                    changes.push(Change {
                        table: name.clone(),
                        uuid: *uuid,
                        kind: ChangeKind::Insert,
                        new: Some(new.clone()),
                        old: None,
                    });
                }
            }
        }
        (next, changes)
    }
}

/// What [`DbSnapshot::apply_skipping_bad_rows`] did.
#[derive(Debug)]
pub struct Applied {
    /// The snapshot with the good rows applied.
    pub snapshot: DbSnapshot,
    /// Their changes.
    pub changes: Vec<Change>,
    /// The row updates left out, and why.
    pub skipped: Vec<RowFault>,
}

/// Whether a bad row fails the whole batch or is left out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Faults {
    Fail,
    Skip,
}

/// The previous values of every column that differs between `old` and `new`.
fn changed_columns(ts: Option<&TableSchema>, old: &Row, new: &Row) -> Row {
    let mut out = Row::default();
    let names = old.columns.keys().chain(new.columns.keys());
    for name in names {
        if old.columns.get(name) != new.columns.get(name) {
            let prev = old.columns.get(name).cloned().or_else(|| {
                ts.and_then(|t| t.column(name))
                    .map(|c| c.ty.default_datum())
            });
            if let Some(prev) = prev {
                out.columns.insert(name.clone(), prev);
            }
        }
    }
    out
}

fn apply_row(
    ts: &TableSchema,
    name: &Arc<str>,
    table: &mut DbTable,
    ru: RowUpdate,
) -> Result<Option<Change>> {
    let bad = |reason: String| DataError::BadRow {
        table: ts.name.clone(),
        uuid: ru.uuid.to_string(),
        reason,
    };
    let missing = |op: &'static str| DataError::MissingRow {
        table: ts.name.clone(),
        uuid: ru.uuid.to_string(),
        op,
    };
    match ru.op {
        RowOp::Initial | RowOp::Insert => {
            let mut columns = Vec::with_capacity(ru.columns.len());
            for (col, datum) in ru.columns {
                // Implicit columns: the key is the row's UUID already, and
                // `_version` changes on every write without meaning anything.
                if col == "_uuid" || col == "_version" {
                    continue;
                }
                let cs = ts
                    .column(&col)
                    .ok_or_else(|| bad(format!("unknown column {col:?}")))?;
                let d = cs
                    .ty
                    .check(datum, false)
                    .map_err(|e| bad(format!("column {col}: {e}")))?;
                if !cs.ty.is_default(&d) {
                    columns.push((col, d));
                }
            }
            let new = Arc::new(Row {
                columns: Columns::from_pairs(columns),
            });
            let old = table.insert(ru.uuid, new.clone());
            Ok(Some(match old {
                None => Change {
                    table: name.clone(),
                    uuid: ru.uuid,
                    kind: ChangeKind::Insert,
                    new: Some(new),
                    old: None,
                },
                // The server re-sent a row we have (e.g. a resumed monitor).
                Some(old) if old == new => return Ok(None),
                Some(old) => Change {
                    table: name.clone(),
                    uuid: ru.uuid,
                    kind: ChangeKind::Update,
                    old: Some(Arc::new(changed_columns(Some(ts), &old, &new))),
                    new: Some(new),
                },
            }))
        }
        RowOp::Modify => {
            let old = table
                .get(&ru.uuid)
                .cloned()
                .ok_or_else(|| missing("modify"))?;
            let mut row = (*old).clone();
            let mut previous = Row::default();
            for (col, diff) in ru.columns {
                if col == "_uuid" || col == "_version" {
                    continue;
                }
                let cs = ts
                    .column(&col)
                    .ok_or_else(|| bad(format!("unknown column {col:?}")))?;
                let diff = cs
                    .ty
                    .check(diff, true)
                    .map_err(|e| bad(format!("column {col}: {e}")))?;
                let new = cs
                    .ty
                    .apply_diff(old.columns.get(&col), diff)
                    .map_err(|e| bad(format!("column {col}: {e}")))?;
                let before = old
                    .columns
                    .get(&col)
                    .cloned()
                    .unwrap_or_else(|| cs.ty.default_datum());
                // The server only sends columns that changed, but with a
                // key projection a change of dropped keys arrives as an
                // empty map diff: nothing changed for this cache.
                if before == new {
                    continue;
                }
                previous.columns.insert(col.clone(), before);
                if cs.ty.is_default(&new) {
                    row.columns.remove(&col);
                } else {
                    row.columns.insert(col, new);
                }
            }
            if previous.columns.is_empty() {
                return Ok(None);
            }
            row.columns.shrink_to_fit();
            let new = Arc::new(row);
            table.insert(ru.uuid, new.clone());
            Ok(Some(Change {
                table: name.clone(),
                uuid: ru.uuid,
                kind: ChangeKind::Update,
                new: Some(new),
                old: Some(Arc::new(previous)),
            }))
        }
        RowOp::Delete => {
            let old = table.remove(&ru.uuid).ok_or_else(|| missing("delete"))?;
            Ok(Some(Change {
                table: name.clone(),
                uuid: ru.uuid,
                kind: ChangeKind::Delete,
                new: None,
                old: Some(old),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
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
        let projection = crate::wire::KeyProjection::default().keep(
            "Logical_Switch_Port",
            "external_ids",
            ["a"],
        );
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
}
