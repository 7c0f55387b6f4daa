//! The checks that run in the background after timer-driven reconciles,
//! off the reconcile loop and at the lowest CPU priority: the OVS/FRR
//! re-read that finds drift, and the full desired-state computation that
//! checks the patched one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::inputs::Trigger;
use crate::ops::Telemetry;
use crate::queue::Scheduler;
use crate::reconcile::Reconciler;

/// The background checks after timer-driven reconciles, at most one of
/// each kind at a time: the OVS/FRR re-read (drift triggers
/// [`Trigger::Drift`], whose reconcile re-reads them before planning) and the
/// full desired-state computation (a difference triggers
/// [`Trigger::DesiredMismatch`]).
#[derive(Default)]
pub(crate) struct DriftCheck {
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
    /// Re-reads OVS and FRR in the background; drift triggers a reconcile.
    pub(crate) fn check(&self, reconciler: &Reconciler, sched: &Scheduler) {
        let Some(probe) = reconciler.drift_probe() else {
            return;
        };
        let sched = sched.clone();
        spawn_one(&self.running, move || {
            if let Some(why) = probe.drift() {
                tracing::info!(why = %why, "background re-read found drift; reconciling");
                sched.trigger(Trigger::Drift);
            }
        });
    }

    /// Whether [`DESIRED_CHECK_MIN_INTERVAL`] has passed since the last
    /// full desired-state check started (or none ran yet).
    fn desired_check_due(&self) -> bool {
        self.desired_last
            .get()
            .is_none_or(|t| t.elapsed() >= DESIRED_CHECK_MIN_INTERVAL)
    }

    /// Computes the desired state in full in the background and compares
    /// it with the patched one the reconcile used.
    pub(crate) fn check_desired(&self, reconciler: &Reconciler, sched: &Scheduler) {
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
                sched.trigger(Trigger::DesiredMismatch);
            }
        });
    }
}

/// The read of FRR's BGP sessions for `status` and the metrics: in the
/// background, at most once per `frr_reconcile_interval`, never on a
/// reconcile's path (docs/operations.md, "BGP sessions").
pub(crate) struct SessionsRead {
    running: Arc<std::sync::atomic::AtomicBool>,
    last: std::cell::Cell<Option<Instant>>,
    interval: Duration,
}

impl SessionsRead {
    pub(crate) fn every(interval: Duration) -> SessionsRead {
        SessionsRead {
            running: Arc::default(),
            last: std::cell::Cell::new(None),
            interval,
        }
    }

    /// Reads the sessions when the interval has passed since the last
    /// read started (or none did); the result goes to `telemetry`.
    pub(crate) fn maybe_read(&self, reconciler: &Reconciler, telemetry: &Arc<Telemetry>) {
        if self.last.get().is_some_and(|t| t.elapsed() < self.interval) {
            return;
        }
        self.last.set(Some(Instant::now()));
        let reader = reconciler.bgp_sessions_reader();
        let telemetry = telemetry.clone();
        spawn_one(&self.running, move || {
            let result = reader.read().map_err(|e| e.to_string());
            if let Err(e) = &result {
                tracing::warn!(error = %e, "cannot read FRR's BGP sessions");
            }
            telemetry.bgp_sessions_read(result);
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
