//! `ovn-bgp-agent plan`: prints the node changes the agent would make now,
//! grouped (base wiring / expose / withdraw / cleanup), one line per op, in
//! the order it would make them. It changes nothing.
//!
//! Live (default): reads the configured OVSDB databases and observes the
//! node. Offline (`--ovn FILE`): OVN from a file in OVSDB wire notation,
//! against a node state from a file (`--node-state`, or the scenario's
//! `initial_node`), so an operator can ask "what would the agent do with
//! this OVN content" without touching anything.

use std::path::Path;
use std::process::ExitCode;

use obgp_config::Config;
use obgp_desired::desired_state;
use obgp_plan::Plan;

use super::ovn_file::OvnFile;
use crate::cli::{Format, NodeArgs, OvnInput};

pub fn run(
    config: &Config,
    node: &NodeArgs,
    format: Format,
    input: &OvnInput,
) -> anyhow::Result<ExitCode> {
    let plan = match &input.ovn {
        Some(file) => offline(config, file, input.node_state.as_deref())?,
        None => {
            let opts = super::run_options(config, node);
            let planned = super::runtime()?.block_on(obgp_controller::plan_once(config, &opts))?;
            planned.plan
        }
    };
    print(&plan, format)?;
    Ok(ExitCode::SUCCESS)
}

fn print(plan: &Plan, format: Format) -> anyhow::Result<()> {
    match format {
        Format::Text => print!("{}", obgp_controller::render_plan(plan)),
        Format::Json => println!("{}", serde_json::to_string_pretty(plan)?),
    }
    Ok(())
}

/// Plans from files: no database, no node.
fn offline(config: &Config, ovn_file: &Path, node_file: Option<&Path>) -> anyhow::Result<Plan> {
    let OvnFile { snapshot, actual } = OvnFile::read(ovn_file, node_file, config)?;
    let facts = super::ovn_file::facts(config, &actual);
    let desired = desired_state(&snapshot, config, &facts)?;
    for note in &desired.notes {
        tracing::info!("{note}");
    }
    Ok(obgp_plan::plan(&desired.to_node(), &actual)?)
}
