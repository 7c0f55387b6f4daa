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

use crate::datum::Datum;
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
