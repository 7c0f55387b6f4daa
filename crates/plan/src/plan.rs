//! The planner: `plan(&DesiredNode, &Actual)`, a pure diff ordered by the
//! pack's rules O1–O5 (see docs/node.md and docs/ownership.md).
//!
//! Groups, in this order:
//! 1. base wiring (links, FRR, rt_tables, sysctls, bridge addresses, default
//!    routes, flows): what every exposure needs;
//! 2. wiring (rules, neighbours, bridge-table routes, proxy NDP), then
//!    announcements (bgp-nic addresses, VRF-table routes): O1;
//! 3. withdrawals (leftover bgp-nic addresses and VRF-table routes) before
//! 4. unwiring (leftover rules, bridge-table routes, neighbours, proxy NDP,
//!    flows, VLAN devices): O2; every add comes before every delete: O4;
//!    within 3 and 4, gateway IPs, then subnets, then LBs, then the rest: O3.
//!
//! Only what the ownership rules (O5 and docs/ownership.md) name is ever
//! deleted, and never a route with proto 186 (FRR) or one of the kernel's.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::net::IpAddr;

use obgp_netmodel::{
    Class, DesiredNode, DevName, IpNet, LinkKind, MacAddr, Neighbour, ProxyNeighbour, RouteType,
    TableRef,
};
use serde::{Deserialize, Serialize};

use crate::actual::{Actual, KernelRoute, KernelRule, OfFlow};
use crate::op::Op;
use obgp_netmodel::hash::FastHash;

/// Lowest and highest table number the agent allocates for a bridge.
pub const TABLE_MIN: u32 = 1;
pub const TABLE_MAX: u32 = 252;

/// The one fatal planning error.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("no free routing table number in {TABLE_MIN}-{TABLE_MAX} for bridge {bridge} (every number is in rt_tables or is bgp_vrf_table_id)")]
    TablesExhausted { bridge: DevName },
}

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
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The ops in execution order.
    pub fn ops(&self) -> impl Iterator<Item = &Op> {
        self.steps.iter().map(|s| &s.op)
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
        Ok(())
    }
}

/// Plans the diff from `actual` to `desired`.
pub fn plan(desired: &DesiredNode, actual: &Actual) -> Result<Plan, PlanError> {
    plan_after(desired, None, actual)
}

/// Like [`plan`], with the previous reconcile's desired state: it gives
/// leftovers their class (O3 order) and is evidence for the neighbour and
/// proxy-NDP ownership rule (docs/ownership.md).
pub fn plan_after(
    desired: &DesiredNode,
    previous: Option<&DesiredNode>,
    actual: &Actual,
) -> Result<Plan, PlanError> {
    let mut p = Planner {
        desired,
        previous,
        actual,
        tables: BTreeMap::new(),
        steps: Vec::new(),
        skipped: Vec::new(),
        created: BTreeSet::new(),
        want_rules: Vec::new(),
        want_routes: Vec::new(),
        prev_scans: 0,
        prev_index: None,
        unwanted_on_nic: Vec::new(),
    };
    p.resolve_tables()?;
    p.want_rules = p.desired_rules();
    p.want_routes = p.desired_routes();
    p.links();
    p.frr();
    p.sysctls();
    p.addresses();
    p.rules();
    p.routes();
    p.neighbours();
    p.flows();
    p.leftovers();
    Ok(p.finish())
}

struct Planner<'a> {
    desired: &'a DesiredNode,
    previous: Option<&'a DesiredNode>,
    actual: &'a Actual,
    tables: BTreeMap<DevName, u32>,
    /// (sort rank within the group, step), sorted at the end.
    steps: Vec<(u8, Step)>,
    skipped: Vec<Skip>,
    /// Links this plan creates.
    created: BTreeSet<DevName>,
    /// The desired rules with their tables resolved (in desired order).
    want_rules: Vec<WantRule>,
    /// The desired routes as the kernel would hold them (in desired order).
    want_routes: Vec<(KernelRoute, Class)>,
    /// How many leftovers looked their class up by scanning the previous
    /// desired state, and the index that answers after that.
    prev_scans: usize,
    prev_index: Option<HashMap<IpNet, Class, FastHash>>,
    /// The kernel's host addresses on the announce device that the desired
    /// state lacks, ascending (see [`Planner::addresses`]).
    unwanted_on_nic: Vec<&'a obgp_netmodel::Address>,
}

/// Leftovers whose class is found by scanning the previous desired state
/// before an index of it is built.
const PREV_SCANS: usize = 16;

/// A desired rule with its table resolved: `(v6, dst, table, priority, class)`.
type WantRule = (bool, IpNet, u32, Option<u32>, Class);

/// Walks `items` and the ascending `have` together, pairing each item with
/// whether `have` holds one that `cmp` calls equal. `items` must be ascending
/// in the same order: one pass over both (O(n + m)) instead of a tree lookup
/// per item.
fn flag_present<'h, I, H, F>(
    items: I,
    have: impl IntoIterator<Item = &'h H>,
    cmp: F,
) -> impl Iterator<Item = (I::Item, bool)>
where
    I: IntoIterator,
    H: 'h,
    F: Fn(&I::Item, &H) -> std::cmp::Ordering,
{
    let mut have = have.into_iter().peekable();
    items.into_iter().map(move |item| {
        while let Some(h) = have.peek() {
            match cmp(&item, h) {
                std::cmp::Ordering::Greater => {
                    have.next();
                }
                std::cmp::Ordering::Equal => return (item, true),
                std::cmp::Ordering::Less => break,
            }
        }
        (item, false)
    })
}

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

/// Ranks inside a group: the order of object kinds.
mod rank {
    pub const LINK_VRF: u8 = 0;
    pub const LINK_OTHER: u8 = 1;
    pub const LINK_EXISTING: u8 = 2;
    pub const LINK_VLAN: u8 = 3;
    pub const FRR: u8 = 4;
    pub const RT_TABLES: u8 = 5;
    pub const SYSCTL: u8 = 6;
    pub const ADDRESS: u8 = 7;
    pub const RULE: u8 = 8;
    pub const NEIGHBOUR: u8 = 9;
    pub const ROUTE: u8 = 10;
    pub const PROXY: u8 = 11;
    pub const FLOW: u8 = 12;
    pub const LINK_DEL: u8 = 13;
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

fn host_prefix(n: &IpNet) -> bool {
    n.prefix_len() == n.max_prefix_len()
}

impl<'a> Planner<'a> {
    fn push(&mut self, group: Group, rank: u8, class: Option<Class>, op: Op) {
        self.steps.push((rank, Step { group, class, op }));
    }

    fn skip(&mut self, what: impl fmt::Display, reason: impl Into<String>) {
        self.skipped.push(Skip {
            what: what.to_string(),
            reason: reason.into(),
        });
    }

    fn wiring_group(class: Class) -> Group {
        if class == Class::Base {
            Group::Base
        } else {
            Group::Wire
        }
    }

    /// Whether `dev` exists now or is created by this plan.
    fn will_exist(&self, dev: &DevName) -> bool {
        self.actual.links.contains_key(dev) || self.created.contains(dev)
    }

    fn table_name(&self, table: u32) -> Option<String> {
        if let Some((b, _)) = self.tables.iter().find(|(_, t)| **t == table) {
            return Some(b.to_string());
        }
        self.actual.rt_tables.name_of(table).map(String::from)
    }

    fn resolve(&self, t: &TableRef) -> u32 {
        match t {
            TableRef::Id(n) => *n,
            // Every bridge named anywhere was resolved in `resolve_tables`.
            TableRef::Bridge(b) => self.tables[b],
        }
    }

    /// Reuses each bridge's rt_tables entry, else allocates the smallest free
    /// number in 1–252 that is neither in rt_tables nor `bgp_vrf_table_id`.
    fn resolve_tables(&mut self) -> Result<(), PlanError> {
        let d = self.desired;
        let mut bridges: BTreeSet<DevName> = d.bridge_tables.clone();
        for t in table_refs(d) {
            if let TableRef::Bridge(b) = t {
                if !bridges.contains(b) {
                    bridges.insert(b.clone());
                }
            }
        }
        let mut used: BTreeSet<u32> = self
            .actual
            .rt_tables
            .entries()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        used.insert(d.vrf_table);
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

    fn links(&mut self) {
        let desired: Vec<_> = self.desired.links.iter().collect();
        for l in desired {
            let rank = match l.kind {
                LinkKind::Vrf { .. } => rank::LINK_VRF,
                LinkKind::Existing => rank::LINK_EXISTING,
                LinkKind::Vlan { .. } => rank::LINK_VLAN,
                _ => rank::LINK_OTHER,
            };
            let base = |op| (Group::Base, rank, Some(Class::Base), op);
            let mut ops = Vec::new();
            match self.actual.links.get(&l.name) {
                Some(a) => {
                    // An existing device is adopted whatever its kind (a node
                    // set up by the Python agent, or a test's stand-in device).
                    if let Some(mac) = l.mac {
                        if a.mac != Some(mac) {
                            ops.push(base(Op::SetLinkMac {
                                name: l.name.clone(),
                                mac,
                            }));
                        }
                    }
                    if let Some(m) = &l.master {
                        if a.master.as_ref() != Some(m) {
                            ops.push(base(Op::SetMaster {
                                name: l.name.clone(),
                                master: m.clone(),
                            }));
                        }
                    }
                    if l.up && !a.up {
                        ops.push(base(Op::SetLinkUp {
                            name: l.name.clone(),
                        }));
                    }
                }
                None if l.kind == LinkKind::Existing => {
                    self.skip(
                        format!("link {}", l.name),
                        "the device does not exist and is not the agent's to create",
                    );
                    continue;
                }
                None => {
                    if let LinkKind::Vlan { parent, .. } = &l.kind {
                        if !self.will_exist(parent) {
                            self.skip(
                                format!("link {}", l.name),
                                format!("its parent {parent} does not exist"),
                            );
                            continue;
                        }
                    }
                    ops.push(base(Op::AddLink {
                        name: l.name.clone(),
                        kind: l.kind.clone(),
                    }));
                    if let Some(mac) = l.mac {
                        ops.push(base(Op::SetLinkMac {
                            name: l.name.clone(),
                            mac,
                        }));
                    }
                    if let Some(m) = &l.master {
                        ops.push(base(Op::SetMaster {
                            name: l.name.clone(),
                            master: m.clone(),
                        }));
                    }
                    if l.up {
                        ops.push(base(Op::SetLinkUp {
                            name: l.name.clone(),
                        }));
                    }
                    self.created.insert(l.name.clone());
                }
            }
            for (g, r, c, op) in ops {
                self.push(g, r, c, op);
            }
        }
    }

    fn frr(&mut self) {
        if let Some(config) = &self.desired.frr_config {
            if !self.actual.frr.has_our_config {
                self.push(
                    Group::Base,
                    rank::FRR,
                    Some(Class::Base),
                    Op::ApplyFrr {
                        config: config.clone(),
                    },
                );
            }
        }
    }

    /// The device a `net.ipv{4,6}.conf.<dev>.<leaf>` key names, if any.
    fn sysctl_dev(key: &str) -> Option<String> {
        let rest = key
            .strip_prefix("net.ipv4.conf.")
            .or_else(|| key.strip_prefix("net.ipv6.conf."))?;
        let (dev, _leaf) = rest.rsplit_once('.')?;
        if dev == "all" || dev == "default" {
            return None;
        }
        Some(dev.replace('/', "."))
    }

    fn sysctls(&mut self) {
        for s in &self.desired.sysctls {
            if self.actual.sysctls.get(&s.key) == Some(&s.value) {
                continue;
            }
            if let Some(dev) = Self::sysctl_dev(&s.key) {
                let exists = DevName::new(&dev).is_ok_and(|d| self.will_exist(&d));
                if !exists {
                    self.skip(
                        format!("sysctl {}", s.key),
                        format!("device {dev} does not exist"),
                    );
                    continue;
                }
            }
            self.push(
                Group::Base,
                rank::SYSCTL,
                Some(Class::Base),
                Op::SetSysctl(s.clone()),
            );
        }
    }

    fn is_announce_dev(&self, dev: &DevName) -> bool {
        self.desired.announce_dev.as_ref() == Some(dev)
    }

    /// Desired addresses the kernel lacks; and, in the same walk over both
    /// sorted sets (thousands on `bgp-nic`), the kernel's host addresses on
    /// the announce device that are not desired: withdrawn in
    /// [`Self::leftovers`].
    fn addresses(&mut self) {
        let (desired, actual) = (self.desired, self.actual);
        let nic = desired.announce_dev.as_ref();
        let mut want = desired.addresses.iter().peekable();
        let mut have = actual.addresses.iter().peekable();
        let mut missing = Vec::new();
        loop {
            let order = match (want.peek(), have.peek()) {
                (None, None) => break,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some((w, _)), Some(h)) => (*w).cmp(h),
            };
            match order {
                std::cmp::Ordering::Less => missing.extend(want.next()),
                std::cmp::Ordering::Greater => {
                    let h = have.next().expect("peeked");
                    if Some(&h.dev) == nic && host_prefix(&h.net) {
                        self.unwanted_on_nic.push(h);
                    }
                }
                std::cmp::Ordering::Equal => {
                    want.next();
                    have.next();
                }
            }
        }
        for (a, class) in missing {
            let a = a.clone();
            if !self.will_exist(&a.dev) {
                self.skip(
                    format!("address {} dev {}", a.net, a.dev),
                    "the device does not exist",
                );
                continue;
            }
            let group = if self.is_announce_dev(&a.dev) {
                Group::Announce
            } else {
                Self::wiring_group(*class)
            };
            self.push(group, rank::ADDRESS, Some(*class), Op::AddAddress(a));
        }
    }

    fn desired_rules(&self) -> Vec<(bool, IpNet, u32, Option<u32>, Class)> {
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

    fn rules(&mut self) {
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

    fn desired_routes(&self) -> Vec<(KernelRoute, Class)> {
        self.desired
            .routes
            .iter()
            .map(|(r, c)| {
                let k = KernelRoute {
                    table: self.resolve(&r.table),
                    v6: r.v6,
                    dst: r.dst,
                    metric: r.metric,
                    dev: r.dev.clone(),
                    via: r.via,
                    proto: r.proto,
                    scope: r.scope,
                    kind: r.kind,
                }
                .normalised();
                (k, *c)
            })
            .collect()
    }

    /// Whether the kernel holds each desired route, in desired order.
    fn routes_present(&self) -> Vec<bool> {
        let have = &self.actual.routes;
        let want = &self.want_routes;
        if want.is_sorted_by(|a, b| a.0 <= b.0) {
            flag_present(want, have, |(w, _), h| w.cmp(h))
                .map(|(_, present)| present)
                .collect()
        } else {
            want.iter().map(|(w, _)| have.contains(w)).collect()
        }
    }

    fn routes(&mut self) {
        let present = self.routes_present();
        let want_routes = std::mem::take(&mut self.want_routes);
        for ((want, class), present) in want_routes.iter().zip(present) {
            if present {
                continue;
            }
            let (want, class) = (want.clone(), *class);
            let same_key = self.actual.routes.iter().find(|a| a.key() == want.key());
            if same_key.is_some_and(|a| a.proto == obgp_netmodel::proto::FRR) {
                self.skip(
                    format!("route {}", crate::op::route_text(&want)),
                    "a route with this destination is FRR's (proto 186), never touched",
                );
                continue;
            }
            if let Some(dev) = &want.dev {
                if !self.will_exist(dev) {
                    self.skip(
                        format!(
                            "route {} table {}",
                            crate::op::route_text(&want),
                            want.table
                        ),
                        format!("device {dev} does not exist"),
                    );
                    continue;
                }
            }
            let group = if want.table == self.desired.vrf_table {
                Group::Announce
            } else {
                Self::wiring_group(class)
            };
            let op = Op::ReplaceRoute {
                table_name: self.table_name(want.table),
                route: want,
            };
            self.push(group, rank::ROUTE, Some(class), op);
        }
        self.want_routes = want_routes;
    }

    fn neighbours(&mut self) {
        let (desired, actual) = (self.desired, self.actual);
        let wanted = flag_present(&desired.neighbours, &actual.neighbours, |(w, _), h| {
            (*w).cmp(h)
        });
        for ((n, class), present) in wanted {
            if present {
                continue;
            }
            if !self.will_exist(&n.dev) {
                self.skip(
                    format!("neighbour {} dev {}", n.dst, n.dev),
                    "the device does not exist",
                );
                continue;
            }
            self.push(
                Self::wiring_group(*class),
                rank::NEIGHBOUR,
                Some(*class),
                Op::ReplaceNeighbour(n.clone()),
            );
        }
        let wanted = flag_present(
            &desired.proxy_neighbours,
            &actual.proxy_neighbours,
            |(w, _), h| (*w).cmp(h),
        );
        for ((p, class), present) in wanted {
            if present {
                continue;
            }
            if !self.will_exist(&p.dev) {
                self.skip(
                    format!("neighbour proxy {} dev {}", p.dst, p.dev),
                    "the device does not exist",
                );
                continue;
            }
            self.push(
                Self::wiring_group(*class),
                rank::PROXY,
                Some(*class),
                Op::AddProxyNeighbour(p.clone()),
            );
        }
    }

    /// Materialises the desired flows from the node's facts (ofports, bridge
    /// MAC). Returns the concrete flows per bridge, and the bridges whose MAC
    /// is unknown (their leftovers are not judged).
    fn materialised_flows(&mut self) -> (BTreeMap<DevName, BTreeSet<OfFlow>>, BTreeSet<DevName>) {
        let mut out: BTreeMap<DevName, BTreeSet<OfFlow>> = BTreeMap::new();
        let mut blind = BTreeSet::new();
        for f in &self.desired.flows {
            let what = format!(
                "flow {} cookie={} priority={} {} in_port={}",
                f.bridge, f.cookie, f.priority, f.protocol, f.in_port
            );
            let Some(bridge) = self.actual.bridges.get(&f.bridge) else {
                self.skip(what, "the bridge is not in OVS");
                blind.insert(f.bridge.clone());
                continue;
            };
            let Some(ofport) = bridge.ports.get(&f.in_port) else {
                // Upstream defect D1 is about this case: the patch port is not
                // there yet. Skip this flow only; the next reconcile adds it.
                self.skip(what, format!("port {} is not on the bridge yet", f.in_port));
                continue;
            };
            let mac = self.actual.links.get(&f.bridge).and_then(|l| l.mac);
            let mut actions = Vec::new();
            let mut ok = true;
            for a in &f.actions {
                actions.push(match a {
                    obgp_netmodel::FlowAction::ModDlDstBridgeMac => match mac {
                        Some(m) => format!("mod_dl_dst:{m}"),
                        None => {
                            ok = false;
                            break;
                        }
                    },
                    obgp_netmodel::FlowAction::ModDlDst(m) => format!("mod_dl_dst:{m}"),
                    obgp_netmodel::FlowAction::ModDlSrc(m) => format!("mod_dl_src:{m}"),
                    obgp_netmodel::FlowAction::Output(p) => match bridge.ports.get(p) {
                        Some(n) => format!("output:{n}"),
                        None => format!("output:{p}"),
                    },
                    obgp_netmodel::FlowAction::Normal => "NORMAL".into(),
                });
            }
            if !ok {
                self.skip(what, "the bridge's MAC address is unknown");
                blind.insert(f.bridge.clone());
                continue;
            }
            let flow = OfFlow {
                cookie: f.cookie,
                table: f.table,
                priority: f.priority,
                matches: [f.protocol.clone(), format!("in_port={ofport}")].into(),
                actions: actions.join(","),
            };
            out.entry(f.bridge.clone()).or_default().insert(flow);
        }
        (out, blind)
    }

    fn flows(&mut self) {
        let (flows, _) = self.materialised_flows();
        for (bridge, fs) in flows {
            let have = &self.actual.bridges[&bridge].flows;
            for f in fs {
                if !have.contains(&f) {
                    self.push(
                        Group::Base,
                        rank::FLOW,
                        Some(Class::Base),
                        Op::AddFlow {
                            bridge: bridge.clone(),
                            flow: f,
                        },
                    );
                }
            }
        }
    }

    /// The previous desired state's class of an object with this destination:
    /// the first one found among its addresses, then rules, routes,
    /// neighbours and proxy entries. A few leftovers scan the previous state;
    /// from the [`PREV_SCANS`]th on, an index built once answers (a mass
    /// withdrawal would otherwise scan it once per leftover).
    fn previous_class(&mut self, subject: Option<IpNet>) -> Option<Class> {
        let prev = self.previous?;
        let s = subject?.trunc();
        if self.prev_scans < PREV_SCANS {
            self.prev_scans += 1;
            return Self::previous_class_scan(prev, s);
        }
        let index = self.prev_index.get_or_insert_with(|| {
            let mut index: HashMap<IpNet, Class, FastHash> = HashMap::default();
            let nets = (prev.addresses.iter().map(|(a, c)| (Some(a.net), c)))
                .chain(prev.rules.iter().map(|(r, c)| (Some(r.dst), c)))
                .chain(prev.routes.iter().map(|(r, c)| (r.dst, c)))
                .chain(prev.neighbours.iter().map(|(n, c)| (Some(n.dst.into()), c)))
                .chain(
                    prev.proxy_neighbours
                        .iter()
                        .map(|(n, c)| (Some(n.dst.into()), c)),
                );
            for (net, class) in nets {
                if let Some(net) = net {
                    index.entry(net.trunc()).or_insert(*class);
                }
            }
            index
        });
        index.get(&s).copied()
    }

    fn previous_class_scan(prev: &DesiredNode, s: IpNet) -> Option<Class> {
        let hit = |n: IpNet| n.trunc() == s;
        prev.addresses
            .iter()
            .find(|(a, _)| hit(a.net))
            .map(|(_, c)| *c)
            .or_else(|| prev.rules.iter().find(|(r, _)| hit(r.dst)).map(|(_, c)| *c))
            .or_else(|| {
                prev.routes
                    .iter()
                    .find(|(r, _)| r.dst.is_some_and(hit))
                    .map(|(_, c)| *c)
            })
            .or_else(|| {
                prev.neighbours
                    .iter()
                    .find(|(n, _)| hit(IpNet::from(n.dst)))
                    .map(|(_, c)| *c)
            })
            .or_else(|| {
                prev.proxy_neighbours
                    .iter()
                    .find(|(n, _)| hit(IpNet::from(n.dst)))
                    .map(|(_, c)| *c)
            })
    }

    fn leftover(&mut self, group: Group, rank: u8, op: Op) {
        let class = self.previous_class(op.subject());
        self.push(group, rank, class, op);
    }

    /// The devices the provider bridges reach the fabric through: the mapped
    /// bridges and their VLAN devices (desired or present).
    fn provider_devices(&self) -> BTreeSet<DevName> {
        let bridges = &self.desired.bridge_tables;
        let mut out = bridges.clone();
        for l in &self.desired.links {
            if let LinkKind::Vlan { parent, .. } = &l.kind {
                if bridges.contains(parent) {
                    out.insert(l.name.clone());
                }
            }
        }
        for (name, l) in &self.actual.links {
            if l.kind == "vlan" && l.parent.as_ref().is_some_and(|p| bridges.contains(p)) {
                out.insert(name.clone());
            }
        }
        out
    }

    fn leftovers(&mut self) {
        let d = self.desired;
        let a = self.actual;
        let owned_tables: BTreeSet<u32> = d
            .bridge_tables
            .iter()
            .filter_map(|b| self.tables.get(b).copied())
            .collect();

        // Withdrawals: bgp-nic host addresses (found by `addresses`) and
        // VRF-table routes (O2 first).
        for ad in std::mem::take(&mut self.unwanted_on_nic) {
            self.leftover(Group::Withdraw, rank::ADDRESS, Op::DelAddress(ad.clone()));
        }
        // The kernel's routes in ascending key order, against the desired keys
        // in the same order (sorted here only if the desired order differs).
        let mut want_keys: Vec<_> = self.want_routes.iter().map(|(r, _)| r.key()).collect();
        if !want_keys.is_sorted() {
            want_keys.sort_unstable();
        }
        let routes = flag_present(&a.routes, &want_keys, |h, w| h.key().cmp(w));
        for (r, wanted) in routes {
            if Actual::route_is_foreign(r) || wanted {
                continue;
            }
            let in_vrf = r.table == d.vrf_table;
            let in_bridge = owned_tables.contains(&r.table) && r.dst.is_some();
            if !(in_vrf || in_bridge) || r.kind == RouteType::Local {
                continue;
            }
            let op = Op::DelRoute {
                table_name: self.table_name(r.table),
                route: r.clone(),
            };
            if in_vrf {
                self.leftover(Group::Withdraw, rank::ROUTE, op);
            } else {
                self.leftover(Group::Unwire, rank::ROUTE, op);
            }
        }

        // Unwiring: rules into the bridge tables. A desired rule without a
        // priority keeps a kernel rule of any priority.
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

        // Neighbours and proxy NDP entries (docs/ownership.md): on a provider
        // device, and evidenced as the agent's by a host rule or route into a
        // bridge table, or by the previous desired state.
        let provider = self.provider_devices();
        // Neighbours are keyed (dev, dst): the MAC does not make another one.
        let by_dev_dst = |x: &&Neighbour, y: &Neighbour| (&x.dev, x.dst).cmp(&(&y.dev, y.dst));
        let unwanted_neigh: Vec<&Neighbour> =
            flag_present(&a.neighbours, d.neighbours.keys(), by_dev_dst)
                .filter(|(n, wanted)| !wanted && provider.contains(&n.dev))
                .map(|(n, _)| n)
                .collect();
        let unwanted_proxy: Vec<&ProxyNeighbour> =
            flag_present(&a.proxy_neighbours, d.proxy_neighbours.keys(), |h, w| {
                (*h).cmp(w)
            })
            .filter(|(p, wanted)| !wanted && provider.contains(&p.dev))
            .map(|(p, _)| p)
            .collect();
        // Read only when something is unwanted: the host destinations of the
        // kernel's rules and routes in the bridge tables, sorted.
        let evidence: Vec<IpAddr> = if unwanted_neigh.is_empty() && unwanted_proxy.is_empty() {
            Vec::new()
        } else {
            let rules = a.rules.iter().filter(|k| owned_tables.contains(&k.table));
            let routes = a.routes.iter().filter(|r| owned_tables.contains(&r.table));
            let mut ips: Vec<IpAddr> = rules
                .filter_map(|k| k.dst)
                .chain(routes.filter_map(|r| r.dst))
                .filter(host_prefix)
                .map(|n| n.addr())
                .collect();
            ips.sort_unstable();
            ips.dedup();
            ips
        };
        let prev = self.previous;
        let in_prev_neigh = |n: &Neighbour| {
            prev.is_some_and(|p| {
                let from = Neighbour {
                    dev: n.dev.clone(),
                    dst: n.dst,
                    lladdr: MacAddr([0; 6]),
                };
                p.neighbours
                    .range(from..)
                    .next()
                    .is_some_and(|(m, _)| m.dev == n.dev && m.dst == n.dst)
            })
        };
        let stale_neigh: Vec<Neighbour> = unwanted_neigh
            .into_iter()
            .filter(|n| evidence.binary_search(&n.dst).is_ok() || in_prev_neigh(n))
            .cloned()
            .collect();
        for n in stale_neigh {
            self.leftover(Group::Unwire, rank::NEIGHBOUR, Op::DelNeighbour(n));
        }
        let in_prev_proxy =
            |p: &ProxyNeighbour| prev.is_some_and(|prev| prev.proxy_neighbours.contains_key(p));
        let stale_proxy: Vec<ProxyNeighbour> = unwanted_proxy
            .into_iter()
            .filter(|p| in_prev_proxy(p) || Self::slash64_has_any(&evidence, p.dst))
            .cloned()
            .collect();
        for p in stale_proxy {
            self.leftover(Group::Unwire, rank::PROXY, Op::DelProxyNeighbour(p));
        }

        // Cookie-999 flows that the desired state does not declare, on the
        // bridges the agent manages (not judged where the bridge MAC is unknown).
        let (flows, blind) = self.materialised_flows_quiet();
        let mut flow_bridges: BTreeSet<DevName> = d.bridge_tables.clone();
        flow_bridges.extend(d.flows.iter().map(|f| f.bridge.clone()));
        for br in flow_bridges {
            if blind.contains(&br) {
                continue;
            }
            let Some(have) = a.bridges.get(&br) else {
                continue;
            };
            let want = flows.get(&br);
            for f in &have.flows {
                if f.cookie == obgp_netmodel::cookie::MAC_TWEAK
                    && !want.is_some_and(|w| w.contains(f))
                {
                    let op = Op::DelFlow {
                        bridge: br.clone(),
                        flow: f.clone(),
                    };
                    self.push(Group::Unwire, rank::FLOW, Some(Class::Base), op);
                }
            }
        }

        // VLAN devices the agent named after a mapped bridge, no longer wanted.
        let want_links: BTreeSet<&DevName> = d.links.iter().map(|l| &l.name).collect();
        for (name, l) in &a.links {
            let (Some(parent), Some(vid)) = (&l.parent, l.vlan_id) else {
                continue;
            };
            if l.kind == "vlan"
                && d.bridge_tables.contains(parent)
                && *name == obgp_netmodel::names::vlan_device(parent, vid)
                && !want_links.contains(name)
            {
                self.push(
                    Group::Unwire,
                    rank::LINK_DEL,
                    Some(Class::Base),
                    Op::DelLink { name: name.clone() },
                );
            }
        }
    }

    /// [`Self::materialised_flows`] without recording skips a second time.
    fn materialised_flows_quiet(
        &mut self,
    ) -> (BTreeMap<DevName, BTreeSet<OfFlow>>, BTreeSet<DevName>) {
        let n = self.skipped.len();
        let out = self.materialised_flows();
        self.skipped.truncate(n);
        out
    }

    /// Whether `ip` is in the /64 whose network address is `net_addr`.
    fn in_slash64(ip: IpAddr, net_addr: IpAddr) -> bool {
        match (ip, net_addr) {
            (IpAddr::V6(ip), IpAddr::V6(n)) => {
                let mask = !0u128 << 64;
                (u128::from(ip) & mask) == u128::from(n)
            }
            _ => false,
        }
    }

    /// Whether the ascending `ips` hold one in the /64 whose network address
    /// is `net_addr`. The addresses of a /64 that starts at its network
    /// address are contiguous in `ips`, from the first one not below it.
    fn slash64_has_any(ips: &[IpAddr], net_addr: IpAddr) -> bool {
        let from = ips.partition_point(|ip| *ip < net_addr);
        ips.get(from)
            .is_some_and(|ip| Self::in_slash64(*ip, net_addr))
    }

    fn finish(self) -> Plan {
        let mut steps = self.steps;
        // Stable: equal keys keep the order they were planned in.
        steps.sort_by_key(|(rank, s)| {
            let by_class = matches!(s.group, Group::Withdraw | Group::Unwire);
            let class = if by_class { class_rank(s.class) } else { 0 };
            // VLAN device deletes come after every other cleanup.
            let last = u8::from(matches!(s.op, Op::DelLink { .. }));
            (s.group, last, class, *rank)
        });
        Plan {
            steps: steps.into_iter().map(|(_, s)| s).collect(),
            skipped: self.skipped,
            tables: self.tables,
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

#[cfg(test)]
mod tests {
    use super::*;
    use obgp_netmodel::{Address, Neighbour, ProxyNeighbour, Route, Rule};

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

    fn dev(s: &str) -> DevName {
        DevName::new(s).unwrap()
    }

    /// A previous desired state where several objects share a destination
    /// with different classes, so "the first one found" matters.
    fn previous() -> DesiredNode {
        let mut d = DesiredNode::default();
        let br = TableRef::Bridge(dev("br-ex"));
        for i in 0..60u8 {
            let ip: IpAddr = format!("172.24.4.{i}").parse().unwrap();
            let net = IpNet::from(ip);
            let class = [Class::Vm, Class::Fip, Class::Lb, Class::Gateway][usize::from(i % 4)];
            if i % 3 != 0 {
                d.addresses.insert(
                    Address {
                        dev: dev("bgp-nic"),
                        net,
                    },
                    class,
                );
            }
            d.rules.insert(
                Rule {
                    dst: net,
                    table: br.clone(),
                    priority: None,
                },
                Class::TenantVm,
            );
            d.neighbours.insert(
                Neighbour {
                    dev: dev("br-ex"),
                    dst: ip,
                    lladdr: MacAddr([0xfa, 0x16, 0x3e, 0, 0, i]),
                },
                Class::Subnet,
            );
        }
        d.routes.insert(
            Route {
                table: br,
                v6: false,
                dst: Some("10.0.0.0/24".parse().unwrap()),
                dev: Some(dev("br-ex")),
                via: Some("172.24.4.1".parse().unwrap()),
                proto: 3,
                scope: 0,
                kind: RouteType::Unicast,
                metric: None,
            },
            Class::Subnet,
        );
        d.proxy_neighbours.insert(
            ProxyNeighbour {
                dev: dev("br-ex"),
                dst: "2001:db8::".parse().unwrap(),
            },
            Class::Vm,
        );
        d
    }

    #[test]
    fn previous_class_index_answers_as_the_scan_does() {
        let prev = previous();
        let (desired, actual) = (DesiredNode::default(), Actual::default());
        let mut p = Planner {
            desired: &desired,
            previous: Some(&prev),
            actual: &actual,
            tables: BTreeMap::new(),
            steps: Vec::new(),
            skipped: Vec::new(),
            created: BTreeSet::new(),
            want_rules: Vec::new(),
            want_routes: Vec::new(),
            prev_scans: 0,
            prev_index: None,
            unwanted_on_nic: Vec::new(),
        };
        let mut subjects: Vec<IpNet> = (0..64u8)
            .map(|i| format!("172.24.4.{i}/32").parse().unwrap())
            .collect();
        subjects.extend(
            [
                "10.0.0.0/24",
                "10.0.0.7/24",
                "2001:db8::/64",
                "2001:db8::1/128",
            ]
            .map(|s| s.parse::<IpNet>().unwrap()),
        );
        let mut classes = Vec::new();
        for s in &subjects {
            let scanned = Planner::previous_class_scan(&prev, s.trunc());
            assert_eq!(p.previous_class(Some(*s)), scanned, "{s}");
            classes.push(scanned);
        }
        assert!(p.prev_index.is_some(), "more than {PREV_SCANS} lookups");
        // Every kind of answer was exercised, including none.
        for c in [
            Some(Class::Vm),
            Some(Class::TenantVm),
            Some(Class::Subnet),
            None,
        ] {
            assert!(classes.contains(&c), "{c:?}");
        }
    }
}
