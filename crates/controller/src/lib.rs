//! The reconcile loop, and the two rooms it draws on: the crates
//! `obgp-inputs` and `obgp-ops`, re-exported here.
//!
//! - [`inputs`]: where the OVN and OVS data and the triggers come from
//!   (the monitored databases and their snapshot, port conditions, the
//!   node-local NB, the filters' view, the watchers, [`Trigger`]).
//! - [`ops`]: the operations surface (metrics, probes and HTTP, the
//!   `status` model, telemetry, memory).
//! - The loop itself: when a reconcile runs ([`queue`]: debounced,
//!   coalesced and rate-limited triggers), which kind a batch of triggers
//!   asks for ([`kind`]), what one reconcile does ([`reconcile`]: one run
//!   of the pipeline, whose port observes the node, the mass-withdrawal
//!   guard ([`guard`]), apply), how the
//!   agent is asked to run and why it stopped ([`options`]), the one-shot
//!   commands (`plan`, `reconcile --once` and their inputs: [`one_shot`]),
//!   where a `status` comes from ([`live_status`]), one agent per node
//!   (`node_lock`: the daemon waits for the lock), the checks that run in
//!   the background after timer-driven reconciles (`background`), the
//!   reconcile's log line (`report_log`), every duration the
//!   configuration sets ([`timers`]), and the loop that ties them
//!   ([`run`]).
//!
//! The rooms never depend on the loop: where one shows or reads something
//! of it (a reconcile's report, the work queue), the room defines the type
//! or trait and the loop fills or implements it.
//!
//! Events never touch the node: an OVSDB update that passes the event filters,
//! a timer, a reconnect or a netlink overrun only schedules the next
//! reconcile, which recomputes everything. A missed or reordered event costs
//! latency, never correctness (upstream defects D11 and D16 cannot occur).

pub use obgp_inputs as inputs;
pub use obgp_ops as ops;

mod background;
pub mod fabric;
pub mod guard;
pub mod kind;
pub mod live_status;
mod node_lock;
pub mod one_shot;
pub mod options;
pub mod queue;
pub mod reconcile;
mod report_log;
pub mod run;
#[cfg(test)]
mod test_support;
pub mod timers;

pub use inputs::Trigger;
pub use kind::{BackgroundChecks, ReconcileKind, Reread};
pub use one_shot::{capture_once, inputs_once, Captured};
pub use one_shot::{plan_once, reconcile_once, render_plan};
pub use options::{RunError, RunOptions};
pub use queue::{QueueConfig, Scheduler, TriggerBatch, WorkQueue};
pub use reconcile::{Planned, ReconcileError, ReconcileReport, Reconciler};
pub use run::run;
pub use timers::LoopTimers;
