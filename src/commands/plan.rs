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

use anyhow::Context;
use obgp_config::Config;
use obgp_desired::{desired_state, NodeFacts};
use obgp_plan::actual::state::NodeState;
use obgp_plan::{Actual, Plan};

use crate::cli::{Format, NodeArgs};

pub fn run(
    config: &Config,
    node: &NodeArgs,
    format: Format,
    ovn: Option<&Path>,
    node_state: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let plan = match ovn {
        Some(file) => offline(config, file, node_state)?,
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

fn read_json(path: &Path) -> anyhow::Result<serde_json::Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {} as JSON", path.display()))
}

/// OVN rows and a node state read from files, and the desired state they
/// give: what `plan --ovn` and `status --ovn` work from.
pub struct Offline {
    pub snapshot: obgp_ovn::Snapshot,
    pub actual: Actual,
    pub desired: obgp_desired::Desired,
}

/// Reads `ovn_file` (OVSDB wire notation per database, or a conformance
/// scenario) and the node state (`node_file`, else the scenario's
/// `initial_node`, else an empty node), and computes the desired state.
pub fn offline_inputs(
    config: &Config,
    ovn_file: &Path,
    node_file: Option<&Path>,
) -> anyhow::Result<Offline> {
    let doc = read_json(ovn_file)?;
    // A conformance scenario carries OVN under `ovn` and a start state.
    let (ovn, initial) = match doc.get("ovn") {
        Some(ovn) => (ovn.clone(), doc.get("initial_node").cloned()),
        None => (doc, None),
    };
    let snapshot = obgp_ovn::Snapshot::from_wire(&ovn)
        .with_context(|| format!("reading OVN rows from {}", ovn_file.display()))?;
    let state = match (node_file, initial) {
        (Some(f), _) => read_json(f)?,
        (None, Some(initial)) => initial,
        (None, None) => serde_json::json!({}),
    };
    let state: NodeState = serde_json::from_value(state).context("node state")?;
    let actual = Actual::try_from(state).context("node state")?;
    let facts = NodeFacts {
        // The SB EVPN driver's VXLAN source without evpn_local_ip, from the
        // node state's addresses.
        vxlan_source: obgp_desired::vxlan_source(
            config.default.evpn_nic.as_deref(),
            actual.addresses.iter().map(|a| (&a.dev, a.net)),
        ),
        ..NodeFacts::default()
    };
    let desired = desired_state(&snapshot, config, &facts)?;
    for note in &desired.notes {
        tracing::info!("{note}");
    }
    Ok(Offline {
        snapshot,
        actual,
        desired,
    })
}

/// Plans from files: no database, no node.
fn offline(config: &Config, ovn_file: &Path, node_file: Option<&Path>) -> anyhow::Result<Plan> {
    let o = offline_inputs(config, ovn_file, node_file)?;
    Ok(obgp_plan::plan(&o.desired.to_node(), &o.actual)?)
}
