//! One JSON-RPC connection to an OVSDB server, driven by a background task.
//!
//! The task owns the socket. It matches responses to requests by id, answers
//! the server's `echo` itself, forwards notifications (`update2`, `update3`,
//! ...) in arrival order, and runs the inactivity probe: after
//! `probe_interval` without a single byte from the server it sends an
//! `echo`; after another interval of silence it drops the connection. Any
//! received byte counts as activity, so a large reply that takes seconds to
//! arrive is not mistaken for a dead peer.
//!
//! Frames are handed on as raw bytes: the receiver decodes them into the
//! type it expects in one pass (see [`obgp_ovsdb_data::wire`]). The
//! exceptions are the large messages: the reply to
//! [`Session::call_streamed`] (a monitor's initial contents, tens of
//! megabytes) and `update2`/`update3` notifications (one transaction
//! touching many rows). Once one outgrows [`SessionConfig::stream_above`]
//! its bytes go, as they arrive, to a blocking thread that decodes it row by
//! row ([`obgp_ovsdb_data::wire::decode_streamed_message`], see
//! `session/streaming.rs`), so it is never held whole beside the rows
//! decoded from it.
//!
//! What a server can make the session hold is bounded whatever it sends
//! ([`SessionConfig`]): a message held whole by `max_message`, a streamed
//! one by `max_streamed` and its decoded rows by `max_decoded`, any string
//! by `max_string`, nesting by
//! `max_depth`, and a message that does not complete by
//! `message_deadline`. Crossing any of them ends the session with an error
//! naming the limit. The decoding of responses and notifications is in
//! [`super::reply`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::codec::Decoder;

use crate::error::{Error, Result};
use crate::framing::{
    FrameLimits, JsonFramer, DEFAULT_MAX_DEPTH, DEFAULT_MAX_MESSAGE, DEFAULT_MAX_STREAMED,
    DEFAULT_MAX_STRING,
};
use crate::rpc::reply::{Decoded, MonitorReply, Response};
use crate::rpc::transport::{Remote, Stream};
use crate::tls::TlsSettings;
use obgp_ovsdb_data::json_scan::ScanLimits;
use obgp_ovsdb_data::schema::DatabaseSchema;
use obgp_ovsdb_data::wire::{
    decode_streamed_message, KeyProjection, MonitorResultSeed, StreamOptions, StreamedReply,
    TableUpdates,
};

/// Session tuning.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// Largest message held whole before it is decoded (16 MiB by default):
    /// every message but the streamed ones (a schema, transaction replies,
    /// small updates). It also bounds one row of a streamed message, which
    /// is decoded from its whole bytes.
    pub max_message: usize,
    /// Largest message decoded while it arrives (a monitor reply, an
    /// `update2`/`update3`; 256 MiB by default, twice a 100k-port NB dump).
    pub max_streamed: usize,
    /// Most bytes the decoded rows of one streamed message may take
    /// (estimated per row, [`obgp_ovsdb_data::wire::row_estimate`];
    /// 160 MiB by default). The wire size does not bound them: a hostile
    /// server's rows can decode to ten times their bytes. The rows of a
    /// 100k-port NB dump estimate at 129 MiB (docs/reliability.md).
    pub max_decoded: usize,
    /// Longest string atom or member name (1 MiB by default: no OVN or OVS
    /// string is legitimately near it, see
    /// [`DEFAULT_MAX_STRING`]).
    pub max_string: usize,
    /// Deepest nesting of arrays and objects (64 by default; OVSDB needs
    /// about 8).
    pub max_depth: u32,
    /// Longest a message may take from its first byte to its last (60 s by
    /// default; `None`: no limit). A server trickling a message byte by
    /// byte keeps the inactivity probe quiet, so this is what drops it. A
    /// 100k-port dump crosses a unix socket in ~0.1 s once the server
    /// starts sending it (docs/ovsdb.md).
    pub message_deadline: Option<Duration>,
    /// Idle time before we probe the server with `echo`; `None` disables the
    /// probe (the server still probes us and we answer). The default, 60 s,
    /// is Neutron's `ovsdb_probe_interval`: ovsdb-server is single-threaded
    /// and sends nothing while it builds a large reply or commits a large
    /// transaction (seconds for a large NB dump; docs/ovsdb.md), so
    /// OVS's 5 s would drop exactly the sessions that matter at scale.
    pub probe_interval: Option<Duration>,
    /// A reply to [`Session::call_streamed`] longer than this is decoded
    /// while it arrives, in a blocking thread fed chunk by chunk, instead
    /// of being buffered whole first: the memory peak of an initial dump
    /// drops by the message's size. `None` always buffers.
    pub stream_above: Option<usize>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            max_message: DEFAULT_MAX_MESSAGE,
            max_streamed: DEFAULT_MAX_STREAMED,
            max_decoded: DEFAULT_MAX_DECODED,
            max_string: DEFAULT_MAX_STRING,
            max_depth: DEFAULT_MAX_DEPTH,
            message_deadline: Some(Duration::from_secs(60)),
            probe_interval: Some(Duration::from_secs(60)),
            stream_above: Some(STREAM_ABOVE),
        }
    }
}

impl SessionConfig {
    /// The framer's limits. Its size limit is `max_streamed` for every
    /// message: whether one is held whole is decided once its first bytes
    /// are in, so the session checks `max_message` itself
    /// ([`Task::check_held_whole`]).
    fn frame_limits(&self) -> FrameLimits {
        FrameLimits {
            max_message: self.max_streamed,
            max_streamed: self.max_streamed,
            scan: ScanLimits {
                max_string: self.max_string,
                max_depth: self.max_depth,
            },
        }
    }
}

/// Default of [`SessionConfig::max_decoded`].
pub const DEFAULT_MAX_DECODED: usize = 160 << 20;

/// Default of [`SessionConfig::stream_above`].
pub const STREAM_ABOVE: usize = 1 << 20;

/// A decoded update notification (here, with the [`Notification`] that
/// carries one decoded as it arrived; the monitor module decodes the rest).
#[derive(Debug)]
pub struct Update {
    /// The monitor the update belongs to.
    pub monitor_id: Value,
    /// Only for `update3`.
    pub last_txn_id: Option<String>,
    /// The row updates.
    pub updates: TableUpdates,
}

/// A message the server sent without being asked.
#[derive(Debug)]
pub enum Notification {
    /// A method call without id (`update2`, `update3`, `locked`, ...); `frame`
    /// is the whole message.
    Call {
        /// The method name.
        method: String,
        /// The whole message.
        frame: Bytes,
    },
    /// An `update2` or `update3` larger than
    /// [`SessionConfig::stream_above`], decoded while it arrived (with the
    /// key projection of its monitor).
    Update(Box<Update>),
    /// The session ended; nothing follows.
    Closed(Error),
}

/// Decodes a whole message from its chunks, holding no value longer than
/// the given bound whole (run in a blocking thread while the message
/// arrives).
type StreamDecoder =
    Box<dyn FnOnce(mpsc::Receiver<Bytes>, StreamBounds) -> Result<StreamedReply> + Send>;

/// What a streamed message's decoder may hold: one value whole
/// (`max_message`) and its decoded rows (`max_decoded`).
#[derive(Clone, Copy, Debug)]
struct StreamBounds {
    max_value: usize,
    max_decoded: usize,
}

/// The key projections of the monitors started on a session, by monitor
/// id: a large update notification is decoded with its monitor's.
type Monitors = Arc<std::sync::Mutex<Vec<(Value, KeyProjection)>>>;

/// A message being decoded while it arrives.
struct Streaming {
    /// The request it answers; `None` for a notification.
    id: Option<u64>,
    chunks: mpsc::Sender<Bytes>,
    decoder: tokio::task::JoinHandle<Result<StreamedReply>>,
    bytes: usize,
}

struct Request {
    method: &'static str,
    params: Value,
    reply: oneshot::Sender<Result<Response>>,
    stream: Option<StreamDecoder>,
}

/// A handle to a live session; cheap to clone. The connection closes when
/// every handle is dropped or the server goes away.
#[derive(Clone, Debug)]
pub struct Session {
    requests: mpsc::Sender<Request>,
    remote: String,
    streamed: Arc<AtomicU64>,
    monitors: Monitors,
}

/// The envelope of any incoming message: enough to route it.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    id: Value,
    #[serde(default)]
    method: Option<String>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(default)]
    error: Value,
}

const PROBE_ID: &str = "obgp-inactivity-probe";

/// A response id as our numeric request ids (`u64::MAX` for anything else).
fn n_id(id: &Value) -> u64 {
    id.as_u64().unwrap_or(u64::MAX)
}

/// A frame larger than this gets the read buffer replaced after it, so its
/// memory goes back once the frame is decoded.
const RELEASE_ABOVE: usize = 1 << 20;

impl Session {
    /// Connects to `remote` and starts the session task. Notifications, and
    /// finally [`Notification::Closed`], arrive on the returned receiver.
    pub async fn connect(
        remote: &Remote,
        tls: Option<&TlsSettings>,
        config: SessionConfig,
    ) -> Result<(Session, mpsc::Receiver<Notification>)> {
        let stream = remote.connect(tls).await?;
        Ok(Session::start(stream, remote.to_string(), config))
    }

    /// Runs a session over an already connected stream (tests use this with
    /// an in-memory pipe).
    pub fn start(
        stream: Box<dyn Stream>,
        remote: String,
        config: SessionConfig,
    ) -> (Session, mpsc::Receiver<Notification>) {
        let (req_tx, req_rx) = mpsc::channel(64);
        let (note_tx, note_rx) = mpsc::channel(1024);
        let streamed = Arc::new(AtomicU64::new(0));
        let monitors = Monitors::default();
        let task = Task {
            monitors: monitors.clone(),
            streamed: streamed.clone(),
            remote: remote.clone(),
            config,
            requests: req_rx,
            notifications: note_tx,
            pending: HashMap::new(),
            streamable: std::collections::BTreeMap::new(),
            next_id: 1,
        };
        tokio::spawn(task.run(stream));
        (
            Session {
                requests: req_tx,
                remote,
                streamed,
                monitors,
            },
            note_rx,
        )
    }

    /// The remote this session talks to.
    pub fn remote(&self) -> &str {
        &self.remote
    }

    /// How many messages (replies and update notifications) were decoded
    /// while they arrived (see [`Session::call_streamed`]).
    pub fn streamed_replies(&self) -> u64 {
        self.streamed.load(Ordering::Relaxed)
    }

    /// Records that monitor `id` decodes its rows with `projection`, for
    /// its large updates; call it before the monitor request.
    pub(crate) fn register_monitor(&self, id: &Value, projection: &KeyProjection) {
        let mut monitors = self.monitors.lock().unwrap_or_else(|p| p.into_inner());
        monitors.retain(|(m, _)| m != id);
        monitors.push((id.clone(), projection.clone()));
    }

    /// Whether the session task has ended.
    pub fn is_closed(&self) -> bool {
        self.requests.is_closed()
    }

    /// Sends a request and waits for its response.
    pub async fn call(&self, method: &'static str, params: Value) -> Result<Response> {
        self.send(method, params, None).await
    }

    async fn send(
        &self,
        method: &'static str,
        params: Value,
        stream: Option<StreamDecoder>,
    ) -> Result<Response> {
        let (tx, rx) = oneshot::channel();
        self.requests
            .send(Request {
                method,
                params,
                reply: tx,
                stream,
            })
            .await
            .map_err(|_| Error::SessionClosed)?;
        rx.await.map_err(|_| Error::SessionClosed)?
    }

    /// Sends a request whose reply may be large (a monitor's initial
    /// contents) and decodes its `result` as `T`, with `projection`'s map
    /// keys. A reply over [`SessionConfig::stream_above`] is decoded while
    /// it arrives, so it is never held whole; a smaller one is decoded from
    /// its frame. Either way the result is the same.
    ///
    /// A large message is told from its first member: a notification is
    /// decoded as an update, a reply whose `id` comes first goes to that
    /// request, and one whose `result` or `error` comes first is taken for
    /// the reply of the first such call pending; one that turns out to be
    /// another message ends the session with a protocol error. The
    /// session's own users keep it the only request in flight that can get
    /// a large reply.
    pub async fn call_streamed<T: MonitorReply>(
        &self,
        method: &'static str,
        params: Value,
        projection: &KeyProjection,
    ) -> Result<T> {
        let in_thread = projection.clone();
        let decode: StreamDecoder = Box::new(move |mut chunks, bounds: StreamBounds| {
            let options = StreamOptions {
                reply: &in_thread,
                monitors: &[],
                max_value: bounds.max_value,
                max_decoded: bounds.max_decoded,
            };
            decode_streamed_message(&options, || chunks.blocking_recv())
                .map_err(|e| Error::Protocol(format!("unexpected result: {e}")))
        });
        let response = self.send(method, params, Some(decode)).await?;
        let result = match response.streamed {
            None => response.result_with(MonitorResultSeed(projection))?,
            Some((_, Decoded(result))) => result,
        };
        T::from_monitor(result)
            .ok_or_else(|| Error::Protocol(format!("{method} result of an unexpected shape")))
    }

    /// `list_dbs`: the databases the server holds.
    pub async fn list_dbs(&self) -> Result<Vec<String>> {
        self.call("list_dbs", json!([])).await?.result()
    }

    /// `get_schema`, parsed.
    pub async fn get_schema(&self, db: &str) -> Result<DatabaseSchema> {
        let v = self.get_schema_json(db).await?;
        Ok(DatabaseSchema::from_json(&v)?)
    }

    /// `get_schema`, the document as the server sent it (what a cache file
    /// stores and identifies the schema by).
    pub async fn get_schema_json(&self, db: &str) -> Result<Value> {
        self.call("get_schema", json!([db])).await?.result()
    }

    /// `transact`: runs `ops` atomically. A failed operation (an `error`
    /// member in its result) is an [`Error::Transaction`] naming its index.
    pub async fn transact(&self, db: &str, ops: Vec<Value>) -> Result<Vec<Value>> {
        let n_ops = ops.len();
        let mut params = Vec::with_capacity(n_ops + 1);
        params.push(Value::from(db));
        params.extend(ops);
        let results: Vec<Value> = self
            .call("transact", Value::Array(params))
            .await?
            .result()?;
        if let Some((index, r)) = results
            .iter()
            .enumerate()
            .find(|(_, r)| r.get("error").is_some_and(|e| !e.is_null()))
        {
            return Err(Error::Transaction {
                index,
                error: r.clone(),
            });
        }
        if results.len() < n_ops {
            return Err(Error::Protocol(format!(
                "transact returned {} results for {n_ops} operations",
                results.len()
            )));
        }
        Ok(results)
    }

    /// `echo`: round trip to the server.
    pub async fn echo(&self) -> Result<()> {
        self.call("echo", json!(["obgp"])).await.map(|_| ())
    }
}

struct Task {
    monitors: Monitors,
    streamed: Arc<AtomicU64>,
    remote: String,
    config: SessionConfig,
    requests: mpsc::Receiver<Request>,
    notifications: mpsc::Sender<Notification>,
    pending: HashMap<u64, (&'static str, oneshot::Sender<Result<Response>>)>,
    /// Decoders of pending requests that asked for a streamed reply.
    streamable: std::collections::BTreeMap<u64, StreamDecoder>,
    next_id: u64,
}

impl Task {
    async fn run(mut self, stream: Box<dyn Stream>) {
        let (reader, writer) = tokio::io::split(stream);
        let (out_tx, out_rx) = mpsc::unbounded_channel::<Bytes>();
        let mut writer_task = tokio::spawn(write_loop(writer, out_rx));
        let err = self.serve(reader, &out_tx, &mut writer_task).await;
        writer_task.abort();
        tracing::debug!(remote = %self.remote, error = %err, "OVSDB session closed");
        let reason = err.to_string();
        for (_, (_, reply)) in self.pending.drain() {
            let _ = reply.send(Err(Error::Disconnected(reason.clone())));
        }
        let _ = self.notifications.send(Notification::Closed(err)).await;
    }

    /// Reads and dispatches frames until the session fails, and says why.
    /// Long (about 140 lines) on purpose: one `select!` loop over the
    /// socket, the writer and the requests, whose arms share the framer,
    /// the read buffer and the streamed reply in progress.
    async fn serve(
        &mut self,
        mut reader: tokio::io::ReadHalf<Box<dyn Stream>>,
        out: &mpsc::UnboundedSender<Bytes>,
        writer_task: &mut tokio::task::JoinHandle<std::io::Result<()>>,
    ) -> Error {
        let mut framer = JsonFramer::with_limits(self.config.frame_limits());
        let mut buf = BytesMut::with_capacity(64 * 1024);
        let mut streaming: Option<Streaming> = None;
        let far = Duration::from_secs(86400 * 365);
        let interval = self.config.probe_interval;
        let mut deadline = Instant::now() + interval.unwrap_or(far);
        let mut probing = false;
        // When the first byte of the message in progress arrived.
        let message_budget = self.config.message_deadline;
        let mut message_since: Option<Instant> = None;
        loop {
            tokio::select! {
                read = reader.read_buf(&mut buf) => {
                    let n = match read {
                        Ok(n) => n,
                        Err(source) => return Error::Io { remote: self.remote.clone(), source },
                    };
                    if std::mem::take(&mut probing) {
                        tracing::info!(remote = %self.remote, "the server answered again after the inactivity probe");
                    }
                    deadline = Instant::now() + interval.unwrap_or(far);
                    loop {
                        let frame = if n == 0 { framer.decode_eof(&mut buf) } else { framer.decode(&mut buf) };
                        match frame {
                            Ok(None) if n > 0 => {
                                if streaming.is_none() {
                                    streaming = self.start_streaming(&buf, framer.pending_len());
                                    if streaming.is_none() {
                                        if let Err(e) = self.check_held_whole(&buf, framer.pending_len()) {
                                            return e;
                                        }
                                    }
                                }
                                if let Some(mut s) = streaming.take() {
                                    let part = framer.take_scanned(&mut buf);
                                    s.bytes += part.len();
                                    if !part.is_empty() && s.chunks.send(part.freeze()).await.is_err() {
                                        // The decoder stopped early: a bad message.
                                        return self.failed_streaming(s).await;
                                    }
                                    streaming = Some(s);
                                }
                                break;
                            }
                            Ok(Some(frame)) if streaming.is_some() => {
                                message_since = None;
                                if let Some(s) = streaming.take() {
                                    tracing::debug!(remote = %self.remote, id = s.id, "streamed reply complete");
                                    if let Err(e) = self.finish_streaming(s, frame.freeze()).await {
                                        return e;
                                    }
                                }
                            }
                            Ok(Some(frame)) => {
                                message_since = None;
                                if let Err(e) = self.check_held_whole(&frame, frame.len()) {
                                    return e;
                                }
                                let large = frame.len() > RELEASE_ABOVE;
                                if let Err(e) = self.dispatch(frame.freeze(), out).await {
                                    return e;
                                }
                                if large {
                                    // The frame was split off `buf` and
                                    // shares its allocation: keep reusing
                                    // `buf` and a large monitor reply stays
                                    // allocated for the session's lifetime.
                                    // Copy the few bytes that follow it into
                                    // a small buffer instead.
                                    let rest = buf.split();
                                    buf = BytesMut::with_capacity((64 * 1024).max(rest.len()));
                                    buf.extend_from_slice(&rest);
                                }
                            }
                            Ok(None) if n == 0 => return Error::Closed,
                            Ok(None) => break,
                            Err(e) => return e.into(),
                        }
                    }
                    if framer.pending_len() > 0 && message_since.is_none() {
                        message_since = Some(Instant::now());
                    }
                    if buf.capacity() - buf.len() < 4096 {
                        buf.reserve(64 * 1024);
                    }
                }
                _ = tokio::time::sleep_until(message_since.unwrap_or_else(Instant::now) + message_budget.unwrap_or(far)),
                    if message_since.is_some() && message_budget.is_some() =>
                {
                    return Error::MessageDeadline {
                        deadline: message_budget.unwrap_or(far),
                        pending: framer.pending_len(),
                    };
                }
                req = self.requests.recv() => {
                    let Some(req) = req else { return Error::SessionClosed };
                    let id = self.next_id;
                    self.next_id += 1;
                    let msg = json!({"method": req.method, "params": req.params, "id": id});
                    self.pending.insert(id, (req.method, req.reply));
                    if let Some(decoder) = req.stream {
                        self.streamable.insert(id, decoder);
                    }
                    let _ = out.send(Bytes::from(msg.to_string()));
                }
                _ = tokio::time::sleep_until(deadline), if interval.is_some() => {
                    let interval = interval.unwrap_or(far);
                    if probing {
                        return Error::Inactive(interval * 2);
                    }
                    probing = true;
                    // A hang shorter than the two intervals that drop the
                    // session must still be visible in the log.
                    tracing::warn!(
                        remote = %self.remote,
                        silent_s = interval.as_secs_f64(),
                        "no byte from the server: probing with echo (the session is dropped after another interval of silence)"
                    );
                    deadline = Instant::now() + interval;
                    let msg = json!({"method": "echo", "params": [], "id": PROBE_ID});
                    let _ = out.send(Bytes::from(msg.to_string()));
                }
                done = &mut *writer_task => {
                    let source = match done {
                        Ok(Err(e)) => e,
                        _ => std::io::Error::other("writer stopped"),
                    };
                    return Error::Io { remote: self.remote.clone(), source };
                }
            }
        }
    }

    /// Routes one complete message.
    async fn dispatch(&mut self, frame: Bytes, out: &mpsc::UnboundedSender<Bytes>) -> Result<()> {
        let env: Envelope = serde_json::from_slice(&frame).map_err(|e| {
            let shown = String::from_utf8_lossy(&frame[..frame.len().min(200)]).into_owned();
            Error::Protocol(format!("{e} in message {shown}"))
        })?;
        match (env.method, &env.id) {
            (Some(m), id) if m == "echo" && !id.is_null() => {
                let params = env.params.map_or(json!([]), |p| {
                    serde_json::from_str(p.get()).unwrap_or(json!([]))
                });
                let reply = json!({"id": id, "result": params, "error": null});
                let _ = out.send(Bytes::from(reply.to_string()));
            }
            (Some(method), Value::Null) => {
                if self
                    .notifications
                    .send(Notification::Call { method, frame })
                    .await
                    .is_err()
                {
                    // Nobody listens any more: the owner is gone.
                    return Err(Error::SessionClosed);
                }
            }
            (Some(method), id) => {
                tracing::debug!(remote = %self.remote, %method, "unsupported request from server");
                let reply =
                    json!({"id": id, "result": null, "error": format!("unknown method {method}")});
                let _ = out.send(Bytes::from(reply.to_string()));
            }
            (None, Value::String(s)) if s == PROBE_ID => {}
            (None, id) => {
                let Some((method, reply)) = id.as_u64().and_then(|n| self.pending.remove(&n))
                else {
                    return Err(Error::Protocol(format!("response with unknown id {id}")));
                };
                self.streamable.remove(&n_id(id));
                let result = if env.error.is_null() {
                    Ok(Response {
                        frame,
                        streamed: None,
                    })
                } else {
                    Err(Error::Rpc {
                        method: method.to_string(),
                        error: env.error,
                    })
                };
                let _ = reply.send(result);
            }
        }
        Ok(())
    }
}

async fn write_loop(
    mut writer: tokio::io::WriteHalf<Box<dyn Stream>>,
    mut out: mpsc::UnboundedReceiver<Bytes>,
) -> std::io::Result<()> {
    while let Some(msg) = out.recv().await {
        writer.write_all(&msg).await?;
        // Coalesce whatever else is queued before flushing.
        while let Ok(more) = out.try_recv() {
            writer.write_all(&more).await?;
        }
        writer.flush().await?;
    }
    Ok(())
}

mod streaming;
#[cfg(test)]
mod tests;
