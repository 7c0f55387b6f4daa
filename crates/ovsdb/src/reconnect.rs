//! The long-lived client: connects to one of several remotes, monitors a
//! database into a [`cache`](crate::cache), and reconnects when anything
//! goes wrong.
//!
//! One task per database runs this loop:
//!
//! 1. connect to the next remote of the list (round robin; after a whole
//!    round without success, wait an exponentially growing, jittered delay);
//! 2. fetch the schema; read `_Server.Database` and move on to the next
//!    remote unless this server's copy is usable (`server_db.rs`: a
//!    clustered member connected to its cluster, not behind a cluster index
//!    already seen, and in leader-only mode its leader), and keep watching
//!    it: a member that loses its cluster or leadership later also moves
//!    us on. With no usable member the cache keeps its last snapshot;
//!    nothing is withdrawn for want of a server;
//! 3. start the monitor with `monitor_cond_since` and the last transaction id
//!    seen, so a reconnect to a server that still has it transfers only what
//!    changed; when the server lacks the method, use `monitor_cond` and
//!    replace the cache with the full dump. With a cache file
//!    (`ClientConfig::state_file`) the first session asks from the file's
//!    transaction id instead, if the file was written with this server's
//!    schema and cluster and this very monitor request (`resume.rs`); its
//!    rows are only the base the server's changes apply to, published
//!    after the server answered, never before;
//! 4. publish the result, signal `resynced`, then apply every update batch as
//!    it arrives, until the session fails.
//!
//! Row conditions changed with [`Client::set_conditions`] are sent by this
//! same loop (`monitor_cond_change`), which applies the rows the change adds
//! and removes before it answers: when `set_conditions` returns, the cache
//! holds exactly the rows the new conditions select. A resume
//! (`monitor_cond_since` from the last transaction id) is only asked for
//! when the cache reflects the very conditions of the new request: the
//! server sends only what changed since that transaction, so rows that the
//! conditions newly select, or no longer select, would otherwise be missed
//! or kept. With changed conditions a reconnect takes a full dump.
//!
//! A row the server sends malformed or not fitting the schema (a wrong
//! type, a bad UUID, an invalid atom) is left out and logged with its table
//! and UUID; the rest of the database syncs
//! ([`DbSnapshot::apply_skipping_bad_rows`]). Any other error from the
//! server's input (JSON that does not parse, a message of the wrong shape,
//! a modify of a row we do not have) ends the session: the cache keeps its
//! last good snapshot and step 1 starts again, which resynchronises it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

mod resume;
mod server_check;
mod sync;

pub use crate::backoff::Backoff;
use crate::cache::{cache, CachePublisher, CacheReader};
use crate::error::{Error, Result};
use crate::rpc::session::{Notification, Session, SessionConfig};
use crate::rpc::transport::Remote;
use crate::server_db;
use crate::state_file::StateFile;
use crate::tls::TlsSettings;
use obgp_ovsdb_data::cache_file::LoadedCache;
use obgp_ovsdb_data::schema::DatabaseSchema;
use obgp_ovsdb_data::{AppliedUpdate, DataError, DbSnapshot};
use obgp_ovsdb_data::{Condition, MonitorSpec};

/// Everything a [`Client`] needs.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Tried in order, round robin (a clustered database's members).
    pub remotes: Vec<Remote>,
    /// Database to monitor (e.g. `OVN_Northbound`).
    pub database: String,
    /// Tables, columns and conditions to monitor.
    pub monitor: MonitorSpec,
    /// Needed for `ssl:` remotes.
    pub tls: Option<TlsSettings>,
    /// Only stay connected to the cluster leader (the
    /// `[local_ovn_cluster]` connection writes, so it needs the leader).
    pub leader_only: bool,
    /// Per-session settings (message limit, inactivity probe).
    pub session: SessionConfig,
    /// First and largest reconnect delay.
    pub backoff: (Duration, Duration),
    /// Change stream capacity before slow subscribers lag.
    pub change_capacity: usize,
    /// How long [`Client::transact`] waits for the reply (the agent's
    /// `ovsdb_connection_timeout`, 180 s by default).
    pub transact_timeout: Duration,
    /// Where the cache is kept between runs (`None`: nowhere): written
    /// every `state_interval` when it changed and by
    /// [`Client::save_state`]; read at start so that the first sync can
    /// resume with `monitor_cond_since` (`state_file.rs`).
    pub state_file: Option<std::path::PathBuf>,
    /// How often the cache file is rewritten while the cache changes.
    pub state_interval: Duration,
}

impl ClientConfig {
    /// Defaults: no TLS, any cluster member, the session's default probe
    /// ([`SessionConfig`](crate::SessionConfig)), 0.25–8 s backoff.
    pub fn new(remotes: Vec<Remote>, database: &str, monitor: MonitorSpec) -> ClientConfig {
        ClientConfig {
            remotes,
            database: database.to_string(),
            monitor,
            tls: None,
            leader_only: false,
            session: SessionConfig::default(),
            backoff: (Duration::from_millis(250), Duration::from_secs(8)),
            change_capacity: 65536,
            transact_timeout: Duration::from_secs(180),
            state_file: None,
            // A file of 50k ports costs well under a second of one core
            // to write (docs/performance.md); once a minute bounds that
            // cost and what a crash loses: changes of the last minute,
            // which the server then sends again (or a full dump if its
            // history no longer reaches back).
            state_interval: Duration::from_secs(60),
        }
    }
}

/// A monitored database that stays connected. Dropping it stops the task.
#[derive(Debug)]
pub struct Client {
    cache: CacheReader,
    session: watch::Receiver<Option<Live>>,
    monitor: Arc<Mutex<MonitorSpec>>,
    /// Asks the monitor task to bring the live monitor to the latest
    /// conditions; answered once the cache reflects them.
    condition_changes: mpsc::UnboundedSender<oneshot::Sender<Result<()>>>,
    resumes: Arc<AtomicU64>,
    resumed_at_start: Arc<std::sync::atomic::AtomicBool>,
    skipped: Arc<AtomicU64>,
    sync_rows: Arc<AtomicU64>,
    transact_timeout: Duration,
    state: Option<StateFile>,
    task: JoinHandle<()>,
    /// Rewrites the cache file every `state_interval` (with a state file).
    state_writer: Option<JoinHandle<()>>,
}

/// The session currently serving the client and the schema it reported.
#[derive(Clone, Debug)]
struct Live {
    session: Session,
    schema: Arc<DatabaseSchema>,
}

const MONITOR_ID: &str = "obgp-db";
/// Skipped rows of one batch named in the log; the rest are counted.
const LOGGED_FAULTS: usize = 20;
const SERVER_MONITOR_ID: &str = "obgp-server";

/// The reply of a `monitor_cond_change` in flight.
type CondChange = std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send>>;

impl Client {
    /// Starts connecting in the background; see [`CacheReader::wait_resynced`]
    /// to wait for the first sync.
    pub fn start(config: ClientConfig) -> Client {
        let empty = DbSnapshot::empty(Arc::new(DatabaseSchema::empty(&config.database)), []);
        let (publisher, reader) = cache(empty, config.change_capacity);
        let (live_tx, live_rx) = watch::channel(None);
        let monitor = Arc::new(Mutex::new(config.monitor.clone()));
        let resumes = Arc::new(AtomicU64::new(0));
        let skipped = Arc::new(AtomicU64::new(0));
        let sync_rows = Arc::new(AtomicU64::new(0));
        let resumed_at_start = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let transact_timeout = config.transact_timeout;
        let (changes_tx, changes_rx) = mpsc::unbounded_channel();
        let state = config.state_file.clone().map(StateFile::new);
        let state_writer = state.clone().map(|state| {
            let every = config.state_interval;
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    if let Err(e) = state.save().await {
                        tracing::warn!(error = %e, "OVSDB cache file not written; the next restart may take a full dump");
                    }
                }
            })
        });
        let task = tokio::spawn(
            Runner {
                config,
                publisher,
                live: live_tx,
                monitor: monitor.clone(),
                condition_changes: changes_rx,
                waiting: Vec::new(),
                cache_spec: None,
                resumes: resumes.clone(),
                skipped: skipped.clone(),
                sync_rows: sync_rows.clone(),
                resumed_at_start: resumed_at_start.clone(),
                last_txn_id: None,
                since_supported: true,
                seen_index: Default::default(),
                state: state.clone(),
                seed: None,
                schema_json: Arc::new(Value::Null),
                cluster_id: None,
            }
            .run(),
        );
        Client {
            cache: reader,
            session: live_rx,
            monitor,
            condition_changes: changes_tx,
            resumes,
            resumed_at_start,
            skipped,
            sync_rows,
            transact_timeout,
            state,
            task,
            state_writer,
        }
    }

    /// Writes the cache file now if the cache changed since it was last
    /// written (the daemon calls it on SIGTERM). `Ok(false)`: nothing to
    /// write, no state file, or not synced yet.
    pub async fn save_state(&self) -> Result<bool> {
        match &self.state {
            Some(state) => state.save().await,
            None => Ok(false),
        }
    }

    /// The database cache: snapshots, change stream and resync signal.
    pub fn cache(&self) -> &CacheReader {
        &self.cache
    }

    /// The remote of the current session, if connected and synced.
    pub fn connected_to(&self) -> Option<String> {
        self.session
            .borrow()
            .as_ref()
            .map(|l| l.session.remote().to_string())
    }

    /// How many syncs resumed from the last transaction id
    /// (`monitor_cond_since` found it) instead of a full dump: reconnects,
    /// and the first sync when it resumed from the cache file.
    pub fn resumed_syncs(&self) -> u64 {
        self.resumes.load(Ordering::Relaxed)
    }

    /// Whether the first sync resumed from the cache file
    /// ([`ClientConfig::state_file`]); counted in `resumed_syncs` too.
    pub fn resumed_at_start(&self) -> bool {
        self.resumed_at_start.load(Ordering::Relaxed)
    }

    /// How many row updates the server sent in the last sync's reply: the
    /// whole database after a full dump, only what changed after a resume.
    pub fn last_sync_rows(&self) -> u64 {
        self.sync_rows.load(Ordering::Relaxed)
    }

    /// How many row updates were left out as malformed or not fitting the
    /// schema (each logged with its table and UUID).
    pub fn skipped_rows(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }

    fn live(&self) -> Result<Live> {
        self.session.borrow().clone().ok_or(Error::SessionClosed)
    }

    /// Runs a transaction on the current session. Fails with
    /// [`Error::SessionClosed`] while disconnected and [`Error::Timeout`]
    /// after `transact_timeout`: the caller decides whether to retry, since
    /// a transaction may not be idempotent (after a timeout it may still
    /// commit).
    pub async fn transact(&self, ops: Vec<Value>) -> Result<Vec<Value>> {
        let live = self.live()?;
        let db = live.schema.name.clone();
        tokio::time::timeout(self.transact_timeout, live.session.transact(&db, ops))
            .await
            .map_err(|_| Error::Timeout(self.transact_timeout))?
    }

    /// Replaces the row conditions of `table` (`None`: all rows), for the
    /// live monitor (`monitor_cond_change`) and every later reconnect.
    /// Returns once the cache holds exactly the rows the conditions select
    /// (after the server's answer and the rows it added and removed are
    /// applied, or after the next connect's dump while disconnected: it
    /// waits for one). Fails if the table is not monitored, or with the
    /// server's error if it refused the conditions (the next reconnect
    /// tries them again).
    pub async fn set_conditions(
        &self,
        table: &str,
        conditions: Option<Vec<Condition>>,
    ) -> Result<()> {
        self.set_conditions_of(vec![(table.to_string(), conditions)])
            .await
    }

    /// [`Client::set_conditions`] for several tables at once: one
    /// `monitor_cond_change`, one answer. Nothing changes if one of the
    /// tables is not monitored.
    pub async fn set_conditions_of(
        &self,
        changes: Vec<(String, Option<Vec<Condition>>)>,
    ) -> Result<()> {
        {
            let mut spec = self.monitor.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((table, _)) = changes.iter().find(|(t, _)| !spec.tables.contains_key(t)) {
                return Err(DataError::UnknownTable(table.clone()).into());
            }
            for (table, conditions) in changes {
                if let Some(tm) = spec.tables.get_mut(&table) {
                    tm.conditions = conditions;
                }
            }
        }
        let (done, reply) = oneshot::channel();
        self.condition_changes
            .send(done)
            .map_err(|_| Error::SessionClosed)?;
        reply.await.map_err(|_| Error::SessionClosed)?
    }

    /// The row conditions of `table` the next connect asks for (the latest
    /// [`Client::set_conditions`]), `None` for all rows or a table not
    /// monitored.
    pub fn conditions(&self, table: &str) -> Option<Vec<Condition>> {
        let spec = self.monitor.lock().unwrap_or_else(|p| p.into_inner());
        spec.tables.get(table).and_then(|t| t.conditions.clone())
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.task.abort();
        if let Some(writer) = &self.state_writer {
            writer.abort();
        }
    }
}

struct Runner {
    config: ClientConfig,
    publisher: CachePublisher,
    live: watch::Sender<Option<Live>>,
    monitor: Arc<Mutex<MonitorSpec>>,
    condition_changes: mpsc::UnboundedReceiver<oneshot::Sender<Result<()>>>,
    /// Callers of `set_conditions` waiting for the cache to reflect the
    /// latest conditions.
    waiting: Vec<oneshot::Sender<Result<()>>>,
    /// The monitor request whose rows the cache holds; `None` while a
    /// condition change is in flight (the cache may hold part of it).
    cache_spec: Option<Arc<MonitorSpec>>,
    resumes: Arc<AtomicU64>,
    skipped: Arc<AtomicU64>,
    sync_rows: Arc<AtomicU64>,
    resumed_at_start: Arc<std::sync::atomic::AtomicBool>,
    last_txn_id: Option<String>,
    since_supported: bool,
    /// The newest cluster index seen, across sessions.
    seen_index: server_db::SeenIndex,
    /// The cache file, if kept.
    state: Option<StateFile>,
    /// The cache file's rows, until the first sync: used only to resume
    /// from, never published before the server answered.
    seed: Option<LoadedCache>,
    /// The current session's schema document and cluster id, recorded
    /// with each resume point.
    schema_json: Arc<Value>,
    cluster_id: Option<String>,
}

impl Runner {
    async fn run(mut self) {
        if let Some(state) = &self.state {
            self.seed = state.load(self.latest_spec().key_projection()).await;
        }
        let (initial, max) = self.config.backoff;
        let mut backoff = Backoff::new(initial, max);
        let n = self.config.remotes.len().max(1);
        let mut next = 0usize;
        let mut failures_in_round = 0usize;
        loop {
            let Some(remote) = self.config.remotes.get(next % n).cloned() else {
                tracing::error!(db = %self.config.database, "no remotes configured");
                return;
            };
            next += 1;
            let synced = match self.session(&remote).await {
                Ok(never) => match never {},
                Err((synced_at, e)) => {
                    self.live.send_replace(None);
                    tracing::warn!(db = %self.config.database, %remote, error = %e, "OVSDB connection lost, reconnecting");
                    if let Some(at) = synced_at {
                        backoff.synced_session_ended(at.elapsed(), std::mem::discriminant(&e));
                    }
                    synced_at.is_some()
                }
            };
            if synced {
                failures_in_round = 0;
            } else {
                failures_in_round += 1;
            }
            // Try the other members at once; only a whole round of failures
            // (or a single remote) waits.
            if synced || failures_in_round >= n {
                failures_in_round = 0;
                tokio::time::sleep(backoff.next_delay()).await;
            }
        }
    }

    /// One session from connect to failure. Returns when it got as far as
    /// a synced cache, if it did, and why it ended.
    ///
    /// Long (about 120 lines) on purpose: connect, check the server, sync
    /// (`sync.rs`), then one `select!` loop whose arms share the session's locals (the
    /// conditions applied, the one in flight, the refused ones); split, each
    /// piece would take and hand back all of them.
    async fn session(
        &mut self,
        remote: &Remote,
    ) -> Result<std::convert::Infallible, (Option<Instant>, Error)> {
        let db = self.config.database.clone();
        let (session, mut notes) = Session::connect(
            remote,
            self.config.tls.as_ref(),
            self.config.session.clone(),
        )
        .await
        .map_err(|e| (None, e))?;
        let fail = |e| (None, e);
        let schema_json = Arc::new(session.get_schema_json(&db).await.map_err(fail)?);
        let schema = Arc::new(DatabaseSchema::from_json(&schema_json).map_err(|e| fail(e.into()))?);
        let mut server_rows = self.check_server(&session).await.map_err(fail)?;
        self.schema_json = schema_json;
        self.cluster_id = server_rows.as_ref().and_then(|rows| {
            let row = rows
                .table("Database")
                .values()
                .find(|r| r.str("name") == Some(db.as_str()))?;
            row.uuid("cid").map(|cid| cid.to_string())
        });

        let spec = self
            .monitor
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let monitor_id = json!(MONITOR_ID);
        let projection = spec.key_projection();
        let applied = self
            .monitor_and_sync(&session, remote, &schema, &spec, &monitor_id)
            .await
            .map_err(fail)?;
        self.seed = None;
        self.publish(applied);
        self.cache_spec = Some(Arc::new(spec.clone()));
        self.record_resume_point();
        // Live before resynced: whoever waits for the resync may transact.
        self.live.send_replace(Some(Live {
            session: session.clone(),
            schema: schema.clone(),
        }));
        self.publisher.resynced();
        tracing::info!(%db, %remote, "OVSDB cache synced");

        let synced_at = Some(Instant::now());
        let synced = |e| (synced_at, e);
        // The conditions the server applies on this session, and the
        // change in flight (what it asks for, and its reply).
        let mut applied = spec;
        let mut in_flight: Option<(MonitorSpec, CondChange)> = None;
        // Conditions the server refused on this session: not asked again.
        let mut refused: Option<MonitorSpec> = None;
        loop {
            if in_flight.is_none() {
                // Conditions changed by `set_conditions`, also while we
                // were connecting, go out one change at a time.
                let latest = self.latest_spec();
                if latest == applied {
                    for w in self.waiting.drain(..) {
                        let _ = w.send(Ok(()));
                    }
                } else if refused.as_ref() == Some(&latest) {
                    for w in self.waiting.drain(..) {
                        let _ = w.send(Err(Error::Protocol(format!(
                            "{db}: the server refused these monitor conditions"
                        ))));
                    }
                } else {
                    self.cache_spec = None;
                    let (session, schema, monitor_id) =
                        (session.clone(), schema.clone(), monitor_id.clone());
                    let sent = latest.clone();
                    let reply: CondChange = Box::pin(async move {
                        session
                            .monitor_cond_change(&monitor_id, &sent, &schema)
                            .await
                    });
                    in_flight = Some((latest, reply));
                }
            }
            tokio::select! {
                biased;
                note = notes.recv() => {
                    self.on_note(note, &session, &mut server_rows, &projection)
                        .map_err(synced)?;
                }
                r = async { in_flight.as_mut().map(|(_, reply)| reply).expect("guarded").await },
                    if in_flight.is_some() =>
                {
                    let (sent, _) = in_flight.take().expect("guarded");
                    if let Err(e) = r {
                        // Refused conditions: the waiters hear why, and the
                        // session goes on with the conditions it has (the
                        // server changed nothing). A session error ends it.
                        if matches!(e, Error::Rpc { .. }) {
                            tracing::warn!(%db, error = %e, "OVSDB server refused the new monitor conditions; keeping the previous ones");
                            self.cache_spec = Some(Arc::new(applied.clone()));
                            refused = Some(sent);
                            continue;
                        }
                        return Err(synced(e));
                    }
                    // ovsdb-server sends the update a condition change
                    // causes before its reply, and the session queues
                    // notifications in arrival order: it is queued already.
                    while let Ok(note) = notes.try_recv() {
                        self.on_note(Some(note), &session, &mut server_rows, &projection)
                            .map_err(synced)?;
                    }
                    self.cache_spec = Some(Arc::new(sent.clone()));
                    self.record_resume_point();
                    applied = sent;
                }
                Some(waiter) = self.condition_changes.recv() => self.waiting.push(waiter),
            }
        }
    }

    /// The monitor request `set_conditions` last asked for.
    fn latest_spec(&self) -> MonitorSpec {
        self.monitor
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Applies one notification of the session: an update of our monitor
    /// to the cache, of the `_Server` monitor to the server check. Errors
    /// end the session.
    fn on_note(
        &mut self,
        note: Option<Notification>,
        session: &Session,
        server_rows: &mut Option<DbSnapshot>,
        projection: &obgp_ovsdb_data::wire::KeyProjection,
    ) -> Result<()> {
        let note = match note {
            Some(note @ (Notification::Call { .. } | Notification::Update(_))) => note,
            Some(Notification::Closed(e)) => return Err(e),
            None => return Err(Error::SessionClosed),
        };
        let Some(update) = note.into_update(projection)? else {
            return Ok(());
        };
        if update.monitor_id == json!(SERVER_MONITOR_ID) {
            if let Some(current) = server_rows.take() {
                let (next, _) = current.apply(update.updates)?;
                self.check_server_db(session, &next)?;
                *server_rows = Some(next);
            }
            return Ok(());
        }
        if update.monitor_id != json!(MONITOR_ID) {
            return Ok(());
        }
        let applied = self
            .publisher
            .current()
            .apply_skipping_bad_rows(update.updates)?;
        self.publish(applied);
        if let Some(id) = update.last_txn_id {
            self.last_txn_id = Some(id);
        }
        self.record_resume_point();
        Ok(())
    }

    /// Publishes an applied batch; logs the rows it left out (the first
    /// few by name, so a server sending thousands of bad rows cannot flood
    /// the log) and counts them.
    fn publish(&self, applied: AppliedUpdate) {
        let db = &self.config.database;
        let n = applied.skipped.len();
        for fault in applied.skipped.iter().take(LOGGED_FAULTS) {
            let uuid = fault.uuid.map(|u| u.to_string());
            tracing::warn!(%db, table = %fault.table, uuid = uuid.as_deref().unwrap_or("-"), reason = %fault.reason, "OVSDB row skipped: malformed or not fitting the schema; the rest of the database syncs");
        }
        if n > LOGGED_FAULTS {
            tracing::warn!(%db, skipped = n, "OVSDB rows skipped in one batch; only the first {LOGGED_FAULTS} are named");
        }
        self.skipped.fetch_add(n as u64, Ordering::Relaxed);
        self.publisher.publish(applied.snapshot, applied.changes);
    }
}
