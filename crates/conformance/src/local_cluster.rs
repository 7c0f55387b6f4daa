//! `conformance scenario fixtures/ovn-local/*.json`: the golden files of
//! `exposing_method = ovn`, which upstream never recorded (its base wiring
//! cannot complete, D14), written from upstream's code with a note per
//! choice (docs/modes.md, ADR 0008).
//!
//! A file holds OVN (`ovn`: the central NB and the local OVS), the
//! `[local_ovn_cluster]` options (`config`), the external bridges' kernel
//! facts (`facts`), and what the mode must give (`expected`): the
//! announced IPs, the local NB's rows, the cookie-999 flows and the FDB
//! entries. The runner computes them through the daemon's `Pipeline`
//! (facts from `node_facts`), the path the agent runs, and compares each
//! part. `OBGP_BLESS=1` writes the computed
//! parts into `expected` instead (review every line before committing).

use std::path::Path;

use anyhow::Context;
use obgp_config::Config;
use obgp_desired::{Desired, GoldenConfig, LocalFacts};
use obgp_netmodel::FlowAction;
use obgp_ovn::{NbChanges, Snapshot};
use obgp_pipeline::{node_facts, NodeReadings, Pipeline};
use serde_json::{json, Value};

use crate::verdict::Outcome;

/// The parts of `expected` the runner compares.
const PARTS: [&str; 4] = ["announced", "local_nb", "flows", "fdb"];

/// Whether `doc` is an ovn-mode golden file (not an upstream scenario).
pub fn is_local_cluster(doc: &Value) -> bool {
    doc["expected"].get("local_nb").is_some()
}

/// Checks the golden file at `path` (already read as `doc`).
pub fn check(path: &Path, mut doc: Value) -> Outcome {
    let got = match compute(&doc) {
        Ok(d) => render(&d),
        Err(e) => return Outcome::Failed(vec![format!("{e:#}")]),
    };
    if std::env::var_os("OBGP_BLESS").is_some() {
        doc["expected"] = got;
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n";
        return match std::fs::write(path, text) {
            Ok(()) => Outcome::Passed,
            Err(e) => Outcome::Failed(vec![format!("writing {}: {e}", path.display())]),
        };
    }
    let want = &doc["expected"];
    let mut diffs = Vec::new();
    for part in PARTS {
        let lines = |v: &Value| -> Vec<String> {
            v[part]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|l| l.as_str().unwrap_or("?").to_string())
                        .collect()
                })
                .unwrap_or_default()
        };
        let (g, w) = (lines(&got), lines(want));
        diffs.extend(
            w.iter()
                .filter(|l| !g.contains(l))
                .map(|l| format!("{part}: missing: {l}")),
        );
        diffs.extend(
            g.iter()
                .filter(|l| !w.contains(l))
                .map(|l| format!("{part}: extra: {l}")),
        );
    }
    if diffs.is_empty() {
        Outcome::Passed
    } else {
        Outcome::Failed(diffs)
    }
}

/// The configuration of the file: the NB driver in this mode with its
/// `config` member.
pub fn config(doc: &Value) -> anyhow::Result<Config> {
    let golden: GoldenConfig = serde_json::from_value(doc["config"].clone()).context("config")?;
    Ok(golden.config())
}

fn compute(doc: &Value) -> anyhow::Result<Desired> {
    let snap = Snapshot::from_wire(&doc["ovn"]).map_err(|e| anyhow::anyhow!("ovn: {e}"))?;
    let local_bridges = match doc.get("facts") {
        Some(v) => serde_json::from_value::<LocalFacts>(v.clone()).context("facts")?,
        None => LocalFacts::default(),
    };
    let config = config(doc)?;
    let read = NodeReadings {
        bridge_facts: Some(&local_bridges),
        ..NodeReadings::default()
    };
    let facts = node_facts(&config, &snap, read);
    let mut pipeline = Pipeline::default();
    Ok(pipeline
        .compute(&snap, &mut NbChanges::Full, &config, &facts)?
        .desired
        .clone())
}

/// The computation in the golden files' terms, one line per item.
pub fn render(d: &Desired) -> Value {
    let Some(cluster) = &d.local_cluster else {
        return json!({});
    };
    let rows: Vec<String> = cluster
        .local_nb
        .rows
        .values()
        .map(|r| {
            let cols: Vec<String> = r.columns.iter().map(|(c, v)| format!("{c}={v}")).collect();
            format!("{}: {}", r.key, cols.join(" "))
        })
        .collect();
    let flows: Vec<String> = cluster
        .flows
        .iter()
        .map(|f| {
            let matches: Vec<String> = f.matches.iter().map(|m| format!(",{m}")).collect();
            let actions: Vec<String> = f
                .actions
                .iter()
                .map(|a| match a {
                    FlowAction::ModDlDstBridgeMac => format!("mod_dl_dst:<{} MAC>", f.bridge),
                    FlowAction::ModDlDst(m) => format!("mod_dl_dst:{m}"),
                    FlowAction::Output(p) => format!("output:{p}"),
                    FlowAction::Normal => "NORMAL".into(),
                    other => format!("{other:?}"),
                })
                .collect();
            format!(
                "{} cookie={} priority={},{},in_port={}{} actions={}",
                f.bridge,
                f.cookie,
                f.priority,
                f.protocol,
                f.in_port,
                matches.concat(),
                actions.join(",")
            )
        })
        .collect();
    let fdb: Vec<String> = cluster
        .fdb
        .iter()
        .map(|e| format!("fdb/add {} {} {} {}", e.bridge, e.port, e.vlan, e.mac))
        .collect();
    json!({
        "announced": d.exposed.keys().map(|ip| ip.to_string()).collect::<Vec<_>>(),
        "local_nb": rows,
        "flows": flows,
        "fdb": fdb,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn golden(name: &str) -> (std::path::PathBuf, Value) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/ovn-local")
            .join(name);
        let doc = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        (path, doc)
    }

    #[test]
    fn the_golden_files_pass_and_a_changed_expectation_fails_naming_the_line() {
        for name in ["basic.json", "ipv6-vlan.json"] {
            let (path, doc) = golden(name);
            assert!(is_local_cluster(&doc));
            assert_eq!(check(&path, doc), Outcome::Passed, "{name}");
        }
        if std::env::var_os("OBGP_BLESS").is_some() {
            return;
        }
        let (path, mut doc) = golden("basic.json");
        doc["expected"]["announced"][0] = json!("203.0.113.99");
        let Outcome::Failed(diffs) = check(&path, doc) else {
            panic!("a changed expectation must fail");
        };
        assert!(
            diffs
                .iter()
                .any(|d| d == "announced: missing: 203.0.113.99"),
            "{diffs:?}"
        );
    }
}
