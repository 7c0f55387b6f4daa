//! Rules: desired rules into the bridge tables the kernel lacks, and the
//! kernel's rules into those tables that nothing wants.

use std::collections::{BTreeSet, HashSet};

use obgp_netmodel::hash::FastHash;
use obgp_netmodel::{Class, IpNet};

use super::order::rank;
use super::Group;
use super::Planner;
use crate::actual::KernelRule;
use crate::op::Op;

/// A desired rule with its table resolved: `(v6, dst, table, priority, class)`.
pub(super) type WantRule = (bool, IpNet, u32, Option<u32>, Class);

/// A rule's identity without its priority: `(v6, dst, table)`.
pub(super) type RuleDst = (bool, IpNet, u32);

/// Desired rules as kernel rules are matched against them: a desired rule
/// without a priority keeps (and is held by) a kernel rule of any
/// priority, the kernel choosing one; with a priority, only that one.
#[derive(Default)]
pub(super) struct WantedRules {
    any_priority: HashSet<RuleDst, FastHash>,
    this_priority: HashSet<(bool, IpNet, u32, u32), FastHash>,
}

impl WantedRules {
    pub(super) fn new<'w>(wants: impl IntoIterator<Item = &'w WantRule>) -> WantedRules {
        let mut out = WantedRules::default();
        for &(v6, dst, table, prio, _) in wants {
            match prio {
                None => out.any_priority.insert((v6, dst, table)),
                Some(p) => out.this_priority.insert((v6, dst, table, p)),
            };
        }
        out
    }

    /// Whether a desired rule keeps the kernel rule `k`.
    pub(super) fn keeps(&self, k: &KernelRule) -> bool {
        let Some(dst) = k.dst else { return false };
        self.any_priority.contains(&(k.v6, dst, k.table))
            || self
                .this_priority
                .contains(&(k.v6, dst, k.table, k.priority))
    }
}

impl Planner<'_> {
    /// `r` with its table resolved (every table the plan names is).
    pub(super) fn want_rule(&self, r: &obgp_netmodel::Rule, class: Class) -> WantRule {
        let dst = r.dst.trunc();
        (
            matches!(dst, IpNet::V6(_)),
            dst,
            self.resolve(&r.table),
            r.priority,
            class,
        )
    }

    pub(super) fn desired_rules(&self) -> Vec<WantRule> {
        self.desired
            .rules
            .iter()
            .map(|(r, c)| self.want_rule(r, *c))
            .collect()
    }

    /// Whether the kernel holds the desired rule `w` (see [`WantedRules`]):
    /// `have` holds the identities of the kernel's rules, all of them or
    /// at least those with `w`'s destination.
    pub(super) fn rule_held(&self, have: &HashSet<RuleDst, FastHash>, w: &WantRule) -> bool {
        let &(v6, dst, table, prio, _) = w;
        match prio {
            None => have.contains(&(v6, dst, table)),
            Some(priority) => self.actual.rules.contains(&KernelRule {
                v6,
                priority,
                dst: Some(dst),
                table,
            }),
        }
    }

    pub(super) fn rules(&mut self) {
        let have: HashSet<RuleDst, FastHash> = self
            .actual
            .rules
            .iter()
            .filter_map(|k| Some((k.v6, k.dst?, k.table)))
            .collect();
        for i in 0..self.want_rules.len() {
            let w = self.want_rules[i];
            if !self.rule_held(&have, &w) {
                self.rule_add(w);
            }
        }
    }

    /// Plans the desired rule `w` the kernel lacks.
    pub(super) fn rule_add(&mut self, w: WantRule) {
        let (v6, dst, table, priority, class) = w;
        let op = Op::AddRule {
            v6,
            dst,
            table,
            table_name: self.table_name(table),
            priority,
        };
        self.push(Self::wiring_group(class), rank::RULE, Some(class), op);
    }

    /// Unwiring: rules into the bridge tables that no desired rule keeps.
    pub(super) fn rule_leftovers(&mut self, owned_tables: &BTreeSet<u32>) {
        let wanted = WantedRules::new(&self.want_rules);
        for k in &self.actual.rules {
            self.rule_leftover(k, owned_tables, &wanted);
        }
    }

    /// Deletes the kernel's rule `k` if it is the agent's (a destination
    /// rule into a bridge table) and no desired rule keeps it.
    pub(super) fn rule_leftover(
        &mut self,
        k: &KernelRule,
        owned_tables: &BTreeSet<u32>,
        wanted: &WantedRules,
    ) {
        if !owned_tables.contains(&k.table) || k.dst.is_none() || wanted.keeps(k) {
            return;
        }
        let op = Op::DelRule {
            table_name: self.table_name(k.table),
            rule: k.clone(),
        };
        self.leftover(Group::Unwire, rank::RULE, op);
    }
}
