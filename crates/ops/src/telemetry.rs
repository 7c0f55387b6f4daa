//! What the run loop shares with the `metrics_listen` listener: the
//! metrics, the probes' progress record and, once connected, the
//! databases (read at scrape time). The loop writes once per reconcile;
//! the listener only reads, except `/status`, which the loop answers
//! between reconciles (through [`Telemetry::serve_status`]).

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use obgp_config::Config;
use obgp_ovsdb_data::DbSnapshot;
use tokio::sync::{mpsc, oneshot, watch};

use super::http::{Endpoints, StatusFuture};
use super::metrics::{unix_now, DbStatus, Metrics, CONTENT_TYPE};
use super::probes::{not_converged, ProbeBounds, Progress};
use super::report::{FrrOutcome, FrrResult, ReconcileReport};
use obgp_inputs::TriggerBatch;
use obgp_inputs::{MonitoredDb, OvnSources};

use super::status::{
    db_health, health_only, BgpSessions, ComputedBy, FrrLastText, Health, LastReconcile, Probe,
    Reply,
};
use obgp_netmodel::frr::BgpSession;

pub struct Telemetry {
    pub metrics: Metrics,
    progress: Mutex<Progress>,
    bounds: ProbeBounds,
    sources: OnceLock<Arc<OvnSources>>,
    /// Where `/status` requests go once the loop takes them.
    status: OnceLock<mpsc::Sender<Reply>>,
    config: Config,
    frr: Mutex<FrrRecord>,
    /// The last read of FRR's BGP sessions: when, and what it gave.
    sessions: Mutex<Option<(Instant, SessionsRead)>>,
}

/// What a read of FRR's BGP sessions gave: the sessions, or why FRR
/// could not be read.
type SessionsRead = Result<Vec<BgpSession>, String>;

/// The FRR texts the loop saw finish: the last one, and the last applied.
#[derive(Default)]
struct FrrRecord {
    last: Option<(Instant, FrrResult)>,
    last_applied: Option<Instant>,
}

impl Telemetry {
    pub fn new(config: &Config, bounds: ProbeBounds) -> Telemetry {
        Telemetry {
            metrics: Metrics::new(config),
            progress: Mutex::new(Progress::default()),
            bounds,
            sources: OnceLock::new(),
            status: OnceLock::new(),
            config: config.clone(),
            frr: Mutex::new(FrrRecord::default()),
            sessions: Mutex::new(None),
        }
    }

    fn progress(&self) -> MutexGuard<'_, Progress> {
        // A panic while holding it cannot leave a Progress half-written
        // in a way that matters: every method sets whole fields.
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The loop still waits for the initial dump of `what`.
    pub fn waiting(&self, what: String) {
        self.progress().waiting(what);
    }

    /// Both databases synced; their state is read at scrape time from now on.
    pub fn synced(&self, sources: Arc<OvnSources>) {
        self.progress().synced(Instant::now());
        let _ = self.sources.set(sources);
    }

    pub fn started(&self, batch: &TriggerBatch) {
        self.progress().started(Instant::now(), batch.to_string());
    }

    /// A reconcile of `batch` ended after `total` with `result` (the
    /// error is shown as its text).
    pub fn finished(
        &self,
        batch: &TriggerBatch,
        result: Result<&ReconcileReport, &dyn std::error::Error>,
        total: Duration,
        withdrawal_holds: u64,
    ) {
        self.metrics
            .observe_reconcile(batch, result.ok(), total, withdrawal_holds);
        if let Ok(report) = result {
            self.record_frr(&report.frr_results);
        }
        let outcome = match result {
            Ok(report) => not_converged(report).map_or(Ok(()), Err),
            Err(e) => Err(format!("it failed: {e}")),
        };
        self.progress().finished(Instant::now(), outcome);
    }
}

impl Telemetry {
    fn record_frr(&self, results: &[FrrResult]) {
        let Some(last) = results.last() else {
            return;
        };
        let now = Instant::now();
        let mut frr = self.frr.lock().unwrap_or_else(|p| p.into_inner());
        if results.iter().any(|r| r.outcome == FrrOutcome::Applied) {
            frr.last_applied = Some(now);
        }
        frr.last = Some((now, last.clone()));
    }

    /// A read of FRR's BGP sessions ended (the error's text when FRR
    /// could not be read): for the metrics and `status`.
    pub fn bgp_sessions_read(&self, result: SessionsRead) {
        self.metrics
            .set_bgp_sessions(result.as_ref().ok().map(Vec::as_slice));
        *self.sessions.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), result));
    }

    fn bgp_sessions(&self, now: Instant) -> Option<BgpSessions> {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let (at, result) = sessions.as_ref()?;
        Some(BgpSessions {
            read_ago_s: now.saturating_duration_since(*at).as_secs_f64(),
            sessions: result.as_ref().ok().cloned(),
            error: result.as_ref().err().cloned(),
        })
    }

    /// The last FRR text, as `status` shows it.
    fn frr_last_text(&self, now: Instant, unix: f64) -> Option<FrrLastText> {
        let frr = self.frr.lock().unwrap_or_else(|p| p.into_inner());
        let (at, r) = frr.last.as_ref()?;
        let ago = now.saturating_duration_since(*at).as_secs_f64();
        let error = match &r.outcome {
            FrrOutcome::Applied => None,
            FrrOutcome::Rejected(e) | FrrOutcome::Failed(e) => Some(e.clone()),
        };
        Some(FrrLastText {
            finished_unix: unix - ago,
            ago_s: ago,
            removal: r.removal,
            outcome: r.outcome.as_str().to_string(),
            error,
            last_applied_ago_s: frr
                .last_applied
                .map(|t| now.saturating_duration_since(t).as_secs_f64()),
        })
    }
}

impl Telemetry {
    /// The loop answers `/status` requests sent to `tx` from now on.
    pub fn serve_status(&self, tx: mpsc::Sender<Reply>) {
        let _ = self.status.set(tx);
    }

    /// The loop's health as `status` shows it: the databases, the last
    /// reconcile and the probes (no plan: the caller adds it).
    pub fn health(&self) -> Health {
        let now = Instant::now();
        let unix = unix_now();
        let p = self.progress().clone();
        let databases = match self.sources.get() {
            Some(s) => [&s.ovn, &s.ovs]
                .into_iter()
                .map(|src| {
                    let last = self.metrics.db_update_clock(src.database).get();
                    db_health(src, (last > 0.0).then_some(last))
                })
                .collect(),
            None => Vec::new(),
        };
        let last_reconcile = p.last().map(|(at, reasons, outcome)| {
            let ago = now.saturating_duration_since(at).as_secs_f64();
            LastReconcile {
                finished_unix: unix - ago,
                ago_s: ago,
                reasons: reasons.to_string(),
                converged: outcome.is_ok(),
                why: outcome.clone().err(),
            }
        });
        let probe = |v: super::probes::Verdict| Probe {
            ok: v.ok,
            reason: v.reason,
        };
        Health {
            databases,
            last_reconcile,
            reconcile_running_s: p
                .running_since()
                .map(|t| now.saturating_duration_since(t).as_secs_f64()),
            pending_ops: None,
            unread: Vec::new(),
            ready: Some(probe(p.readiness())),
            healthy: Some(probe(p.health(now, &self.bounds))),
            frr_last_text: self.frr_last_text(now, unix),
            bgp_sessions: self.bgp_sessions(now),
        }
    }
}

fn status(source: &MonitoredDb) -> DbStatus {
    DbStatus {
        database: source.database,
        connected: source.client.connected_to().is_some(),
        syncs: *source.client.cache().resynced().borrow(),
        // The client counts a start resumed from the cache file among its
        // resumes; the metric's are reconnects.
        resumed: source.client.resumed_syncs() - u64::from(source.client.resumed_at_start()),
        resumed_at_start: source.client.resumed_at_start(),
    }
}

impl Endpoints for Telemetry {
    fn metrics(&self) -> (String, &'static str) {
        if let Some(s) = self.sources.get() {
            self.metrics
                .set_databases(&[status(&s.ovn), status(&s.ovs)]);
        }
        (self.metrics.render(), CONTENT_TYPE)
    }

    fn health(&self) -> (bool, String) {
        let v = self.progress().health(Instant::now(), &self.bounds);
        (v.ok, v.reason)
    }

    fn readiness(&self) -> (bool, String) {
        let v = self.progress().readiness();
        (v.ok, v.reason)
    }

    fn status(&self) -> StatusFuture<'_> {
        let tx = self.status.get().cloned();
        Box::pin(async move {
            let status = match tx {
                // Before the loop takes requests (waiting for the
                // databases, connecting to the node): the health only.
                None => health_only(&self.config, ComputedBy::Daemon, self.health()),
                Some(tx) => {
                    let (reply, answer) = oneshot::channel();
                    if tx.send(reply).await.is_err() {
                        return (false, "the run loop has stopped\n".to_string());
                    }
                    match answer.await {
                        Ok(s) => s,
                        Err(_) => return (false, "the run loop has stopped\n".to_string()),
                    }
                }
            };
            match serde_json::to_string_pretty(&status) {
                Ok(json) => (true, json + "\n"),
                Err(e) => (false, format!("status: {e}\n")),
            }
        })
    }
}

/// Sets the `ovsdb_last_update_timestamp_seconds` of `source` whenever its
/// cache publishes a snapshot (one store per update batch).
pub fn spawn_update_clock(
    telemetry: &Telemetry,
    source: &MonitoredDb,
) -> tokio::task::JoinHandle<()> {
    let gauge = telemetry.metrics.db_update_clock(source.database);
    let mut updates: watch::Receiver<DbSnapshot> = source.client.cache().watch();
    gauge.set(unix_now());
    tokio::spawn(async move {
        while updates.changed().await.is_ok() {
            gauge.set(unix_now());
        }
    })
}
