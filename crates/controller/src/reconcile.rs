//! One reconcile: desired state from the snapshot, observe the node, plan
//! the diff, apply it with the single writer, and report what happened and
//! how long each phase took.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use obgp_config::Config;
use obgp_desired::{desired_state, Computed, DesiredCache, DesiredError, NodeFacts};
use obgp_netmodel::DesiredNode;
use obgp_node::{DriftProbe, KernelConfig, KernelNode, Scope};
use obgp_ovn::Snapshot;
use obgp_plan::{apply_plan_until, Actual, Plan, PlanError};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::ofports::OfPorts;

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
    /// touch ([`PlanError::ForeignDevice`]).
    pub fn is_config_error(&self) -> bool {
        matches!(self, ReconcileError::Plan(PlanError::ForeignDevice { .. }))
    }
}

/// Refuses, before connecting anywhere, a driver or exposing method whose
/// desired state is not implemented (an empty OVN snapshot is enough to ask).
pub fn check_supported(config: &Config) -> Result<(), ReconcileError> {
    match desired_state(&Snapshot::default(), config, &NodeFacts::default()) {
        Err(e @ DesiredError::Unsupported { .. }) => Err(e.into()),
        _ => Ok(()),
    }
}

/// A computed plan with the node state it was computed against.
pub struct Planned {
    pub actual: Actual,
    pub plan: Plan,
}

/// What one reconcile did.
#[derive(Debug, Default)]
pub struct ReconcileReport {
    /// Building the indexed OVN snapshot from the caches (set by the run
    /// loop, which builds it; zero when the caller passed a ready snapshot).
    pub snapshot_time: Duration,
    pub desired_time: Duration,
    /// Whether the desired state was patched from the last one (only ports
    /// changed) rather than computed from every row.
    pub desired_patched: bool,
    pub observe_time: Duration,
    pub plan_time: Duration,
    pub apply_time: Duration,
    /// Applied ops by kind (`add_rule`, `del_address`...).
    pub applied: BTreeMap<String, usize>,
    /// Ops that failed, as text with the error.
    pub failed: Vec<String>,
    /// Announcements held back because their wiring failed (O1).
    pub held_back: usize,
    /// Exposed IPs in the desired state.
    pub exposed: usize,
    /// Ops of the plan not started because the agent is stopping.
    pub not_started: usize,
}

impl ReconcileReport {
    pub fn ops_applied(&self) -> usize {
        self.applied.values().sum()
    }
}

/// Owns the node side: the kernel connection and what the last reconcile
/// wanted (it classifies leftovers for the O3 order and tells whether FRR
/// already has our text).
pub struct Reconciler {
    config: Config,
    node: KernelNode,
    kernel: KernelConfig,
    /// The last desired state and its node objects (patched when only ports
    /// changed), and those the last reconcile planned with.
    desired: DesiredCache,
    /// The FRR text last applied successfully.
    frr_applied: Option<String>,
    /// The planner's warnings already logged (each once, not per reconcile).
    warned: std::collections::BTreeSet<String>,
    facts: NodeFacts,
    /// Cancelled when the agent stops: the apply ends after the op in flight.
    stop: CancellationToken,
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
        let facts = NodeFacts {
            system_hostname: system_hostname(),
            frr_router_id: None,
        };
        Ok(Reconciler {
            config,
            node,
            kernel,
            desired: DesiredCache::default(),
            frr_applied: None,
            warned: Default::default(),
            facts,
            stop: CancellationToken::new(),
        })
    }

    /// Stops applying after the op in flight once `token` is cancelled
    /// (the rest of the plan is left for the next start; see
    /// [`obgp_plan::apply_plan_until`] for why any prefix is safe).
    pub fn stop_on(&mut self, token: CancellationToken) {
        self.stop = token;
    }

    /// The next reconcile reads the node afresh (full netlink dumps, OVS
    /// ports and flows) instead of trusting the netlink mirror.
    pub fn resync_node(&mut self) {
        self.node.resync();
    }

    /// The next reconcile computes the desired state from every row instead
    /// of patching the last one.
    pub fn recompute_desired(&mut self) {
        self.desired.clear();
    }

    /// The next reconcile re-reads the OVS ports and flows.
    pub fn invalidate_flows(&mut self) {
        self.node.invalidate_flows();
    }

    /// Changes whenever the node's netlink mirror lost notifications; the
    /// run loop answers with a full reconcile.
    pub fn netlink_overruns(&self) -> watch::Receiver<u64> {
        self.node.overruns()
    }

    /// The IPs the last desired state exposes (a cheap copy).
    pub fn exposed_ips(&self) -> obgp_desired::ExposedIps {
        self.desired.exposed_ips()
    }

    /// What to read of the node for desired objects `node`.
    fn scope(&self, node: &DesiredNode) -> Scope {
        let mut scope = Scope::for_desired(node);
        if let Some(prev) = self.desired.settled() {
            // Tables and bridges the last reconcile used are read too, so
            // their leftovers are seen when a bridge mapping goes away.
            scope
                .bridge_tables
                .extend(prev.bridge_tables.iter().cloned());
            scope.ovs_bridges.extend(prev.bridge_tables.iter().cloned());
        }
        scope
    }

    /// A background re-read of the OVS bridges and FRR configuration the
    /// last reconcile relied on; `None` before the first one.
    pub fn drift_probe(&self) -> Option<DriftProbe> {
        let node = self.desired.node()?;
        Some(self.node.drift_probe(&self.scope(node)))
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
        if self.config.default.driver == obgp_config::Driver::OvnBgpDriver {
            return snap.ovs.system_id.clone().unwrap_or_default();
        }
        snap.ovs
            .hostname
            .clone()
            .or_else(|| self.facts.system_hostname.clone())
            .unwrap_or_default()
    }

    /// Computes desired state, observes the node and plans, without writing.
    /// `check_frr`: read FRR's running configuration; otherwise FRR counts as
    /// holding our text when it is the one we last applied.
    pub async fn plan(
        &mut self,
        snap: &Snapshot,
        ofports: &OfPorts,
        check_frr: bool,
    ) -> Result<(Planned, ReconcileReport), ReconcileError> {
        let mut report = ReconcileReport::default();
        if self.config.default.bgp_router_id.is_none() && self.facts.frr_router_id.is_none() {
            self.facts.frr_router_id = obgp_node::read_frr_router_id(&self.kernel);
        }

        let t = Instant::now();
        let computed = self.desired.compute(snap, &self.config, &self.facts)?;
        report.desired_patched = matches!(computed, Computed::Patched { .. });
        let (Some(desired), Some(node)) = (self.desired.desired(), self.desired.node()) else {
            unreachable!("a successful compute leaves a result");
        };
        report.desired_time = t.elapsed();
        report.exposed = desired.exposed.len();

        let t = Instant::now();
        let mut scope = self.scope(node);
        let frr_known =
            !check_frr && self.frr_applied.is_some() && self.frr_applied == node.frr_config;
        if frr_known {
            scope.frr_lines.clear();
        }
        let mut actual = self
            .node
            .observe(&scope)
            .await
            .map_err(|e| ReconcileError::Observe(e.to_string()))?;
        if frr_known {
            actual.frr.has_our_config = true;
        }
        // ovs-ofctl cuts port names to 15 characters; the database has them whole.
        for (bridge, observed) in actual.bridges.iter_mut() {
            if let Some(numbered) = ofports.get(bridge.as_str()) {
                observed
                    .ports
                    .extend(numbered.iter().map(|(n, p)| (n.clone(), *p)));
            }
        }
        report.observe_time = t.elapsed();

        let t = Instant::now();
        let plan = obgp_plan::plan_after(node, self.desired.settled(), &actual)?;
        report.plan_time = t.elapsed();
        for w in &plan.warnings {
            if self.warned.insert(w.clone()) {
                tracing::warn!("{w}");
            }
        }
        Ok((Planned { actual, plan }, report))
    }

    /// One full reconcile.
    pub async fn reconcile(
        &mut self,
        snap: &Snapshot,
        ofports: &OfPorts,
        check_frr: bool,
    ) -> Result<ReconcileReport, ReconcileError> {
        let (Planned { actual, plan }, mut report) = self.plan(snap, ofports, check_frr).await?;
        // The observed sets are shared with the node's netlink mirror:
        // released before the writes, the notifications those cause update
        // the mirror in place instead of copying it.
        drop(actual);
        let t = Instant::now();
        let stop = self.stop.clone();
        let applied = apply_plan_until(&mut self.node, &plan, || stop.is_cancelled()).await;
        report.apply_time = t.elapsed();
        report.not_started = applied.not_started;
        let started = plan.steps.len() - applied.not_started;
        for step in &plan.steps[..started] {
            if !applied.failed.iter().any(|(op, _)| op == &step.op)
                && !applied.held_back.contains(&step.op)
            {
                *report.applied.entry(op_kind(&step.op)).or_default() += 1;
            }
        }
        report.failed = applied
            .failed
            .iter()
            .map(|(op, e)| format!("{op}: {e}"))
            .collect();
        report.held_back = applied.held_back.len();
        let frr_failed = applied
            .failed
            .iter()
            .any(|(op, _)| matches!(op, obgp_plan::Op::ApplyFrr { .. }));
        // A stopped apply may not have reached the FRR op.
        if !frr_failed && applied.not_started == 0 {
            self.frr_applied = self.desired.node().and_then(|n| n.frr_config.clone());
        }
        self.desired.settle();
        Ok(report)
    }
}

/// The system hostname (`/proc/sys/kernel/hostname`), upstream's
/// `socket.gethostname()` fallback for the chassis name.
fn system_hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// An op's variant name (`AddRule`, `DelAddress`...), for the per-kind counts.
fn op_kind(op: &obgp_plan::Op) -> String {
    let debug = format!("{op:?}");
    debug
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_string()
}
