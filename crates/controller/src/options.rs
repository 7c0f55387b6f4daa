//! How the agent is asked to run beyond its configuration file
//! ([`RunOptions`]) and why it stopped or a one-shot command failed
//! ([`RunError`]). Shared by the run loop, the one-shot commands' inputs
//! and `status`, and importing none of them, so that they need not import
//! each other for it.

use obgp_node::KernelConfig;
use tokio::sync::watch;

use crate::inputs::MonitoredDbError;
use crate::ops::ProbeBounds;
use crate::queue::QueueConfig;
use crate::reconcile::ReconcileError;

/// How the loop runs beyond the configuration file.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The work queue's merge window and rate limit.
    pub queue: QueueConfig,
    /// The node: its network namespace, the commands and files it is
    /// written through.
    pub kernel: KernelConfig,
    /// The probes' bounds; `None`: [`ProbeBounds::for_config`].
    pub probes: Option<ProbeBounds>,
    /// For tests: every reconcile, once started, waits until this is
    /// true; a stand-in for a reconcile that hangs (`/healthz` then
    /// reports it stuck). `None` in the agent.
    pub hold_reconciles: Option<watch::Receiver<bool>>,
    /// The node lock file ([`obgp_node::NodeLock`]): the daemon waits for
    /// it before connecting anywhere, `reconcile --once` fails while
    /// another agent holds it. `None` takes no lock (tests that run
    /// several loops in one process, each on its own namespace).
    pub node_lock: Option<std::path::PathBuf>,
}

/// Why the agent stopped or a one-shot command failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    MonitoredDb(#[from] MonitoredDbError),
    #[error(transparent)]
    Reconcile(#[from] ReconcileError),
    #[error(
        "the node did not converge: {0} op(s) or read(s) still pending after the reconcile:\n{1}"
    )]
    NotConverged(usize, String),
    #[error(transparent)]
    NodeLock(#[from] obgp_node::LockError),
    #[error(
        "another agent holds the node lock {}: {holder} (one agent per node: stop it first)",
        path.display()
    )]
    NodeLocked {
        path: std::path::PathBuf,
        holder: obgp_node::Holder,
    },
    #[error("[DEFAULT] metrics_listen = {addr}: cannot listen: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
}

impl RunError {
    /// The configuration cannot work on this node (exit 2, like an invalid
    /// option), for example `bgp_nic` naming an existing device of the node.
    pub fn is_config_error(&self) -> bool {
        matches!(self, RunError::Reconcile(e) if e.is_config_error())
    }
}
