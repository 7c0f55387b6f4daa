//! What one reconcile did: the report the run loop logs, counts in the
//! metrics and shows in `/status`.

use std::collections::BTreeMap;
use std::time::Duration;

/// What one reconcile did.
#[derive(Debug, Default)]
pub struct ReconcileReport {
    /// Building the indexed OVN snapshot from the caches (set by the run
    /// loop, which builds it; zero when the caller passed a ready snapshot).
    pub snapshot_time: Duration,
    pub desired_time: Duration,
    /// Whether the desired state was patched from the last one (only ports
    /// changed) rather than computed from every row.
    pub desired_patched: bool,
    pub observe_time: Duration,
    pub plan_time: Duration,
    /// Whether only the node objects the patched desired state changed were
    /// planned (an OVN event's reconcile), rather than the whole node.
    pub plan_incremental: bool,
    pub apply_time: Duration,
    /// Applied ops by kind (`add_rule`, `del_address`...).
    pub applied: BTreeMap<String, usize>,
    /// Ops that failed, as text with the error.
    pub failed: Vec<String>,
    /// Announcements held back because their wiring failed (O1).
    pub held_back: usize,
    /// Exposed IPs in the desired state.
    pub exposed: usize,
    /// Ops of the plan not started because the agent is stopping.
    pub not_started: usize,
    /// Command ops (`vtysh`, `ovs-ofctl`) handed to the command lane; their
    /// outcomes are reported by a later reconcile (or this one when it
    /// waits for the lane: the one-shot commands).
    pub queued: usize,
    /// Command ops the lane finished since the last report, by kind.
    pub commands_applied: BTreeMap<String, usize>,
    /// Withdrawals and unwiring held back by the mass-withdrawal guard.
    pub withdrawals_held: usize,
    /// Ops in the plan (before the guard held any back).
    pub planned: usize,
    /// Failed ops by kind (netlink ops of this reconcile, command ops the
    /// lane reported since the last one); [`ReconcileReport::failed`] has
    /// their text.
    pub failed_kinds: BTreeMap<String, usize>,
    /// What the observe could not read (FRR, an OVS bridge): nothing was
    /// planned on it, so the node is not known to match.
    pub unread: Vec<String>,
    /// Whether the desired state differs from the one the previous
    /// reconcile planned with (always true for the first).
    pub desired_changed: bool,
    /// Ops applied (or handed to the command lane) while the desired state
    /// did not change, and which the previous reconcile did not plan:
    /// repairs of a change made on the node (an address removed by hand,
    /// FRR lost its configuration), by object (`address`, `route`, `frr`...).
    pub drift_repairs: BTreeMap<&'static str, usize>,
    /// Whether this reconcile's netlink writes had a side effect the
    /// kernel does not notify (removing the last IPv4 address of `bgp-nic`
    /// flushes the IPv4 announcement routes through it): the node must be
    /// read again and repaired now rather than at the next timer.
    pub unnotified_side_effects: bool,
    /// Why this reconcile handed FRR our text again, if it did
    /// (see [`FrrApplyCause`]).
    pub frr_apply: Option<FrrApplyCause>,
    /// The FRR texts (ours and removals) the command lane finished since
    /// the last report, in order.
    pub frr_results: Vec<FrrResult>,
}

/// How one FRR text handed to `vtysh` went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrrResult {
    /// A removal (del-vrf, an L2 VNI block) rather than our text.
    pub removal: bool,
    pub outcome: FrrOutcome,
}

/// The outcome of an FRR text: applied, refused by FRR's parser in the
/// dry run (nothing applied), or failed otherwise (vtysh failed or timed
/// out), with the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrrOutcome {
    Applied,
    Rejected(String),
    Failed(String),
}

impl FrrOutcome {
    /// The metrics' label.
    pub fn as_str(&self) -> &'static str {
        match self {
            FrrOutcome::Applied => "applied",
            FrrOutcome::Rejected(_) => "rejected",
            FrrOutcome::Failed(_) => "failed",
        }
    }
}

/// Why a reconcile applied the FRR text (`vtysh -f`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrrApplyCause {
    /// No text of ours was known to be in FRR since the agent started.
    Initial,
    /// The desired text differs from the one last applied or found.
    Changed,
    /// FRR lacked the text last applied or found (restarted, edited by hand).
    Missing,
}

impl FrrApplyCause {
    pub fn as_str(self) -> &'static str {
        match self {
            FrrApplyCause::Initial => "initial",
            FrrApplyCause::Changed => "changed",
            FrrApplyCause::Missing => "missing",
        }
    }
}

impl ReconcileReport {
    pub fn ops_applied(&self) -> usize {
        self.applied.values().sum()
    }
}
