//! FRR: the agent's configuration, applied when FRR lacks it, and only when
//! FRR's state was read. The one thing removed is an EVPN mode's VRF that
//! no VNI wants any more (del-vrf).

use obgp_netmodel::frr::{del_vrf, Asn, DelVrf};
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
}
