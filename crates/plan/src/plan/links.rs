//! Links: devices created, adopted (MAC, master, up), and the VLAN devices
//! of a mapped bridge that are no longer wanted.

use std::collections::BTreeSet;

use obgp_netmodel::{Class, DevName, Link, LinkKind};

use super::order::rank;
use super::Group;
use super::{PlanError, Planner};
use crate::actual::ActualLink;
use crate::op::Op;

/// The ops that give the link `l` its MAC, master and state, where the
/// device `have` differs (`None`: a device this plan creates).
fn settle(l: &Link, have: Option<&ActualLink>) -> Vec<Op> {
    let mut ops = Vec::new();
    if let Some(mac) = l.mac {
        if have.is_none_or(|a| a.mac != Some(mac)) {
            ops.push(Op::SetLinkMac {
                name: l.name.clone(),
                mac,
            });
        }
    }
    if let Some(m) = &l.master {
        if have.is_none_or(|a| a.master.as_ref() != Some(m)) {
            ops.push(Op::SetMaster {
                name: l.name.clone(),
                master: m.clone(),
            });
        }
    }
    if l.up && have.is_none_or(|a| !a.up) {
        ops.push(Op::SetLinkUp {
            name: l.name.clone(),
        });
    }
    ops
}

impl Planner<'_> {
    /// A device the agent creates that exists as another kind is not the
    /// agent's: adopting it (enslaving `lo` to the VRF, announcing on a NIC)
    /// would hurt the node, so the whole plan is refused. A device the agent
    /// would create is adopted when its kind matches (a node set up by the
    /// Python agent); `ifb` passes for a dummy, being the documented stand-in
    /// on kernels without `dummy` (`--bgp-nic-kind`).
    pub(super) fn check_device_kinds(&self) -> Result<(), PlanError> {
        for l in &self.desired.links {
            let Some(a) = self.actual.links.get(&l.name) else {
                continue;
            };
            let accepted: &[&'static str] = match l.kind {
                LinkKind::Vrf { .. } => &["vrf"],
                LinkKind::Dummy => &["dummy", "ifb"],
                LinkKind::Vlan { .. } => &["vlan"],
                LinkKind::Veth { .. } => &["veth"],
                LinkKind::Bridge => &["bridge"],
                LinkKind::Vxlan { .. } => &["vxlan"],
                LinkKind::Existing => continue,
            };
            if !accepted.contains(&a.kind.as_str()) {
                return Err(PlanError::ForeignDevice {
                    name: l.name.clone(),
                    kind: a.kind.clone(),
                    wanted: accepted[0],
                });
            }
        }
        Ok(())
    }

    pub(super) fn links(&mut self) {
        let desired: Vec<_> = self.desired.links.iter().collect();
        // The peers of the veths this plan creates come with them: the
        // desired state names a peer as `Existing`, to be brought up.
        let born_with_peer: BTreeSet<DevName> = desired
            .iter()
            .filter(|l| !self.actual.links.contains_key(&l.name))
            .filter_map(|l| match &l.kind {
                LinkKind::Veth { peer } => Some(peer.clone()),
                _ => None,
            })
            .collect();
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
                // An existing device of the right kind is adopted (a node
                // set up by the Python agent; see `check_device_kinds`).
                Some(_) if self.vxlan_taken_as_l2(l) => {
                    self.skip(
                        format!("link {}", l.name),
                        "re-created once FRR holds its L3 VNI's configuration (it was an L2 VNI's)",
                    );
                    let op = Op::DelLink {
                        name: l.name.clone(),
                    };
                    self.push(Group::Unwire, rank::LINK_DEL, Some(Class::Base), op);
                    continue;
                }
                Some(a) => ops.extend(settle(l, Some(a)).into_iter().map(base)),
                None if l.kind == LinkKind::Existing && born_with_peer.contains(&l.name) => {
                    ops.extend(settle(l, None).into_iter().map(base));
                    self.created.insert(l.name.clone());
                }
                None if l.kind == LinkKind::Existing => {
                    self.skip(
                        format!("link {}", l.name),
                        "the device does not exist and is not the agent's to create",
                    );
                    continue;
                }
                None => {
                    // zebra must know the VNI as an L3 VNI (the VRF's `vni`
                    // line) before its VXLAN device appears: a device seen
                    // first is taken as an L2 VNI, and the switch to L3 loses
                    // the remote VTEPs' router-MAC entries (traffic
                    // blackholes; FRR 8.4, docs/evpn.md). So the device waits
                    // until FRR holds the text. An L2 VNI's device waits too,
                    // so that its first type-2/type-3 routes carry the
                    // annotations' RD and route targets.
                    let frr_ready = self.desired.frr_config.is_none()
                        || (!self.actual.frr.unknown && self.actual.frr.has_our_config);
                    if let (LinkKind::Vxlan { vni, .. }, false) = (&l.kind, frr_ready) {
                        self.waiting_vnis.insert(*vni);
                        self.skip(
                            format!("link {}", l.name),
                            "waiting for FRR to hold the VNI's configuration",
                        );
                        continue;
                    }
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
                    ops.extend(settle(l, None).into_iter().map(base));
                    self.created.insert(l.name.clone());
                }
            }
            for (g, r, c, op) in ops {
                self.push(g, r, c, op);
            }
        }
    }

    /// Whether `l` is a VXLAN device the node has in a bridge in no VRF
    /// (an L2 VNI's) that the desired state puts into a VRF (an L3 VNI's,
    /// e.g. a network switched from `l2` to `l3` under `exposing_method =
    /// dynamic`). zebra took the device for an L2 VNI; FRR 8.4 then loses
    /// the remote VTEPs' router-MAC entries when the VNI becomes L3, so the
    /// device goes and is created again once FRR holds the L3 text, as a
    /// new L3 VNI's is (docs/evpn.md, "Order with the VXLAN device").
    fn vxlan_taken_as_l2(&self, l: &Link) -> bool {
        let (LinkKind::Vxlan { vni, .. }, Some(bridge)) = (&l.kind, &l.master) else {
            return false;
        };
        let into_vrf = self
            .desired
            .links
            .iter()
            .any(|b| &b.name == bridge && b.kind == LinkKind::Bridge && b.master.is_some());
        let a = &self.actual.links;
        // The L2 VNI structure the agent builds (docs/ownership.md): the
        // device with that VNI in the bridge, the bridge in no VRF.
        let was_l2 = a.get(&l.name).is_some_and(|x| {
            x.master.as_ref() == Some(bridge) && x.vxlan.as_ref().is_some_and(|i| i.vni == *vni)
        }) && a
            .get(bridge)
            .is_some_and(|b| b.kind == "bridge" && b.master.is_none());
        into_vrf && was_l2
    }

    /// The devices the provider bridges reach the fabric through: the mapped
    /// bridges and their VLAN devices (desired or present).
    pub(super) fn provider_devices(&self) -> BTreeSet<DevName> {
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

    /// VLAN devices the agent named after a mapped bridge, no longer wanted.
    pub(super) fn link_leftovers(&mut self) {
        let (d, a) = (self.desired, self.actual);
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
}
