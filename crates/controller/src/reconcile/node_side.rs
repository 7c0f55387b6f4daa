//! The node side of a reconcile: what to read of the node, the observe
//! (kernel, then what the command lane knows of FRR and OVS) as the
//! pipeline's port ([`NodeObserver`]), and the names and counts the reports
//! use. The single writer is `obgp_node::NodeWriter`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use obgp_config::Config;
use obgp_netmodel::{DesiredNode, DevName};
use obgp_node::{CommandLane, KernelNode, Scope};
use obgp_pipeline::{ObserveFor, ObserveNode};
use obgp_plan::{Actual, Op};

use super::ReconcileError;
use crate::inputs::OfPorts;

/// The pipeline's port on the daemon's node ([`ObserveNode`]): observes
/// what a run's desired objects need ([`scope_after`]), and notes when,
/// so that the reconcile report splits a run's time into computing,
/// observing and planning.
pub(super) struct NodeObserver<'a> {
    pub node: &'a mut KernelNode,
    pub lane: &'a CommandLane,
    pub ofports: &'a OfPorts,
    /// Wait for the command lane's reads ([`super::Reconciler::wait_for_commands`]).
    pub wait: bool,
    /// The FRR text last applied, when it may stand for FRR's lines
    /// (`None` on an FRR check: the lines are read).
    pub frr_applied: Option<&'a str>,
    /// Log the memory after each stage (a first computation).
    pub log_stages: bool,
    /// When the observe began and ended.
    pub began: Option<Instant>,
    pub ended: Option<Instant>,
}

impl<'a> NodeObserver<'a> {
    pub fn new(
        node: &'a mut KernelNode,
        lane: &'a CommandLane,
        ofports: &'a OfPorts,
        wait: bool,
        frr_applied: Option<&'a str>,
    ) -> NodeObserver<'a> {
        NodeObserver {
            node,
            lane,
            ofports,
            wait,
            frr_applied,
            log_stages: false,
            began: None,
            ended: None,
        }
    }

    /// The run's time from `start` split as (computing the desired state,
    /// observing, planning until now); all of it computing when the run
    /// never observed (it failed before).
    pub fn times(&self, start: Instant) -> (Duration, Duration, Duration) {
        let now = Instant::now();
        let began = self.began.unwrap_or(now);
        let ended = self.ended.unwrap_or(now);
        (began - start, ended - began, now - ended)
    }
}

impl ObserveNode for NodeObserver<'_> {
    type Observed = Actual;
    type Error = ReconcileError;

    /// FRR counts as holding our text, its lines not read, when the
    /// desired text is the one last applied.
    async fn observe(&mut self, wanted: ObserveFor<'_>) -> Result<Actual, ReconcileError> {
        self.began = Some(Instant::now());
        if self.log_stages {
            crate::ops::log_stage("desired");
        }
        let mut scope = scope_after(wanted.node, wanted.settled);
        let frr_known = self
            .frr_applied
            .is_some_and(|text| wanted.node.frr_config.as_deref() == Some(text));
        if frr_known {
            // Our lines are not checked; an EVPN scope still reads FRR for
            // its EVPN VRFs (through the lane's cache: vtysh runs again
            // only after an FRR op or an invalidation).
            scope.frr_lines.clear();
        }
        let mut actual = observe(self.node, self.lane, &scope, self.wait, self.ofports).await?;
        if frr_known {
            actual.frr.has_our_config = true;
        }
        self.ended = Some(Instant::now());
        if self.log_stages {
            crate::ops::log_stage("observed");
        }
        Ok(actual)
    }
}

/// Observes `scope` of the node: the kernel through the netlink mirror,
/// FRR and the OVS flows as the command lane last read them (what it does
/// not know yet is unknown to the planner: no op planned on it; waited
/// for when `wait`), the ports ovs-ofctl names cut to 15 characters
/// completed from the database's `ofports`.
async fn observe(
    node: &mut KernelNode,
    lane: &CommandLane,
    scope: &Scope,
    wait: bool,
    ofports: &OfPorts,
) -> Result<Actual, ReconcileError> {
    let mut actual = node
        .observe_kernel(scope)
        .await
        .map_err(|e| ReconcileError::Observe(e.to_string()))?;
    let mut commands = lane.view(scope);
    if !commands.is_complete() && wait {
        lane.settled().await;
        commands = lane.view(scope);
    }
    actual.bridges = commands.bridges;
    actual.bridges_unknown = commands.bridges_unknown;
    actual.frr = commands.frr;
    for (bridge, observed) in actual.bridges.iter_mut() {
        if let Some(numbered) = ofports.get(bridge.as_str()) {
            observed
                .ports
                .extend(numbered.iter().map(|(n, p)| (n.clone(), *p)));
        }
    }
    Ok(actual)
}

/// What to read of the node for desired objects `node`, after `prev` (the
/// desired objects the last reconcile planned with).
pub(super) fn scope_after(node: &DesiredNode, prev: Option<&DesiredNode>) -> Scope {
    let mut scope = Scope::for_desired(node);
    if let Some(prev) = prev {
        // Tables and bridges the last reconcile used are read too, so
        // their leftovers are seen when a bridge mapping goes away.
        scope
            .bridge_tables
            .extend(prev.bridge_tables.iter().cloned());
        scope.ovs_bridges.extend(prev.bridge_tables.iter().cloned());
        // The bridges its flows were on (`exposing_method = ovn` has flows
        // on bridges without a table: the fabric bridges).
        scope
            .ovs_bridges
            .extend(prev.flows.iter().map(|f| f.bridge.clone()));
        // And the VRF tables of the VNIs it wanted, so that a VNI that
        // goes is torn down with its routes (the observer also reads
        // the table of every agent-shaped VRF on the node).
        scope.tables.extend(prev.evpn_vnis.iter().copied());
        if let Some(e) = &prev.evpn {
            scope.ovs_bridges.extend(e.bridges.iter().cloned());
        }
    }
    scope
}

/// Whether a bridge that the previous desired state put flows on, and this
/// one does not, could not be read (the command lane's read is due or
/// failed): its leftover flows were not judged, so the previous state
/// must stay the one the next reconcile judges leftovers by.
pub(super) fn leftover_flows_unjudged(
    prev: Option<&DesiredNode>,
    now: &DesiredNode,
    actual: &Actual,
) -> bool {
    let Some(prev) = prev else { return false };
    let wanted: BTreeSet<&DevName> = now.flows.iter().map(|f| &f.bridge).collect();
    prev.flows
        .iter()
        .map(|f| &f.bridge)
        .filter(|b| !wanted.contains(b))
        .any(|b| actual.bridges_unknown.contains(b))
}

/// The prefixes the node announces now: addresses on the announce device
/// and the VRF table's routes that are neither the kernel's (those the
/// addresses bring) nor FRR's: what a plan's withdrawals can remove.
pub(super) fn announced_prefixes(actual: &Actual, config: &Config) -> usize {
    let nic = config.default.bgp_nic.as_str();
    let on_nic = actual
        .addresses
        .iter()
        .filter(|a| a.dev.as_str() == nic)
        .count();
    let vrf_routes = actual
        .routes
        .iter()
        .filter(|r| {
            r.table == config.default.bgp_vrf_table_id
                && r.proto != obgp_netmodel::proto::KERNEL
                && r.proto != obgp_netmodel::proto::FRR
        })
        .count();
    on_nic + vrf_routes
}

/// What the agent reads of the node and could not (FRR, OVS bridges): a
/// node whose FRR or flows are unknown has not been shown to converge.
pub(crate) fn unread_commands(actual: &Actual) -> Vec<String> {
    let mut out = Vec::new();
    if actual.frr.unknown {
        out.push(
            "FRR's running configuration could not be read (vtysh failed or timed out)".into(),
        );
    }
    for br in &actual.bridges_unknown {
        out.push(format!(
            "the ports and flows of OVS bridge {br} could not be read (ovs-ofctl failed or timed out)"
        ));
    }
    out
}

/// The kind of node object an op writes, for the drift-repair counts.
pub fn object_kind(op: &Op) -> &'static str {
    match op {
        Op::AddLink { .. }
        | Op::SetLinkUp { .. }
        | Op::SetMaster { .. }
        | Op::SetLinkMac { .. }
        | Op::DelLink { .. } => "link",
        Op::SetBridgePort { .. } => "bridge_port",
        Op::AddOvsPort(_) | Op::DelOvsPort { .. } => "ovs_port",
        Op::AddFdb(_) => "fdb",
        Op::AddBridgeFdb(_) | Op::DelBridgeFdb(_) => "bridge_fdb",
        Op::AddAddress(_) | Op::DelAddress(_) => "address",
        Op::AddRule { .. } | Op::DelRule { .. } => "rule",
        Op::ReplaceRoute { .. } | Op::DelRoute { .. } => "route",
        Op::ReplaceNeighbour(_) | Op::DelNeighbour(_) => "neighbour",
        Op::AddProxyNeighbour(_) | Op::DelProxyNeighbour(_) => "proxy_neighbour",
        Op::SetSysctl(_) => "sysctl",
        Op::AddRtTable { .. } => "rt_table",
        Op::AddFlow { .. } | Op::DelFlow { .. } => "flow",
        Op::ApplyFrr { .. } | Op::RemoveFrr { .. } => "frr",
    }
}

/// An op's variant name (`AddRule`, `DelAddress`...), for the per-kind counts.
pub(super) fn op_kind(op: &obgp_plan::Op) -> String {
    let debug = format!("{op:?}");
    debug
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use obgp_netmodel::{DevName, EvpnCleanup};

    fn dev(s: &str) -> DevName {
        DevName::new(s).unwrap()
    }

    #[test]
    fn an_evpn_scope_reads_the_previous_vnis_tables_and_the_mapped_bridges() {
        let prev = DesiredNode {
            evpn_vnis: [1001, 1002].into(),
            evpn: Some(EvpnCleanup {
                bridges: [dev("br-old")].into(),
                ..EvpnCleanup::default()
            }),
            ..DesiredNode::default()
        };
        // VNI 1001 stays, 1002 goes; no FRR text left to apply.
        let now = DesiredNode {
            evpn_vnis: [1001].into(),
            evpn: Some(EvpnCleanup {
                bridges: [dev("br-ex")].into(),
                ..EvpnCleanup::default()
            }),
            ..DesiredNode::default()
        };
        let s = scope_after(&now, Some(&prev));
        assert!(s.evpn && s.reads_frr(), "{s:?}");
        assert!(s.frr_lines.is_empty());
        assert_eq!(s.tables, [1001, 1002].into());
        assert_eq!(s.ovs_bridges, [dev("br-ex"), dev("br-old")].into());
        // Underlay modes: no EVPN reads, no FRR read without a text.
        let s = scope_after(&DesiredNode::default(), None);
        assert!(!s.evpn && !s.reads_frr(), "{s:?}");
    }

    #[test]
    fn the_bridges_of_the_previous_flows_are_read_for_their_leftovers() {
        // exposing_method = ovn: a fabric bridge holds flows but no table;
        // its segment went, so nothing wants it now.
        let flow = |bridge: &str| obgp_netmodel::Flow {
            bridge: dev(bridge),
            cookie: obgp_netmodel::cookie::MAC_TWEAK,
            table: 0,
            priority: 1000,
            protocol: "ip".into(),
            in_port: "eth-fab".into(),
            matches: Vec::new(),
            actions: vec![obgp_netmodel::FlowAction::Normal],
        };
        let prev = DesiredNode {
            flows: [flow("br-ex"), flow("br-fab")].into(),
            ..DesiredNode::default()
        };
        let now = DesiredNode {
            flows: [flow("br-ex")].into(),
            ..DesiredNode::default()
        };
        assert_eq!(
            scope_after(&now, Some(&prev)).ovs_bridges,
            [dev("br-ex"), dev("br-fab")].into()
        );
        assert_eq!(scope_after(&now, None).ovs_bridges, [dev("br-ex")].into());
        // While br-fab's read is due its leftovers are unjudged; once read
        // (present or absent), judged.
        let mut actual = Actual::default();
        actual.bridges_unknown.insert(dev("br-fab"));
        assert!(leftover_flows_unjudged(Some(&prev), &now, &actual));
        assert!(!leftover_flows_unjudged(None, &now, &actual));
        assert!(
            !leftover_flows_unjudged(Some(&prev), &prev, &actual),
            "still wanted"
        );
        actual.bridges_unknown.clear();
        assert!(!leftover_flows_unjudged(Some(&prev), &now, &actual));
    }
}
