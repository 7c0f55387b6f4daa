//! The agent's one computation, as a pure type: the OVN snapshot, the node
//! facts and the configuration give the desired state
//! ([`obgp_desired::desired_state`]) and its node objects
//! ([`obgp_desired::Desired::to_node`]); those and the node as observed
//! give the plan ([`obgp_plan::plan_after`], or [`obgp_plan::plan_changes`]
//! on the keys a patched desired state changed).
//!
//! [`Pipeline::run`] is the one call: the daemon's reconcile, the one-shot
//! and offline commands (`plan`, `status`, `explain`), the conformance
//! runner and the fuzz harness all compute through it, so what the tests
//! check is what the daemon runs. Observing the node is I/O and happens
//! between the desired state and the plan (what is read follows the
//! desired node objects): the run asks for it through its one port,
//! [`ObserveNode`], which the daemon implements with its netlink mirror
//! and command lane and offline callers with a node state they hold
//! ([`Pipeline::run_recorded`]). The crate itself does no I/O.
//!
//! A [`Pipeline`] keeps the previous result ([`DesiredCache`]): the
//! desired state is patched when only ports changed (the caller hands in
//! what changed since the last computation, [`NbChanges`], as the live
//! snapshot returned it), and the result a
//! reconcile planned with ([`Pipeline::settle`]) gives the planner its
//! previous desired state (leftovers' classes, O3) and the changed keys.

mod facts;
mod observe;

use std::borrow::Borrow;
use std::convert::Infallible;

use obgp_config::Config;
use obgp_desired::{
    Computed, Desired, DesiredCache, DesiredCheck, DesiredError, ExposedIps, NodeFacts,
};
use obgp_netmodel::{DesiredNode, NodeChanges};
use obgp_ovn::{NbChanges, Snapshot};
use obgp_plan::{Actual, Coverage, Plan, PlanError};

pub use facts::{node_facts, NodeReadings, NodeReads};
pub use observe::{ObserveFor, ObserveNode};

/// Why a run gave no plan: the desired state's error, the observer's
/// (`E`, none for a recorded node state) or the planner's, as they say it.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError<E = Infallible> {
    #[error(transparent)]
    Desired(#[from] DesiredError),
    #[error("{0}")]
    Observe(E),
    #[error(transparent)]
    Plan(#[from] PlanError),
}

impl<E> PipelineError<E> {
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

/// What one run computes from.
pub struct PipelineInputs<'a> {
    pub snapshot: &'a Snapshot,
    /// What changed in OVN since the last computation, accumulated:
    /// consumed when the computation succeeds, kept when it fails
    /// ([`DesiredCache::compute`]); [`NbChanges::Full`] when not known.
    pub changes: &'a mut NbChanges,
    pub config: &'a Config,
    pub facts: &'a NodeFacts,
}

/// What [`Pipeline::run`] gave: how the desired state was computed, the
/// node as the observer saw it, and the plan.
#[derive(Debug)]
pub struct Run<A> {
    /// From every row, or patched.
    pub how: Computed,
    /// Whether the node objects may differ from the settled ones (see
    /// [`Computation::changed`]).
    pub changed: bool,
    /// The observation the plan was made against.
    pub actual: A,
    pub planned: NodePlan,
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

/// What a replan gives: the node as the port observed it and the plan;
/// `None` before a computation.
pub type Replanned<O> = Option<(<O as ObserveNode>::Observed, NodePlan)>;

/// The desired state kept between reconciles and the plans made from it
/// (see the crate doc).
#[derive(Default)]
pub struct Pipeline {
    desired: DesiredCache,
    /// How the last computation got its result.
    last: Option<Computed>,
}

impl Pipeline {
    /// The desired half of a run alone, for callers that plan nothing
    /// (the local-cluster goldens, tests of the patched desired state):
    /// brings the desired state and its node objects to `snap`, patched
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
        facts: &NodeFacts,
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

    /// One run: brings the desired state to `inputs` ([`Pipeline::compute`]),
    /// asks `observer` for the node its objects need (once), and plans them
    /// against that observation after the settled ones (see
    /// [`PlanScope`]). A failure leaves the settled result as it was; a
    /// computed desired state stays the one the next run patches.
    pub async fn run<O: ObserveNode>(
        &mut self,
        inputs: PipelineInputs<'_>,
        scope: PlanScope,
        observer: &mut O,
    ) -> Result<Run<O::Observed>, PipelineError<O::Error>> {
        let PipelineInputs {
            snapshot,
            changes,
            config,
            facts,
        } = inputs;
        let computed = self.compute(snapshot, changes, config, facts)?;
        let (how, changed) = (computed.how, computed.changed);
        let Some((actual, planned)) = self.replan(scope, observer).await? else {
            unreachable!("a successful compute leaves a result");
        };
        Ok(Run {
            how,
            changed,
            actual,
            planned,
        })
    }

    /// [`Pipeline::run`] with an observer that waits on nothing (a node
    /// state recorded, simulated or generated), driven to its end without
    /// an executor: the offline callers' run, through the same port.
    ///
    /// # Panics
    /// When the observer's future does not complete on its first poll.
    pub fn run_now<O: ObserveNode>(
        &mut self,
        inputs: PipelineInputs<'_>,
        scope: PlanScope,
        observer: &mut O,
    ) -> Result<Run<O::Observed>, PipelineError<O::Error>> {
        observe::ready_now(self.run(inputs, scope, observer))
    }

    /// [`Pipeline::run_now`] against a node state already at hand.
    pub fn run_recorded<'a>(
        &mut self,
        inputs: PipelineInputs<'_>,
        scope: PlanScope,
        actual: &'a Actual,
    ) -> Result<Run<&'a Actual>, PipelineError> {
        self.run_now(inputs, scope, &mut { actual })
    }

    /// Observes the node for the last computation and plans it again,
    /// nothing recomputed: what `status` shows on the daemon, and the
    /// follow-up plans of a replay once the first was applied. `None`
    /// before a computation.
    pub async fn replan<O: ObserveNode>(
        &self,
        scope: PlanScope,
        observer: &mut O,
    ) -> Result<Option<(O::Observed, NodePlan)>, PipelineError<O::Error>> {
        let Some(node) = self.desired.node() else {
            return Ok(None);
        };
        let wanted = ObserveFor {
            node,
            settled: self.desired.settled(),
        };
        let actual = observer
            .observe(wanted)
            .await
            .map_err(PipelineError::Observe)?;
        let planned = self.plan(node, actual.borrow(), scope)?;
        Ok(Some((actual, planned)))
    }

    /// [`Pipeline::replan`] with an observer that never waits (a replayed
    /// or simulated node), driven here.
    pub fn replan_now<O: ObserveNode>(
        &self,
        scope: PlanScope,
        observer: &mut O,
    ) -> Result<Replanned<O>, PipelineError<O::Error>> {
        observe::ready_now(self.replan(scope, observer))
    }

    /// [`Pipeline::replan`] against a node state already at hand.
    pub fn replan_recorded(
        &self,
        scope: PlanScope,
        actual: &Actual,
    ) -> Result<Option<NodePlan>, PipelineError> {
        let replanned = observe::ready_now(self.replan(scope, &mut { actual }))?;
        Ok(replanned.map(|(_, planned)| planned))
    }

    /// Plans `node`, the last computation's objects, against `actual`,
    /// after the settled ones (see [`PlanScope`]).
    fn plan(
        &self,
        node: &DesiredNode,
        actual: &Actual,
        scope: PlanScope,
    ) -> Result<NodePlan, PlanError> {
        let settled = self.desired.settled();
        let patched = matches!(self.last, Some(Computed::Patched { .. }));
        let changes = match scope {
            PlanScope::Changes if patched => self.desired.changes(),
            _ => None,
        };
        Ok(match changes {
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
        })
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
    facts: &NodeFacts,
    actual: &Actual,
) -> Result<Once, PipelineError> {
    let mut pipeline = Pipeline::default();
    let inputs = PipelineInputs {
        snapshot: snap,
        changes: &mut NbChanges::Full,
        config,
        facts,
    };
    let run = pipeline.run_recorded(inputs, PlanScope::Whole, actual)?;
    let plan = run.planned.plan;
    let Some((desired, node)) = pipeline.desired.into_result() else {
        unreachable!("a successful run leaves a result");
    };
    Ok(Once {
        desired,
        node,
        plan,
    })
}

#[cfg(test)]
mod tests;
