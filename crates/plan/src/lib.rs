//! The pure planning vocabulary: what a node holds ([`actual`]), the writes
//! the agent makes ([`op`]), the planner that diffs desired against actual in
//! the pack's O1–O5 order ([`mod@plan`]), an in-memory simulated node ([`simulated`]),
//! the comparison of two observed nodes ([`compare`]), what a node holds of
//! one prefix ([`holds`]), and the single writer
//! that runs a plan through any [`NodeIo`] ([`apply`]).
//!
//! Nothing here touches the system: the kernel, OVS and FRR side is
//! obgp-node.

pub mod actual;
pub mod apply;
pub mod compare;
pub mod holds;
pub mod op;
pub mod plan;
pub mod shared;
pub mod simulated;

pub use actual::{
    Actual, ActualLink, FrrEvpnVrf, FrrState, KernelRoute, KernelRule, OfFlow, RtTables, VxlanInfo,
};
pub use apply::{apply_plan, apply_plan_until, Applied, ApplyReport, NodeIo};
pub use op::Op;
pub use plan::{
    order_violations, plan, plan_after, plan_changes, Coverage, Group, Plan, PlanError, Step,
};
pub use shared::SharedSet;
pub use simulated::SimulatedNode;
