//! `[DEFAULT] ovn_nb_monitor_all = true`: the server sends every
//! Logical_Switch_Port and NAT row and the cache holds them all, but the
//! typed snapshot `desired_state` reads keeps only those this node needs,
//! selected in-process by the very conditions a conditional monitor sends
//! to ovsdb-server ([`LspInterest::conditions`],
//! [`LspInterest::nat_conditions`], evaluated by [`Condition::matches`]).
//! One rule of which rows a node needs, two places it is applied; the
//! conditional oracle's proof (the desired state from the selected rows
//! equals the one from every row) holds for both.

use obgp_ovsdb_data::{Condition, Row, Uuid};

use crate::nb::{LogicalSwitchPort, Nat};
use crate::nb_conditions::LspInterest;
use crate::snapshot::RowSource;

/// The rows of Logical_Switch_Port and NAT an [`LspInterest`] selects; the
/// other tables pass whole.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NbRowFilter {
    ports: Vec<Condition>,
    nats: Vec<Condition>,
}

impl NbRowFilter {
    /// The tables the filter selects rows of.
    pub const TABLES: [&'static str; 2] = [LogicalSwitchPort::TABLE, Nat::TABLE];

    /// The rows `interest`'s monitor conditions select.
    pub fn of(interest: &LspInterest) -> NbRowFilter {
        NbRowFilter {
            ports: interest.conditions(),
            nats: interest.nat_conditions(),
        }
    }

    /// Whether the filter selects rows of `table` (else it keeps them all).
    pub fn filters(table: &str) -> bool {
        Self::TABLES.contains(&table)
    }

    /// Whether row `uuid` of `table` is kept: it matches one of the
    /// table's conditions, as ovsdb-server ORs them.
    pub fn keeps(&self, table: &str, uuid: Uuid, row: &Row) -> bool {
        let conditions = match table {
            LogicalSwitchPort::TABLE => &self.ports,
            Nat::TABLE => &self.nats,
            _ => return true,
        };
        conditions.iter().any(|c| c.matches(uuid, row))
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
