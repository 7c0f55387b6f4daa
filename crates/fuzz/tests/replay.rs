//! The stable fallback of the fuzz targets (no nightly, no libFuzzer): every
//! committed seed and regression input (`fuzz/seeds/`, `fuzz/regressions/`),
//! then random inputs and random byte-level mutations of the seeds, through
//! the same harness functions as `fuzz/fuzz_targets/`. Every panic is a bug
//! and fails the test, also one that does not repeat when its input runs
//! again alone; the failing input is written to
//! `target/fuzz-replay-failure-<target>`.
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

/// Every seed reaches the stage its target exists for (measured: all 226
/// pipeline seeds plan, all 63 wire seeds build an OVN snapshot): every
/// scenario's driver is implemented and every recorded database decodes.
/// A seed that stops short is named.
#[test]
fn every_seed_reaches_the_planner_or_the_ovn_snapshot() {
    use obgp_fuzz::{pipeline, wire};
    let pipeline_seeds = obgp_fuzz::seed_inputs("pipeline");
    let short: Vec<(usize, pipeline::Stage)> = pipeline_seeds
        .iter()
        .map(|s| pipeline::run_to(s))
        .enumerate()
        .filter(|(_, stage)| *stage != pipeline::Stage::Planned)
        .collect();
    assert!(
        short.is_empty(),
        "{} of {} pipeline seeds stop before the planner (seed index, stage): {short:?}",
        short.len(),
        pipeline_seeds.len()
    );
    let wire_seeds = obgp_fuzz::seed_inputs("wire");
    let short: Vec<(usize, wire::Stage)> = wire_seeds
        .iter()
        .map(|s| wire::run_to(s))
        .enumerate()
        .filter(|(_, stage)| *stage != wire::Stage::Snapshot)
        .collect();
    assert!(
        short.is_empty(),
        "{} of {} wire seeds stop before the OVN snapshot (seed index, stage): {short:?}",
        short.len(),
        wire_seeds.len()
    );
}
