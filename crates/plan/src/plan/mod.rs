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
//!
//! One module per object kind plans its adds and its leftovers (`links`,
//! `frr`, `tables`, `sysctls`, `addresses`, `rules`, `routes`,
//! `neighbours`, `bridge_fdb`, `flows`; `previous` gives leftovers their class); `order`
//! sorts them into the groups above and checks a plan against O1–O4;
//! `output` is the [`Plan`] they make. `changes` ([`plan_changes`]) runs
//! the same per-object rules on the keys a patched desired state changed.

mod addresses;
mod bridge_fdb;
mod changes;
mod evpn;
mod fdb;
mod flows;
mod frr;
mod links;
mod neighbours;
mod order;
mod output;
mod previous;
mod routes;
mod rules;
mod sysctls;
mod tables;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use obgp_netmodel::hash::FastHash;
use obgp_netmodel::{Class, DesiredNode, DevName, IpNet};

use crate::actual::{Actual, KernelRoute};
use crate::op::Op;
use rules::WantRule;

pub use changes::{plan_changes, Coverage};
pub use order::order_violations;
pub use output::{Group, Plan, Skip, Step};
pub use tables::{numbered_tables, table_refs, TABLE_MAX, TABLE_MIN};

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
    let mut p = Planner::new(desired, previous, actual);
    p.resolve_tables()?;
    p.check_device_kinds()?;
    if desired.evpn.is_some() {
        p.proven = evpn::proven_vnis(actual);
    }
    p.want_rules = p.desired_rules();
    p.want_routes = p.desired_routes();
    // Adds, kind by kind.
    p.links();
    p.bridge_ports();
    p.ovs_ports();
    p.fdb();
    p.frr();
    p.sysctls();
    p.addresses();
    p.rules();
    p.routes();
    p.bridge_fdb();
    p.neighbours();
    p.flows();
    p.suppressed_local_routes();
    // Leftovers, kind by kind: withdrawals (O2 first), then unwiring.
    let owned_tables = p.owned_tables();
    p.address_leftovers();
    p.route_leftovers(&owned_tables);
    p.rule_leftovers(&owned_tables);
    p.neighbour_leftovers(&owned_tables);
    p.flow_leftovers();
    p.link_leftovers();
    p.evpn_leftovers();
    p.bridge_fdb_leftovers();
    p.evpn_frr_leftovers();
    Ok(p.finish())
}

/// What one planning pass shares between the object kinds: its inputs, the
/// steps and skips so far, and what one kind learnt that another needs.
struct Planner<'a> {
    desired: &'a DesiredNode,
    previous: Option<&'a DesiredNode>,
    actual: &'a Actual,
    tables: BTreeMap<DevName, u32>,
    /// (sort rank within the group, step), sorted at the end.
    steps: Vec<(u8, Step)>,
    skipped: Vec<Skip>,
    /// See [`Plan::warnings`].
    warnings: Vec<String>,
    /// Links this plan creates.
    created: BTreeSet<DevName>,
    /// The desired rules with their tables resolved (in desired order).
    want_rules: Vec<WantRule>,
    /// The desired routes as the kernel would hold them (in desired order).
    want_routes: Vec<(KernelRoute, Class)>,
    /// How many leftovers looked their class up in the previous desired
    /// state's maps, and the index that answers after that.
    prev_lookups: usize,
    prev_index: Option<HashMap<IpNet, Class, FastHash>>,
    /// The kernel's host addresses on the announce device that the desired
    /// state lacks, ascending (see [`Planner::addresses`]).
    unwanted_on_nic: Vec<&'a obgp_netmodel::Address>,
    /// The VNIs whose devices on the node are the agent's (EVPN modes only).
    proven: BTreeMap<u32, evpn::VniDevices>,
}

impl<'a> Planner<'a> {
    fn new(
        desired: &'a DesiredNode,
        previous: Option<&'a DesiredNode>,
        actual: &'a Actual,
    ) -> Planner<'a> {
        Planner {
            desired,
            previous,
            actual,
            tables: BTreeMap::new(),
            steps: Vec::new(),
            skipped: Vec::new(),
            warnings: Vec::new(),
            created: BTreeSet::new(),
            want_rules: Vec::new(),
            want_routes: Vec::new(),
            prev_lookups: 0,
            prev_index: None,
            unwanted_on_nic: Vec::new(),
            proven: BTreeMap::new(),
        }
    }

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
}

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

fn host_prefix(n: &IpNet) -> bool {
    n.prefix_len() == n.max_prefix_len()
}
