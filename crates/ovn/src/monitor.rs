//! A monitor request built from a database's monitored lists: the
//! `monitor` module next to each database's parsers (`nb`, `sb`, `ovs`)
//! says what it reads; this only turns those lists into a [`MonitorSpec`].

use obgp_ovsdb_data::{MonitorSpec, TableMonitor};

/// Every table of `columns`, all rows, its columns only, and the map
/// columns that `keys` names projected to those keys.
pub(crate) fn spec(columns: &[(&str, &[&str])], keys: &[(&str, &str, &[&str])]) -> MonitorSpec {
    let mut spec = MonitorSpec::default();
    for (table, cols) in columns {
        let map_keys = keys
            .iter()
            .filter(|(t, _, _)| t == table)
            .map(|(_, c, keys)| (c.to_string(), keys.iter().map(|k| k.to_string()).collect()))
            .collect();
        spec = spec.table(
            table,
            TableMonitor {
                columns: Some(cols.iter().map(|c| c.to_string()).collect()),
                conditions: None,
                map_keys,
            },
        );
    }
    spec
}

/// The columns of `table` in `columns` (empty for a table not listed).
pub(crate) fn columns_of(
    columns: &'static [(&'static str, &'static [&'static str])],
    table: &str,
) -> &'static [&'static str] {
    columns
        .iter()
        .find(|(t, _)| *t == table)
        .map_or(&[], |(_, cols)| cols)
}
