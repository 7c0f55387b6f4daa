//! The daemon (no subcommand). Placeholder: the run loop is issue 6's.

use std::process::ExitCode;

use obgp_config::Config;

/// Will run the agent until stopped (issue 6). Today it logs what it would
/// run with, logs that the run loop is missing and exits 1, so a service
/// manager never mistakes it for a running agent.
pub fn run(config: &Config) -> anyhow::Result<ExitCode> {
    let d = &config.default;
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        driver = d.driver.as_str(),
        exposing_method = d.exposing_method.as_str(),
        "ovn-bgp-agent starting"
    );
    tracing::error!("the run loop is not implemented yet (owned by issue 6); exiting");
    Ok(ExitCode::from(crate::EXIT_FAILURE))
}
