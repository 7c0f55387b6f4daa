//! `ovn-bgp-agent explain IP|PREFIX|PORT`: why an IP, a prefix or a port is, or is not,
//! exposed on this node, from the configured databases (and the node's
//! facts) or, with `--ovn FILE`, from a file. It changes nothing. The
//! answer is `obgp_desired::explain`'s.

use std::process::ExitCode;

use obgp_config::Config;
use obgp_desired::{explain, Query};

use super::ovn_file::{self, OvnFile};
use crate::cli::{Format, NodeArgs, OvnInput};

pub fn run(
    config: &Config,
    node: &NodeArgs,
    target: &str,
    format: Format,
    input: &OvnInput,
) -> anyhow::Result<ExitCode> {
    let (snapshot, facts, compared_with) = match &input.ovn {
        Some(file) => {
            let f = OvnFile::read(file, input.node_state.as_deref(), config)?;
            let facts = ovn_file::facts(config, &f);
            (f.snapshot, facts, Some(f.node))
        }
        None => {
            let opts = super::run_options(config, node);
            // Every NB port, whatever `ovn_nb_monitor_all` says: a question
            // may name a port of another node, which the conditional cache
            // does not hold ("no such port" would mislead); the answer for
            // this node's ports is the same from either cache (the
            // conditional oracle), and one full read costs a hand-run
            // command little. (The full monitor's typed snapshot keeps only
            // this node's ports; `inputs_once` hands out the build of every
            // cached row.)
            let mut whole = config.clone();
            whole.default.ovn_nb_monitor_all = true;
            let (snapshot, facts) =
                super::runtime()?.block_on(obgp_controller::inputs_once(&whole, &opts))?;
            (snapshot, facts, None)
        }
    };
    let answer = explain(&snapshot, config, &facts, &Query::parse(target))?;
    // Live, the answer ends with the fabric's side: FRR's tables and
    // sessions on this node. Offline there is no FRR to ask.
    let live = input.ovn.is_none();
    let prefixes = answer.announced_prefixes();
    let fabric = if live && !prefixes.is_empty() {
        let kernel = super::run_options(config, node).kernel;
        // Where each prefix is announced (leaked, a type-5 or a type-2
        // route) is the desired state's, from the same inputs.
        let desired = obgp_desired::desired_state(&snapshot, config, &facts);
        let desired = desired.as_ref().map_err(|e| e.to_string());
        obgp_controller::fabric::fabric_sides(config, &kernel, desired, &prefixes)
    } else {
        Vec::new()
    };
    match format {
        Format::Text => {
            print!("{answer}");
            for side in &fabric {
                println!("{side}");
            }
            if let Some(last) = last_text_if_missing(config, &fabric) {
                println!("{last}");
            }
            // The node state gives the facts an answer reads (the VXLAN
            // source, the external bridges): say which one offline, after
            // the answer, which comes first.
            if let Some(node) = compared_with {
                println!("{}", node.line());
            }
        }
        Format::Json => super::print_json(&WithFabric {
            answer: &answer,
            fabric: &fabric,
        })?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The JSON answer: the explanation's members, and `fabric` (one member
/// per announced prefix, live only).
#[derive(serde::Serialize)]
struct WithFabric<'a> {
    #[serde(flatten)]
    answer: &'a obgp_desired::Explanation,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    fabric: &'a [obgp_controller::ops::fabric::FabricSide],
}

/// When FRR lacks a prefix the answer announces (in none of its tables,
/// or not leaked), what the running daemon last did with FRR: its last
/// text and how it went, from its `/status` on `metrics_listen`. `None`
/// without a daemon there or a text yet.
fn last_text_if_missing(
    config: &Config,
    fabric: &[obgp_controller::ops::fabric::FabricSide],
) -> Option<String> {
    use obgp_controller::ops::fabric::FabricState;
    let missing = fabric.iter().any(|f| {
        matches!(
            f.state,
            FabricState::NotInFrr { .. }
                | FabricState::NotLeaked { .. }
                | FabricState::NotExported { .. }
                | FabricState::NotInEvpn { .. }
        )
    });
    let addr = config.default.metrics_listen?;
    if !missing {
        return None;
    }
    let status = super::status::from_daemon(&addr.to_string()).ok()?;
    let t = status.health.frr_last_text?;
    let what = if t.removal { "removal" } else { "text" };
    Some(match &t.error {
        Some(e) => format!(
            "FRR: the daemon's last {what} was {} {:.0} s ago: {e}",
            t.outcome, t.ago_s
        ),
        None => format!(
            "FRR: the daemon's last {what} was {} {:.0} s ago",
            t.outcome, t.ago_s
        ),
    })
}
