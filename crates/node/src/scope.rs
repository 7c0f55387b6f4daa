//! What a reconcile reads of the node beyond links, addresses, rules and
//! neighbours ([`Scope`]), derived from the desired state.

use std::collections::BTreeSet;

use obgp_netmodel::{DesiredNode, DevName};

/// What the observer reads beyond links, addresses, rules and neighbours.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    /// The VRF table (`bgp_vrf_table_id`).
    pub vrf_table: u32,
    /// Bridges whose rt_tables entry names a table to read.
    pub bridge_tables: BTreeSet<DevName>,
    /// More tables to read by number.
    pub tables: BTreeSet<u32>,
    pub sysctl_keys: BTreeSet<String>,
    /// OVS bridges to read ports and cookie-999/998 flows of.
    pub ovs_bridges: BTreeSet<DevName>,
    /// Lines FRR's running configuration must hold for our config to count as applied.
    pub frr_lines: Vec<String>,
    /// An EVPN mode ([`DesiredNode::evpn`]): the tables of the agent-shaped
    /// VRFs on the node (`vrf-<n>` with table `n`) are read, and FRR's
    /// running configuration is read for its EVPN VRFs even when the
    /// desired state has no FRR text (the last VNI went: del-vrf is due).
    pub evpn: bool,
}

impl Scope {
    /// What the planner needs to see for this desired state.
    pub fn for_desired(d: &DesiredNode) -> Scope {
        Scope {
            vrf_table: d.vrf_table,
            bridge_tables: d.bridge_tables.clone(),
            // Numbered tables the desired state writes to, so that its
            // routes there are seen (else they would be re-planned forever).
            tables: obgp_plan::plan::numbered_tables(d)
                .into_iter()
                // A wanted VNI's VRF table is its number.
                .chain(d.evpn_vnis.iter().copied())
                .collect(),
            sysctl_keys: d.sysctls.iter().map(|s| s.key.clone()).collect(),
            ovs_bridges: d
                .bridge_tables
                .iter()
                .cloned()
                .chain(d.flows.iter().map(|f| f.bridge.clone()))
                .chain(d.ovs_ports.iter().map(|p| p.bridge.clone()))
                .chain(d.fdb.iter().map(|e| e.bridge.clone()))
                // The mapped bridges, where leftover EVPN ports and flows
                // are judged also when no VNI wants them.
                .chain(d.evpn.iter().flat_map(|e| e.bridges.iter().cloned()))
                .collect(),
            frr_lines: d
                .frr_config
                .as_deref()
                .map(crate::commands::frr_check_lines)
                .unwrap_or_default(),
            evpn: d.evpn.is_some(),
        }
    }

    /// Whether FRR's running configuration is read at all: for our lines,
    /// or for the EVPN VRFs an EVPN mode may have to remove.
    pub fn reads_frr(&self) -> bool {
        !self.frr_lines.is_empty() || self.evpn
    }
}
