//! `Actual`: what the node holds, in the parts the agent reads or owns.
//!
//! The observer fills it from the kernel, OVS and FRR; the simulated node fills it
//! from a scenario's `initial_node`. It (de)serialises in the scenarios' node
//! state shape (`fixtures/conformance/scenarios/README.md`), so golden states
//! load into it directly and our states print the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;

use obgp_netmodel::{
    proto, scope, Address, BridgeFdbEntry, BridgePort, DevName, IpNet, MacAddr, ModelError,
    Neighbour, ProxyNeighbour, RouteType,
};
use serde::{Deserialize, Serialize};

use crate::shared::SharedSet;

/// The observed node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "state::NodeState", into = "state::NodeState")]
pub struct Actual {
    /// Links by name.
    pub links: BTreeMap<DevName, ActualLink>,
    /// The large sets are shared with the netlink mirror, not copied
    /// ([`SharedSet`]).
    pub addresses: SharedSet<Address>,
    pub rules: SharedSet<KernelRule>,
    /// Routes of the tables the agent reads (per-bridge tables and the VRF table).
    pub routes: SharedSet<KernelRoute>,
    /// Permanent neighbours (other states are the kernel's, never read);
    /// shared with the mirror like the addresses (one per provider VM IP).
    pub neighbours: SharedSet<Neighbour>,
    pub proxy_neighbours: BTreeSet<ProxyNeighbour>,
    /// Static entries of Linux bridges' FDBs on bridge ports named like
    /// the agent's L2 VNI veth ends (the node reads no others: learned,
    /// permanent and foreign-port entries are the kernel's or another
    /// tool's); shared with the mirror.
    pub bridge_fdb: SharedSet<BridgeFdbEntry>,
    /// The sysctls the agent writes, by dotted key.
    pub sysctls: BTreeMap<String, String>,
    pub rt_tables: RtTables,
    /// OVS bridges by name: their ports and the flows with the agent's cookies.
    pub bridges: BTreeMap<DevName, OvsBridge>,
    /// Bridges whose ports and flows could not be read (`ovs-ofctl` failed
    /// or timed out): unknown, not absent, so no flow is added or deleted
    /// on them. Never part of a scenario file.
    pub bridges_unknown: BTreeSet<DevName>,
    pub frr: FrrState,
}

/// One link as the kernel reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActualLink {
    pub index: u32,
    /// The rtnetlink kind (`vrf`, `dummy`, `vlan`, `veth`, `bridge`,
    /// `openvswitch`, ...); `ether`/`loopback` for devices without one.
    pub kind: String,
    pub mac: Option<MacAddr>,
    /// Administratively up (`IFF_UP`).
    pub up: bool,
    pub master: Option<DevName>,
    /// The lower device of a VLAN (IFLA_LINK).
    pub parent: Option<DevName>,
    pub vlan_id: Option<u16>,
    pub vrf_table: Option<u32>,
    /// A VXLAN device's identity (`IFLA_VXLAN_*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vxlan: Option<VxlanInfo>,
    /// The bridge-port flags of a device enslaved to a Linux bridge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bridge_port: Option<BridgePort>,
}

impl ActualLink {
    /// A link of `kind` with only its index, MAC and state known: no master,
    /// parent, VLAN, VRF table, VXLAN identity or bridge-port flags.
    pub fn new(index: u32, kind: impl Into<String>, mac: Option<MacAddr>, up: bool) -> ActualLink {
        ActualLink {
            index,
            kind: kind.into(),
            mac,
            up,
            master: None,
            parent: None,
            vlan_id: None,
            vrf_table: None,
            vxlan: None,
            bridge_port: None,
        }
    }
}

/// What identifies a VXLAN device (the kernel cannot change these in
/// place: a different one is deleted and created again).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VxlanInfo {
    pub vni: u32,
    pub local: Option<IpAddr>,
    pub dstport: u16,
    pub learning: bool,
}

/// A policy rule as the kernel holds it: always with a priority.
///
/// Ordered by family, destination, table, then priority (not the kernel's
/// evaluation order, which is by priority): the rules to one destination
/// are a range of a sorted set, whatever priority the kernel gave them.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct KernelRule {
    pub v6: bool,
    /// `None` is `from all` without a destination selector.
    pub dst: Option<IpNet>,
    pub table: u32,
    pub priority: u32,
}

/// A route as the kernel holds it, in a numbered table.
///
/// Normalised so that equal kernel routes compare equal: IPv6 routes have
/// scope universe (the kernel ignores the scope of IPv6 routes), and the
/// kernel's default metric (0 for IPv4, 1024 for IPv6) is `None`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct KernelRoute {
    pub table: u32,
    pub v6: bool,
    /// `None` is the default route.
    pub dst: Option<IpNet>,
    pub metric: Option<u32>,
    pub dev: Option<DevName>,
    pub via: Option<IpAddr>,
    pub proto: u8,
    pub scope: u8,
    pub kind: RouteType,
}

impl KernelRoute {
    /// The kernel's identity of a route: `ip route replace` with the same key
    /// overwrites it, `ip route del` with it removes it.
    pub fn key(&self) -> (u32, bool, Option<IpNet>, Option<u32>) {
        (self.table, self.v6, self.dst, self.metric)
    }

    /// Applies the kernel's normalisation (see the type's doc).
    pub fn normalised(mut self) -> KernelRoute {
        self.dst = self.dst.map(|d| d.trunc());
        if self.v6 {
            self.scope = scope::UNIVERSE;
            if self.metric == Some(1024) {
                self.metric = None;
            }
        } else if self.metric == Some(0) {
            self.metric = None;
        }
        self
    }
}

/// An OVS bridge: its ports (name -> ofport) and the flows read from it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OvsBridge {
    pub ports: BTreeMap<String, u32>,
    pub flows: BTreeSet<OfFlow>,
    /// Its static FDB entries, read only where the agent writes them (the
    /// `ovn` exposing method); learned ones are never read.
    #[serde(default)]
    pub fdb: BTreeSet<obgp_netmodel::FdbEntry>,
}

/// A concrete OpenFlow flow: what `ovs-ofctl add-flow` takes and
/// `dump-flows` prints. Matches are kept as a sorted set of tokens so that
/// field order does not matter; actions are normalised to the OpenFlow 1.0
/// spelling (`set_field:M->eth_dst` is `mod_dl_dst:M`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct OfFlow {
    pub cookie: u64,
    pub table: u8,
    pub priority: u16,
    pub matches: BTreeSet<String>,
    pub actions: String,
}

impl OfFlow {
    /// Normalises the action spellings OVS prints for the same action.
    pub fn normalise_actions(actions: &str) -> String {
        actions
            .split(',')
            .map(|a| {
                if let Some(rest) = a.strip_prefix("set_field:") {
                    if let Some(mac) = rest.strip_suffix("->eth_dst") {
                        return format!("mod_dl_dst:{mac}");
                    }
                    if let Some(mac) = rest.strip_suffix("->eth_src") {
                        return format!("mod_dl_src:{mac}");
                    }
                }
                a.to_string()
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The flow as `ovs-ofctl add-flow` takes it, upstream's field order:
    /// `cookie=999,priority=900,ip,in_port=5,actions=...`. The matches are
    /// printed protocol keywords first, then `field=value` tokens.
    pub fn add_flow_arg(&self) -> String {
        let mut out = format!("cookie={}", self.cookie);
        if self.table != 0 {
            out.push_str(&format!(",table={}", self.table));
        }
        out.push_str(&format!(",priority={}", self.priority));
        for m in self.ordered_matches() {
            out.push(',');
            out.push_str(m);
        }
        out.push_str(",actions=");
        out.push_str(&self.actions);
        out
    }

    /// The strict match that `ovs-ofctl --strict del-flows` takes to remove
    /// exactly this flow (cookie masked exactly).
    pub fn del_flow_arg(&self) -> String {
        let mut out = format!(
            "cookie={:#x}/-1,table={},priority={}",
            self.cookie, self.table, self.priority
        );
        for m in self.ordered_matches() {
            out.push(',');
            out.push_str(m);
        }
        out
    }

    fn ordered_matches(&self) -> Vec<&str> {
        let (kw, fields): (Vec<&str>, Vec<&str>) = self
            .matches
            .iter()
            .map(String::as_str)
            .partition(|m| !m.contains('='));
        kw.into_iter().chain(fields).collect()
    }
}

/// What the node's FRR holds of ours.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrrState {
    /// What `show ip bgp summary json` reported as router-id (scenario data).
    pub router_id_reported: Option<String>,
    /// How many configurations were applied (scenario data; the model counts).
    pub applied_configs: u32,
    /// Whether FRR's running configuration already holds our fragment.
    pub has_our_config: bool,
    /// The running configuration could not be read (vtysh failed or timed
    /// out): whether it holds our fragment is unknown, so nothing is planned
    /// for FRR until a read succeeds.
    #[serde(default)]
    pub unknown: bool,
    /// The agent-shaped EVPN VRFs of the running configuration, by VNI: a
    /// `vrf vrf-<n>` stanza holding `vni <n>` (see docs/ownership.md).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub evpn_vrfs: BTreeMap<u32, FrrEvpnVrf>,
    /// Agent-named interface stanzas whose VRF the running configuration
    /// does not tell (FRR with VRF-lite prints `interface NAME` alone).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub evpn_unplaced_interfaces: BTreeSet<String>,
}

impl FrrState {
    /// Records what a running configuration (or a text the agent applied)
    /// says of the agent's EVPN VRFs.
    pub fn learn_evpn(&mut self, text: &str) {
        let seen = obgp_netmodel::frr::evpn_vrfs_of_running_config(text);
        for (vni, v) in seen.vrfs {
            self.evpn_vrfs.insert(
                vni,
                FrrEvpnVrf {
                    asn: v.asn,
                    interfaces: v.interfaces,
                },
            );
        }
        self.evpn_unplaced_interfaces
            .extend(seen.unplaced_interfaces);
    }

    /// Forgets the VRFs and interfaces a removal text (del-vrf) drops.
    pub fn forget_evpn(&mut self, removal: &str) {
        for line in removal.lines() {
            if let Some(vrf) = line.strip_prefix("no vrf ") {
                if let Some(vni) = obgp_netmodel::names::evpn::vni_of_vrf(vrf.trim()) {
                    self.evpn_vrfs.remove(&vni);
                }
            }
            if let Some(i) = line.strip_prefix("no interface ") {
                self.evpn_unplaced_interfaces.remove(i.trim());
            }
        }
    }
}

/// One agent-shaped EVPN VRF in FRR's running configuration: what its
/// del-vrf text names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrrEvpnVrf {
    /// The AS of its `router bgp <as> vrf vrf-<n>`, if there is one.
    pub asn: Option<String>,
    /// Interfaces of the VRF with agent EVPN names that have an
    /// `interface` stanza (the ND text's).
    pub interfaces: BTreeSet<String>,
}

/// A node state that does not parse, with the value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StateError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("invalid {what} {value:?}")]
    Bad { what: &'static str, value: String },
}

fn bad(what: &'static str, value: impl fmt::Display) -> StateError {
    StateError::Bad {
        what,
        value: value.to_string(),
    }
}

mod rt_tables;
/// The scenarios' JSON shape of a node state, and its conversion to and from [`Actual`].
pub mod state;

pub use rt_tables::RtTables;

impl Actual {
    /// A node as Linux boots it, before the agent: the default policy rules
    /// (IPv4: local, main and default; IPv6: local and main) and rt_tables
    /// with the reserved tables. Links, bridges and routes are the caller's.
    pub fn booted() -> Actual {
        let mut a = Actual::default();
        for (v6, priority, table) in [
            (false, 0, 255),
            (false, 32766, 254),
            (false, 32767, 253),
            (true, 0, 255),
            (true, 32766, 254),
        ] {
            a.rules.insert(KernelRule {
                v6,
                priority,
                dst: None,
                table,
            });
        }
        a.rt_tables = RtTables::from(RtTables::RESERVED);
        a
    }

    /// The routing protocol numbers the planner never deletes routes of:
    /// FRR's (O5) and the kernel's own (local/connected routes).
    pub fn route_is_foreign(r: &KernelRoute) -> bool {
        r.proto == proto::FRR || r.proto == proto::KERNEL || r.scope == scope::HOST
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_field_eth_dst_reads_as_mod_dl_dst() {
        assert_eq!(
            OfFlow::normalise_actions("set_field:aa:aa:aa:aa:aa:01->eth_dst,NORMAL"),
            "mod_dl_dst:aa:aa:aa:aa:aa:01,NORMAL"
        );
    }

    #[test]
    fn add_flow_argument_is_upstreams_text() {
        let f = OfFlow {
            cookie: 999,
            table: 0,
            priority: 900,
            matches: ["in_port=5".to_string(), "ip".to_string()].into(),
            actions: "mod_dl_dst:aa:aa:aa:aa:aa:01,NORMAL".into(),
        };
        assert_eq!(
            f.add_flow_arg(),
            "cookie=999,priority=900,ip,in_port=5,actions=mod_dl_dst:aa:aa:aa:aa:aa:01,NORMAL"
        );
        assert_eq!(
            f.del_flow_arg(),
            "cookie=0x3e7/-1,table=0,priority=900,ip,in_port=5"
        );
    }

    #[test]
    fn kernel_route_normalisation_makes_equal_routes_equal() {
        let r = KernelRoute {
            table: 1,
            v6: true,
            dst: Some("2001:db8::10/128".parse().unwrap()),
            metric: Some(1024),
            dev: Some(DevName::new("br-ex").unwrap()),
            via: None,
            proto: proto::BOOT,
            scope: scope::LINK,
            kind: RouteType::Unicast,
        };
        let n = r.normalised();
        assert_eq!(n.scope, scope::UNIVERSE);
        assert_eq!(n.metric, None);
    }
}
