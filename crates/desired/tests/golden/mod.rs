//! Reading the golden scenarios (`fixtures/conformance/scenarios`): their
//! OVN rows as a snapshot and their configuration through the real loader.

// Each test binary uses its own subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use obgp_config::Config;
use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::{Snapshot, Tables, NB_DB, OVS_DB, SB_DB};
use serde_json::Value;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

pub fn read(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The golden scenario files, sorted.
pub fn scenario_paths() -> Vec<PathBuf> {
    let dir = fixtures().join("conformance/scenarios");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
}

/// The snapshot of a fixture's NB, SB and OVS rows.
pub fn snapshot(db: &FixtureDb) -> Snapshot {
    let empty = Tables::new();
    let get = |n: &str| db.dbs.get(n).unwrap_or(&empty);
    Snapshot::build_with_sb(get(NB_DB), get(SB_DB), get(OVS_DB))
}

/// The scenario's configuration through the real loader (`None` for a
/// scenario without one).
pub fn scenario_config(sc: &Value) -> Option<Config> {
    obgp_config::Loader::new()
        .json_overrides(sc["config"].as_object()?)
        .ok()?
        .load()
        .ok()
        .map(|l| l.config)
}
