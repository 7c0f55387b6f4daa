//! The operations surface: the metrics and probes served on
//! `metrics_listen` over a small HTTP server, the `status` model and its
//! rendering, the telemetry the loop reports into, and returning freed heap
//! after full dumps.
//!
//! This room (crate) does not depend on the loop (`obgp-controller`): it
//! defines what it shows (the [`ReconcileReport`] of one reconcile, the
//! `/status` [`status::Reply`]) and the loop fills it. The loop and the
//! binary use only the names below.

pub mod fabric;
mod http;
mod memory;
mod metrics;
mod probes;
mod report;
pub mod status;
mod telemetry;

pub use http::serve;
pub use memory::{
    arena_cap, cap_arenas, log_stage, release_freed_heap, spawn_release, TrimSchedule, Usage,
    ARENA_MAX,
};
pub use metrics::{count_exposed, Metrics};
pub use probes::ProbeBounds;
pub use report::{FrrApplyCause, FrrOutcome, FrrResult, ReconcileReport};
pub use telemetry::{spawn_update_clock, Telemetry};
