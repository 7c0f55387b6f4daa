//! The agent's main loop.
//!
//! [`run`]: connect, wait for the initial dumps, reconcile, then reconcile
//! again whenever the work queue says so: an OVSDB change that passes the
//! driver's event filters, a local OVS change, a timer
//! (`reconcile_interval`, `frr_reconcile_interval`), a resync after a
//! reconnect. The one-shot commands are in [`crate::one_shot`], the
//! background checks after timer-driven reconciles in `background`.
//!
//! The loop itself only waits and dispatches: for the next batch of the
//! work queue, the command lane's signal, a `/status` request or the OVN
//! cache's changes. What each of them does is a method of the daemon's
//! state between two wake-ups (`Daemon`); a batch's reconcile runs the kind
//! of reconcile its reasons ask for ([`ReconcileKind::for_batch`]).

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use obgp_config::Config;
use obgp_events::Filters;
use obgp_node::LaneSignal;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::background::{DriftCheck, SessionsRead};
use crate::inputs::FilterView;
use crate::inputs::{MonitoredDbError, OvnSources, ReconcileInputs};
use crate::kind::{BackgroundChecks, ReconcileKind};
use crate::live_status;
use crate::ops::status::Reply;
use crate::ops::{spawn_update_clock, Telemetry};
use crate::options::{RunError, RunOptions};
use crate::queue::{Scheduler, TriggerBatch, WorkQueue};
use crate::reconcile::{check_supported, ReconcileError, ReconcileReport, Reconciler};
use crate::report_log::{log_report, log_report_queued, ms};
use crate::timers::LoopTimers;

use crate::inputs::{self, Trigger};

/// The rows of the driver's cache the mass-withdrawal guard compares:
/// those of every monitored table, but with the NB's port conditions sent
/// to the server (`conditions_sent_to_server`) only those of the tables
/// monitored whole. A table monitored by conditions shrinks when this
/// node's share of the cloud does (a gateway moving away takes its
/// networks' ports out of the cache), which is no sign of a database that
/// lost its rows; an emptied or wrongly restored NB loses its switches and
/// routers too. With the conditions applied as a local filter
/// (`ovn_nb_monitor_all = true`) the cache holds every row and every
/// table counts.
fn database_rows(db: &obgp_ovsdb_data::DbSnapshot, conditions_sent_to_server: bool) -> usize {
    db.tables()
        .filter(|t| !(conditions_sent_to_server && inputs::PortConditions::TABLES.contains(t)))
        .map(|t| db.table(t).len())
        .sum()
}

/// Runs the agent until `shutdown` is cancelled. A reconcile in flight stops
/// after the op in flight (the plan's order makes any prefix of it safe, so
/// nothing is left half-done); routes stay in place.
/// Returns an error only for what the agent cannot continue from:
/// routing-table exhaustion.
pub async fn run(
    config: Config,
    opts: RunOptions,
    shutdown: CancellationToken,
) -> Result<(), RunError> {
    check_supported(&config)?;
    let bounds = opts
        .probes
        .unwrap_or_else(|| LoopTimers::for_config(&config).probes);
    let telemetry = Arc::new(Telemetry::new(&config, bounds));
    // Before connecting anywhere: the probes answer while the agent waits.
    // A port in use is probably the lock holder's (the same node's host
    // network): then the listener starts once the lock is ours.
    let serve = |addr| crate::ops::serve(addr, telemetry.clone(), shutdown.child_token());
    let (mut listener, mut deferred) = (None, None);
    if let Some(addr) = config.default.metrics_listen {
        match serve(addr).await {
            Ok(l) => listener = Some(l),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && opts.node_lock.is_some() => {
                tracing::warn!(%addr, "metrics_listen is in use: serving once the node lock is ours");
                deferred = Some(addr);
            }
            Err(source) => return Err(RunError::Listen { addr, source }),
        }
    }
    let lock = match &opts.node_lock {
        Some(path) => {
            match crate::node_lock::wait_for_node_lock(path, &shutdown, Some(&telemetry)).await? {
                Some(lock) => Some(lock),
                None => return Ok(()),
            }
        }
        None => None,
    };
    if let Some(addr) = deferred {
        listener = Some(
            serve(addr)
                .await
                .map_err(|source| RunError::Listen { addr, source })?,
        );
    }
    let result = run_loop(config, opts, shutdown, telemetry).await;
    // Held until the loop has stopped writing.
    drop(lock);
    if let Some(l) = listener {
        l.abort();
    }
    result
}

/// What the loop reports while it waits for the databases: which one, at
/// which remotes.
fn waiting_for(e: &MonitoredDbError) -> Option<String> {
    match e {
        MonitoredDbError::SyncTimeout {
            database, remotes, ..
        } => Some(format!("{database} ({remotes})")),
        _ => None,
    }
}

/// The loop: connects, then waits for the next thing to do and hands it
/// to the [`Daemon`], until `shutdown` or a fatal error.
async fn run_loop(
    config: Config,
    opts: RunOptions,
    shutdown: CancellationToken,
    telemetry: Arc<Telemetry>,
) -> Result<(), RunError> {
    let Some(sources) = wait_for_databases(&config, &shutdown, &telemetry).await? else {
        return Ok(());
    };
    let Some(reconciler) = connect_node(&config, &sources, &opts, &shutdown).await else {
        return Ok(());
    };
    let (mut daemon, mut wake) =
        Daemon::start(config, opts, sources, reconciler, telemetry, shutdown);
    let result = loop {
        let batch = tokio::select! {
            _ = daemon.shutdown.cancelled() => break Ok(()),
            b = wake.queue.next() => match b { Some(b) => b, None => break Ok(()) },
            Ok(()) = wake.lane.changed() => {
                daemon.lane_ran_out_of_work(*wake.lane.borrow_and_update());
                continue;
            }
            Some(reply) = wake.status.recv() => {
                daemon.answer_status(reply).await;
                continue;
            }
            Ok(()) = wake.ovn_changed.changed() => {
                wake.ovn_changed.borrow_and_update();
                daemon.follow_ovn_changes();
                continue;
            }
        };
        if let ControlFlow::Break(result) = daemon.reconcile(batch).await {
            break result;
        }
    };
    daemon.stop().await;
    result
}

/// Starts the OVN sources and waits for their initial dumps, reporting on
/// `telemetry` what it waits for; `None` when `shutdown` came first.
async fn wait_for_databases(
    config: &Config,
    shutdown: &CancellationToken,
    telemetry: &Telemetry,
) -> Result<Option<Arc<OvnSources>>, RunError> {
    let sources = loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(None),
            r = OvnSources::start(config, Duration::from_secs(30)) => match r {
                Ok(s) => break s,
                Err(e @ MonitoredDbError::SyncTimeout { .. }) => {
                    telemetry.waiting(waiting_for(&e).unwrap_or_default());
                    tracing::warn!("still waiting for the databases: {e}")
                }
                Err(e) => return Err(e.into()),
            },
        }
    };
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(None),
            r = sources.wait_synced(Duration::from_secs(30)) => match r {
                Ok(()) => break,
                Err(e) => {
                    if let Some(what) = waiting_for(&e) {
                        telemetry.waiting(what);
                    }
                    tracing::warn!("still waiting for the databases: {e}")
                }
            },
        }
    }
    let sources = Arc::new(sources);
    telemetry.synced(sources.clone());
    crate::ops::log_stage("synced");
    Ok(Some(sources))
}

/// Connects the reconciler to the node, every 5 s until it can; `None`
/// when `shutdown` came first. It stops applying on `shutdown`, guards
/// against mass withdrawals and writes the node-local NB when there is one.
async fn connect_node(
    config: &Config,
    sources: &OvnSources,
    opts: &RunOptions,
    shutdown: &CancellationToken,
) -> Option<Reconciler> {
    loop {
        match Reconciler::connect(config.clone(), opts.kernel.clone()).await {
            Ok(mut r) => {
                crate::ops::log_stage("node read");
                r.stop_on(shutdown.clone());
                r.guard_withdrawals(LoopTimers::for_config(config).guard);
                if let Some(local) = &sources.local_nb {
                    r.write_local_cluster(local.clone());
                }
                return Some(r);
            }
            Err(e) => {
                tracing::error!("{e}; retrying in 5 s");
                tokio::select! {
                    _ = shutdown.cancelled() => return None,
                    _ = tokio::time::sleep(Duration::from_secs(5)) => {}
                }
            }
        }
    }
}

/// What wakes the loop besides shutdown. Kept apart from the [`Daemon`]
/// so that the loop's `select!` polls them all while the branch that won
/// borrows the daemon.
struct Wakeups {
    /// The next batch of triggers, once due.
    queue: WorkQueue,
    /// The command lane ran out of work.
    lane: watch::Receiver<LaneSignal>,
    /// `/status` requests, answered between reconciles.
    status: mpsc::Receiver<Reply>,
    /// The OVN cache received rows.
    ovn_changed: watch::Receiver<obgp_ovsdb_data::DbSnapshot>,
}

/// The daemon between two wake-ups: what reconciling a batch and the
/// loop's other branches need, and what they keep from one to the next.
struct Daemon {
    config: Config,
    sources: Arc<OvnSources>,
    reconciler: Reconciler,
    telemetry: Arc<Telemetry>,
    sched: Scheduler,
    shutdown: CancellationToken,
    /// For tests: every reconcile, once started, waits until this is true
    /// ([`RunOptions::hold_reconciles`]).
    hold: Option<watch::Receiver<bool>>,
    retry: Retry,
    drift: DriftCheck,
    sessions: SessionsRead,
    trim: crate::ops::TrimSchedule,
    /// What the event filters read, replaced after every reconcile.
    view: watch::Sender<Arc<FilterView>>,
    /// No reconcile ended yet: a configuration that names a device of the
    /// node (`bgp_nic = lo`) stops the agent at start-up; met later, it is
    /// retried like any error.
    first: bool,
    /// The timers and watchers that feed the work queue.
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Daemon {
    /// Starts answering `/status`, the event filters' view, the timers and
    /// watchers, and triggers the start-up reconcile.
    fn start(
        config: Config,
        opts: RunOptions,
        sources: Arc<OvnSources>,
        reconciler: Reconciler,
        telemetry: Arc<Telemetry>,
        shutdown: CancellationToken,
    ) -> (Daemon, Wakeups) {
        let (sched, queue) = WorkQueue::new(opts.queue.clone());
        let (status_tx, status) = mpsc::channel(8);
        telemetry.serve_status(status_tx);
        let inputs = sources.inputs();
        let chassis = reconciler.chassis_name(&inputs.snapshot);
        let view0 = FilterView::new(
            inputs.raw_ovn,
            Arc::new(inputs.snapshot),
            chassis,
            Default::default(),
        );
        let (view, view_rx) = watch::channel(Arc::new(view0));
        let tasks = spawn_triggers(&config, &sources, &reconciler, &telemetry, &sched, view_rx);
        let mut ovn_changed = sources.ovn_changed();
        ovn_changed.borrow_and_update();
        sched.trigger(Trigger::Startup);
        let wake = Wakeups {
            queue,
            lane: reconciler.lane_signals(),
            status,
            ovn_changed,
        };
        let sessions = SessionsRead::every(LoopTimers::for_config(&config).frr_check);
        let daemon = Daemon {
            config,
            sources,
            reconciler,
            telemetry,
            sched,
            shutdown,
            hold: opts.hold_reconciles,
            retry: Retry::default(),
            drift: DriftCheck::default(),
            sessions,
            trim: crate::ops::TrimSchedule::new(),
            view,
            first: true,
            tasks,
        };
        (daemon, wake)
    }

    /// The command lane ran out of work: plan with what it learnt, or
    /// retry (with the backoff) what failed.
    fn lane_ran_out_of_work(&mut self, signal: LaneSignal) {
        if signal.learned {
            self.sched.trigger(Trigger::CommandsSettled);
        }
        if signal.failed {
            self.retry.schedule(&self.sched);
        }
    }

    /// Answers a `/status` request with the node observed now against the
    /// last desired state.
    async fn answer_status(&mut self, reply: Reply) {
        let health = self.telemetry.health();
        let status =
            live_status::answer(&mut self.reconciler, &self.sources, health, &self.config).await;
        let _ = reply.send(status);
    }

    /// Patches in the rows no event asked for while idle, not on the path
    /// of the next event's reconcile (docs/latency.md).
    fn follow_ovn_changes(&self) {
        self.sources.follow_changes();
    }

    /// Reconciles `batch`: the kind it asks for, on the inputs read now.
    /// Breaks with the loop's result on shutdown or an error the agent
    /// cannot continue from.
    async fn reconcile(&mut self, batch: TriggerBatch) -> ControlFlow<Result<(), RunError>> {
        let started = Instant::now();
        self.telemetry.started(&batch);
        if let Some(hold) = &mut self.hold {
            tokio::select! {
                _ = self.shutdown.cancelled() => return ControlFlow::Break(Ok(())),
                _ = hold.wait_for(|open| *open) => {}
            }
        }
        // With a conditional NB monitor, once its port conditions
        // converged: never from a cache lacking ports the state calls for.
        let mut inputs = match self.sources.converged_inputs().await {
            Ok(inputs) => inputs,
            Err(e) => {
                let e = ReconcileError::Inputs(e.to_string());
                self.finished(&batch, Err(&e), started);
                tracing::warn!(reasons = %batch, "not reconciling, retrying: {e}");
                self.retry.schedule(&self.sched);
                return ControlFlow::Continue(());
            }
        };
        let snapshot_time = started.elapsed();
        self.reconciler.note_database_rows(database_rows(
            &inputs.raw_ovn,
            self.sources.conditions_sent_to_server(),
        ));
        self.reconciler
            .note_ovn_changes(std::mem::take(&mut inputs.changes));
        let kind = ReconcileKind::for_batch(&batch);
        let result = self
            .reconciler
            .reconcile(&inputs.snapshot, &inputs.ofports, kind)
            .await;
        match result {
            Ok(report) if self.shutdown.is_cancelled() => {
                log_report(&report, &batch.to_string());
                tracing::info!(
                    not_started = report.not_started,
                    "stopped after the op in flight"
                );
                return ControlFlow::Break(Ok(()));
            }
            Ok(mut report) => {
                report.snapshot_time = snapshot_time;
                self.reconciled(&batch, &report, started);
            }
            Err(e) if e.is_fatal() || (self.first && e.is_config_error()) => {
                return ControlFlow::Break(Err(e.into()))
            }
            Err(e) => {
                self.finished(&batch, Err(&e), started);
                tracing::error!(reasons = %batch, "reconcile failed, retrying: {e}");
                self.retry.schedule(&self.sched);
            }
        }
        self.first = false;
        self.publish(inputs);
        ControlFlow::Continue(())
    }

    /// Tells the metrics and probes how the reconcile of `batch` that
    /// started at `started` ended.
    fn finished(
        &self,
        batch: &TriggerBatch,
        result: Result<&ReconcileReport, &ReconcileError>,
        started: Instant,
    ) {
        self.telemetry.finished(
            batch,
            result.map_err(|e| e as &dyn std::error::Error),
            started.elapsed(),
            self.reconciler.withdrawal_holds(),
        );
    }

    /// After a reconcile that ran: logs and reports it, returns freed heap
    /// when due, and schedules what follows (a re-read its own writes
    /// call for, the retry, the background checks of a timer's batch).
    fn reconciled(&mut self, batch: &TriggerBatch, report: &ReconcileReport, started: Instant) {
        self.finished(batch, Ok(report), started);
        log_report_queued(
            report,
            &batch.to_string(),
            batch.window_wait,
            batch.rate_wait,
        );
        tracing::debug!(total_ms = ms(started.elapsed()), "reconcile done");
        if self.trim.due(Instant::now(), batch.follows_full_dump()) {
            crate::ops::spawn_release();
        }
        if rereads_at_once(report, batch) {
            self.sched.trigger(Trigger::UnnotifiedSideEffects);
        }
        // Held withdrawals are looked at again with the retry's backoff:
        // released once the grace period is over.
        if report.failed.is_empty() && report.held_back == 0 && report.withdrawals_held == 0 {
            self.retry.reset();
        } else {
            self.retry.schedule(&self.sched);
        }
        // Timers only look for changes nobody notifies: OVS and FRR are
        // re-read after the reconcile, off this loop (see `Trigger::Drift`).
        self.sessions.maybe_read(&self.reconciler, &self.telemetry);
        let checks = BackgroundChecks::for_batch(batch);
        if checks.drift {
            self.drift.check(&self.reconciler, &self.sched);
        }
        if checks.desired {
            self.drift.check_desired(&self.reconciler, &self.sched);
        }
    }

    /// Publishes what the reconcile leaves for the others: the exposed
    /// counts (when scraped) and the event filters' next view.
    fn publish(&mut self, inputs: ReconcileInputs) {
        if self.telemetry.metrics.exposed_wanted() {
            if let Some(desired) = self.reconciler.desired() {
                self.telemetry
                    .metrics
                    .set_exposed(&crate::ops::count_exposed(desired));
            }
        }
        let chassis = self.reconciler.chassis_name(&inputs.snapshot);
        let view = FilterView::after(
            &self.view.borrow(),
            inputs.raw_ovn,
            Arc::new(inputs.snapshot),
            chassis,
            self.reconciler.exposed_ips(),
        );
        self.view.send_replace(Arc::new(view));
    }

    /// Stops the timers and watchers.
    /// Stops the timers and watchers, then writes the NB cache file
    /// (`state_dir`) so that the next start resumes from this moment.
    async fn stop(mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
        self.sources.save_state().await;
    }
}

/// The timers and watchers that feed the work queue: `reconcile_interval`,
/// `frr_reconcile_interval`, the event filters over the OVN changes
/// (reading `view`), every local OVS (and node-local NB) change, the
/// resyncs, the netlink overruns; and the databases' update clocks.
fn spawn_triggers(
    config: &Config,
    sources: &OvnSources,
    reconciler: &Reconciler,
    telemetry: &Telemetry,
    sched: &Scheduler,
    view: watch::Receiver<Arc<FilterView>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let filters = Filters::for_config(&config.default);
    let mut tasks = Vec::from(LoopTimers::for_config(config).spawn(sched));
    tasks.extend([
        inputs::event_filter(sources.ovn.changes(), filters, view, sched.clone()),
        inputs::every_change(
            sources.ovs.changes(),
            crate::inputs::LOCAL_OVS_CHANGE,
            sources.ovs.database,
            sched.clone(),
        ),
        inputs::resync(sources.ovn.resynced(), sources.ovn.database, sched.clone()),
        inputs::resync(sources.ovs.resynced(), sources.ovs.database, sched.clone()),
        inputs::netlink_overrun(reconciler.netlink_overruns(), sched.clone()),
        spawn_update_clock(telemetry, &sources.ovn),
        spawn_update_clock(telemetry, &sources.ovs),
    ]);
    if let Some(local) = &sources.local_nb {
        // Rows of the agent's tables changed or removed by someone else
        // (or by the agent's own writes: that reconcile plans nothing).
        tasks.push(inputs::every_change(
            local.changes(),
            crate::inputs::LOCAL_CLUSTER_CHANGE,
            crate::inputs::LOCAL_CLUSTER_NB,
            sched.clone(),
        ));
        tasks.push(inputs::resync(
            local.resynced(),
            crate::inputs::LOCAL_CLUSTER_NB,
            sched.clone(),
        ));
    }
    tasks
}

/// Whether the reconcile just reported must be followed at once by one that
/// re-reads the node: its writes had a side effect the kernel does not
/// notify (switching to route announcements removes the last IPv4 address
/// of `bgp-nic`, and the kernel flushes the new IPv4 routes through it with
/// no message). Not after a reconcile with failures, which the retry's
/// backoff covers, nor twice in a row: the follow-up's own writes only put
/// back what went, so a second flush would be somebody else's doing, left
/// to the timers.
fn rereads_at_once(report: &ReconcileReport, batch: &TriggerBatch) -> bool {
    report.unnotified_side_effects
        && report.failed.is_empty()
        && !batch.reasons.contains_key(&Trigger::UnnotifiedSideEffects)
}

/// Retries of failed reconciles, as kube-runtime's controller requeues on
/// error: after 1 s, doubling up to 60 s while failures go on, reset by a
/// clean reconcile. At most one retry is pending at a time; any other
/// trigger in between reconciles anyway.
#[derive(Default)]
struct Retry {
    delay: Option<Duration>,
    pending: Option<tokio::task::JoinHandle<()>>,
}

impl Retry {
    const FIRST: Duration = Duration::from_secs(1);
    const MAX: Duration = Duration::from_secs(60);

    fn schedule(&mut self, sched: &Scheduler) {
        if self.pending.as_ref().is_some_and(|p| !p.is_finished()) {
            return;
        }
        let delay = self.delay.map_or(Self::FIRST, |d| (d * 2).min(Self::MAX));
        self.delay = Some(delay);
        tracing::info!(delay_s = delay.as_secs(), "retrying the failed work");
        self.pending = Some(sched.after(delay, Trigger::Retry));
    }

    fn reset(&mut self) {
        self.delay = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::QueueConfig;
    use tokio::time::Instant;

    #[test]
    fn a_silent_kernel_flush_after_our_writes_is_reread_at_once_but_never_twice_in_a_row() {
        let batch = |reason: Trigger| TriggerBatch {
            reasons: [(reason, 1)].into(),
            ..TriggerBatch::default()
        };
        let flushed = ReconcileReport {
            unnotified_side_effects: true,
            ..ReconcileReport::default()
        };
        assert!(rereads_at_once(&flushed, &batch(Trigger::Periodic)));
        assert!(!rereads_at_once(
            &ReconcileReport::default(),
            &batch(Trigger::Periodic)
        ));
        assert!(
            !rereads_at_once(&flushed, &batch(Trigger::UnnotifiedSideEffects)),
            "the follow-up's own flush is left to the timers"
        );
        let failed = ReconcileReport {
            failed: vec!["+ route 10.0.0.5/32: EINVAL".into()],
            ..flushed
        };
        assert!(
            !rereads_at_once(&failed, &batch(Trigger::Periodic)),
            "failures wait for the retry's backoff"
        );
    }

    #[test]
    fn the_guard_counts_the_conditional_tables_unless_the_server_filtered_them() {
        let schema = obgp_ovsdb_data::DatabaseSchema::from_file(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/schemas/ovn-nb.ovsschema"
        ))
        .unwrap();
        let empty = obgp_ovsdb_data::DbSnapshot::empty(
            std::sync::Arc::new(schema),
            ["Logical_Switch", "Logical_Switch_Port", "NAT"],
        );
        let updates = serde_json::from_value(serde_json::json!({
            "Logical_Switch": {"11111111-0000-4000-8000-000000000001": {"insert": {"name": "net"}}},
            "Logical_Switch_Port": {
                "22222222-0000-4000-8000-000000000001": {"insert": {"name": "vm1"}},
                "22222222-0000-4000-8000-000000000002": {"insert": {"name": "vm2"}}},
            "NAT": {"33333333-0000-4000-8000-000000000001": {"insert": {"type": "snat"}}}
        }))
        .unwrap();
        let (db, _) = empty.apply(updates).unwrap();
        // A local filter (full monitor): the cache holds every row, all count.
        assert_eq!(database_rows(&db, false), 4);
        // Conditions sent to the server: only the switch's table counts.
        assert_eq!(database_rows(&db, true), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn failed_work_is_retried_with_a_doubling_backoff_until_a_clean_reconcile() {
        let (sched, mut queue) = WorkQueue::new(QueueConfig::default());
        let mut retry = Retry::default();
        let t0 = Instant::now();
        retry.schedule(&sched);
        retry.schedule(&sched); // one retry pending at a time
        let batch = queue.next().await.unwrap();
        assert_eq!(t0.elapsed(), Duration::from_secs(1));
        assert_eq!(batch.triggers(), 1);
        tokio::task::yield_now().await;

        retry.schedule(&sched);
        queue.next().await.unwrap();
        assert_eq!(t0.elapsed(), Duration::from_secs(3), "second delay doubles");
        tokio::task::yield_now().await;

        retry.reset();
        retry.schedule(&sched);
        queue.next().await.unwrap();
        assert_eq!(
            t0.elapsed(),
            Duration::from_secs(4),
            "a clean reconcile resets it"
        );
    }
}
