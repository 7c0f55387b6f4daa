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
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("writing the configuration to stdout")?;
    Ok(ExitCode::SUCCESS)
}
