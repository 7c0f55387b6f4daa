//! The scenario files of upstream's golden node-side recordings
//! (`fixtures/conformance/scenarios/*.json`): the parts the runners read,
//! and how a file is read.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use serde::Deserialize;
use serde_json::Value;

/// The parts of a scenario file the runner reads.
#[derive(Debug, Deserialize)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub driver: String,
    #[serde(default)]
    pub config: BTreeMap<String, Value>,
    #[serde(default)]
    pub ovn: Value,
    #[serde(default)]
    pub initial_node: Value,
    #[serde(default)]
    pub steps: Vec<ScenarioStep>,
    #[serde(default)]
    pub frr: Vec<String>,
    #[serde(default)]
    pub final_node: Value,
}

#[derive(Debug, Deserialize)]
pub struct ScenarioStep {
    pub action: String,
    #[serde(default)]
    pub node_after: Value,
    #[serde(default)]
    pub ovn_transaction: Option<Vec<Value>>,
    /// The recorded calls (the FRR rendering file compares its texts).
    #[serde(default)]
    pub calls: Vec<Value>,
    /// The arguments of the upstream function the step called (the FRR
    /// rendering file).
    #[serde(default)]
    pub inputs: Value,
}

#[cfg(test)]
pub fn load(path: &Path) -> anyhow::Result<Scenario> {
    parse(path, read_json(path)?)
}

/// The scenario `doc`, read from `path`.
pub fn parse(path: &Path, doc: Value) -> anyhow::Result<Scenario> {
    serde_json::from_value(doc).with_context(|| format!("parsing {}", path.display()))
}

/// A JSON file, read once.
pub fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}
