//! Leftovers' classes: what the previous desired state called an object with
//! the same destination (O3 order, and ownership evidence).

use std::collections::HashMap;

use obgp_netmodel::hash::FastHash;
use obgp_netmodel::{Class, DesiredNode, IpNet};

use super::order::Group;
use super::Planner;
use crate::op::Op;

/// Leftovers whose class is found by scanning the previous desired state
/// before an index of it is built.
const PREV_SCANS: usize = 16;

impl Planner<'_> {
    /// The previous desired state's class of an object with this destination:
    /// the first one found among its addresses, then rules, routes,
    /// neighbours and proxy entries. A few leftovers scan the previous state;
    /// from the [`PREV_SCANS`]th on, an index built once answers (a mass
    /// withdrawal would otherwise scan it once per leftover).
    fn previous_class(&mut self, subject: Option<IpNet>) -> Option<Class> {
        let prev = self.previous?;
        let s = subject?.trunc();
        if self.prev_scans < PREV_SCANS {
            self.prev_scans += 1;
            return Self::previous_class_scan(prev, s);
        }
        let index = self.prev_index.get_or_insert_with(|| {
            let mut index: HashMap<IpNet, Class, FastHash> = HashMap::default();
            let nets = (prev.addresses.iter().map(|(a, c)| (Some(a.net), c)))
                .chain(prev.rules.iter().map(|(r, c)| (Some(r.dst), c)))
                .chain(prev.routes.iter().map(|(r, c)| (r.dst, c)))
                .chain(prev.neighbours.iter().map(|(n, c)| (Some(n.dst.into()), c)))
                .chain(
                    prev.proxy_neighbours
                        .iter()
                        .map(|(n, c)| (Some(n.dst.into()), c)),
                );
            for (net, class) in nets {
                if let Some(net) = net {
                    index.entry(net.trunc()).or_insert(*class);
                }
            }
            index
        });
        index.get(&s).copied()
    }

    fn previous_class_scan(prev: &DesiredNode, s: IpNet) -> Option<Class> {
        let hit = |n: IpNet| n.trunc() == s;
        prev.addresses
            .iter()
            .find(|(a, _)| hit(a.net))
            .map(|(_, c)| *c)
            .or_else(|| prev.rules.iter().find(|(r, _)| hit(r.dst)).map(|(_, c)| *c))
            .or_else(|| {
                prev.routes
                    .iter()
                    .find(|(r, _)| r.dst.is_some_and(hit))
                    .map(|(_, c)| *c)
            })
            .or_else(|| {
                prev.neighbours
                    .iter()
                    .find(|(n, _)| hit(IpNet::from(n.dst)))
                    .map(|(_, c)| *c)
            })
            .or_else(|| {
                prev.proxy_neighbours
                    .iter()
                    .find(|(n, _)| hit(IpNet::from(n.dst)))
                    .map(|(_, c)| *c)
            })
    }

    pub(super) fn leftover(&mut self, group: Group, rank: u8, op: Op) {
        let class = self.previous_class(op.subject());
        self.push(group, rank, class, op);
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use obgp_netmodel::{
        Address, DevName, MacAddr, Neighbour, ProxyNeighbour, Route, RouteType, Rule, TableRef,
    };

    use super::*;
    use crate::actual::Actual;

    fn dev(s: &str) -> DevName {
        DevName::new(s).unwrap()
    }

    /// A previous desired state where several objects share a destination
    /// with different classes, so "the first one found" matters.
    fn previous() -> DesiredNode {
        let mut d = DesiredNode::default();
        let br = TableRef::Bridge(dev("br-ex"));
        for i in 0..60u8 {
            let ip: IpAddr = format!("172.24.4.{i}").parse().unwrap();
            let net = IpNet::from(ip);
            let class = [Class::Vm, Class::Fip, Class::Lb, Class::Gateway][usize::from(i % 4)];
            if i % 3 != 0 {
                d.addresses.insert(
                    Address {
                        dev: dev("bgp-nic"),
                        net,
                    },
                    class,
                );
            }
            d.rules.insert(
                Rule {
                    dst: net,
                    table: br.clone(),
                    priority: None,
                },
                Class::TenantVm,
            );
            d.neighbours.insert(
                Neighbour {
                    dev: dev("br-ex"),
                    dst: ip,
                    lladdr: MacAddr([0xfa, 0x16, 0x3e, 0, 0, i]),
                },
                Class::Subnet,
            );
        }
        d.routes.insert(
            Route {
                table: br,
                v6: false,
                dst: Some("10.0.0.0/24".parse().unwrap()),
                dev: Some(dev("br-ex")),
                via: Some("172.24.4.1".parse().unwrap()),
                proto: 3,
                scope: 0,
                kind: RouteType::Unicast,
                metric: None,
            },
            Class::Subnet,
        );
        d.proxy_neighbours.insert(
            ProxyNeighbour {
                dev: dev("br-ex"),
                dst: "2001:db8::".parse().unwrap(),
            },
            Class::Vm,
        );
        d
    }

    #[test]
    fn previous_class_index_answers_as_the_scan_does() {
        let prev = previous();
        let (desired, actual) = (DesiredNode::default(), Actual::default());
        let mut p = Planner::new(&desired, Some(&prev), &actual);
        let mut subjects: Vec<IpNet> = (0..64u8)
            .map(|i| format!("172.24.4.{i}/32").parse().unwrap())
            .collect();
        subjects.extend(
            [
                "10.0.0.0/24",
                "10.0.0.7/24",
                "2001:db8::/64",
                "2001:db8::1/128",
            ]
            .map(|s| s.parse::<IpNet>().unwrap()),
        );
        let mut classes = Vec::new();
        for s in &subjects {
            let scanned = Planner::previous_class_scan(&prev, s.trunc());
            assert_eq!(p.previous_class(Some(*s)), scanned, "{s}");
            classes.push(scanned);
        }
        assert!(p.prev_index.is_some(), "more than {PREV_SCANS} lookups");
        // Every kind of answer was exercised, including none.
        for c in [
            Some(Class::Vm),
            Some(Class::TenantVm),
            Some(Class::Subnet),
            None,
        ] {
            assert!(classes.contains(&c), "{c:?}");
        }
    }
}
