//! The reconcile loop's machinery: why a reconcile runs ([`Reason`]) and when
//! ([`queue`]: debounced, coalesced and rate-limited triggers).
//!
//! Events never touch the node: an OVSDB update that passes the event filters,
//! a timer, a reconnect or a netlink overrun only schedules the next
//! reconcile, which recomputes everything. A missed or reordered event costs
//! latency, never correctness.

pub mod queue;
pub mod reason;

pub use queue::{Batch, QueueConfig, Scheduler, WorkQueue};
pub use reason::Reason;
