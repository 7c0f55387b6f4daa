//! What `/healthz` and `/readyz` answer: a pure record of the run loop's
//! progress, judged against bounds (docs/operations.md, "Probes").
//!
//! Liveness asks "would restarting the agent help?". It fails only when
//! the loop itself stopped making progress: a reconcile running past
//! [`ProbeBounds::stuck_after`], or no reconcile finished for
//! [`ProbeBounds::idle_after`] although the timers start one at least
//! every `min(reconcile_interval, frr_reconcile_interval)`. A wedged
//! bgpd or ovs-vswitchd does not fail it: their commands run on the
//! command lane, each killed at its deadline (`vtysh_timeout`,
//! `ovs_ofctl_timeout`), the daemon's reconcile never waits for them, and
//! a restart would not unwedge FRR. Waiting for the databases does not
//! fail it either (a restart would wait the same).
//!
//! Readiness asks "is this node's BGP state what OVN says?": the initial
//! sync is done and the last reconcile converged (every op applied,
//! nothing held back, FRR and the OVS bridges read).

use std::time::{Duration, Instant};

use obgp_config::Config;

/// When the loop counts as stuck.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeBounds {
    /// A reconcile running longer than this is stuck.
    pub stuck_after: Duration,
    /// No reconcile finished (or, before the first, since the initial
    /// sync) for longer than this: the loop stopped taking work.
    pub idle_after: Duration,
}

/// The daemon's default for [`ProbeBounds::stuck_after`]: a full reconcile
/// at 50k ports takes about 1.3 s and the start-up one, which applies
/// everything, about 11 s (docs/latency.md, docs/soak.md); the daemon's
/// reconcile never waits for a command. 120 s is ten times the slowest
/// measured and still well inside a liveness probe's usual patience.
pub const STUCK_AFTER: Duration = Duration::from_secs(120);

impl ProbeBounds {
    /// The daemon's bounds: [`STUCK_AFTER`], and three timer periods
    /// (`min(reconcile_interval, frr_reconcile_interval)`, each at least
    /// 1 s as the loop uses them) plus [`STUCK_AFTER`] without a finished
    /// reconcile.
    pub fn for_config(config: &Config) -> ProbeBounds {
        let d = &config.default;
        let period = d
            .reconcile_interval
            .max(1)
            .min(d.frr_reconcile_interval.max(1));
        ProbeBounds {
            stuck_after: STUCK_AFTER,
            // Saturating: the configuration bounds the periods, but a
            // bound's sum must not be what panics if one slipped through.
            idle_after: Duration::from_secs(period.saturating_mul(3)).saturating_add(STUCK_AFTER),
        }
    }
}

/// The run loop's progress, as the probes see it.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Which database the loop still waits for, until the initial sync.
    waiting_for: Option<String>,
    synced_at: Option<Instant>,
    /// The reconcile in flight: when it started and its reasons.
    running: Option<(Instant, String)>,
    last_finished: Option<Instant>,
    /// Why the last reconcile did not converge; `None` when it did.
    last_outcome: Option<Result<(), String>>,
    /// The reasons of the last finished reconcile.
    last_reasons: String,
}

impl Default for Progress {
    fn default() -> Self {
        Progress {
            waiting_for: Some("the OVSDB databases".into()),
            synced_at: None,
            running: None,
            last_finished: None,
            last_outcome: None,
            last_reasons: String::new(),
        }
    }
}

/// A probe's answer: healthy or not, and a one-line reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub ok: bool,
    pub reason: String,
}

impl Verdict {
    fn ok(reason: impl Into<String>) -> Verdict {
        Verdict {
            ok: true,
            reason: reason.into(),
        }
    }
    fn fail(reason: impl Into<String>) -> Verdict {
        Verdict {
            ok: false,
            reason: reason.into(),
        }
    }
}

impl Progress {
    /// The loop waits for `what` (a database and its remotes).
    pub fn waiting(&mut self, what: impl Into<String>) {
        self.waiting_for = Some(what.into());
    }

    /// Both databases delivered their initial dump.
    pub fn synced(&mut self, now: Instant) {
        self.waiting_for = None;
        self.synced_at.get_or_insert(now);
    }

    /// A reconcile for `reasons` started.
    pub fn started(&mut self, now: Instant, reasons: String) {
        self.running = Some((now, reasons));
    }

    /// The reconcile in flight ended: `Ok` when it converged, else why not.
    pub fn finished(&mut self, now: Instant, outcome: Result<(), String>) {
        if let Some((_, reasons)) = self.running.take() {
            self.last_reasons = reasons;
        }
        self.last_finished = Some(now);
        self.last_outcome = Some(outcome);
    }

    /// The last finished reconcile: when, its reasons and its outcome.
    pub fn last(&self) -> Option<(Instant, &str, &Result<(), String>)> {
        Some((
            self.last_finished?,
            self.last_reasons.as_str(),
            self.last_outcome.as_ref()?,
        ))
    }

    /// When the reconcile in flight started, if one is.
    pub fn running_since(&self) -> Option<Instant> {
        self.running.as_ref().map(|(t, _)| *t)
    }

    /// `/healthz`.
    pub fn health(&self, now: Instant, bounds: &ProbeBounds) -> Verdict {
        if let Some((since, reasons)) = &self.running {
            let running = now.saturating_duration_since(*since);
            if running > bounds.stuck_after {
                return Verdict::fail(format!(
                    "stuck: a reconcile ({reasons}) has run for {:.1} s (bound {} s)",
                    running.as_secs_f64(),
                    bounds.stuck_after.as_secs()
                ));
            }
        }
        let Some(synced_at) = self.synced_at else {
            return Verdict::ok(format!(
                "ok: waiting for the initial sync of {}",
                self.waiting_for.as_deref().unwrap_or("the databases")
            ));
        };
        let since = self.last_finished.unwrap_or(synced_at);
        let idle = now.saturating_duration_since(since);
        if self.running.is_none() && idle > bounds.idle_after {
            return Verdict::fail(format!(
                "stuck: no reconcile finished for {:.1} s (bound {} s)",
                idle.as_secs_f64(),
                bounds.idle_after.as_secs()
            ));
        }
        match (&self.running, self.last_finished) {
            (Some((since, _)), _) => Verdict::ok(format!(
                "ok: a reconcile has run for {} ms",
                now.saturating_duration_since(*since).as_millis()
            )),
            (None, Some(t)) => Verdict::ok(format!(
                "ok: last reconcile finished {} s ago",
                now.saturating_duration_since(t).as_secs()
            )),
            (None, None) => Verdict::ok("ok: synced, first reconcile pending"),
        }
    }

    /// `/readyz`.
    pub fn readiness(&self) -> Verdict {
        if self.synced_at.is_none() {
            return Verdict::fail(format!(
                "not ready: waiting for the initial sync of {}",
                self.waiting_for.as_deref().unwrap_or("the databases")
            ));
        }
        match &self.last_outcome {
            None => Verdict::fail("not ready: no reconcile finished yet"),
            Some(Ok(())) => Verdict::ok("ready: the last reconcile converged"),
            Some(Err(why)) => Verdict::fail(format!(
                "not ready: the last reconcile did not converge: {why}"
            )),
        }
    }
}

/// Why a reconcile that ran did not converge, in a few words; `None`
/// when it did.
pub fn not_converged(report: &super::report::ReconcileReport) -> Option<String> {
    let mut why = Vec::new();
    if !report.failed.is_empty() {
        why.push(format!("{} op(s) failed", report.failed.len()));
    }
    if report.held_back > 0 {
        why.push(format!(
            "{} announcement(s) held back (wiring failed)",
            report.held_back
        ));
    }
    if report.withdrawals_held > 0 {
        why.push(format!(
            "{} withdrawal(s) held by the mass-withdrawal guard",
            report.withdrawals_held
        ));
    }
    if report.not_started > 0 {
        why.push(format!("{} op(s) not started", report.not_started));
    }
    why.extend(report.unread.iter().cloned());
    (!why.is_empty()).then(|| why.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: ProbeBounds = ProbeBounds {
        stuck_after: Duration::from_secs(120),
        idle_after: Duration::from_secs(165),
    };

    #[test]
    fn before_the_initial_sync_it_is_alive_but_not_ready() {
        let t0 = Instant::now();
        let mut p = Progress::default();
        p.waiting("OVN_Northbound (tcp:192.0.2.10:6641)");
        let h = p.health(t0 + Duration::from_secs(3600), &BOUNDS);
        assert!(h.ok, "{h:?}");
        let r = p.readiness();
        assert!(!r.ok);
        assert_eq!(
            r.reason,
            "not ready: waiting for the initial sync of OVN_Northbound (tcp:192.0.2.10:6641)"
        );
    }

    #[test]
    fn ready_once_synced_and_the_last_reconcile_converged() {
        let t0 = Instant::now();
        let mut p = Progress::default();
        p.synced(t0);
        assert_eq!(p.readiness().reason, "not ready: no reconcile finished yet");
        p.started(t0, "startup".into());
        p.finished(t0 + Duration::from_secs(1), Err("3 op(s) failed".into()));
        let r = p.readiness();
        assert!(!r.ok);
        assert!(
            r.reason.ends_with("did not converge: 3 op(s) failed"),
            "{r:?}"
        );
        p.started(t0 + Duration::from_secs(2), "retry after a failure".into());
        p.finished(t0 + Duration::from_secs(3), Ok(()));
        assert!(p.readiness().ok);
        let (at, reasons, outcome) = p.last().unwrap();
        assert_eq!(
            (at, reasons, outcome),
            (
                t0 + Duration::from_secs(3),
                "retry after a failure",
                &Ok(())
            )
        );
        // A reconcile in flight does not change readiness: the last one counts.
        p.started(t0 + Duration::from_secs(4), "periodic reconcile".into());
        assert!(p.readiness().ok);
    }

    #[test]
    fn a_reconcile_running_past_the_bound_is_stuck() {
        let t0 = Instant::now();
        let mut p = Progress::default();
        p.synced(t0);
        p.started(t0, "event X on Logical_Switch_Port".into());
        assert!(p.health(t0 + Duration::from_secs(120), &BOUNDS).ok);
        let h = p.health(t0 + Duration::from_secs(121), &BOUNDS);
        assert!(!h.ok);
        assert_eq!(
            h.reason,
            "stuck: a reconcile (event X on Logical_Switch_Port) has run for 121.0 s (bound 120 s)"
        );
        p.finished(t0 + Duration::from_secs(130), Ok(()));
        assert!(
            p.health(t0 + Duration::from_secs(131), &BOUNDS).ok,
            "recovered"
        );
    }

    #[test]
    fn a_loop_that_stops_finishing_reconciles_is_stuck() {
        let t0 = Instant::now();
        let mut p = Progress::default();
        p.synced(t0);
        assert!(p.health(t0 + Duration::from_secs(165), &BOUNDS).ok);
        let h = p.health(t0 + Duration::from_secs(166), &BOUNDS);
        assert!(!h.ok);
        assert_eq!(
            h.reason,
            "stuck: no reconcile finished for 166.0 s (bound 165 s)"
        );
        p.started(t0 + Duration::from_secs(170), "frr check".into());
        p.finished(t0 + Duration::from_secs(171), Ok(()));
        assert!(p.health(t0 + Duration::from_secs(200), &BOUNDS).ok);
    }

    #[test]
    fn the_default_bounds_follow_the_timers() {
        let mut config = Config::default();
        let b = ProbeBounds::for_config(&config);
        // frr_reconcile_interval (15 s) is the shorter timer.
        assert_eq!(b.idle_after, Duration::from_secs(45 + 120));
        assert_eq!(b.stuck_after, STUCK_AFTER);
        config.default.frr_reconcile_interval = 3600;
        config.default.reconcile_interval = 0;
        assert_eq!(
            ProbeBounds::for_config(&config).idle_after,
            Duration::from_secs(3 + 120),
            "0 runs every second, as the loop does"
        );
    }

    /// Periods at the integer limit (a `Config` built in code, past the
    /// loader's bounds) saturate instead of panicking with "overflow when
    /// adding durations", which stopped the daemon at start.
    #[test]
    fn periods_at_the_integer_limit_saturate() {
        let mut config = Config::default();
        config.default.reconcile_interval = u64::MAX;
        config.default.frr_reconcile_interval = u64::MAX;
        assert_eq!(ProbeBounds::for_config(&config).idle_after, Duration::MAX);
    }

    #[test]
    fn not_converged_names_each_cause() {
        let r = crate::ReconcileReport {
            failed: vec!["a".into(), "b".into()],
            withdrawals_held: 4,
            unread: vec!["FRR's running configuration could not be read".into()],
            ..Default::default()
        };
        assert_eq!(
            not_converged(&r).unwrap(),
            "2 op(s) failed; 4 withdrawal(s) held by the mass-withdrawal guard; FRR's running configuration could not be read"
        );
        assert_eq!(not_converged(&crate::ReconcileReport::default()), None);
    }
}
