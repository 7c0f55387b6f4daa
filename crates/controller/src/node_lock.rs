//! One agent per node, as the run loop and `reconcile --once` take it: the
//! daemon waits for the node lock ([`obgp_node::NodeLock`]) before it
//! connects anywhere, naming the holder in its log and on `/readyz`;
//! `reconcile --once` (run by hand) does not wait and fails naming it
//! (docs/adr/0010-one-agent-per-node.md).

use std::path::Path;
use std::time::{Duration, Instant};

use obgp_node::{Holder, NodeLock};
use tokio_util::sync::CancellationToken;

use crate::ops::Telemetry;
use crate::options::RunError;

/// How often a waiting daemon tries the lock again: the hand-over after
/// the holder exits costs at most this.
const RETRY: Duration = Duration::from_millis(500);
/// How often a waiting daemon says again that it waits.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// Waits until this agent holds the lock at `path`; `None` when `shutdown`
/// came first. Meanwhile `/readyz` says what it waits for (not ready) and
/// `/healthz` answers ok (waiting is not being stuck).
pub(crate) async fn wait_for_node_lock(
    path: &Path,
    shutdown: &CancellationToken,
    telemetry: Option<&Telemetry>,
) -> Result<Option<NodeLock>, RunError> {
    let started = Instant::now();
    let mut said: Option<(Instant, Holder)> = None;
    loop {
        match NodeLock::try_acquire(path)? {
            Ok(lock) => {
                if let (Some(t), Some(_)) = (telemetry, &said) {
                    // Back to what a starting agent waits for.
                    t.waiting("the OVSDB databases".into());
                }
                tracing::info!(
                    lock = %path.display(),
                    waited_s = started.elapsed().as_secs(),
                    holder = %lock.holder(),
                    "holding the node lock: this agent alone writes to the node"
                );
                return Ok(Some(lock));
            }
            Err(holder) => {
                let due = said
                    .as_ref()
                    .is_none_or(|(at, who)| at.elapsed() >= LOG_EVERY || *who != holder);
                if due {
                    // The probes first: whoever reads the log line finds
                    // `/readyz` saying the same.
                    if let Some(t) = telemetry {
                        t.waiting(format!(
                            "the node lock {} (held by {holder})",
                            path.display()
                        ));
                    }
                    tracing::warn!(
                        lock = %path.display(),
                        holder = %holder,
                        waited_s = started.elapsed().as_secs(),
                        "another agent holds the node lock: waiting for it, writing nothing"
                    );
                    said = Some((Instant::now(), holder));
                }
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(None),
            _ = tokio::time::sleep(RETRY) => {}
        }
    }
}

/// Takes the lock at `path` for a one-shot write (`reconcile --once`), or
/// fails naming the holder.
pub(crate) fn lock_once(path: &Path) -> Result<NodeLock, RunError> {
    NodeLock::try_acquire(path)?.map_err(|holder| RunError::NodeLocked {
        path: path.to_path_buf(),
        holder,
    })
}
