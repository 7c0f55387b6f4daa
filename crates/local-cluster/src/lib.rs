//! The node-local OVN Northbound database of `exposing_method = ovn`.
//!
//! The agent's rows there are desired state like everything else it
//! writes: [`LocalClusterRows`] says which rows must exist (computed by
//! `obgp-desired`), [`plan`] diffs them against the rows observed in the
//! local NB (a table → uuid → row map, as the ovsdb crate's cache holds
//! them) into the operations of one `transact`, and [`apply_in_memory`]
//! applies such operations to observed rows in memory (tests, `plan`
//! previews). Nothing here does I/O.
//!
//! Identity is the row's natural key ([`RowKey`]: a name, or the columns
//! OVN indexes), never its uuid, so a restart of the agent finds its rows
//! again and changes nothing. Ownership ([`rows::OWNER_KEY`]) keeps the
//! planner off rows someone else created: docs/ownership.md, "The
//! node-local OVN NB".

pub mod apply;
pub mod plan;
pub mod rows;

pub use apply::{apply_in_memory, ApplyError};
pub use plan::{plan, LocalClusterPlan, NbOp, Observed, Target};
pub use rows::{LocalClusterRows, LocalRow, NbTable, RowKey, Value, OWNER_KEY, OWNER_VALUE};

/// What the local-NB monitor must receive: every row and column of the
/// nine tables the agent writes (`BFD` included: upstream's IDL leaves it
/// out, D14). The planner reads the key columns, the agent's columns, the
/// children sets and `external_ids`, so nothing is projected away.
pub fn monitor_spec() -> obgp_ovsdb_data::MonitorSpec {
    obgp_ovsdb_data::MonitorSpec::all(NbTable::ALL.map(NbTable::name))
}
