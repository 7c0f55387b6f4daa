//! Rules: desired rules into the bridge tables the kernel lacks, and the
//! kernel's rules into those tables that nothing wants.

use std::collections::{BTreeSet, HashSet};

use obgp_netmodel::hash::FastHash;
use obgp_netmodel::{Class, IpNet};

use super::order::{rank, Group};
use super::Planner;
use crate::actual::KernelRule;
use crate::op::Op;

/// A desired rule with its table resolved: `(v6, dst, table, priority, class)`.
pub(super) type WantRule = (bool, IpNet, u32, Option<u32>, Class);

impl Planner<'_> {
    pub(super) fn desired_rules(&self) -> Vec<(bool, IpNet, u32, Option<u32>, Class)> {
        self.desired
            .rules
            .iter()
            .map(|(r, c)| {
                let dst = r.dst.trunc();
                (
                    matches!(dst, IpNet::V6(_)),
                    dst,
                    self.resolve(&r.table),
                    r.priority,
                    *c,
                )
            })
            .collect()
    }

    pub(super) fn rules(&mut self) {
        // Any priority satisfies a rule that names none: index the kernel's
        // rules by what must match (a priority, when given, is a tree lookup).
        let have: HashSet<(bool, IpNet, u32), FastHash> = self
            .actual
            .rules
            .iter()
            .filter_map(|k| Some((k.v6, k.dst?, k.table)))
            .collect();
        for i in 0..self.want_rules.len() {
            let (v6, dst, table, prio, class) = self.want_rules[i];
            let present = match prio {
                None => have.contains(&(v6, dst, table)),
                Some(priority) => self.actual.rules.contains(&KernelRule {
                    v6,
                    priority,
                    dst: Some(dst),
                    table,
                }),
            };
            if present {
                continue;
            }
            let op = Op::AddRule {
                v6,
                dst,
                table,
                table_name: self.table_name(table),
                priority: prio,
            };
            self.push(Self::wiring_group(class), rank::RULE, Some(class), op);
        }
    }

    /// Unwiring: rules into the bridge tables. A desired rule without a
    /// priority keeps a kernel rule of any priority.
    pub(super) fn rule_leftovers(&mut self, owned_tables: &BTreeSet<u32>) {
        let a = self.actual;
        let mut any_priority: HashSet<(bool, IpNet, u32), FastHash> = HashSet::default();
        let mut this_priority: HashSet<(bool, IpNet, u32, u32), FastHash> = HashSet::default();
        for &(v6, dst, table, prio, _) in &self.want_rules {
            match prio {
                None => any_priority.insert((v6, dst, table)),
                Some(p) => this_priority.insert((v6, dst, table, p)),
            };
        }
        for k in &a.rules {
            if !owned_tables.contains(&k.table) {
                continue;
            }
            let Some(dst) = k.dst else {
                continue;
            };
            let wanted = any_priority.contains(&(k.v6, dst, k.table))
                || this_priority.contains(&(k.v6, dst, k.table, k.priority));
            if !wanted {
                let op = Op::DelRule {
                    table_name: self.table_name(k.table),
                    rule: k.clone(),
                };
                self.leftover(Group::Unwire, rank::RULE, op);
            }
        }
    }
}
