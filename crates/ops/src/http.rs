//! The `metrics_listen` listener: `/metrics`, `/healthz`, `/readyz`,
//! `/status`.
//!
//! A minimal HTTP/1.1 responder rather than hyper: four fixed GET paths,
//! one request per connection (`Connection: close`), no body to read, no
//! keep-alive, TLS or streaming. What it needs is bounds, and they are
//! simplest to see in a page of code: a request head of at most
//! [`MAX_HEAD`] bytes read within [`READ_TIMEOUT`], at most
//! [`MAX_CONNECTIONS`] connections at once (more are closed unanswered),
//! a malformed request answered 400, an unknown path 404, a method other
//! than GET or HEAD 405. It runs on its own tasks and only reads shared
//! state (the metrics' atomics, the probes' progress under a lock held
//! for a copy), so a scrape never waits for the reconcile loop, nor the
//! loop for a scrape. `/status` is the exception: the loop answers it
//! between two reconciles (it observes the node), within
//! [`STATUS_WAIT`], else 503.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// The longest request head read (request line and headers).
pub const MAX_HEAD: usize = 8 * 1024;
/// How long a client has to send its request head.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a client has to take the answer.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 16;
/// How long `/status` waits for the run loop (a reconcile in flight ends
/// first).
pub const STATUS_WAIT: Duration = Duration::from_secs(10);

/// What [`Endpoints::status`] returns: served or not, and the body.
pub type StatusFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = (bool, String)> + Send + 'a>>;

/// What the listener serves.
pub trait Endpoints: Send + Sync + 'static {
    /// The exposition and its content type.
    fn metrics(&self) -> (String, &'static str);
    /// `/healthz`: healthy, and why.
    fn health(&self) -> (bool, String);
    /// `/readyz`: ready, and why.
    fn readiness(&self) -> (bool, String);
    /// `/status`: the status JSON (`true`), or why there is none.
    fn status(&self) -> StatusFuture<'_> {
        Box::pin(async { (false, "no status is served here\n".to_string()) })
    }
}

/// A parsed request line.
#[derive(Debug, PartialEq, Eq)]
pub struct Request<'a> {
    pub method: &'a str,
    /// The path without its query.
    pub path: &'a str,
}

/// Why a request head was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadRequest {
    #[error("the request head is longer than {MAX_HEAD} bytes")]
    TooLong,
    #[error("malformed request line {0:?}")]
    Malformed(String),
}

/// Parses the request line of `head` (bytes up to the blank line). Only
/// the request line matters: no header changes the answer.
pub fn parse_request(head: &[u8]) -> Result<Request<'_>, BadRequest> {
    let text =
        std::str::from_utf8(head).map_err(|_| BadRequest::Malformed("(not UTF-8)".into()))?;
    let line = text.split("\r\n").next().unwrap_or_default();
    let malformed = || BadRequest::Malformed(line.chars().take(80).collect());
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed());
    };
    let token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_uppercase());
    if !token(method) || !target.starts_with('/') || !matches!(version, "HTTP/1.1" | "HTTP/1.0") {
        return Err(malformed());
    }
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    Ok(Request { method, path })
}

/// The status, content type and body answering `request`.
pub fn respond(request: &Request<'_>, endpoints: &dyn Endpoints) -> (u16, &'static str, String) {
    const TEXT: &str = "text/plain; charset=utf-8";
    if !matches!(request.method, "GET" | "HEAD") {
        return (405, TEXT, "only GET and HEAD\n".into());
    }
    let probe = |(ok, reason): (bool, String)| (if ok { 200 } else { 503 }, TEXT, reason + "\n");
    match request.path {
        "/metrics" => {
            let (body, content_type) = endpoints.metrics();
            (200, content_type, body)
        }
        "/healthz" => probe(endpoints.health()),
        "/readyz" => probe(endpoints.readiness()),
        _ => (
            404,
            TEXT,
            "not found: /metrics, /healthz, /readyz, /status\n".into(),
        ),
    }
}

fn status_text(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// Binds `addr` and serves until `stop` is cancelled. The bind error is
/// returned (the caller decides whether the agent can run without it).
pub async fn serve(
    addr: std::net::SocketAddr,
    endpoints: Arc<dyn Endpoints>,
    stop: CancellationToken,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let listener = TcpListener::bind(addr).await?;
    tracing::info!(%addr, "serving /metrics, /healthz and /readyz");
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    Ok(tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = stop.cancelled() => return,
                a = listener.accept() => a,
            };
            let (stream, peer) = match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait, do not spin.
                    tracing::warn!("metrics listener: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                tracing::debug!(%peer, "metrics listener: too many connections, closing");
                continue;
            };
            let endpoints = endpoints.clone();
            tokio::spawn(async move {
                if let Err(e) = serve_one(stream, endpoints.as_ref()).await {
                    tracing::debug!(%peer, "metrics listener: {e}");
                }
                drop(slot);
            });
        }
    }))
}

async fn serve_one(mut stream: TcpStream, endpoints: &dyn Endpoints) -> std::io::Result<()> {
    let head = tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream))
        .await
        .map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::TimedOut, "request head timed out")
        })??;
    let (status, content_type, body, head_only) = match head {
        Ok(head) => match parse_request(&head) {
            Ok(req) if req.path == "/status" && matches!(req.method, "GET" | "HEAD") => {
                let (ok, body) = tokio::time::timeout(STATUS_WAIT, endpoints.status())
                    .await
                    .unwrap_or_else(|_| {
                        (
                            false,
                            format!(
                                "busy: the run loop did not answer within {} s (a reconcile is in flight)\n",
                                STATUS_WAIT.as_secs()
                            ),
                        )
                    });
                let (status, content_type) = if ok {
                    (200, "application/json")
                } else {
                    (503, "text/plain; charset=utf-8")
                };
                (status, content_type, body, req.method == "HEAD")
            }
            Ok(req) => {
                let (s, c, b) = respond(&req, endpoints);
                (s, c, b, req.method == "HEAD")
            }
            Err(e) => (400, "text/plain; charset=utf-8", format!("{e}\n"), false),
        },
        Err(e) => (400, "text/plain; charset=utf-8", format!("{e}\n"), false),
    };
    let mut answer = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        status_text(status),
        body.len()
    );
    if !head_only {
        answer.push_str(&body);
    }
    tokio::time::timeout(WRITE_TIMEOUT, async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await
    })
    .await
    .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "answer timed out"))?
}

/// Reads up to the blank line ending the head, at most [`MAX_HEAD`] bytes.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Result<Vec<u8>, BadRequest>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = find_blank_line(&buf) {
            buf.truncate(end);
            return Ok(Ok(buf));
        }
        if buf.len() > MAX_HEAD {
            return Ok(Err(BadRequest::TooLong));
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(Err(BadRequest::Malformed(
                "(connection closed before the end of the head)".into(),
            )));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn find_blank_line(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed {
        healthy: bool,
    }
    impl Endpoints for Fixed {
        fn metrics(&self) -> (String, &'static str) {
            ("x_total 1\n".into(), "text/plain; version=0.0.4")
        }
        fn health(&self) -> (bool, String) {
            (self.healthy, "stuck: because".into())
        }
        fn readiness(&self) -> (bool, String) {
            (true, "ready".into())
        }
    }

    #[test]
    fn request_lines_are_parsed_strictly() {
        assert_eq!(
            parse_request(b"GET /metrics?x=1 HTTP/1.1\r\nHost: a"),
            Ok(Request {
                method: "GET",
                path: "/metrics"
            })
        );
        for bad in [
            &b"GET /metrics"[..],
            b"GET  /metrics HTTP/1.1",
            b"get /metrics HTTP/1.1",
            b"GET metrics HTTP/1.1",
            b"GET /metrics HTTP/2.0",
            b"GET /metrics HTTP/1.1 extra",
            b"\xff\xfe",
            b"",
        ] {
            assert!(parse_request(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn paths_methods_and_probe_states_map_to_statuses() {
        let e = Fixed { healthy: false };
        let req = |method, path| Request { method, path };
        assert_eq!(respond(&req("GET", "/metrics"), &e).0, 200);
        let (status, _, body) = respond(&req("GET", "/healthz"), &e);
        assert_eq!((status, body.as_str()), (503, "stuck: because\n"));
        assert_eq!(respond(&req("GET", "/readyz"), &e).0, 200);
        assert_eq!(respond(&req("GET", "/"), &e).0, 404);
        assert_eq!(respond(&req("POST", "/metrics"), &e).0, 405);
        assert_eq!(
            respond(&req("HEAD", "/healthz"), &Fixed { healthy: true }).0,
            200
        );
    }

    async fn exchange(addr: std::net::SocketAddr, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(request).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn the_listener_answers_bad_requests_and_keeps_serving() {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = probe.local_addr().unwrap();
        drop(probe);
        let stop = CancellationToken::new();
        let task = serve(addr, Arc::new(Fixed { healthy: true }), stop.clone())
            .await
            .unwrap();
        let ok = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(
            ok.contains("Content-Length: 10\r\n") && ok.ends_with("\r\n\r\nx_total 1\n"),
            "{ok}"
        );
        let bad = exchange(addr, b"BREW /pot HTCPCP/1.0\r\n\r\n").await;
        assert!(bad.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{bad}");
        let long = [b"GET /".as_slice(), &[b'a'; MAX_HEAD + 10]].concat();
        let long = exchange(addr, &long).await;
        assert!(long.contains("longer than 8192 bytes"), "{long}");
        let head = exchange(addr, b"HEAD /healthz HTTP/1.0\r\n\r\n").await;
        assert!(
            head.starts_with("HTTP/1.1 200 OK\r\n") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
        // Idle connections hold slots; past the limit, connections are
        // closed, and the listener still serves once they go.
        let mut idle = Vec::new();
        for _ in 0..MAX_CONNECTIONS {
            idle.push(TcpStream::connect(addr).await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut over = TcpStream::connect(addr).await.unwrap();
        let mut buf = Vec::new();
        let n = tokio::time::timeout(Duration::from_secs(2), over.read_to_end(&mut buf))
            .await
            .expect("closed at once")
            .unwrap_or(0);
        assert_eq!(n, 0, "no answer past the limit");
        drop(idle);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let again = exchange(addr, b"GET /readyz HTTP/1.1\r\n\r\n").await;
        assert!(again.ends_with("\r\n\r\nready\n"), "{again}");
        stop.cancel();
        task.await.unwrap();
    }
}
