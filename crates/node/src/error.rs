//! The error of every read and write on the node. Its own module because
//! the kernel node, the codec, the mirror and the command runners all
//! return it.

use std::io;

/// A failed read or write on the node, with what it was.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    /// An rt_tables line the agent could not append: the bridge gets no
    /// table, and nothing is written into the number it was to have.
    #[error("bridge {bridge} gets no routing table: cannot append {line:?} to {path}: {source}")]
    RtTablesWrite {
        path: String,
        bridge: String,
        line: String,
        #[source]
        source: io::Error,
    },
    #[error("no device {0}")]
    NoDevice(String),
    #[error("{cmd} failed: {detail}")]
    Command { cmd: String, detail: String },
    #[error("{cmd}: no answer within {}s, killed", after.as_secs_f64())]
    TimedOut {
        cmd: String,
        after: std::time::Duration,
    },
    #[error("not supported here: {0}")]
    Unsupported(String),
    #[error("invalid value {0:?}")]
    Invalid(String),
    /// FRR's own parser (`vtysh --dryrun`) refused a text: it was not
    /// applied. `detail` is FRR's message (the line and the command).
    #[error("FRR's parser rejected the text, not applied: {detail}")]
    FrrRejected { detail: String },
}

impl IoError {
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> IoError {
        IoError::Io {
            what: what.into(),
            source,
        }
    }

    /// The errno behind a failed request, if there is one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            IoError::Io { source, .. } | IoError::RtTablesWrite { source, .. } => {
                source.raw_os_error()
            }
            IoError::NoDevice(_) => Some(libc::ENODEV),
            _ => None,
        }
    }
}
