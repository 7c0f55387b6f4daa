//! The node layer: what the node holds ([`actual`]), the writes the agent
//! makes ([`op`]), the pure planner that diffs desired against actual in the
//! pack's O1–O5 order ([`plan`]), an in-memory model node ([`model`]), and the
//! real-kernel observer and applier ([`kernel`]), which reads links,
//! addresses, rules, routes and neighbours from a notification-fed
//! [`mirror`].
//!
//! Pure core, imperative shell: `plan` and `model` never touch the system.

pub mod actual;
pub mod command;
pub mod compare;
pub mod io;
pub mod kernel;
pub mod mirror;
pub mod model;
pub mod op;
pub mod plan;
pub mod shared;

pub use actual::{Actual, ActualLink, KernelRoute, KernelRule, OfFlow, RtTables};
pub use io::{
    apply_plan, apply_plan_until, pending, reconcile, ApplyReport, NodeIo, ReconcileError,
};
pub use kernel::{DriftProbe, KernelConfig, KernelNode, Scope};
pub use model::ModelNode;
pub use op::Op;
pub use plan::{order_violations, plan, plan_after, Group, Plan, PlanError, Step};
pub use shared::SharedSet;
