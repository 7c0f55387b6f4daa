//! What every driver monitors of the local Open_vSwitch database: this
//! chassis's identity, its bridge mappings, the bridges and their ports
//! (the parent module's [`LocalOvs`](super::LocalOvs)), the interfaces'
//! OpenFlow port numbers (the controller's `ofports`) and the logical
//! ports plugged here (`external_ids:iface-id`, which the NB driver's
//! conditional monitor asks for).

use obgp_ovsdb_data::MonitorSpec;

/// The Open_vSwitch tables and columns monitored. Interface statistics are
/// left out: they change every few seconds and would wake the agent for
/// nothing.
pub const MONITORED_COLUMNS: &[(&str, &[&str])] = &[
    ("Open_vSwitch", &["external_ids", "bridges"]),
    ("Bridge", &["name", "ports"]),
    ("Port", &["name", "interfaces"]),
    (
        "Interface",
        &["name", "type", "options", "ofport", "external_ids"],
    ),
];

/// The map columns of which only some keys are kept: of an Interface's
/// `external_ids` only `iface-id` (ovn-controller rewrites `ovn-installed`
/// and Nova `iface-status`, which would wake the agent for nothing).
pub const MONITORED_KEYS: &[(&str, &str, &[&str])] =
    &[("Interface", "external_ids", &[super::IFACE_ID])];

/// The local OVS monitor: [`MONITORED_COLUMNS`] of every table, all rows,
/// maps projected to [`MONITORED_KEYS`].
pub fn monitor_spec() -> MonitorSpec {
    crate::monitor::spec(MONITORED_COLUMNS, MONITORED_KEYS)
}

/// The monitored columns of `table` (empty for a table not monitored).
pub fn monitored_columns(table: &str) -> &'static [&'static str] {
    crate::monitor::columns_of(MONITORED_COLUMNS, table)
}
