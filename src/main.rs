//! `ovn-bgp-agent`: the binary. Parses the command line, loads the
//! configuration, sets up logging and hands over to a command.

mod cli;
mod commands;
mod logfile;
mod logging;

use std::process::ExitCode;

/// Usage errors and invalid configuration.
const EXIT_INVALID: u8 = 2;
/// Runtime failures.
const EXIT_FAILURE: u8 = 1;

fn main() -> ExitCode {
    // Before any thread starts: docs/adr/0012-two-malloc-arenas.md.
    obgp_controller::ops::cap_arenas();
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let matches = match cli::command().try_get_matches_from(&argv) {
        Ok(m) => m,
        Err(e) => {
            // --help and --version print and succeed; usage errors exit 2.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(EXIT_INVALID));
        }
    };
    let args = match cli::parse(&matches) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(EXIT_INVALID);
        }
    };
    match commands::dispatch(&args, &argv) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ovn-bgp-agent: {e:#}");
            // A configuration that names a device of the node is invalid
            // configuration (exit 2), whether found live or offline.
            let invalid = e
                .downcast_ref::<obgp_controller::RunError>()
                .is_some_and(|r| r.is_config_error())
                || e.downcast_ref::<obgp_pipeline::PipelineError>()
                    .is_some_and(|p| p.is_config_error())
                || matches!(
                    e.downcast_ref::<obgp_plan::PlanError>(),
                    Some(obgp_plan::PlanError::ForeignDevice { .. })
                )
                || matches!(
                    e.downcast_ref::<obgp_desired::DesiredError>(),
                    Some(obgp_desired::DesiredError::BadConfig { .. })
                )
                || matches!(
                    e.downcast_ref::<obgp_desired::ExplainError>(),
                    Some(obgp_desired::ExplainError::Desired(
                        obgp_desired::DesiredError::BadConfig { .. }
                    ))
                );
            ExitCode::from(if invalid { EXIT_INVALID } else { EXIT_FAILURE })
        }
    }
}
