//! The pipeline's run on plain values: the port is asked once per run for
//! the computed objects, a failing observer settles nothing, and the run
//! plans what the pure functions plan.

use super::*;
use obgp_config::{Driver, ExposingMethod};
use obgp_desired::NodeFacts;

fn config() -> Config {
    let mut config = Config::default();
    config.default.driver = Driver::NbOvnBgpDriver;
    config.default.exposing_method = ExposingMethod::Underlay;
    config.default.bgp_router_id = Some("192.0.2.1".into());
    config
}

/// An observer that keeps what each run asked it for and answers with a
/// fixed node state, or fails.
struct Recording {
    actual: Actual,
    fail: bool,
    /// The node objects and the settled ones of every call, in order.
    asked: Vec<(DesiredNode, Option<DesiredNode>)>,
}

impl Recording {
    fn new(fail: bool) -> Recording {
        Recording {
            actual: Actual::booted(),
            fail,
            asked: Vec::new(),
        }
    }
}

impl ObserveNode for Recording {
    type Observed = Actual;
    type Error = String;

    async fn observe(&mut self, wanted: ObserveFor<'_>) -> Result<Actual, String> {
        self.asked
            .push((wanted.node.clone(), wanted.settled.cloned()));
        if self.fail {
            Err("the node cannot be read".into())
        } else {
            Ok(self.actual.clone())
        }
    }
}

fn run_with(
    pipeline: &mut Pipeline,
    config: &Config,
    observer: &mut Recording,
) -> Result<Run<Actual>, PipelineError<String>> {
    let inputs = PipelineInputs {
        snapshot: &Snapshot::default(),
        changes: &mut NbChanges::Full,
        config,
        facts: &NodeFacts::default(),
    };
    pipeline.run_now(inputs, PlanScope::Whole, observer)
}

#[test]
fn nothing_is_planned_before_a_computation() {
    let plan = Pipeline::default().replan_recorded(PlanScope::Whole, &Actual::booted());
    assert!(plan.expect("no planner error").is_none());
}

#[test]
fn once_is_desired_state_to_node_and_the_whole_plan() {
    let (snap, config, facts) = (Snapshot::default(), config(), NodeFacts::default());
    let actual = Actual::booted();
    let got = once(&snap, &config, &facts, &actual).expect("supported");
    let desired = obgp_desired::desired_state(&snap, &config, &facts).expect("supported");
    let node = desired.to_node();
    let plan = obgp_plan::plan_after(&node, None, &actual).expect("plannable");
    assert_eq!(got.desired, desired);
    assert_eq!(got.node, node);
    assert_eq!(got.plan, plan);
    // The VRF, bgp_nic and the VRF leak at least: not a vacuous plan.
    assert!(!got.plan.is_empty());
}

#[test]
fn the_observer_is_asked_once_per_run_for_the_computed_objects() {
    let mut pipeline = Pipeline::default();
    let mut observer = Recording::new(false);
    let first = run_with(&mut pipeline, &config(), &mut observer).expect("runs");
    assert_eq!(observer.asked.len(), 1);
    let computed = pipeline.node().expect("computed").clone();
    assert_eq!(observer.asked[0], (computed.clone(), None));
    // The plan is the one of the objects the observer was asked for,
    // against what it answered.
    let want = obgp_plan::plan_after(&computed, None, &observer.actual).expect("plannable");
    assert_eq!(first.planned.plan, want);
    assert_eq!(first.actual, observer.actual);

    pipeline.settle();
    let mut other = config();
    other.default.bgp_router_id = Some("192.0.2.2".into());
    let second = run_with(&mut pipeline, &other, &mut observer).expect("runs");
    assert!(second.changed, "another router-id, other FRR text");
    assert_eq!(observer.asked.len(), 2, "once per run");
    let now = pipeline.node().expect("computed").clone();
    assert_ne!(now, computed);
    assert_eq!(
        observer.asked[1],
        (now, Some(computed)),
        "the new objects, after the settled ones (whose leftovers are read too)"
    );
}

#[test]
fn a_failing_observer_leaves_the_settled_result() {
    let mut pipeline = Pipeline::default();
    run_with(&mut pipeline, &config(), &mut Recording::new(false)).expect("runs");
    pipeline.settle();
    let settled = pipeline.settled().expect("settled").clone();

    let mut other = config();
    other.default.bgp_router_id = Some("192.0.2.2".into());
    let mut failing = Recording::new(true);
    let err = run_with(&mut pipeline, &other, &mut failing).expect_err("the observer failed");
    assert!(
        matches!(&err, PipelineError::Observe(why) if why == "the node cannot be read"),
        "{err:?}"
    );
    assert_eq!(failing.asked.len(), 1);
    assert_eq!(
        pipeline.settled(),
        Some(&settled),
        "nothing was planned, nothing settles"
    );
    // The next run plans after the settled result still, with the new
    // objects computed again.
    let mut observer = Recording::new(false);
    run_with(&mut pipeline, &other, &mut observer).expect("runs");
    assert_eq!(observer.asked[0].1.as_ref(), Some(&settled));
}

#[test]
fn a_settled_result_is_the_next_plans_previous_state() {
    let (snap, config, facts) = (Snapshot::default(), config(), NodeFacts::default());
    let mut pipeline = Pipeline::default();
    let mut changes = NbChanges::Full;
    let first = pipeline
        .compute(&snap, &mut changes, &config, &facts)
        .expect("supported");
    assert_eq!(first.how, Computed::Full);
    assert!(first.changed, "nothing settled yet");
    assert!(pipeline.settled().is_none());
    pipeline.settle();
    // An event-scoped run of an unpatched result judges the whole node.
    let actual = Actual::booted();
    let inputs = PipelineInputs {
        snapshot: &snap,
        changes: &mut changes,
        config: &config,
        facts: &facts,
    };
    let again = pipeline
        .run_recorded(inputs, PlanScope::Changes, &actual)
        .expect("plannable");
    assert!(
        !again.changed,
        "the same snapshot gives the settled objects"
    );
    assert_eq!(pipeline.settled(), pipeline.node());
    assert_eq!(again.planned.judged, Judged::Whole);
    let node = pipeline.node().expect("computed");
    let whole = obgp_plan::plan_after(node, Some(node), &actual).expect("plannable");
    assert_eq!(again.planned.plan, whole);
}
