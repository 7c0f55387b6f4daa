//! The planner's output: the ordered [`Plan`] of [`Step`]s, each in its
//! [`Group`], and what it skipped.

use std::collections::BTreeMap;
use std::fmt;

use obgp_netmodel::{Class, DevName};
use serde::{Deserialize, Serialize};

use crate::op::Op;

/// Where an op sits in the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    Base,
    /// Wiring of an exposure (before its announcement, O1).
    Wire,
    /// bgp-nic addresses and VRF-table routes: what BGP announces.
    Announce,
    /// Leftover announcements, removed before unwiring (O2).
    Withdraw,
    /// Leftover wiring.
    Unwire,
}

impl Group {
    /// The heading `ovn-bgp-agent plan` prints.
    pub fn title(self) -> &'static str {
        match self {
            Group::Base => "base wiring",
            Group::Wire | Group::Announce => "expose",
            Group::Withdraw => "withdraw",
            Group::Unwire => "cleanup",
        }
    }
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
