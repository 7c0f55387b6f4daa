//! FRR: the agent's configuration, applied when FRR lacks it, and only when
//! FRR's state was read. What is removed: an EVPN mode's VRF that no VNI
//! wants any more (del-vrf), and the l2vni method's `vni` blocks (or their
//! lines) that the annotations no longer give.

use obgp_netmodel::frr::{del_vrf, l2_vni_removal, Asn, DelVrf, L2VniRemoval};
use obgp_netmodel::names::evpn as names;
use obgp_netmodel::{Class, DevName};

use super::order::rank;
use super::Group;
use super::Planner;
use crate::op::Op;

impl Planner<'_> {
    pub(super) fn frr(&mut self) {
        if let Some(config) = &self.desired.frr_config {
            if self.actual.frr.unknown {
                self.skip(
                    "FRR configuration".to_string(),
                    "FRR's running configuration could not be read",
                );
            } else if !self.actual.frr.has_our_config {
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

    /// The agent-shaped EVPN VRFs of FRR's running configuration that no
    /// VNI wants, with `delete_vrf_on_disconnect`: del-vrf, naming the
    /// interface stanzas of that VRF (those FRR placed in it, and the
    /// unplaced ones that are this VNI's devices on the node).
    pub(super) fn evpn_frr_leftovers(&mut self) {
        let Some(cleanup) = &self.desired.evpn else {
            return;
        };
        if !cleanup.delete_vrf || self.actual.frr.unknown {
            return;
        }
        let frr = &self.actual.frr;
        let mut removals = Vec::new();
        for (vni, seen) in &frr.evpn_vrfs {
            if self.desired.evpn_vnis.contains(vni) {
                continue;
            }
            let (Some(vrf), Some(asn)) = (names::vrf(*vni), seen.asn.as_deref()) else {
                continue;
            };
            let Ok(asn) = asn.parse::<Asn>() else {
                self.skip(
                    format!("FRR vrf {vrf}"),
                    format!("its AS {asn:?} does not parse"),
                );
                continue;
            };
            let mut interfaces: Vec<DevName> = seen
                .interfaces
                .iter()
                .filter_map(|i| DevName::new(i).ok())
                .collect();
            // The VRF's veth end on the node: upstream names the SB one
            // (`veth-vrf-<n>`) whether FRR has a stanza for it or not.
            if let Some(devs) = self.proven.get(vni) {
                for p in &devs.ports {
                    let veth = names::vni_of_sb_veth(p.as_str()) == Some(*vni)
                        || (names::is_nb_vrf_veth(p.as_str())
                            && frr.evpn_unplaced_interfaces.contains(p.as_str()));
                    if veth && !interfaces.contains(p) {
                        interfaces.push(p.clone());
                    }
                }
            }
            removals.push(del_vrf(&DelVrf {
                vrf,
                asn,
                interfaces,
            }));
        }
        for config in removals {
            self.push(
                Group::Unwire,
                rank::FRR,
                Some(Class::Base),
                Op::RemoveFrr { config },
            );
        }
    }

    /// The l2vni method's `vni <n>` blocks in FRR's running configuration,
    /// made what the desired state gives. A wanted VNI's block loses the
    /// lines the annotations no longer list (`no route-target ...`, `no
    /// rd`), or goes whole when they list nothing (FRR then derives the RD
    /// and targets). An unwanted VNI's block goes when it is the agent's:
    /// the previous desired state had the VNI, or the node holds its
    /// structure-proven L2 devices (docs/ownership.md, "EVPN"); any other
    /// block is the operator's. Planned after the text that adds the new
    /// lines, so a target is replaced before the old one goes (O1, O2).
    pub(super) fn l2_vni_frr_leftovers(&mut self) {
        if self.desired.evpn.is_none() || self.actual.frr.unknown {
            return;
        }
        let frr = &self.actual.frr;
        let mut removals = Vec::new();
        for (vni, held) in &frr.l2_vnis {
            match self.desired.l2_vni_frr.get(vni) {
                Some(want) if want.is_empty() && !held.is_empty() => {
                    removals.push(L2VniRemoval::Block(*vni))
                }
                Some(want) => {
                    let lines = held.surplus_over(want);
                    if !lines.is_empty() {
                        removals.push(L2VniRemoval::Lines { vni: *vni, lines });
                    }
                }
                None => {
                    let was_ours = self
                        .previous
                        .is_some_and(|p| p.l2_vni_frr.contains_key(vni));
                    if was_ours || self.proven.contains_key(vni) {
                        removals.push(L2VniRemoval::Block(*vni));
                    }
                }
            }
        }
        if removals.is_empty() {
            return;
        }
        let Some(asn) = frr.default_asn.as_deref() else {
            return;
        };
        let Ok(asn) = asn.parse::<Asn>() else {
            self.skip(
                "FRR L2 VNI blocks".to_string(),
                format!("the default instance's AS {asn:?} does not parse"),
            );
            return;
        };
        let config = l2_vni_removal(&asn, &removals);
        self.push(
            Group::Unwire,
            rank::FRR,
            Some(Class::Base),
            Op::RemoveFrr { config },
        );
    }
}
