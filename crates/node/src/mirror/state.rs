//! The mirrored netlink state: links, addresses, rules, routes and
//! permanent neighbours, fed decoded rtnetlink messages in the kernel's
//! order (pure; the sockets that feed it are the parent module's).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use obgp_netmodel::{proto, Address, DevName, MacAddr, Neighbour};
use rtnetlink::packet_route::link::LinkMessage;
use rtnetlink::packet_route::RouteNetlinkMessage;

use crate::codec::{
    decode_address, decode_bridge_port_view, decode_link, decode_neighbour, decode_route,
    decode_rule, is_bridge_port_view, LinkEntry, Neigh,
};
use obgp_plan::actual::{ActualLink, KernelRoute, KernelRule};
use obgp_plan::shared::SharedSet;

/// Which parts of the mirror must be re-read by a dump before they can be
/// trusted again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stale {
    pub links: bool,
    pub addresses: bool,
    pub rules: bool,
    pub routes: bool,
    pub neighbours: bool,
}

impl Stale {
    pub const ALL: Stale = Stale {
        links: true,
        addresses: true,
        rules: true,
        routes: true,
        neighbours: true,
    };

    pub fn any(&self) -> bool {
        self.links || self.addresses || self.rules || self.routes || self.neighbours
    }
}

/// The mirrored netlink state, fed decoded rtnetlink messages.
///
/// Every message sets the presence of one object absolutely (a new route
/// replaces its kernel key when the kernel says so; a neighbour is keyed by
/// device and address), so applying, in order, notifications that were
/// queued before a dump was taken onto that dump gives the same state as
/// applying them before it: the last word about every object wins.
#[derive(Clone, Debug, Default)]
pub struct MirrorState {
    pub(super) links: BTreeMap<u32, LinkEntry>,
    by_name: BTreeMap<DevName, u32>,
    addresses: SharedSet<Address>,
    rules: SharedSet<KernelRule>,
    /// Routes by table, and the preferred source address the kernel holds
    /// for each (an IPv4 route goes silently with its preferred source).
    routes: BTreeMap<u32, TableRoutes>,
    /// The routes of the tables the last read asked for, when more than one
    /// holds routes (the bridge table and, announcing with routes, the VRF
    /// table), kept up to date by the notifications: a read shares it
    /// instead of merging ~14k routes into a new set each time.
    merged: Option<MergedRoutes>,
    /// Permanent neighbours by (device, address).
    neighbours: BTreeMap<(DevName, IpAddr), MacAddr>,
    /// What must be re-dumped before the next read.
    pub stale: Stale,
}

/// One routing table's mirrored routes.
#[derive(Clone, Debug, Default)]
struct TableRoutes {
    /// What [`MirrorState::read`] shares with `Actual`.
    routes: SharedSet<KernelRoute>,
    /// The preferred source of the routes that have one (an IPv4 route
    /// goes silently with its preferred source address).
    prefsrc: BTreeMap<KernelRoute, IpAddr>,
}

impl TableRoutes {
    fn insert(&mut self, route: KernelRoute, prefsrc: Option<IpAddr>) {
        match prefsrc {
            Some(src) => self.prefsrc.insert(route.clone(), src),
            None => self.prefsrc.remove(&route),
        };
        self.routes.insert(route);
    }

    /// Whether `route` was there.
    fn remove(&mut self, route: &KernelRoute) -> bool {
        self.prefsrc.remove(route);
        self.routes.remove(route)
    }
}

/// The union of several tables' routes, for the tables it was built for.
#[derive(Clone, Debug, Default)]
struct MergedRoutes {
    tables: BTreeSet<u32>,
    routes: SharedSet<KernelRoute>,
}

/// What [`MirrorState::read`] hands out: the parts of `Actual` the mirror holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MirrorView {
    pub links: BTreeMap<DevName, ActualLink>,
    pub addresses: SharedSet<Address>,
    pub rules: SharedSet<KernelRule>,
    pub routes: SharedSet<KernelRoute>,
    pub neighbours: BTreeSet<Neighbour>,
}

impl MirrorState {
    /// A mirror that knows nothing yet: everything stale.
    pub fn new() -> MirrorState {
        MirrorState {
            stale: Stale::ALL,
            ..MirrorState::default()
        }
    }

    /// The interface index of `dev`, if the mirror knows the device.
    pub fn ifindex(&self, dev: &DevName) -> Option<u32> {
        self.by_name.get(dev).copied()
    }

    /// The VRF devices mirrored, with their tables.
    pub fn vrf_tables(&self) -> impl Iterator<Item = (&DevName, u32)> {
        self.links
            .values()
            .filter(|e| e.link.kind == "vrf")
            .filter_map(|e| Some((&e.name, e.link.vrf_table?)))
    }

    /// The mirrored state, with routes only of `tables`.
    pub fn read(&mut self, tables: &BTreeSet<u32>) -> MirrorView {
        let routes = self.routes_of(tables);
        let name = |i: &Option<u32>| i.and_then(|i| self.links.get(&i)).map(|l| l.name.clone());
        let links = self
            .links
            .values()
            .map(|e| {
                let mut link = e.link.clone();
                link.master = name(&e.master);
                // IFLA_LINK of a VLAN names its lower device, of a veth its
                // peer (when the peer is in this namespace: the decoder
                // drops another namespace's index); other kinds are not read.
                if link.kind == "vlan" || link.kind == "veth" {
                    link.parent = name(&e.parent);
                }
                (e.name.clone(), link)
            })
            .collect();
        MirrorView {
            links,
            addresses: self.addresses.clone(),
            rules: self.rules.clone(),
            routes,
            neighbours: self
                .neighbours
                .iter()
                .map(|((dev, dst), lladdr)| Neighbour {
                    dev: dev.clone(),
                    dst: *dst,
                    lladdr: *lladdr,
                })
                .collect(),
        }
    }

    /// Replaces the links with a dump's (and the name index with them).
    pub fn install_links(&mut self, dump: &[RouteNetlinkMessage]) {
        self.links.clear();
        self.by_name.clear();
        for m in dump {
            match m {
                RouteNetlinkMessage::NewLink(l) if !is_bridge_port_view(l) => self.new_link(l),
                _ => {}
            }
        }
        self.stale.links = false;
    }

    /// Replaces the addresses with a dump's.
    pub fn install_addresses(&mut self, dump: &[RouteNetlinkMessage]) {
        self.addresses.clear();
        for m in dump {
            if let RouteNetlinkMessage::NewAddress(a) = m {
                if let Some(ad) = decode_address(a, &self.links) {
                    self.addresses.insert(ad);
                }
            }
        }
        self.stale.addresses = false;
    }

    /// Replaces the rules with a dump's (both families).
    pub fn install_rules(&mut self, dump: &[RouteNetlinkMessage]) {
        self.rules.clear();
        for m in dump {
            if let RouteNetlinkMessage::NewRule(r) = m {
                if let Some(rule) = decode_rule(r) {
                    self.rules.insert(rule);
                }
            }
        }
        self.stale.rules = false;
    }

    /// The routes of `tables`: one table's set shared as it is, several
    /// tables' union shared from the merged set (built on the first read
    /// of those tables, then kept up to date).
    fn routes_of(&mut self, tables: &BTreeSet<u32>) -> SharedSet<KernelRoute> {
        let mut read: Vec<&SharedSet<KernelRoute>> = tables
            .iter()
            .filter_map(|t| self.routes.get(t))
            .map(|t| &t.routes)
            .filter(|r| !r.is_empty())
            .collect();
        match read.len() {
            0 => SharedSet::new(),
            1 => read.pop().expect("one").clone(),
            _ => {
                if let Some(m) = self.merged.as_ref().filter(|m| m.tables == *tables) {
                    return m.routes.clone();
                }
                let routes: SharedSet<KernelRoute> = read.into_iter().flatten().cloned().collect();
                self.merged = Some(MergedRoutes {
                    tables: tables.clone(),
                    routes: routes.clone(),
                });
                routes
            }
        }
    }

    /// Adds or removes `route` in the merged set too, when it holds its table.
    fn merge(&mut self, route: &KernelRoute, add: bool) {
        if let Some(m) = self
            .merged
            .as_mut()
            .filter(|m| m.tables.contains(&route.table))
        {
            if add {
                m.routes.insert(route.clone());
            } else {
                m.routes.remove(route);
            }
        }
    }

    /// Replaces the routes with a dump's (every table, both families).
    pub fn install_routes(&mut self, dump: &[RouteNetlinkMessage]) {
        self.routes.clear();
        self.merged = None;
        for m in dump {
            if let RouteNetlinkMessage::NewRoute(r) = m {
                if let Some((route, prefsrc)) = decode_route(r, &self.links) {
                    self.routes
                        .entry(route.table)
                        .or_default()
                        .insert(route, prefsrc);
                }
            }
        }
        self.stale.routes = false;
    }

    /// Replaces the permanent neighbours with a dump's.
    pub fn install_neighbours(&mut self, dump: &[RouteNetlinkMessage]) {
        self.neighbours.clear();
        for m in dump {
            if let RouteNetlinkMessage::NewNeighbour(n) = m {
                if let Some(Neigh::Permanent(n)) = decode_neighbour(n, &self.links) {
                    self.neighbours.insert((n.dev, n.dst), n.lladdr);
                }
            }
        }
        self.stale.neighbours = false;
    }

    /// Applies one notification. `replace`: the header carried
    /// `NLM_F_REPLACE` (a new route took the place of the one with its key).
    pub fn apply(&mut self, msg: &RouteNetlinkMessage, replace: bool) {
        match msg {
            RouteNetlinkMessage::NewLink(l) if is_bridge_port_view(l) => {
                // A flag change made through the bridge (`bridge link set`)
                // is notified only this way.
                if let (Some(flags), Some(e)) = (
                    decode_bridge_port_view(l),
                    self.links.get_mut(&l.header.index),
                ) {
                    e.link.bridge_port = Some(flags);
                }
            }
            // The port left its bridge (or is going): the device's own
            // RTM_NEWLINK or RTM_DELLINK follows and says which.
            RouteNetlinkMessage::DelLink(l) if is_bridge_port_view(l) => {}
            RouteNetlinkMessage::NewLink(l) => {
                let index = l.header.index;
                let before = self.links.get(&index).cloned();
                self.new_link(l);
                match (before, self.links.get(&index)) {
                    // Every mirrored object names its device: a rename
                    // rewrites them all, most simply by a fresh dump.
                    (Some(b), Some(a)) if b.name != a.name => self.stale = Stale::ALL,
                    // IPv4 routes through a device that goes down are
                    // flushed without notification.
                    (Some(b), Some(a)) if b.link.up && !a.link.up => self.stale.routes = true,
                    _ => {}
                }
            }
            RouteNetlinkMessage::DelLink(l) => {
                let index = l.header.index;
                if let Some(e) = self.links.remove(&index) {
                    self.by_name.remove(&e.name);
                    // The kernel notifies the addresses and neighbours that go
                    // with the device; dropping them here is the same end state.
                    self.addresses.retain(|a| a.dev != e.name);
                    self.neighbours.retain(|(dev, _), _| *dev != e.name);
                }
                // IPv4 routes through it go without notification.
                self.stale.routes = true;
            }
            RouteNetlinkMessage::NewAddress(a) | RouteNetlinkMessage::DelAddress(a) => {
                let Some(ad) = decode_address(a, &self.links) else {
                    if !self.links.contains_key(&a.header.index) {
                        self.stale.addresses = true;
                    }
                    return;
                };
                if matches!(msg, RouteNetlinkMessage::NewAddress(_)) {
                    self.addresses.insert(ad);
                } else {
                    self.addresses.remove(&ad);
                    if ad.net.addr().is_ipv4() {
                        self.after_ipv4_address_removed(&ad);
                    }
                }
            }
            RouteNetlinkMessage::NewRule(r) => {
                if let Some(rule) = decode_rule(r) {
                    self.rules.insert(rule);
                }
            }
            RouteNetlinkMessage::DelRule(r) => {
                if let Some(rule) = decode_rule(r) {
                    self.rules.remove(&rule);
                }
            }
            RouteNetlinkMessage::NewRoute(r) => {
                let Some((route, prefsrc)) = decode_route(r, &self.links) else {
                    // A route we do not mirror (multipath, other types) that
                    // replaced one we do.
                    if replace {
                        self.stale.routes = true;
                    }
                    return;
                };
                let table = self.routes.entry(route.table).or_default();
                if replace {
                    let key = route.key();
                    let replaced: Vec<KernelRoute> = table
                        .routes
                        .iter()
                        .filter(|r| r.key() == key)
                        .cloned()
                        .collect();
                    if replaced.len() > 1 {
                        // Which of the appended routes was replaced is not said.
                        self.stale.routes = true;
                    }
                    for r in &replaced {
                        table.remove(r);
                    }
                    for r in &replaced {
                        self.merge(r, false);
                    }
                }
                self.merge(&route, true);
                self.routes
                    .entry(route.table)
                    .or_default()
                    .insert(route, prefsrc);
            }
            RouteNetlinkMessage::DelRoute(r) => {
                let Some((route, _)) = decode_route(r, &self.links) else {
                    return;
                };
                let Some(table) = self.routes.get_mut(&route.table) else {
                    return;
                };
                if !table.remove(&route) && table.routes.iter().any(|r| r.key() == route.key()) {
                    self.stale.routes = true;
                }
                self.merge(&route, false);
            }
            RouteNetlinkMessage::NewNeighbour(n) | RouteNetlinkMessage::DelNeighbour(n) => {
                let deleted = matches!(msg, RouteNetlinkMessage::DelNeighbour(_));
                match decode_neighbour(n, &self.links) {
                    Some(Neigh::Permanent(n)) if !deleted => {
                        self.neighbours.insert((n.dev, n.dst), n.lladdr);
                    }
                    // Deleted, or no longer permanent.
                    Some(Neigh::Permanent(n)) => {
                        self.neighbours.remove(&(n.dev, n.dst));
                    }
                    Some(Neigh::Other { dev, dst }) => {
                        self.neighbours.remove(&(dev, dst));
                    }
                    Some(Neigh::Proxy(_)) => {}
                    None => {
                        if !self.links.contains_key(&n.header.ifindex) {
                            self.stale.neighbours = true;
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Marks the routes stale when the kernel flushes IPv4 routes silently
    /// after `removed` went: it was the device's last IPv4 address, or the
    /// preferred source of some route.
    fn after_ipv4_address_removed(&mut self, removed: &Address) {
        let last_on_dev = !self
            .addresses
            .iter()
            .any(|a| a.dev == removed.dev && a.net.addr().is_ipv4());
        // The kernel's own routes for the address (local, broadcast,
        // prefix) have it as preferred source too, but go with notifications.
        let was_prefsrc = self
            .routes
            .values()
            .flat_map(|t| t.prefsrc.iter())
            .any(|(r, src)| r.proto != proto::KERNEL && *src == removed.net.addr());
        if last_on_dev || was_prefsrc {
            self.stale.routes = true;
        }
    }

    fn new_link(&mut self, l: &LinkMessage) {
        let Some(entry) = decode_link(l) else { return };
        if let Some(old) = self.links.get(&l.header.index) {
            self.by_name.remove(&old.name);
        }
        self.by_name.insert(entry.name.clone(), l.header.index);
        self.links.insert(l.header.index, entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use obgp_netmodel::{scope, IpNet};
    use rtnetlink::packet_route::address::{AddressAttribute, AddressMessage};
    use rtnetlink::packet_route::link::{InfoData, InfoVlan, LinkAttribute, LinkFlags, LinkInfo};
    use rtnetlink::packet_route::neighbour::NeighbourMessage;
    use rtnetlink::packet_route::neighbour::{
        NeighbourAddress, NeighbourAttribute, NeighbourState,
    };
    use rtnetlink::packet_route::route::RouteMessage;
    use rtnetlink::packet_route::route::{
        RouteAddress, RouteAttribute, RouteProtocol, RouteScope, RouteType as NlRouteType,
    };
    use rtnetlink::packet_route::AddressFamily;

    fn link(index: u32, name: &str, up: bool) -> RouteNetlinkMessage {
        let mut m = LinkMessage::default();
        m.header.index = index;
        if up {
            m.header.flags = LinkFlags::Up;
        }
        m.attributes.push(LinkAttribute::IfName(name.into()));
        RouteNetlinkMessage::NewLink(m)
    }

    fn address(index: u32, net: &str, new: bool) -> RouteNetlinkMessage {
        let net: IpNet = net.parse().unwrap();
        let mut m = AddressMessage::default();
        m.header.index = index;
        m.header.family = if net.addr().is_ipv6() {
            AddressFamily::Inet6
        } else {
            AddressFamily::Inet
        };
        m.header.prefix_len = net.prefix_len();
        m.attributes.push(AddressAttribute::Address(net.addr()));
        if new {
            RouteNetlinkMessage::NewAddress(m)
        } else {
            RouteNetlinkMessage::DelAddress(m)
        }
    }

    fn route_msg(
        table: u8,
        dst: &str,
        oif: u32,
        via: Option<&str>,
        src: Option<&str>,
    ) -> RouteMessage {
        let dst: IpNet = dst.parse().unwrap();
        let mut m = RouteMessage::default();
        m.header.address_family = AddressFamily::Inet;
        m.header.table = table;
        m.header.destination_prefix_length = dst.prefix_len();
        m.header.protocol = RouteProtocol::from(proto::BOOT);
        m.header.scope = RouteScope::from(scope::LINK);
        m.header.kind = NlRouteType::Unicast;
        m.attributes
            .push(RouteAttribute::Destination(RouteAddress::from(dst.addr())));
        m.attributes.push(RouteAttribute::Oif(oif));
        if let Some(v) = via {
            let v: IpAddr = v.parse().unwrap();
            m.attributes
                .push(RouteAttribute::Gateway(RouteAddress::from(v)));
        }
        if let Some(s) = src {
            let s: IpAddr = s.parse().unwrap();
            m.attributes
                .push(RouteAttribute::PrefSource(RouteAddress::from(s)));
        }
        m
    }

    fn neighbour(index: u32, dst: &str, mac: u8, state: NeighbourState) -> NeighbourMessage {
        let dst: IpAddr = dst.parse().unwrap();
        let mut m = NeighbourMessage::default();
        m.header.ifindex = index;
        m.header.family = AddressFamily::Inet;
        m.header.state = state;
        m.attributes
            .push(NeighbourAttribute::Destination(match dst {
                IpAddr::V4(a) => NeighbourAddress::Inet(a),
                IpAddr::V6(a) => NeighbourAddress::Inet6(a),
            }));
        m.attributes.push(NeighbourAttribute::LinkLayerAddress(vec![
            0xfa, 0x16, 0x3e, 0, 0, mac,
        ]));
        m
    }

    /// A mirror with `br-ex` (2, up, 192.0.2.1/24) and `bgp-nic` (3, up).
    fn mirror() -> MirrorState {
        let mut s = MirrorState::new();
        s.install_links(&[link(2, "br-ex", true), link(3, "bgp-nic", true)]);
        s.install_addresses(&[address(2, "192.0.2.1/24", true)]);
        s.install_rules(&[]);
        s.install_routes(&[]);
        s.install_neighbours(&[]);
        assert!(!s.stale.any());
        s
    }

    fn dev(s: &str) -> DevName {
        DevName::new(s).unwrap()
    }

    fn tables(t: &[u32]) -> BTreeSet<u32> {
        t.iter().copied().collect()
    }

    #[test]
    fn a_replaced_route_takes_the_place_of_the_one_with_its_key() {
        let mut s = mirror();
        let first = route_msg(200, "203.0.113.0/24", 2, None, None);
        s.apply(&RouteNetlinkMessage::NewRoute(first), false);
        let second = route_msg(200, "203.0.113.0/24", 2, Some("192.0.2.9"), None);
        s.apply(&RouteNetlinkMessage::NewRoute(second.clone()), true);
        let v = s.read(&tables(&[200]));
        assert_eq!(v.routes.len(), 1, "{:?}", v.routes);
        assert_eq!(
            v.routes.first().unwrap().via,
            Some("192.0.2.9".parse().unwrap())
        );
        assert!(!s.stale.routes);
        s.apply(&RouteNetlinkMessage::DelRoute(second), false);
        assert!(s.read(&tables(&[200])).routes.is_empty());
        assert!(!s.stale.any());
    }

    #[test]
    fn vrf_devices_are_listed_with_their_tables() {
        use rtnetlink::packet_route::link::{InfoKind, InfoVrf};
        let mut s = mirror();
        let vrf = |index, name: &str, table| {
            let RouteNetlinkMessage::NewLink(mut m) = link(index, name, true) else {
                unreachable!()
            };
            m.attributes.push(LinkAttribute::LinkInfo(vec![
                LinkInfo::Kind(InfoKind::Vrf),
                LinkInfo::Data(InfoData::Vrf(vec![InfoVrf::TableId(table)])),
            ]));
            RouteNetlinkMessage::NewLink(m)
        };
        s.apply(&vrf(7, "vrf-1001", 1001), false);
        s.apply(&vrf(8, "vrf-blue", 20), false);
        let got: Vec<(DevName, u32)> = s.vrf_tables().map(|(n, t)| (n.clone(), t)).collect();
        assert_eq!(got, [(dev("vrf-1001"), 1001), (dev("vrf-blue"), 20)]);
    }

    #[test]
    fn routes_are_read_only_from_the_asked_tables() {
        let mut s = mirror();
        for t in [10, 200, 254] {
            let m = route_msg(t, "203.0.113.0/24", 2, None, None);
            s.apply(&RouteNetlinkMessage::NewRoute(m), false);
        }
        let v = s.read(&tables(&[10, 200, 7]));
        let got: Vec<u32> = v.routes.iter().map(|r| r.table).collect();
        assert_eq!(got, vec![10, 200]);
    }

    #[test]
    fn reads_share_the_mirrored_sets_until_a_notification_changes_them() {
        let mut s = mirror();
        let m = route_msg(200, "203.0.113.0/24", 2, None, Some("192.0.2.1"));
        s.apply(&RouteNetlinkMessage::NewRoute(m.clone()), false);
        let (a, b) = (s.read(&tables(&[200, 10])), s.read(&tables(&[200, 10])));
        assert!(a.addresses.shares_with(&b.addresses));
        assert!(a.rules.shares_with(&b.rules));
        assert!(
            a.routes.shares_with(&b.routes),
            "one table with routes: shared"
        );

        // A change while `a` is held: `a` keeps what it read.
        s.apply(&address(3, "198.51.100.7/32", true), false);
        s.apply(&RouteNetlinkMessage::DelRoute(m), false);
        let c = s.read(&tables(&[200, 10]));
        assert_eq!((a.addresses.len(), c.addresses.len()), (1, 2));
        assert_eq!((a.routes.len(), c.routes.len()), (1, 0));
        // The route's preferred source went with it: removing that address
        // (br-ex keeps another IPv4 one) leaves the routes trusted; with the
        // route there, the same removal marks them stale (the kernel drops
        // such a route silently).
        let first = |new| address(2, "192.0.2.1/24", new);
        s.apply(&address(2, "192.0.2.2/24", true), false);
        s.apply(&first(false), false);
        assert!(!s.stale.routes);
        s.apply(&first(true), false);
        let with_src = route_msg(200, "203.0.113.0/24", 2, None, Some("192.0.2.1"));
        s.apply(&RouteNetlinkMessage::NewRoute(with_src), false);
        s.apply(&first(false), false);
        assert!(s.stale.routes);
    }

    #[test]
    fn several_tables_are_read_as_one_shared_union_kept_up_to_date() {
        let mut s = mirror();
        let add = |s: &mut MirrorState, t, dst| {
            s.apply(
                &RouteNetlinkMessage::NewRoute(route_msg(t, dst, 2, None, None)),
                false,
            )
        };
        add(&mut s, 10, "203.0.113.1/32");
        add(&mut s, 200, "203.0.113.0/24");
        let asked = tables(&[10, 200]);
        let (a, b) = (s.read(&asked), s.read(&asked));
        assert!(a.routes.shares_with(&b.routes), "the union is built once");
        drop((a, b));
        // Notifications change the union in place, as they change the tables.
        add(&mut s, 10, "203.0.113.2/32");
        add(&mut s, 254, "198.51.100.0/24");
        let gone = route_msg(200, "203.0.113.0/24", 2, None, None);
        s.apply(&RouteNetlinkMessage::DelRoute(gone), false);
        let union: Vec<String> = s
            .read(&asked)
            .routes
            .iter()
            .map(|r| format!("{} {}", r.table, r.dst.unwrap()))
            .collect();
        assert_eq!(union, ["10 203.0.113.1/32", "10 203.0.113.2/32"]);
        // Another set of tables builds its own union.
        let other = s.read(&tables(&[10, 254]));
        assert_eq!(other.routes.len(), 3);
    }

    #[test]
    fn deleting_an_unknown_route_with_a_known_key_marks_routes_stale() {
        let mut s = mirror();
        let m = route_msg(200, "203.0.113.0/24", 2, None, None);
        s.apply(&RouteNetlinkMessage::NewRoute(m), false);
        let other = route_msg(200, "203.0.113.0/24", 2, Some("192.0.2.7"), None);
        s.apply(&RouteNetlinkMessage::DelRoute(other), false);
        assert!(s.stale.routes);
    }

    #[test]
    fn silent_ipv4_route_flushes_mark_routes_stale() {
        // The device going down.
        let mut s = mirror();
        s.apply(&link(2, "br-ex", false), false);
        assert!(s.stale.routes);
        assert!(!s.stale.addresses);

        // Its last IPv4 address removed.
        let mut s = mirror();
        s.apply(&address(2, "192.0.2.1/24", false), false);
        assert!(s.stale.routes);

        // Not the last one, and no route prefers it: nothing flushed.
        let mut s = mirror();
        s.apply(&address(2, "192.0.2.2/24", true), false);
        s.apply(&address(2, "192.0.2.2/24", false), false);
        assert!(!s.stale.any());

        // Not the last one, but some route's preferred source.
        let mut s = mirror();
        s.apply(&address(2, "192.0.2.2/24", true), false);
        let m = route_msg(200, "203.0.113.0/24", 2, None, Some("192.0.2.2"));
        s.apply(&RouteNetlinkMessage::NewRoute(m), false);
        s.apply(&address(2, "192.0.2.2/24", false), false);
        assert!(s.stale.routes);

        // An IPv6 address: the kernel notifies what goes with it.
        let mut s = mirror();
        s.apply(&address(2, "2001:db8::1/64", true), false);
        s.apply(&address(2, "2001:db8::1/64", false), false);
        assert!(!s.stale.any());
    }

    #[test]
    fn a_deleted_link_takes_its_addresses_and_neighbours_and_marks_routes_stale() {
        let mut s = mirror();
        let n = neighbour(2, "192.0.2.50", 0x50, NeighbourState::Permanent);
        s.apply(&RouteNetlinkMessage::NewNeighbour(n), false);
        let mut del = LinkMessage::default();
        del.header.index = 2;
        s.apply(&RouteNetlinkMessage::DelLink(del), false);
        let v = s.read(&tables(&[]));
        assert!(!v.links.contains_key(&DevName::new("br-ex").unwrap()));
        assert!(v.addresses.is_empty());
        assert!(v.neighbours.is_empty());
        assert!(s.stale.routes);
        assert_eq!(s.ifindex(&DevName::new("br-ex").unwrap()), None);
    }

    #[test]
    fn a_rename_marks_everything_stale() {
        let mut s = mirror();
        s.apply(&link(2, "br-renamed", true), false);
        assert_eq!(s.stale, Stale::ALL);
        assert_eq!(s.ifindex(&DevName::new("br-renamed").unwrap()), Some(2));
        assert_eq!(s.ifindex(&DevName::new("br-ex").unwrap()), None);
    }

    #[test]
    fn only_permanent_neighbours_are_kept_and_a_state_change_drops_one() {
        let mut s = mirror();
        let perm = neighbour(2, "192.0.2.50", 0x50, NeighbourState::Permanent);
        s.apply(&RouteNetlinkMessage::NewNeighbour(perm), false);
        let reach = neighbour(2, "192.0.2.51", 0x51, NeighbourState::Reachable);
        s.apply(&RouteNetlinkMessage::NewNeighbour(reach), false);
        assert_eq!(s.read(&tables(&[])).neighbours.len(), 1);

        // The same address, a new MAC: replaced, not added.
        let moved = neighbour(2, "192.0.2.50", 0x99, NeighbourState::Permanent);
        s.apply(&RouteNetlinkMessage::NewNeighbour(moved), false);
        let v = s.read(&tables(&[]));
        assert_eq!(v.neighbours.len(), 1);
        assert_eq!(v.neighbours.first().unwrap().lladdr.0[5], 0x99);

        // No longer permanent.
        let stale = neighbour(2, "192.0.2.50", 0x99, NeighbourState::Stale);
        s.apply(&RouteNetlinkMessage::NewNeighbour(stale), false);
        assert!(s.read(&tables(&[])).neighbours.is_empty());
        assert!(!s.stale.any());
    }

    #[test]
    fn master_and_vlan_parent_resolve_by_index_when_read() {
        let mut s = mirror();
        let mut vlan = LinkMessage::default();
        vlan.header.index = 4;
        vlan.attributes
            .push(LinkAttribute::IfName("br-ex.100".into()));
        vlan.attributes.push(LinkAttribute::Link(2));
        vlan.attributes.push(LinkAttribute::Controller(3));
        vlan.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(rtnetlink::packet_route::link::InfoKind::Vlan),
            LinkInfo::Data(InfoData::Vlan(vec![InfoVlan::Id(100)])),
        ]));
        s.apply(&RouteNetlinkMessage::NewLink(vlan), false);
        let v = s.read(&tables(&[]));
        let l = &v.links[&DevName::new("br-ex.100").unwrap()];
        assert_eq!(l.kind, "vlan");
        assert_eq!(l.vlan_id, Some(100));
        assert_eq!(l.parent.as_ref().map(DevName::as_str), Some("br-ex"));
        assert_eq!(l.master.as_ref().map(DevName::as_str), Some("bgp-nic"));
    }

    /// A veth `veth-a` (4) with peer `veth-b` (5), `veth-a` enslaved to
    /// bridge br-ex (2) with the given bridge-port flags.
    fn veth_port(index: u32, name: &str, peer: u32, learning: bool) -> RouteNetlinkMessage {
        use rtnetlink::packet_route::link::{InfoBridgePort, InfoKind, InfoPortData, InfoPortKind};
        let mut m = LinkMessage::default();
        m.header.index = index;
        m.attributes.push(LinkAttribute::IfName(name.into()));
        m.attributes.push(LinkAttribute::Link(peer));
        let mut info = vec![LinkInfo::Kind(InfoKind::Veth)];
        if index == 4 {
            m.attributes.push(LinkAttribute::Controller(2));
            info.push(LinkInfo::PortKind(InfoPortKind::Bridge));
            info.push(LinkInfo::PortData(InfoPortData::BridgePort(vec![
                InfoBridgePort::Learning(learning),
                InfoBridgePort::NeighSupress(!learning),
            ])));
        }
        m.attributes.push(LinkAttribute::LinkInfo(info));
        RouteNetlinkMessage::NewLink(m)
    }

    /// What the bridge sends about port 4 (AF_BRIDGE, IFLA_PROTINFO).
    fn bridge_view(learning: bool, new: bool) -> RouteNetlinkMessage {
        use rtnetlink::packet_core::DefaultNla;
        use rtnetlink::packet_route::link::LinkProtoInfoBridge;
        let mut m = LinkMessage::default();
        m.header.interface_family = AddressFamily::Bridge;
        m.header.index = 4;
        m.attributes.push(LinkAttribute::IfName("veth-a".into()));
        m.attributes.push(LinkAttribute::Controller(2));
        m.attributes.push(LinkAttribute::ProtoInfoBridge(vec![
            LinkProtoInfoBridge::Other(DefaultNla::new(8, vec![u8::from(learning)])),
            LinkProtoInfoBridge::Other(DefaultNla::new(32, vec![u8::from(!learning)])),
        ]));
        if new {
            RouteNetlinkMessage::NewLink(m)
        } else {
            RouteNetlinkMessage::DelLink(m)
        }
    }

    #[test]
    fn the_bridges_view_of_a_port_updates_its_flags_and_never_replaces_or_deletes_it() {
        use obgp_netmodel::BridgePort;
        let mut s = mirror();
        s.apply(&veth_port(4, "veth-a", 5, true), false);
        s.apply(&veth_port(5, "veth-b", 4, true), false);
        let read = |s: &mut MirrorState| s.read(&tables(&[])).links;
        let a = read(&mut s);
        let (va, vb) = (&a[&dev("veth-a")], &a[&dev("veth-b")]);
        assert_eq!(va.parent, Some(dev("veth-b")), "a veth names its peer");
        assert_eq!(vb.parent, Some(dev("veth-a")));
        assert_eq!(va.master, Some(dev("br-ex")));
        assert_eq!(
            va.bridge_port,
            Some(BridgePort {
                learning: true,
                neigh_suppress: false
            })
        );
        assert_eq!(vb.bridge_port, None, "not a bridge port");

        // `bridge link set dev veth-a learning off neigh_suppress on`: only
        // the bridge's view is notified.
        s.apply(&bridge_view(false, true), false);
        let va = read(&mut s)[&dev("veth-a")].clone();
        assert_eq!(va.kind, "veth", "the device's own entry stays");
        assert_eq!(va.bridge_port, Some(BridgePort::EVPN));
        // The port leaves the bridge: the bridge's RTM_DELLINK, then the
        // device's own RTM_NEWLINK without master.
        s.apply(&bridge_view(false, false), false);
        assert!(read(&mut s).contains_key(&dev("veth-a")), "still there");
        let mut own = LinkMessage::default();
        own.header.index = 4;
        own.attributes.push(LinkAttribute::IfName("veth-a".into()));
        own.attributes.push(LinkAttribute::Link(5));
        own.attributes
            .push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(
                rtnetlink::packet_route::link::InfoKind::Veth,
            )]));
        s.apply(&RouteNetlinkMessage::NewLink(own), false);
        let va = read(&mut s)[&dev("veth-a")].clone();
        assert_eq!((va.master, va.bridge_port), (None, None));
        assert!(!s.stale.any());

        // A dump is of AF_UNSPEC entries; an AF_BRIDGE one in it would be
        // skipped, not taken for the device (the device's own entry has
        // the flags too).
        let mut s = mirror();
        s.install_links(&[
            link(2, "br-ex", true),
            veth_port(4, "veth-a", 5, false),
            bridge_view(true, true),
        ]);
        let va = read(&mut s)[&dev("veth-a")].clone();
        assert_eq!(va.kind, "veth");
        assert_eq!(va.bridge_port, Some(BridgePort::EVPN));
    }

    #[test]
    fn notifications_replayed_onto_a_later_dump_give_the_latest_state() {
        // An address added then removed, a route added: the dump (taken
        // after all three) has only the route; replaying all three onto it
        // must not resurrect the address.
        let mut s = mirror();
        let route = route_msg(200, "203.0.113.0/24", 2, None, None);
        s.install_routes(&[RouteNetlinkMessage::NewRoute(route.clone())]);
        s.apply(&address(3, "172.24.4.10/32", true), false);
        s.apply(&address(3, "172.24.4.10/32", false), false);
        s.apply(&RouteNetlinkMessage::NewRoute(route), false);
        let v = s.read(&tables(&[200]));
        assert_eq!(v.routes.len(), 1);
        assert!(!v.addresses.iter().any(|a| a.dev.as_str() == "bgp-nic"));
    }
}
