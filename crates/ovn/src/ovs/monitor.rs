//! What every driver monitors of the local Open_vSwitch database: this
//! chassis's identity, its bridge mappings, the bridges and their ports
//! (the parent module's [`LocalOvs`](super::LocalOvs)), and the interfaces'
//! OpenFlow port numbers (the controller's `ofports`).

use obgp_ovsdb_data::MonitorSpec;

/// The Open_vSwitch tables and columns monitored. Interface statistics are
/// left out: they change every few seconds and would wake the agent for
/// nothing.
pub const MONITORED_COLUMNS: &[(&str, &[&str])] = &[
    ("Open_vSwitch", &["external_ids", "bridges"]),
    ("Bridge", &["name", "ports"]),
    ("Port", &["name", "interfaces"]),
    ("Interface", &["name", "type", "options", "ofport"]),
];

/// The local OVS monitor: [`MONITORED_COLUMNS`] of every table, all rows.
pub fn monitor_spec() -> MonitorSpec {
    crate::monitor::spec(MONITORED_COLUMNS, &[])
}

/// The monitored columns of `table` (empty for a table not monitored).
pub fn monitored_columns(table: &str) -> &'static [&'static str] {
    crate::monitor::columns_of(MONITORED_COLUMNS, table)
}
