//! Applies planned operations to observed rows in memory, as ovsdb-server
//! would (named uuids, strong-reference garbage collection, weak
//! references cleared): the stand-in the planner's tests converge on, and a
//! preview for `plan`.

use std::collections::{BTreeMap, HashMap, HashSet};

use obgp_ovsdb_data::{Atom, Columns, Datum, DatumKind, Row, Str, Uuid};

use crate::plan::{NbOp, Observed, Target};
use crate::rows::{NbTable, OWNER_KEY, OWNER_VALUE};

/// The weak references the agent's tables hold: (table, column).
const WEAK: &[(NbTable, &str)] = &[(NbTable::LogicalRouterStaticRoute, "bfd")];

fn set_column(row: &mut Row, column: &str, d: Datum) {
    row.columns.insert(Str::from(column), d);
}

/// `datum` with named uuids replaced by the rows they name.
fn resolve(d: Datum, names: &HashMap<String, Uuid>) -> Datum {
    let fix = |a: Atom| match a {
        Atom::NamedUuid(n) => names
            .get(n.as_str())
            .map_or(Atom::NamedUuid(n), |u| Atom::Uuid(*u)),
        other => other,
    };
    match d.into_kind() {
        DatumKind::Set(atoms) => Datum::set(atoms.into_iter().map(fix).collect()),
        DatumKind::Map(pairs) => {
            Datum::map(pairs.into_iter().map(|(k, v)| (fix(k), fix(v))).collect())
        }
    }
}

fn target_uuid(t: &Target, names: &HashMap<String, Uuid>) -> Option<Uuid> {
    match t {
        Target::Existing(u) => Some(*u),
        Target::Named(n) => names.get(n).copied(),
    }
}

/// An operation the in-memory application could not apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{op}: {reason}")]
pub struct ApplyError {
    /// The operation, as `plan` prints it.
    pub op: String,
    pub reason: String,
}

fn fail(op: &NbOp, reason: impl Into<String>) -> ApplyError {
    ApplyError {
        op: op.to_string(),
        reason: reason.into(),
    }
}

/// Applies `ops` to `db` (one transaction). New rows get fresh uuids above
/// every uuid already present. Errors name the operation that could not
/// be applied (a row gone, a column that does not decode).
pub fn apply_in_memory(db: &mut Observed, ops: &[NbOp]) -> Result<(), ApplyError> {
    let mut next = db
        .values()
        .flat_map(|t| t.keys())
        .map(|u| u.0)
        .max()
        .unwrap_or(0x1000)
        + 1;
    let mut names: HashMap<String, Uuid> = HashMap::new();
    for op in ops {
        match op {
            NbOp::Insert { key, name, columns } => {
                let uuid = Uuid(next);
                next += 1;
                names.insert(name.clone(), uuid);
                let mut row = Row {
                    columns: Columns::new(),
                };
                for (c, _, j) in columns {
                    let d = Datum::from_wire(j).map_err(|e| fail(op, format!("{c}: {e}")))?;
                    set_column(&mut row, c, resolve(d, &names));
                }
                if key.table.has_external_ids() {
                    let owner = Datum::map(vec![(
                        Atom::String(OWNER_KEY.into()),
                        Atom::String(OWNER_VALUE.into()),
                    )]);
                    set_column(&mut row, "external_ids", owner);
                }
                db.entry(key.table.name().to_string())
                    .or_default()
                    .insert(uuid, row);
            }
            NbOp::Update { key, uuid, columns } => {
                let row = row_mut(db, key.table, *uuid, op)?;
                for (c, _, j) in columns {
                    let d = Datum::from_wire(j).map_err(|e| fail(op, format!("{c}: {e}")))?;
                    set_column(row, c, resolve(d, &names));
                }
            }
            NbOp::AddChildren {
                parent,
                uuid,
                column,
                children,
            } => {
                let add: Vec<Uuid> = children
                    .iter()
                    .filter_map(|(_, t)| target_uuid(t, &names))
                    .collect();
                let row = row_mut(db, parent.table, *uuid, op)?;
                let mut have: Vec<Atom> = row
                    .get(column)
                    .map(|d| d.atoms().to_vec())
                    .unwrap_or_default();
                for u in add {
                    if !have.contains(&Atom::Uuid(u)) {
                        have.push(Atom::Uuid(u));
                    }
                }
                set_column(row, column, Datum::set(have));
            }
            NbOp::RemoveChildren {
                parent,
                uuid,
                column,
                children,
            } => {
                let gone: HashSet<Uuid> = children.iter().map(|(_, u)| *u).collect();
                let row = row_mut(db, parent.table, *uuid, op)?;
                let have: Vec<Atom> = row
                    .get(column)
                    .map(|d| d.atoms().to_vec())
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|a| !a.as_uuid().is_some_and(|u| gone.contains(&u)))
                    .collect();
                set_column(row, column, Datum::set(have));
            }
            NbOp::MarkOwned { key, uuid } => {
                let row = row_mut(db, key.table, *uuid, op)?;
                let mut pairs: Vec<(Atom, Atom)> = row
                    .get("external_ids")
                    .map(|d| d.pairs().to_vec())
                    .unwrap_or_default();
                if !pairs.iter().any(|(k, _)| k.as_str() == Some(OWNER_KEY)) {
                    pairs.push((
                        Atom::String(OWNER_KEY.into()),
                        Atom::String(OWNER_VALUE.into()),
                    ));
                }
                set_column(row, "external_ids", Datum::map(pairs));
            }
            NbOp::Delete { key, uuid } => {
                db.get_mut(key.table.name())
                    .and_then(|t| t.remove(uuid))
                    .ok_or_else(|| fail(op, "no such row"))?;
            }
        }
    }
    collect_garbage(db);
    Ok(())
}

fn row_mut<'a>(
    db: &'a mut Observed,
    t: NbTable,
    u: Uuid,
    op: &NbOp,
) -> Result<&'a mut Row, ApplyError> {
    db.get_mut(t.name())
        .and_then(|rows| rows.get_mut(&u))
        .ok_or_else(|| fail(op, "no such row"))
}

/// Removes non-root rows no parent references (repeatedly: a port's
/// gateway chassis go with the port) and clears weak references to rows
/// that are gone.
fn collect_garbage(db: &mut Observed) {
    loop {
        let mut referenced: HashSet<Uuid> = HashSet::new();
        for t in NbTable::ALL {
            let Some((pt, col)) = t.parent() else {
                continue;
            };
            for row in db.get(pt.name()).into_iter().flat_map(BTreeMap::values) {
                referenced.extend(row.uuids(col));
            }
        }
        let mut removed = false;
        for t in NbTable::ALL.into_iter().filter(|t| !t.is_root()) {
            if let Some(rows) = db.get_mut(t.name()) {
                let before = rows.len();
                rows.retain(|u, _| referenced.contains(u));
                removed |= rows.len() != before;
            }
        }
        if !removed {
            break;
        }
    }
    let present: HashSet<Uuid> = db.values().flat_map(|t| t.keys().copied()).collect();
    for (t, col) in WEAK {
        for row in db
            .get_mut(t.name())
            .into_iter()
            .flat_map(BTreeMap::values_mut)
        {
            if let Some(d) = row.columns.get_mut(col).filter(|d| !d.is_map()) {
                let kept = d
                    .atoms()
                    .iter()
                    .filter(|a| a.as_uuid().is_none_or(|u| present.contains(&u)));
                *d = Datum::set(kept.cloned().collect());
            }
        }
    }
}
