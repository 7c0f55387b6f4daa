//! The order of a plan: its steps sorted by [`Group`] (O1, O2, O4), by
//! the ranks of the object kinds inside a group and by the class order of
//! leftovers (O3), and the check of a sequence of steps against O1–O4.

use obgp_netmodel::{Class, IpNet};

use super::{Group, Plan, Planner, Step};
use crate::op::Op;

/// Ranks inside a group: the order of object kinds.
pub(super) mod rank {
    pub const LINK_VRF: u8 = 0;
    pub const LINK_OTHER: u8 = 1;
    pub const LINK_EXISTING: u8 = 2;
    pub const LINK_VLAN: u8 = 3;
    /// After the master of the port is set.
    pub const BRIDGE_PORT: u8 = 4;
    /// After the veth end exists.
    pub const OVS_PORT: u8 = 5;
    /// After the port it pins a MAC on.
    pub const FDB: u8 = 5;
    pub const FRR: u8 = 6;
    pub const RT_TABLES: u8 = 7;
    pub const SYSCTL: u8 = 8;
    pub const ADDRESS: u8 = 9;
    pub const RULE: u8 = 10;
    /// A Linux bridge's static FDB entry: added before the neighbour of
    /// its MAC, deleted after it (`plan::bridge_fdb` says why).
    pub const BRIDGE_FDB: u8 = 10;
    pub const NEIGHBOUR: u8 = 11;
    pub const ROUTE: u8 = 12;
    pub const BRIDGE_FDB_DEL: u8 = 12;
    pub const PROXY: u8 = 13;
    pub const FLOW: u8 = 14;
    pub const LINK_DEL: u8 = 15;
}

/// O3: gateway IPs, then subnets, then LBs, then everything else; unknown last.
fn class_rank(c: Option<Class>) -> u8 {
    match c {
        Some(Class::Gateway) => 0,
        Some(Class::Subnet) => 1,
        Some(Class::Lb) => 2,
        Some(Class::Fip) => 3,
        Some(Class::Vm) => 4,
        Some(Class::TenantVm) => 5,
        Some(Class::Base) => 6,
        None => 7,
    }
}

impl Planner<'_> {
    /// Sorts the steps into their groups, ranks and class order.
    pub(super) fn finish(self) -> Plan {
        let mut steps = self.steps;
        // Stable: equal keys keep the order they were planned in.
        steps.sort_by_key(|(rank, s)| {
            let by_class = matches!(s.group, Group::Withdraw | Group::Unwire);
            let class = if by_class { class_rank(s.class) } else { 0 };
            // Device deletes come after every other cleanup, and FRR's
            // removals after them (FRR refuses to delete an active VRF).
            let last = match s.op {
                Op::DelLink { .. } => 1,
                Op::RemoveFrr { .. } => 2,
                _ => 0,
            };
            // A route through a gateway after the on-link routes: the
            // kernel refuses a next hop it cannot reach on the device
            // (the stretched-L2 tenant subnets behind their provider subnet).
            let via = matches!(&s.op, Op::ReplaceRoute { route, .. } if route.via.is_some());
            (s.group, last, class, *rank, via)
        });
        Plan {
            steps: steps.into_iter().map(|(_, s)| s).collect(),
            skipped: self.skipped,
            tables: self.tables,
            warnings: self.warnings,
        }
    }
}

/// Checks a sequence of planned steps against O1–O4 and returns one line per
/// violation (empty when the order is right).
///
/// - O1: an announcement comes after every wiring op with an overlapping
///   destination;
/// - O2: a withdrawal comes before every unwiring op with an overlapping
///   destination;
/// - O3: withdrawals, and unwiring ops, go gateway, subnet, LB, then the rest;
/// - O4: no add after the first delete.
pub fn order_violations(steps: &[Step]) -> Vec<String> {
    let mut out = Vec::new();
    let overlap = |a: Option<IpNet>, b: Option<IpNet>| match (a, b) {
        (Some(a), Some(b)) => a.contains(&b) || b.contains(&a),
        _ => false,
    };
    let mut first_delete = None;
    for (i, s) in steps.iter().enumerate() {
        if !s.op.is_add() {
            first_delete.get_or_insert(i);
        } else if let Some(d) = first_delete {
            out.push(format!(
                "O4: '{}' (#{i}) comes after the delete '{}' (#{d})",
                s.op, steps[d].op
            ));
        }
        match s.group {
            Group::Announce => {
                for (j, w) in steps.iter().enumerate().skip(i + 1) {
                    if w.group == Group::Wire && overlap(w.op.subject(), s.op.subject()) {
                        out.push(format!(
                            "O1: announcement '{}' (#{i}) before its wiring '{}' (#{j})",
                            s.op, w.op
                        ));
                    }
                }
            }
            Group::Unwire => {
                for (j, w) in steps.iter().enumerate().skip(i + 1) {
                    if w.group == Group::Withdraw && overlap(w.op.subject(), s.op.subject()) {
                        out.push(format!(
                            "O2: unwiring '{}' (#{i}) before the withdrawal '{}' (#{j})",
                            s.op, w.op
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    for g in [Group::Withdraw, Group::Unwire] {
        let ranks: Vec<(usize, u8)> = steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.group == g && !matches!(s.op, Op::DelLink { .. }))
            .map(|(i, s)| (i, class_rank(s.class)))
            .collect();
        for w in ranks.windows(2) {
            if w[1].1 < w[0].1 {
                out.push(format!(
                    "O3: '{}' (#{}, {:?}) after '{}' (#{}, {:?})",
                    steps[w[1].0].op,
                    w[1].0,
                    steps[w[1].0].class,
                    steps[w[0].0].op,
                    w[0].0,
                    steps[w[0].0].class
                ));
            }
        }
    }
    out
}
