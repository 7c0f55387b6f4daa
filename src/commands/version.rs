//! `ovn-bgp-agent version`.

use std::process::ExitCode;

/// Prints `ovn-bgp-agent <version>`; needs no configuration.
pub fn run() -> anyhow::Result<ExitCode> {
    println!("ovn-bgp-agent {}", env!("CARGO_PKG_VERSION"));
    Ok(ExitCode::SUCCESS)
}
