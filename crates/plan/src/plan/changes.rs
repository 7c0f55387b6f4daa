//! The planner of a patched desired state: [`plan_changes`] judges only
//! the node objects whose keys the patches changed since the previous
//! (settled) desired state, each by the full planner's per-kind rules, so
//! that on a node holding the previous desired state it plans exactly what
//! [`plan_after`] plans, at a cost that follows the change, not the node.
//!
//! Per changed key, looked up in the sorted desired and kernel sets:
//! - an address, a route (by its kernel key: table, family, destination,
//!   metric) or a neighbour (by device and destination) that is desired
//!   and missing is added; the kernel's one that is not desired is removed
//!   if it is the agent's (withdrawn from the announce device, unwired
//!   from a bridge table or provider device, with the same evidence);
//! - a rule by destination (a desired rule without a priority is held by
//!   a kernel rule of any priority): the kernel's rules to a destination
//!   are a range of the observed set, which orders them by destination
//!   before priority.
//!
//! The kinds with a few objects on a node (links, FRR, sysctls, flows) are
//! planned whole, as [`plan_after`] plans them: they cost little, and so an
//! event's plan still repairs them, retries their failures and writes FRR
//! once it is read. The many (addresses, rules, routes, neighbours) are
//! judged at the changed keys only: drift at other keys waits for a full
//! plan (start-up, timers, retries, drift, anything not an OVN event).
//! The full plan is made instead when a change reaches what the changed
//! keys alone cannot tell ([`Coverage::Full`] says which), and when a
//! device that holds objects is created (all of them are then planned).

use std::collections::{BTreeSet, HashSet};
use std::net::IpAddr;

use obgp_netmodel::hash::FastHash;
use obgp_netmodel::{
    DesiredNode, DevName, IpNet, LinkKind, Neighbour, NodeChanges, Rule, TableRef,
};

use super::neighbours::has_neighbour_at;
use super::previous::{parts, route_at};
use super::routes::routes_with_key;
use super::rules::{RuleDst, WantRule, WantedRules};
use super::{host_prefix, plan_after, Plan, PlanError, Planner};
use crate::actual::{Actual, KernelRoute, KernelRule};
use crate::holds::kernel_route;

/// How [`plan_changes`] planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// Only the changed keys.
    Changes,
    /// The whole node ([`plan_after`]), and why.
    Full(&'static str),
}

/// Plans the `changes` from `previous` to `desired` against `actual`, or
/// the whole node where the changes alone cannot tell (see the module
/// doc). On a node that holds `previous`, the steps, their order and the
/// skips are those of [`plan_after`]; the plan's `tables` list only the
/// tables it resolved.
pub fn plan_changes(
    desired: &DesiredNode,
    previous: Option<&DesiredNode>,
    actual: &Actual,
    changes: &NodeChanges,
) -> Result<(Plan, Coverage), PlanError> {
    let mut p = Planner::new(desired, previous, actual);
    match p.changes(changes) {
        Ok(()) => Ok((p.finish(), Coverage::Changes)),
        Err(Stop::Plan(e)) => Err(e),
        Err(Stop::Full(why)) => Ok((plan_after(desired, previous, actual)?, Coverage::Full(why))),
    }
}

/// Why the incremental pass stopped.
enum Stop {
    /// Only the full plan is right, for this reason.
    Full(&'static str),
    /// What the full plan would fail with too.
    Plan(PlanError),
}

impl From<PlanError> for Stop {
    fn from(e: PlanError) -> Stop {
        Stop::Plan(e)
    }
}

impl Planner<'_> {
    /// The incremental pass: the same kinds, in the same order, as
    /// [`plan_after`], on the changed keys.
    fn changes(&mut self, c: &NodeChanges) -> Result<(), Stop> {
        self.judgeable(c)?;
        // The few-object kinds, whole (the EVPN ones find nothing here).
        self.links();
        // A device created now needs every object on it; a VRF holds none
        // of the agent's (they are on its enslaved device).
        let d = self.desired;
        let holds_objects = |name: &DevName| {
            d.links
                .iter()
                .any(|l| &l.name == name && !matches!(l.kind, LinkKind::Vrf { .. }))
        };
        if self.created.iter().any(holds_objects) {
            return Err(Stop::Full("a device is created"));
        }
        self.bridge_ports();
        self.ovs_ports();
        self.fdb();
        self.frr();
        self.sysctls();
        let owned_tables = self.owned_tables();
        let evpn_tables = self.evpn_tables();
        let kernel_rules = kernel_rules_at(self.actual, c);
        self.changed_adds(c, &kernel_rules, &evpn_tables);
        self.flows();
        self.changed_leftovers(c, &kernel_rules, &owned_tables, &evpn_tables)?;
        self.flow_leftovers();
        self.link_leftovers();
        Ok(())
    }

    /// Whether the changed keys alone tell what the full plan would do
    /// (the module doc says when not); resolves the tables they name.
    fn judgeable(&mut self, c: &NodeChanges) -> Result<(), Stop> {
        let (d, a) = (self.desired, self.actual);
        if self.previous.is_none() {
            return Err(Stop::Full("no previous desired state"));
        }
        if d.evpn.is_some() {
            return Err(Stop::Full("an EVPN mode"));
        }
        if c.proxy_neighbours {
            return Err(Stop::Full("the proxy NDP entries changed"));
        }
        // A destination that is not a host can be a subnet's, whose
        // objects other destinations share.
        let hosts = c.addresses.iter().all(|x| host_prefix(&x.net))
            && c.rules.iter().all(|r| host_prefix(&r.dst))
            && c.routes
                .iter()
                .all(|r| r.dst.as_ref().is_some_and(host_prefix));
        if !hosts {
            return Err(Stop::Full("a changed destination is not a host"));
        }
        // In the full plan's order, for the same error.
        self.changed_tables(c)?;
        self.check_device_kinds()?;
        // The full plan may create a missing device, or skip its objects.
        let devices_exist = c
            .addresses
            .iter()
            .filter(|x| d.addresses.contains_key(*x))
            .map(|x| Some(&x.dev))
            .chain(
                c.routes
                    .iter()
                    .filter(|r| d.routes.contains_key(*r))
                    .map(|r| r.dev.as_ref()),
            )
            .chain(
                c.neighbours
                    .iter()
                    .filter(|n| d.neighbours.contains_key(*n))
                    .map(|n| Some(&n.dev)),
            )
            .flatten()
            .all(|dev| a.links.contains_key(dev));
        if !devices_exist {
            return Err(Stop::Full("the device of a changed object is missing"));
        }
        Ok(())
    }

    /// The desired objects of the changed keys that the kernel lacks, kind
    /// by kind. `kernel_rules`: the kernel's rules at the changed
    /// destinations.
    fn changed_adds(
        &mut self,
        c: &NodeChanges,
        kernel_rules: &[&KernelRule],
        evpn_tables: &BTreeSet<u32>,
    ) {
        let (d, a) = (self.desired, self.actual);
        for x in &c.addresses {
            if let Some(class) = d.addresses.get(x) {
                if !a.addresses.contains(x) {
                    self.address_add(x, *class);
                }
            }
        }
        let have: HashSet<RuleDst, FastHash> = kernel_rules
            .iter()
            .filter_map(|k| Some((k.v6, k.dst?, k.table)))
            .collect();
        for r in &c.rules {
            if let Some(class) = d.rules.get(r) {
                let w = self.want_rule(r, *class);
                if !self.rule_held(&have, &w) {
                    self.rule_add(w);
                }
            }
        }
        for r in &c.routes {
            if let Some(class) = d.routes.get(r) {
                let k = kernel_route(r, self.resolve(&r.table));
                if !a.routes.contains(&k) {
                    self.route_add(k, *class, evpn_tables);
                }
            }
        }
        for n in &c.neighbours {
            if let Some(class) = d.neighbours.get(n) {
                if !a.neighbours.contains(n) {
                    self.neighbour_add(n, *class);
                }
            }
        }
    }

    /// The kernel's objects at the changed keys that nothing wants and
    /// are the agent's, kind by kind, each in the kernel's order.
    fn changed_leftovers(
        &mut self,
        c: &NodeChanges,
        kernel_rules: &[&KernelRule],
        owned_tables: &BTreeSet<u32>,
        evpn_tables: &BTreeSet<u32>,
    ) -> Result<(), Stop> {
        let (d, a) = (self.desired, self.actual);
        for x in &c.addresses {
            if !d.addresses.contains_key(x) && a.addresses.contains(x) && self.address_withdrawn(x)
            {
                self.address_leftover(x);
            }
        }
        let mut routes: BTreeSet<&KernelRoute> = BTreeSet::new();
        for r in &c.routes {
            let key = kernel_route(r, self.resolve(&r.table)).key();
            routes.extend(routes_with_key(&a.routes, key));
        }
        for k in routes {
            if !self.route_desired(k)? {
                self.route_leftover(k, owned_tables, evpn_tables);
            }
        }
        let dsts: BTreeSet<RuleDstNoTable> = c.rules.iter().map(|r| rule_dst(&r.dst)).collect();
        let wanted = WantedRules::new(&self.desired_rules_at(&dsts)?);
        for k in kernel_rules {
            if k.dst.is_some_and(|dst| dsts.contains(&(k.v6, dst))) {
                self.rule_leftover(k, owned_tables, &wanted);
            }
        }
        let mut neighbours: BTreeSet<&Neighbour> = BTreeSet::new();
        for n in &c.neighbours {
            neighbours.extend(neighbours_at(&a.neighbours, n));
        }
        let mut provider: Option<BTreeSet<DevName>> = None;
        for n in neighbours {
            if has_neighbour_at(&d.neighbours, n) {
                continue;
            }
            let provider = provider.get_or_insert_with(|| self.provider_devices());
            if !provider.contains(&n.dev) {
                continue;
            }
            let evidence = |ip: IpAddr| {
                let dst = IpNet::from(ip);
                let ruled = kernel_rules
                    .iter()
                    .any(|k| k.dst == Some(dst) && owned_tables.contains(&k.table));
                ruled
                    || owned_tables.iter().any(|t| {
                        [false, true]
                            .into_iter()
                            .any(|v6| routes_at(&a.routes, *t, v6, dst))
                    })
            };
            if self.neighbour_stale(n, evidence) {
                self.neighbour_leftover(n.clone());
            }
        }
        Ok(())
    }

    /// Resolves the mapped bridges' tables and those the changed rules and
    /// routes name, all from rt_tables: a bridge without an entry would
    /// have the full plan allocate one, in the order of every bridge the
    /// desired state names.
    fn changed_tables(&mut self, c: &NodeChanges) -> Result<(), Stop> {
        let mut bridges: BTreeSet<DevName> = self.desired.bridge_tables.clone();
        let named = (c.rules.iter().map(|r| &r.table)).chain(c.routes.iter().map(|r| &r.table));
        for t in named {
            if let TableRef::Bridge(b) = t {
                bridges.insert(b.clone());
            }
        }
        let rt = &self.actual.rt_tables;
        if !bridges.iter().all(|b| rt.lookup(b.as_str()).is_some()) {
            return Err(Stop::Full("a bridge has no rt_tables entry yet"));
        }
        Ok(self.resolve_bridges(bridges)?)
    }

    /// The desired rules to the destinations `dsts` (hosts), their tables
    /// resolved; a table that was not means the full plan.
    fn desired_rules_at(&self, dsts: &BTreeSet<RuleDstNoTable>) -> Result<Vec<WantRule>, Stop> {
        let mut out = Vec::new();
        for &(_, dst) in dsts {
            let from = Rule {
                dst,
                table: TableRef::Id(0),
                priority: None,
            };
            for (r, class) in self.desired.rules.range(from..) {
                if r.dst != dst {
                    break;
                }
                if self.try_resolve(&r.table).is_none() {
                    return Err(unresolved());
                }
                out.push(self.want_rule(r, *class));
            }
        }
        Ok(out)
    }

    /// Whether a desired route has the kernel key of `k` (a host
    /// destination): looked up in each table the desired routes name.
    fn route_desired(&self, k: &KernelRoute) -> Result<bool, Stop> {
        let d = &self.desired.routes;
        let past = |t: &TableRef| route_at(t.clone(), true, top_host());
        for table in parts(d, |r| r.table.clone(), past) {
            let Some(number) = self.try_resolve(&table) else {
                return Err(unresolved());
            };
            if number != k.table {
                continue;
            }
            let Some(dst) = k.dst else { continue };
            let same = d
                .range(route_at(table.clone(), k.v6, dst)..)
                .take_while(|(r, _)| r.table == table && r.v6 == k.v6 && r.dst == Some(dst))
                .any(|(r, _)| kernel_route(r, number).key() == k.key());
            if same {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// A rule destination with its family: `(v6, dst)`.
type RuleDstNoTable = (bool, IpNet);

fn rule_dst(dst: &IpNet) -> RuleDstNoTable {
    let dst = dst.trunc();
    (matches!(dst, IpNet::V6(_)), dst)
}

/// The kernel's rules whose destination is one a changed rule or
/// neighbour has, in the kernel rules' order: a range of them each
/// ([`KernelRule`] orders by destination before priority).
fn kernel_rules_at<'a>(actual: &'a Actual, c: &NodeChanges) -> Vec<&'a KernelRule> {
    let mut dsts: Vec<RuleDstNoTable> = c.rules.iter().map(|r| rule_dst(&r.dst)).collect();
    dsts.extend(c.neighbours.iter().map(|n| rule_dst(&IpNet::from(n.dst))));
    dsts.sort_unstable();
    dsts.dedup();
    let mut out = Vec::new();
    for (v6, dst) in dsts {
        let from = KernelRule {
            v6,
            dst: Some(dst),
            table: 0,
            priority: 0,
        };
        out.extend(
            actual
                .rules
                .range(from..)
                .take_while(|k| k.v6 == v6 && k.dst == Some(dst)),
        );
    }
    out
}

fn unresolved() -> Stop {
    Stop::Full("a desired object names a bridge table that was not resolved")
}

fn top_host() -> IpNet {
    IpNet::from(IpAddr::from([0xffff_u16; 8]))
}

/// Whether the kernel has a route in `table`, family `v6`, to `dst`, of
/// any metric.
fn routes_at(routes: &BTreeSet<KernelRoute>, table: u32, v6: bool, dst: IpNet) -> bool {
    let from = KernelRoute {
        table,
        v6,
        dst: Some(dst),
        metric: None,
        dev: None,
        via: None,
        proto: 0,
        scope: 0,
        kind: obgp_netmodel::RouteType::Unicast,
    };
    routes
        .range(from..)
        .next()
        .is_some_and(|r| r.table == table && r.v6 == v6 && r.dst == Some(dst))
}

/// The neighbours of `set` on `n`'s device and destination, whatever the MAC.
fn neighbours_at<'s>(
    set: &'s BTreeSet<Neighbour>,
    n: &Neighbour,
) -> impl Iterator<Item = &'s Neighbour> {
    let at = |mac: u8| Neighbour {
        dev: n.dev.clone(),
        dst: n.dst,
        lladdr: obgp_netmodel::MacAddr([mac; 6]),
    };
    set.range(at(0)..=at(0xff))
}
