//! `ovn-bgp-agent plan`: prints the node changes the agent would make now,
//! grouped (base wiring / expose / withdraw / cleanup), one line per op, in
//! the order it would make them. It changes nothing.
//!
//! Live (default): reads the configured OVSDB databases and observes the
//! node. Offline (`--ovn FILE`): OVN from a file in OVSDB wire notation,
//! against a node state from a file (`--node-state`, or the scenario's
//! `initial_node`), so an operator can ask "what would the agent do with
//! this OVN content" without touching anything. With
//! `exposing_method = ovn` it also prints the node-local NB transaction
//! (`plan_ovn`).

use std::path::Path;
use std::process::ExitCode;

use anyhow::bail;
use obgp_config::{Config, ExposingMethod};
use obgp_plan::Plan;

use super::ovn_file::{NodeSource, OvnFile};
use crate::cli::{Format, NodeArgs, OvnInput};

pub fn run(
    config: &Config,
    node: &NodeArgs,
    format: Format,
    input: &OvnInput,
    local_nb: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    if config.default.exposing_method == ExposingMethod::Ovn {
        let p = match &input.ovn {
            Some(file) => {
                let (p, node) =
                    super::plan_ovn::offline(config, file, input.node_state.as_deref(), local_nb)?;
                if format == Format::Text {
                    println!("{}", node.line());
                }
                p
            }
            // clap refuses --local-nb without --ovn: live, the local NB is
            // the one the agent writes.
            None => {
                let opts = super::run_options(config, node);
                let planned =
                    super::runtime()?.block_on(obgp_controller::plan_once(config, &opts))?;
                super::plan_ovn::OvnPlan {
                    node: planned.plan,
                    local_nb: planned.local_nb.unwrap_or_default(),
                    against: format!(
                        "planned against the local NB at {}",
                        config.local_ovn_cluster.ovn_nb_connection
                    ),
                }
            }
        };
        super::plan_ovn::print(&p, format)?;
        return Ok(ExitCode::SUCCESS);
    }
    if local_nb.is_some() {
        bail!("--local-nb is for exposing_method = ovn only");
    }
    let plan = match &input.ovn {
        Some(file) => {
            let (plan, node) = offline(config, file, input.node_state.as_deref())?;
            if format == Format::Text {
                println!("{}", node.line());
            }
            plan
        }
        None => {
            let opts = super::run_options(config, node);
            let planned = super::runtime()?.block_on(obgp_controller::plan_once(config, &opts))?;
            planned.plan
        }
    };
    print(&plan, format)?;
    // The whole job's peak, with the plan printed (at debug).
    obgp_controller::ops::log_stage("printed");
    Ok(ExitCode::SUCCESS)
}

fn print(plan: &Plan, format: Format) -> anyhow::Result<()> {
    match format {
        Format::Text => print!("{}", obgp_controller::render_plan(plan)),
        Format::Json => super::print_json(plan)?,
    }
    Ok(())
}

/// Plans from files: no database, no node.
fn offline(
    config: &Config,
    ovn_file: &Path,
    node_file: Option<&Path>,
) -> anyhow::Result<(Plan, NodeSource)> {
    let file = OvnFile::read(ovn_file, node_file, config)?;
    let facts = super::ovn_file::facts(config, &file);
    let once = obgp_pipeline::once(&file.snapshot, config, &facts, &file.actual)?;
    for note in &once.desired.notes {
        tracing::info!("{note}");
    }
    Ok((once.plan, file.node))
}
