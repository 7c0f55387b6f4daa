//! `[DEFAULT] ovn_nb_monitor_all = true`: the server sends every
//! Logical_Switch_Port and NAT row and the cache holds them all, but the
//! typed snapshot `desired_state` reads keeps only those this node needs,
//! selected in-process by the very conditions a conditional monitor sends
//! to ovsdb-server ([`LspInterest::conditions`],
//! [`LspInterest::nat_conditions`], evaluated by [`Condition::matches`]).
//! One rule of which rows a node needs, two places it is applied; the
//! conditional oracle's proof (the desired state from the selected rows
//! equals the one from every row) holds for both.
//!
//! One addition the server cannot evaluate (it compares whole values):
//! every port whose `requested-chassis` lists this chassis among others.
//! A live migration towards here is then seen from Neutron's write, with
//! or without `activation-strategy` and before its VIF is plugged here:
//! the conditional monitor's one window (`nb_conditions`' module doc)
//! does not apply to the full monitor, which keeps upstream's timing.

use std::collections::{BTreeMap, HashSet};

use obgp_ovsdb_data::{Atom, Condition, Datum, DatumKind, Row, Uuid};

use crate::nb::{LogicalSwitchPort, Nat};
use crate::nb_conditions::LspInterest;
use crate::neutron::{key, requested_chassis};
use crate::snapshot::RowSource;

/// The rows of Logical_Switch_Port and NAT an [`LspInterest`] selects; the
/// other tables pass whole.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NbRowFilter {
    ports: Clauses,
    nats: Clauses,
    /// This chassis: a port whose `requested-chassis` lists it is kept.
    chassis: Option<String>,
}

impl NbRowFilter {
    /// The tables the filter selects rows of.
    pub const TABLES: [&'static str; 2] = [LogicalSwitchPort::TABLE, Nat::TABLE];

    /// The rows `interest`'s monitor conditions select.
    pub fn of(interest: &LspInterest) -> NbRowFilter {
        NbRowFilter {
            ports: Clauses::of(interest.conditions()),
            nats: Clauses::of(interest.nat_conditions()),
            chassis: interest.chassis.clone(),
        }
    }

    /// Whether the filter selects rows of `table` (else it keeps them all).
    pub fn filters(table: &str) -> bool {
        Self::TABLES.contains(&table)
    }

    /// Whether row `uuid` of `table` is kept: it matches one of the
    /// table's conditions, as ovsdb-server ORs them.
    /// For a port, also when its `requested-chassis` lists this chassis
    /// (see the module doc).
    pub fn keeps(&self, table: &str, uuid: Uuid, row: &Row) -> bool {
        match table {
            LogicalSwitchPort::TABLE => {
                self.ports.match_any(uuid, row) || self.lists_this_chassis(row)
            }
            Nat::TABLE => self.nats.match_any(uuid, row),
            _ => true,
        }
    }

    fn lists_this_chassis(&self, port: &Row) -> bool {
        let (Some(chassis), Some(listed)) = (
            self.chassis.as_deref(),
            port.map_str("options", key::REQUESTED_CHASSIS),
        ) else {
            return false;
        };
        requested_chassis(listed).any(|c| c == chassis)
    }
}

/// One table's conditions (ORed), indexed: a row costs a lookup per column
/// and key the clauses name, not an evaluation per clause. A node behind a
/// hundred networks, looking up a few hundred ports by name, has hundreds
/// of clauses, evaluated on every port of the database when its filter
/// changes. Each index answers as [`Condition::matches`] would for its
/// clauses; the rest are evaluated as they are.
#[derive(Clone, Debug, Default, PartialEq)]
struct Clauses {
    /// A `true` clause: every row.
    all: bool,
    /// `column == "<string>"`: the values by column.
    eq_str: BTreeMap<String, HashSet<String>>,
    /// `column == <uuid>` (not `_uuid`): the values by column.
    eq_uuid: BTreeMap<String, HashSet<Uuid>>,
    /// `column includes {key: "<string>"}`: the values by column and key.
    includes_pair: BTreeMap<(String, String), HashSet<String>>,
    /// Any other clause.
    other: Vec<Condition>,
}

impl Clauses {
    fn of(conditions: Vec<Condition>) -> Clauses {
        let mut out = Clauses::default();
        for c in conditions {
            let Condition::Clause {
                column,
                function,
                value,
            } = &c
            else {
                out.all |= c == Condition::True;
                continue;
            };
            match (function.as_str(), value.kind()) {
                ("==", DatumKind::Set([Atom::String(s)])) => {
                    let values = out.eq_str.entry(column.clone()).or_default();
                    values.insert(s.to_string());
                }
                ("==", DatumKind::Set([Atom::Uuid(u)])) if column != "_uuid" => {
                    out.eq_uuid.entry(column.clone()).or_default().insert(*u);
                }
                ("includes", DatumKind::Map([(Atom::String(k), Atom::String(v))])) => {
                    let key = (column.clone(), k.to_string());
                    out.includes_pair
                        .entry(key)
                        .or_default()
                        .insert(v.to_string());
                }
                _ => out.other.push(c),
            }
        }
        out
    }

    /// Whether row `uuid` matches one of the clauses.
    fn match_any(&self, uuid: Uuid, row: &Row) -> bool {
        self.all
            || self
                .eq_str
                .iter()
                .any(|(column, values)| match row.get(column).map(Datum::kind) {
                    // An absent column holds its default: `""` for a string.
                    None => values.contains(""),
                    Some(DatumKind::Set([Atom::String(s)])) => values.contains(s.as_str()),
                    Some(_) => false,
                })
            || self.eq_uuid.iter().any(|(column, values)| {
                matches!(row.get(column).map(Datum::kind),
                    Some(DatumKind::Set([Atom::Uuid(u)])) if values.contains(u))
            })
            || self.includes_pair.iter().any(|((column, key), values)| {
                match row.get(column).map(Datum::kind) {
                    Some(DatumKind::Map(pairs)) => pairs.iter().any(|(k, v)| {
                        k.as_str() == Some(key.as_str())
                            && v.as_str().is_some_and(|v| values.contains(v))
                    }),
                    _ => false,
                }
            })
            || self.other.iter().any(|c| c.matches(uuid, row))
    }
}

/// `rows` as a conditional monitor with `filter`'s conditions would hold
/// them: what a filtered snapshot is built from.
pub struct FilteredRows<'a, S> {
    /// Every row.
    pub rows: &'a S,
    /// The selection of the filtered tables.
    pub filter: &'a NbRowFilter,
}

impl<S: RowSource> RowSource for FilteredRows<'_, S> {
    fn rows(&self, table: &str) -> Vec<(Uuid, &Row)> {
        let mut rows = self.rows.rows(table);
        if NbRowFilter::filters(table) {
            rows.retain(|(uuid, row)| self.filter.keeps(table, *uuid, row));
        }
        rows
    }

    /// Whether the row exists, kept or not: `RowSource` cannot hand the
    /// row out to be evaluated, and a snapshot of selected rows
    /// ([`LiveSnapshot::with_partial_ports`](crate::LiveSnapshot::with_partial_ports))
    /// takes a row it lacks for one not monitored anyway.
    fn contains(&self, table: &str, uuid: Uuid) -> bool {
        self.rows.contains(table, uuid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn port(options: serde_json::Value) -> Row {
        Row::from_wire(&json!({"name": "vm", "type": "", "options": options})).unwrap()
    }

    #[test]
    fn a_port_listing_this_chassis_among_others_is_kept_without_a_matching_condition() {
        let filter = NbRowFilter::of(&LspInterest {
            chassis: Some("host-a".into()),
            ..LspInterest::default()
        });
        let u = Uuid(1);
        let migrating = port(json!(["map", [["requested-chassis", "host-b, host-a"]]]));
        assert!(!filter.ports.match_any(u, &migrating));
        assert!(filter.keeps(LogicalSwitchPort::TABLE, u, &migrating));
        let elsewhere = port(json!(["map", [["requested-chassis", "host-b,host-c"]]]));
        assert!(!filter.keeps(LogicalSwitchPort::TABLE, u, &elsewhere));
        let bound_here = port(json!(["map", [["requested-chassis", "host-a"]]]));
        assert!(filter.keeps(LogicalSwitchPort::TABLE, u, &bound_here));
        // Other tables pass whole; a NAT needs a condition.
        assert!(filter.keeps("Logical_Switch", u, &elsewhere));
        let dnat = Row::from_wire(&json!({"type": "dnat_and_snat"})).unwrap();
        assert!(!filter.keeps(Nat::TABLE, u, &dnat));
        let snat = Row::from_wire(&json!({"type": "snat"})).unwrap();
        assert!(filter.keeps(Nat::TABLE, u, &snat));
    }

    /// Each index answers as `Condition::matches` does, clause by clause,
    /// on rows with the column absent, of another shape, or matching.
    #[test]
    fn the_indexed_clauses_answer_as_the_conditions_do() {
        let s = |v: &str| Atom::String(v.into());
        let pair = |k: &str, v: &str| Datum::map(vec![(s(k), s(v))]);
        let gw = Uuid(0x42);
        let conditions = [
            Condition::True,
            Condition::False,
            Condition::eq("type", Datum::scalar(s("router"))),
            Condition::eq("type", Datum::scalar(s(""))),
            Condition::eq("name", Datum::scalar(s("vm1"))),
            Condition::eq("gateway_port", Datum::scalar(Atom::Uuid(gw))),
            Condition::eq("_uuid", Datum::scalar(Atom::Uuid(Uuid(1)))),
            Condition::includes("options", pair("requested-chassis", "host-a")),
            Condition::includes("external_ids", pair("neutron:network_name", "net1")),
            Condition::includes("options", Datum::map(vec![])),
            Condition::eq("tag", Datum::scalar(Atom::Integer(0))),
        ];
        let rows = [
            json!({}),
            json!({"name": "vm1", "type": "router"}),
            json!({"name": ["set", ["vm1", "vm2"]], "type": ["set", []]}),
            json!({"gateway_port": ["uuid", "00000000-0000-0000-0000-000000000042"]}),
            json!({"gateway_port": ["set", []], "tag": 0}),
            json!({"options": ["map", [["requested-chassis", "host-a"], ["x", "y"]]]}),
            json!({"options": ["map", [["requested-chassis", "host-b"]]],
                   "external_ids": ["map", [["neutron:network_name", "net1"]]]}),
            json!({"options": ["set", ["requested-chassis"]], "external_ids": "net1"}),
        ];
        for c in &conditions {
            let indexed = Clauses::of(vec![c.clone()]);
            for (i, r) in rows.iter().enumerate() {
                let row = Row::from_wire(r).unwrap();
                for uuid in [Uuid(1), Uuid(2)] {
                    assert_eq!(
                        indexed.match_any(uuid, &row),
                        c.matches(uuid, &row),
                        "{c:?} on row {i} {r}"
                    );
                }
            }
        }
        // Together they are ORed.
        let together = Clauses::of(conditions[1..].to_vec());
        assert_eq!(
            (
                together.eq_str.len(),
                together.eq_uuid.len(),
                together.includes_pair.len()
            ),
            (2, 1, 2),
            "the string, uuid and pair clauses are indexed"
        );
        assert_eq!(
            together.other.len(),
            3,
            "_uuid, an empty map, an integer (false keeps nothing)"
        );
        for r in &rows {
            let row = Row::from_wire(r).unwrap();
            let any = conditions[1..].iter().any(|c| c.matches(Uuid(9), &row));
            assert_eq!(together.match_any(Uuid(9), &row), any, "{r}");
        }
    }
}
