//! The option registry: every section and option the agent reads, with
//! upstream's type, choices, regex and deprecated names, plus the options
//! that oslo libraries own (known, so never reported as unknown).
//!
//! The registry is data, not code: the loader, the validator, the renderer
//! and the documentation table all walk the same list, so an option cannot
//! be known to one and missing from another.

/// The value type of an option, as oslo.config types it, plus the agent's
/// extra checks for values that later reach device names, `ip` or `vtysh`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `StrOpt` without constraints.
    Str,
    /// `StrOpt` with `choices`.
    Choice(&'static [&'static str]),
    /// `StrOpt` with `regex=^(tcp|ssl|unix):.+` (an OVSDB connection string;
    /// a comma-separated list of remotes passes, as upstream).
    Connection,
    /// `IntOpt`/`PortOpt`: an integer within `min..=max`.
    Int { min: i64, max: i64 },
    /// `BoolOpt`: true/false, yes/no, on/off, 1/0, any case.
    Bool,
    /// `ListOpt` of strings: comma-separated, each item trimmed.
    List,
    /// `IPOpt`: an IPv4 or IPv6 address.
    Ip,
    /// `bgp_AS`: a string upstream; here also a valid AS number, plain
    /// (1..=4294967295) or asdot (`X.Y`).
    AsNumber,
    /// `bgp_router_id`: a string upstream; here an IPv4 address when non-empty.
    RouterId,
    /// `bgp_vrf_table_id`: an integer upstream; here 1..=4294967295 and not
    /// one of the kernel's reserved tables (253 default, 254 main, 255 local).
    TableId,
    /// `bgp_nic`, `bgp_vrf`, `evpn_nic`: a string upstream; here a valid
    /// Linux interface name. When `optional`, empty means unset (upstream
    /// tests the option for truth, so `evpn_nic =` is the same as not set).
    DevName { optional: bool },
    /// `external_nics`: a list of Linux interface names.
    DevNameList,
    /// `peer_ips`: a list of IP addresses.
    IpList,
    /// `provider_networks_pool_prefixes`: a list of CIDR prefixes.
    CidrList,
    /// `metrics_listen`: `IP:PORT` (IPv6 in brackets), port 1..=65535;
    /// empty means unset. No host name: nothing is resolved at start-up.
    ListenAddr,
}

impl Kind {
    /// The type name shown in docs and `config --format text` comments,
    /// oslo's wording where oslo has one.
    pub fn describe(&self) -> String {
        match self {
            Kind::Str => "string".into(),
            Kind::Choice(c) => format!("string, one of: {}", c.join(", ")),
            Kind::Connection => "string matching ^(tcp|ssl|unix):.+".into(),
            Kind::Int { min, max } if *max == 65535 => format!("port ({min}..=65535)"),
            Kind::Int { min, max } if *max == i64::MAX => format!("integer (>= {min})"),
            Kind::Int { min, max } => format!("integer ({min}..={max})"),
            Kind::Bool => "boolean".into(),
            Kind::List => "list".into(),
            Kind::Ip => "IP address".into(),
            Kind::AsNumber => "AS number (plain or asdot)".into(),
            Kind::RouterId => "IPv4 address".into(),
            Kind::TableId => "routing table id (1..=4294967295, not 253-255)".into(),
            Kind::DevName { .. } => "interface name".into(),
            Kind::DevNameList => "list of interface names".into(),
            Kind::IpList => "list of IP addresses".into(),
            Kind::CidrList => "list of CIDR prefixes".into(),
            Kind::ListenAddr => "IP:PORT (IPv6 as [addr]:port)".into(),
        }
    }
}

/// One option the agent reads.
#[derive(Clone, Copy, Debug)]
pub struct OptSpec {
    /// The section upstream registers it in (`DEFAULT`, `agent`, `ovn`, `local_ovn_cluster`).
    pub section: &'static str,
    /// The option name exactly as upstream spells it (`bgp_AS`).
    pub name: &'static str,
    /// How its text is converted and checked.
    pub kind: Kind,
    /// Older `(section, name)` pairs oslo still reads for this option.
    pub deprecated: &'static [(&'static str, &'static str)],
    /// Where the agent is stricter than upstream, why (shown in the docs).
    pub stricter: Option<&'static str>,
    /// `Some(why)` for an option of this agent's own, which upstream does not
    /// have (so it is not in upstream's sample; the Python agent ignores it
    /// in a shared file). Its default keeps upstream's behaviour or bounds
    /// what upstream leaves unbounded.
    pub agent_only: Option<&'static str>,
    /// `Some(why)` for an option the agent accepts and does not act on:
    /// setting it to anything but its default logs a warning at start
    /// with this reason. Every other option is read by the agent (a test
    /// scans the crates for each one's field).
    pub ignored: Option<&'static str>,
}

const fn opt(section: &'static str, name: &'static str, kind: Kind) -> OptSpec {
    OptSpec {
        section,
        name,
        kind,
        deprecated: &[],
        stricter: None,
        agent_only: None,
        ignored: None,
    }
}

const fn ignored(mut o: OptSpec, why: &'static str) -> OptSpec {
    o.ignored = Some(why);
    o
}

const fn agent_only(mut o: OptSpec, why: &'static str) -> OptSpec {
    o.agent_only = Some(why);
    o
}

const fn strict(mut o: OptSpec, why: &'static str) -> OptSpec {
    o.stricter = Some(why);
    o
}

const fn deprecated(mut o: OptSpec, names: &'static [(&'static str, &'static str)]) -> OptSpec {
    o.deprecated = names;
    o
}

/// The longest interval or timeout an option takes, in seconds: 365 days.
/// Python's int and oslo's `IntOpt` have no bound, but the agent's timers
/// add the period to the monotonic clock, which a value near the integer
/// limit overflows (the daemon panicked at start); a year is longer than
/// any period an operator means, and keeps "practically never" expressible.
pub const MAX_DURATION_S: i64 = 365 * 24 * 3600;
/// A period or a timeout in whole seconds, 1 s to [`MAX_DURATION_S`].
/// Zero is refused: a zero period reconciles without pause (upstream's
/// looping call spins) and a zero timeout fails every wait at once.
const DURATION: Kind = Kind::Int {
    min: 1,
    max: MAX_DURATION_S,
};
/// Why [`DURATION`] is stricter than upstream (shown in the docs).
const DURATION_STRICTER: &str =
    "1..=31536000 (365 days): 0 would run without pause or fail at once, a value near the integer limit overflows the timer; negative values refused";
/// A UDP port the agent configures: 0 would let the kernel pick its own
/// default (VXLAN: 8472), not the port the operator asked for.
const UDP_PORT: Kind = Kind::Int { min: 1, max: 65535 };
/// A deadline in whole seconds: at least one, at most an hour.
const DEADLINE: Kind = Kind::Int { min: 1, max: 3600 };

/// Every option the agent reads, in upstream's sample order (the oslo.log
/// options the agent honours first, as oslo.log registers them first).
pub static OPTIONS: &[OptSpec] = &[
    // oslo.log, honoured.
    opt("DEFAULT", "debug", Kind::Bool),
    deprecated(
        opt("DEFAULT", "log_file", Kind::Str),
        &[("DEFAULT", "logfile")],
    ),
    deprecated(
        opt("DEFAULT", "log_dir", Kind::Str),
        &[("DEFAULT", "logdir")],
    ),
    opt("DEFAULT", "use_json", Kind::Bool),
    opt("DEFAULT", "use_stderr", Kind::Bool),
    // ovnbgpagent [DEFAULT].
    strict(opt("DEFAULT", "reconcile_interval", DURATION), DURATION_STRICTER),
    strict(opt("DEFAULT", "frr_reconcile_interval", DURATION), DURATION_STRICTER),
    opt("DEFAULT", "expose_tenant_networks", Kind::Bool),
    opt(
        "DEFAULT",
        "advertisement_method_tenant_networks",
        Kind::Choice(&["host", "subnet"]),
    ),
    opt(
        "DEFAULT",
        "require_snat_disabled_for_tenant_networks",
        Kind::Bool,
    ),
    opt("DEFAULT", "expose_ipv6_gua_tenant_networks", Kind::Bool),
    opt(
        "DEFAULT",
        "driver",
        Kind::Choice(&[
            "ovn_bgp_driver",
            "ovn_evpn_driver",
            "ovn_stretched_l2_bgp_driver",
            "nb_ovn_bgp_driver",
        ]),
    ),
    opt("DEFAULT", "ovsdb_connection", Kind::Connection),
    strict(opt("DEFAULT", "ovsdb_connection_timeout", DURATION), DURATION_STRICTER),
    strict(
        opt("DEFAULT", "bgp_AS", Kind::AsNumber),
        "must be an AS number (1..=4294967295 or asdot X.Y): it is written into FRR's `router bgp`",
    ),
    strict(
        opt("DEFAULT", "bgp_router_id", Kind::RouterId),
        "must be an IPv4 address when non-empty: it is written into FRR's `bgp router-id`",
    ),
    opt("DEFAULT", "evpn_local_ip", Kind::Ip),
    strict(
        opt("DEFAULT", "evpn_nic", Kind::DevName { optional: true }),
        "must be a valid interface name when non-empty",
    ),
    strict(
        opt("DEFAULT", "evpn_udp_dstport", UDP_PORT),
        "1..=65535: 0 would let the kernel choose the VXLAN port (8472), not the one asked for",
    ),
    ignored(
        opt("DEFAULT", "clear_vrf_routes_on_startup", Kind::Bool),
        "every reconcile, the start-up one first, already deletes the routes of the bgp_vrf_table_id table that the desired state does not declare (all but FRR's proto 186 and the kernel's own, docs/ownership.md); upstream's flush also deleted the routes it re-added a moment later, which the agent keeps in place",
    ),
    opt("DEFAULT", "delete_vrf_on_disconnect", Kind::Bool),
    strict(
        opt("DEFAULT", "bgp_nic", Kind::DevName { optional: false }),
        "must be a valid interface name (1-15 bytes, no '/', ':' or space)",
    ),
    strict(
        opt("DEFAULT", "bgp_vrf", Kind::DevName { optional: false }),
        "must be a valid interface name (1-15 bytes, no '/', ':' or space)",
    ),
    strict(
        opt("DEFAULT", "bgp_vrf_table_id", Kind::TableId),
        "1..=4294967295 and not a kernel-reserved table (253 default, 254 main, 255 local)",
    ),
    opt("DEFAULT", "address_scopes", Kind::List),
    opt(
        "DEFAULT",
        "exposing_method",
        Kind::Choice(&["underlay", "l2vni", "vrf", "dynamic", "ovn"]),
    ),
    // The agent's own [DEFAULT] options.
    agent_only(
        opt("DEFAULT", "vtysh_timeout", DEADLINE),
        "seconds a `vtysh` run may take before its process group is killed and the op or read counts as failed",
    ),
    agent_only(
        opt("DEFAULT", "ovs_ofctl_timeout", DEADLINE),
        "seconds an `ovs-ofctl` run may take before its process group is killed and the op or read counts as failed",
    ),
    agent_only(
        opt("DEFAULT", "ovsdb_max_update_mib", Kind::Int { min: 1, max: 65536 }),
        "MiB the decoded rows of one OVSDB update, the initial dump included, may take before the session is dropped as a hostile server's (estimated per row; the wire size may be 1.6 times it, at least 256 MiB); the default holds a 100k-port NB dump with 24 % headroom: raise it with the pod's memory limit for a bigger database monitored whole (the SB drivers, `ovn_nb_monitor_all = true`; docs/ovsdb.md)",
    ),
    agent_only(
        opt("DEFAULT", "mass_withdrawal_grace", Kind::Int { min: 0, max: 86400 }),
        "seconds the daemon holds the withdrawals of a reconcile that would withdraw most of the node's prefixes while the database lost most of its rows (docs/reliability.md); 0 turns the guard off",
    ),
    agent_only(
        opt("DEFAULT", "mass_withdrawal_percent", Kind::Int { min: 1, max: 100 }),
        "what `most` means for `mass_withdrawal_grace`: the share, in percent, of the announced prefixes withdrawn and of the database rows lost",
    ),
    agent_only(
        opt("DEFAULT", "announce_with", Kind::Choice(&["address", "route"])),
        "how an exposed IP is put into BGP: `address` (default, upstream's way) a /32 or /128 address on `bgp_nic`; `route` a host route in the `bgp_vrf` table on `bgp_nic` (proto 44), with `redistribute kernel` in the VRF's BGP instance (docs/desired-state.md); ignored by the EVPN and stretched-L2 drivers",
    ),
    agent_only(
        opt("DEFAULT", "metrics_listen", Kind::ListenAddr),
        "where the daemon serves Prometheus metrics (`/metrics`), its probes (`/healthz`, `/readyz`) and `/status` (what `ovn-bgp-agent status` asks), e.g. `127.0.0.1:9476` (docs/operations.md); unset or empty: no listener",
    ),
    agent_only(
        opt("DEFAULT", "ovn_nb_monitor_all", Kind::Bool),
        "`false` (default): the NB driver monitors only the Logical_Switch_Port and NAT rows of OVN_Northbound that can matter on this node, by conditions that follow the state (like ovn-controller's `ovn-monitor-all`; docs/ovsdb.md, \"Conditional monitoring\"); `true`: every one of them, as the Python agent does (docs/migration.md); not read by the other drivers, which monitor OVN_Southbound whole",
    ),
    agent_only(
        opt("DEFAULT", "state_dir", Kind::Str),
        "a directory where the agent keeps its OVN_Northbound cache between runs (`OVN_Northbound.cache`, written at shutdown and every 60 s while it changes), so that a restart asks the NB only for what changed since (`monitor_cond_since`) instead of reading it whole; a missing, stale or unusable file costs a full read, never a wrong state (docs/ovsdb.md, \"Restarts that resume\"); unset or empty: nothing is kept",
    ),
    // [agent].
    ignored(
        opt("agent", "root_helper", Kind::Str),
        "the agent runs vtysh, ovs-vsctl, ovs-ofctl and netlink itself, with the privileges it was started with, never through a root helper",
    ),
    // [ovn]: every option is also read from [DEFAULT] (deprecated_group).
    deprecated(
        opt("ovn", "ovn_sb_private_key", Kind::Str),
        &[("DEFAULT", "ovn_sb_private_key")],
    ),
    deprecated(
        opt("ovn", "ovn_sb_certificate", Kind::Str),
        &[("DEFAULT", "ovn_sb_certificate")],
    ),
    deprecated(
        opt("ovn", "ovn_sb_ca_cert", Kind::Str),
        &[("DEFAULT", "ovn_sb_ca_cert")],
    ),
    deprecated(
        opt("ovn", "ovn_sb_connection", Kind::Connection),
        &[("DEFAULT", "ovn_sb_connection")],
    ),
    deprecated(
        opt("ovn", "ovn_nb_private_key", Kind::Str),
        &[("DEFAULT", "ovn_nb_private_key")],
    ),
    deprecated(
        opt("ovn", "ovn_nb_certificate", Kind::Str),
        &[("DEFAULT", "ovn_nb_certificate")],
    ),
    deprecated(
        opt("ovn", "ovn_nb_ca_cert", Kind::Str),
        &[("DEFAULT", "ovn_nb_ca_cert")],
    ),
    deprecated(
        opt("ovn", "ovn_nb_connection", Kind::Connection),
        &[("DEFAULT", "ovn_nb_connection")],
    ),
    // [local_ovn_cluster].
    opt("local_ovn_cluster", "ovn_nb_connection", Kind::Connection),
    strict(
        opt("local_ovn_cluster", "external_nics", Kind::DevNameList),
        "each item must be a valid interface name",
    ),
    strict(
        opt("local_ovn_cluster", "peer_ips", Kind::IpList),
        "each item must be an IP address",
    ),
    strict(
        opt(
            "local_ovn_cluster",
            "provider_networks_pool_prefixes",
            Kind::CidrList,
        ),
        "each item must be a CIDR prefix",
    ),
    opt("local_ovn_cluster", "bgp_chassis_id", Kind::Str),
];

/// The sections the agent's own options live in, in rendering order.
pub const AGENT_SECTIONS: &[&str] = &["DEFAULT", "agent", "ovn", "local_ovn_cluster"];

/// `[DEFAULT]` options that oslo libraries register but this agent does
/// not act on. Setting one is not an error (upstream accepts the file),
/// but the operator is told once that it has no effect here.
/// Each entry is the option name and its deprecated names.
pub static IGNORED_DEFAULT_OPTIONS: &[(&str, &[&str])] = &[
    // oslo.log
    ("log_config_append", &["log_config"]),
    ("log_date_format", &[]),
    ("use_syslog", &[]),
    ("use_journal", &[]),
    ("syslog_log_facility", &[]),
    ("log_color", &[]),
    ("log_rotate_interval", &[]),
    ("log_rotate_interval_type", &[]),
    ("max_logfile_count", &[]),
    ("max_logfile_size_mb", &[]),
    ("log_rotation_type", &[]),
    ("logging_context_format_string", &[]),
    ("logging_default_format_string", &[]),
    ("logging_debug_format_suffix", &[]),
    ("logging_exception_prefix", &[]),
    ("logging_user_identity_format", &[]),
    ("default_log_levels", &[]),
    ("publish_errors", &[]),
    ("instance_format", &[]),
    ("instance_uuid_format", &[]),
    ("rate_limit_interval", &[]),
    ("rate_limit_burst", &[]),
    ("rate_limit_except_level", &[]),
    ("fatal_deprecations", &[]),
    // oslo.service (registered when upstream launches its service)
    ("graceful_shutdown_timeout", &[]),
    ("log_options", &[]),
    ("backdoor_port", &[]),
    ("backdoor_socket", &[]),
    ("run_external_periodic_tasks", &[]),
    // oslo.config itself
    ("config_source", &[]),
];

/// Options of `[oslo_concurrency]`.
const OSLO_CONCURRENCY: &[&str] = &["disable_process_locking", "lock_path"];
/// Options of every oslo.privsep context section (`[privsep]`,
/// `[privsep_ovs_vsctl]`, `[privsep_vtysh]`, any `[privsep_*]`).
const PRIVSEP: &[&str] = &[
    "user",
    "group",
    "capabilities",
    "thread_pool_size",
    "helper_command",
    "logger_name",
    "log_daemon_traceback",
];

/// The options of a section that an oslo library owns, or `None` when the
/// section is not oslo's. These sections are accepted silently: the agent
/// does not use privsep or oslo locks, and upstream accepts them.
pub fn oslo_section_options(section: &str) -> Option<&'static [&'static str]> {
    if section == "oslo_concurrency" {
        Some(OSLO_CONCURRENCY)
    } else if section == "privsep" || section.starts_with("privsep_") {
        Some(PRIVSEP)
    } else {
        None
    }
}

/// The option registered as `[section] name`.
pub fn find(section: &str, name: &str) -> Option<&'static OptSpec> {
    OPTIONS
        .iter()
        .find(|o| o.section == section && o.name == name)
}

/// The option that `[section] name` sets: the option itself, or the one
/// it is a deprecated alias of (then the flag is true).
pub fn resolve(section: &str, name: &str) -> Option<(&'static OptSpec, bool)> {
    if let Some(o) = find(section, name) {
        return Some((o, false));
    }
    OPTIONS
        .iter()
        .find(|o| o.deprecated.iter().any(|&(s, n)| s == section && n == name))
        .map(|o| (o, true))
}

/// The canonical name of an ignored oslo `[DEFAULT]` option, given its
/// name or one of its deprecated names.
pub fn ignored_default_option(name: &str) -> Option<&'static str> {
    IGNORED_DEFAULT_OPTIONS
        .iter()
        .find(|(n, old)| *n == name || old.contains(&name))
        .map(|(n, _)| *n)
}

/// oslo's group-name normalisation: `DEFAULT` is kept as is, every other
/// section name is case-insensitive (lowercased).
pub fn normalize_section(section: &str) -> String {
    if section == "DEFAULT" {
        section.to_string()
    } else {
        section.to_lowercase()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_is_registered_once() {
        for (i, a) in OPTIONS.iter().enumerate() {
            for b in &OPTIONS[i + 1..] {
                assert!(
                    !(a.section == b.section && a.name == b.name),
                    "[{}] {} registered twice",
                    a.section,
                    a.name
                );
            }
            assert!(AGENT_SECTIONS.contains(&a.section));
        }
    }

    #[test]
    fn deprecated_default_name_resolves_to_ovn_option() {
        let (o, old) = resolve("DEFAULT", "ovn_sb_connection").unwrap();
        assert_eq!((o.section, o.name, old), ("ovn", "ovn_sb_connection", true));
        let (o, old) = resolve("DEFAULT", "logfile").unwrap();
        assert_eq!((o.section, o.name, old), ("DEFAULT", "log_file", true));
        assert!(
            resolve("DEFAULT", "bgp_as").is_none(),
            "option names are case-sensitive"
        );
    }

    #[test]
    fn the_duration_note_names_the_bound_it_documents() {
        assert!(DURATION_STRICTER.starts_with(&format!("1..={MAX_DURATION_S} (365 days)")));
        assert_eq!(
            DURATION,
            Kind::Int {
                min: 1,
                max: MAX_DURATION_S
            }
        );
    }

    #[test]
    fn oslo_sections_are_recognised() {
        assert!(oslo_section_options("privsep_vtysh").is_some());
        assert!(oslo_section_options("oslo_concurrency").is_some());
        assert!(oslo_section_options("ovn").is_none());
        assert_eq!(
            ignored_default_option("log_config"),
            Some("log_config_append")
        );
    }
}
