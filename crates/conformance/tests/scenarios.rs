//! `conformance scenario` over every NB golden scenario (underlay and the
//! EVPN vrf mode) and the FRR renderings: desired state from the
//! scenario's OVN rows, the planner, the simulated node. Each must pass; a
//! difference from upstream is allowed only where deviations-scenarios.json
//! lists it as an upstream defect the rewrite fixes.

use std::path::Path;
use std::process::Command;

#[test]
fn every_nb_scenario_passes_differing_only_by_listed_deviations() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/conformance/scenarios");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            let ours = ["nb-", "evpn-", "frr-and-evpn"];
            ours.iter().any(|p| name.starts_with(p)) && name.ends_with(".json")
        })
        .map(|p| p.display().to_string())
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "scenarios not found in {}",
        dir.display()
    );
    let out = Command::new(env!("CARGO_BIN_EXE_conformance"))
        .arg("scenario")
        .args(&files)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in stdout.lines().filter(|l| !l.starts_with(' ')) {
        let ok = line.starts_with("PASS ") || line.ends_with(" failed");
        assert!(ok, "unexpected line {line:?} in\n{stdout}");
    }
    let summary = stdout.lines().last().unwrap_or_default();
    let passed: usize = summary
        .split(" passed")
        .next()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(summary.contains(" 0 failed"), "{summary}");
    assert_eq!(passed, files.len(), "{stdout}");
}
