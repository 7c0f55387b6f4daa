//! The soak's end check against a fresh desired state: after the churn, the
//! bench computes the desired state from the final databases through
//! `obgp_pipeline` (as the daemon does: the snapshot and node facts of
//! `inputs_once`, `Pipeline::compute`), observes the node (`plan_once`'s
//! observation), and plans. It never compares with an earlier plan of its
//! own, so a node that never converged cannot pass.
//!
//! Checked:
//! - the plan is empty except the ops this node refuses, named one by one
//!   in [`refused_ops`] (the VRF ops on a kernel without VRF support);
//! - the node's objects that carry an IP (addresses, rules, routes,
//!   permanent and proxy neighbours; IPv4 and IPv6), read with `ip` apart
//!   from the agent, are exactly the desired state's, besides what the
//!   namespace held before the agent started and what the kernel makes
//!   itself;
//! - FRR: the text the agent applied last equals the desired state's;
//! - flows: with the soak's ovs-vswitchd, the agent's flows (cookies 999
//!   and 998) that `ovs-ofctl dump-flows` shows per bridge are as many as
//!   the desired state's, and the plan skips none; without it, listed as
//!   not checked.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use anyhow::{Context, Result};
use obgp_config::Config;
use obgp_controller::{inputs_once, plan_once, RunOptions};
use obgp_netmodel::DesiredNode;
use obgp_plan::Plan;
use obgp_testbed::netns::Netns;

use crate::vswitchd::Vswitchd;

/// The kinds of node objects that carry an IP, and how `ip` lists them
/// (the arguments after the family flag, and what precedes the IP).
const KINDS: &[(&str, &[&str], &str)] = &[
    ("address", &["-o", "addr", "show"], " inet"),
    ("rule", &["rule", "show"], " to "),
    ("route", &["route", "show", "table", "all"], ""),
    ("neighbour", &["neigh", "show", "nud", "permanent"], ""),
    ("proxy neighbour", &["neigh", "show", "proxy"], ""),
];

/// The node's objects that carry an IP, by kind: each `ip` line with its
/// first IP (no prefix length). Routes the kernel makes itself (local,
/// broadcast, multicast and anycast ones, `proto kernel`) and link-local
/// addresses are left out.
#[derive(Debug, Default, PartialEq)]
pub struct NodeObjects {
    pub by_kind: BTreeMap<&'static str, BTreeSet<(String, IpAddr)>>,
}

/// The first IP of `line` after `after` (after the line's start when
/// empty), a route type word (`unreachable`, `blackhole`, `prohibit`)
/// skipped, without its prefix length.
fn first_ip(line: &str, after: &str) -> Option<IpAddr> {
    let rest = if after.is_empty() {
        line
    } else {
        // " inet" also finds " inet6".
        let (_, rest) = line.split_once(after)?;
        rest.trim_start_matches('6')
    };
    let mut words = rest.split_whitespace();
    let mut word = words.next()?;
    if matches!(word, "unreachable" | "blackhole" | "prohibit") {
        word = words.next()?;
    }
    word.split('/').next()?.parse().ok()
}

fn kernel_made(kind: &str, line: &str) -> bool {
    match kind {
        "route" => {
            ["local ", "broadcast ", "multicast ", "anycast "]
                .iter()
                .any(|t| line.starts_with(t))
                || line.contains(" proto kernel")
        }
        "address" => line.contains(" scope link"),
        _ => false,
    }
}

impl NodeObjects {
    pub fn read(ns: &Netns) -> Result<NodeObjects> {
        let mut by_kind: BTreeMap<&'static str, BTreeSet<(String, IpAddr)>> = BTreeMap::new();
        for (kind, args, after) in KINDS {
            for family in ["-4", "-6"] {
                let mut cmd = vec![family];
                cmd.extend_from_slice(args);
                for line in ns.ip(&cmd)?.lines() {
                    if kernel_made(kind, line) {
                        continue;
                    }
                    if let Some(ip) = first_ip(line, after) {
                        by_kind
                            .entry(kind)
                            .or_default()
                            .insert((line.trim().to_string(), ip));
                    }
                }
            }
        }
        Ok(NodeObjects { by_kind })
    }

    /// The IPs of one kind that pass `keep`.
    pub fn ips(&self, kind: &str, keep: impl Fn(IpAddr) -> bool) -> BTreeSet<IpAddr> {
        self.by_kind
            .get(kind)
            .into_iter()
            .flatten()
            .map(|(_, ip)| *ip)
            .filter(|ip| keep(*ip))
            .collect()
    }

    /// The IPs of one kind whose line is not one of `before`'s.
    fn ips_since(&self, kind: &str, before: &NodeObjects) -> BTreeSet<IpAddr> {
        let old = before.by_kind.get(kind);
        self.by_kind
            .get(kind)
            .into_iter()
            .flatten()
            .filter(|o| !old.is_some_and(|b| b.contains(*o)))
            .map(|(_, ip)| *ip)
            .collect()
    }
}

/// The IPs of one kind the desired node objects hold.
fn desired_ips(node: &DesiredNode, kind: &str) -> BTreeSet<IpAddr> {
    match kind {
        "address" => node.addresses.keys().map(|a| a.net.addr()).collect(),
        // The kernel keeps a rule's or route's prefix without host bits.
        "rule" => node.rules.keys().map(|r| r.dst.network()).collect(),
        "route" => node
            .routes
            .keys()
            .filter_map(|r| r.dst.map(|d| d.network()))
            .collect(),
        "neighbour" => node.neighbours.keys().map(|n| n.dst).collect(),
        "proxy neighbour" => node.proxy_neighbours.keys().map(|n| n.dst).collect(),
        _ => BTreeSet::new(),
    }
}

/// `address` -> `addresses`, `rule` -> `rules`.
pub fn plural(kind: &str) -> String {
    if kind.ends_with('s') {
        format!("{kind}es")
    } else {
        format!("{kind}s")
    }
}

/// `label: N missing (first ...), M extra (first ...)`, or nothing when equal.
pub fn diff<T: Ord + std::fmt::Debug>(
    label: &str,
    got: &BTreeSet<T>,
    want: &BTreeSet<T>,
) -> Option<String> {
    let missing: Vec<_> = want.difference(got).collect();
    let extra: Vec<_> = got.difference(want).collect();
    if missing.is_empty() && extra.is_empty() {
        return None;
    }
    Some(format!(
        "{label}: {} missing (first {:?}), {} extra (first {:?})",
        missing.len(),
        &missing[..missing.len().min(10)],
        extra.len(),
        &extra[..extra.len().min(10)]
    ))
}

/// Whether the kernel of `ns` can create a VRF (the CI kernel cannot).
pub fn kernel_has_vrf(ns: &Netns) -> bool {
    let made = ns
        .ip(&[
            "link",
            "add",
            "obgp-vrf-probe",
            "type",
            "vrf",
            "table",
            "4242",
        ])
        .is_ok();
    if made {
        let _ = ns.ip(&["link", "del", "obgp-vrf-probe"]);
    }
    made
}

/// The plan steps this node refuses whatever OVN says, as `plan` prints
/// them: on a kernel without VRF support, the VRF and its enslavement of
/// `bgp-nic` (`bgp_vrf` `bgp-vrf`, `bgp_vrf_table_id` 10, the defaults).
pub fn refused_ops(has_vrf: bool) -> BTreeSet<String> {
    if has_vrf {
        return BTreeSet::new();
    }
    [
        "+ link bgp-vrf type vrf table 10",
        "~ link bgp-vrf up",
        "~ link bgp-nic master bgp-vrf",
    ]
    .into_iter()
    .map(String::from)
    .collect()
}

/// What the end check found.
pub struct EndCheck {
    pub failures: Vec<String>,
    /// The refused steps the plan held (each named in [`refused_ops`]).
    pub refused: Vec<String>,
    /// What could not be checked, and why.
    pub unchecked: Vec<String>,
    /// The agent's flows read back from ovs-vswitchd (0 without it).
    pub flows_checked: usize,
    /// The lines of the fresh desired state's FRR text (checked against
    /// what the agent applied last).
    pub frr_lines: Option<usize>,
    pub plan: Plan,
}

impl EndCheck {
    /// Computes the fresh desired state and plan and checks the node
    /// against them. `before_agent`: the node's objects before the agent
    /// first ran; `frr_applied`: the FRR text the agent applied last.
    pub async fn run(
        config: &Config,
        opts: &RunOptions,
        ns: &Netns,
        before_agent: &NodeObjects,
        frr_applied: Option<String>,
        refused_ops: &BTreeSet<String>,
        vswitchd: Option<&Vswitchd>,
    ) -> Result<EndCheck> {
        let (snapshot, facts) = inputs_once(config, opts)
            .await
            .context("reading the final databases")?;
        let observed = plan_once(config, opts)
            .await
            .context("observing the node")?;
        let fresh = obgp_pipeline::once(&snapshot, config, &facts, &observed.actual)
            .context("the desired state of the final databases")?;
        let mut check = EndCheck {
            failures: Vec::new(),
            refused: Vec::new(),
            unchecked: Vec::new(),
            flows_checked: 0,
            frr_lines: fresh.node.frr_config.as_ref().map(|t| t.lines().count()),
            plan: fresh.plan,
        };
        // The plan: nothing but the named refused ops.
        let mut unexpected = Vec::new();
        for step in &check.plan.steps {
            let op = step.op.to_string();
            if refused_ops.contains(&op) {
                check.refused.push(op);
            } else {
                unexpected.push(op);
            }
        }
        if !unexpected.is_empty() {
            check.failures.push(format!(
                "the plan against a fresh desired state is not empty: {} steps besides the refused ones: {:?}",
                unexpected.len(),
                &unexpected[..unexpected.len().min(20)]
            ));
        }
        // Every IP-carrying object, both families: the desired state's.
        let end = NodeObjects::read(ns)?;
        for (kind, _, _) in KINDS {
            for (family, is_v6) in [("IPv4", false), ("IPv6", true)] {
                let got: BTreeSet<IpAddr> = end
                    .ips_since(kind, before_agent)
                    .into_iter()
                    .filter(|ip| ip.is_ipv6() == is_v6)
                    .collect();
                let want: BTreeSet<IpAddr> = desired_ips(&fresh.node, kind)
                    .into_iter()
                    .filter(|ip| ip.is_ipv6() == is_v6)
                    .collect();
                let label = format!(
                    "{family} {} on the node against a fresh desired state",
                    plural(kind)
                );
                check.failures.extend(diff(&label, &got, &want));
            }
        }
        // FRR: what the agent applied last is what the desired state wants.
        let want_frr = fresh.node.frr_config.clone();
        if frr_applied != want_frr {
            check.failures.push(format!(
                "the FRR text the agent applied last ({} lines) is not the fresh desired state's ({} lines)",
                frr_applied.as_deref().map_or(0, |t| t.lines().count()),
                want_frr.as_deref().map_or(0, |t| t.lines().count())
            ));
        }
        check.check_flows(&fresh.node, vswitchd)?;
        Ok(check)
    }

    /// Flows: with ovs-vswitchd, per bridge and cookie, as many of the
    /// agent's flows as the desired state has, and none skipped by the
    /// plan (which compares them one by one with what the agent read);
    /// without it, listed as not checked.
    fn check_flows(&mut self, node: &DesiredNode, vswitchd: Option<&Vswitchd>) -> Result<()> {
        let skipped: Vec<String> = self
            .plan
            .skipped
            .iter()
            .filter(|s| s.what.starts_with("flow "))
            .map(|s| format!("{}: {}", s.what, s.reason))
            .collect();
        let Some(vswitchd) = vswitchd else {
            self.unchecked.push(format!(
                "{} flows of the desired state: no ovs-vswitchd in the soak, the plan skips them: {}",
                node.flows.len(),
                skipped.join("; ")
            ));
            return Ok(());
        };
        if !skipped.is_empty() {
            self.failures
                .push(format!("the plan skips flows: {}", skipped.join("; ")));
        }
        let mut wanted: BTreeMap<(String, u64), usize> = BTreeMap::new();
        for flow in &node.flows {
            *wanted
                .entry((flow.bridge.to_string(), flow.cookie))
                .or_default() += 1;
        }
        for cookie in [998, 999] {
            wanted.entry(("br-ex".to_string(), cookie)).or_default();
        }
        for ((bridge, cookie), want) in &wanted {
            let got = vswitchd.flows(bridge, *cookie)?;
            if got.len() != *want {
                self.failures.push(format!(
                    "flows on {bridge} with cookie {cookie}: {} in ovs-vswitchd, {want} in the fresh desired state: {got:?}",
                    got.len()
                ));
            }
            self.flows_checked += got.len();
        }
        Ok(())
    }
}
