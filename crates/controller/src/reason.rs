//! Why a reconcile runs: carried with every trigger so the logs can say it.

use std::fmt;

use serde::Serialize;

/// One cause of a reconcile.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Reason {
    /// The agent started.
    Startup,
    /// An OVSDB update matched an event filter (upstream's event class name).
    Event { class: &'static str, table: String },
    /// `reconcile_interval` elapsed.
    Periodic,
    /// `frr_reconcile_interval` elapsed: check FRR still has our config.
    FrrCheck,
    /// A database connection was (re)established and its cache resynced.
    Resync { database: String },
    /// The netlink monitor lost messages: the node mirror must be re-read.
    NetlinkOverrun,
    /// Something asked by hand (`reconcile --once`, a signal).
    Manual,
    /// The previous reconcile failed or left ops failed: retried after a backoff.
    Retry,
}

impl Reason {
    /// Whether this reason needs FRR's running configuration re-checked even
    /// when nothing else changed.
    pub fn checks_frr(&self) -> bool {
        matches!(
            self,
            Reason::FrrCheck | Reason::Startup | Reason::Periodic | Reason::Manual | Reason::Retry
        )
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Startup => f.write_str("startup"),
            Reason::Event { class, table } => write!(f, "event {class} on {table}"),
            Reason::Periodic => f.write_str("periodic reconcile"),
            Reason::FrrCheck => f.write_str("frr check"),
            Reason::Resync { database } => write!(f, "resync of {database}"),
            Reason::NetlinkOverrun => f.write_str("netlink overrun"),
            Reason::Manual => f.write_str("manual"),
            Reason::Retry => f.write_str("retry after a failure"),
        }
    }
}
