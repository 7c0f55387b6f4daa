//! Each input of the pipeline harness starts from a clean state: what an
//! input leads to (its snapshot, its plan) is the same when it runs alone
//! on a fresh thread and when it runs after another input of the same
//! scenario that panicked half-way through patching the scenario's live
//! snapshot. The panic is forced by a tracing layer that panics on the
//! snapshot code's first warning (a row it skips), where a bug there would
//! panic: a harness that kept the patched snapshot between inputs would
//! hand the next input the half-patched rows.

use obgp_fuzz::pipeline::{self, Outcome};
use obgp_fuzz::replay::{self, Rng};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

const FORCED: &str = "forced panic on a warning of the snapshot code";

/// Panics on every WARN event of `obgp_ovn` (the snapshot builder and the
/// live snapshot).
struct PanicOnSnapshotWarning;

impl<S: tracing::Subscriber> Layer<S> for PanicOnSnapshotWarning {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        let path = meta.module_path().unwrap_or_default();
        if *meta.level() == tracing::Level::WARN && path.starts_with("obgp_ovn") {
            panic!("{FORCED} ({path})");
        }
    }
}

/// `input`'s outcome on a thread of its own (nothing ran there before).
fn alone(input: &[u8]) -> Outcome {
    let input = input.to_vec();
    std::thread::spawn(move || pipeline::run_observed(&input))
        .join()
        .expect("the input panics alone")
}

#[test]
fn an_input_leads_to_the_same_outcome_alone_and_after_an_input_that_panicked() {
    let seeds = obgp_fuzz::seed_inputs("pipeline");
    let mut rng = Rng(0x0b9f_f022);
    let inputs: Vec<Vec<u8>> = (0..600)
        .map(|case| replay::input(&mut rng, case, &seeds))
        .chain(seeds.iter().cloned())
        .collect();
    let outcomes: Vec<Outcome> = inputs.iter().map(|i| alone(i)).collect();

    let inputs_ref = &inputs;
    let outcomes_ref = &outcomes;
    let (forced, compared, differing) = std::thread::scope(|s| {
        s.spawn(move || {
            let dispatch =
                tracing::Dispatch::new(tracing_subscriber::registry().with(PanicOnSnapshotWarning));
            let (mut forced, mut compared, mut differing) = (0, 0, Vec::new());
            for (a, first) in inputs_ref.iter().enumerate() {
                let panicked = tracing::dispatcher::with_default(&dispatch, || {
                    replay::run_one(pipeline::run, first, a as u64)
                });
                if !panicked.is_err_and(|f| f.message.starts_with(FORCED)) {
                    continue;
                }
                forced += 1;
                let scenario = pipeline::scenario_of(first);
                for (b, next) in inputs_ref.iter().enumerate() {
                    if b == a || pipeline::scenario_of(next) != scenario {
                        continue;
                    }
                    compared += 1;
                    // A panic here (alone it did not) differs too.
                    let after = std::panic::catch_unwind(|| pipeline::run_observed(next));
                    if after.as_ref().ok() != Some(&outcomes_ref[b]) {
                        differing.push((a, b));
                    }
                }
                if forced == 12 {
                    break;
                }
            }
            (forced, compared, differing)
        })
        .join()
        .expect("the comparing thread")
    });
    assert!(forced > 0, "no input met a warning of the snapshot code");
    assert!(
        compared > 0,
        "no other input of the panicking ones' scenarios"
    );
    assert!(
        differing.is_empty(),
        "{} of {compared} inputs led elsewhere after one of {forced} inputs that panicked in the snapshot code than alone (first pairs: {:?})",
        differing.len(),
        &differing[..differing.len().min(5)]
    );
}
