//! OVN content and a node state read from files, for the commands that
//! work offline (`plan --ovn`, `explain --ovn`).

use std::path::Path;

use anyhow::{bail, Context};
use obgp_config::Config;
use obgp_desired::{LocalFacts, NodeFacts};
use obgp_ovn::{Snapshot, NB_DB, SB_DB};
use obgp_pipeline::{node_facts, NodeReadings};
use obgp_plan::actual::state::NodeState;
use obgp_plan::Actual;

/// A file's OVN rows and the node state to go with them.
pub struct OvnFile {
    pub snapshot: Snapshot,
    pub actual: Actual,
    /// A scenario's `facts` (`{bridge: {"mac": .., "addrs": [..]}}`): the
    /// kernel facts of `exposing_method = ovn`'s external bridges, which
    /// otherwise come from the node state's links and addresses.
    pub bridge_facts: Option<LocalFacts>,
}

fn read_json(path: &Path) -> anyhow::Result<serde_json::Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {} as JSON", path.display()))
}

impl OvnFile {
    /// OVN from `ovn_file` (OVSDB wire notation per database, or a
    /// conformance scenario, whose `initial_node` is the node state unless
    /// `node_file` gives one; otherwise an empty node). Fails when the
    /// file has no rows of the database `config`'s driver reads: every
    /// answer from it would be "no row".
    pub fn read(
        ovn_file: &Path,
        node_file: Option<&Path>,
        config: &Config,
    ) -> anyhow::Result<OvnFile> {
        let doc = read_json(ovn_file)?;
        // A conformance scenario carries OVN under `ovn` and a start state.
        let (ovn, initial, bridge_facts) = match doc.get("ovn") {
            Some(ovn) => (
                ovn.clone(),
                doc.get("initial_node").cloned(),
                doc.get("facts").cloned(),
            ),
            None => (doc, None, None),
        };
        let driver = config.default.driver;
        let db = if driver.reads_sb() { SB_DB } else { NB_DB };
        let has_rows = ovn
            .get(db)
            .and_then(|tables| tables.as_object())
            .is_some_and(|tables| {
                tables
                    .values()
                    .any(|rows| rows.as_object().is_some_and(|r| !r.is_empty()))
            });
        if !has_rows {
            bail!(
                "{} has no {db} rows, and driver = {} reads {db}: check the configuration's driver (or pass the config file the OVN content was made for)",
                ovn_file.display(),
                driver.as_str()
            );
        }
        let snapshot = Snapshot::from_wire(&ovn)
            .with_context(|| format!("reading OVN rows from {}", ovn_file.display()))?;
        let state = match (node_file, initial) {
            (Some(f), _) => read_json(f)?,
            (None, Some(initial)) => initial,
            (None, None) => serde_json::json!({}),
        };
        let state: NodeState = serde_json::from_value(state).context("node state")?;
        let actual = Actual::try_from(state).context("node state")?;
        let bridge_facts = bridge_facts
            .map(serde_json::from_value::<LocalFacts>)
            .transpose()
            .context("the scenario's facts")?;
        Ok(OvnFile {
            snapshot,
            actual,
            bridge_facts,
        })
    }
}

/// The node facts offline ([`node_facts`]): what the node state's links
/// and addresses give (the SB EVPN driver's VXLAN source, the external
/// bridges of `exposing_method = ovn` unless the scenario records them);
/// no hostname, no router-id.
pub fn facts(config: &Config, file: &OvnFile) -> NodeFacts {
    let read = NodeReadings {
        bridge_facts: file.bridge_facts.as_ref(),
        ..NodeReadings::of_node(&file.actual)
    };
    node_facts(config, &file.snapshot, read)
}
