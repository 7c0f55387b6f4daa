//! The pure planner of the node-local NB: desired rows against observed
//! rows, into the operations of one OVSDB transaction (create what is
//! missing, update only the columns that differ, delete the agent's rows
//! no longer desired, leave every other row alone).

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;

use obgp_ovsdb_data::{Datum, Row, Uuid};
use serde_json::{json, Value as Json};

use crate::rows::{LocalClusterRows, LocalRow, NbTable, RowKey, Value, OWNER_KEY, OWNER_VALUE};

/// The observed local NB: table name → uuid → row, as the ovsdb crate's
/// cache holds it. Tables the agent does not write are ignored.
pub type Observed = BTreeMap<String, BTreeMap<Uuid, Row>>;

/// The row an operation refers to: an existing one, or one inserted by an
/// earlier operation of the same transaction.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    Existing(Uuid),
    Named(String),
}

impl Target {
    fn wire(&self) -> Json {
        match self {
            Target::Existing(u) => json!(["uuid", u.to_string()]),
            Target::Named(n) => json!(["named-uuid", n]),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Existing(u) => write!(f, "{u}"),
            Target::Named(n) => write!(f, "new {n}"),
        }
    }
}

/// One operation on the local NB, with the keys it concerns (for people)
/// and the values the wire form needs (for `transact`).
#[derive(Clone, Debug, PartialEq)]
pub enum NbOp {
    /// A new row (non-root rows are attached by their parent's insert or
    /// by a [`NbOp::AddChildren`]).
    Insert {
        key: RowKey,
        name: String,
        columns: Vec<(&'static str, Value, Json)>,
    },
    /// The columns of an existing row that differ from the desired ones.
    Update {
        key: RowKey,
        uuid: Uuid,
        columns: Vec<(&'static str, Value, Json)>,
    },
    /// `mutate insert` of children into an existing parent's set.
    AddChildren {
        parent: RowKey,
        uuid: Uuid,
        column: &'static str,
        children: Vec<(RowKey, Target)>,
    },
    /// `mutate delete` of the agent's children no longer desired.
    RemoveChildren {
        parent: RowKey,
        uuid: Uuid,
        column: &'static str,
        children: Vec<(RowKey, Uuid)>,
    },
    /// Adds the owner mark to a desired row that exists unmarked (a row
    /// the Python agent created): the row is adopted, not recreated.
    MarkOwned { key: RowKey, uuid: Uuid },
    /// Deletes one of the agent's root rows no longer desired (its
    /// non-root children go with it).
    Delete { key: RowKey, uuid: Uuid },
}

fn where_uuid(u: Uuid) -> Json {
    json!([["_uuid", "==", ["uuid", u.to_string()]]])
}

impl NbOp {
    /// The operation in OVSDB wire notation (RFC 7047 § 5.2).
    pub fn wire(&self) -> Json {
        let row = |cols: &[(&'static str, Value, Json)]| {
            Json::Object(
                cols.iter()
                    .map(|(c, _, j)| (c.to_string(), j.clone()))
                    .collect(),
            )
        };
        match self {
            NbOp::Insert { key, name, columns } => {
                let mut r = row(columns);
                if key.table.has_external_ids() {
                    r["external_ids"] = json!(["map", [[OWNER_KEY, OWNER_VALUE]]]);
                }
                json!({"op": "insert", "table": key.table.name(), "uuid-name": name, "row": r})
            }
            NbOp::Update { key, uuid, columns } => json!({
                "op": "update", "table": key.table.name(), "where": where_uuid(*uuid),
                "row": row(columns)
            }),
            NbOp::AddChildren {
                parent,
                uuid,
                column,
                children,
            } => {
                let set: Vec<Json> = children.iter().map(|(_, t)| t.wire()).collect();
                json!({"op": "mutate", "table": parent.table.name(), "where": where_uuid(*uuid),
                       "mutations": [[column, "insert", ["set", set]]]})
            }
            NbOp::RemoveChildren {
                parent,
                uuid,
                column,
                children,
            } => {
                let set: Vec<Json> = children
                    .iter()
                    .map(|(_, u)| json!(["uuid", u.to_string()]))
                    .collect();
                json!({"op": "mutate", "table": parent.table.name(), "where": where_uuid(*uuid),
                       "mutations": [[column, "delete", ["set", set]]]})
            }
            NbOp::MarkOwned { key, uuid } => json!({
                "op": "mutate", "table": key.table.name(), "where": where_uuid(*uuid),
                "mutations": [["external_ids", "insert", ["map", [[OWNER_KEY, OWNER_VALUE]]]]]
            }),
            NbOp::Delete { key, uuid } => {
                json!({"op": "delete", "table": key.table.name(), "where": where_uuid(*uuid)})
            }
        }
    }
}

impl fmt::Display for NbOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cols = |cols: &[(&'static str, Value, Json)]| {
            cols.iter()
                .map(|(c, v, _)| format!("{c}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        match self {
            NbOp::Insert { key, name, columns } => {
                write!(f, "insert {key} as {name}: {}", cols(columns))
            }
            NbOp::Update { key, uuid, columns } => {
                write!(f, "update {key} ({uuid}): {}", cols(columns))
            }
            NbOp::AddChildren {
                parent,
                column,
                children,
                ..
            } => {
                let c: Vec<String> = children
                    .iter()
                    .map(|(k, t)| format!("<{k}> ({t})"))
                    .collect();
                write!(f, "mutate {parent}: {column} += {}", c.join(", "))
            }
            NbOp::RemoveChildren {
                parent,
                column,
                children,
                ..
            } => {
                let c: Vec<String> = children
                    .iter()
                    .map(|(k, u)| format!("<{k}> ({u})"))
                    .collect();
                write!(f, "mutate {parent}: {column} -= {}", c.join(", "))
            }
            NbOp::MarkOwned { key, uuid } => {
                write!(
                    f,
                    "adopt {key} ({uuid}): external_ids:{OWNER_KEY}={OWNER_VALUE}"
                )
            }
            NbOp::Delete { key, uuid } => write!(f, "delete {key} ({uuid})"),
        }
    }
}

/// The operations that make the local NB hold the desired rows, in
/// transaction order; empty when it already does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LocalClusterPlan {
    pub ops: Vec<NbOp>,
    /// Observed rows skipped (no usable key) or desired references that
    /// name no row, each naming the row.
    pub problems: Vec<String>,
}

impl LocalClusterPlan {
    /// Whether nothing is to be written.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The `transact` parameters: the database name, then the operations.
    pub fn transact_params(&self) -> Json {
        let mut params = vec![json!("OVN_Northbound")];
        params.extend(self.ops.iter().map(NbOp::wire));
        Json::Array(params)
    }
}

impl LocalClusterPlan {
    /// The plan as two transactions, for the order of announcements (O1):
    /// first everything that makes the desired rows exist and hold their
    /// values (inserts, updates, attachments, adoptions), run before the
    /// addresses are announced; then the removals (detachments and
    /// deletions), run after the withdrawals. Together they do what the
    /// single transaction does: no update writes a children column, so
    /// the first part never drops a child the second would detach.
    /// Problems stay with the first part.
    pub fn split_removals(self) -> (LocalClusterPlan, LocalClusterPlan) {
        let (removals, writes) = self
            .ops
            .into_iter()
            .partition(|op| matches!(op, NbOp::Delete { .. } | NbOp::RemoveChildren { .. }));
        (
            LocalClusterPlan {
                ops: writes,
                problems: self.problems,
            },
            LocalClusterPlan {
                ops: removals,
                problems: Vec::new(),
            },
        )
    }
}

impl fmt::Display for LocalClusterPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for op in &self.ops {
            writeln!(f, "{op}")?;
        }
        Ok(())
    }
}

/// An observed row the planner knows by key.
struct Seen<'a> {
    uuid: Uuid,
    row: &'a Row,
    owned: bool,
}

/// The observed rows of the agent's tables, by key, with their parents.
struct Index<'a> {
    /// The first row (by uuid) of each key.
    by_key: HashMap<RowKey, Seen<'a>>,
    /// Rows whose key another row already holds.
    duplicates: Vec<(RowKey, Seen<'a>)>,
    key_of: HashMap<Uuid, RowKey>,
    /// Child uuid → (parent uuid, parent key, column).
    parent: HashMap<Uuid, (Uuid, RowKey, &'static str)>,
}

fn key_values(table: NbTable, row: &Row) -> Option<Vec<String>> {
    table
        .key_columns()
        .iter()
        .map(|c| match c {
            &"priority" => row.int(c).map(|i| i.to_string()),
            _ => row.str(c).map(str::to_string),
        })
        .collect()
}

fn marked(row: &Row) -> bool {
    row.map_str("external_ids", OWNER_KEY) == Some(OWNER_VALUE)
}

impl<'a> Index<'a> {
    fn build(
        observed: &'a Observed,
        desired: &LocalClusterRows,
        problems: &mut Vec<String>,
    ) -> Self {
        let rows = |t: NbTable| observed.get(t.name()).into_iter().flatten();
        // Parents first: per-parent keys need the parent's name.
        let mut parent: HashMap<Uuid, (Uuid, RowKey, &'static str)> = HashMap::new();
        let mut parent_name: HashMap<Uuid, String> = HashMap::new();
        for t in NbTable::ALL {
            let Some((pt, col)) = t.parent() else {
                continue;
            };
            for (pu, prow) in rows(pt) {
                let Some(pname) = prow.str("name") else {
                    continue;
                };
                let pkey = RowKey::of(pt, None, &[pname.to_string()]);
                for child in prow.uuids(col) {
                    parent.insert(child, (*pu, pkey.clone(), col));
                    parent_name.insert(child, pname.to_string());
                }
            }
        }
        let mut idx = Index {
            by_key: HashMap::new(),
            duplicates: Vec::new(),
            key_of: HashMap::new(),
            parent,
        };
        let mut owned_ports: HashSet<String> = desired
            .rows_of(NbTable::LogicalRouterPort)
            .filter_map(|r| r.columns.get("name").and_then(Value::key_text))
            .collect();
        for (_, lrp) in rows(NbTable::LogicalRouterPort) {
            if let (true, Some(n)) = (marked(lrp), lrp.str("name")) {
                owned_ports.insert(n.to_string());
            }
        }
        for t in NbTable::ALL {
            for (u, row) in rows(t) {
                let Some(values) = key_values(t, row) else {
                    problems.push(format!("{} row {u}: no key columns, left alone", t.name()));
                    continue;
                };
                let key = RowKey::of(t, parent_name.get(u).map(String::as_str), &values);
                let owned = if t.has_external_ids() {
                    marked(row)
                } else {
                    row.str("logical_port")
                        .is_some_and(|p| owned_ports.contains(p))
                };
                idx.key_of.insert(*u, key.clone());
                let seen = Seen {
                    uuid: *u,
                    row,
                    owned,
                };
                match idx.by_key.entry(key) {
                    Entry::Occupied(e) => idx.duplicates.push((e.key().clone(), seen)),
                    Entry::Vacant(e) => {
                        e.insert(seen);
                    }
                }
            }
        }
        idx
    }
}

/// The observed value of `column` in the shape of `want`.
fn observed_value(row: &Row, column: &str, want: &Value, idx: &Index) -> Value {
    match want {
        Value::Str(_) => Value::Str(row.str(column).unwrap_or_default().to_string()),
        Value::Int(_) => row.int(column).map_or(Value::OptInt(None), Value::Int),
        Value::Bool(_) => row.bool(column).map_or(Value::OptInt(None), Value::Bool),
        Value::Set(_) => Value::set(row.strs(column)),
        Value::OptInt(_) => Value::OptInt(row.int(column)),
        Value::Map(_) => Value::Map(
            row.get(column)
                .map(Datum::pairs)
                .unwrap_or(&[])
                .iter()
                .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_str()?.to_string())))
                .collect(),
        ),
        Value::Ref(_) => Value::Ref(row.uuid(column).and_then(|u| idx.key_of.get(&u).cloned())),
        Value::Children(_) => Value::Children(
            row.uuids(column)
                .filter_map(|u| idx.key_of.get(&u).cloned())
                .collect(),
        ),
    }
}

/// Resolves the desired rows' keys to rows of the transaction.
struct Resolver<'a> {
    idx: &'a Index<'a>,
    named: BTreeMap<RowKey, String>,
}

impl Resolver<'_> {
    fn target(&self, key: &RowKey) -> Option<Target> {
        if let Some(s) = self.idx.by_key.get(key) {
            return Some(Target::Existing(s.uuid));
        }
        self.named.get(key).map(|n| Target::Named(n.clone()))
    }

    fn wire(&self, v: &Value, problems: &mut Vec<String>, at: &RowKey) -> Json {
        let mut resolve = |k: &RowKey| match self.target(k) {
            Some(t) => Some(t.wire()),
            None => {
                problems.push(format!("{at}: refers to {k}, which is not desired"));
                None
            }
        };
        match v {
            Value::Str(s) => json!(s),
            Value::Int(i) => json!(i),
            Value::Bool(b) => json!(b),
            Value::Set(s) => json!(["set", s.iter().collect::<Vec<_>>()]),
            Value::OptInt(None) | Value::Ref(None) => json!(["set", []]),
            Value::OptInt(Some(i)) => json!(i),
            Value::Map(m) => json!([
                "map",
                m.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()
            ]),
            Value::Ref(Some(k)) => resolve(k).unwrap_or_else(|| json!(["set", []])),
            Value::Children(c) => json!(["set", c.iter().filter_map(resolve).collect::<Vec<_>>()]),
        }
    }
}

/// Plans the transaction that makes `observed` hold `desired`.
///
/// A desired row is found by its key: missing → inserted (with the owner
/// mark; a non-root row is attached to its parent in the same
/// transaction); present → only the differing columns are updated, and an
/// unmarked row is adopted ([`NbOp::MarkOwned`]), never deleted and
/// recreated. An observed row no desired row names is deleted only when it
/// is the agent's (marked; a `Static_MAC_Binding` on one of the agent's
/// router ports); any other row is left alone.
pub fn plan(desired: &LocalClusterRows, observed: &Observed) -> LocalClusterPlan {
    let mut problems = Vec::new();
    let idx = Index::build(observed, desired, &mut problems);
    let mut named = BTreeMap::new();
    for (i, key) in desired
        .rows
        .keys()
        .filter(|k| !idx.by_key.contains_key(*k))
        .enumerate()
    {
        named.insert(key.clone(), format!("row{i}"));
    }
    let res = Resolver { idx: &idx, named };
    let mut ops = Vec::new();
    // Children to attach to existing parents: (parent key, column) → children.
    let mut attach: BTreeMap<(RowKey, &'static str), Vec<(RowKey, Target)>> = BTreeMap::new();
    for table in NbTable::ALL {
        for want in desired.rows_of(table) {
            match idx.by_key.get(&want.key) {
                None => {
                    ops.push(insert(want, &res, &mut problems));
                    if let Some((pkey, col)) = desired.parent_of(&want.key) {
                        if idx.by_key.contains_key(pkey) {
                            let t = Target::Named(res.named[&want.key].clone());
                            attach
                                .entry((pkey.clone(), col))
                                .or_default()
                                .push((want.key.clone(), t));
                        }
                    } else if !table.is_root() {
                        problems.push(format!("{}: no desired parent holds it", want.key));
                    }
                }
                Some(seen) => {
                    ops.extend(update(want, seen, &res, &mut problems));
                    for (col, v) in &want.columns {
                        let Value::Children(kids) = v else {
                            continue;
                        };
                        let Value::Children(have) = observed_value(seen.row, col, v, &idx) else {
                            continue;
                        };
                        for kid in kids.difference(&have) {
                            // New kids are attached above, when inserted.
                            if let Some(Target::Existing(u)) = res.target(kid) {
                                attach
                                    .entry((want.key.clone(), col))
                                    .or_default()
                                    .push((kid.clone(), Target::Existing(u)));
                            }
                        }
                    }
                }
            }
        }
    }
    for ((parent, column), children) in attach {
        let uuid = idx.by_key[&parent].uuid;
        ops.push(NbOp::AddChildren {
            parent,
            uuid,
            column,
            children,
        });
    }
    ops.extend(deletions(desired, &idx));
    LocalClusterPlan { ops, problems }
}

fn insert(want: &LocalRow, res: &Resolver, problems: &mut Vec<String>) -> NbOp {
    let columns = want
        .columns
        .iter()
        .map(|(c, v)| (*c, v.clone(), res.wire(v, problems, &want.key)))
        .collect();
    NbOp::Insert {
        key: want.key.clone(),
        name: res.named[&want.key].clone(),
        columns,
    }
}

fn update(want: &LocalRow, seen: &Seen, res: &Resolver, problems: &mut Vec<String>) -> Vec<NbOp> {
    let mut ops = Vec::new();
    let changed: Vec<_> = want
        .columns
        .iter()
        .filter(|(_, v)| !matches!(v, Value::Children(_)))
        .filter(|(c, v)| observed_value(seen.row, c, v, res.idx) != **v)
        .map(|(c, v)| (*c, v.clone(), res.wire(v, problems, &want.key)))
        .collect();
    if !changed.is_empty() {
        ops.push(NbOp::Update {
            key: want.key.clone(),
            uuid: seen.uuid,
            columns: changed,
        });
    }
    if want.key.table.has_external_ids() && !seen.owned {
        ops.push(NbOp::MarkOwned {
            key: want.key.clone(),
            uuid: seen.uuid,
        });
    }
    ops
}

/// A parent row (key, uuid) and one of its children columns.
type ParentColumn = (RowKey, Uuid, &'static str);

/// The agent's observed rows that no desired row names (and the agent's
/// duplicates of desired ones): root rows deleted, non-root rows detached
/// from their parent, unless an ancestor is deleted anyway.
fn deletions(desired: &LocalClusterRows, idx: &Index) -> Vec<NbOp> {
    let leftovers: Vec<(&RowKey, &Seen)> = idx
        .by_key
        .iter()
        .filter(|(k, s)| s.owned && !desired.rows.contains_key(*k))
        .chain(
            idx.duplicates
                .iter()
                .filter(|(_, s)| s.owned)
                .map(|(k, s)| (k, s)),
        )
        .collect();
    let gone: HashSet<Uuid> = leftovers.iter().map(|(_, s)| s.uuid).collect();
    let ancestor_gone = |mut u: Uuid| {
        while let Some((p, _, _)) = idx.parent.get(&u) {
            if gone.contains(p) {
                return true;
            }
            u = *p;
        }
        false
    };
    let mut detach: BTreeMap<ParentColumn, Vec<(RowKey, Uuid)>> = BTreeMap::new();
    let mut deletes = Vec::new();
    for (key, seen) in leftovers {
        if ancestor_gone(seen.uuid) {
            continue;
        }
        if key.table.is_root() {
            deletes.push(NbOp::Delete {
                key: key.clone(),
                uuid: seen.uuid,
            });
        } else if let Some((pu, pkey, col)) = idx.parent.get(&seen.uuid) {
            detach
                .entry((pkey.clone(), *pu, col))
                .or_default()
                .push((key.clone(), seen.uuid));
        }
    }
    let mut ops: Vec<NbOp> = detach
        .into_iter()
        .map(|((parent, uuid, column), children)| NbOp::RemoveChildren {
            parent,
            uuid,
            column,
            children,
        })
        .collect();
    deletes.sort_by(|a, b| format!("{a}").cmp(&format!("{b}")));
    ops.extend(deletes);
    ops
}

/// The keys of the rows [`plan`] would delete or detach (for tests and
/// `plan` summaries).
pub fn removed_keys(plan: &LocalClusterPlan) -> BTreeSet<RowKey> {
    plan.ops
        .iter()
        .flat_map(|op| match op {
            NbOp::Delete { key, .. } => vec![key.clone()],
            NbOp::RemoveChildren { children, .. } => {
                children.iter().map(|(k, _)| k.clone()).collect()
            }
            _ => Vec::new(),
        })
        .collect()
}
