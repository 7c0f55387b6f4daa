//! The client's error type: every failure names what was wrong and where.

use std::io;

use crate::framing::FrameError;
use obgp_ovsdb_data::DataError;

/// Anything that can go wrong talking to an OVSDB server.
///
/// Errors that come from the server's input (framing, JSON, types, unknown
/// tables or columns) name the offending value and, where there is one, the
/// table and row UUID. A session that returns one of them is dropped and, for
/// a [`crate::Client`], re-established.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A remote string that is not `unix:PATH`, `tcp:HOST:PORT` or `ssl:HOST:PORT`.
    #[error("invalid remote {0:?}: expected unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT")]
    BadRemote(String),
    /// Connecting to or talking over the socket failed.
    #[error("{remote}: {source}")]
    Io {
        /// The remote as configured.
        remote: String,
        #[source]
        /// The underlying error.
        source: io::Error,
    },
    /// TLS setup (keys, certificates, CA) failed.
    #[error("TLS: {0}")]
    Tls(String),
    /// The byte stream is not a sequence of JSON objects within the size limit.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// A frame is not valid JSON or not a JSON-RPC message we understand.
    #[error("malformed message from server: {0}")]
    Protocol(String),
    /// The server answered a request with a JSON-RPC error.
    #[error("{method}: server error {error}")]
    Rpc {
        /// The method that failed.
        method: String,
        /// The server's `error` member.
        error: serde_json::Value,
    },
    /// A transaction operation failed (the server's `error`/`details`).
    #[error("transaction failed at operation {index}: {error}")]
    Transaction {
        /// Index of the failed operation in the transaction.
        index: usize,
        /// The operation's result object (`error`, `details`).
        error: serde_json::Value,
    },
    /// A schema, row or value from the server that does not fit.
    #[error(transparent)]
    Data(#[from] DataError),
    /// The server closed the connection.
    #[error("connection closed by server")]
    Closed,
    /// Nothing arrived from the server for two probe intervals.
    #[error("no message from server for {0:?}: connection considered dead")]
    Inactive(std::time::Duration),
    /// A message from the server did not end within
    /// [`SessionConfig::message_deadline`](crate::SessionConfig::message_deadline)
    /// of its first byte (a server trickling a message that never ends).
    #[error("a message was not complete {deadline:?} after its first byte ({pending} bytes so far; message_deadline)")]
    MessageDeadline {
        /// The deadline.
        deadline: std::time::Duration,
        /// Bytes of the message received so far.
        pending: usize,
    },
    /// A request got no answer in time (the session stays up).
    #[error("no reply within {0:?}")]
    Timeout(std::time::Duration),
    /// The session ended while a request was outstanding; says why.
    #[error("session closed: {0}")]
    Disconnected(String),
    /// The session or client has shut down.
    #[error("session is closed")]
    SessionClosed,
    /// The database is not on this server, or (leader-only) not led by it.
    #[error("{0}")]
    NotUsable(String),
    /// The cache file (`ClientConfig::state_file`) could not be written.
    #[error("cache file {path}: {reason}")]
    StateFile {
        /// The file.
        path: String,
        /// What failed.
        reason: String,
    },
}

/// Short alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
