//! `ovn-bgp-agent plan`: prints the node changes the agent would make.
//! Placeholder: the planner is issue 5's.

use std::process::ExitCode;

use obgp_config::Config;

use crate::cli::Format;

/// Will observe the node, compute the desired state and print the ordered
/// operations (issue 5). Today it says so and exits 1.
pub fn run(_config: &Config, _format: Format) -> anyhow::Result<ExitCode> {
    Ok(super::not_implemented("`plan`", 5))
}
