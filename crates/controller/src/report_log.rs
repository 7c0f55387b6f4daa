//! The reconcile's log line: its reasons, how long the work queue held it
//! back, the time of each phase and the ops applied per kind.

use std::time::Duration;

use crate::reconcile::ReconcileReport;

/// Logs `report` for a reconcile the work queue did not hold back.
pub(crate) fn log_report(report: &ReconcileReport, why: &str) {
    log_report_queued(report, why, Duration::ZERO, Duration::ZERO)
}

/// `window_wait`/`rate_wait`: how long the work queue held the first
/// trigger back (merge window, rate limit), so a slow event can be told
/// apart from a slow reconcile.
pub(crate) fn log_report_queued(
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

/// A duration in milliseconds, to the microsecond, for log fields.
pub(crate) fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}
