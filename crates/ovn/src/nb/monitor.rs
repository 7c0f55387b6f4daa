//! What the NB driver monitors of OVN_Northbound: the tables, the columns
//! and the map keys its parsers (the parent module) and the NB event
//! predicates (`obgp-events`) read, and nothing else.

use obgp_ovsdb_data::MonitorSpec;

use crate::neutron::{dhcp_option, key};

/// The OVN_Northbound tables and columns the NB driver monitors: every
/// column a parser of `nb` reads, plus every column the NB event
/// predicates (`obgp-events`) read. The server sends nothing else, so
/// anything read outside this list would silently hold its default; the
/// tests of `obgp-ovn` and of `obgp-events` fail if a reader strays.
///
/// Leaving out the columns the agent never reads (`port_security`,
/// `enabled`, `dynamic_addresses`, DHCP lease options, ...) shrinks the initial
/// dump the server has to build and the cache the agent keeps, and spares
/// the agent the updates of those columns.
pub const MONITORED_COLUMNS: &[(&str, &[&str])] = &[
    ("Logical_Switch", &["name", "ports", "external_ids"]),
    (
        "Logical_Switch_Port",
        &[
            "name",
            "type",
            "up",
            "addresses",
            "external_ids",
            "options",
            "tag",
            "dhcpv4_options",
            "dhcpv6_options",
        ],
    ),
    ("Logical_Router", &["name", "ports", "nat", "load_balancer"]),
    (
        "Logical_Router_Port",
        &["name", "mac", "networks", "external_ids", "status"],
    ),
    (
        "NAT",
        &[
            "type",
            "external_ip",
            "external_mac",
            "logical_ip",
            "logical_port",
            "gateway_port",
            "external_ids",
        ],
    ),
    ("Load_Balancer", &["name", "vips", "external_ids"]),
    ("NB_Global", &["external_ids"]),
    // The EVPN vrf mode's gateway and router-advertisement inputs.
    ("DHCP_Options", &["cidr", "options"]),
];

/// The `external_ids` keys the agent reads on any NB row: the parsers'
/// (`key::*` in `nb`) and the NB event predicates' and their helpers'
/// (`obgp-events`). One list for every table because the predicates'
/// helpers read rows of several tables.
pub const EXTERNAL_IDS_READ: &[&str] = &[
    key::CIDRS,
    key::NETWORK_NAME,
    key::ROUTER_NAME,
    key::DEVICE_ID,
    key::DEVICE_OWNER,
    key::HOST_ID,
    key::PORT_FIP,
    key::FIP_NETWORK_ID,
    key::LB_VIP,
    key::LB_VIP_FIP,
    key::LB_VIP_PORT_ID,
    key::LB_LR_REF,
    key::FIP_DISTRIBUTED,
    key::ADDR_SCOPE4,
    key::ADDR_SCOPE6,
    key::EVPN_TYPE,
    key::EVPN_VNI,
    key::EVPN_AS,
    key::EVPN_RD,
    key::EVPN_RT,
    key::EVPN_IT,
    key::EVPN_ET,
];

/// The map columns of which the NB driver keeps only some keys: (table,
/// column, keys). Neutron writes 14 `external_ids` on a VM port and the
/// agent reads 7 of them; the others (project, security groups, revision,
/// MTU, vnic type...) are dropped while the monitor reply is decoded, never
/// allocated. As with [`MONITORED_COLUMNS`], a key read outside this list
/// would silently be absent: the tests of `obgp-ovn` and of `obgp-events`
/// fail if a reader strays. A map column not listed here is kept whole.
pub const MONITORED_KEYS: &[(&str, &str, &[&str])] = &[
    ("Logical_Switch", "external_ids", EXTERNAL_IDS_READ),
    ("Logical_Switch_Port", "external_ids", EXTERNAL_IDS_READ),
    (
        "Logical_Switch_Port",
        "options",
        &[
            key::REQUESTED_CHASSIS,
            key::LOCALNET_NETWORK_NAME,
            // Read by no parser, but named by a port condition
            // (`LspInterest::conditions`): the full monitor evaluates the
            // conditions in-process, on the kept keys.
            key::ACTIVATION_STRATEGY,
        ],
    ),
    ("Logical_Router_Port", "external_ids", EXTERNAL_IDS_READ),
    ("NAT", "external_ids", EXTERNAL_IDS_READ),
    ("Load_Balancer", "external_ids", EXTERNAL_IDS_READ),
    ("NB_Global", "external_ids", EXTERNAL_IDS_READ),
    ("DHCP_Options", "options", dhcp_option::READ),
];

/// The kept keys of `table`.`column`, `None` when the column is kept whole.
pub fn monitored_keys(table: &str, column: &str) -> Option<&'static [&'static str]> {
    MONITORED_KEYS
        .iter()
        .find(|(t, c, _)| *t == table && *c == column)
        .map(|(_, _, keys)| *keys)
}

/// The NB driver's monitor: [`MONITORED_COLUMNS`] of every table, all rows,
/// map columns projected to [`MONITORED_KEYS`].
pub fn monitor_spec() -> MonitorSpec {
    crate::monitor::spec(MONITORED_COLUMNS, MONITORED_KEYS)
}

/// The monitored columns of `table` (empty for a table not monitored).
pub fn monitored_columns(table: &str) -> &'static [&'static str] {
    crate::monitor::columns_of(MONITORED_COLUMNS, table)
}
