//! What changed travels as a value: over random NB histories, applied to
//! the live snapshot in random batch splits (a transaction as one batch or
//! row by row) and accumulated over a random number of steps, the
//! `NbChanges` handed to the [`Pipeline`] give the desired state and node
//! objects of a full computation; a non-port change makes them full, and a
//! successful computation consumes them.

use obgp_config::{AdvertisementMethod, AnnounceWith};
use obgp_desired::{desired_state, Computed, NodeFacts};
use obgp_pipeline::Pipeline;
use proptest::prelude::*;
use world::{config, method, World};

// The histories of obgp-desired's `DesiredCache` tests.
#[path = "../../desired/tests/world/mod.rs"]
mod world;

/// Replays `steps` (each: how many changes accumulate before computing) on
/// the topology of `seed`; returns how many computations were patched.
fn history(
    seed: u64,
    distributed: bool,
    (method, announce): (AdvertisementMethod, AnnounceWith),
    steps: &[u8],
) -> usize {
    let config = config(method, announce);
    let facts = NodeFacts::default();
    let mut w = World::new(seed, distributed);
    assert!(w.changes.is_full(), "a reset is not known change by change");
    let mut pipeline = Pipeline::default();
    let mut patched = 0;
    for (i, &changes) in steps.iter().enumerate() {
        let mut port_only = true;
        for _ in 0..changes {
            port_only &= w.step();
        }
        if !port_only {
            assert!(
                w.changes.is_full(),
                "seed {seed}, step {i}: a non-port change accumulated as port changes"
            );
        }
        let snap = w.live.snapshot();
        let computed = pipeline
            .compute(&snap, &mut w.changes, &config, &facts)
            .expect("supported");
        let what = format!("seed {seed}, step {i} ({:?})", computed.how);
        let want = desired_state(&snap, &config, &facts).expect("supported");
        assert!(computed.desired == &want, "{what}: desired state differs");
        assert!(
            computed.node == &want.to_node(),
            "{what}: node objects differ"
        );
        if let Computed::Patched { .. } = computed.how {
            assert!(port_only, "{what}: patched after a non-port change");
            patched += 1;
        }
        assert!(
            w.changes
                .ports_between(&snap, &snap)
                .is_some_and(|p| p.is_empty()),
            "{what}: the computation did not consume the changes"
        );
        pipeline.settle();
    }
    patched
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn accumulated_changes_give_the_full_computation_over_random_histories(
        seed in 1u64..1_000_000,
        distributed in any::<bool>(),
        method in method(),
        steps in prop::collection::vec(0u8..4, 30..60),
    ) {
        history(seed, distributed, method, &steps);
    }
}

#[test]
fn accumulated_port_changes_are_patched() {
    // Not vacuous: on a fixed history, computations after port changes
    // alone are patched.
    let steps: Vec<u8> = (0..40u8).map(|i| i % 3).collect();
    let patched = history(
        3,
        false,
        (AdvertisementMethod::Host, AnnounceWith::Address),
        &steps,
    );
    assert!(patched >= 10, "only {patched} of 40 computations patched");
}
