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

use obgp_ovsdb_data::{Condition, Row, Uuid};

use crate::nb::{LogicalSwitchPort, Nat};
use crate::nb_conditions::LspInterest;
use crate::neutron::{key, requested_chassis};
use crate::snapshot::RowSource;

/// The rows of Logical_Switch_Port and NAT an [`LspInterest`] selects; the
/// other tables pass whole.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NbRowFilter {
    ports: Vec<Condition>,
    nats: Vec<Condition>,
    /// This chassis: a port whose `requested-chassis` lists it is kept.
    chassis: Option<String>,
}

impl NbRowFilter {
    /// The tables the filter selects rows of.
    pub const TABLES: [&'static str; 2] = [LogicalSwitchPort::TABLE, Nat::TABLE];

    /// The rows `interest`'s monitor conditions select.
    pub fn of(interest: &LspInterest) -> NbRowFilter {
        NbRowFilter {
            ports: interest.conditions(),
            nats: interest.nat_conditions(),
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
                self.ports.iter().any(|c| c.matches(uuid, row)) || self.lists_this_chassis(row)
            }
            Nat::TABLE => self.nats.iter().any(|c| c.matches(uuid, row)),
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
        assert!(!filter.ports.iter().any(|c| c.matches(u, &migrating)));
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
}
