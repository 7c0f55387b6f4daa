//! `ovn-bgp-agent config`: prints the effective configuration.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use obgp_config::{effective_json, effective_text, Config};

use crate::cli::Format;

/// Prints every option the agent knows with its effective value, as JSON
/// (`{"<section>": {"<option>": value}}`) or as an INI-like listing.
pub fn run(config: &Config, format: Format) -> anyhow::Result<ExitCode> {
    let text = match format {
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&effective_json(config))?;
            s.push('\n');
            s
        }
        Format::Text => effective_text(config),
    };
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        // The reader went away (`config | head`): nothing left to do.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        other => {
            other.context("writing the configuration to stdout")?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
