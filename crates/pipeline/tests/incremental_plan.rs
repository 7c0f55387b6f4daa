//! The event-scoped plan against the full one over random histories: a
//! simulated node converged on the settled desired state, port changes (and
//! some others) on a topogen topology, the desired state computed through
//! the [`Pipeline`] (patched when only ports changed), and each time the
//! plan of the changed keys ([`PlanScope::Changes`]) must give the whole
//! plan's steps, in order; then the node takes the plan (or, now and then,
//! a reconcile fails before applying and settles nothing) and the history
//! goes on.

use std::collections::{BTreeMap, BTreeSet};

use obgp_config::{AdvertisementMethod, AnnounceWith};
use obgp_desired::{Computed, NodeFacts};
use obgp_netmodel::{Class, DesiredNode, MacAddr, NodeChanges};
use obgp_pipeline::{Judged, NodePlan, Pipeline, PipelineInputs, PlanScope};
use obgp_plan::plan::plan_after;
use obgp_plan::{Actual, ActualLink, Plan, SimulatedNode};
use proptest::prelude::*;
use world::{config, method, World};

// The histories of obgp-desired's `DesiredCache` tests.
#[path = "../../desired/tests/world/mod.rs"]
mod world;

/// A node before the agent: the mapped bridges (OVS bridges with a MAC and
/// the ports the flows name), the kernel's default rules and rt_tables.
fn bare(d: &DesiredNode) -> Actual {
    let mut a = Actual::booted();
    for (i, b) in d.bridge_tables.iter().enumerate() {
        let mac = MacAddr([0x02, 0, 0, 0, 0xbe, i as u8]);
        a.links.insert(
            b.clone(),
            ActualLink::new(i as u32 + 2, "openvswitch", Some(mac), true),
        );
    }
    for (n, f) in d.flows.iter().enumerate() {
        let ports = &mut a.bridges.entry(f.bridge.clone()).or_default().ports;
        ports.entry(f.in_port.clone()).or_insert(n as u32 + 1);
    }
    a
}

/// Applies `plan`'s ops; every one must succeed and leave `d` held.
fn apply(node: &mut SimulatedNode, plan: &obgp_plan::Plan, d: &DesiredNode, what: &str) {
    let start = node.log.len();
    node.apply_all(plan.ops());
    let failed: Vec<_> = node.log[start..]
        .iter()
        .filter(|(_, r)| r.is_err())
        .collect();
    assert!(failed.is_empty(), "{what}: {failed:?}");
    let again = plan_after(d, Some(d), &node.actual).expect("plannable");
    assert!(again.is_empty(), "{what}: not converged:\n{again}");
}

/// The keys whose class differs between `a` and `b` (or one lacks).
fn diff<K: Ord + Clone>(a: &BTreeMap<K, Class>, b: &BTreeMap<K, Class>) -> BTreeSet<K> {
    let keys: BTreeSet<&K> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

/// Every key in which `from` and `to` differ is listed in `c`.
fn lists_every_change(c: &NodeChanges, from: &DesiredNode, to: &DesiredNode) -> bool {
    diff(&from.addresses, &to.addresses).is_subset(&c.addresses)
        && diff(&from.rules, &to.rules).is_subset(&c.rules)
        && diff(&from.routes, &to.routes).is_subset(&c.routes)
        && diff(&from.neighbours, &to.neighbours).is_subset(&c.neighbours)
        && (from.proxy_neighbours == to.proxy_neighbours || c.proxy_neighbours)
}

/// What a history's plans were.
#[derive(Debug, Default)]
struct Counts {
    /// Incremental plans with at least one step.
    incremental: usize,
    full: usize,
}

/// `pipeline`'s plan of its last computation against `actual` in `scope`,
/// once it computed.
fn replan(pipeline: &Pipeline, actual: &Actual, scope: PlanScope) -> NodePlan {
    pipeline
        .replan_recorded(scope, actual)
        .expect("plannable")
        .expect("computed")
}

/// Replays `steps` (each: how many changes before computing, whether the
/// reconcile applies and settles) on the topology of `seed`.
fn history(
    seed: u64,
    distributed: bool,
    (method, announce): (AdvertisementMethod, AnnounceWith),
    steps: &[(u8, bool)],
) -> Counts {
    let config = config(method, announce);
    let facts = NodeFacts::default();
    let mut w = World::new(seed, distributed);
    let mut pipeline = Pipeline::default();
    let computed = pipeline
        .compute(&w.live.snapshot(), &mut w.changes, &config, &facts)
        .expect("supported");
    assert_eq!(computed.how, Computed::Full);
    let start = computed.node.clone();
    let mut node = SimulatedNode::new(bare(&start));
    let first = replan(&pipeline, &node.actual, PlanScope::Whole);
    assert_eq!(first.judged, Judged::Whole);
    apply(&mut node, &first.plan, &start, "start");
    pipeline.settle();

    let mut counts = Counts::default();
    for (i, &(changes, applies)) in steps.iter().enumerate() {
        for _ in 0..=changes {
            w.step();
        }
        // The event's run, as the daemon's: only the changed keys.
        let inputs = PipelineInputs {
            snapshot: &w.live.snapshot(),
            changes: &mut w.changes,
            config: &config,
            facts: &facts,
        };
        let run = pipeline
            .run_recorded(inputs, PlanScope::Changes, &node.actual)
            .expect("supported");
        let (how, event) = (run.how, run.planned);
        let what = format!("seed {seed}, step {i} ({how:?})");
        let (now, settled) = (pipeline.node().expect("computed"), pipeline.settled());
        let full: Plan = replan(&pipeline, &node.actual, PlanScope::Whole).plan;
        match pipeline.changes() {
            Some(c) => {
                let settled = settled.expect("changes are counted from a settled state");
                assert!(
                    lists_every_change(&c, settled, now),
                    "{what}: the pipeline's changes miss keys"
                );
                let inc = &event.plan;
                assert_eq!(
                    inc.steps, full.steps,
                    "{what}, {:?}:\n{inc}\nfull:\n{full}",
                    event.judged
                );
                assert_eq!(inc.skipped, full.skipped, "{what}");
                match event.judged {
                    Judged::Changes if !inc.is_empty() => counts.incremental += 1,
                    Judged::Changes => {}
                    Judged::WholeInstead(_) => counts.full += 1,
                    Judged::Whole => panic!("{what}: changes known, yet planned whole"),
                }
            }
            None => {
                assert!(
                    how == Computed::Full || settled.is_some(),
                    "{what}: no changes after a patch"
                );
                assert_eq!(event.judged, Judged::Whole, "{what}");
                assert_eq!(event.plan.steps, full.steps, "{what}");
                counts.full += 1;
            }
        }
        // A reconcile that fails before applying settles nothing: the node
        // still holds the settled state, and the changes add up.
        if applies {
            apply(&mut node, &full, &now.clone(), &what);
            pipeline.settle();
        }
    }
    counts
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn the_incremental_plan_equals_the_full_plan_over_random_histories(
        seed in 1u64..1_000_000,
        distributed in any::<bool>(),
        method in method(),
        steps in prop::collection::vec((0u8..3, prop::bool::weighted(0.85)), 30..60),
    ) {
        history(seed, distributed, method, &steps);
    }
}

#[test]
fn events_are_planned_from_their_keys() {
    // Not vacuous: on fixed histories, patched events are planned
    // incrementally (with steps), and the rest in full.
    let steps: Vec<(u8, bool)> = (0..40u8).map(|i| (i % 3, i % 7 != 0)).collect();
    for (seed, distributed, method) in [
        (1, false, (AdvertisementMethod::Host, AnnounceWith::Address)),
        (2, true, (AdvertisementMethod::Subnet, AnnounceWith::Route)),
    ] {
        let counts = history(seed, distributed, method, &steps);
        assert!(
            counts.incremental >= 3 && counts.full > 0,
            "seed {seed}: {counts:?}"
        );
    }
}
