//! One JSON-RPC connection to an OVSDB server, driven by a background task.
//!
//! The task owns the socket. It matches responses to requests by id, answers
//! the server's `echo` itself, forwards notifications (`update2`, `update3`,
//! ...) in arrival order, and runs the inactivity probe: after
//! `probe_interval` without a single byte from the server it sends an
//! `echo`; after another interval of silence it drops the connection. Any
//! received byte counts as activity, so a 60 MB reply that takes seconds to
//! arrive is not mistaken for a dead peer.
//!
//! Frames are handed on as raw bytes: the receiver decodes them into the
//! type it expects in one pass (see [`crate::wire`]).

use std::collections::HashMap;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::codec::Decoder;

use crate::error::{Error, Result};
use crate::framing::{JsonFramer, DEFAULT_MAX_MESSAGE};
use crate::rpc::transport::{Remote, Stream};
use crate::schema::DatabaseSchema;
use crate::tls::TlsSettings;

/// Session tuning.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// Largest message accepted from the server.
    pub max_message: usize,
    /// Idle time before we probe the server with `echo`; `None` disables the
    /// probe (the server still probes us and we answer). The default, 60 s,
    /// is Neutron's `ovsdb_probe_interval`: ovsdb-server is single-threaded
    /// and sends nothing while it builds a large reply or commits a large
    /// transaction (over 10 s for a 100k-port NB dump on a busy host), so
    /// OVS's 5 s would drop exactly the sessions that matter at scale.
    pub probe_interval: Option<Duration>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            max_message: DEFAULT_MAX_MESSAGE,
            probe_interval: Some(Duration::from_secs(60)),
        }
    }
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
    /// The session ended; nothing follows.
    Closed(Error),
}

/// The raw bytes of a successful response.
#[derive(Debug)]
pub struct Response {
    frame: Bytes,
}

/// A response's `result` member, decoded in the same pass that walks the
/// message (the other members are skipped).
#[derive(Deserialize)]
struct ResultOf<T> {
    result: T,
}

#[derive(Deserialize)]
struct ParamsOnly<'a> {
    #[serde(borrow)]
    params: &'a RawValue,
}

impl Response {
    /// Size of the whole response message in bytes.
    pub fn len(&self) -> usize {
        self.frame.len()
    }

    /// Whether the message is empty (never, for a parsed response).
    pub fn is_empty(&self) -> bool {
        self.frame.is_empty()
    }

    /// Decodes the `result` member as `T`.
    pub fn result<T: DeserializeOwned>(&self) -> Result<T> {
        // One pass over the message: a 50 MB monitor reply is not first
        // scanned for the bounds of `result` and then decoded.
        serde_json::from_slice::<ResultOf<T>>(&self.frame)
            .map(|r| r.result)
            .map_err(|e| Error::Protocol(format!("unexpected result: {e}")))
    }
}

/// Decodes the `params` member of a notification frame as `T`.
pub fn notification_params<T: DeserializeOwned>(frame: &[u8]) -> Result<T> {
    let p: ParamsOnly = serde_json::from_slice(frame)
        .map_err(|e| Error::Protocol(format!("notification without params: {e}")))?;
    serde_json::from_str(p.params.get())
        .map_err(|e| Error::Protocol(format!("notification params: {e}")))
}

struct Request {
    method: &'static str,
    params: Value,
    reply: oneshot::Sender<Result<Response>>,
}

/// A handle to a live session; cheap to clone. The connection closes when
/// every handle is dropped or the server goes away.
#[derive(Clone, Debug)]
pub struct Session {
    requests: mpsc::Sender<Request>,
    remote: String,
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
        let task = Task {
            remote: remote.clone(),
            config,
            requests: req_rx,
            notifications: note_tx,
            pending: HashMap::new(),
            next_id: 1,
        };
        tokio::spawn(task.run(stream));
        (
            Session {
                requests: req_tx,
                remote,
            },
            note_rx,
        )
    }

    /// The remote this session talks to.
    pub fn remote(&self) -> &str {
        &self.remote
    }

    /// Whether the session task has ended.
    pub fn is_closed(&self) -> bool {
        self.requests.is_closed()
    }

    /// Sends a request and waits for its response.
    pub async fn call(&self, method: &'static str, params: Value) -> Result<Response> {
        let (tx, rx) = oneshot::channel();
        self.requests
            .send(Request {
                method,
                params,
                reply: tx,
            })
            .await
            .map_err(|_| Error::SessionClosed)?;
        rx.await.map_err(|_| Error::SessionClosed)?
    }

    /// `list_dbs`: the databases the server holds.
    pub async fn list_dbs(&self) -> Result<Vec<String>> {
        self.call("list_dbs", json!([])).await?.result()
    }

    /// `get_schema`, parsed.
    pub async fn get_schema(&self, db: &str) -> Result<DatabaseSchema> {
        let v: Value = self.call("get_schema", json!([db])).await?.result()?;
        DatabaseSchema::from_json(&v)
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
    remote: String,
    config: SessionConfig,
    requests: mpsc::Receiver<Request>,
    notifications: mpsc::Sender<Notification>,
    pending: HashMap<u64, (&'static str, oneshot::Sender<Result<Response>>)>,
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

    async fn serve(
        &mut self,
        mut reader: tokio::io::ReadHalf<Box<dyn Stream>>,
        out: &mpsc::UnboundedSender<Bytes>,
        writer_task: &mut tokio::task::JoinHandle<std::io::Result<()>>,
    ) -> Error {
        let mut framer = JsonFramer::new(self.config.max_message);
        let mut buf = BytesMut::with_capacity(64 * 1024);
        let far = Duration::from_secs(86400 * 365);
        let interval = self.config.probe_interval;
        let mut deadline = Instant::now() + interval.unwrap_or(far);
        let mut probing = false;
        loop {
            tokio::select! {
                read = reader.read_buf(&mut buf) => {
                    let n = match read {
                        Ok(n) => n,
                        Err(source) => return Error::Io { remote: self.remote.clone(), source },
                    };
                    probing = false;
                    deadline = Instant::now() + interval.unwrap_or(far);
                    loop {
                        let frame = if n == 0 { framer.decode_eof(&mut buf) } else { framer.decode(&mut buf) };
                        match frame {
                            Ok(Some(frame)) => {
                                let large = frame.len() > RELEASE_ABOVE;
                                if let Err(e) = self.dispatch(frame.freeze(), out).await {
                                    return e;
                                }
                                if large {
                                    // The frame was split off `buf` and
                                    // shares its allocation: keep reusing
                                    // `buf` and a 50 MB monitor reply stays
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
                    if buf.capacity() - buf.len() < 4096 {
                        buf.reserve(64 * 1024);
                    }
                }
                req = self.requests.recv() => {
                    let Some(req) = req else { return Error::SessionClosed };
                    let id = self.next_id;
                    self.next_id += 1;
                    let msg = json!({"method": req.method, "params": req.params, "id": id});
                    self.pending.insert(id, (req.method, req.reply));
                    let _ = out.send(Bytes::from(msg.to_string()));
                }
                _ = tokio::time::sleep_until(deadline), if interval.is_some() => {
                    let interval = interval.unwrap_or(far);
                    if probing {
                        return Error::Inactive(interval * 2);
                    }
                    probing = true;
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
                let result = if env.error.is_null() {
                    Ok(Response { frame })
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{duplex, AsyncBufReadExt, BufReader};

    /// A fake server on the other end of an in-memory pipe.
    fn pair(
        config: SessionConfig,
    ) -> (
        Session,
        mpsc::Receiver<Notification>,
        tokio::io::DuplexStream,
    ) {
        let (client, server) = duplex(1 << 20);
        let (s, n) = Session::start(Box::new(client), "test".into(), config);
        (s, n, server)
    }

    #[tokio::test]
    async fn responses_are_matched_to_requests_by_id() {
        let (session, _notes, server) = pair(SessionConfig::default());
        let (rd, mut wr) = tokio::io::split(server);
        let server = tokio::spawn(async move {
            let mut lines = BufReader::new(rd);
            let mut got = Vec::new();
            // Our framing does not need newlines, but reading until '}' is
            // enough here: requests have no nested braces in strings.
            for _ in 0..2 {
                let mut req = Vec::new();
                lines.read_until(b'}', &mut req).await.unwrap();
                let v: Value = serde_json::from_slice(&req).unwrap();
                got.push(v);
            }
            // Answer out of order, the second one first, glued together.
            let a = json!({"id": got[1]["id"], "result": ["second"], "error": null});
            let b = json!({"id": got[0]["id"], "result": ["first"], "error": null});
            wr.write_all(format!("{a}{b}").as_bytes()).await.unwrap();
            wr
        });
        let (r1, r2) = tokio::join!(session.list_dbs(), async {
            tokio::task::yield_now().await;
            session.list_dbs().await
        });
        assert_eq!(r1.unwrap(), ["first"]);
        assert_eq!(r2.unwrap(), ["second"]);
        drop(server.await.unwrap());
    }

    #[tokio::test]
    async fn server_echo_is_answered_and_notifications_forwarded() {
        let (_session, mut notes, mut server) = pair(SessionConfig::default());
        server
            .write_all(br#"{"method":"echo","params":["x"],"id":"e1"}{"method":"update2","params":[null,{}],"id":null}"#)
            .await
            .unwrap();
        let mut buf = vec![0u8; 256];
        let n = server.read(&mut buf).await.unwrap();
        let reply: Value = serde_json::from_slice(&buf[..n]).unwrap();
        assert_eq!(reply, json!({"id": "e1", "result": ["x"], "error": null}));
        match notes.recv().await.unwrap() {
            Notification::Call { method, .. } => assert_eq!(method, "update2"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test]
    async fn garbage_closes_the_session_with_an_error() {
        let (session, mut notes, mut server) = pair(SessionConfig::default());
        server.write_all(b"{\"id\": nonsense}").await.unwrap();
        match notes.recv().await.unwrap() {
            Notification::Closed(Error::Protocol(msg)) => {
                assert!(msg.contains("nonsense"), "{msg}")
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            session.list_dbs().await,
            Err(Error::SessionClosed)
        ));
    }

    #[tokio::test]
    async fn rpc_errors_name_the_method() {
        let (session, _notes, mut server) = pair(SessionConfig::default());
        let call = tokio::spawn(async move { session.get_schema("Nope").await });
        let mut buf = vec![0u8; 256];
        let n = server.read(&mut buf).await.unwrap();
        let req: Value = serde_json::from_slice(&buf[..n]).unwrap();
        let reply = json!({"id": req["id"], "result": null, "error": "unknown database"});
        server
            .write_all(reply.to_string().as_bytes())
            .await
            .unwrap();
        let err = call.await.unwrap().unwrap_err().to_string();
        assert!(
            err.contains("get_schema") && err.contains("unknown database"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn tcp_ipv6_remote_connects_and_talks() {
        // Skip quietly only if this host has no IPv6 loopback at all.
        let Ok(listener) = tokio::net::TcpListener::bind("[::1]:0").await else {
            eprintln!("no IPv6 loopback on this host");
            return;
        };
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 256];
            let n = sock.read(&mut buf).await.unwrap();
            let req: Value = serde_json::from_slice(&buf[..n]).unwrap();
            let reply = json!({"id": req["id"], "result": ["OVN_Northbound"], "error": null});
            sock.write_all(reply.to_string().as_bytes()).await.unwrap();
            sock
        });
        let remote: Remote = format!("tcp:[::1]:{port}").parse().unwrap();
        let (session, _notes) = Session::connect(&remote, None, SessionConfig::default())
            .await
            .unwrap();
        assert_eq!(session.list_dbs().await.unwrap(), ["OVN_Northbound"]);
        drop(server.await.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn silent_server_is_probed_then_dropped() {
        let config = SessionConfig {
            probe_interval: Some(Duration::from_secs(5)),
            ..SessionConfig::default()
        };
        let (_session, mut notes, mut server) = pair(config);
        let mut buf = vec![0u8; 256];
        // After one idle interval we send an echo.
        let n = server.read(&mut buf).await.unwrap();
        let probe: Value = serde_json::from_slice(&buf[..n]).unwrap();
        assert_eq!(probe["method"], "echo");
        // Silence for another interval: the connection is dropped.
        match notes.recv().await.unwrap() {
            Notification::Closed(Error::Inactive(_)) => {}
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn any_bytes_from_the_server_count_as_activity() {
        let config = SessionConfig {
            probe_interval: Some(Duration::from_secs(5)),
            ..SessionConfig::default()
        };
        let (_session, mut notes, mut server) = pair(config);
        // A message trickling in over 20 s in pieces never trips the probe.
        server.write_all(b"{\"method\":\"update2\",").await.unwrap();
        for _ in 0..5 {
            tokio::time::sleep(Duration::from_secs(4)).await;
            server.write_all(b" ").await.unwrap();
        }
        server
            .write_all(b"\"params\":[],\"id\":null}")
            .await
            .unwrap();
        match notes.recv().await.unwrap() {
            Notification::Call { method, .. } => assert_eq!(method, "update2"),
            other => panic!("unexpected {other:?}"),
        }
    }
}
