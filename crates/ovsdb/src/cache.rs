//! The change-stream plumbing of a database cache: the monitor task
//! publishes each new [`DbSnapshot`] and its [`Change`]s here, readers
//! take snapshots, subscribe to changes and wait for resyncs.
//!
//! A batch is published in two steps (the snapshot, then its changes one
//! by one), so a reader that drains its changes while a batch is being
//! published gets part of that batch's changes and a snapshot holding all
//! of it. [`CacheReader::drain_then_snapshot`] excludes publishing while
//! it drains and reads: what it drained is exactly what the snapshot holds.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::broadcast::error::TryRecvError;
use tokio::sync::{broadcast, watch};

use obgp_ovsdb_data::{Change, DbSnapshot};

use crate::error::{Error, Result};

/// The writer side of a database cache: publishes snapshots, changes and
/// resync generations. Held by the monitor task.
#[derive(Debug)]
pub struct CachePublisher {
    snapshot: watch::Sender<DbSnapshot>,
    changes: broadcast::Sender<Change>,
    resynced: watch::Sender<u64>,
    /// Held while a batch is published (see the module comment).
    publishing: Arc<Mutex<()>>,
}

/// The reader side of a database cache; cheap to clone.
#[derive(Clone, Debug)]
pub struct CacheReader {
    snapshot: watch::Receiver<DbSnapshot>,
    changes: broadcast::Sender<Change>,
    resynced: watch::Receiver<u64>,
    publishing: Arc<Mutex<()>>,
}

/// Creates a cache starting at `initial`. Change subscribers that fall more
/// than `change_capacity` changes behind get `RecvError::Lagged` and should
/// resynchronise from a snapshot.
pub fn cache(initial: DbSnapshot, change_capacity: usize) -> (CachePublisher, CacheReader) {
    let (stx, srx) = watch::channel(initial);
    let (ctx, _) = broadcast::channel(change_capacity.max(1));
    let (rtx, rrx) = watch::channel(0);
    let publishing = Arc::new(Mutex::new(()));
    (
        CachePublisher {
            snapshot: stx,
            changes: ctx.clone(),
            resynced: rtx,
            publishing: publishing.clone(),
        },
        CacheReader {
            snapshot: srx,
            changes: ctx,
            resynced: rrx,
            publishing,
        },
    )
}

impl CachePublisher {
    /// The snapshot readers currently see.
    pub fn current(&self) -> DbSnapshot {
        self.snapshot.borrow().clone()
    }

    /// Swaps in `next` and then sends `changes` to subscribers (so a
    /// subscriber that looks at the snapshot on a change sees it applied),
    /// as one step for [`CacheReader::drain_then_snapshot`].
    pub fn publish(&self, next: DbSnapshot, changes: Vec<Change>) {
        // Never held across an await; a panic while held leaves nothing
        // half-done that the lock protects.
        let _batch = self
            .publishing
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.snapshot.send_replace(next);
        if self.changes.receiver_count() > 0 {
            for c in changes {
                let _ = self.changes.send(c);
            }
        }
    }

    /// Signals that the cache matches the server again after a (re)connect.
    pub fn resynced(&self) {
        self.resynced.send_modify(|g| *g += 1);
    }
}

impl CacheReader {
    /// The current snapshot: consistent, and never modified afterwards.
    pub fn snapshot(&self) -> DbSnapshot {
        self.snapshot.borrow().clone()
    }

    /// Drains `changes` (a receiver from [`CacheReader::subscribe`]),
    /// handing each to `seen` (`Err(n)`: `n` changes were dropped because
    /// the receiver lagged), then reads the snapshot, with no batch
    /// published in between: the snapshot holds every batch whose changes
    /// were drained, and no other. Without this, a batch being published
    /// meanwhile would be in the snapshot with only part of its changes
    /// drained (the rest come with the next drain).
    pub fn drain_then_snapshot(
        &self,
        changes: &mut broadcast::Receiver<Change>,
        mut seen: impl FnMut(Result<Change, u64>),
    ) -> DbSnapshot {
        let _batch = self
            .publishing
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        loop {
            match changes.try_recv() {
                Ok(c) => seen(Ok(c)),
                Err(TryRecvError::Lagged(n)) => seen(Err(n)),
                Err(TryRecvError::Empty | TryRecvError::Closed) => break,
            }
        }
        self.snapshot()
    }

    /// A receiver notified whenever a new snapshot is published.
    pub fn watch(&self) -> watch::Receiver<DbSnapshot> {
        self.snapshot.clone()
    }

    /// Subscribes to row changes from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// A receiver of the resync generation: 0 until the first initial dump
    /// is applied, then incremented after every (re)connect's dump.
    pub fn resynced(&self) -> watch::Receiver<u64> {
        self.resynced.clone()
    }

    /// Waits until the cache has been synced at least `generation` times.
    pub async fn wait_resynced(&self, generation: u64) -> Result<()> {
        let mut rx = self.resynced.clone();
        rx.wait_for(|g| *g >= generation)
            .await
            .map(|_| ())
            .map_err(|_| Error::SessionClosed)
    }
}
