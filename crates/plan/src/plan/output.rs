//! The planner's output: the ordered [`Plan`] of [`Step`]s, what it
//! skipped, and the one fatal error.

use std::collections::BTreeMap;
use std::fmt;

use obgp_netmodel::{Class, DevName};
use serde::{Deserialize, Serialize};

use super::order::Group;
use super::tables::{TABLE_MAX, TABLE_MIN};
use crate::op::Op;

/// The one fatal planning error.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("no free routing table number in {TABLE_MIN}-{TABLE_MAX} for bridge {bridge} (every number is in rt_tables or is bgp_vrf_table_id)")]
    TablesExhausted { bridge: DevName },
    /// A device the agent creates exists as another kind of device (for
    /// example `bgp_nic = lo`): it is not the agent's, and planning on it
    /// would enslave or re-address a device of the node.
    #[error("device {name} exists as a {} device, not the {wanted} device the agent creates: it is not the agent's (check bgp_nic and bgp_vrf)", if kind.is_empty() { "physical or loopback" } else { kind.as_str() })]
    ForeignDevice {
        name: DevName,
        kind: String,
        wanted: &'static str,
    },
}

/// One planned op, with what it is for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub group: Group,
    /// The class of the exposure it serves; for leftovers, the class it had in
    /// the previous desired state when known.
    pub class: Option<Class>,
    pub op: Op,
}

/// Something the planner could not plan, and why (it never blocks the rest).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skip {
    pub what: String,
    pub reason: String,
}

/// The ordered diff.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub steps: Vec<Step>,
    pub skipped: Vec<Skip>,
    /// The table number of every bridge table the plan uses.
    pub tables: BTreeMap<DevName, u32>,
    /// What on the node looks wrong but is not the agent's to change (a
    /// routing table shared with another user); logged by the controller.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The ops in execution order.
    pub fn ops(&self) -> impl Iterator<Item = &Op> {
        self.steps.iter().map(|s| &s.op)
    }

    /// How many steps withdraw an announcement.
    pub fn withdrawals(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| s.group == Group::Withdraw)
            .count()
    }

    /// Drops the withdrawals and the unwiring (every delete: the plan puts
    /// them after all adds, O4), keeping the adds; returns how many went.
    /// What is dropped stays on the node until a later plan removes it.
    pub fn hold_removals(&mut self) -> usize {
        let before = self.steps.len();
        self.steps
            .retain(|s| !matches!(s.group, Group::Withdraw | Group::Unwire));
        before - self.steps.len()
    }

    /// Drops the new announcements (an address on the announcement device,
    /// a route in the VRF table) and returns them: for when what routes
    /// them outside the kernel could not be written (`exposing_method =
    /// ovn`: the node-local NB), so nothing is announced without a path
    /// (O1). Wiring, withdrawals and cleanup stay.
    pub fn hold_announcements(&mut self) -> Vec<Op> {
        let (held, kept) = std::mem::take(&mut self.steps)
            .into_iter()
            .partition(|s| s.group == Group::Announce);
        self.steps = kept;
        held.into_iter().map(|s| s.op).collect()
    }
}

impl fmt::Display for Plan {
    /// Grouped, one line per op; skipped items last.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.steps.is_empty() {
            writeln!(f, "nothing to do")?;
        }
        let mut title = None;
        for s in &self.steps {
            if title != Some(s.group.title()) {
                title = Some(s.group.title());
                writeln!(f, "{}:", s.group.title())?;
            }
            writeln!(f, "  {}", s.op)?;
        }
        if !self.skipped.is_empty() {
            writeln!(f, "skipped:")?;
            for s in &self.skipped {
                writeln!(f, "  {}: {}", s.what, s.reason)?;
            }
        }
        if !self.warnings.is_empty() {
            writeln!(f, "warnings:")?;
            for w in &self.warnings {
                writeln!(f, "  {w}")?;
            }
        }
        // What vtysh would be given, line by line (blank lines dropped).
        for op in self.ops() {
            if let Op::ApplyFrr { config } | Op::RemoveFrr { config } = op {
                writeln!(f, "frr text ({op}):")?;
                for line in config.lines().filter(|l| !l.trim().is_empty()) {
                    writeln!(f, "  | {line}")?;
                }
            }
        }
        Ok(())
    }
}
