//! The agent's one computation, as a pure type: the OVN snapshot, the node
//! facts and the configuration give the desired state
//! ([`obgp_desired::desired_state`]) and its node objects
//! ([`obgp_desired::Desired::to_node`]); those and the node as observed
//! give the plan ([`obgp_plan::plan_after`], or [`obgp_plan::plan_changes`]
//! on the keys a patched desired state changed).
//!
//! The daemon's reconcile, the one-shot and offline commands (`plan`,
//! `status`, `explain`), the conformance runner and the fuzz harness all
//! compute through here, so what the tests check is what the daemon runs.
//! Observing the node is I/O and stays with the caller, between the two
//! halves: [`Pipeline::compute`] gives the desired node objects (what the
//! observation's scope follows), then [`Pipeline::plan`] plans them
//! against what was observed.
//!
//! A [`Pipeline`] keeps the previous result ([`DesiredCache`]): the
//! desired state is patched when only ports changed (the caller hands in
//! what changed since the last computation, [`NbChanges`], as the live
//! snapshot returned it), and the result a
//! reconcile planned with ([`Pipeline::settle`]) gives the planner its
//! previous desired state (leftovers' classes, O3) and the changed keys.

mod facts;

use obgp_config::Config;
use obgp_desired::{Computed, Desired, DesiredCache, DesiredCheck, DesiredError, ExposedIps};
use obgp_netmodel::{DesiredNode, NodeChanges};
use obgp_ovn::{NbChanges, Snapshot};
use obgp_plan::{Actual, Coverage, Plan, PlanError};

pub use facts::{node_facts, NodeReadings, NodeReads};

/// Why the pipeline gave no plan: the desired state's error or the
/// planner's, as they say it.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Desired(#[from] DesiredError),
    #[error(transparent)]
    Plan(#[from] PlanError),
}

impl PipelineError {
    /// The configuration is at fault: a value the driver cannot use
    /// ([`DesiredError::BadConfig`]) or a device of the node it names
    /// that is not the agent's ([`PlanError::ForeignDevice`]).
    pub fn is_config_error(&self) -> bool {
        matches!(
            self,
            PipelineError::Desired(DesiredError::BadConfig { .. })
                | PipelineError::Plan(PlanError::ForeignDevice { .. })
        )
    }
}

/// How far a plan looks at the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanScope {
    /// Every node object: what repairs drift.
    Whole,
    /// Only the node objects the desired state's patches changed since the
    /// settled result, when the last computation was a patch; the whole
    /// node otherwise. For reconciles OVN events alone started.
    Changes,
}

/// How much of the node a plan judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judged {
    /// The whole node, as asked (or no changed keys were known).
    Whole,
    /// Only the changed keys.
    Changes,
    /// The whole node although the changed keys were asked for: they could
    /// not tell, for this reason ([`Coverage::Full`]).
    WholeInstead(&'static str),
}

/// A plan and how much of the node it judged.
#[derive(Clone, Debug)]
pub struct NodePlan {
    pub plan: Plan,
    pub judged: Judged,
}

/// What [`Pipeline::compute`] gave.
#[derive(Clone, Copy, Debug)]
pub struct Computation<'a> {
    pub desired: &'a Desired,
    /// Its node objects.
    pub node: &'a DesiredNode,
    /// From every row, or patched.
    pub how: Computed,
    /// Whether the node objects may differ from the settled ones: a patch
    /// redid at least one port, or a full computation gave other objects.
    pub changed: bool,
}

/// The desired state kept between reconciles and the plans made from it
/// (see the crate doc).
#[derive(Default)]
pub struct Pipeline {
    desired: DesiredCache,
    /// How the last computation got its result.
    last: Option<Computed>,
}

impl Pipeline {
    /// Brings the desired state and its node objects to `snap`: patched
    /// when `changes`, accumulated since the last computation, say only
    /// ports changed, from every row otherwise. `changes` are consumed when
    /// the computation succeeds and kept when it fails
    /// ([`DesiredCache::compute`]); pass [`NbChanges::Full`] when they are
    /// not known.
    pub fn compute(
        &mut self,
        snap: &Snapshot,
        changes: &mut NbChanges,
        config: &Config,
        facts: &obgp_desired::NodeFacts,
    ) -> Result<Computation<'_>, DesiredError> {
        self.last = None;
        let how = self.desired.compute(snap, changes, config, facts)?;
        self.last = Some(how);
        let (Some(desired), Some(node)) = (self.desired.desired(), self.desired.node()) else {
            unreachable!("a successful compute leaves a result");
        };
        // A patch that redid no port changed nothing; a full computation
        // is compared (it already walked every row, so the comparison adds
        // little).
        let changed = match how {
            Computed::Patched { ports } => ports > 0,
            Computed::Full => self.desired.settled() != Some(node),
        };
        Ok(Computation {
            desired,
            node,
            how,
            changed,
        })
    }

    /// Plans the last computation's node objects against `actual`, after
    /// the settled ones (see [`PlanScope`]); `None` before a computation.
    pub fn plan(&self, actual: &Actual, scope: PlanScope) -> Result<Option<NodePlan>, PlanError> {
        let Some(node) = self.desired.node() else {
            return Ok(None);
        };
        let settled = self.desired.settled();
        let patched = matches!(self.last, Some(Computed::Patched { .. }));
        let changes = match scope {
            PlanScope::Changes if patched => self.desired.changes(),
            _ => None,
        };
        let planned = match changes {
            Some(changes) => {
                let (plan, coverage) = obgp_plan::plan_changes(node, settled, actual, &changes)?;
                let judged = match coverage {
                    Coverage::Changes => Judged::Changes,
                    Coverage::Full(why) => Judged::WholeInstead(why),
                };
                NodePlan { plan, judged }
            }
            None => NodePlan {
                plan: obgp_plan::plan_after(node, settled, actual)?,
                judged: Judged::Whole,
            },
        };
        Ok(Some(planned))
    }

    /// The last desired state, if any.
    pub fn desired(&self) -> Option<&Desired> {
        self.desired.desired()
    }

    /// The node objects of the last desired state.
    pub fn node(&self) -> Option<&DesiredNode> {
        self.desired.node()
    }

    /// The node objects of the last settled result: what the previous
    /// reconcile planned with.
    pub fn settled(&self) -> Option<&DesiredNode> {
        self.desired.settled()
    }

    /// The node-object keys in which the last result differs from the
    /// settled one, as patches changed them: what a [`PlanScope::Changes`]
    /// plan judges. `None` when not known (nothing settled, or a full
    /// computation since).
    pub fn changes(&self) -> Option<NodeChanges> {
        self.desired.changes()
    }

    /// The IPs the last desired state exposes (a cheap copy).
    pub fn exposed_ips(&self) -> ExposedIps {
        self.desired.exposed_ips()
    }

    /// Marks the last result as the one a reconcile planned with (and
    /// applied): later plans take it as the previous desired state.
    pub fn settle(&mut self) {
        self.desired.settle();
    }

    /// The next computation is a full one (the settled result stays).
    pub fn clear(&mut self) {
        self.desired.clear();
    }

    /// A full computation to compare with the last (patched) result, to run
    /// off the caller's thread; `None` before the first computation.
    pub fn check(&self) -> Option<DesiredCheck> {
        self.desired.check()
    }
}

/// One computation with no previous result, planned whole: what the
/// offline commands plan with.
pub struct Once {
    pub desired: Desired,
    pub node: DesiredNode,
    pub plan: Plan,
}

/// Computes `snap`'s desired state and plans it against `actual`, with no
/// previous result.
pub fn once(
    snap: &Snapshot,
    config: &Config,
    facts: &obgp_desired::NodeFacts,
    actual: &Actual,
) -> Result<Once, PipelineError> {
    let mut pipeline = Pipeline::default();
    pipeline.compute(snap, &mut NbChanges::Full, config, facts)?;
    let planned = pipeline.plan(actual, PlanScope::Whole)?;
    let (Some((desired, node)), Some(NodePlan { plan, .. })) =
        (pipeline.desired.into_result(), planned)
    else {
        unreachable!("a successful compute leaves a result");
    };
    Ok(Once {
        desired,
        node,
        plan,
    })
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn nothing_is_planned_before_a_computation() {
        let plan = Pipeline::default().plan(&Actual::booted(), PlanScope::Whole);
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
        let again = pipeline
            .compute(&snap, &mut changes, &config, &facts)
            .expect("supported");
        assert!(
            !again.changed,
            "the same snapshot gives the settled objects"
        );
        assert_eq!(pipeline.settled(), pipeline.node());
        // An event-scoped plan of an unpatched result judges the whole node.
        let actual = Actual::booted();
        let planned = pipeline
            .plan(&actual, PlanScope::Changes)
            .expect("plannable")
            .expect("computed");
        assert_eq!(planned.judged, Judged::Whole);
        let node = pipeline.node().expect("computed");
        let whole = obgp_plan::plan_after(node, Some(node), &actual).expect("plannable");
        assert_eq!(planned.plan, whole);
    }
}
