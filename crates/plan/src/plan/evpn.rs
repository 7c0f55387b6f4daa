//! EVPN: which per-VNI devices, tables, ports, addresses and neighbours
//! are the agent's, and their leftovers (docs/ownership.md, "EVPN").
//!
//! A VNI is the agent's on the node when its devices have the structure the
//! agent builds, not merely its names: `vrf-<n>` is a VRF with table `n`,
//! and `vxlan-<n>` is a VXLAN device with VNI `n` enslaved to the bridge
//! `br-<n>`, which is enslaved to `vrf-<n>`. An operator's `br-foo`,
//! `vrf-blue` or a lone `lo-1` proves nothing and is never touched. Only the
//! EVPN modes (`DesiredNode::evpn`) judge EVPN leftovers at all. An L2
//! VNI (`exposing_method = l2vni`) is proven the same way without the VRF:
//! `br-<n>` in no VRF holding `vxlan-<n>` (VNI `n`).

use std::collections::{BTreeMap, BTreeSet};

use obgp_netmodel::names::evpn as names;
use obgp_netmodel::{BridgePort, Class, DevName, LinkKind};

use super::order::rank;
use super::Group;
use super::Planner;
use crate::actual::Actual;
use crate::op::Op;

/// The devices of one VNI that the node holds and the agent may remove.
#[derive(Debug, Default)]
pub(super) struct VniDevices {
    /// `lo-<n>` and the veth ends enslaved to the VRF (an L2 VNI: to the
    /// bridge): removed first.
    pub ports: Vec<DevName>,
    pub vxlan: Option<DevName>,
    pub bridge: Option<DevName>,
    /// `None` for an L2 VNI (`exposing_method = l2vni`), which has no VRF
    /// and no routing table.
    pub vrf: Option<DevName>,
}

impl VniDevices {
    fn all(&self) -> impl Iterator<Item = &DevName> {
        self.ports
            .iter()
            .chain(&self.vxlan)
            .chain(&self.bridge)
            .chain(&self.vrf)
    }
}

/// Whether `name` is one of the names the agent gives the VRF-side end of
/// an EVPN veth, or the SB driver's `lo-<n>`, for VNI `vni`.
fn is_vni_port_name(name: &str, vni: u32) -> bool {
    names::is_nb_vrf_veth(name)
        || names::vni_of_sb_veth(name) == Some(vni)
        || names::vni_of_lo(name) == Some(vni)
}

/// The VNIs whose device structure on the node is the agent's, with the
/// devices of each.
pub(super) fn proven_vnis(a: &Actual) -> BTreeMap<u32, VniDevices> {
    let mut out = BTreeMap::new();
    for (name, l) in &a.links {
        let Some(vni) = names::vni_of_vrf(name.as_str()) else {
            continue;
        };
        if l.kind != "vrf" || l.vrf_table != Some(vni) {
            continue;
        }
        let (Some(br), Some(vx)) = (names::bridge(vni), names::vxlan(vni)) else {
            continue;
        };
        let bridge_ok = a
            .links
            .get(&br)
            .is_some_and(|b| b.kind == "bridge" && b.master.as_ref() == Some(name));
        let vxlan_ok = a.links.get(&vx).is_some_and(|x| {
            x.kind == "vxlan"
                && x.master.as_ref() == Some(&br)
                && x.vxlan.as_ref().is_some_and(|i| i.vni == vni)
        });
        if !(bridge_ok && vxlan_ok) {
            continue;
        }
        let ports = a
            .links
            .iter()
            .filter(|(n, p)| {
                p.master.as_ref() == Some(name)
                    && matches!(p.kind.as_str(), "veth" | "dummy" | "ifb")
                    && is_vni_port_name(n.as_str(), vni)
            })
            .map(|(n, _)| n.clone())
            .collect();
        out.insert(
            vni,
            VniDevices {
                ports,
                vxlan: Some(vx),
                bridge: Some(br),
                vrf: Some(name.clone()),
            },
        );
    }
    for (vni, devs) in proven_l2_vnis(a) {
        out.entry(vni).or_insert(devs);
    }
    out
}

/// The L2 VNIs (`exposing_method = l2vni`) whose structure on the node is
/// the agent's: `br-<n>`, a bridge in no VRF, holding `vxlan-<n>` with
/// VNI `n`; with the agent-named veth ends (`vrf<uuid[:11]>`) in it.
fn proven_l2_vnis(a: &Actual) -> BTreeMap<u32, VniDevices> {
    let mut out = BTreeMap::new();
    for (name, l) in &a.links {
        let Some(vni) = name
            .as_str()
            .strip_prefix("br-")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        // The canonical spelling only: `br-01` is not the agent's.
        if names::bridge(vni).as_ref() != Some(name) || l.kind != "bridge" || l.master.is_some() {
            continue;
        }
        let Some(vx) = names::vxlan(vni) else {
            continue;
        };
        let vxlan_ok = a.links.get(&vx).is_some_and(|x| {
            x.kind == "vxlan"
                && x.master.as_ref() == Some(name)
                && x.vxlan.as_ref().is_some_and(|i| i.vni == vni)
        });
        if !vxlan_ok {
            continue;
        }
        let ports = a
            .links
            .iter()
            .filter(|(n, p)| {
                p.master.as_ref() == Some(name)
                    && p.kind == "veth"
                    && names::is_nb_vrf_veth(n.as_str())
            })
            .map(|(n, _)| n.clone())
            .collect();
        out.insert(
            vni,
            VniDevices {
                ports,
                vxlan: Some(vx),
                bridge: Some(name.clone()),
                vrf: None,
            },
        );
    }
    out
}

/// Whether the desired state wants `devs`' bridge as an L2 VNI's: a
/// bridge in no VRF.
fn wanted_as_l2(d: &obgp_netmodel::DesiredNode, devs: &VniDevices) -> bool {
    d.links.iter().any(|l| {
        Some(&l.name) == devs.bridge.as_ref() && l.kind == LinkKind::Bridge && l.master.is_none()
    })
}

/// The kernel's own IPv6 link-local address of a device (never the agent's).
fn is_link_local_v6(ip: std::net::IpAddr) -> bool {
    matches!(ip, std::net::IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80)
}

/// Whether `name` is an OVS port name of the agent's EVPN wiring: the OVS
/// end of a veth (`ovs<uuid[:11]>`, `veth-ovs-<n>`) or `vlan-<n>`.
fn is_agent_ovs_port(name: &str) -> bool {
    let nb = name.len() == 14
        && name.starts_with("ovs")
        && name.as_bytes()[11] == b'-'
        && name[3..].bytes().enumerate().all(|(i, b)| {
            if i == 8 {
                b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        });
    let numbered = |prefix: &str| {
        name.strip_prefix(prefix).is_some_and(|d| {
            !d.is_empty() && !d.starts_with('0') && d.bytes().all(|b| b.is_ascii_digit())
        })
    };
    nb || numbered("veth-ovs-") || numbered("vlan-")
}

impl Planner<'_> {
    /// The routing tables of the EVPN VRFs: the desired VNIs' and the
    /// proven ones'. Their routes are announcements (zebra redistributes
    /// them as type-5 routes).
    pub(super) fn evpn_tables(&self) -> BTreeSet<u32> {
        let mut out = self.desired.evpn_vnis.clone();
        if self.desired.evpn.is_some() {
            let l3 = self.proven.iter().filter(|(_, d)| d.vrf.is_some());
            out.extend(l3.map(|(vni, _)| *vni));
        }
        out
    }

    /// Devices of the agent's VNIs (proven on the node or desired): their
    /// addresses and permanent neighbours are the agent's.
    pub(super) fn evpn_devices(&self) -> BTreeSet<DevName> {
        let mut out: BTreeSet<DevName> = self
            .proven
            .values()
            .flat_map(|v| v.all().cloned())
            .collect();
        for vni in &self.desired.evpn_vnis {
            for l in &self.desired.links {
                if l.master.as_ref() == names::vrf(*vni).as_ref()
                    || names::vrf(*vni).as_ref() == Some(&l.name)
                {
                    out.insert(l.name.clone());
                }
            }
        }
        // The bridges of desired VXLAN devices (an L2 VNI's `br-<n>` is in
        // no VRF) and what the desired state puts in them.
        let bridges: BTreeSet<&DevName> = self
            .desired
            .links
            .iter()
            .filter(|l| matches!(l.kind, LinkKind::Vxlan { .. }))
            .filter_map(|l| l.master.as_ref())
            .collect();
        for l in &self.desired.links {
            if bridges.contains(&l.name) || l.master.as_ref().is_some_and(|m| bridges.contains(m)) {
                out.insert(l.name.clone());
            }
        }
        out
    }

    /// Bridge-port flags of desired VXLAN devices (planned after their
    /// master is set).
    pub(super) fn bridge_ports(&mut self) {
        for l in &self.desired.links {
            let (LinkKind::Vxlan { .. }, Some(_)) = (&l.kind, &l.master) else {
                continue;
            };
            if !self.will_exist(&l.name) {
                continue;
            }
            let have = self.actual.links.get(&l.name).and_then(|a| a.bridge_port);
            if have != Some(BridgePort::EVPN) {
                self.push(
                    Group::Base,
                    rank::BRIDGE_PORT,
                    Some(Class::Base),
                    Op::SetBridgePort {
                        name: l.name.clone(),
                        flags: BridgePort::EVPN,
                    },
                );
            }
        }
    }

    /// The kernel local routes the desired state suppresses (the SB EVPN
    /// driver's `lo-<vni>` addresses): deleted where they appear, after the
    /// address that makes them (the kernel adds one per address).
    pub(super) fn suppressed_local_routes(&mut self) {
        if self.desired.suppressed_local_routes.is_empty() {
            return;
        }
        // One pass over the node's routes, looked up by (table, dst, dev):
        // a tenant network may put thousands of addresses on `lo-<vni>`.
        let wanted_gone: BTreeSet<(u32, Option<obgp_netmodel::IpNet>, Option<&DevName>)> = self
            .desired
            .suppressed_local_routes
            .iter()
            .map(|s| {
                (
                    self.resolve(&s.table),
                    s.dst.map(|d| d.trunc()),
                    s.dev.as_ref(),
                )
            })
            .collect();
        let ops: Vec<Op> = self
            .actual
            .routes
            .iter()
            .filter(|r| r.kind == obgp_netmodel::RouteType::Local)
            .filter(|r| wanted_gone.contains(&(r.table, r.dst.map(|d| d.trunc()), r.dev.as_ref())))
            .map(|r| Op::DelRoute {
                table_name: self.table_name(r.table),
                route: r.clone(),
            })
            .collect();
        for op in ops {
            self.push(Group::Withdraw, rank::ROUTE, Some(Class::TenantVm), op);
        }
    }

    /// Desired OVS ports the bridge lacks.
    pub(super) fn ovs_ports(&mut self) {
        for p in &self.desired.ovs_ports {
            let what = format!("ovs-port {} {}", p.bridge, p.name);
            let Some(bridge) = self.actual.bridges.get(&p.bridge) else {
                let why = if self.actual.bridges_unknown.contains(&p.bridge) {
                    "the bridge's ports could not be read"
                } else {
                    "the bridge is not in OVS"
                };
                self.skip(what, why);
                continue;
            };
            if bridge.ports.contains_key(p.name.as_str()) {
                continue;
            }
            if !p.internal && !self.will_exist(&p.name) {
                self.skip(what, format!("device {} does not exist", p.name));
                continue;
            }
            self.push(
                Group::Base,
                rank::OVS_PORT,
                Some(Class::Base),
                Op::AddOvsPort(p.clone()),
            );
        }
    }

    /// EVPN leftovers: the agent-named ports on the provider bridges, the
    /// addresses and neighbours on the agent's VNI devices, the devices of
    /// the proven VNIs nothing wants, and their FRR VRFs.
    pub(super) fn evpn_leftovers(&mut self) {
        let Some(cleanup) = &self.desired.evpn else {
            return;
        };
        let (d, a) = (self.desired, self.actual);
        // OVS ports.
        let want_ports: BTreeSet<(&DevName, &str)> = d
            .ovs_ports
            .iter()
            .map(|p| (&p.bridge, p.name.as_str()))
            .collect();
        let mut bridges: BTreeSet<&DevName> = cleanup.bridges.iter().collect();
        bridges.extend(d.ovs_ports.iter().map(|p| &p.bridge));
        for br in bridges {
            let Some(b) = a.bridges.get(br) else { continue };
            for port in b.ports.keys() {
                if is_agent_ovs_port(port) && !want_ports.contains(&(br, port.as_str())) {
                    if let Ok(name) = DevName::new(port) {
                        let op = Op::DelOvsPort {
                            bridge: br.clone(),
                            name,
                        };
                        self.push(Group::Unwire, rank::OVS_PORT, Some(Class::Base), op);
                    }
                }
            }
        }
        // Addresses and neighbours on the VNI devices.
        let devices = self.evpn_devices();
        let vrf_side: BTreeSet<&DevName> = devices.iter().collect();
        for ad in a.addresses.iter() {
            if vrf_side.contains(&ad.dev)
                && !d.addresses.contains_key(ad)
                && !is_link_local_v6(ad.net.addr())
            {
                // lo-<n>'s /32s are what zebra announces.
                let group = if names::vni_of_lo(ad.dev.as_str()).is_some() {
                    Group::Withdraw
                } else {
                    Group::Unwire
                };
                self.leftover(group, rank::ADDRESS, Op::DelAddress(ad.clone()));
            }
        }
        for n in &a.neighbours {
            if vrf_side.contains(&n.dev)
                && !d
                    .neighbours
                    .keys()
                    .any(|w| w.dev == n.dev && w.dst == n.dst)
            {
                self.leftover(Group::Unwire, rank::NEIGHBOUR, Op::DelNeighbour(n.clone()));
            }
        }
        // Proxy NDP entries of the gateways (on the mapped bridges or a
        // VNI device) that the previous desired state declared or that sit
        // on a device of the agent's VNIs.
        let prev = self.previous;
        for pn in &a.proxy_neighbours {
            let on_ours = vrf_side.contains(&pn.dev);
            let declared = prev.is_some_and(|p| p.proxy_neighbours.contains_key(pn));
            let scope = on_ours || cleanup.bridges.contains(&pn.dev);
            if scope && (on_ours || declared) && !d.proxy_neighbours.contains_key(pn) {
                self.leftover(
                    Group::Unwire,
                    rank::PROXY,
                    Op::DelProxyNeighbour(pn.clone()),
                );
            }
        }
        // Devices of proven VNIs nothing wants.
        let want_links: BTreeSet<&DevName> = d.links.iter().map(|l| &l.name).collect();
        let mut gone = Vec::new();
        for devs in self.proven.values() {
            for name in devs.ports.iter().chain(&devs.vxlan).chain(&devs.bridge) {
                if !want_links.contains(name) {
                    gone.push(name.clone());
                }
            }
            if let Some(vrf) = &devs.vrf {
                if cleanup.delete_vrf && !want_links.contains(vrf) {
                    gone.push(vrf.clone());
                } else if !want_links.contains(vrf) && wanted_as_l2(d, devs) {
                    // The planner never clears a master, and FRR keeps the
                    // VRF's `vni` line: the VNI stays an L3 one.
                    self.warnings.push(format!(
                        "{vrf} holds {} that is now wanted as an L2 VNI's bridge; with delete_vrf_on_disconnect = false the agent keeps {vrf} and FRR keeps it an L3 VNI: delete {vrf} (and its FRR VRF) by hand",
                        devs.bridge.as_ref().map_or("the bridge".into(), DevName::to_string)
                    ));
                }
            }
        }
        for name in gone {
            self.push(
                Group::Unwire,
                rank::LINK_DEL,
                Some(Class::Base),
                Op::DelLink { name },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_ovs_port_names_are_recognised_and_foreign_ones_are_not() {
        for ours in ["ovsdd3b5a95-aa", "veth-ovs-1001", "vlan-1001"] {
            assert!(is_agent_ovs_port(ours), "{ours}");
        }
        for foreign in [
            "eth1",
            "patch-provnet-1-to-br-int",
            "ovs-system",
            "ovsdd3b5a95xaa",
            "vlan-",
            "vlan-01",
            "vlan-10a",
            "veth-ovs-blue",
            "ovszz3b5a95-aa",
        ] {
            assert!(!is_agent_ovs_port(foreign), "{foreign}");
        }
    }
}
