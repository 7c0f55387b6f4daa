//! What the SB drivers monitor of OVN_Southbound: the tables and columns
//! their parsers (the parent module and the live SB index) and the SB
//! event predicates (`obgp-events`) read, and nothing else.

use obgp_ovsdb_data::MonitorSpec;

/// The OVN_Southbound tables and columns the SB drivers monitor. As for
/// the NB list, a column read outside it would silently hold its default:
/// the tests of `obgp-ovn` (parsers) and of `obgp-events` (predicates) fail
/// if a reader strays.
pub const MONITORED_COLUMNS: &[(&str, &[&str])] = &[
    (
        "Port_Binding",
        &[
            "logical_port",
            "type",
            "datapath",
            "chassis",
            "up",
            "mac",
            "nat_addresses",
            "options",
            "tag",
            "external_ids",
        ],
    ),
    ("Chassis", &["name"]),
    (
        "Load_Balancer",
        &[
            "name",
            "datapaths",
            "datapath_group",
            "ls_datapath_group",
            "lr_datapath_group",
        ],
    ),
    ("Logical_DP_Group", &["datapaths"]),
];

/// The SB drivers' monitor: [`MONITORED_COLUMNS`] of every table, all rows.
pub fn monitor_spec() -> MonitorSpec {
    crate::monitor::spec(MONITORED_COLUMNS, &[])
}

/// The monitored columns of `table` (empty for a table not monitored).
pub fn monitored_columns(table: &str) -> &'static [&'static str] {
    crate::monitor::columns_of(MONITORED_COLUMNS, table)
}
