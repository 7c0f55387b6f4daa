//! Static entries of Linux bridges' FDBs (`exposing_method = l2vni`): the
//! desired ones the bridge lacks, and the agent's that nothing wants.
//!
//! Order against the neighbour of the same VM on `br-<vni>`: zebra
//! advertises a MAC/IP route once it holds both the MAC (from the FDB, on
//! a local port) and the IP (from the neighbour on the bridge); it
//! withdraws the MAC/IP route when the neighbour goes and the MAC-only
//! route when the FDB entry goes. So the entry is added before the
//! neighbour (rank [`rank::BRIDGE_FDB`], in the same group) and deleted
//! after it ([`rank::BRIDGE_FDB_DEL`]): the peer never holds a MAC/IP
//! route whose MAC this node no longer pins.

use std::collections::BTreeSet;

use obgp_netmodel::{BridgeFdbEntry, DevName, MacAddr};

use super::order::rank;
use super::Group;
use super::Planner;
use crate::op::Op;

impl Planner<'_> {
    /// Desired entries the kernel lacks (or holds on another port, or as
    /// a learned entry, which it does not report): added with replace.
    /// Skipped while the port or the bridge does not exist.
    pub(super) fn bridge_fdb(&mut self) {
        for (e, class) in &self.desired.bridge_fdb {
            if self.actual.bridge_fdb.contains(e) {
                continue;
            }
            if !self.will_exist(&e.port) || !self.will_exist(&e.bridge) {
                self.skip(format!("bridge-fdb {e}"), "the device does not exist");
                continue;
            }
            self.push(
                Self::wiring_group(*class),
                rank::BRIDGE_FDB,
                Some(*class),
                Op::AddBridgeFdb(e.clone()),
            );
        }
    }

    /// The kernel's static entries that are the agent's and that no
    /// desired entry has the key of (docs/ownership.md, "EVPN"): on an
    /// agent-named veth end (`vrf<uuid[:11]>`) enslaved to the bridge of
    /// a structure-proven L2 VNI. Entries on any other port (the VXLAN
    /// device, an operator's port) or bridge are never touched. An entry
    /// whose key is wanted on another port is moved by the add, not
    /// deleted. Nor is the kernel's copy of a wanted entry on one of the
    /// port's VLANs: a bridge with VLAN support adds an entry given without
    /// VLAN once per VLAN of the port too (its default PVID 1, also with
    /// vlan_filtering off, as on Debian's 6.1 kernel) and deletes the copies
    /// with it; zebra keys a VLAN-unaware bridge's MACs without VLAN, so
    /// deleting a copy would make it drop the MAC. Only the EVPN modes
    /// judge them.
    pub(super) fn bridge_fdb_leftovers(&mut self) {
        if self.desired.evpn.is_none() || self.actual.bridge_fdb.is_empty() {
            return;
        }
        let ours: BTreeSet<(&DevName, &DevName)> = self
            .proven
            .values()
            .filter(|v| v.vrf.is_none())
            .filter_map(|v| Some((v.bridge.as_ref()?, &v.ports)))
            .flat_map(|(bridge, ports)| ports.iter().map(move |p| (bridge, p)))
            .collect();
        let wanted: BTreeSet<(&DevName, &MacAddr, Option<u16>)> = self
            .desired
            .bridge_fdb
            .keys()
            .map(|w| (&w.bridge, &w.mac, w.vlan))
            .collect();
        let kernel_copy = |e: &BridgeFdbEntry| {
            e.vlan.is_some()
                && self.desired.bridge_fdb.keys().any(|w| {
                    w.vlan.is_none() && w.bridge == e.bridge && w.mac == e.mac && w.port == e.port
                })
        };
        let prev = self.previous;
        let gone: Vec<BridgeFdbEntry> = self
            .actual
            .bridge_fdb
            .iter()
            .filter(|e| ours.contains(&(&e.bridge, &e.port)))
            .filter(|e| !wanted.contains(&(&e.bridge, &e.mac, e.vlan)))
            .filter(|e| !kernel_copy(e))
            .filter(|e| !self.leaves_bridge(&e.port, &e.bridge))
            .cloned()
            .collect();
        for e in gone {
            let class = prev.and_then(|p| p.bridge_fdb.get(&e)).copied();
            self.push(
                Group::Unwire,
                rank::BRIDGE_FDB_DEL,
                class,
                Op::DelBridgeFdb(e),
            );
        }
    }

    /// Whether the desired state keeps `port` but enslaves it elsewhere
    /// than `bridge` (an `l2` network turned `l3` under `dynamic` moves its
    /// veth end into the VNI's VRF): the kernel drops the port's FDB
    /// entries when its master changes, which this plan does before its
    /// cleanup, so deleting them would only fail with ENOENT.
    fn leaves_bridge(&self, port: &DevName, bridge: &DevName) -> bool {
        self.desired
            .links
            .iter()
            .find(|l| &l.name == port)
            .is_some_and(|l| l.master.as_ref() != Some(bridge))
    }
}
