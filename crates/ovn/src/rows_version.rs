//! Which state of the rows a snapshot shows ([`RowsVersion`]): a leaf that
//! the snapshot holds and the change values ([`crate::changes`]) compare.

use std::sync::atomic::{AtomicU64, Ordering};

/// Which state of the NB and local OVS rows a [`Snapshot`](crate::Snapshot) shows: a number
/// no other state of any live snapshot in this process has, 0 when not
/// known (a default or hand-made snapshot). The SB rows are not counted:
/// the SB driver's desired state is always computed from every row.
/// History, not content: two snapshots of the same rows are equal (`==`)
/// whatever their versions.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RowsVersion(u64);

/// The next unused version (0 is "unknown").
static NEXT_VERSION: AtomicU64 = AtomicU64::new(1);

impl RowsVersion {
    /// A version no state had before.
    pub(crate) fn fresh() -> RowsVersion {
        RowsVersion(NEXT_VERSION.fetch_add(1, Ordering::Relaxed))
    }

    /// Whether no state is known (a default or hand-made snapshot's).
    pub(crate) fn is_unknown(self) -> bool {
        self.0 == 0
    }

    /// The same known state (an unknown one is no state's).
    pub(crate) fn is(self, other: RowsVersion) -> bool {
        self.0 != 0 && self.0 == other.0
    }
}

/// History, not content (see [`RowsVersion`]).
impl PartialEq for RowsVersion {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
