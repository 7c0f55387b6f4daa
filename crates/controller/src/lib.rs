//! The reconcile loop: why a reconcile runs ([`Reason`]), when ([`queue`]:
//! debounced, coalesced and rate-limited triggers), which kind of reconcile
//! a batch of triggers asks for ([`kind`]), what one reconcile does
//! ([`reconcile`]: desired state, observe, plan, apply), where the OVN data
//! comes from ([`sources`]; with a conditional NB monitor, which ports:
//! [`port_conditions`]), what the event filters read ([`view`]), the
//! mass-withdrawal guard ([`guard`]), returning freed heap after full dumps
//! ([`memory`]), the one-shot commands' inputs ([`inputs`]), how the agent is
//! asked to run and why it stopped ([`options`]), the node-local NB of
//! `exposing_method = ovn` ([`local_nb`]), the metrics and
//! probes served on `metrics_listen` ([`metrics`], [`probes`], [`http`],
//! [`telemetry`]), what `status` shows ([`status`]), and the loop that ties
//! them ([`run`]).
//!
//! Events never touch the node: an OVSDB update that passes the event filters,
//! a timer, a reconnect or a netlink overrun only schedules the next
//! reconcile, which recomputes everything. A missed or reordered event costs
//! latency, never correctness (upstream defects D11 and D16 cannot occur).

pub mod follower;
pub mod guard;
pub mod http;
pub mod inputs;
pub mod kind;
pub mod local_nb;
pub mod memory;
pub mod metrics;
pub mod ofports;
pub mod options;
pub mod port_conditions;
pub mod probes;
pub mod queue;
pub mod reason;
pub mod reconcile;
pub mod run;
pub mod sources;
pub mod status;
pub mod telemetry;
pub mod triggers;
pub mod view;
mod watchers;

pub use inputs::inputs_once;
pub use kind::{BackgroundChecks, ReconcileKind, Reread};
pub use options::{RunError, RunOptions};
pub use queue::{QueueConfig, Scheduler, TriggerBatch, WorkQueue};
pub use reason::Reason;
pub use reconcile::{Planned, ReconcileError, ReconcileReport, Reconciler};
pub use run::{plan_once, reconcile_once, render_plan, run};
