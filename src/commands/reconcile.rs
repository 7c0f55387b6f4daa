//! `ovn-bgp-agent reconcile --once`: connect, wait for the initial dumps,
//! reconcile once, and exit 0 only when the node converged (an observe after
//! the apply plans nothing). For maintenance windows.

use std::process::ExitCode;

use obgp_config::Config;

use crate::cli::NodeArgs;

pub fn run(config: &Config, node: &NodeArgs, _once: bool) -> anyhow::Result<ExitCode> {
    let opts = super::run_options(config, node);
    let report = super::runtime()?.block_on(obgp_controller::reconcile_once(config, &opts))?;
    println!(
        "converged: {} exposed IP(s), {} op(s) applied, {} failed",
        report.exposed,
        report.ops_applied(),
        report.failed.len()
    );
    Ok(ExitCode::SUCCESS)
}
