//! `ovn-bgp-agent capture`: writes, in one JSON file, everything `plan`
//! reads on this node, so that `plan`, `explain` and `status` give the
//! same answers offline (`--ovn FILE`) as on the node:
//!
//! ```json
//! {"capture": {"format": 1, "agent_version": "..", "driver": "..",
//!              "system_hostname": "..", "frr_router_id": ".."},
//!  "ovn":  {"OVN_Northbound" | "OVN_Southbound": {table: {uuid: row}},
//!           "Open_vSwitch": {table: {uuid: row}}},
//!  "node": {links, addresses, routes, rules, neighbours, ovs, frr, ...}}
//! ```
//!
//! `ovn` holds the rows as the driver's monitors hold them (the columns it
//! monitors; with the NB driver's default conditional monitor
//! (`ovn_nb_monitor_all = false`), this node's ports only);
//! `node` is the `--node-state` shape of the node as a plan observes it.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use obgp_config::Config;
use obgp_ovsdb_data::DbSnapshot;
use obgp_plan::actual::state::NodeState;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::cli::NodeArgs;

/// The capture format this agent writes and reads.
pub const FORMAT: u32 = 1;

/// The `capture` member: what the file is, and the node facts read with
/// it that are not in the node state.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CaptureHeader {
    pub format: u32,
    #[serde(default)]
    pub agent_version: String,
    /// The driver the capturing agent was configured with.
    #[serde(default)]
    pub driver: String,
    /// The system hostname (the NB driver's chassis name when the
    /// Open_vSwitch row has no `external_ids:hostname`).
    #[serde(default)]
    pub system_hostname: Option<String>,
    /// The router-id FRR reported (used when `bgp_router_id` is unset).
    #[serde(default)]
    pub frr_router_id: Option<String>,
}

pub fn run(config: &Config, node: &NodeArgs, output: Option<&Path>) -> anyhow::Result<ExitCode> {
    let opts = super::run_options(config, node);
    let captured = super::runtime()?.block_on(obgp_controller::capture_once(config, &opts))?;
    let header = CaptureHeader {
        format: FORMAT,
        agent_version: env!("CARGO_PKG_VERSION").to_string(),
        driver: config.default.driver.as_str().to_string(),
        system_hostname: captured.facts.system_hostname.clone(),
        frr_router_id: captured.facts.frr_router_id.clone(),
    };
    let mut ovn = Map::new();
    ovn.insert(
        captured.ovn.schema().name.clone(),
        db_to_wire(&captured.ovn),
    );
    ovn.insert(
        captured.ovs.schema().name.clone(),
        db_to_wire(&captured.ovs),
    );
    let doc = json!({
        "capture": header,
        "ovn": ovn,
        "node": NodeState::from(captured.node),
    });
    match output {
        Some(path) => {
            let file = create_private(path)?;
            let mut out = std::io::BufWriter::new(file);
            serde_json::to_writer_pretty(&mut out, &doc)
                .with_context(|| format!("writing {}", path.display()))?;
            writeln!(out)
                .and_then(|()| out.flush())
                .with_context(|| format!("writing {}", path.display()))?;
            tracing::info!(
                "capture written to {}: it holds this node's addresses, MACs, names and hostname",
                path.display()
            );
        }
        None => super::print_json(&doc)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Created readable by its owner only: it describes the node's network.
fn create_private(path: &Path) -> anyhow::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))
}

/// `{table: {uuid: row}}` in wire notation.
fn db_to_wire(db: &DbSnapshot) -> Value {
    let tables = db
        .tables()
        .map(|t| {
            let rows: Map<String, Value> = db
                .table(t)
                .iter()
                .map(|(uuid, row)| (uuid.to_string(), row.to_wire()))
                .collect();
            (t.to_string(), Value::Object(rows))
        })
        .collect();
    Value::Object(tables)
}
