//! Routing tables: each bridge's rt_tables number, reused or allocated, and
//! the tables the desired routes and rules name.

use std::collections::BTreeSet;

use obgp_netmodel::{Class, DesiredNode, DevName, Route, RouteType, TableRef};

use super::order::rank;
use super::Group;
use super::{PlanError, Planner};
use crate::op::Op;

/// Lowest and highest table number the agent allocates for a bridge.
pub const TABLE_MIN: u32 = 1;
pub const TABLE_MAX: u32 = 252;

/// The tables the desired routes and rules name, each run of the same
/// table once (routes are sorted by table and rules mostly name one); a
/// table may still come more than once. It walks every route and rule:
/// the full plan does anyway. For the numbered tables alone, without the
/// walk, see [`numbered_tables`].
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

/// The numbered tables (`TableRef::Id`) the desired routes and rules name.
/// Routes are ordered by table first, numbered before bridge-named, so
/// each table costs one lookup instead of a walk over its routes: every
/// reconcile reads these tables, and at 50k ports the VRF table alone
/// holds ~7k announcement routes.
pub fn numbered_tables(d: &DesiredNode) -> BTreeSet<u32> {
    let first_route_of = |n: u32| Route {
        table: TableRef::Id(n),
        v6: false,
        dst: None,
        dev: None,
        via: None,
        proto: 0,
        scope: 0,
        kind: RouteType::Unicast,
        metric: None,
    };
    let mut out = BTreeSet::new();
    let mut from = first_route_of(0);
    while let Some((route, _)) = d.routes.range(&from..).next() {
        let TableRef::Id(n) = route.table else { break };
        out.insert(n);
        let Some(next) = n.checked_add(1) else { break };
        from = first_route_of(next);
    }
    // Rules are ordered by destination: walked (one per exposed IP, and
    // far fewer than the routes).
    out.extend(d.rules.keys().filter_map(|r| match r.table {
        TableRef::Id(n) => Some(n),
        TableRef::Bridge(_) => None,
    }));
    out
}

impl Planner<'_> {
    pub(super) fn table_name(&self, table: u32) -> Option<String> {
        if let Some((b, _)) = self.tables.iter().find(|(_, t)| **t == table) {
            return Some(b.to_string());
        }
        self.actual.rt_tables.name_of(table).map(|n| n.into_owned())
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
    /// number in 1–252 that rt_tables does not take ([`RtTables::taken`])
    /// and that is not `bgp_vrf_table_id` or a VNI.
    ///
    /// [`RtTables::taken`]: crate::actual::RtTables::taken
    pub(super) fn resolve_bridges(&mut self, bridges: BTreeSet<DevName>) -> Result<(), PlanError> {
        let d = self.desired;
        // Every number any line names, in either notation, and every number
        // of a line the parser did not understand: never the agent's to take.
        let mut used: BTreeSet<u32> = self.actual.rt_tables.taken().clone();
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

    #[test]
    fn numbered_tables_are_those_table_refs_names_by_number() {
        let br = |name: &str| TableRef::Bridge(DevName::new(name).unwrap());
        let mut d = DesiredNode::default();
        let tables = [
            TableRef::Id(0),
            TableRef::Id(10),
            TableRef::Id(11),
            TableRef::Id(u32::MAX),
            br("br-ex"),
            br("br-vlan"),
        ];
        for (i, table) in tables.into_iter().enumerate() {
            for j in 0..4u8 {
                let route = Route {
                    table: table.clone(),
                    v6: j % 2 == 1,
                    dst: Some(format!("10.{i}.{j}.0/24").parse().unwrap()),
                    dev: Some(DevName::new("bgp-nic").unwrap()),
                    via: None,
                    proto: 44,
                    scope: 253,
                    kind: RouteType::Unicast,
                    metric: Some(u32::from(j)),
                };
                d.routes.insert(route, Class::Vm);
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
        let by_walk: BTreeSet<u32> = table_refs(&d)
            .filter_map(|t| match t {
                TableRef::Id(n) => Some(*n),
                TableRef::Bridge(_) => None,
            })
            .collect();
        assert_eq!(numbered_tables(&d), by_walk);
        assert_eq!(by_walk, [0, 5, 10, 11, u32::MAX].into());
        assert!(numbered_tables(&DesiredNode::default()).is_empty());
    }
}
