//! What the single writer did with a plan, counted into the reconcile's
//! report (the log line, the metrics, `/status`).

use std::collections::HashSet;

use obgp_plan::{ApplyReport, Op, Plan};

use super::node_side::{object_kind, op_kind};
use super::ReconcileReport;

/// Counts what the writer did with `plan` into `report` (ops applied per
/// kind, drift repairs: an op done that the previous reconcile did not
/// plan, when `planned_before` says repairs count; failures; held-back
/// announcements) and returns the ops left undone: not started, failed,
/// held back, and every command op (its outcome comes from the lane).
pub(super) fn account_applied(
    plan: &Plan,
    applied: &ApplyReport,
    planned_before: Option<&HashSet<String>>,
    report: &mut ReconcileReport,
) -> Vec<Op> {
    report.not_started = applied.not_started;
    let started = plan.steps.len() - applied.not_started;
    let mut undone: Vec<Op> = plan.steps[started..].iter().map(|s| s.op.clone()).collect();
    for step in &plan.steps[..started] {
        let done = !applied.failed.iter().any(|(op, _)| op == &step.op)
            && !applied.held_back.contains(&step.op);
        if !done || step.op.runs_a_command() {
            undone.push(step.op.clone());
        }
        let repair = planned_before.is_some_and(|before| !before.contains(&step.op.to_string()));
        if done && repair {
            *report
                .drift_repairs
                .entry(object_kind(&step.op))
                .or_default() += 1;
        }
        if !step.op.runs_a_command() && done {
            *report.applied.entry(op_kind(&step.op)).or_default() += 1;
        }
    }
    report
        .failed
        .extend(applied.failed.iter().map(|(op, e)| format!("{op}: {e}")));
    for (op, _) in &applied.failed {
        *report.failed_kinds.entry(op_kind(op)).or_default() += 1;
    }
    report.held_back = applied.held_back.len();
    undone
}
