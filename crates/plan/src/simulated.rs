//! A simulated node: applies [`Op`]s to an [`Actual`] in memory with the kernel's
//! semantics that matter to the agent (rule priorities, EEXIST/ENOENT, device
//! removal taking its addresses, routes and neighbours along). Pure; used by
//! the planner's tests and by the conformance runner.

use std::collections::BTreeMap;

use obgp_netmodel::{DevName, IpNet, LinkKind, MacAddr, Neighbour, OvsPort};

use crate::actual::{Actual, ActualLink, KernelRoute, KernelRule, OfFlow};
use crate::op::Op;

/// The errno a request fails with, as the kernel (or tool) would answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Errno {
    #[error("EEXIST")]
    Exist,
    #[error("ENOENT")]
    NoEnt,
    #[error("ENODEV")]
    NoDev,
    #[error("ESRCH")]
    Srch,
    #[error("EADDRNOTAVAIL")]
    AddrNotAvail,
    #[error("EINVAL")]
    Inval,
}

/// An in-memory node.
#[derive(Clone, Debug, Default)]
pub struct SimulatedNode {
    pub actual: Actual,
    /// Every op applied, with its outcome, in order.
    pub log: Vec<(Op, Result<(), Errno>)>,
}

/// The kernel's default priority for a new rule: the second rule's priority
/// minus one when that is not zero (`fib_default_rule_pref`), so "lowest
/// non-zero minus one" on the usual table `0, 32766, 32767`.
pub fn default_rule_priority(rules: &[&KernelRule]) -> u32 {
    let mut prios: Vec<u32> = rules.iter().map(|r| r.priority).collect();
    prios.sort_unstable();
    match prios.get(1) {
        Some(&p) if p != 0 => p - 1,
        _ => 0,
    }
}

impl SimulatedNode {
    pub fn new(actual: Actual) -> SimulatedNode {
        SimulatedNode {
            actual,
            log: Vec::new(),
        }
    }

    /// Applies ops in order; a failed op changes nothing and the rest run.
    pub fn apply_all<'a>(&mut self, ops: impl IntoIterator<Item = &'a Op>) {
        for op in ops {
            let r = self.apply(op);
            self.log.push((op.clone(), r));
        }
    }

    fn next_index(&self) -> u32 {
        self.actual
            .links
            .values()
            .map(|l| l.index)
            .max()
            .unwrap_or(0)
            + 1
    }

    fn link_mut(&mut self, name: &DevName) -> Result<&mut ActualLink, Errno> {
        self.actual.links.get_mut(name).ok_or(Errno::NoDev)
    }

    fn has_dev(&self, name: &DevName) -> Result<(), Errno> {
        if self.actual.links.contains_key(name) {
            Ok(())
        } else {
            Err(Errno::NoDev)
        }
    }

    /// Applies one op with the kernel's semantics.
    pub fn apply(&mut self, op: &Op) -> Result<(), Errno> {
        let a = &mut self.actual;
        match op {
            Op::AddLink { name, kind } => self.add_link(name, kind),
            Op::SetLinkUp { name } => {
                self.link_mut(name)?.up = true;
                Ok(())
            }
            Op::SetMaster { name, master } => {
                self.has_dev(master)?;
                let link = self.link_mut(name)?;
                if link.master.as_ref() != Some(master) {
                    link.master = Some(master.clone());
                    // A port leaving a bridge takes its FDB entries along.
                    self.actual.bridge_fdb.retain(|e| e.port != *name);
                }
                Ok(())
            }
            Op::SetLinkMac { name, mac } => {
                self.link_mut(name)?.mac = Some(*mac);
                Ok(())
            }
            Op::DelLink { name } => self.del_link(name),
            Op::AddAddress(ad) => {
                self.has_dev(&ad.dev)?;
                if !self.actual.addresses.insert(ad.clone()) {
                    return Err(Errno::Exist);
                }
                Ok(())
            }
            Op::DelAddress(ad) => {
                if !a.addresses.remove(ad) {
                    return Err(Errno::AddrNotAvail);
                }
                Ok(())
            }
            Op::AddRule {
                v6,
                dst,
                table,
                priority,
                ..
            } => self.add_rule(*v6, *dst, *table, *priority),
            Op::DelRule { rule, .. } => {
                if !a.rules.remove(rule) {
                    return Err(Errno::NoEnt);
                }
                Ok(())
            }
            Op::ReplaceRoute { route, .. } => {
                if let Some(dev) = &route.dev {
                    self.has_dev(dev)?;
                }
                let route = route.clone().normalised();
                let a = &mut self.actual;
                a.routes.retain(|r| r.key() != route.key());
                a.routes.insert(route);
                Ok(())
            }
            Op::DelRoute { route, .. } => self.del_route(route),
            Op::ReplaceNeighbour(n) => {
                self.has_dev(&n.dev)?;
                let a = &mut self.actual;
                a.neighbours.retain(|x| !(x.dev == n.dev && x.dst == n.dst));
                a.neighbours.insert(n.clone());
                Ok(())
            }
            Op::DelNeighbour(n) => self.del_neighbour(n),
            Op::AddProxyNeighbour(p) => {
                self.has_dev(&p.dev)?;
                // pneigh_lookup(create=1): adding an existing entry succeeds.
                self.actual.proxy_neighbours.insert(p.clone());
                Ok(())
            }
            Op::DelProxyNeighbour(p) => {
                if !a.proxy_neighbours.remove(p) {
                    return Err(Errno::NoEnt);
                }
                Ok(())
            }
            Op::SetSysctl(s) => {
                a.sysctls.insert(s.key.clone(), s.value.clone());
                Ok(())
            }
            Op::AddRtTable { number, name } => {
                a.rt_tables.append(*number, name.as_str());
                Ok(())
            }
            Op::AddFlow { bridge, flow } => self.add_flow(bridge, flow),
            Op::DelFlow { bridge, flow } => self.del_flow(bridge, flow),
            Op::SetBridgePort { name, flags } => {
                let l = self.link_mut(name)?;
                if l.master.is_none() {
                    return Err(Errno::Inval);
                }
                l.bridge_port = Some(*flags);
                Ok(())
            }
            Op::AddOvsPort(p) => self.add_ovs_port(p),
            Op::DelOvsPort { bridge, name } => {
                self.del_ovs_port(bridge, name);
                Ok(())
            }
            Op::AddBridgeFdb(e) => {
                let port = a.links.get(&e.port).ok_or(Errno::NoDev)?;
                if port.master.as_ref() != Some(&e.bridge) {
                    return Err(Errno::Inval);
                }
                // Keyed by (bridge, MAC, VLAN): a replace moves the MAC.
                a.bridge_fdb.retain(|x| !x.same_key(e));
                a.bridge_fdb.insert(e.clone());
                Ok(())
            }
            Op::DelBridgeFdb(e) => {
                if !a.bridge_fdb.remove(e) {
                    return Err(Errno::NoEnt);
                }
                Ok(())
            }
            Op::AddFdb(e) => {
                let bridge = a.bridges.get_mut(&e.bridge).ok_or(Errno::NoDev)?;
                bridge.fdb.insert(e.clone());
                Ok(())
            }
            Op::RemoveFrr { config } => {
                a.frr.applied_configs += 1;
                a.frr.forget_evpn(config);
                Ok(())
            }
            Op::ApplyFrr { config } => {
                a.frr.learn_evpn(config);
                a.frr.applied_configs += 1;
                a.frr.has_our_config = true;
                Ok(())
            }
        }
    }

    /// A new device of `kind`, with a locally administered MAC of its
    /// index; EEXIST when the name (or a veth's peer name) is taken, and
    /// ENODEV for an `Existing` device, which only the node can have.
    fn add_link(&mut self, name: &DevName, kind: &LinkKind) -> Result<(), Errno> {
        if self.actual.links.contains_key(name) {
            return Err(Errno::Exist);
        }
        let index = self.next_index();
        // Locally administered MACs, deterministic per index.
        let own_mac = MacAddr([0x02, 0, 0, 0, (index >> 8) as u8, index as u8]);
        let mut link = ActualLink::new(index, String::new(), Some(own_mac), false);
        match kind {
            LinkKind::Vrf { table } => {
                link.kind = "vrf".into();
                link.vrf_table = Some(*table);
            }
            LinkKind::Dummy => link.kind = "dummy".into(),
            LinkKind::Vlan { parent, vlan_id } => {
                let p = self.actual.links.get(parent).ok_or(Errno::NoDev)?;
                link.kind = "vlan".into();
                // A VLAN device inherits its parent's MAC, as on Linux.
                link.mac = p.mac;
                link.parent = Some(parent.clone());
                link.vlan_id = Some(*vlan_id);
            }
            LinkKind::Veth { peer } => {
                if self.actual.links.contains_key(peer) {
                    return Err(Errno::Exist);
                }
                link.kind = "veth".into();
                // Each end's IFLA_LINK is the other, as on Linux.
                link.parent = Some(peer.clone());
                let mut p = link.clone();
                p.parent = Some(name.clone());
                p.index = index + 1;
                p.mac = Some(MacAddr([0x02, 0, 0, 1, (index >> 8) as u8, index as u8]));
                self.actual.links.insert(peer.clone(), p);
            }
            LinkKind::Bridge => link.kind = "bridge".into(),
            LinkKind::Vxlan {
                vni,
                local,
                dstport,
            } => {
                link.kind = "vxlan".into();
                link.vxlan = Some(crate::actual::VxlanInfo {
                    vni: *vni,
                    local: *local,
                    dstport: *dstport,
                    learning: false,
                });
            }
            LinkKind::Existing => return Err(Errno::NoDev),
        }
        self.actual.links.insert(name.clone(), link);
        Ok(())
    }

    /// Removes a device and what goes with it on Linux: its upper VLAN
    /// devices and veth peer, their addresses, routes and neighbours, and
    /// the enslavement of their lower devices.
    fn del_link(&mut self, name: &DevName) -> Result<(), Errno> {
        let a = &mut self.actual;
        if a.links.remove(name).is_none() {
            return Err(Errno::NoDev);
        }
        // Upper VLAN devices and a veth peer go with the device.
        let mut gone = vec![name.clone()];
        let uppers: Vec<DevName> = a
            .links
            .iter()
            .filter(|(_, l)| l.parent.as_ref() == Some(name))
            .map(|(n, _)| n.clone())
            .collect();
        for u in uppers {
            a.links.remove(&u);
            gone.push(u);
        }
        for l in a.links.values_mut() {
            if l.master.as_ref().is_some_and(|m| gone.contains(m)) {
                l.master = None;
            }
        }
        a.addresses.retain(|x| !gone.contains(&x.dev));
        a.routes
            .retain(|r| !r.dev.as_ref().is_some_and(|d| gone.contains(d)));
        a.neighbours.retain(|n| !gone.contains(&n.dev));
        a.proxy_neighbours.retain(|n| !gone.contains(&n.dev));
        a.bridge_fdb
            .retain(|e| !gone.contains(&e.port) && !gone.contains(&e.bridge));
        // A device's per-device sysctl keys go with it, as on Linux (the
        // scenarios' fake keeps them: a fidelity limit of the recording).
        // Kept, they would let a re-created device look configured.
        a.sysctls
            .retain(|key, _| !gone.iter().any(|d| is_conf_key_of(key, d)));
        Ok(())
    }

    /// A rule to `dst` in `table`: EEXIST when the family already holds
    /// one to that destination and table (at any priority when none is
    /// given, stricter than the kernel); without a priority, the kernel's
    /// default one.
    fn add_rule(
        &mut self,
        v6: bool,
        dst: IpNet,
        table: u32,
        priority: Option<u32>,
    ) -> Result<(), Errno> {
        let a = &mut self.actual;
        let dst = dst.trunc();
        let same: Vec<&KernelRule> = a.rules.iter().filter(|r| r.v6 == v6).collect();
        let exists = same.iter().any(|r| {
            r.dst == Some(dst) && r.table == table && priority.is_none_or(|p| p == r.priority)
        });
        if exists {
            return Err(Errno::Exist);
        }
        let priority = priority.unwrap_or_else(|| default_rule_priority(&same));
        a.rules.insert(KernelRule {
            v6,
            priority,
            dst: Some(dst),
            table,
        });
        Ok(())
    }

    /// Removes the first route with the same key; ESRCH when none.
    fn del_route(&mut self, route: &KernelRoute) -> Result<(), Errno> {
        let a = &mut self.actual;
        let key = route.clone().normalised().key();
        let before = a.routes.len();
        let mut removed = false;
        a.routes.retain(|r| {
            if !removed && r.key() == key {
                removed = true;
                false
            } else {
                true
            }
        });
        if a.routes.len() == before {
            return Err(Errno::Srch);
        }
        Ok(())
    }

    /// Removes the neighbour of the same device and destination, whatever
    /// its MAC; ENOENT when none.
    fn del_neighbour(&mut self, n: &Neighbour) -> Result<(), Errno> {
        let a = &mut self.actual;
        let before = a.neighbours.len();
        a.neighbours.retain(|x| !(x.dev == n.dev && x.dst == n.dst));
        if a.neighbours.len() == before {
            return Err(Errno::NoEnt);
        }
        Ok(())
    }

    /// `ovs-ofctl add-flow`: replaces a flow with the same table, match and
    /// priority; ENODEV without the bridge.
    fn add_flow(&mut self, bridge: &DevName, flow: &OfFlow) -> Result<(), Errno> {
        let b = self.actual.bridges.get_mut(bridge).ok_or(Errno::NoDev)?;
        // add-flow replaces a flow with the same match and priority.
        b.flows.retain(|f| {
            !(f.table == flow.table && f.priority == flow.priority && f.matches == flow.matches)
        });
        b.flows.insert(flow.clone());
        Ok(())
    }

    /// `ovs-ofctl del-flows --strict` of our cookie: the flow with the same
    /// cookie, table, priority and match goes; ENODEV without the bridge.
    fn del_flow(&mut self, bridge: &DevName, flow: &OfFlow) -> Result<(), Errno> {
        let b = self.actual.bridges.get_mut(bridge).ok_or(Errno::NoDev)?;
        b.flows.retain(|f| {
            !(f.cookie == flow.cookie
                && f.table == flow.table
                && f.priority == flow.priority
                && f.matches == flow.matches)
        });
        Ok(())
    }

    /// `ovs-vsctl --may-exist add-port`: the next OpenFlow port number for
    /// a new port, and for an internal port its device on the node.
    fn add_ovs_port(&mut self, p: &OvsPort) -> Result<(), Errno> {
        let a = &mut self.actual;
        let bridge = a.bridges.get_mut(&p.bridge).ok_or(Errno::NoDev)?;
        if !bridge.ports.contains_key(p.name.as_str()) {
            let next = bridge.ports.values().max().map_or(1, |n| n + 1);
            bridge.ports.insert(p.name.to_string(), next);
        }
        if p.internal && !a.links.contains_key(&p.name) {
            let index = self.next_index();
            let mac = MacAddr([0x02, 0, 0, 2, (index >> 8) as u8, index as u8]);
            self.actual.links.insert(
                p.name.clone(),
                ActualLink::new(index, "openvswitch", Some(mac), false),
            );
        }
        Ok(())
    }

    /// `ovs-vsctl --if-exists del-port`: never fails; an internal port's
    /// device goes with it.
    fn del_ovs_port(&mut self, bridge: &DevName, name: &DevName) {
        let a = &mut self.actual;
        if let Some(b) = a.bridges.get_mut(bridge) {
            b.ports.remove(name.as_str());
        }
        if a.links.get(name).is_some_and(|l| l.kind == "openvswitch") {
            a.links.remove(name);
        }
    }

    /// How many ops failed, by errno (for tests and the runner's report).
    pub fn failures(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for (_, r) in &self.log {
            if let Err(e) = r {
                *out.entry(e.to_string()).or_default() += 1;
            }
        }
        out
    }
}

/// Whether `key` is one of `dev`'s per-device keys
/// (`net.ipv4.conf.<dev>.*`, `net.ipv6.conf.<dev>.*`; a `.` in the name
/// is written `/`, as [`obgp_netmodel::Sysctl::conf`] writes it).
fn is_conf_key_of(key: &str, dev: &DevName) -> bool {
    let name = dev.as_str().replace('.', "/");
    ["net.ipv4.conf.", "net.ipv6.conf."].iter().any(|fam| {
        key.strip_prefix(fam)
            .and_then(|rest| rest.strip_prefix(name.as_str()))
            .is_some_and(|leaf| leaf.starts_with('.'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use obgp_netmodel::{Address, Neighbour, ProxyNeighbour};

    fn dev(s: &str) -> DevName {
        DevName::new(s).unwrap()
    }

    fn rule(dst: &str) -> Op {
        let dst: obgp_netmodel::IpNet = dst.parse().unwrap();
        Op::AddRule {
            v6: matches!(dst, obgp_netmodel::IpNet::V6(_)),
            dst,
            table: 1,
            table_name: None,
            priority: None,
        }
    }

    #[test]
    fn rule_priority_is_lowest_nonzero_minus_one_per_family() {
        let mut m = SimulatedNode::new(Actual::booted());
        m.apply(&rule("172.24.4.10/32")).unwrap();
        m.apply(&rule("10.0.0.1/24")).unwrap();
        m.apply(&rule("2001:db8::10/128")).unwrap();
        let prios: Vec<(String, u32)> = m
            .actual
            .rules
            .iter()
            .filter_map(|r| r.dst.map(|d| (d.to_string(), r.priority)))
            .collect();
        assert!(prios.contains(&("172.24.4.10/32".into(), 32765)));
        assert!(prios.contains(&("10.0.0.0/24".into(), 32764)), "{prios:?}");
        assert!(prios.contains(&("2001:db8::10/128".into(), 32765)));
    }

    #[test]
    fn identical_rule_is_eexist_and_changes_nothing() {
        let mut m = SimulatedNode::new(Actual::booted());
        m.apply(&rule("172.24.4.10/32")).unwrap();
        let before = m.actual.clone();
        assert_eq!(m.apply(&rule("172.24.4.10/32")), Err(Errno::Exist));
        assert_eq!(m.actual, before);
    }

    #[test]
    fn missing_neighbour_delete_is_enoent_and_proxy_add_is_idempotent() {
        let mut a = Actual::default();
        a.links
            .insert(dev("br-ex"), ActualLink::new(1, "openvswitch", None, true));
        let mut m = SimulatedNode::new(a);
        let n = Neighbour {
            dev: dev("br-ex"),
            dst: "172.24.4.10".parse().unwrap(),
            lladdr: "fa:16:3e:11:11:11".parse().unwrap(),
        };
        assert_eq!(m.apply(&Op::DelNeighbour(n)), Err(Errno::NoEnt));
        let p = ProxyNeighbour {
            dev: dev("br-ex"),
            dst: "2001:db8::".parse().unwrap(),
        };
        m.apply(&Op::AddProxyNeighbour(p.clone())).unwrap();
        m.apply(&Op::AddProxyNeighbour(p)).unwrap();
        assert_eq!(m.actual.proxy_neighbours.len(), 1);
    }

    #[test]
    fn deleting_a_vlan_device_takes_its_addresses_routes_and_neighbours() {
        let mut m = SimulatedNode::new(Actual::default());
        let ops = [
            Op::AddLink {
                name: dev("br-ex"),
                kind: LinkKind::Bridge,
            },
            Op::AddLink {
                name: dev("br-ex.100"),
                kind: LinkKind::Vlan {
                    parent: dev("br-ex"),
                    vlan_id: 100,
                },
            },
            Op::AddAddress(Address {
                dev: dev("br-ex.100"),
                net: "169.254.1.100/32".parse().unwrap(),
            }),
            Op::AddProxyNeighbour(ProxyNeighbour {
                dev: dev("br-ex.100"),
                dst: "2001:db8::".parse().unwrap(),
            }),
        ];
        m.apply_all(&ops);
        assert!(m.failures().is_empty(), "{:?}", m.log);
        assert_eq!(
            m.actual.links[&dev("br-ex.100")].mac,
            m.actual.links[&dev("br-ex")].mac
        );
        m.apply(&Op::DelLink {
            name: dev("br-ex.100"),
        })
        .unwrap();
        assert!(m.actual.addresses.is_empty());
        assert!(m.actual.proxy_neighbours.is_empty());
    }

    #[test]
    fn a_deleted_device_takes_its_sysctl_keys_along() {
        let mut m = SimulatedNode::new(Actual::default());
        let vlan = dev("br-ex.100");
        for op in [
            Op::AddLink {
                name: dev("br-ex"),
                kind: LinkKind::Bridge,
            },
            Op::AddLink {
                name: vlan.clone(),
                kind: LinkKind::Vlan {
                    parent: dev("br-ex"),
                    vlan_id: 100,
                },
            },
        ] {
            m.apply(&op).unwrap();
        }
        for s in [
            obgp_netmodel::Sysctl::conf(false, &vlan, "proxy_arp", "1"),
            obgp_netmodel::Sysctl::conf(true, &vlan, "proxy_ndp", "1"),
            obgp_netmodel::Sysctl::conf(false, &dev("br-ex"), "proxy_arp", "1"),
            obgp_netmodel::Sysctl::conf(false, &dev("br-ex.1000"), "proxy_arp", "1"),
        ] {
            m.apply(&Op::SetSysctl(s)).unwrap();
        }
        m.apply(&Op::DelLink { name: vlan }).unwrap();
        let keys: Vec<&String> = m.actual.sysctls.keys().collect();
        // br-ex's own key and the key of another device stay.
        assert_eq!(
            keys,
            [
                "net.ipv4.conf.br-ex.proxy_arp",
                "net.ipv4.conf.br-ex/1000.proxy_arp"
            ]
        );
    }
}
