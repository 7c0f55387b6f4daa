//! Unit tests, beside the module so that they may use its private items.
use super::*;
use obgp_netmodel::{scope, IpNet};
use rtnetlink::packet_route::address::{AddressAttribute, AddressMessage};
use rtnetlink::packet_route::link::{InfoData, InfoVlan, LinkAttribute, LinkFlags, LinkInfo};
use rtnetlink::packet_route::neighbour::NeighbourMessage;
use rtnetlink::packet_route::neighbour::{NeighbourAddress, NeighbourAttribute, NeighbourState};
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

fn route_msg(table: u8, dst: &str, oif: u32, via: Option<&str>, src: Option<&str>) -> RouteMessage {
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
    let (a, b) = (s.read(&tables(&[])), s.read(&tables(&[])));
    assert_eq!(a.neighbours.len(), 1);
    assert!(
        a.neighbours.shares_with(&b.neighbours),
        "handed out, not rebuilt"
    );
    drop((a, b));

    // The same address, a new MAC: replaced, not added.
    let moved = neighbour(2, "192.0.2.50", 0x99, NeighbourState::Permanent);
    s.apply(&RouteNetlinkMessage::NewNeighbour(moved.clone()), false);
    let v = s.read(&tables(&[]));
    assert_eq!(v.neighbours.len(), 1);
    assert_eq!(v.neighbours.first().unwrap().lladdr.0[5], 0x99);
    // The same state again changes nothing: a reader still shares the set.
    s.apply(&RouteNetlinkMessage::NewNeighbour(moved), false);
    assert!(v.neighbours.shares_with(&s.read(&tables(&[])).neighbours));
    drop(v);

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

/// A bridge FDB notification (AF_BRIDGE, NDA_MASTER 2 = br-ex) for MAC
/// fa:16:3e:00:00:`mac` on port `index`.
fn bridge_fdb(index: u32, mac: u8, state: NeighbourState) -> NeighbourMessage {
    let mut m = NeighbourMessage::default();
    m.header.ifindex = index;
    m.header.family = AddressFamily::Bridge;
    m.header.state = state;
    m.attributes.push(NeighbourAttribute::LinkLayerAddress(vec![
        0xfa, 0x16, 0x3e, 0, 0, mac,
    ]));
    m.attributes.push(NeighbourAttribute::Controller(2));
    m
}

#[test]
fn a_bridge_fdb_key_holds_our_static_entry_until_it_moves_ages_or_its_port_goes() {
    let mut s = mirror();
    s.apply(&veth_port(4, "vrfdd3b5a95-aa", 5, true), false);
    s.apply(&veth_port(5, "ovsdd3b5a95-aa", 4, true), false);
    let ours = BridgeFdbEntry {
        bridge: dev("br-ex"),
        mac: MacAddr([0xfa, 0x16, 0x3e, 0, 0, 1]),
        vlan: None,
        port: dev("vrfdd3b5a95-aa"),
    };
    let held = |s: &mut MirrorState| -> BTreeSet<BridgeFdbEntry> {
        s.read(&tables(&[])).bridge_fdb.iter().cloned().collect()
    };
    let one: BTreeSet<BridgeFdbEntry> = [ours.clone()].into();
    s.install_neighbours(&[
        RouteNetlinkMessage::NewNeighbour(bridge_fdb(4, 1, NeighbourState::Noarp)),
        // Another MAC the bridge learnt on our port: not read.
        RouteNetlinkMessage::NewNeighbour(bridge_fdb(4, 2, NeighbourState::Reachable)),
    ]);
    assert_eq!(held(&mut s), one);
    let new = |m| RouteNetlinkMessage::NewNeighbour(m);
    // The MAC moves to another port: the key no longer holds ours.
    s.apply(&new(bridge_fdb(5, 1, NeighbourState::Noarp)), false);
    assert_eq!(held(&mut s), BTreeSet::new());
    s.apply(&new(bridge_fdb(4, 1, NeighbourState::Noarp)), false);
    assert_eq!(held(&mut s), one);
    // It turns dynamic (someone replaced it): not ours either.
    s.apply(&new(bridge_fdb(4, 1, NeighbourState::Reachable)), false);
    assert_eq!(held(&mut s), BTreeSet::new());
    s.apply(&new(bridge_fdb(4, 1, NeighbourState::Noarp)), false);
    s.apply(
        &RouteNetlinkMessage::DelNeighbour(bridge_fdb(4, 1, NeighbourState::Noarp)),
        false,
    );
    assert_eq!(held(&mut s), BTreeSet::new());
    // The port goes: its entries with it.
    s.apply(&new(bridge_fdb(4, 1, NeighbourState::Noarp)), false);
    let RouteNetlinkMessage::NewLink(port) = veth_port(4, "vrfdd3b5a95-aa", 5, true) else {
        unreachable!()
    };
    s.apply(&RouteNetlinkMessage::DelLink(port), false);
    assert_eq!(held(&mut s), BTreeSet::new());
    // A notification about a device the mirror does not know: re-dump.
    assert!(!s.stale.neighbours);
    s.apply(&new(bridge_fdb(9, 1, NeighbourState::Noarp)), false);
    assert!(s.stale.neighbours);
}
