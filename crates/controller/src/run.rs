//! The agent's main loop and its one-shot variants.
//!
//! [`run`]: connect, wait for the initial dumps, reconcile, then reconcile
//! again whenever the work queue says so: an OVSDB change that passes the
//! driver's event filters, a local OVS change, a timer
//! (`reconcile_interval`, `frr_reconcile_interval`), a resync after a
//! reconnect. [`reconcile_once`] and [`plan_once`] back the
//! `reconcile --once` and `plan` commands.

use std::sync::Arc;
use std::time::{Duration, Instant};

use obgp_config::Config;
use obgp_events::Filters;
use obgp_plan::Plan;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::inputs::connect_once;
use crate::kind::{BackgroundChecks, ReconcileKind};
use crate::options::{RunError, RunOptions};
use crate::probes::ProbeBounds;
use crate::queue::{Scheduler, TriggerBatch, WorkQueue};
use crate::reconcile::{check_supported, unread_commands, Planned, ReconcileReport, Reconciler};
use crate::sources::{OvnSources, SourceError};
use crate::telemetry::{spawn_update_clock, Telemetry};
use crate::view::FilterView;
use crate::watchers;
use crate::Reason;

/// Computes the pending plan against the live databases and node, changing nothing.
pub async fn plan_once(config: &Config, opts: &RunOptions) -> Result<Planned, RunError> {
    let (sources, mut reconciler) = connect_once(config, opts).await?;
    let inputs = sources.converged_inputs().await?;
    let (planned, _) = reconciler
        .plan(&inputs.snapshot, &inputs.ofports, ReconcileKind::one_shot())
        .await?;
    // The caches, the snapshot and the node mirror are freed on a thread of
    // their own: freeing them row by row took ~0.2 s at 50k ports, on the
    // way to printing the plan. A command that exits next does not wait.
    std::thread::spawn(move || drop((inputs, sources, reconciler)));
    Ok(planned)
}

/// Reconciles once and checks convergence: a second observe must plan nothing.
pub async fn reconcile_once(
    config: &Config,
    opts: &RunOptions,
) -> Result<ReconcileReport, RunError> {
    let (sources, mut reconciler) = connect_once(config, opts).await?;
    let inputs = sources.converged_inputs().await?;
    let report = reconciler
        .reconcile(&inputs.snapshot, &inputs.ofports, ReconcileKind::one_shot())
        .await?;
    log_report(&report, "reconcile --once");
    // A fresh read: the apply may have changed OVS (ports numbered since).
    let inputs = sources.converged_inputs().await?;
    let (again, _) = reconciler
        .plan(&inputs.snapshot, &inputs.ofports, ReconcileKind::one_shot())
        .await?;
    let unread = unread_commands(&again.actual);
    if !again.is_empty() || !unread.is_empty() {
        let mut pending = again.plan.to_string();
        let mut local_ops = 0;
        if let Some(local) = &again.local_nb {
            local_ops = local.ops.len();
            for op in &local.ops {
                pending.push_str(&format!("  local NB: {op}\n"));
            }
        }
        for what in &unread {
            pending.push_str(&format!("  ? {what}\n"));
        }
        return Err(RunError::NotConverged(
            again.plan.steps.len() + local_ops + unread.len(),
            pending,
        ));
    }
    Ok(report)
}

/// Rows in every monitored table of a database.
fn database_rows(db: &obgp_ovsdb_data::DbSnapshot) -> usize {
    db.tables().map(|t| db.table(t).len()).sum()
}

fn log_report(report: &ReconcileReport, why: &str) {
    log_report_queued(report, why, Duration::ZERO, Duration::ZERO)
}

/// `window_wait`/`rate_wait`: how long the work queue held the first
/// trigger back (merge window, rate limit), so a slow event can be told
/// apart from a slow reconcile.
fn log_report_queued(
    report: &ReconcileReport,
    why: &str,
    window_wait: Duration,
    rate_wait: Duration,
) {
    tracing::info!(
        reasons = why,
        window_wait_ms = ms(window_wait),
        rate_wait_ms = ms(rate_wait),
        exposed = report.exposed,
        ops = report.ops_applied(),
        queued = report.queued,
        commands = ?report.commands_applied,
        failed = report.failed.len(),
        held_back = report.held_back,
        withdrawals_held = report.withdrawals_held,
        snapshot_ms = ms(report.snapshot_time),
        desired_ms = ms(report.desired_time),
        desired_patched = report.desired_patched,
        observe_ms = ms(report.observe_time),
        plan_ms = ms(report.plan_time),
        plan_incremental = report.plan_incremental,
        apply_ms = ms(report.apply_time),
        applied = ?report.applied,
        "reconciled"
    );
    for failure in &report.failed {
        tracing::warn!("op failed (the next reconcile retries): {failure}");
    }
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
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
        .unwrap_or_else(|| ProbeBounds::for_config(&config));
    let telemetry = Arc::new(Telemetry::new(&config, bounds));
    // Before connecting anywhere: the probes answer while the agent waits.
    let listener = match config.default.metrics_listen {
        Some(addr) => Some(
            crate::http::serve(addr, telemetry.clone(), shutdown.child_token())
                .await
                .map_err(|source| RunError::Listen { addr, source })?,
        ),
        None => None,
    };
    let result = run_loop(config, opts, shutdown, telemetry).await;
    if let Some(l) = listener {
        l.abort();
    }
    result
}

fn waiting_for(e: &SourceError) -> Option<String> {
    match e {
        SourceError::SyncTimeout {
            database, remotes, ..
        } => Some(format!("{database} ({remotes})")),
        _ => None,
    }
}

async fn run_loop(
    config: Config,
    opts: RunOptions,
    shutdown: CancellationToken,
    telemetry: Arc<Telemetry>,
) -> Result<(), RunError> {
    let sources = loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            r = OvnSources::start(&config, Duration::from_secs(30)) => match r {
                Ok(s) => break s,
                Err(e @ SourceError::SyncTimeout { .. }) => {
                    telemetry.waiting(waiting_for(&e).unwrap_or_default());
                    tracing::warn!("still waiting for the databases: {e}")
                }
                Err(e) => return Err(e.into()),
            },
        }
    };
    let (sched, mut queue) = WorkQueue::new(opts.queue.clone());

    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
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
    crate::memory::log_stage("synced");
    let mut reconciler = loop {
        match Reconciler::connect(config.clone(), opts.kernel.clone()).await {
            Ok(mut r) => {
                crate::memory::log_stage("node read");
                r.stop_on(shutdown.clone());
                r.guard_withdrawals(crate::guard::GuardConfig::from_config(&config));
                if let Some(local) = &sources.local_nb {
                    r.write_local_nb(local.clone());
                }
                break r;
            }
            Err(e) => {
                tracing::error!("{e}; retrying in 5 s");
                tokio::select! {
                    _ = shutdown.cancelled() => return Ok(()),
                    _ = tokio::time::sleep(Duration::from_secs(5)) => {}
                }
            }
        }
    };

    // `/status` requests, answered between reconciles.
    let (status_tx, mut status_rx) = tokio::sync::mpsc::channel(8);
    telemetry.serve_status(status_tx);
    let inputs = sources.inputs();
    let chassis = reconciler.chassis_name(&inputs.snapshot);
    let view0 = FilterView::new(
        inputs.raw_ovn,
        Arc::new(inputs.snapshot),
        chassis,
        Default::default(),
    );
    let (view_tx, view_rx) = watch::channel(Arc::new(view0));
    let filters = Filters::for_config(&config.default);

    let mut tasks = vec![
        sched.every(
            Duration::from_secs(config.default.reconcile_interval.max(1)),
            Reason::Periodic,
        ),
        sched.every(
            Duration::from_secs(config.default.frr_reconcile_interval.max(1)),
            Reason::FrrCheck,
        ),
        watchers::event_filter(sources.ovn.changes(), filters, view_rx, sched.clone()),
        watchers::every_change(
            sources.ovs.changes(),
            crate::reason::LOCAL_OVS_CHANGE,
            sources.ovs.database,
            sched.clone(),
        ),
        watchers::resync(sources.ovn.resynced(), sources.ovn.database, sched.clone()),
        watchers::resync(sources.ovs.resynced(), sources.ovs.database, sched.clone()),
        watchers::netlink_overrun(reconciler.netlink_overruns(), sched.clone()),
        spawn_update_clock(&telemetry, &sources.ovn),
        spawn_update_clock(&telemetry, &sources.ovs),
    ];
    if let Some(local) = &sources.local_nb {
        // Rows of the agent's tables changed or removed by someone else
        // (or by the agent's own writes: that reconcile plans nothing).
        tasks.push(watchers::every_change(
            local.changes(),
            crate::reason::LOCAL_NB_CHANGE,
            crate::reason::LOCAL_NB,
            sched.clone(),
        ));
        tasks.push(watchers::resync(
            local.resynced(),
            crate::reason::LOCAL_NB,
            sched.clone(),
        ));
    }
    let mut hold = opts.hold_reconciles.clone();
    let mut ovn_changed = sources.ovn_changed();
    ovn_changed.borrow_and_update();
    sched.trigger(Reason::Startup);

    let mut retry = Retry::default();
    let drift = DriftCheck::default();
    let mut lane = reconciler.lane_signals();
    // A configuration that names a device of the node (`bgp_nic = lo`)
    // stops the agent at start-up; met later, it is retried like any error.
    let mut first = true;
    let mut trim = crate::memory::TrimSchedule::new();
    let result = loop {
        let batch = tokio::select! {
            _ = shutdown.cancelled() => break Ok(()),
            b = queue.next() => match b { Some(b) => b, None => break Ok(()) },
            // The command lane ran out of work: plan with what it learnt,
            // or retry (with the backoff) what failed.
            Ok(()) = lane.changed() => {
                let signal = *lane.borrow_and_update();
                if signal.learned {
                    sched.trigger(Reason::CommandsSettled);
                }
                if signal.failed {
                    retry.schedule(&sched);
                }
                continue;
            }
            Some(reply) = status_rx.recv() => {
                let status = crate::status::live::answer(&mut reconciler, &sources, telemetry.health(), &config).await;
                let _ = reply.send(status);
                continue;
            }
            // Rows no event asked for are patched in while idle, not on the
            // path of the next event's reconcile (docs/latency.md).
            Ok(()) = ovn_changed.changed() => {
                ovn_changed.borrow_and_update();
                sources.follow_changes();
                continue;
            }
        };
        let started = Instant::now();
        telemetry.started(&batch);
        if let Some(hold) = &mut hold {
            tokio::select! {
                _ = shutdown.cancelled() => break Ok(()),
                _ = hold.wait_for(|open| *open) => {}
            }
        }
        // With a conditional NB monitor, once its port conditions
        // converged: never from a cache lacking ports the state calls for.
        let inputs = match sources.converged_inputs().await {
            Ok(inputs) => inputs,
            Err(e) => {
                let e = crate::reconcile::ReconcileError::Inputs(e.to_string());
                telemetry.finished(
                    &batch,
                    Err(&e),
                    started.elapsed(),
                    reconciler.withdrawal_holds(),
                );
                tracing::warn!(reasons = %batch, "not reconciling, retrying: {e}");
                retry.schedule(&sched);
                continue;
            }
        };
        let snapshot_time = started.elapsed();
        reconciler.note_database_rows(database_rows(&inputs.raw_ovn));
        let snap = &inputs.snapshot;
        // Timers only look for changes nobody notifies: OVS and FRR are
        // re-read after the reconcile, off this loop (see `Reason::Drift`).
        let kind = ReconcileKind::for_batch(&batch);
        let checks = BackgroundChecks::for_batch(&batch);
        match reconciler.reconcile(snap, &inputs.ofports, kind).await {
            Ok(report) if shutdown.is_cancelled() => {
                log_report(&report, &batch.to_string());
                tracing::info!(
                    not_started = report.not_started,
                    "stopped after the op in flight"
                );
                break Ok(());
            }
            Ok(mut report) => {
                report.snapshot_time = snapshot_time;
                telemetry.finished(
                    &batch,
                    Ok(&report),
                    started.elapsed(),
                    reconciler.withdrawal_holds(),
                );
                log_report_queued(
                    &report,
                    &batch.to_string(),
                    batch.window_wait,
                    batch.rate_wait,
                );
                tracing::debug!(total_ms = ms(started.elapsed()), "reconcile done");
                if trim.due(Instant::now(), batch.follows_full_dump()) {
                    crate::memory::spawn_release();
                }
                if rereads_at_once(&report, &batch) {
                    sched.trigger(Reason::UnnotifiedSideEffects);
                }
                // Held withdrawals are looked at again with the retry's
                // backoff: released once the grace period is over.
                if report.failed.is_empty() && report.held_back == 0 && report.withdrawals_held == 0
                {
                    retry.reset();
                } else {
                    retry.schedule(&sched);
                }
                if checks.drift {
                    drift.check(&reconciler, &sched);
                }
                if checks.desired {
                    drift.check_desired(&reconciler, &sched);
                }
            }
            Err(e) if e.is_fatal() || (first && e.is_config_error()) => break Err(e.into()),
            Err(e) => {
                telemetry.finished(
                    &batch,
                    Err(&e),
                    started.elapsed(),
                    reconciler.withdrawal_holds(),
                );
                tracing::error!(reasons = %batch, "reconcile failed, retrying: {e}");
                retry.schedule(&sched);
            }
        }
        first = false;
        if telemetry.metrics.exposed_wanted() {
            if let Some(desired) = reconciler.desired() {
                telemetry
                    .metrics
                    .set_exposed(&crate::metrics::count_exposed(desired));
            }
        }
        let chassis = reconciler.chassis_name(snap);
        let view = FilterView::after(
            &view_tx.borrow(),
            inputs.raw_ovn,
            Arc::new(inputs.snapshot),
            chassis,
            reconciler.exposed_ips(),
        );
        view_tx.send_replace(Arc::new(view));
    };
    for t in tasks.drain(..) {
        t.abort();
    }
    result
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
        && !batch.reasons.contains_key(&Reason::UnnotifiedSideEffects)
}

/// The background checks after timer-driven reconciles, at most one of
/// each kind at a time: the OVS/FRR re-read (drift triggers
/// [`Reason::Drift`], whose reconcile re-reads them before planning) and the
/// full desired-state computation (a difference triggers
/// [`Reason::DesiredMismatch`]).
#[derive(Default)]
struct DriftCheck {
    running: Arc<std::sync::atomic::AtomicBool>,
    desired_running: Arc<std::sync::atomic::AtomicBool>,
    /// When the last full desired-state check started.
    desired_last: std::cell::Cell<Option<Instant>>,
}

/// The full desired-state check runs at most this often. It is a safety
/// net over the patching (a difference is a bug), and a full computation
/// at scale costs CPU and allocations (docs/adr/0003-patched-desired-state.md): with a short
/// `reconcile_interval` it ran every periodic reconcile and measurably
/// slowed the events' reconciles (docs/latency.md). With the default
/// interval (300 s) every periodic reconcile still checks.
const DESIRED_CHECK_MIN_INTERVAL: Duration = Duration::from_secs(60);

impl DriftCheck {
    fn check(&self, reconciler: &Reconciler, sched: &Scheduler) {
        let Some(probe) = reconciler.drift_probe() else {
            return;
        };
        let sched = sched.clone();
        spawn_one(&self.running, move || {
            if let Some(why) = probe.drift() {
                tracing::info!(why = %why, "background re-read found drift; reconciling");
                sched.trigger(Reason::Drift);
            }
        });
    }

    /// Computes the desired state in full in the background and compares
    /// it with the patched one the reconcile used.
    /// Whether [`DESIRED_CHECK_MIN_INTERVAL`] has passed since the last
    /// full desired-state check started (or none ran yet).
    fn desired_check_due(&self) -> bool {
        self.desired_last
            .get()
            .is_none_or(|t| t.elapsed() >= DESIRED_CHECK_MIN_INTERVAL)
    }

    fn check_desired(&self, reconciler: &Reconciler, sched: &Scheduler) {
        if !self.desired_check_due() {
            return;
        }
        let Some(check) = reconciler.desired_check() else {
            return;
        };
        self.desired_last.set(Some(Instant::now()));
        let sched = sched.clone();
        spawn_one(&self.desired_running, move || {
            if check.agrees() == Some(false) {
                tracing::error!(
                    "the patched desired state differs from a full computation; recomputing"
                );
                sched.trigger(Reason::DesiredMismatch);
            }
        });
    }
}

/// Runs `job` on a thread of its own, at the lowest CPU priority, unless
/// the previous job of `running` is still at work.
fn spawn_one(running: &Arc<std::sync::atomic::AtomicBool>, job: impl FnOnce() + Send + 'static) {
    use std::sync::atomic::Ordering;
    if running.swap(true, Ordering::AcqRel) {
        return;
    }
    let done = running.clone();
    let spawned = std::thread::Builder::new()
        .name("obgp-check".into())
        .spawn(move || {
            lowest_priority();
            job();
            done.store(false, Ordering::Release);
        });
    if let Err(e) = spawned {
        tracing::warn!("background check not started: {e}");
        running.store(false, Ordering::Release);
    }
}

/// Puts the calling thread (and the processes it starts) in `SCHED_IDLE`:
/// a background check must only use CPU time that the event path, the
/// OVSDB client and the reconcile loop leave idle, or on a small node an
/// event's reconcile waits for it.
fn lowest_priority() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    if rc != 0 {
        tracing::debug!("SCHED_IDLE refused: {}", std::io::Error::last_os_error());
    }
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
        self.pending = Some(sched.after(delay, Reason::Retry));
    }

    fn reset(&mut self) {
        self.delay = None;
    }
}

/// The plan as `ovn-bgp-agent plan` prints it.
pub fn render_plan(plan: &Plan) -> String {
    if plan.is_empty() {
        "nothing to do: the node matches OVN\n".to_string()
    } else {
        plan.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::QueueConfig;
    use tokio::time::Instant;

    #[test]
    fn a_silent_kernel_flush_after_our_writes_is_reread_at_once_but_never_twice_in_a_row() {
        let batch = |reason: Reason| TriggerBatch {
            reasons: [(reason, 1)].into(),
            ..TriggerBatch::default()
        };
        let flushed = ReconcileReport {
            unnotified_side_effects: true,
            ..ReconcileReport::default()
        };
        assert!(rereads_at_once(&flushed, &batch(Reason::Periodic)));
        assert!(!rereads_at_once(
            &ReconcileReport::default(),
            &batch(Reason::Periodic)
        ));
        assert!(
            !rereads_at_once(&flushed, &batch(Reason::UnnotifiedSideEffects)),
            "the follow-up's own flush is left to the timers"
        );
        let failed = ReconcileReport {
            failed: vec!["+ route 10.0.0.5/32: EINVAL".into()],
            ..flushed
        };
        assert!(
            !rereads_at_once(&failed, &batch(Reason::Periodic)),
            "failures wait for the retry's backoff"
        );
    }

    #[test]
    fn the_full_desired_check_runs_at_most_once_a_minute() {
        let drift = DriftCheck::default();
        assert!(drift.desired_check_due(), "the first one runs");
        drift.desired_last.set(Some(std::time::Instant::now()));
        assert!(!drift.desired_check_due());
        let a_minute_ago = std::time::Instant::now() - DESIRED_CHECK_MIN_INTERVAL;
        drift.desired_last.set(Some(a_minute_ago));
        assert!(drift.desired_check_due());
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
