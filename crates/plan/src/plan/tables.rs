//! Routing tables: each bridge's rt_tables number, reused or allocated, and
//! the tables the desired routes and rules name.

use std::collections::BTreeSet;

use obgp_netmodel::{Class, DesiredNode, DevName, TableRef};

use super::order::{rank, Group};
use super::{PlanError, Planner};
use crate::op::Op;

/// Lowest and highest table number the agent allocates for a bridge.
pub const TABLE_MIN: u32 = 1;
pub const TABLE_MAX: u32 = 252;

/// The tables the desired routes and rules name, each run of the same
/// table once: routes are sorted by table and rules mostly name one, so
/// this looks at a few entries per table instead of thousands per
/// reconcile. A table may still come more than once.
pub fn table_refs(d: &DesiredNode) -> impl Iterator<Item = &TableRef> {
    let all = d
        .routes
        .keys()
        .map(|r| &r.table)
        .chain(d.rules.keys().map(|r| &r.table));
    let mut last = None;
    all.filter(move |t| {
        let repeat = last == Some(*t);
        last = Some(*t);
        !repeat
    })
}

impl Planner<'_> {
    pub(super) fn table_name(&self, table: u32) -> Option<String> {
        if let Some((b, _)) = self.tables.iter().find(|(_, t)| **t == table) {
            return Some(b.to_string());
        }
        self.actual.rt_tables.name_of(table).map(String::from)
    }

    pub(super) fn resolve(&self, t: &TableRef) -> u32 {
        match t {
            TableRef::Id(n) => *n,
            // Every bridge named anywhere was resolved in `resolve_tables`.
            TableRef::Bridge(b) => self.tables[b],
        }
    }

    /// The table number `t` resolved to, if it was (see
    /// [`Self::resolve_bridges`]).
    pub(super) fn try_resolve(&self, t: &TableRef) -> Option<u32> {
        match t {
            TableRef::Id(n) => Some(*n),
            TableRef::Bridge(b) => self.tables.get(b).copied(),
        }
    }

    /// Resolves the tables of the mapped bridges and of every bridge the
    /// desired routes and rules name.
    pub(super) fn resolve_tables(&mut self) -> Result<(), PlanError> {
        let d = self.desired;
        let mut bridges: BTreeSet<DevName> = d.bridge_tables.clone();
        for t in table_refs(d) {
            if let TableRef::Bridge(b) = t {
                if !bridges.contains(b) {
                    bridges.insert(b.clone());
                }
            }
        }
        self.resolve_bridges(bridges)
    }

    /// Reuses each bridge's rt_tables entry, else allocates the smallest free
    /// number in 1–252 that is neither in rt_tables nor `bgp_vrf_table_id`.
    pub(super) fn resolve_bridges(&mut self, bridges: BTreeSet<DevName>) -> Result<(), PlanError> {
        let d = self.desired;
        let mut used: BTreeSet<u32> = self
            .actual
            .rt_tables
            .entries()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        // The EVPN modes have no bgp-vrf: their VRF tables are the VNIs.
        if d.evpn.is_none() {
            used.insert(d.vrf_table);
            if let Some(name) = self.actual.rt_tables.name_of(d.vrf_table) {
                // The agent never names the VRF's table; whoever did uses it too.
                self.warnings.push(format!(
                    "/etc/iproute2/rt_tables names table {} {name:?}, which is bgp_vrf_table_id: the VRF's routes share that table",
                    d.vrf_table
                ));
            }
        }
        for vni in &d.evpn_vnis {
            used.insert(*vni);
            if let Some(name) = self.actual.rt_tables.name_of(*vni) {
                self.warnings.push(format!(
                    "/etc/iproute2/rt_tables names table {vni} {name:?}, which is VNI {vni}'s VRF table: the VRF's routes share that table"
                ));
            }
        }
        for b in bridges {
            if let Some(n) = self.actual.rt_tables.lookup(b.as_str()) {
                self.tables.insert(b, n);
                continue;
            }
            let Some(n) = (TABLE_MIN..=TABLE_MAX).find(|n| !used.contains(n)) else {
                return Err(PlanError::TablesExhausted { bridge: b });
            };
            used.insert(n);
            self.tables.insert(b.clone(), n);
            self.push(
                Group::Base,
                rank::RT_TABLES,
                Some(Class::Base),
                Op::AddRtTable { number: n, name: b },
            );
        }
        Ok(())
    }

    /// The table numbers of the mapped bridges: the agent's to clean up.
    pub(super) fn owned_tables(&self) -> BTreeSet<u32> {
        self.desired
            .bridge_tables
            .iter()
            .filter_map(|b| self.tables.get(b).copied())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use obgp_netmodel::Rule;

    use super::*;

    #[test]
    fn table_refs_name_every_table_of_the_routes_and_rules() {
        let br = || TableRef::Bridge(DevName::new("br-ex").unwrap());
        let mut d = DesiredNode::default();
        for (i, table) in [TableRef::Id(200), br(), TableRef::Id(10)]
            .into_iter()
            .enumerate()
        {
            for j in 0..3u8 {
                let rule = Rule {
                    dst: format!("10.{i}.{j}.0/24").parse().unwrap(),
                    table: table.clone(),
                    priority: None,
                };
                d.rules.insert(rule, Class::Vm);
            }
        }
        d.rules.insert(
            Rule {
                dst: "10.9.9.9/32".parse().unwrap(),
                table: TableRef::Id(5),
                priority: None,
            },
            Class::Vm,
        );
        let got: BTreeSet<&TableRef> = table_refs(&d).collect();
        let want = [TableRef::Id(5), TableRef::Id(10), TableRef::Id(200), br()];
        assert_eq!(got, want.iter().collect());
        assert!(
            table_refs(&d).count() < d.rules.len(),
            "runs looked at once"
        );
        assert_eq!(table_refs(&DesiredNode::default()).count(), 0);
    }
}
