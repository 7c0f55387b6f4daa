//! The subcommands, one module each, and the shared start-up: load the
//! configuration (exit 2 when it is invalid), set up logging, report the
//! loader's warnings.

pub mod config;
pub mod daemon;
pub mod plan;
pub mod reconcile;
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
        Some(Command::Config { .. }) | Some(Command::Plan { .. }) => Mode::Tool,
        Some(Command::Reconcile { .. }) | None => Mode::Service,
    };
    let config = match load(args, argv) {
        Ok(c) => c,
        Err(e) => return Ok(invalid_configuration(&e)),
    };
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
        None => daemon::run(config),
        Some(Command::Config { format }) => config::run(config, *format),
        Some(Command::Plan { format }) => plan::run(config, *format),
        Some(Command::Reconcile { once }) => reconcile::run(config, *once),
        Some(Command::Version) => version::run(),
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

/// The exit code of a command that a later issue implements.
pub fn not_implemented(what: &str, issue: u32) -> ExitCode {
    eprintln!("ovn-bgp-agent: {what} is not implemented yet: it is owned by issue {issue}");
    ExitCode::from(crate::EXIT_FAILURE)
}
