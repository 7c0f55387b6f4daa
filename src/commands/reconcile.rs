//! `ovn-bgp-agent reconcile --once`: one reconciliation, then exit.
//! Placeholder: the run loop is issue 6's.

use std::process::ExitCode;

use obgp_config::Config;

/// Will run one full reconciliation of the node (issue 6). Today it says
/// so and exits 1.
pub fn run(_config: &Config, _once: bool) -> anyhow::Result<ExitCode> {
    Ok(super::not_implemented("`reconcile --once`", 6))
}
