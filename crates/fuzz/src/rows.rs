//! Structure-aware edits of typed OVSDB rows: set a column to a value some
//! scenario has in that column (a name, a reference, an address list), to
//! a nonsense or made-up string, or to one of those with an atom changed;
//! drop a column, delete a row, copy a row under another uuid. Cheap
//! enough to apply through the live snapshot, as the agent's monitors do.

use std::collections::{BTreeMap, HashMap};

use arbitrary::{Result, Unstructured};
use obgp_ovn::Tables;
use obgp_ovsdb_data::{Atom, Datum, DatumKind, Row, Str, Uuid};

use crate::mutate::{self, Pools};

/// The databases, in the order edits index them.
pub const DBS: [&str; 3] = [obgp_ovn::NB_DB, obgp_ovn::SB_DB, obgp_ovn::OVS_DB];

/// Edited rows: (database index, table, uuid) to the row's new content
/// (`None`: deleted).
pub type Edits = BTreeMap<(usize, String, Uuid), Option<Row>>;

/// Every value each (table, column) holds in some scenario.
#[derive(Debug, Default)]
pub struct DatumPool {
    values: HashMap<(String, String), Vec<Datum>>,
    columns: HashMap<String, Vec<String>>,
}

impl DatumPool {
    /// The values of every row of `dbs`.
    pub fn harvest<'a>(dbs: impl IntoIterator<Item = &'a Tables>) -> DatumPool {
        let mut pool = DatumPool::default();
        for tables in dbs {
            for (table, rows) in tables {
                for row in rows.values() {
                    for (column, datum) in row.columns.iter() {
                        let values = pool
                            .values
                            .entry((table.clone(), column.to_string()))
                            .or_default();
                        if !values.contains(datum) {
                            values.push(datum.clone());
                        }
                        let columns = pool.columns.entry(table.clone()).or_default();
                        if !columns.iter().any(|c| c == column.as_str()) {
                            columns.push(column.to_string());
                        }
                    }
                }
            }
        }
        pool
    }
}

/// A uuid of `table` in `tables` (or a fresh one from a small pool).
fn pick_uuid(u: &mut Unstructured, rows: Option<&HashMap<Uuid, Row>>) -> Result<Uuid> {
    match rows {
        Some(rows) if !rows.is_empty() && u.ratio(7, 8)? => {
            let i = u.choose_index(rows.len())?;
            Ok(rows.keys().nth(i).copied().unwrap_or(Uuid(0)))
        }
        _ => Ok(Uuid(
            0xf022_0000_0000_4000_8000_0000_0000_0000 | u128::from(u.int_in_range(0u8..=7)?),
        )),
    }
}

fn atom(u: &mut Unstructured, strings: &Pools) -> Result<Atom> {
    Ok(match u.int_in_range(0..=5)? {
        0 => Atom::Integer(u.arbitrary()?),
        1 => Atom::Boolean(u.arbitrary()?),
        _ => Atom::String(Str::from(mutate::string(u, strings)?)),
    })
}

/// A value for `table.column`.
fn datum(
    u: &mut Unstructured,
    pool: &DatumPool,
    strings: &Pools,
    table: &str,
    column: &str,
) -> Result<Datum> {
    let known = pool
        .values
        .get(&(table.to_string(), column.to_string()))
        .filter(|v| !v.is_empty());
    Ok(match (u.int_in_range(0..=6)?, known) {
        (0..=2, Some(values)) => u.choose(values)?.clone(),
        (3 | 4, Some(values)) => {
            // A known value with one atom changed.
            match u.choose(values)?.clone().into_kind() {
                DatumKind::Set(mut atoms) => {
                    if atoms.is_empty() {
                        atoms.push(atom(u, strings)?);
                    } else {
                        let i = u.choose_index(atoms.len())?;
                        atoms[i] = atom(u, strings)?;
                    }
                    Datum::set(atoms)
                }
                DatumKind::Map(mut pairs) => {
                    if pairs.is_empty() {
                        pairs.push((atom(u, strings)?, atom(u, strings)?));
                    } else {
                        let i = u.choose_index(pairs.len())?;
                        pairs[i].1 = atom(u, strings)?;
                    }
                    Datum::map(pairs)
                }
            }
        }
        (5, _) => Datum::empty_set(),
        _ => Datum::scalar(atom(u, strings)?),
    })
}

/// One edit of the rows of `base` (plus `edits` so far), added to `edits`.
pub fn edit(
    u: &mut Unstructured,
    base: &[&Tables; 3],
    edits: &mut Edits,
    pool: &DatumPool,
    strings: &Pools,
) -> Result<()> {
    let db = match u.int_in_range(0..=9)? {
        0..=4 => 0,
        5..=7 => 1,
        _ => 2,
    };
    let tables = base[db];
    if tables.is_empty() {
        return Ok(());
    }
    let t = u.choose_index(tables.len())?;
    let Some((table, rows)) = tables.iter().nth(t) else {
        return Ok(());
    };
    let uuid = pick_uuid(u, Some(rows))?;
    let key = (db, table.clone(), uuid);
    let current = match edits.get(&key) {
        Some(row) => row.clone(),
        None => rows.get(&uuid).cloned(),
    };
    let mut row = current.unwrap_or_default();
    let columns = pool.columns.get(table).map(Vec::as_slice).unwrap_or(&[]);
    match u.int_in_range(0..=7)? {
        0..=4 if !columns.is_empty() => {
            let column = u.choose(columns)?.clone();
            let value = datum(u, pool, strings, table, &column)?;
            row.columns.insert(column, value);
        }
        5 if !row.columns.is_empty() => {
            let i = u.choose_index(row.columns.len())?;
            let name = row.columns.keys().nth(i).cloned();
            if let Some(name) = name {
                row.columns.remove(&name);
            }
        }
        6 => {
            edits.insert(key, None);
            return Ok(());
        }
        _ if !rows.is_empty() => {
            // Another row's content under this uuid (a duplicate name, a
            // second port with the same addresses).
            let i = u.choose_index(rows.len())?;
            if let Some(other) = rows.values().nth(i) {
                row = other.clone();
            }
        }
        _ => {}
    }
    edits.insert(key, Some(row));
    Ok(())
}

/// `base` with `edits` applied, per database.
pub fn apply(base: &[&Tables; 3], edits: &Edits) -> [Tables; 3] {
    let mut out = [base[0].clone(), base[1].clone(), base[2].clone()];
    for ((db, table, uuid), row) in edits {
        let t = out[*db].entry(table.clone()).or_default();
        match row {
            Some(r) => t.insert(*uuid, r.clone()),
            None => t.remove(uuid),
        };
    }
    out
}
