//! One reconcile: the node facts read, one run of the pipeline
//! ([`Pipeline::run`]: the desired state, the node observed for it through
//! `NodeObserver`, the plan), the mass-withdrawal guard, the plan applied
//! with the single writer; and a report of what happened and how long each
//! phase took.

use std::sync::Arc;
use std::time::Instant;

use obgp_config::Config;
use obgp_desired::{desired_state, Computed, DesiredError, NodeFacts};
use obgp_local_cluster::LocalClusterPlan;
use obgp_netmodel::DesiredNode;
use obgp_node::{CommandLane, DriftProbe, KernelConfig, KernelNode, LaneSignal, NodeWriter, Scope};
use obgp_ovn::{NbChanges, Snapshot};
use obgp_pipeline::{
    node_facts, Judged, NodePlan, NodeReadings, NodeReads, Pipeline, PipelineError, PipelineInputs,
    PlanScope, Run,
};
use obgp_plan::{apply_plan_until, Actual, Op, Plan, PlanError};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::guard::{GuardConfig, Sample, Verdict, WithdrawalGuard};
use crate::inputs::{system_hostname, LocalClusterError, LocalClusterSource, OfPorts};
use crate::kind::ReconcileKind;

mod last_plan;
mod local_cluster;
mod node_side;
mod outcome;

pub use crate::ops::{FrrApplyCause, FrrOutcome, FrrResult, ReconcileReport};
use last_plan::LastPlan;
pub use node_side::object_kind;
pub(crate) use node_side::unread_commands;
use node_side::{announced_prefixes, leftover_flows_unjudged, op_kind, scope_after, NodeObserver};
use outcome::account_applied;

/// Why a reconcile could not run. Only [`ReconcileError::Plan`] with
/// `TablesExhausted` is fatal for the agent; everything else is retried by
/// the next reconcile.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("desired state: {0}")]
    Desired(#[from] DesiredError),
    #[error("observing the node: {0}")]
    Observe(String),
    #[error("planning: {0}")]
    Plan(#[from] PlanError),
    #[error("connecting to the node: {0}")]
    Connect(String),
    #[error(transparent)]
    LocalClusterRows(#[from] LocalClusterError),
    /// The snapshot could not be read as it must be (a conditional NB
    /// monitor whose port conditions did not converge).
    #[error("reading OVN: {0}")]
    Inputs(String),
}

impl From<PipelineError<ReconcileError>> for ReconcileError {
    fn from(e: PipelineError<ReconcileError>) -> ReconcileError {
        match e {
            PipelineError::Desired(e) => e.into(),
            PipelineError::Observe(e) => e,
            PipelineError::Plan(e) => e.into(),
        }
    }
}

impl ReconcileError {
    /// Routing-table exhaustion: the one condition the agent exits on.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            ReconcileError::Plan(PlanError::TablesExhausted { .. })
        )
    }

    /// The configuration names a device of the node the agent must not
    /// touch ([`PlanError::ForeignDevice`]), or a value the driver cannot
    /// use ([`DesiredError::BadConfig`], e.g. `exposing_method = vrf`
    /// without `evpn_local_ip`).
    pub fn is_config_error(&self) -> bool {
        matches!(
            self,
            ReconcileError::Plan(PlanError::ForeignDevice { .. })
                | ReconcileError::Desired(DesiredError::BadConfig { .. })
        )
    }
}

/// Refuses, before connecting anywhere, a driver or exposing method whose
/// desired state is not implemented, or a configuration it cannot use
/// (`exposing_method = vrf` without `evpn_local_ip`): an empty OVN snapshot
/// is enough to ask.
pub fn check_supported(config: &Config) -> Result<(), ReconcileError> {
    match desired_state(&Snapshot::default(), config, &NodeFacts::default()) {
        Err(e @ (DesiredError::Unsupported { .. } | DesiredError::BadConfig { .. })) => {
            Err(e.into())
        }
        _ => Ok(()),
    }
}

/// A computed plan with the node state it was computed against.
pub struct Planned {
    pub actual: Actual,
    pub plan: Plan,
    /// `exposing_method = ovn`: the node-local NB transaction, planned
    /// against the rows its monitor shows.
    pub local_nb: Option<LocalClusterPlan>,
}

impl Planned {
    /// Whether nothing is to be done, on the node or in the local NB.
    pub fn is_empty(&self) -> bool {
        self.plan.is_empty()
            && self
                .local_nb
                .as_ref()
                .is_none_or(LocalClusterPlan::is_empty)
    }
}

/// Owns the node side: the kernel connection and what the last reconcile
/// wanted (it classifies leftovers for the O3 order and tells whether FRR
/// already has our text).
pub struct Reconciler {
    config: Config,
    node: KernelNode,
    /// The last desired state and its node objects (patched when only ports
    /// changed), and those the last reconcile planned with.
    desired: Pipeline,
    /// What changed in OVN since the snapshot the desired state was last
    /// computed from, accumulated until a computation consumes it.
    ovn_changes: NbChanges,
    /// The FRR text last applied successfully.
    frr_applied: Option<String>,
    /// The planner's warnings already logged (each once, not per reconcile).
    warned: std::collections::BTreeSet<String>,
    /// The system hostname, read once at start.
    system_hostname: Option<String>,
    /// The facts the last computation took ([`node_facts`] of what was read).
    facts: NodeFacts,
    /// Cancelled when the agent stops: the apply ends after the op in flight.
    stop: CancellationToken,
    /// The one reader and writer of FRR and the OVS flows, off this loop.
    lane: CommandLane,
    /// Wait for the lane's reads and ops (the one-shot commands) instead of
    /// planning around what it does not know yet.
    wait_for_commands: bool,
    /// The daemon's mass-withdrawal guard, and the driver database's row
    /// count it compares.
    guard: Option<WithdrawalGuard>,
    database_rows: usize,
    /// The FRR text last applied successfully or found in FRR, kept across
    /// FRR checks (unlike `frr_applied`): what tells an FRR re-apply's cause.
    frr_known: Option<String>,
    /// The ops the last reconcile planned: one planned again (a retry of
    /// a failure, a held withdrawal) is no drift repair.
    last_plan: LastPlan,
    /// `exposing_method = ovn`: the node-local NB this reconciler writes.
    local_nb: Option<Arc<LocalClusterSource>>,
}

impl Reconciler {
    /// Connects to the node (rtnetlink in the configured namespace).
    pub async fn connect(
        config: Config,
        kernel: KernelConfig,
    ) -> Result<Reconciler, ReconcileError> {
        let node = KernelNode::connect(kernel.clone())
            .await
            .map_err(|e| ReconcileError::Connect(e.to_string()))?;
        let lane = CommandLane::start(kernel.clone())
            .map_err(|e| ReconcileError::Connect(format!("starting the command lane: {e}")))?;
        Ok(Reconciler {
            config,
            node,
            desired: Pipeline::default(),
            ovn_changes: NbChanges::Full,
            frr_applied: None,
            warned: Default::default(),
            system_hostname: system_hostname(),
            facts: NodeFacts::default(),
            stop: CancellationToken::new(),
            lane,
            wait_for_commands: false,
            guard: None,
            database_rows: 0,
            frr_known: None,
            last_plan: LastPlan::default(),
            local_nb: None,
        })
    }

    /// Guards this reconciler's withdrawals against an emptied database
    /// (the daemon; see [`WithdrawalGuard`]).
    pub fn guard_withdrawals(&mut self, config: GuardConfig) {
        self.guard = Some(WithdrawalGuard::new(config));
    }

    /// Adds what changed in OVN since the inputs read before (`ReconcileInputs::changes`)
    /// to what the next computation patches from; inputs read without
    /// handing their changes here make it compute from every row.
    pub fn note_ovn_changes(&mut self, changes: NbChanges) {
        self.ovn_changes.then(changes);
    }

    /// How many rows the driver's database holds now (the guard compares).
    pub fn note_database_rows(&mut self, rows: usize) {
        self.database_rows = rows;
    }

    /// How many mass withdrawals the guard has held so far.
    pub fn withdrawal_holds(&self) -> u64 {
        self.guard.as_ref().map_or(0, |g| g.holds)
    }

    /// Asks the guard about `plan`, holding its removals if it says so;
    /// true while holding.
    fn guard(&mut self, plan: &mut Plan, actual: &Actual, report: &mut ReconcileReport) -> bool {
        let Some(guard) = &mut self.guard else {
            return false;
        };
        let withdrawals = plan.withdrawals();
        // Counting the announced prefixes walks the addresses: only when
        // something would be withdrawn.
        let announced = if withdrawals == 0 {
            0
        } else {
            announced_prefixes(actual, &self.config)
        };
        let sample = Sample {
            announced,
            withdrawals,
            rows: self.database_rows,
        };
        let verdict = guard.judge(sample, Instant::now());
        tracing::debug!(?sample, ?verdict, "mass-withdrawal guard");
        match verdict {
            Verdict::Apply => false,
            Verdict::Hold { left, first } => {
                report.withdrawals_held = plan.hold_removals();
                if first {
                    tracing::error!(
                        withdrawals,
                        announced,
                        rows = sample.rows,
                        grace_s = left.as_secs(),
                        "mass withdrawal: the database lost most of its rows and the plan withdraws most of the node's prefixes; holding the withdrawals (mass_withdrawal_grace)"
                    );
                } else {
                    tracing::warn!(
                        withdrawals,
                        left_s = left.as_secs(),
                        "still holding a mass withdrawal"
                    );
                }
                true
            }
            Verdict::Release { held_for } => {
                tracing::warn!(
                    withdrawals,
                    held_s = held_for.as_secs(),
                    "the database stayed emptied for the grace period: applying the held withdrawals"
                );
                false
            }
        }
    }

    /// Makes every reconcile wait for the command lane: FRR and the OVS
    /// flows are read before planning, and the command ops are applied
    /// before it returns (each command within its deadline). For
    /// `reconcile --once` and `plan`, which report what they did; the
    /// daemon never waits.
    pub fn wait_for_commands(&mut self) {
        self.wait_for_commands = true;
    }

    /// Changes whenever the command lane ran out of work: a reconcile is
    /// due when it learnt what a reconcile could not plan without, a retry
    /// when something failed.
    pub fn lane_signals(&self) -> watch::Receiver<LaneSignal> {
        self.lane.signals()
    }

    /// Takes the command lane's finished ops into `report`, and remembers
    /// FRR text that was applied.
    fn absorb_lane(&mut self, report: &mut ReconcileReport) {
        for outcome in self.lane.take_outcomes() {
            if let Op::ApplyFrr { .. } | Op::RemoveFrr { .. } = &outcome.op {
                report.frr_results.push(FrrResult {
                    removal: matches!(outcome.op, Op::RemoveFrr { .. }),
                    outcome: match &outcome.result {
                        Ok(()) => FrrOutcome::Applied,
                        Err(e) if outcome.rejected => FrrOutcome::Rejected(e.clone()),
                        Err(e) => FrrOutcome::Failed(e.clone()),
                    },
                });
            }
            match &outcome.result {
                Ok(()) => {
                    if let Op::ApplyFrr { config } = &outcome.op {
                        self.frr_applied = Some(config.clone());
                        self.frr_known = Some(config.clone());
                    }
                    *report
                        .commands_applied
                        .entry(op_kind(&outcome.op))
                        .or_default() += 1;
                }
                // A removal (`RemoveFrr`, del-vrf of a VRF no VNI wants)
                // touches no line of our text: it neither applies it nor
                // undoes it, and FRR is read again after it anyway.
                Err(e) => {
                    if matches!(outcome.op, Op::ApplyFrr { .. }) {
                        self.frr_applied = None;
                    }
                    report.failed.push(format!("{}: {e}", outcome.op));
                    *report.failed_kinds.entry(op_kind(&outcome.op)).or_default() += 1;
                }
            }
        }
    }

    /// Stops applying after the op in flight once `token` is cancelled
    /// (the rest of the plan is left for the next start; see
    /// [`obgp_plan::apply_plan_until`] for why any prefix is safe).
    pub fn stop_on(&mut self, token: CancellationToken) {
        self.stop = token;
    }

    /// Marks stale what `kind` re-reads or recomputes: the netlink mirror
    /// (the observe dumps the node afresh), the OVS ports and flows the
    /// command lane read, the desired state to patch. FRR's re-read is
    /// [`Reconciler::compute_observe_and_plan`]'s.
    fn mark_stale(&mut self, kind: ReconcileKind) {
        if kind.reread.node_dumps {
            self.node.resync();
        }
        if kind.reread.node_dumps || kind.reread.ovs_flows {
            self.lane.invalidate_flows();
        }
        if kind.recompute_desired {
            self.desired.clear();
        }
    }

    /// Changes whenever the node's netlink mirror lost notifications; the
    /// run loop answers with a full reconcile.
    pub fn netlink_overruns(&self) -> watch::Receiver<u64> {
        self.node.overruns()
    }

    /// The last desired state, if one was computed.
    pub fn desired(&self) -> Option<&obgp_desired::Desired> {
        self.desired.desired()
    }

    /// The node facts the last plan computed with (hostname, FRR's
    /// router-id, the VXLAN source).
    pub fn facts(&self) -> &NodeFacts {
        &self.facts
    }

    /// The IPs the last desired state exposes (a cheap copy).
    pub fn exposed_ips(&self) -> obgp_desired::ExposedIps {
        self.desired.exposed_ips()
    }

    /// What to read of the node for desired objects `node`.
    fn scope(&self, node: &DesiredNode) -> Scope {
        scope_after(node, self.desired.settled())
    }

    /// A background re-read of the OVS bridges and FRR configuration the
    /// last reconcile relied on; `None` before the first one.
    /// What reads FRR's BGP sessions (`status`, the metrics), with the
    /// command lane's vtysh settings.
    pub fn bgp_sessions_reader(&self) -> obgp_node::BgpSessionsReader {
        self.lane.bgp_sessions_reader()
    }

    pub fn drift_probe(&self) -> Option<DriftProbe> {
        let node = self.desired.node()?;
        Some(self.lane.drift_probe(&self.scope(node)))
    }

    /// A full computation of the desired state to compare with the last
    /// (patched) one, off the reconcile loop.
    pub fn desired_check(&self) -> Option<obgp_desired::DesiredCheck> {
        self.desired.check()
    }

    /// This node's name in the rows the driver reads: the OVS `system-id`
    /// for the SB driver, the hostname (OVS `hostname`, else the system's)
    /// for the NB driver's LSP `requested-chassis`/`neutron:host_id`.
    pub fn chassis_name(&self, snap: &Snapshot) -> String {
        obgp_desired::chassis_name(&self.config, snap, self.facts.system_hostname.as_deref())
            .unwrap_or_default()
            .to_string()
    }

    /// The flattened desired state the last reconcile computed.
    pub fn desired_node(&self) -> Option<&DesiredNode> {
        self.desired.node()
    }

    /// Observes the node against the desired state the last reconcile
    /// computed (nothing is recomputed, nothing written, no lane outcome
    /// taken) and plans from it: what `status` shows on the daemon.
    /// `None` before a desired state was computed.
    pub async fn observe_desired(
        &mut self,
        ofports: &OfPorts,
    ) -> Result<Option<Planned>, ReconcileError> {
        let mut observer = NodeObserver::new(
            &mut self.node,
            &self.lane,
            ofports,
            self.wait_for_commands,
            self.frr_applied.as_deref(),
        );
        let replanned = self.desired.replan(PlanScope::Whole, &mut observer).await?;
        let Some((actual, NodePlan { plan, .. })) = replanned else {
            return Ok(None);
        };
        let local_nb = self.plan_local_cluster()?;
        Ok(Some(Planned {
            actual,
            plan,
            local_nb,
        }))
    }

    /// Reads what the configuration's node facts need ([`NodeReads`]) and
    /// builds them ([`node_facts`]): FRR's router-id when `bgp_router_id`
    /// is unset (kept once known), the node's addresses for the SB EVPN
    /// driver's VXLAN source, the links and addresses for the external
    /// bridges of `exposing_method = ovn`, all as the mirror last saw them
    /// (read before the desired state, so that the first reconcile, and
    /// `plan`, already knows them).
    async fn read_facts(&mut self, snap: &Snapshot) -> Result<(), ReconcileError> {
        let reads = NodeReads::of(&self.config);
        let mut frr_router_id = self.facts.frr_router_id.clone();
        if reads.frr_router_id && frr_router_id.is_none() {
            frr_router_id = self.lane.router_id();
            if frr_router_id.is_none() && self.wait_for_commands {
                self.lane.settled().await;
                frr_router_id = self.lane.router_id();
            }
        }
        let observe = |e: obgp_node::IoError| ReconcileError::Observe(e.to_string());
        let (links, addresses) = if reads.links {
            let (links, addresses) = self.node.links_and_addresses().map_err(observe)?;
            (Some(links), Some(addresses))
        } else if reads.addresses {
            (None, Some(self.node.addresses().map_err(observe)?))
        } else {
            (None, None)
        };
        let read = NodeReadings {
            system_hostname: self.system_hostname.as_deref(),
            frr_router_id: frr_router_id.as_deref(),
            links: links.as_ref(),
            addresses: addresses.as_deref(),
            bridge_facts: None,
        };
        self.facts = node_facts(&self.config, snap, read);
        Ok(())
    }

    /// One run of the pipeline, without writing: the desired state, the
    /// node observed for it (`NodeObserver`), the plan. `kind` says what
    /// to read afresh, whether to recompute the desired state and whether
    /// to plan only what its patches changed.
    pub async fn compute_observe_and_plan(
        &mut self,
        snap: &Snapshot,
        ofports: &OfPorts,
        kind: ReconcileKind,
    ) -> Result<(Planned, ReconcileReport), ReconcileError> {
        let mut report = ReconcileReport::default();
        self.mark_stale(kind);
        let check_frr = kind.reread.frr;
        let changes_only = kind.plan_changes_only;
        self.absorb_lane(&mut report);
        if check_frr {
            // Read FRR again, and until then do not take the text last
            // applied as still there (FRR may have restarted without it).
            self.lane.invalidate_frr();
            self.frr_applied = None;
        }
        self.read_facts(snap).await?;

        // A first computation (the main job, or after a full dump) logs
        // its memory stage by stage at debug.
        let first = self.desired.desired().is_none();
        let scope = if changes_only {
            PlanScope::Changes
        } else {
            PlanScope::Whole
        };
        // On an FRR check `frr_applied` was forgotten above: FRR's lines
        // are read.
        let mut observer = NodeObserver::new(
            &mut self.node,
            &self.lane,
            ofports,
            self.wait_for_commands,
            self.frr_applied.as_deref(),
        );
        observer.log_stages = first;
        let inputs = PipelineInputs {
            snapshot: snap,
            changes: &mut self.ovn_changes,
            config: &self.config,
            facts: &self.facts,
        };
        let start = Instant::now();
        let run = self.desired.run(inputs, scope, &mut observer).await;
        let (desired_time, observe_time, plan_time) = observer.times(start);
        let Run {
            how,
            changed,
            actual,
            planned: NodePlan { plan, judged },
        } = run?;
        report.desired_patched = matches!(how, Computed::Patched { .. });
        report.desired_changed = changed;
        report.desired_time = desired_time;
        report.observe_time = observe_time;
        report.exposed = self.desired.desired().map_or(0, |d| d.exposure_count());
        report.unread = unread_commands(&actual);
        match judged {
            Judged::Changes => report.plan_incremental = true,
            Judged::WholeInstead(why) => tracing::debug!(why, "planned the whole node"),
            Judged::Whole => {}
        }
        let t = Instant::now();
        let local_nb = self.plan_local_cluster()?;
        report.plan_time = plan_time + t.elapsed();
        report.planned = plan.steps.len() + local_nb.as_ref().map_or(0, |p| p.ops.len());
        if first {
            crate::ops::log_stage("planned");
        }
        for w in &plan.warnings {
            if self.warned.insert(w.clone()) {
                tracing::warn!("{w}");
            }
        }
        Ok((
            Planned {
                actual,
                plan,
                local_nb,
            },
            report,
        ))
    }

    /// What FRR's read tells before the apply: found holding our text,
    /// later reconciles may take it as applied without reading (until the
    /// next FRR check); and why the plan applies FRR's text, if it does.
    fn note_frr(&mut self, actual: &Actual, plan: &Plan, report: &mut ReconcileReport) {
        let desired_frr = self.desired.node().and_then(|n| n.frr_config.clone());
        if !actual.frr.unknown && actual.frr.has_our_config {
            self.frr_applied = desired_frr.clone();
            self.frr_known = desired_frr.clone();
        }
        if plan
            .steps
            .iter()
            .any(|s| matches!(s.op, Op::ApplyFrr { .. }))
        {
            report.frr_apply = Some(match &self.frr_known {
                None => FrrApplyCause::Initial,
                Some(known) if Some(known) != desired_frr.as_ref() => FrrApplyCause::Changed,
                Some(_) => FrrApplyCause::Missing,
            });
        }
    }

    /// The ops the previous reconcile planned, as text, when an op of
    /// `plan` may be a drift repair: only when the desired state did not
    /// change (`None` otherwise: no op repairs). Built only when there is
    /// something to judge.
    fn planned_before(
        &self,
        plan: &Plan,
        report: &ReconcileReport,
    ) -> Option<std::collections::HashSet<String>> {
        if report.desired_changed {
            return None;
        }
        if plan.steps.is_empty() {
            return Some(Default::default());
        }
        Some(
            self.last_plan
                .ops()
                .iter()
                .map(|op| op.to_string())
                .collect(),
        )
    }

    /// One reconcile of `kind`: [`Reconciler::compute_observe_and_plan`], then the
    /// mass-withdrawal guard and the single writer.
    pub async fn reconcile(
        &mut self,
        snap: &Snapshot,
        ofports: &OfPorts,
        kind: ReconcileKind,
    ) -> Result<ReconcileReport, ReconcileError> {
        let (
            Planned {
                actual,
                mut plan,
                local_nb,
            },
            mut report,
        ) = self.compute_observe_and_plan(snap, ofports, kind).await?;
        let holding = self.guard(&mut plan, &actual, &mut report);
        // The local NB's rows before the announcements they route (O1),
        // its removals after the withdrawals; held with them.
        let (nb_writes, nb_removals) = match local_nb {
            Some(p) => p.split_removals(),
            None => Default::default(),
        };
        let mut nb_held = Vec::new();
        if let Err(e) = self
            .run_local_cluster(&nb_writes, "LocalNbWrite", &mut report)
            .await
        {
            nb_held = plan.hold_announcements();
            tracing::warn!(
                held = nb_held.len(),
                "not announcing: the local NB rows that route them were not written: {e}"
            );
        }
        self.note_frr(&actual, &plan, &mut report);
        let planned_before = self.planned_before(&plan, &report);
        let unjudged = self
            .desired
            .node()
            .is_some_and(|now| leftover_flows_unjudged(self.desired.settled(), now, &actual));
        // The observed sets are shared with the node's netlink mirror:
        // released before the writes, the notifications those cause update
        // the mirror in place instead of copying it.
        drop(actual);
        let t = Instant::now();
        let stop = self.stop.clone();
        // Command ops go to the lane in the plan's order, as the apply
        // reaches them (base flows and FRR before the exposures, leftover
        // flows after the withdrawals, O2), and are not waited for.
        let mut writer = NodeWriter::new(&mut self.node, &self.lane);
        let applied = apply_plan_until(&mut writer, &plan, || stop.is_cancelled()).await;
        report.queued = applied.queued.len();
        if self.wait_for_commands {
            self.lane.settled().await;
            self.absorb_lane(&mut report);
        }
        report.apply_time = t.elapsed();
        let undone = account_applied(&plan, &applied, planned_before.as_ref(), &mut report);
        report.held_back += nb_held.len();
        report.unnotified_side_effects =
            !report.applied.is_empty() && self.node.has_unnotified_changes();
        if !holding && !self.stop.is_cancelled() {
            // A failure is reported; the next reconcile plans it again.
            let _ = self
                .run_local_cluster(&nb_removals, "LocalNbRemoval", &mut report)
                .await;
        }
        let ops = plan.steps.into_iter().map(|s| s.op).collect();
        self.last_plan
            .remember(ops, undone, report.plan_incremental);
        // While withdrawals are held, or a bridge the previous desired
        // state put flows on is not read yet, the previous desired state
        // stays the one leftovers are judged by (their class, the
        // neighbour evidence, the bridges whose flows are the agent's).
        if !holding && !unjudged {
            self.desired.settle();
        }
        Ok(report)
    }
}
