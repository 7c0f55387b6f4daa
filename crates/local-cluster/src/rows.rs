//! The rows the agent keeps in the node-local NB, as plain values: tables,
//! natural keys, column values and the desired set of rows.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;

/// The `external_ids` key that marks a row as the agent's.
pub const OWNER_KEY: &str = "ovn-bgp-agent";
/// Its value.
pub const OWNER_VALUE: &str = "managed";

/// The OVN_Northbound tables the agent writes in the node-local NB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum NbTable {
    LogicalRouter,
    LogicalRouterPort,
    LogicalRouterPolicy,
    LogicalRouterStaticRoute,
    Bfd,
    GatewayChassis,
    LogicalSwitch,
    LogicalSwitchPort,
    StaticMacBinding,
}

impl NbTable {
    /// Every table, in the order the planner emits operations: a row
    /// before the rows that refer to it (children before their parent,
    /// BFD before the routes that name it), so a `named-uuid` is always
    /// defined before it is used.
    pub const ALL: [NbTable; 9] = [
        NbTable::Bfd,
        NbTable::GatewayChassis,
        NbTable::LogicalRouterPort,
        NbTable::LogicalRouterPolicy,
        NbTable::LogicalRouterStaticRoute,
        NbTable::LogicalRouter,
        NbTable::LogicalSwitchPort,
        NbTable::LogicalSwitch,
        NbTable::StaticMacBinding,
    ];

    /// The schema's table name.
    pub fn name(self) -> &'static str {
        match self {
            NbTable::LogicalRouter => "Logical_Router",
            NbTable::LogicalRouterPort => "Logical_Router_Port",
            NbTable::LogicalRouterPolicy => "Logical_Router_Policy",
            NbTable::LogicalRouterStaticRoute => "Logical_Router_Static_Route",
            NbTable::Bfd => "BFD",
            NbTable::GatewayChassis => "Gateway_Chassis",
            NbTable::LogicalSwitch => "Logical_Switch",
            NbTable::LogicalSwitchPort => "Logical_Switch_Port",
            NbTable::StaticMacBinding => "Static_MAC_Binding",
        }
    }

    /// The table of a schema name.
    pub fn from_name(name: &str) -> Option<NbTable> {
        NbTable::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Root tables hold their rows on their own; the others' rows live as
    /// long as a strong reference from their parent ([`NbTable::parent`]).
    pub fn is_root(self) -> bool {
        matches!(
            self,
            NbTable::LogicalRouter
                | NbTable::LogicalSwitch
                | NbTable::Bfd
                | NbTable::StaticMacBinding
        )
    }

    /// The table and column that hold a non-root table's rows.
    pub fn parent(self) -> Option<(NbTable, &'static str)> {
        match self {
            NbTable::LogicalRouterPort => Some((NbTable::LogicalRouter, "ports")),
            NbTable::LogicalRouterPolicy => Some((NbTable::LogicalRouter, "policies")),
            NbTable::LogicalRouterStaticRoute => Some((NbTable::LogicalRouter, "static_routes")),
            NbTable::GatewayChassis => Some((NbTable::LogicalRouterPort, "gateway_chassis")),
            NbTable::LogicalSwitchPort => Some((NbTable::LogicalSwitch, "ports")),
            _ => None,
        }
    }

    /// `Static_MAC_Binding` has no `external_ids`: its ownership follows
    /// its `logical_port`.
    pub fn has_external_ids(self) -> bool {
        self != NbTable::StaticMacBinding
    }

    /// The columns whose values identify a row. Policies and static routes
    /// are unique only within their router, so their key also names the
    /// router (see [`RowKey`]).
    pub fn key_columns(self) -> &'static [&'static str] {
        match self {
            NbTable::LogicalRouter
            | NbTable::LogicalRouterPort
            | NbTable::GatewayChassis
            | NbTable::LogicalSwitch
            | NbTable::LogicalSwitchPort => &["name"],
            NbTable::LogicalRouterPolicy => &["priority", "match"],
            NbTable::LogicalRouterStaticRoute => &["ip_prefix", "nexthop"],
            NbTable::Bfd => &["logical_port", "dst_ip"],
            NbTable::StaticMacBinding => &["logical_port", "ip"],
        }
    }

    /// Whether the key also names the parent row (unique only per parent).
    pub fn keyed_by_parent(self) -> bool {
        matches!(
            self,
            NbTable::LogicalRouterPolicy | NbTable::LogicalRouterStaticRoute
        )
    }
}

impl fmt::Display for NbTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A row's identity: its table and natural key, e.g. `Logical_Router
/// bgp-router`, `Logical_Router_Static_Route bgp-router 0.0.0.0/0
/// 100.64.1.5`. Stable across restarts, unlike the row's uuid.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct RowKey {
    pub table: NbTable,
    pub key: String,
}

impl RowKey {
    /// The key of a row of `table` with these key-column values (`parent`:
    /// the parent's key text, for [`NbTable::keyed_by_parent`] tables).
    pub fn of(table: NbTable, parent: Option<&str>, values: &[String]) -> RowKey {
        let mut parts: Vec<&str> = Vec::new();
        if table.keyed_by_parent() {
            parts.push(parent.unwrap_or("-"));
        }
        parts.extend(values.iter().map(String::as_str));
        RowKey {
            table,
            key: parts.join(" "),
        }
    }
}

impl fmt::Display for RowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.table, self.key)
    }
}

/// A column value in the shapes the agent's columns use.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Value {
    Str(String),
    Int(i64),
    Bool(bool),
    /// A set of strings (also an optional string: a set of 0 or 1).
    Set(BTreeSet<String>),
    /// An optional integer (`tag`).
    OptInt(Option<i64>),
    /// A string-to-string map (`options`).
    Map(BTreeMap<String, String>),
    /// An optional reference to another of the agent's rows (`bfd`).
    Ref(Option<RowKey>),
    /// The strong references to a parent's children (`ports`,
    /// `static_routes`, `policies`, `gateway_chassis`). The planner only
    /// adds the missing ones (`mutate insert`); a child leaves its parent
    /// when the child itself is no longer desired, and a foreign child
    /// stays.
    Children(BTreeSet<RowKey>),
}

impl Value {
    /// A set of the given strings.
    pub fn set<I: IntoIterator<Item = S>, S: Into<String>>(items: I) -> Value {
        Value::Set(items.into_iter().map(Into::into).collect())
    }

    /// A map of the given pairs.
    pub fn map<I: IntoIterator<Item = (K, V)>, K: Into<String>, V: Into<String>>(
        pairs: I,
    ) -> Value {
        Value::Map(
            pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }

    /// The value as a key column's text (`None` for reference shapes).
    pub fn key_text(&self) -> Option<String> {
        match self {
            Value::Str(s) => Some(s.clone()),
            Value::Int(i) => Some(i.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Str(s) => write!(f, "{s:?}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Set(s) => {
                let items: Vec<String> = s.iter().map(|i| format!("{i:?}")).collect();
                write!(f, "[{}]", items.join(", "))
            }
            Value::OptInt(None) => f.write_str("[]"),
            Value::OptInt(Some(i)) => write!(f, "{i}"),
            Value::Map(m) => {
                let items: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
                write!(f, "{{{}}}", items.join(", "))
            }
            Value::Ref(None) => f.write_str("[]"),
            Value::Ref(Some(k)) => write!(f, "<{k}>"),
            Value::Children(c) => {
                let items: Vec<String> = c.iter().map(|k| format!("<{k}>")).collect();
                write!(f, "[{}]", items.join(", "))
            }
        }
    }
}

/// One desired row: its key and the columns the agent sets. Columns not
/// listed are left as the database has them (defaults on insert).
/// `external_ids` is never listed: the planner adds the owner mark.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct LocalRow {
    pub key: RowKey,
    pub columns: BTreeMap<&'static str, Value>,
}

impl LocalRow {
    /// A row of `table` with `columns`; its key is computed from them
    /// (`parent`: the parent's key text for per-parent keys).
    pub fn new(table: NbTable, parent: Option<&str>, columns: Vec<(&'static str, Value)>) -> Self {
        let columns: BTreeMap<&'static str, Value> = columns.into_iter().collect();
        let values: Vec<String> = table
            .key_columns()
            .iter()
            .map(|c| columns.get(c).and_then(Value::key_text).unwrap_or_default())
            .collect();
        LocalRow {
            key: RowKey::of(table, parent, &values),
            columns,
        }
    }
}

/// The desired content of the node-local NB: every row the agent wants,
/// by key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct LocalClusterRows {
    pub rows: BTreeMap<RowKey, LocalRow>,
}

impl LocalClusterRows {
    /// Adds `row` (a row with the same key replaces it).
    pub fn insert(&mut self, row: LocalRow) -> RowKey {
        let key = row.key.clone();
        self.rows.insert(key.clone(), row);
        key
    }

    /// The row of `key`.
    pub fn get(&self, key: &RowKey) -> Option<&LocalRow> {
        self.rows.get(key)
    }

    /// Adds `child` to `parent`'s [`Value::Children`] column `column`.
    pub fn adopt(&mut self, parent: &RowKey, column: &'static str, child: RowKey) {
        if let Some(row) = self.rows.get_mut(parent) {
            let entry = row
                .columns
                .entry(column)
                .or_insert_with(|| Value::Children(BTreeSet::new()));
            if let Value::Children(c) = entry {
                c.insert(child);
            }
        }
    }

    /// The parent row holding `child` in a children column, if any.
    pub fn parent_of(&self, child: &RowKey) -> Option<(&RowKey, &'static str)> {
        let (ptable, pcol) = child.table.parent()?;
        self.rows.values().find_map(|r| {
            (r.key.table == ptable)
                .then(|| match r.columns.get(pcol) {
                    Some(Value::Children(c)) if c.contains(child) => Some((&r.key, pcol)),
                    _ => None,
                })
                .flatten()
        })
    }

    /// The rows of `table`.
    pub fn rows_of(&self, table: NbTable) -> impl Iterator<Item = &LocalRow> {
        self.rows.values().filter(move |r| r.key.table == table)
    }
}
