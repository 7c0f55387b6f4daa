//! What a monitor follows: tables, columns, row conditions and map-key
//! projections, and the request objects they become.
//!
//! A [`MonitorSpec`] says which tables to follow, which columns of each, and
//! which rows (per-table conditions). It is checked against the server's
//! schema before use: tables or columns the server's schema lacks are left
//! out with a warning rather than failing, because the agent must work with
//! older and newer OVN schemas than the one it was written against.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::datum::{Atom, Datum, DatumKind, Row, Uuid};
use crate::schema::DatabaseSchema;
use crate::wire::KeyProjection;

/// A condition clause (RFC 7047 § 5.1 `<condition>`, as used by
/// `monitor_cond`): `[column, function, value]`, or a literal `true`/`false`.
#[derive(Clone, Debug, PartialEq)]
pub enum Condition {
    /// Matches every row.
    True,
    /// Matches no row.
    False,
    /// `[column, function, value]`; `function` is one of `==`, `!=`,
    /// `includes`, `excludes`, `<`, `<=`, `>`, `>=`.
    Clause {
        /// Column name.
        column: String,
        /// Comparison function.
        function: String,
        /// Value compared with, in the column's type.
        value: Datum,
    },
}

impl Condition {
    /// `column == value`.
    pub fn eq(column: &str, value: Datum) -> Condition {
        Condition::Clause {
            column: column.into(),
            function: "==".into(),
            value,
        }
    }

    /// `column includes value` (for sets and maps).
    pub fn includes(column: &str, value: Datum) -> Condition {
        Condition::Clause {
            column: column.into(),
            function: "includes".into(),
            value,
        }
    }

    /// From wire notation (the inverse of [`Condition::to_wire`]; the value
    /// decoded schema-less, as [`Datum::from_wire`] does).
    pub fn from_wire(v: &Value) -> Result<Condition, crate::datum::DatumError> {
        use crate::datum::DatumError;
        match v {
            Value::Bool(true) => Ok(Condition::True),
            Value::Bool(false) => Ok(Condition::False),
            Value::Array(c) if c.len() == 3 => match (c[0].as_str(), c[1].as_str()) {
                (Some(column), Some(function)) => Ok(Condition::Clause {
                    column: column.into(),
                    function: function.into(),
                    value: Datum::from_wire(&c[2])?,
                }),
                _ => Err(DatumError::BadAtom(v.to_string())),
            },
            _ => Err(DatumError::BadAtom(v.to_string())),
        }
    }

    /// Whether ovsdb-server would send row `uuid` (content `row`) under
    /// this clause: what lets a monitor of every row keep, in-process, the
    /// rows a conditional monitor would have received.
    ///
    /// `==` and `includes` follow ovsdb-server on sets and maps (order
    /// does not matter; `includes` asks every element, or every key/value
    /// pair, of the value to be in the column). `_uuid` is the row's uuid.
    /// A column absent from `row` holds its type's default: the empty set
    /// or map, or, for a required scalar, `""`, `0` or `false`; without a
    /// schema the two cannot be told apart, so an absent column matches
    /// a value that either default would. The other functions (`!=`,
    /// `excludes`, `<`, ...) keep every row: a filter that keeps a row the
    /// server would not have sent costs memory, one that drops a row it
    /// would have sent loses it.
    pub fn matches(&self, uuid: Uuid, row: &Row) -> bool {
        let (column, function, value) = match self {
            Condition::True => return true,
            Condition::False => return false,
            Condition::Clause {
                column,
                function,
                value,
            } => (column, function.as_str(), value),
        };
        let own_uuid;
        let have = if column == "_uuid" {
            own_uuid = Datum::scalar(Atom::Uuid(uuid));
            Some(&own_uuid)
        } else {
            row.get(column)
        };
        match (function, have) {
            ("==", Some(have)) => same_elements(have, value),
            ("includes", Some(have)) => includes(have, value),
            ("==" | "includes", None) => is_default(value),
            _ => true,
        }
    }

    /// Wire notation.
    pub fn to_wire(&self) -> Value {
        match self {
            Condition::True => Value::Bool(true),
            Condition::False => Value::Bool(false),
            Condition::Clause {
                column,
                function,
                value,
            } => json!([column, function, value.to_wire()]),
        }
    }
}

/// Whether `a` and `b` hold the same elements (sets) or pairs (maps),
/// in any order: OVSDB sets and maps are unordered.
fn same_elements(a: &Datum, b: &Datum) -> bool {
    a.is_map() == b.is_map() && a.len() == b.len() && includes(a, b)
}

/// Whether every element (set) or key/value pair (map) of `part` is in
/// `whole`. A set and a map never include each other, except an empty one.
fn includes(whole: &Datum, part: &Datum) -> bool {
    match (whole.kind(), part.kind()) {
        (DatumKind::Set(w), DatumKind::Set(p)) => p.iter().all(|a| w.contains(a)),
        (DatumKind::Map(w), DatumKind::Map(p)) => p.iter().all(|kv| w.contains(kv)),
        _ => part.is_empty(),
    }
}

/// Whether `value` is what an absent column may hold: empty, or one atom
/// that is its type's default (a required scalar column's value).
fn is_default(value: &Datum) -> bool {
    match value.kind() {
        DatumKind::Map(pairs) => pairs.is_empty(),
        DatumKind::Set(atoms) => match atoms {
            [] => true,
            [Atom::String(s)] => s.is_empty(),
            [Atom::Integer(i)] => *i == 0,
            [Atom::Real(r)] => *r == 0.0,
            [Atom::Boolean(b)] => !*b,
            _ => false,
        },
    }
}

/// What to monitor in one table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableMonitor {
    /// Columns to receive; `None` means all columns of the server's schema.
    pub columns: Option<Vec<String>>,
    /// Rows to receive: those matching any clause (the server ORs them);
    /// `None` means all rows.
    pub conditions: Option<Vec<Condition>>,
    /// Map columns of which only some keys are kept: column name to the
    /// string keys to keep. The server still sends the whole map; the
    /// decoder drops the other pairs before they are allocated, so the
    /// cache holds exactly the projection of the server's rows. Columns
    /// not named here are kept whole.
    pub map_keys: BTreeMap<String, Vec<String>>,
}

/// What to monitor in one database.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MonitorSpec {
    /// Monitored tables by name.
    pub tables: BTreeMap<String, TableMonitor>,
}

impl MonitorSpec {
    /// Every column and row of `tables`.
    pub fn all<'a>(tables: impl IntoIterator<Item = &'a str>) -> MonitorSpec {
        MonitorSpec {
            tables: tables
                .into_iter()
                .map(|t| (t.to_string(), TableMonitor::default()))
                .collect(),
        }
    }

    /// Adds or replaces a table.
    pub fn table(mut self, name: &str, monitor: TableMonitor) -> MonitorSpec {
        self.tables.insert(name.to_string(), monitor);
        self
    }

    /// The `monitor-cond-requests` object for `schema`, leaving out (with a
    /// warning) tables and columns the schema does not have.
    pub fn requests(&self, schema: &DatabaseSchema) -> Value {
        self.build_requests(schema, true)
    }

    /// The `monitor-cond-update` object for `monitor_cond_change`: the
    /// conditions only, since servers refuse to change columns.
    pub fn condition_updates(&self, schema: &DatabaseSchema) -> Value {
        self.build_requests(schema, false)
    }

    fn build_requests(&self, schema: &DatabaseSchema, with_columns: bool) -> Value {
        let mut out = serde_json::Map::new();
        for (name, tm) in &self.tables {
            let Some(ts) = schema.table(name) else {
                tracing::warn!(db = %schema.name, table = %name, "table not in server schema, not monitored");
                continue;
            };
            let mut req = serde_json::Map::new();
            if !with_columns {
                let conds = tm.conditions.clone().unwrap_or(vec![Condition::True]);
                req.insert(
                    "where".into(),
                    Value::Array(conds.iter().map(Condition::to_wire).collect()),
                );
                out.insert(name.clone(), json!([req]));
                continue;
            }
            if let Some(cols) = &tm.columns {
                let present: Vec<&String> = cols
                    .iter()
                    .filter(|c| {
                        let ok = ts.column(c).is_some();
                        if !ok {
                            tracing::warn!(db = %schema.name, table = %name, column = %c, "column not in server schema, not monitored");
                        }
                        ok
                    })
                    .collect();
                req.insert("columns".into(), json!(present));
            } else {
                // Name every column: without a list the server also sends
                // `_version`, ~50 useless bytes a row.
                let all: Vec<&String> = ts.columns.keys().collect();
                req.insert("columns".into(), json!(all));
            }
            if let Some(conds) = &tm.conditions {
                req.insert(
                    "where".into(),
                    Value::Array(conds.iter().map(Condition::to_wire).collect()),
                );
            }
            out.insert(name.clone(), json!([req]));
        }
        Value::Object(out)
    }

    /// The map-key projection of every table (see [`TableMonitor::map_keys`]).
    pub fn key_projection(&self) -> KeyProjection {
        let mut p = KeyProjection::default();
        for (table, tm) in &self.tables {
            for (column, keys) in &tm.map_keys {
                p = p.keep(table, column, keys.iter().map(String::as_str));
            }
        }
        p
    }

    /// Tables of this spec that `schema` has.
    pub fn tables_in<'a>(&'a self, schema: &'a DatabaseSchema) -> impl Iterator<Item = &'a str> {
        self.tables
            .keys()
            .filter(|t| schema.table(t).is_some())
            .map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datum::Atom;

    fn nb() -> DatabaseSchema {
        DatabaseSchema::from_file(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/schemas/ovn-nb.ovsschema"
        ))
        .unwrap()
    }

    fn s(v: &str) -> Atom {
        Atom::String(v.into())
    }

    fn row(v: Value) -> Row {
        Row::from_wire(&v).unwrap()
    }

    const U: Uuid = Uuid(0x1111_2222_3333_4444_5555_6666_7777_8888);

    #[test]
    fn equality_compares_scalars_and_whole_sets_and_maps_in_any_order() {
        let r = row(json!({"type": "router", "addresses": ["set", ["b", "a"]],
                           "options": ["map", [["x", "1"], ["y", "2"]]]}));
        assert!(Condition::eq("type", Datum::scalar(s("router"))).matches(U, &r));
        assert!(!Condition::eq("type", Datum::scalar(s("localnet"))).matches(U, &r));
        assert!(Condition::eq("addresses", Datum::set(vec![s("a"), s("b")])).matches(U, &r));
        assert!(!Condition::eq("addresses", Datum::scalar(s("a"))).matches(U, &r));
        let both = Datum::map(vec![(s("y"), s("2")), (s("x"), s("1"))]);
        assert!(Condition::eq("options", both).matches(U, &r));
        let one = Datum::map(vec![(s("x"), s("1"))]);
        assert!(!Condition::eq("options", one).matches(U, &r));
    }

    #[test]
    fn includes_asks_every_element_or_pair_key_and_value() {
        let r = row(json!({"tag": ["set", [1, 2]],
                           "options": ["map", [["requested-chassis", "a"], ["k", "v"]]]}));
        let pair = |k: &str, v: &str| Datum::map(vec![(s(k), s(v))]);
        assert!(Condition::includes("options", pair("requested-chassis", "a")).matches(U, &r));
        // The key alone is not enough: the value must match too.
        assert!(!Condition::includes("options", pair("requested-chassis", "b")).matches(U, &r));
        assert!(!Condition::includes("options", pair("other", "a")).matches(U, &r));
        let ints = |v: &[i64]| Datum::set(v.iter().map(|i| Atom::Integer(*i)).collect());
        assert!(Condition::includes("tag", ints(&[2])).matches(U, &r));
        assert!(Condition::includes("tag", ints(&[2, 1])).matches(U, &r));
        assert!(!Condition::includes("tag", ints(&[3])).matches(U, &r));
        // Everything includes the empty set.
        assert!(Condition::includes("tag", Datum::empty_set()).matches(U, &r));
    }

    #[test]
    fn an_absent_column_holds_its_default() {
        let r = row(json!({"name": "vm1"}));
        let pair = Datum::map(vec![(s("activation-strategy"), s("rarp"))]);
        assert!(!Condition::includes("options", pair).matches(U, &r));
        assert!(!Condition::eq("type", Datum::scalar(s("localnet"))).matches(U, &r));
        // A required string column left out of an update2 row is "".
        assert!(Condition::eq("type", Datum::scalar(s(""))).matches(U, &r));
        assert!(Condition::eq("tag", Datum::empty_set()).matches(U, &r));
        assert!(Condition::eq("options", Datum::map(vec![])).matches(U, &r));
        assert!(!Condition::eq("tag", Datum::scalar(Atom::Integer(5))).matches(U, &r));
    }

    #[test]
    fn uuid_literals_and_unknown_functions() {
        let r = row(json!({"name": "vm1"}));
        assert!(Condition::eq("_uuid", Datum::scalar(Atom::Uuid(U))).matches(U, &r));
        assert!(!Condition::eq("_uuid", Datum::scalar(Atom::Uuid(Uuid(7)))).matches(U, &r));
        assert!(Condition::True.matches(U, &r));
        assert!(!Condition::False.matches(U, &r));
        // Functions no condition of the agent uses keep the row.
        let ne = Condition::Clause {
            column: "name".into(),
            function: "!=".into(),
            value: Datum::scalar(s("vm1")),
        };
        assert!(ne.matches(U, &r));
    }

    #[test]
    fn requests_carry_columns_and_conditions_and_skip_unknown_names() {
        let spec = MonitorSpec::all(["NB_Global", "No_Such_Table"]).table(
            "Logical_Switch_Port",
            TableMonitor {
                columns: Some(vec!["name".into(), "no_such_column".into()]),
                conditions: Some(vec![Condition::eq(
                    "type",
                    Datum::scalar(Atom::String("localnet".into())),
                )]),
                ..TableMonitor::default()
            },
        );
        let req = spec.requests(&nb());
        assert_eq!(
            req,
            json!({
                "NB_Global": [{"columns": nb().table("NB_Global").unwrap().columns.keys().collect::<Vec<_>>()}],
                "Logical_Switch_Port": [{"columns": ["name"], "where": [["type", "==", "localnet"]]}]
            })
        );
    }
}
