//! The old announcement waits for the new one: while an EVPN VNI's VXLAN
//! device waits until FRR holds the VNI's text (see `links`), nothing the
//! VNI will announce is withdrawn or unwired elsewhere, and the traffic
//! switch to it (the MAC-tweak flow to its anycast MAC, the VLAN device
//! its port replaces) waits too. A provider network moving from underlay
//! to an EVPN method (`exposing_method = dynamic`, or a node re-configured
//! from `underlay` to `vrf`) thus keeps its `bgp_nic` announcement and its
//! wiring until the reconcile that creates the VXLAN device, which then
//! plans the old ones' removal after it (O4): the new wiring and
//! announcement come up before the old announcement goes.

use std::collections::BTreeSet;

use obgp_netmodel::names::{evpn as names, vlan_device};
use obgp_netmodel::{DevName, IpNet, LinkKind, TableRef};

use super::{Group, Planner};
use crate::op::Op;

fn overlaps(a: &IpNet, b: &IpNet) -> bool {
    a.contains(b) || b.contains(a)
}

impl Planner<'_> {
    /// Takes out of the plan what must wait for the VNIs in
    /// `waiting_vnis`, each as a skip naming the VNI.
    pub(super) fn hold_for_waiting_vnis(&mut self) {
        if self.waiting_vnis.is_empty() {
            return;
        }
        let d = self.desired;
        let masters: BTreeSet<DevName> = self
            .waiting_vnis
            .iter()
            .flat_map(|n| [names::vrf(*n), names::bridge(*n)])
            .flatten()
            .collect();
        // The VNIs' devices: their VRF and bridge, and what is in them.
        let devices: BTreeSet<&DevName> = d
            .links
            .iter()
            .filter(|l| {
                masters.contains(&l.name) || l.master.as_ref().is_some_and(|m| masters.contains(m))
            })
            .map(|l| &l.name)
            .collect();
        // What they will announce: the routes of their tables, the hosts
        // (neighbours) on their devices.
        let waiting = &self.waiting_vnis;
        let routed = d.routes.keys().filter_map(|r| match r.table {
            TableRef::Id(t) if waiting.contains(&t) => r.dst,
            _ => None,
        });
        let hosts = d
            .neighbours
            .keys()
            .filter(|n| devices.contains(&n.dev))
            .map(|n| IpNet::from(n.dst));
        let pending: Vec<IpNet> = routed.chain(hosts).collect();
        // The flows steering a network to their ports' MACs, and the VLAN
        // devices those ports replace.
        let steer: Vec<String> = d
            .links
            .iter()
            .filter(|l| devices.contains(&l.name))
            .filter_map(|l| l.mac)
            .map(|m| format!("mod_dl_dst:{m}"))
            .collect();
        let peers: BTreeSet<&DevName> = d
            .links
            .iter()
            .filter(|l| devices.contains(&l.name))
            .filter_map(|l| match &l.kind {
                LinkKind::Veth { peer } => Some(peer),
                _ => None,
            })
            .collect();
        let vlan_devs: BTreeSet<DevName> = d
            .ovs_ports
            .iter()
            .filter(|p| peers.contains(&p.name))
            .filter_map(|p| Some(vlan_device(&p.bridge, p.tag?)))
            .collect();
        let held_flows: Vec<(DevName, u8, u16, BTreeSet<String>)> = self
            .steps
            .iter()
            .filter_map(|(_, s)| match &s.op {
                Op::AddFlow { bridge, flow } if steer.iter().any(|m| flow.actions.contains(m)) => {
                    Some((
                        bridge.clone(),
                        flow.table,
                        flow.priority,
                        flow.matches.clone(),
                    ))
                }
                _ => None,
            })
            .collect();
        let hold = |s: &super::Step| match &s.op {
            Op::AddFlow { bridge, flow } | Op::DelFlow { bridge, flow } => {
                held_flows.iter().any(|(b, t, p, m)| {
                    b == bridge && *t == flow.table && *p == flow.priority && *m == flow.matches
                })
            }
            Op::DelLink { name } => vlan_devs.contains(name),
            op => {
                matches!(s.group, Group::Withdraw | Group::Unwire)
                    && op
                        .subject()
                        .is_some_and(|x| pending.iter().any(|p| overlaps(p, &x)))
            }
        };
        let (held, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.steps)
            .into_iter()
            .partition(|(_, s)| hold(s));
        self.steps = kept;
        let vnis: Vec<String> = self.waiting_vnis.iter().map(u32::to_string).collect();
        for (_, s) in held {
            self.skip(
                s.op.to_string(),
                format!(
                    "held until VNI {} is up (its VXLAN device waits for FRR to hold its text)",
                    vnis.join(", ")
                ),
            );
        }
    }
}
