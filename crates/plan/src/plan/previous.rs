//! Leftovers' classes: what the previous desired state called an object with
//! the same destination (O3 order, and ownership evidence).

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv6Addr};
use std::ops::Bound::{Excluded, Unbounded};

use obgp_netmodel::hash::FastHash;
use obgp_netmodel::{
    Address, Class, DesiredNode, IpNet, MacAddr, Neighbour, ProxyNeighbour, Route, RouteType, Rule,
    TableRef,
};

use super::Group;
use super::Planner;
use crate::op::Op;

/// How many leftovers look their class up in the previous desired state's
/// sorted maps before an index of it is built: a lookup costs a few tree
/// searches, the index a pass over every object, so it pays only for a
/// mass withdrawal (at least 16 lookups, and one per 16 objects).
fn lookups_before_index(prev: &DesiredNode) -> usize {
    let objects = prev.addresses.len()
        + prev.rules.len()
        + prev.routes.len()
        + prev.neighbours.len()
        + prev.proxy_neighbours.len();
    (objects / 16).max(16)
}

impl Planner<'_> {
    /// The previous desired state's class of an object with this destination:
    /// the first one found among its addresses, then rules, routes,
    /// neighbours and proxy entries ([`previous_class_lookup`]). From the
    /// [`lookups_before_index`]th leftover on, an index built once answers.
    fn previous_class(&mut self, subject: Option<IpNet>) -> Option<Class> {
        let prev = self.previous?;
        let s = subject?.trunc();
        if self.prev_index.is_none() && self.prev_lookups < lookups_before_index(prev) {
            self.prev_lookups += 1;
            return previous_class_lookup(prev, s);
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

    pub(super) fn leftover(&mut self, group: Group, rank: u8, op: Op) {
        let class = self.previous_class(op.subject());
        self.push(group, rank, class, op);
    }
}

/// The highest network in `IpNet` order (by address, then prefix length;
/// IPv4 before IPv6), and the highest address.
fn top_net() -> IpNet {
    IpNet::new(TOP_IP, 128).expect("a /128 is valid")
}
const TOP_IP: IpAddr = IpAddr::V6(Ipv6Addr::new(
    0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff,
));

/// The nets that truncate to `s` lie between these two, inclusive.
fn truncating_to(s: IpNet) -> (IpNet, IpNet) {
    let lo = IpNet::new(s.network(), 0).expect("prefix 0 is valid");
    let hi = IpNet::new(s.broadcast(), s.max_prefix_len()).expect("the longest prefix is valid");
    (lo, hi)
}

/// The lowest route of `table`, family `v6`, to `dst`.
pub(super) fn route_at(table: TableRef, v6: bool, dst: IpNet) -> Route {
    Route {
        table,
        v6,
        dst: Some(dst),
        dev: None,
        via: None,
        proto: 0,
        scope: 0,
        kind: RouteType::Unicast,
        metric: None,
    }
}

/// The distinct leading parts (device, table) of the keys of `map`, in
/// order, found by jumping to the first key after `past(part)`: one tree
/// search per part when `past` is after every key with that part (keys it
/// is not after are stepped over one by one).
pub(super) fn parts<K: Ord, V, P: PartialEq>(
    map: &BTreeMap<K, V>,
    part: impl Fn(&K) -> P,
    past: impl Fn(&P) -> K,
) -> Vec<P> {
    let mut out: Vec<P> = Vec::new();
    let mut cursor = map.keys().next();
    while let Some(k) = cursor {
        let p = part(k);
        let bound = past(&p);
        let from = if bound > *k { &bound } else { k };
        cursor = map
            .range((Excluded(from), Unbounded))
            .map(|(k, _)| k)
            .next();
        if out.last() != Some(&p) {
            out.push(p);
        }
    }
    out
}

/// The class of the first object whose destination truncates to `s` among
/// `prev`'s addresses, then rules, routes, neighbours and proxy entries,
/// each in its map's order: what a scan of every map would find, with a
/// few tree searches per device or table instead.
pub(super) fn previous_class_lookup(prev: &DesiredNode, s: IpNet) -> Option<Class> {
    let (lo, hi) = truncating_to(s);
    let hit = |n: &IpNet| n.trunc() == s;
    let past_address = |dev: &obgp_netmodel::DevName| Address {
        dev: dev.clone(),
        net: top_net(),
    };
    let address = || {
        parts(&prev.addresses, |a| a.dev.clone(), past_address)
            .into_iter()
            .find_map(|dev| {
                let from = Address {
                    dev: dev.clone(),
                    net: lo,
                };
                let to = Address { dev, net: hi };
                prev.addresses
                    .range(from..=to)
                    .find(|(a, _)| hit(&a.net))
                    .map(|(_, c)| *c)
            })
    };
    let rule = || {
        let from = Rule {
            dst: lo,
            table: TableRef::Id(0),
            priority: None,
        };
        prev.rules
            .range(from..)
            .take_while(|(r, _)| r.dst <= hi)
            .find(|(r, _)| hit(&r.dst))
            .map(|(_, c)| *c)
    };
    let route = || {
        let tables = parts(
            &prev.routes,
            |r| r.table.clone(),
            |t| route_at(t.clone(), true, top_net()),
        );
        tables.into_iter().find_map(|table| {
            [false, true].into_iter().find_map(|v6| {
                prev.routes
                    .range(route_at(table.clone(), v6, lo)..)
                    .take_while(|(r, _)| r.table == table && r.v6 == v6 && r.dst <= Some(hi))
                    .find(|(r, _)| r.dst.as_ref().is_some_and(hit))
                    .map(|(_, c)| *c)
            })
        })
    };
    // A neighbour or proxy entry's destination is a host: only a host
    // prefix can be its truncation.
    let host = (s.prefix_len() == s.max_prefix_len()).then(|| s.addr());
    let neighbour = || {
        let ip = host?;
        let at = |dev: &obgp_netmodel::DevName, dst: IpAddr, mac: u8| Neighbour {
            dev: dev.clone(),
            dst,
            lladdr: MacAddr([mac; 6]),
        };
        parts(&prev.neighbours, |n| n.dev.clone(), |d| at(d, TOP_IP, 0xff))
            .into_iter()
            .find_map(|dev| {
                prev.neighbours
                    .range(at(&dev, ip, 0)..=at(&dev, ip, 0xff))
                    .next()
                    .map(|(_, c)| *c)
            })
    };
    let proxy = || {
        let ip = host?;
        let at = |dev: &obgp_netmodel::DevName, dst: IpAddr| ProxyNeighbour {
            dev: dev.clone(),
            dst,
        };
        parts(&prev.proxy_neighbours, |p| p.dev.clone(), |d| at(d, TOP_IP))
            .into_iter()
            .find_map(|dev| prev.proxy_neighbours.get(&at(&dev, ip)).copied())
    };
    address()
        .or_else(rule)
        .or_else(route)
        .or_else(neighbour)
        .or_else(proxy)
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

    /// The reference: every map scanned in order.
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

    #[test]
    fn previous_class_lookups_and_index_answer_as_a_scan_does() {
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
                "2001:db8::/128",
                "2001:db8::1/128",
            ]
            .map(|s| s.parse::<IpNet>().unwrap()),
        );
        // Twice: the first pass looks up until the index is built.
        let mut classes = Vec::new();
        for s in subjects.iter().chain(&subjects) {
            let scanned = previous_class_scan(&prev, s.trunc());
            assert_eq!(previous_class_lookup(&prev, s.trunc()), scanned, "{s}");
            assert_eq!(p.previous_class(Some(*s)), scanned, "{s}");
            classes.push(scanned);
        }
        assert!(
            p.prev_index.is_some(),
            "more than {} lookups",
            lookups_before_index(&prev)
        );
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

    mod random {
        use proptest::prelude::*;

        use super::*;

        const DEVS: [&str; 3] = ["bgp-nic", "br-ex", "br-vlan.10"];
        const CLASSES: [Class; 4] = [Class::Vm, Class::Fip, Class::Lb, Class::Subnet];

        /// Nets from a small pool, so that objects of several kinds, devices
        /// and tables share destinations, with prefixes that truncate to
        /// one another.
        fn net() -> impl Strategy<Value = IpNet> {
            prop_oneof![
                (0u8..4, prop::sample::select(vec![24u8, 30, 32])).prop_map(|(h, len)| format!(
                    "10.0.0.{h}/{len}"
                )
                .parse()
                .unwrap()),
                (0u8..4, prop::sample::select(vec![64u8, 128])).prop_map(|(h, len)| format!(
                    "2001:db8::{h}/{len}"
                )
                .parse()
                .unwrap()),
            ]
        }

        fn dev() -> impl Strategy<Value = DevName> {
            prop::sample::select(&DEVS[..]).prop_map(|d| DevName::new(d).unwrap())
        }

        fn class() -> impl Strategy<Value = Class> {
            prop::sample::select(&CLASSES[..])
        }

        fn table() -> impl Strategy<Value = TableRef> {
            prop_oneof![
                (1u32..3).prop_map(TableRef::Id),
                dev().prop_map(TableRef::Bridge)
            ]
        }

        fn node() -> impl Strategy<Value = DesiredNode> {
            let addresses = prop::collection::btree_map(
                (dev(), net()).prop_map(|(dev, net)| Address { dev, net }),
                class(),
                0..6,
            );
            let rules = prop::collection::btree_map(
                (net(), table(), prop::option::of(1u32..3)).prop_map(|(dst, table, priority)| {
                    Rule {
                        dst,
                        table,
                        priority,
                    }
                }),
                class(),
                0..6,
            );
            let routes = prop::collection::btree_map(
                (
                    table(),
                    prop::option::of(net()),
                    prop::option::of(dev()),
                    any::<bool>(),
                )
                    .prop_map(|(table, dst, dev, flip)| Route {
                        table,
                        // Mostly the family of the destination, now and then not.
                        v6: dst.is_some_and(|d| d.addr().is_ipv6()) != flip,
                        dst,
                        dev,
                        via: None,
                        proto: 3,
                        scope: 0,
                        kind: RouteType::Unicast,
                        metric: None,
                    }),
                class(),
                0..6,
            );
            let neighbours = prop::collection::btree_map(
                (dev(), net(), any::<u8>()).prop_map(|(dev, net, m)| Neighbour {
                    dev,
                    dst: net.addr(),
                    lladdr: MacAddr([m; 6]),
                }),
                class(),
                0..6,
            );
            let proxies = prop::collection::btree_map(
                (dev(), net()).prop_map(|(dev, net)| ProxyNeighbour {
                    dev,
                    dst: net.addr(),
                }),
                class(),
                0..4,
            );
            (addresses, rules, routes, neighbours, proxies).prop_map(
                |(addresses, rules, routes, neighbours, proxy_neighbours)| DesiredNode {
                    addresses,
                    rules,
                    routes,
                    neighbours,
                    proxy_neighbours,
                    ..DesiredNode::default()
                },
            )
        }

        proptest! {
            #[test]
            fn a_lookup_finds_what_a_scan_finds(prev in node(), subjects in prop::collection::vec(net(), 1..8)) {
                for s in subjects {
                    let s = s.trunc();
                    prop_assert_eq!(previous_class_lookup(&prev, s), previous_class_scan(&prev, s), "{}", s);
                }
            }
        }
    }
}
