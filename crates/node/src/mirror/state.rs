//! The mirrored netlink state: links, addresses, rules, routes, permanent
//! neighbours and the agent-shaped static entries of Linux bridges' FDBs, fed decoded rtnetlink messages in the kernel's
//! order (pure; the sockets that feed it are the parent module's).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use obgp_netmodel::{proto, Address, BridgeFdbEntry, DevName, MacAddr, Neighbour};
use rtnetlink::packet_route::link::LinkMessage;
use rtnetlink::packet_route::neighbour::NeighbourMessage;
use rtnetlink::packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::codec::{
    decode_address, decode_bridge_fdb, decode_bridge_port_view, decode_link, decode_neighbour,
    decode_route, decode_rule, is_bridge_port_view, BridgeFdb, LinkEntry, Neigh,
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
    /// The neighbours and the bridge FDB entries (both `RTM_*NEIGH`).
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
    /// Permanent neighbours, at most one per (device, address): the set
    /// orders them by device and address first ([`MirrorState::neighbour_at`]).
    neighbours: SharedSet<Neighbour>,
    /// The static bridge FDB entries on ports the agent could own
    /// ([`BridgeFdb::Static`]), at most one per kernel key (bridge, MAC,
    /// VLAN), which the set's order keeps adjacent.
    bridge_fdb: SharedSet<BridgeFdbEntry>,
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
    pub neighbours: SharedSet<Neighbour>,
    pub bridge_fdb: SharedSet<BridgeFdbEntry>,
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
            neighbours: self.neighbours.clone(),
            bridge_fdb: self.bridge_fdb.clone(),
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

    /// Replaces the permanent neighbours and the bridge FDB entries with a
    /// dump's (`AF_INET`, `AF_INET6` and `AF_BRIDGE`).
    pub fn install_neighbours(&mut self, dump: &[RouteNetlinkMessage]) {
        self.neighbours = SharedSet::new();
        self.bridge_fdb = SharedSet::new();
        for m in dump {
            if let RouteNetlinkMessage::NewNeighbour(n) = m {
                if let Some(BridgeFdb::Static(e)) = decode_bridge_fdb(n, &self.links) {
                    self.set_bridge_fdb(&e.clone(), Some(e));
                } else if let Some(Neigh::Permanent(n)) = decode_neighbour(n, &self.links) {
                    self.set_neighbour(&n.dev, n.dst, Some(n.lladdr));
                }
            }
        }
        self.stale.neighbours = false;
    }

    /// Applies one notification. `replace`: the header carried
    /// `NLM_F_REPLACE` (a new route took the place of the one with its key).
    /// Long (about 135 lines) on purpose: one arm per rtnetlink message
    /// type, each the kernel's rule for what that notification changes.
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
                    self.neighbours.retain(|n| n.dev != e.name);
                    self.bridge_fdb
                        .retain(|f| f.port != e.name && f.bridge != e.name);
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
            RouteNetlinkMessage::NewNeighbour(n) | RouteNetlinkMessage::DelNeighbour(n)
                if n.header.family == AddressFamily::Bridge =>
            {
                let deleted = matches!(msg, RouteNetlinkMessage::DelNeighbour(_));
                self.apply_bridge_fdb(n, deleted);
            }
            RouteNetlinkMessage::NewNeighbour(n) | RouteNetlinkMessage::DelNeighbour(n) => {
                let deleted = matches!(msg, RouteNetlinkMessage::DelNeighbour(_));
                match decode_neighbour(n, &self.links) {
                    Some(Neigh::Permanent(n)) if !deleted => {
                        self.set_neighbour(&n.dev, n.dst, Some(n.lladdr));
                    }
                    // Deleted, or no longer permanent.
                    Some(Neigh::Permanent(n)) => self.set_neighbour(&n.dev, n.dst, None),
                    Some(Neigh::Other { dev, dst }) => self.set_neighbour(&dev, dst, None),
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

    /// The permanent neighbour at (`dev`, `dst`), whatever its MAC.
    fn neighbour_at(&self, dev: &DevName, dst: IpAddr) -> Option<Neighbour> {
        let at = |mac: u8| Neighbour {
            dev: dev.clone(),
            dst,
            lladdr: MacAddr([mac; 6]),
        };
        self.neighbours.range(at(0)..=at(0xff)).next().cloned()
    }

    /// Sets the permanent neighbour at (`dev`, `dst`) to `lladdr`, or
    /// removes it: the kernel holds one entry per device and address, and
    /// a notification gives its whole new state.
    fn set_neighbour(&mut self, dev: &DevName, dst: IpAddr, lladdr: Option<MacAddr>) {
        let old = self.neighbour_at(dev, dst);
        let new = lladdr.map(|lladdr| Neighbour {
            dev: dev.clone(),
            dst,
            lladdr,
        });
        if old == new {
            return;
        }
        if let Some(old) = old {
            self.neighbours.remove(&old);
        }
        if let Some(new) = new {
            self.neighbours.insert(new);
        }
    }

    /// Applies one notification about a Linux bridge's FDB entry.
    fn apply_bridge_fdb(&mut self, n: &NeighbourMessage, deleted: bool) {
        match decode_bridge_fdb(n, &self.links) {
            Some(BridgeFdb::Static(e)) if !deleted => self.set_bridge_fdb(&e.clone(), Some(e)),
            // Deleted, moved to another port or no longer static.
            Some(BridgeFdb::Static(e)) => self.set_bridge_fdb(&e, None),
            Some(BridgeFdb::Other { bridge, mac, vlan }) => {
                let key = BridgeFdbEntry {
                    bridge,
                    mac,
                    vlan,
                    port: bridge_fdb_any_port(),
                };
                self.set_bridge_fdb(&key, None);
            }
            // A device's own address list (no NDA_MASTER), or a device the
            // mirror does not know yet.
            None => {
                if !self.links.contains_key(&n.header.ifindex) {
                    self.stale.neighbours = true;
                }
            }
        }
    }

    /// Sets the bridge FDB entry at `key`'s kernel key (bridge, MAC, VLAN;
    /// its port is not part of it) to `entry`, or removes it.
    fn set_bridge_fdb(&mut self, key: &BridgeFdbEntry, entry: Option<BridgeFdbEntry>) {
        // At most one entry per key, and the entries of a key are adjacent
        // in the set's order: it is next to `key` on one side.
        let old = self
            .bridge_fdb
            .range(..=key)
            .next_back()
            .into_iter()
            .chain(self.bridge_fdb.range(key..).next())
            .find(|e| e.same_key(key))
            .cloned();
        if old == entry {
            return;
        }
        if let Some(old) = old {
            self.bridge_fdb.remove(&old);
        }
        if let Some(new) = entry {
            self.bridge_fdb.insert(new);
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

/// A port name for a key lookup in the bridge FDB set, which matches
/// entries by key whatever their port.
fn bridge_fdb_any_port() -> DevName {
    DevName::new("-").expect("a valid device name")
}

#[cfg(test)]
mod tests;
