//! The subcommands, one module each, and the shared start-up: load the
//! configuration (exit 2 when it is invalid), set up logging, report the
//! loader's warnings.

pub mod capture;
pub mod config;
pub mod daemon;
pub mod explain;
pub mod ovn_file;
pub mod plan;
mod plan_ovn;
pub mod reconcile;
pub mod status;
pub mod version;

use std::ffi::OsString;
use std::process::ExitCode;

use obgp_config::{ConfigError, Loader};

use crate::cli::{self, Cli, Command};
use crate::logging::{self, Mode};

/// Runs what the command line asks for.
pub fn dispatch(args: &Cli, argv: &[OsString]) -> anyhow::Result<ExitCode> {
    let mode = match &args.command {
        Some(Command::Version) => return version::run(),
        Some(Command::Config { .. })
        | Some(Command::Capture { .. })
        | Some(Command::Plan { .. })
        | Some(Command::Explain { .. })
        | Some(Command::Status { .. }) => Mode::Tool,
        Some(Command::Reconcile { .. }) | None => Mode::Service,
    };
    let config = match load(args, argv) {
        Ok(c) => c,
        Err(e) => return Ok(invalid_configuration(&e)),
    };
    // Refused before any connection is tried: without it the command would
    // start the other databases' clients and fail on a runtime error.
    if reads_live_ovn(&args.command, &config.config) {
        if let Some(missing) = config.config.missing_connection() {
            return Ok(invalid_configuration(&ConfigError::Invalid(vec![missing])));
        }
    }
    logging::init(&config.config.log, mode)?;
    for w in &config.warnings {
        tracing::warn!("{w}");
    }
    if config.files.is_empty() {
        tracing::warn!("no configuration file found: using upstream's defaults");
    } else {
        tracing::debug!(files = ?config.files, "configuration loaded");
    }
    let config = &config.config;
    match &args.command {
        None => daemon::run(config, &args.node),
        Some(Command::Config { format }) => config::run(config, *format),
        Some(Command::Capture { output }) => capture::run(config, &args.node, output.as_deref()),
        Some(Command::Plan {
            format,
            input,
            local_nb,
        }) => plan::run(config, &args.node, *format, input, local_nb.as_deref()),
        Some(Command::Explain {
            target,
            format,
            input,
        }) => explain::run(config, &args.node, target, *format, input),
        Some(Command::Status {
            format,
            daemon,
            direct,
            input,
        }) => status::run(
            config,
            &args.node,
            *format,
            status::StatusFrom::of(daemon.as_deref(), *direct, input),
        ),
        Some(Command::Reconcile { once }) => reconcile::run(config, &args.node, *once),
        Some(Command::Version) => version::run(),
    }
}

/// Whether `command` connects to the configured OVN database: the daemon,
/// `reconcile`, `capture`, and `plan`/`explain`/`status` unless they read OVN from a
/// file (`--ovn`) or ask a daemon for the status.
fn reads_live_ovn(command: &Option<Command>, config: &obgp_config::Config) -> bool {
    match command {
        None | Some(Command::Reconcile { .. }) | Some(Command::Capture { .. }) => true,
        Some(Command::Plan { input, .. }) | Some(Command::Explain { input, .. }) => {
            input.ovn.is_none()
        }
        Some(Command::Status {
            daemon,
            direct,
            input,
            ..
        }) => match status::StatusFrom::of(daemon.as_deref(), *direct, input) {
            status::StatusFrom::Direct => true,
            // Asks the daemon on metrics_listen first, when set.
            status::StatusFrom::Default => config.default.metrics_listen.is_none(),
            status::StatusFrom::Daemon(_) | status::StatusFrom::Offline { .. } => false,
        },
        Some(Command::Config { .. }) | Some(Command::Version) => false,
    }
}

fn load(args: &Cli, argv: &[OsString]) -> Result<obgp_config::Loaded, ConfigError> {
    let env = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    let loader = Loader::new().sources(cli::sources(argv)).env(env);
    cli::with_log_overrides(loader, &args.global).load()
}

/// Prints why the configuration is refused (before logging exists, so on
/// stderr) and gives exit code 2.
fn invalid_configuration(e: &ConfigError) -> ExitCode {
    eprintln!("ovn-bgp-agent: invalid configuration:");
    match e {
        ConfigError::Invalid(values) => {
            for v in values {
                match &v.origin {
                    Some(origin) => eprintln!("  {v} (set in {origin})"),
                    None => eprintln!("  {v}"),
                }
            }
        }
        other => eprintln!("  {other}"),
    }
    ExitCode::from(crate::EXIT_INVALID)
}

/// The node-side settings of the command line and the configuration, for
/// the controller.
pub fn run_options(
    config: &obgp_config::Config,
    node: &cli::NodeArgs,
) -> obgp_controller::RunOptions {
    let timers = obgp_controller::LoopTimers::for_config(config);
    let kernel = obgp_node::KernelConfig {
        netns: node
            .netns
            .as_ref()
            .map(|n| std::path::Path::new(obgp_node::KernelConfig::NETNS_DIR).join(n)),
        rt_tables: node.rt_tables.clone(),
        dummy_kind: node.bgp_nic_kind.clone(),
        vty_socket: Some(node.vty_socket.clone()),
        vtysh_timeout: timers.vtysh_deadline,
        ovs_ofctl_timeout: timers.ovs_deadline,
        // The one mode that pins bridge MACs reads them back.
        read_static_fdb: config.default.exposing_method == obgp_config::ExposingMethod::Ovn,
        ..obgp_node::KernelConfig::default()
    };
    let node_lock = node.node_lock.clone().unwrap_or_else(|| {
        let dir = std::path::Path::new(obgp_node::lock::DEFAULT_LOCK_DIR);
        // A namespace that cannot be read fails the agent later; its lock
        // is then named after it.
        obgp_node::NodeLock::default_path(dir, kernel.netns.as_deref()).unwrap_or_else(|_| {
            dir.join(format!(
                "netns-{}.lock",
                node.netns.as_deref().unwrap_or("self")
            ))
        })
    });
    obgp_controller::RunOptions {
        node_lock: Some(node_lock),
        kernel,
        queue: obgp_controller::QueueConfig {
            window: std::time::Duration::from_millis(node.merge_window_ms),
            ..obgp_controller::QueueConfig::default()
        },
        ..obgp_controller::RunOptions::default()
    }
}

/// A multi-threaded tokio runtime for the commands that talk to OVSDB and the node.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// Prints `value` as indented JSON on stdout, written as it is serialized:
/// a 50k-port node's plan is megabytes, which a string would hold whole on
/// top of the plan at the job's peak.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}
