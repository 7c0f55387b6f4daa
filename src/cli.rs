//! The command line: upstream's `--config-file`/`--config-dir` and oslo.log
//! flags, plus the subcommands of the Rust agent.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;

use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use obgp_config::{ConfigSource, Loader};
use obgp_controller::QueueConfig;
use obgp_node::KernelConfig;

const ABOUT: &str =
    "Per-node agent exposing OVN VM IPs, FIPs, LB VIPs and tenant subnets to a BGP fabric \
(Rust rewrite of openstack/ovn-bgp-agent, reading the same bgp-agent.conf).";

const LONG_ABOUT: &str =
    "Per-node agent exposing OVN VM IPs, FIPs, LB VIPs and tenant subnets to a BGP fabric \
(Rust rewrite of openstack/ovn-bgp-agent, reading the same bgp-agent.conf).

Without a subcommand, runs the agent daemon: a level-triggered reconciler that \
recomputes what must exist on this node from OVN on every OVSDB event that \
matters, every reconcile_interval and after every reconnect, and applies the \
difference. SIGTERM stops it after the op in flight and exits 0; routes stay.";

const AFTER_HELP: &str =
    "Configuration is read like oslo.config reads it upstream: every --config-file \
and --config-dir (its *.conf files sorted by name) in command-line order, later ones winning; \
without --config-file, the first bgp-agent.conf and ovn-bgp-agent.conf found in ~/.bgp-agent/, ~/, \
/etc/bgp-agent/, /etc/. Environment overrides: OVN_BGP_AGENT_<SECTION>__<OPTION>=value \
(e.g. OVN_BGP_AGENT_DEFAULT__DRIVER=nb_ovn_bgp_driver), over oslo's own OS_<SECTION>__<OPTION>.

Exit codes: 0 ok, 1 runtime failure, 2 invalid configuration or usage.";

/// The help heading of the options every command takes (configuration
/// and logging), shown apart from a subcommand's own options.
const GLOBAL: &str = "Global options";
/// The help heading of the options that say where the node is.
const NODE: &str = "Node options";
/// The help heading of the daemon's reconcile-loop options.
const DAEMON: &str = "Daemon options";

#[derive(Parser, Debug)]
#[command(name = "ovn-bgp-agent", version, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(flatten)]
    pub node: NodeArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Where the node is. Not in upstream (which always works on the host it runs
/// on): for tests, maintenance from a debug pod, and kernels without `dummy`.
#[derive(Args, Debug, Clone)]
pub struct NodeArgs {
    /// Work on this network namespace (`ip netns` name) instead of the agent's own.
    #[arg(long, value_name = "NAME", global = true, help_heading = NODE)]
    pub netns: Option<String>,

    /// The routing table names file.
    #[arg(
        long = "rt-tables",
        value_name = "PATH",
        global = true,
        default_value = KernelConfig::DEFAULT_RT_TABLES,
        help_heading = NODE
    )]
    pub rt_tables: PathBuf,

    /// FRR's vty socket directory (`vtysh --vty_socket`).
    #[arg(
        long = "vty-socket",
        value_name = "DIR",
        global = true,
        default_value = KernelConfig::DEFAULT_VTY_SOCKET,
        help_heading = NODE
    )]
    pub vty_socket: PathBuf,

    /// The link kind created for bgp-nic: `dummy`, or `ifb` on kernels without dummy.
    #[arg(
        long = "bgp-nic-kind",
        value_name = "KIND",
        global = true,
        default_value = KernelConfig::DUMMY_KINDS[0],
        value_parser = KernelConfig::DUMMY_KINDS,
        help_heading = NODE
    )]
    pub bgp_nic_kind: String,

    /// The node lock file: one agent per node (the daemon waits for it,
    /// `reconcile --once` fails while another agent holds it). Default:
    /// `/run/ovn-bgp-agent/net-<inode>.lock`, the inode of the network
    /// namespace the agent writes to.
    #[arg(
        long = "node-lock",
        value_name = "PATH",
        global = true,
        help_heading = "Node"
    )]
    pub node_lock: Option<PathBuf>,

    /// OVSDB events within this many ms of an event-driven reconcile are
    /// merged into the next one (0: every event reconciles as soon as the
    /// one in flight ends; the rate limit still applies).
    #[arg(
        long = "merge-window-ms",
        value_name = "MS",
        global = true,
        default_value_t = QueueConfig::DEFAULT_WINDOW.as_millis() as u64,
        value_parser = clap::value_parser!(u64).range(0..=60_000),
        help_heading = DAEMON
    )]
    pub merge_window_ms: u64,
}

/// Options accepted before or after the subcommand, as upstream's oslo flags.
#[derive(Args, Debug)]
pub struct GlobalArgs {
    /// A config file to read. Repeatable: later files win.
    #[arg(
        long = "config-file",
        value_name = "PATH",
        global = true,
        help_heading = GLOBAL
    )]
    pub config_file: Vec<PathBuf>,

    /// A directory whose *.conf files are read, sorted by name, after the --config-file given before it.
    #[arg(
        long = "config-dir",
        value_name = "DIR",
        global = true,
        help_heading = GLOBAL
    )]
    pub config_dir: Vec<PathBuf>,

    /// Log at DEBUG level (oslo.log `debug`; overrides the file).
    #[arg(
        short = 'd',
        long = "debug",
        global = true,
        overrides_with = "nodebug",
        help_heading = GLOBAL
    )]
    pub debug: bool,

    /// Log at INFO level even if the file sets `debug`.
    #[arg(
        long = "nodebug",
        global = true,
        overrides_with = "debug",
        hide_short_help = true,
        help_heading = GLOBAL
    )]
    pub nodebug: bool,

    /// Log to this file (oslo.log `log_file`; relative to --log-dir when given).
    #[arg(
        long = "log-file",
        visible_alias = "logfile",
        value_name = "PATH",
        global = true,
        help_heading = GLOBAL
    )]
    pub log_file: Option<String>,

    /// Directory for a relative --log-file (oslo.log `log_dir`).
    #[arg(
        long = "log-dir",
        visible_alias = "logdir",
        value_name = "DIR",
        global = true,
        help_heading = GLOBAL
    )]
    pub log_dir: Option<String>,

    /// Log JSON lines (oslo.log `use_json`).
    #[arg(
        long = "use-json",
        global = true,
        overrides_with = "nouse_json",
        help_heading = GLOBAL
    )]
    pub use_json: bool,

    #[arg(
        long = "nouse-json",
        global = true,
        overrides_with = "use_json",
        hide = true,
        help_heading = GLOBAL
    )]
    pub nouse_json: bool,

    /// Also log to stderr (oslo.log `use_stderr`).
    #[arg(
        long = "use-stderr",
        global = true,
        overrides_with = "nouse_stderr",
        help_heading = GLOBAL
    )]
    pub use_stderr: bool,

    #[arg(
        long = "nouse-stderr",
        global = true,
        overrides_with = "use_stderr",
        hide = true,
        help_heading = GLOBAL
    )]
    pub nouse_stderr: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print the effective configuration (every option of every section the agent knows).
    Config {
        /// `text` for people, `json` for scripts.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Print the node changes the agent would make now, grouped and in the
    /// order it would make them. Changes nothing.
    Plan {
        /// `text` for people, `json` for scripts.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        #[command(flatten)]
        input: OvnInput,
        /// With --ovn and exposing_method = ovn: the node-local OVN NB rows
        /// (OVSDB wire notation, `{"OVN_Northbound": {table: {uuid: row}}}`
        /// or `{table: {uuid: row}}`) to plan the local-NB transaction
        /// against, instead of an empty local NB.
        #[arg(long = "local-nb", value_name = "FILE", requires = "ovn")]
        local_nb: Option<PathBuf>,
    },
    /// Explain why an IP, a prefix (tenant subnet, VRF or EVPN route) or a
    /// port (Logical_Switch_Port name or uuid, i.e. the Neutron port id;
    /// SB drivers: Port_Binding logical_port or uuid) is, or is not,
    /// exposed on this node: the deciding rule and the OVN
    /// row values behind it. Changes nothing.
    Explain {
        /// An IP address, a prefix, or a port.
        #[arg(value_name = "IP|PREFIX|PORT")]
        target: String,
        /// `text` for people, `json` for scripts.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        #[command(flatten)]
        input: OvnInput,
    },
    /// What this node exposes now and why (the OVN rows behind each
    /// exposed IP, its wiring, whether the node holds it) and the agent's
    /// health. From the running daemon (`GET /status` on metrics_listen)
    /// when one answers, else computed here like `plan`. Changes nothing.
    Status {
        /// `text` for people, `json` for scripts.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Ask the daemon listening on ADDR (host:port); fails if it does
        /// not answer. Default: metrics_listen when set, falling back to
        /// computing it here when nothing listens there.
        #[arg(long, value_name = "ADDR", conflicts_with_all = ["direct", "ovn"])]
        daemon: Option<String>,
        /// Compute it here even when a daemon listens on metrics_listen.
        #[arg(long)]
        direct: bool,
        /// Offline, as `plan --ovn` (implies --direct).
        #[command(flatten)]
        input: OvnInput,
    },
    /// Write what this node's agent reads, in one file for offline use
    /// (`plan`, `explain`, `status --ovn FILE`) and bug reports: the OVN
    /// rows the configured driver monitors, the local Open_vSwitch rows,
    /// the node state (links, addresses, routes, rules, neighbours, flows,
    /// FRR) and the hostname and router-id read with them. It holds the
    /// node's addresses, MACs, names and hostname. Changes nothing.
    Capture {
        /// Write to FILE (created with mode 0600) instead of stdout.
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Reconcile the node once and exit: 0 when it converged (a second
    /// observe plans nothing), 1 otherwise.
    Reconcile {
        /// Run one reconciliation and exit (the only mode).
        #[arg(long, required = true)]
        once: bool,
    },
    /// Print the version.
    Version,
}

/// Where `plan`, `explain` and `status` read OVN from: the configured
/// databases, or a file.
#[derive(Args, Debug)]
pub struct OvnInput {
    /// Read OVN from this file instead of the configured databases: a
    /// `capture` (with its node state), OVSDB wire notation per database,
    /// a conformance scenario, or `ovsdb-client -f json dump` output.
    /// The configuration stays the effective one.
    #[arg(long, value_name = "FILE")]
    pub ovn: Option<PathBuf>,
    /// With --ovn: the node state (scenario JSON shape) to compare with;
    /// its addresses also give the SB EVPN driver's VXLAN source. Default:
    /// the capture's node, a scenario's `initial_node`, else an EMPTY node
    /// (every object shown missing), never the live node.
    #[arg(long = "node-state", value_name = "FILE", requires = "ovn")]
    pub node_state: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// The clap command, for parsing with access to argument positions.
///
/// Each subcommand's help hides the global options that do not apply to it
/// (they still parse, so a shared command line keeps working): `version`
/// takes none, `config` only the global ones, and the daemon options are
/// the daemon's alone. Done by giving the subcommand its own hidden copy,
/// which clap's propagation of the global one then leaves alone.
pub fn command() -> clap::Command {
    let mut root = Cli::command();
    let globals: Vec<clap::Arg> = root
        .get_arguments()
        .filter(|a| a.is_global_set())
        .cloned()
        .collect();
    let names: Vec<String> = root
        .get_subcommands()
        .map(|sc| sc.get_name().to_string())
        .collect();
    for name in names {
        root = root.mut_subcommand(&name, |sc| {
            let hidden = globals
                .iter()
                .filter(|a| !applies(&name, a.get_help_heading()))
                .map(|a| a.clone().hide(true));
            sc.args(hidden)
        });
    }
    root
}

/// Whether the global options under `heading` apply to `subcommand`.
fn applies(subcommand: &str, heading: Option<&str>) -> bool {
    match subcommand {
        "version" => false,
        "config" => heading == Some(GLOBAL),
        _ => heading != Some(DAEMON),
    }
}

/// The parsed command line.
pub fn parse(matches: &ArgMatches) -> Result<Cli, clap::Error> {
    Cli::from_arg_matches(matches)
}

/// The options of every (sub)command whose value is the next argument when
/// not written `--opt=value`: the long names and aliases (`--opt`) and
/// short names (`-o`) of the arguments whose clap action takes values.
pub fn value_options() -> BTreeSet<String> {
    let mut root = command();
    // Building adds `--help`/`--version` and propagates global options.
    root.build();
    let mut out = BTreeSet::new();
    let mut commands = vec![&root];
    while let Some(cmd) = commands.pop() {
        for arg in cmd.get_arguments() {
            if !arg.get_action().takes_values() {
                continue;
            }
            let longs = arg
                .get_long()
                .into_iter()
                .chain(arg.get_all_aliases().unwrap_or_default());
            out.extend(longs.map(|l| format!("--{l}")));
            let shorts = arg
                .get_short()
                .into_iter()
                .chain(arg.get_all_short_aliases().unwrap_or_default());
            out.extend(shorts.map(|s| format!("-{s}")));
        }
        commands.extend(cmd.get_subcommands());
    }
    out
}

/// The config sources in oslo's order: defaults for what the command line
/// does not give, then every --config-file and --config-dir in the order
/// they were written, before or after the subcommand.
///
/// Read from the raw arguments (already validated by clap) because clap
/// keeps only one level's values when a global option is given both before
/// and after the subcommand.
pub fn sources(argv: &[OsString]) -> Vec<ConfigSource> {
    let takes_value = value_options();
    let mut given = Vec::new();
    let mut args = argv.iter().skip(1);
    while let Some(arg) = args.next() {
        let Some(arg) = arg.to_str() else { continue };
        if arg == "--" {
            break;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (arg, None),
        };
        let make: fn(PathBuf) -> ConfigSource = match name {
            "--config-file" => ConfigSource::File,
            "--config-dir" => ConfigSource::Dir,
            _ => {
                if inline.is_none() && takes_value.contains(name) {
                    args.next();
                }
                continue;
            }
        };
        let value = inline
            .map(PathBuf::from)
            .or_else(|| args.next().map(PathBuf::from));
        given.extend(value.map(make));
    }
    let has_file = given.iter().any(|s| matches!(s, ConfigSource::File(_)));
    let has_dir = given.iter().any(|s| matches!(s, ConfigSource::Dir(_)));
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut out =
        obgp_config::default_sources(home.as_deref(), "/etc".as_ref(), !has_file, !has_dir);
    out.extend(given);
    out
}

/// Adds the oslo.log command-line flags as overrides (they win over files
/// and environment, as in oslo).
pub fn with_log_overrides(mut loader: Loader, g: &GlobalArgs) -> Loader {
    let flag = |on: bool, off: bool| match (on, off) {
        (true, _) => Some("true"),
        (_, true) => Some("false"),
        _ => None,
    };
    for (name, value) in [
        ("debug", flag(g.debug, g.nodebug)),
        ("use_json", flag(g.use_json, g.nouse_json)),
        ("use_stderr", flag(g.use_stderr, g.nouse_stderr)),
        ("log_file", g.log_file.as_deref()),
        ("log_dir", g.log_dir.as_deref()),
    ] {
        if let Some(v) = value {
            loader = loader.cli_override("DEFAULT", name, v);
        }
    }
    loader
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources_of(args: &[&str]) -> Vec<ConfigSource> {
        command().try_get_matches_from(args).unwrap();
        let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
        sources(&argv)
            .into_iter()
            .filter(|s| !matches!(s, ConfigSource::DefaultDir(_)))
            .collect()
    }

    #[test]
    fn config_files_and_dirs_keep_command_line_order() {
        let got = sources_of(&[
            "x",
            "--config-file",
            "a",
            "--config-dir",
            "d",
            "--config-file=b",
        ]);
        assert_eq!(
            got,
            [
                ConfigSource::File("a".into()),
                ConfigSource::Dir("d".into()),
                ConfigSource::File("b".into())
            ]
        );
    }

    #[test]
    fn config_files_after_the_subcommand_count_too() {
        let got = sources_of(&[
            "x",
            "--config-file",
            "a",
            "config",
            "--config-file",
            "b",
            "--format",
            "json",
        ]);
        assert_eq!(
            got,
            [
                ConfigSource::File("a".into()),
                ConfigSource::File("b".into())
            ]
        );
    }

    #[test]
    fn values_of_other_options_are_not_taken_for_config_files() {
        let got = sources_of(&[
            "x",
            "--log-file",
            "x.log",
            "--config-file=a",
            "config",
            "--format",
            "json",
            "--config-dir",
            "d",
        ]);
        assert_eq!(
            got,
            [
                ConfigSource::File("a".into()),
                ConfigSource::Dir("d".into())
            ]
        );
    }

    fn node_args(args: &[&str]) -> Result<NodeArgs, clap::Error> {
        let m = command().try_get_matches_from(args)?;
        Ok(parse(&m)?.node)
    }

    #[test]
    fn the_merge_window_defaults_to_100_ms_and_reaches_the_work_queue() {
        let default = node_args(&["x"]).unwrap();
        assert_eq!(default.merge_window_ms, 100);
        let off = node_args(&["x", "--merge-window-ms", "0"]).unwrap();
        let opts = crate::commands::run_options(&obgp_config::Config::default(), &off);
        assert_eq!(opts.queue.window, std::time::Duration::ZERO);
        let after = node_args(&["x", "reconcile", "--once", "--merge-window-ms=250"]).unwrap();
        assert_eq!(
            crate::commands::run_options(&obgp_config::Config::default(), &after)
                .queue
                .window,
            std::time::Duration::from_millis(250)
        );
    }

    #[test]
    fn without_options_the_node_and_the_queue_get_their_own_defaults() {
        let opts = crate::commands::run_options(
            &obgp_config::Config::default(),
            &node_args(&["x"]).unwrap(),
        );
        let kernel = KernelConfig::default();
        assert_eq!(
            (
                &opts.kernel.rt_tables,
                &opts.kernel.vty_socket,
                &opts.kernel.dummy_kind
            ),
            (&kernel.rt_tables, &kernel.vty_socket, &kernel.dummy_kind)
        );
        assert_eq!(opts.kernel.netns, None);
        assert_eq!(opts.queue.window, QueueConfig::default().window);
    }

    #[test]
    fn a_merge_window_over_a_minute_or_negative_is_a_usage_error() {
        for bad in ["60001", "-1", "soon"] {
            let err = node_args(&["x", "--merge-window-ms", bad]).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad}: {err}");
        }
    }

    #[test]
    fn the_value_options_are_those_clap_reads_a_value_for() {
        // Written `--opt=v`, clap refuses the value of an option that takes
        // none; any other outcome (parsed, a bad value, a missing required
        // argument) means it read one. Every option of every subcommand.
        let options = value_options();
        let mut root = command();
        root.build();
        let mut commands = vec![(vec!["x".to_string()], &root)];
        let (mut flags, mut with_value) = (0, 0);
        while let Some((path, cmd)) = commands.pop() {
            for arg in cmd.get_arguments() {
                let longs = arg
                    .get_long()
                    .into_iter()
                    .chain(arg.get_all_aliases().unwrap_or_default());
                for long in longs {
                    let option = format!("--{long}");
                    let mut argv = path.clone();
                    argv.push(format!("{option}=v"));
                    let refused = matches!(
                        command().try_get_matches_from(&argv),
                        Err(e) if e.kind() == clap::error::ErrorKind::TooManyValues
                    );
                    assert_eq!(
                        options.contains(&option),
                        !refused,
                        "{option} of `{}`",
                        path.join(" ")
                    );
                    if refused {
                        flags += 1;
                    } else {
                        with_value += 1;
                    }
                }
            }
            for sub in cmd.get_subcommands() {
                let mut sub_path = path.clone();
                sub_path.push(sub.get_name().to_string());
                commands.push((sub_path, sub));
            }
        }
        assert!(
            flags >= 8 && with_value >= 13,
            "{flags} flags, {with_value} with a value"
        );
        assert!(options.contains("--logfile") && options.contains("--local-nb"));
        assert!(!options.contains("--debug") && !options.contains("--once"));
    }

    #[test]
    fn no_option_value_or_flag_is_taken_for_a_config_file() {
        let got = sources_of(&[
            "x",
            "--debug",
            "--config-file",
            "a",
            "--logfile",
            "x.log",
            "status",
            "--direct",
            "--config-dir",
            "d",
        ]);
        assert_eq!(
            got,
            [
                ConfigSource::File("a".into()),
                ConfigSource::Dir("d".into())
            ]
        );
    }

    #[test]
    fn the_clap_definition_is_consistent() {
        command().debug_assert();
    }
}
