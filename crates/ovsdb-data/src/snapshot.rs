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

use crate::datum::{Columns, Datum, DatumKind, Row, Uuid};
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
        let uuids: Vec<Uuid> = match row.get(column).map(Datum::kind) {
            Some(DatumKind::Set(atoms)) => atoms.iter().filter_map(|a| a.as_uuid()).collect(),
            Some(DatumKind::Map(pairs)) => pairs
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
    /// table the schema lacks, are left out into [`AppliedUpdate::skipped`]
    /// while the rest applies. A row left out keeps the version this
    /// snapshot has of it, if any (a bad modify changes nothing). Only a
    /// batch that contradicts the cache (a modify or delete of a row it does
    /// not have) fails: the cache is out of step and must resync.
    pub fn apply_skipping_bad_rows(&self, updates: TableUpdates) -> Result<AppliedUpdate> {
        self.apply_rows(updates, Faults::Skip)
    }

    fn apply_rows(&self, updates: TableUpdates, faults: Faults) -> Result<AppliedUpdate> {
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
        Ok(AppliedUpdate {
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
    ) -> Result<AppliedUpdate> {
        let AppliedUpdate {
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
        Ok(AppliedUpdate {
            snapshot,
            changes,
            skipped,
        })
    }

    /// `next`, built on this snapshot's rows where they are equal, and the
    /// changes that turn this snapshot into it: how a client publishes a
    /// cache it resumed from a file over the (empty) one readers hold.
    pub fn replaced_by(&self, next: DbSnapshot) -> (DbSnapshot, Vec<Change>) {
        self.changes_to(next)
    }

    /// The changes that turn this snapshot into `next`, and `next` built
    /// on this snapshot's rows: a row the dump left as it was keeps this
    /// snapshot's `Arc` (and its table the persistent map's nodes). After a
    /// resync, whatever still holds rows of the old snapshot (a reader's
    /// snapshot, a change not yet consumed, a derived index) then shares
    /// them with the cache instead of holding a second copy of the database
    /// (measured: +62 MiB of live heap per NB restart at 50k ports).
    fn changes_to(&self, mut next: DbSnapshot) -> (DbSnapshot, Vec<Change>) {
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
        let mut merged = Vec::new();
        for (name, new_rows) in &next.tables {
            let old_rows = self.table(name);
            let mut rows = old_rows.clone();
            for (uuid, new) in new_rows {
                match old_rows.get(uuid) {
                    None => {
                        rows.insert(*uuid, new.clone());
                        changes.push(Change {
                            table: name.clone(),
                            uuid: *uuid,
                            kind: ChangeKind::Insert,
                            new: Some(new.clone()),
                            old: None,
                        });
                    }
                    Some(old) if old != new => {
                        rows.insert(*uuid, new.clone());
                    }
                    Some(_) => {}
                }
            }
            for uuid in old_rows.keys() {
                if !new_rows.contains_key(uuid) {
                    rows.remove(uuid);
                }
            }
            merged.push((name.clone(), rows));
        }
        next.tables.extend(merged);
        (next, changes)
    }
}

/// What [`DbSnapshot::apply_skipping_bad_rows`] did.
#[derive(Debug)]
pub struct AppliedUpdate {
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

/// One row update on one table: the change it makes, `None` when the row
/// is as it was, an error for a row the schema refuses or an update of a
/// row the table lacks. Long (about 125 lines) on purpose: one arm per
/// operation (initial or insert, modify, delete), sharing the two error
/// builders above them.
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
mod tests;
