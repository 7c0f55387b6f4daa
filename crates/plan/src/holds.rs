//! Whether the node holds an announced prefix: of the node objects the
//! desired state asks for that prefix (its address on the announcement
//! device or `lo-<vni>`, its rule, its routes, its permanent neighbour),
//! which an observed node lacks. Pure: desired objects and an [`Actual`]
//! in, the missing objects out; `ovn-bgp-agent status` shows it per
//! exposed IP.
//!
//! It compares as the planner does: a bridge table is found by its
//! rt_tables name, a rule without a priority is held at any priority, a
//! route is held when the kernel has it normalised ([`kernel_route`]).

use std::collections::{HashMap, HashSet};

use obgp_netmodel::hash::FastHash;
use obgp_netmodel::{Address, DesiredNode, IpNet, Neighbour, Route, Rule, TableRef};
use serde::{Deserialize, Serialize};

use crate::actual::{Actual, KernelRoute, KernelRule};

/// A desired route as the kernel holds it in table `table`.
pub fn kernel_route(r: &Route, table: u32) -> KernelRoute {
    KernelRoute {
        table,
        v6: r.v6,
        dst: r.dst,
        metric: r.metric,
        dev: r.dev.clone(),
        via: r.via,
        proto: r.proto,
        scope: r.scope,
        kind: r.kind,
    }
    .normalised()
}

/// What the node holds of one prefix's desired objects.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holding {
    /// How many node objects the desired state asks for this prefix.
    pub wanted: usize,
    /// Those the node lacks, one line each (`address 172.24.4.10/32 on
    /// bgp-nic`, `rule to 172.24.4.10/32 table br-ex`...).
    pub missing: Vec<String>,
}

impl Holding {
    /// The node holds every object of the prefix (and there is one).
    pub fn held(&self) -> bool {
        self.wanted > 0 && self.missing.is_empty()
    }
}

/// One desired object of a prefix.
enum Want<'a> {
    Address(&'a Address),
    Rule(&'a Rule),
    Route(&'a Route),
    Neighbour(&'a Neighbour),
}

/// The desired objects of every prefix, and the observed node indexed for
/// the questions [`HoldsIndex::of`] asks: built once, asked per prefix.
pub struct HoldsIndex<'a> {
    wants: HashMap<IpNet, Vec<Want<'a>>, FastHash>,
    actual: &'a Actual,
    /// The kernel's rules by what a rule without a priority must match.
    rules: HashSet<(bool, IpNet, u32), FastHash>,
}

impl<'a> HoldsIndex<'a> {
    pub fn new(desired: &'a DesiredNode, actual: &'a Actual) -> HoldsIndex<'a> {
        let mut wants: HashMap<IpNet, Vec<Want<'a>>, FastHash> = HashMap::default();
        for a in desired.addresses.keys() {
            wants
                .entry(a.net.trunc())
                .or_default()
                .push(Want::Address(a));
        }
        for r in desired.rules.keys() {
            wants.entry(r.dst.trunc()).or_default().push(Want::Rule(r));
        }
        for r in desired.routes.keys() {
            if let Some(dst) = r.dst {
                wants.entry(dst.trunc()).or_default().push(Want::Route(r));
            }
        }
        for n in desired.neighbours.keys() {
            wants
                .entry(IpNet::from(n.dst))
                .or_default()
                .push(Want::Neighbour(n));
        }
        let rules = actual
            .rules
            .iter()
            .filter_map(|k| Some((k.v6, k.dst?.trunc(), k.table)))
            .collect();
        HoldsIndex {
            wants,
            actual,
            rules,
        }
    }

    /// What the node holds of `prefix`'s desired objects.
    pub fn of(&self, prefix: IpNet) -> Holding {
        let wants = self
            .wants
            .get(&prefix.trunc())
            .map_or(&[][..], Vec::as_slice);
        let mut out = Holding {
            wanted: wants.len(),
            missing: Vec::new(),
        };
        for w in wants {
            if let Some(line) = self.missing(w) {
                out.missing.push(line);
            }
        }
        out
    }

    /// The table number `t` has on the node; `Err` names a bridge without
    /// an rt_tables entry.
    fn table(&self, t: &TableRef) -> Result<u32, String> {
        match t {
            TableRef::Id(n) => Ok(*n),
            TableRef::Bridge(b) => self
                .actual
                .rt_tables
                .lookup(b.as_str())
                .ok_or_else(|| format!("no rt_tables entry names {b}")),
        }
    }

    /// The line saying what the node lacks of `w`; `None` when it holds it.
    fn missing(&self, w: &Want<'_>) -> Option<String> {
        let a = self.actual;
        match w {
            Want::Address(ad) => {
                (!a.addresses.contains(ad)).then(|| format!("address {} on {}", ad.net, ad.dev))
            }
            Want::Rule(r) => {
                let what = format!("rule to {} table {}", r.dst, table_text(&r.table));
                let table = match self.table(&r.table) {
                    Ok(t) => t,
                    Err(why) => return Some(format!("{what} ({why})")),
                };
                let dst = r.dst.trunc();
                let v6 = matches!(dst, IpNet::V6(_));
                let held = match r.priority {
                    None => self.rules.contains(&(v6, dst, table)),
                    Some(priority) => a.rules.contains(&KernelRule {
                        v6,
                        priority,
                        dst: Some(dst),
                        table,
                    }),
                };
                (!held).then_some(what)
            }
            Want::Route(r) => {
                let dst = r.dst.map_or("default".into(), |d| d.to_string());
                let dev = r.dev.as_ref().map_or("-".into(), |d| d.to_string());
                let what = format!("route {dst} table {} dev {dev}", table_text(&r.table));
                let table = match self.table(&r.table) {
                    Ok(t) => t,
                    Err(why) => return Some(format!("{what} ({why})")),
                };
                (!a.routes.contains(&kernel_route(r, table))).then_some(what)
            }
            Want::Neighbour(n) => (!a.neighbours.contains(n))
                .then(|| format!("neighbour {} lladdr {} dev {}", n.dst, n.lladdr, n.dev)),
        }
    }
}

/// The devices of `names` the node lacks, one line each (`link vrf-1001`).
pub fn missing_links<'n>(
    actual: &Actual,
    names: impl IntoIterator<Item = &'n obgp_netmodel::DevName>,
) -> Vec<String> {
    names
        .into_iter()
        .filter(|n| !actual.links.contains_key(*n))
        .map(|n| format!("link {n}"))
        .collect()
}

fn table_text(t: &TableRef) -> String {
    match t {
        TableRef::Id(n) => n.to_string(),
        TableRef::Bridge(b) => b.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use obgp_netmodel::{proto, scope, Class, DevName, MacAddr, RouteType};

    fn dev(s: &str) -> DevName {
        DevName::new(s).unwrap()
    }
    fn net(s: &str) -> IpNet {
        s.parse().unwrap()
    }

    /// A VM IP wired through br-ex: address, rule, route and neighbour.
    fn desired_vm(ip: &str) -> DesiredNode {
        let mut d = DesiredNode::default();
        let host = net(&format!("{ip}/32"));
        d.addresses.insert(
            Address {
                dev: dev("bgp-nic"),
                net: host,
            },
            Class::Vm,
        );
        d.rules.insert(
            Rule {
                dst: host,
                table: TableRef::Bridge(dev("br-ex")),
                priority: None,
            },
            Class::Vm,
        );
        d.routes.insert(route(host), Class::Vm);
        d.neighbours.insert(
            Neighbour {
                dev: dev("br-ex"),
                dst: host.addr(),
                lladdr: MacAddr([0xfa, 0x16, 0x3e, 0, 0, 1]),
            },
            Class::Vm,
        );
        d
    }

    fn route(dst: IpNet) -> Route {
        Route {
            table: TableRef::Bridge(dev("br-ex")),
            v6: false,
            dst: Some(dst),
            dev: Some(dev("br-ex")),
            via: None,
            proto: proto::BOOT,
            scope: scope::LINK,
            kind: RouteType::Unicast,
            metric: None,
        }
    }

    /// The node holding everything `d` asks, with br-ex's table as 200.
    fn holding_all(d: &DesiredNode) -> Actual {
        let mut a = Actual::default();
        a.rt_tables.append(200, "br-ex");
        for ad in d.addresses.keys() {
            a.addresses.insert(ad.clone());
        }
        for r in d.rules.keys() {
            a.rules.insert(KernelRule {
                v6: false,
                priority: 1000,
                dst: Some(r.dst),
                table: 200,
            });
        }
        for r in d.routes.keys() {
            a.routes.insert(kernel_route(r, 200));
        }
        a.neighbours.extend(d.neighbours.keys().cloned());
        a
    }

    #[test]
    fn a_node_with_every_object_of_the_prefix_holds_it() {
        let d = desired_vm("172.24.4.10");
        let a = holding_all(&d);
        let h = HoldsIndex::new(&d, &a).of(net("172.24.4.10/32"));
        assert_eq!(h.wanted, 4);
        assert!(h.held(), "{h:?}");
    }

    #[test]
    fn each_missing_object_is_named() {
        let d = desired_vm("172.24.4.10");
        let mut a = holding_all(&d);
        a.addresses.clear();
        a.routes.clear();
        let h = HoldsIndex::new(&d, &a).of(net("172.24.4.10/32"));
        assert!(!h.held());
        assert_eq!(
            h.missing,
            [
                "address 172.24.4.10/32 on bgp-nic",
                "route 172.24.4.10/32 table br-ex dev br-ex"
            ]
        );
    }

    #[test]
    fn a_bridge_without_an_rt_tables_entry_holds_no_rule_or_route() {
        let d = desired_vm("172.24.4.10");
        let mut a = holding_all(&d);
        a.rt_tables = Default::default();
        let h = HoldsIndex::new(&d, &a).of(net("172.24.4.10/32"));
        assert_eq!(
            h.missing,
            [
                "rule to 172.24.4.10/32 table br-ex (no rt_tables entry names br-ex)",
                "route 172.24.4.10/32 table br-ex dev br-ex (no rt_tables entry names br-ex)"
            ]
        );
    }

    #[test]
    fn a_rule_in_another_table_or_a_route_through_another_device_is_not_held() {
        let d = desired_vm("172.24.4.10");
        let mut a = holding_all(&d);
        a.rules.clear();
        a.rules.insert(KernelRule {
            v6: false,
            priority: 1000,
            dst: Some(net("172.24.4.10/32")),
            table: 201,
        });
        a.routes.clear();
        let mut other = kernel_route(&route(net("172.24.4.10/32")), 200);
        other.dev = Some(dev("br-vlan"));
        a.routes.insert(other);
        let h = HoldsIndex::new(&d, &a).of(net("172.24.4.10/32"));
        assert_eq!(h.missing.len(), 2, "{h:?}");
    }

    #[test]
    fn missing_links_are_named_in_order() {
        let mut a = Actual::default();
        a.links.insert(
            dev("vrf-1001"),
            crate::ActualLink::new(7, "vrf", None, true),
        );
        let names = [dev("vrf-1001"), dev("br-1001"), dev("vxlan-1001")];
        assert_eq!(
            missing_links(&a, &names),
            ["link br-1001", "link vxlan-1001"]
        );
    }

    #[test]
    fn a_prefix_nothing_asks_for_is_not_held() {
        let d = desired_vm("172.24.4.10");
        let a = holding_all(&d);
        let h = HoldsIndex::new(&d, &a).of(net("172.24.4.11/32"));
        assert_eq!(h, Holding::default());
        assert!(!h.held());
    }

    #[test]
    fn a_subnet_is_found_by_its_network_whatever_the_rule_writes() {
        // The host method's rule names the router interface address.
        let mut d = DesiredNode::default();
        d.rules.insert(
            Rule {
                dst: net("10.0.0.1/24"),
                table: TableRef::Bridge(dev("br-ex")),
                priority: None,
            },
            Class::Subnet,
        );
        let mut a = Actual::default();
        a.rt_tables.append(200, "br-ex");
        let idx = HoldsIndex::new(&d, &a);
        assert_eq!(idx.of(net("10.0.0.0/24")).missing.len(), 1);
        let mut a = a.clone();
        a.rules.insert(KernelRule {
            v6: false,
            priority: 1000,
            dst: Some(net("10.0.0.0/24")),
            table: 200,
        });
        assert!(HoldsIndex::new(&d, &a).of(net("10.0.0.0/24")).held());
    }
}
