//! The stable fallback of the fuzz targets (no nightly, no libFuzzer): every
//! committed seed and regression input (`fuzz/seeds/`, `fuzz/regressions/`),
//! then random inputs and random byte-level mutations of the seeds, through
//! the same harness functions as `fuzz/fuzz_targets/`. A panic is a bug;
//! the failing input is written to `target/fuzz-replay-failure-<target>`.
//!
//! `OBGP_FUZZ_CASES` (default 300) sets the random inputs per target,
//! `OBGP_FUZZ_SEED` the generator's seed (default fixed, so a failure
//! reproduces).

use std::path::{Path, PathBuf};

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `fuzz/<kind>/<target>/`, sorted.
fn files(kind: &str, target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = fuzz_dir().join(kind).join(target);
    let mut out: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| Some((e.path(), std::fs::read(e.path()).ok()?)))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Keeps a failing input in `target/fuzz-replay-failure-<target>` and
/// fails the test, whether or not the input panics again alone.
fn fail(target: &str, what: &str, failure: &obgp_fuzz::replay::Failure) -> ! {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target")
        .join(format!("fuzz-replay-failure-{target}"));
    let _ = std::fs::write(&path, &failure.input);
    panic!(
        "{target}: {what}: {failure}; input kept in {}",
        path.display()
    );
}

#[test]
fn committed_seeds_match_what_the_harness_generates() {
    for (target, _) in obgp_fuzz::TARGETS {
        let on_disk: Vec<Vec<u8>> = files("seeds", target).into_iter().map(|(_, b)| b).collect();
        let generated = obgp_fuzz::seed_inputs(target);
        assert!(!generated.is_empty(), "{target}: no seed input");
        assert_eq!(
            on_disk, generated,
            "{target}: fuzz/seeds is stale; run `cargo run -p obgp-fuzz --example write-seeds`"
        );
    }
}

#[test]
fn every_seed_and_regression_input_runs_without_a_panic() {
    for (target, run) in obgp_fuzz::TARGETS {
        for kind in ["seeds", "regressions"] {
            for (path, bytes) in files(kind, target) {
                if let Err(failure) = obgp_fuzz::replay::run_one(*run, &bytes, 0) {
                    fail(target, &path.display().to_string(), &failure);
                }
            }
        }
    }
}

#[test]
fn random_and_mutated_inputs_run_without_a_panic() {
    let cases = env_number("OBGP_FUZZ_CASES", 300);
    let seed = env_number("OBGP_FUZZ_SEED", 0x0b9f_f022);
    for (target, run) in obgp_fuzz::TARGETS {
        let corpus = obgp_fuzz::seed_inputs(target);
        if let Err(failure) = obgp_fuzz::replay::run_cases(*run, &corpus, cases, seed) {
            fail(target, "a random case", &failure);
        }
    }
}

#[test]
fn the_seeds_reach_the_planner_and_the_ovn_snapshot() {
    use obgp_fuzz::{pipeline, wire};
    let planned = obgp_fuzz::seed_inputs("pipeline")
        .iter()
        .filter(|s| pipeline::run_to(s) == pipeline::Stage::Planned)
        .count();
    let snapshots = obgp_fuzz::seed_inputs("wire")
        .iter()
        .filter(|s| wire::run_to(s) == wire::Stage::Snapshot)
        .count();
    // Every scenario's node states reach the planner (every recorded
    // driver is implemented).
    assert!(
        planned >= 150,
        "only {planned} pipeline seeds reach the planner"
    );
    assert!(
        snapshots >= 40,
        "only {snapshots} wire seeds reach the OVN snapshot"
    );
}
