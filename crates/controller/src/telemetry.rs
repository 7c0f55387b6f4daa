//! What the run loop shares with the `metrics_listen` listener: the
//! metrics, the probes' progress record and, once connected, the
//! databases (read at scrape time). The loop writes once per reconcile;
//! the listener only reads.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use obgp_config::Config;
use obgp_ovsdb_data::DbSnapshot;
use tokio::sync::watch;

use crate::http::Endpoints;
use crate::metrics::{unix_now, DbStatus, Metrics, CONTENT_TYPE};
use crate::probes::{not_converged, ProbeBounds, Progress};
use crate::queue::TriggerBatch;
use crate::reconcile::{ReconcileError, ReconcileReport};
use crate::sources::{OvnSources, Source};

pub struct Telemetry {
    pub metrics: Metrics,
    progress: Mutex<Progress>,
    bounds: ProbeBounds,
    sources: OnceLock<Arc<OvnSources>>,
}

impl Telemetry {
    pub fn new(config: &Config, bounds: ProbeBounds) -> Telemetry {
        Telemetry {
            metrics: Metrics::new(config),
            progress: Mutex::new(Progress::default()),
            bounds,
            sources: OnceLock::new(),
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

    /// A reconcile of `batch` ended after `total` with `result`.
    pub fn finished(
        &self,
        batch: &TriggerBatch,
        result: Result<&ReconcileReport, &ReconcileError>,
        total: Duration,
        withdrawal_holds: u64,
    ) {
        self.metrics
            .observe_reconcile(batch, result.ok(), total, withdrawal_holds);
        let outcome = match result {
            Ok(report) => not_converged(report).map_or(Ok(()), Err),
            Err(e) => Err(format!("it failed: {e}")),
        };
        self.progress().finished(Instant::now(), outcome);
    }
}

fn status(source: &Source) -> DbStatus {
    DbStatus {
        database: source.database,
        connected: source.client.connected_to().is_some(),
        syncs: *source.client.cache().resynced().borrow(),
        resumed: source.client.resumed_syncs(),
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
}

/// Sets the `ovsdb_last_update_timestamp_seconds` of `source` whenever its
/// cache publishes a snapshot (one store per update batch).
pub fn spawn_update_clock(telemetry: &Telemetry, source: &Source) -> tokio::task::JoinHandle<()> {
    let gauge = telemetry.metrics.db_update_clock(source.database);
    let mut updates: watch::Receiver<DbSnapshot> = source.client.cache().watch();
    gauge.set(unix_now());
    tokio::spawn(async move {
        while updates.changed().await.is_ok() {
            gauge.set(unix_now());
        }
    })
}
