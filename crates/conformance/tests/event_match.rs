//! `conformance event-match` against upstream's recorded decision tables,
//! and the runner's own failure detection.

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/conformance")
}

/// Runs the runner; returns (exit success, stdout).
fn event_match(files: &[PathBuf]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_conformance"))
        .arg("event-match")
        .args(files)
        .output()
        .expect("running the conformance binary");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.is_empty(), "runner stderr: {stderr}");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn every_recorded_upstream_decision_is_reproduced_or_a_listed_deviation() {
    let (ok, out) = event_match(&[fixtures().join("event-match.json")]);
    assert_eq!(out, "206 passed, 0 failed, 3 skipped\n");
    assert!(ok);
}

#[test]
fn every_crafted_decision_of_the_untested_classes_is_reproduced() {
    let (ok, out) = event_match(&[fixtures().join("event-match-crafted.json")]);
    assert_eq!(out, "21 passed, 0 failed\n");
    assert!(ok);
}

/// A scratch directory holding one case file (and optionally deviations).
fn scratch(
    name: &str,
    cases: Vec<serde_json::Value>,
    deviations: Option<serde_json::Value>,
) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("event-match-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cases.json");
    std::fs::write(&file, serde_json::json!({ "cases": cases }).to_string()).unwrap();
    let dev = dir.join("deviations-event-match.json");
    match deviations {
        Some(d) => std::fs::write(&dev, d.to_string()).unwrap(),
        None => {
            let _ = std::fs::remove_file(&dev);
        }
    }
    file
}

fn recorded_cases() -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(fixtures().join("event-match.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["cases"].as_array().unwrap().clone()
}

#[test]
fn a_flipped_decision_is_reported_with_its_test_id() {
    let mut case = recorded_cases()
        .into_iter()
        .find(|c| c["event_class"] == "NATMACAddedEvent" && c["matches"] == true)
        .unwrap();
    case["matches"] = serde_json::Value::Bool(false);
    let test = case["test"].as_str().unwrap().to_string();
    let file = scratch("flipped", vec![case], None);
    let (ok, out) = event_match(&[file]);
    assert!(!ok);
    assert!(
        out.starts_with(&format!(
            "FAIL {test} [call_index 0]: NATMACAddedEvent: expected matches=false, got true"
        )),
        "{out}"
    );
    assert!(out.ends_with("0 passed, 1 failed\n"), "{out}");
}

#[test]
fn a_query_upstream_did_not_make_fails_the_case() {
    // Drop the recorded is_ip_exposed call: the predicate still makes it.
    let mut case = recorded_cases()
        .into_iter()
        .find(|c| c["agent"].get("is_ip_exposed").is_some())
        .unwrap();
    case["agent"]
        .as_object_mut()
        .unwrap()
        .remove("is_ip_exposed");
    let (ok, out) = event_match(&[scratch("unrecorded", vec![case], None)]);
    assert!(!ok);
    assert!(
        out.contains("read agent.is_ip_exposed, which upstream did not read"),
        "{out}"
    );
}

#[test]
fn a_listed_deviation_that_agrees_with_upstream_is_a_stale_list() {
    let case = recorded_cases().into_iter().next().unwrap();
    let deviations = serde_json::json!({"deviations": [{"id": "DX", "cases": [
        {"test": case["test"], "call_index": case["call_index"]}
    ]}]});
    let (ok, out) = event_match(&[scratch("stale", vec![case], Some(deviations))]);
    assert!(!ok);
    assert!(
        out.contains("listed as deviation DX but agrees with upstream"),
        "{out}"
    );
}
