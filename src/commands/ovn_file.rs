//! OVN content and a node state read from files, for the commands that
//! work offline (`plan`, `explain`, `status` with `--ovn FILE`).
//!
//! The file is one of:
//! - a capture (`ovn-bgp-agent capture`): OVN rows, the node state and the
//!   node's hostname and router-id, so the answers equal the node's;
//! - OVSDB wire notation per database (`{"OVN_Northbound": {table: {uuid:
//!   row}}, "Open_vSwitch": ...}`);
//! - a conformance scenario (`ovn`, `initial_node`, `facts`);
//! - the output of `ovsdb-client -f json dump` (one or more databases
//!   concatenated), converted ([`obgp_ovn::dump`]).
//!
//! As the live client does, a row that cannot be decoded is skipped with
//! its uuid, and a table or database the agent does not read is reported.

use std::path::Path;

use anyhow::{bail, Context};
use obgp_config::Config;
use obgp_desired::{LocalFacts, NodeFacts};
use obgp_ovn::{Snapshot, NB_DB, OVS_DB, SB_DB};
use obgp_ovsdb_data::{Row, Uuid};
use obgp_pipeline::{node_facts, NodeReadings};
use obgp_plan::actual::state::NodeState;
use obgp_plan::Actual;
use serde_json::{Map, Value};

use super::capture::CaptureHeader;

/// Where the node state compared with comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeSource {
    /// `--node-state FILE`.
    File(String),
    /// The capture's `node`.
    Capture,
    /// The scenario's `initial_node`.
    Scenario,
    /// Nothing: an empty node.
    Empty,
}

impl NodeSource {
    /// The first line of an offline answer: what it compares with.
    pub fn line(&self) -> String {
        match self {
            NodeSource::File(f) => format!("node: the node state of {f}"),
            NodeSource::Capture => "node: the node state of the capture".into(),
            NodeSource::Scenario => "node: the scenario's initial_node".into(),
            NodeSource::Empty => {
                "node: empty (no --node-state given): every object is shown as missing, none as held"
                    .into()
            }
        }
    }
}

/// A file's OVN rows and the node state to go with them.
pub struct OvnFile {
    pub snapshot: Snapshot,
    pub actual: Actual,
    /// A scenario's `facts` (`{bridge: {"mac": .., "addrs": [..]}}`): the
    /// kernel facts of `exposing_method = ovn`'s external bridges, which
    /// otherwise come from the node state's links and addresses.
    pub bridge_facts: Option<LocalFacts>,
    /// A capture's header: the node's hostname and FRR's router-id.
    pub captured: Option<CaptureHeader>,
    /// Where `actual` comes from.
    pub node: NodeSource,
}

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {} as JSON", path.display()))
}

/// The file's JSON, converted first when it is an `ovsdb-client -f json
/// dump` (several JSON values, or one with `caption`/`headings`/`data`).
fn read_ovn_doc(path: &Path, config: &Config) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let first = serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .next();
    let is_dump = matches!(&first, Some(Ok(v)) if obgp_ovn::dump::is_dump_table(v) || v.is_array());
    if !is_dump {
        return serde_json::from_str(&text)
            .with_context(|| format!("parsing {} as JSON", path.display()));
    }
    let reads_sb = config.default.driver.reads_sb();
    let dump = obgp_ovn::dump::convert(&text, reads_sb).with_context(|| {
        format!(
            "{} looks like `ovsdb-client -f json dump` output but cannot be read as one",
            path.display()
        )
    })?;
    tracing::info!(
        "{}: read as `ovsdb-client -f json dump` output: {} rows; tables not read by driver = {}: {}",
        path.display(),
        dump.rows,
        config.default.driver.as_str(),
        if dump.skipped.is_empty() {
            "none".to_string()
        } else {
            dump.skipped.join(", ")
        }
    );
    let (db, other) = if reads_sb {
        (SB_DB, NB_DB)
    } else {
        (NB_DB, SB_DB)
    };
    let of_other: Vec<&str> = dump
        .skipped
        .iter()
        .map(String::as_str)
        .filter(|t| obgp_ovn::dump::database_of(t, !reads_sb) == Some(other))
        .collect();
    if dump.wire.get(db).is_none() && !of_other.is_empty() {
        bail!(
            "{} is `ovsdb-client -f json dump` output of {other} (tables {}), and driver = {} reads {db}: pass the config file of the node it comes from, or take `ovn-bgp-agent capture` on that node",
            path.display(),
            of_other.iter().take(4).copied().collect::<Vec<_>>().join(", "),
            config.default.driver.as_str()
        );
    }
    if dump.wire.get(OVS_DB).is_none() {
        tracing::warn!(
            "{}: no Open_vSwitch rows, so no chassis name or bridge mappings: append the local OVS's dump (ovsdb-client -f json dump unix:/run/openvswitch/db.sock Open_vSwitch Bridge Port Interface >> FILE), or take an `ovn-bgp-agent capture` on the node instead, which also records the node state",
            path.display()
        );
    }
    Ok(serde_json::json!({ "ovn": dump.wire }))
}

impl OvnFile {
    /// OVN from `ovn_file` (see the module doc); the node state from
    /// `node_file`, else the capture's or the scenario's, else an empty
    /// node. Fails when the file has no rows of the database `config`'s
    /// driver reads: every answer from it would be "no row".
    pub fn read(
        ovn_file: &Path,
        node_file: Option<&Path>,
        config: &Config,
    ) -> anyhow::Result<OvnFile> {
        let doc = read_ovn_doc(ovn_file, config)?;
        let captured = match doc.get("capture") {
            Some(h) => Some(
                serde_json::from_value::<CaptureHeader>(h.clone())
                    .with_context(|| format!("{}: the capture header", ovn_file.display()))?,
            ),
            None => None,
        };
        if let Some(h) = &captured {
            check_capture(h, config, ovn_file)?;
        }
        if let Some(options) = doc.get("config").and_then(Value::as_object) {
            for difference in scenario_config_differences(options, config) {
                tracing::warn!("{}: {difference}", ovn_file.display());
            }
        }
        // A capture or a scenario carries OVN under `ovn`, and a node state.
        let (ovn, initial, bridge_facts) = match doc.get("ovn") {
            Some(ovn) => (
                ovn.clone(),
                doc.get("node").or(doc.get("initial_node")).cloned(),
                doc.get("facts").cloned(),
            ),
            None => (doc.clone(), None, None),
        };
        let driver = config.default.driver;
        let db = if driver.reads_sb() { SB_DB } else { NB_DB };
        let other = if driver.reads_sb() { NB_DB } else { SB_DB };
        let has_other = ovn.get(other).is_some();
        let ovn = without_bad_rows(&ovn, driver.reads_sb(), ovn_file)?;
        let has_rows = ovn
            .get(db)
            .and_then(|tables| tables.as_object())
            .is_some_and(|tables| {
                tables
                    .values()
                    .any(|rows| rows.as_object().is_some_and(|r| !r.is_empty()))
            });
        if !has_rows {
            let hint = if has_other {
                format!(
                    "it has {other} rows: check the configuration's driver (or pass the config file the OVN content was made for)"
                )
            } else {
                format!("take the file with `ovn-bgp-agent capture` on the node, or `ovsdb-client -f json dump` of {db}")
            };
            bail!(
                "{} has no {db} rows, and driver = {} reads {db}: {hint}",
                ovn_file.display(),
                driver.as_str()
            );
        }
        let snapshot = Snapshot::from_wire(&ovn)
            .with_context(|| format!("reading OVN rows from {}", ovn_file.display()))?;
        let (state, node) = match (node_file, initial) {
            (Some(f), _) => (read_json(f)?, NodeSource::File(f.display().to_string())),
            (None, Some(initial)) if captured.is_some() => (initial, NodeSource::Capture),
            (None, Some(initial)) => (initial, NodeSource::Scenario),
            (None, None) => (serde_json::json!({}), NodeSource::Empty),
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
            captured,
            node,
        })
    }
}

/// A capture of another format or driver would give other answers.
fn check_capture(h: &CaptureHeader, config: &Config, file: &Path) -> anyhow::Result<()> {
    if h.format != super::capture::FORMAT {
        bail!(
            "{}: capture format {} (taken by ovn-bgp-agent {}); this agent reads format {}",
            file.display(),
            h.format,
            h.agent_version,
            super::capture::FORMAT
        );
    }
    let driver = config.default.driver.as_str();
    if !h.driver.is_empty() && h.driver != driver {
        tracing::warn!(
            "{}: captured with driver = {}, read with driver = {driver}: pass the node's config file for the node's answers",
            file.display(),
            h.driver
        );
    }
    Ok(())
}

/// How the effective configuration differs from a scenario's `config`
/// (oslo names, `section.option` outside `[DEFAULT]`), one line per
/// option. The answers follow the effective configuration (the files and
/// environment given), so that a scenario reads like a capture of a node
/// with another configuration; these lines say where it departs.
fn scenario_config_differences(options: &Map<String, Value>, config: &Config) -> Vec<String> {
    let scenario = match obgp_config::Loader::new()
        .json_overrides(options)
        .map_err(|key| anyhow::anyhow!("option {key}: a map is not an option value"))
        .and_then(|l| Ok(l.load()?))
    {
        Ok(loaded) => loaded.config,
        Err(e) => {
            return vec![format!(
                "the scenario's config cannot be read ({e:#}): the effective configuration is used"
            )]
        }
    };
    let theirs = obgp_config::effective_json(&scenario);
    let ours = obgp_config::effective_json(config);
    let value = |all: &Value, section: &str, option: &str| {
        all.get(section)
            .and_then(Value::as_object)
            .and_then(|opts| {
                opts.iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case(option))
                    .map(|(_, v)| v.clone())
            })
    };
    options
        .keys()
        .filter_map(|key| {
            let (section, option) = key.split_once('.').unwrap_or(("DEFAULT", key));
            let (t, o) = (value(&theirs, section, option)?, value(&ours, section, option)?);
            (t != o).then(|| {
                format!(
                    "the scenario sets [{section}] {option} = {t}, the effective configuration has {o}: the answers follow the effective configuration (pass a config file with the scenario's value to follow the scenario)"
                )
            })
        })
        .collect()
}

/// The OVN content without the rows that cannot be decoded (each logged
/// with its database, table and uuid, as the live client skips them), and
/// with the databases and tables the agent does not read reported.
fn without_bad_rows(ovn: &Value, reads_sb: bool, file: &Path) -> anyhow::Result<Value> {
    let dbs = ovn.as_object().with_context(|| {
        format!(
            "{}: OVN content is not an object of databases",
            file.display()
        )
    })?;
    let mut out = Map::new();
    for (db, tables) in dbs {
        let driver_db = if reads_sb { SB_DB } else { NB_DB };
        let has_rows = tables.as_object().is_some_and(|t| {
            t.values()
                .any(|rows| rows.as_object().is_some_and(|r| !r.is_empty()))
        });
        if db != driver_db && db != OVS_DB && !has_rows {
            continue;
        }
        if db != driver_db && db != OVS_DB {
            tracing::warn!(
                "{}: database {db:?} left out: this driver reads {driver_db} and {OVS_DB}",
                file.display()
            );
            continue;
        }
        let Some(tables) = tables.as_object() else {
            tracing::warn!(
                "{}: {db} is not an object of tables: left out",
                file.display()
            );
            continue;
        };
        let mut kept = Map::new();
        for (table, rows) in tables {
            if !obgp_ovn::dump::reads_table(db, table) {
                if schema_has(db, table) {
                    tracing::debug!("{}: {db}.{table} is not read by the agent", file.display());
                } else {
                    tracing::warn!(
                        "{}: unknown table {db}.{table} (not in the {db} schema): left out",
                        file.display()
                    );
                }
                continue;
            }
            let Some(rows) = rows.as_object() else {
                tracing::warn!(
                    "{}: table {db}.{table} is not an object of rows: left out",
                    file.display()
                );
                continue;
            };
            let good: Map<String, Value> = rows
                .iter()
                .filter(|(uuid, row)| {
                    let bad = match (Uuid::parse(uuid), Row::from_wire(row)) {
                        (Err(e), _) => Some(e.to_string()),
                        (_, Err(e)) => Some(e.to_string()),
                        _ => None,
                    };
                    if let Some(e) = &bad {
                        tracing::warn!("{}: skipping {db}.{table} row {uuid}: {e}", file.display());
                    }
                    bad.is_none()
                })
                .map(|(u, r)| (u.clone(), r.clone()))
                .collect();
            kept.insert(table.clone(), Value::Object(good));
        }
        out.insert(db.clone(), Value::Object(kept));
    }
    Ok(Value::Object(out))
}

/// Whether the OVN or OVS schema this agent was written against has
/// `table` (a table it does not read but the schema has is no news).
fn schema_has(db: &str, table: &str) -> bool {
    let schema = match db {
        NB_DB => include_str!("../../fixtures/schemas/ovn-nb.ovsschema"),
        SB_DB => include_str!("../../fixtures/schemas/ovn-sb.ovsschema"),
        OVS_DB => include_str!("../../fixtures/schemas/vswitch.ovsschema"),
        _ => return false,
    };
    serde_json::from_str::<Value>(schema)
        .ok()
        .is_some_and(|s| s["tables"].get(table).is_some())
}

/// The node facts offline ([`node_facts`]): what the node state's links
/// and addresses give (the SB EVPN driver's VXLAN source, the external
/// bridges of `exposing_method = ovn` unless the scenario records them);
/// a capture's hostname and router-id, none otherwise.
pub fn facts(config: &Config, file: &OvnFile) -> NodeFacts {
    let read = NodeReadings {
        bridge_facts: file.bridge_facts.as_ref(),
        system_hostname: file
            .captured
            .as_ref()
            .and_then(|c| c.system_hostname.as_deref()),
        frr_router_id: file
            .captured
            .as_ref()
            .and_then(|c| c.frr_router_id.as_deref()),
        ..NodeReadings::of_node(&file.actual)
    };
    node_facts(config, &file.snapshot, read)
}
