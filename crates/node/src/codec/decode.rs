//! Decoding: the messages the kernel sends (dumps and notifications) read
//! back into the objects the mirror holds, devices by index (resolved to
//! names when the mirror is read). What it decodes is what
//! [`super::encode`] writes; the round-trip tests in `codec/tests.rs`
//! check both.

use std::collections::BTreeMap;
use std::net::IpAddr;

use obgp_netmodel::{
    Address, BridgeFdbEntry, BridgePort, DevName, IpNet, MacAddr, Neighbour, ProxyNeighbour,
    RouteType,
};
use obgp_plan::actual::{ActualLink, KernelRoute, KernelRule, VxlanInfo};
use rtnetlink::packet_core::{Nla, NLA_TYPE_MASK};
use rtnetlink::packet_route::address::{AddressAttribute, AddressMessage};
use rtnetlink::packet_route::link::{
    InfoBridgePort, InfoData, InfoPortData, InfoPortKind, InfoVlan, InfoVrf, InfoVxlan,
    LinkAttribute, LinkFlags, LinkInfo, LinkLayerType, LinkMessage, LinkProtoInfoBridge,
};
use rtnetlink::packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourFlags, NeighbourMessage, NeighbourState,
};
use rtnetlink::packet_route::route::{
    RouteAddress, RouteAttribute, RouteMessage, RouteType as NlRouteType,
};
use rtnetlink::packet_route::rule::{RuleAction, RuleAttribute, RuleMessage};
use rtnetlink::packet_route::AddressFamily;

/// A link as mirrored: master and lower device by index, resolved to names
/// when the mirror is read (a rename then needs no rewrite).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LinkEntry {
    pub(crate) name: DevName,
    /// `master` and `parent` are left `None` here.
    pub(crate) link: ActualLink,
    pub(crate) master: Option<u32>,
    /// IFLA_LINK when it names a device of this namespace (a VLAN's lower
    /// device, a veth's peer); `None` when IFLA_LINK_NETNSID says the index
    /// is another namespace's.
    pub(crate) parent: Option<u32>,
}

/// IFLA_BRPORT_LEARNING and IFLA_BRPORT_NEIGH_SUPPRESS: the bridge-port
/// flags the agent sets, as AF_BRIDGE messages carry them in IFLA_PROTINFO
/// (the crate names only one of that nest's attributes).
pub(super) const IFLA_BRPORT_LEARNING: u16 = 8;
pub(super) const IFLA_BRPORT_NEIGH_SUPPRESS: u16 = 32;

/// The kernel's bridge-port defaults, for an attribute a message lacks.
const BRIDGE_PORT_DEFAULT: BridgePort = BridgePort {
    learning: true,
    neigh_suppress: false,
};

/// Whether a link message is the bridge's (AF_BRIDGE) view of a port: it
/// carries the port's IFLA_PROTINFO but no IFLA_LINKINFO, so it must not
/// replace the device's own (AF_UNSPEC) entry, and its RTM_DELLINK means the
/// port left the bridge, not that the device went.
pub(crate) fn is_bridge_port_view(l: &LinkMessage) -> bool {
    l.header.interface_family == AddressFamily::Bridge
}

/// The bridge-port flags an AF_BRIDGE message carries, if it has them.
pub(crate) fn decode_bridge_port_view(l: &LinkMessage) -> Option<BridgePort> {
    let mut out = None;
    for a in &l.attributes {
        let LinkAttribute::ProtoInfoBridge(infos) = a else {
            continue;
        };
        let flags = out.get_or_insert(BRIDGE_PORT_DEFAULT);
        for i in infos {
            let LinkProtoInfoBridge::Other(nla) = i else {
                continue;
            };
            let mut v = [0u8; 1];
            if nla.value_len() != 1 {
                continue;
            }
            nla.emit_value(&mut v);
            match nla.kind() & NLA_TYPE_MASK {
                IFLA_BRPORT_LEARNING => flags.learning = v[0] != 0,
                IFLA_BRPORT_NEIGH_SUPPRESS => flags.neigh_suppress = v[0] != 0,
                _ => {}
            }
        }
    }
    out
}

pub(crate) fn decode_link(l: &LinkMessage) -> Option<LinkEntry> {
    let mut name = None;
    let kind = match l.header.link_layer_type {
        LinkLayerType::Loopback => "loopback",
        _ => "ether",
    };
    let mut link = ActualLink::new(
        l.header.index,
        kind,
        None,
        l.header.flags.contains(LinkFlags::Up),
    );
    let (mut master, mut parent, mut other_netns) = (None, None, false);
    let mut port_kind = None;
    let mut port_flags = BRIDGE_PORT_DEFAULT;
    for a in &l.attributes {
        match a {
            LinkAttribute::IfName(n) => name = DevName::new(n).ok(),
            LinkAttribute::LinkNetNsId(_) => other_netns = true,
            LinkAttribute::Address(b) if b.len() == 6 => {
                let mut m = [0u8; 6];
                m.copy_from_slice(b);
                link.mac = Some(MacAddr(m));
            }
            LinkAttribute::Controller(i) => master = Some(*i),
            LinkAttribute::Link(i) => parent = Some(*i),
            LinkAttribute::LinkInfo(infos) => {
                for info in infos {
                    match info {
                        LinkInfo::Kind(k) => link.kind = k.to_string(),
                        LinkInfo::Data(InfoData::Vlan(v)) => {
                            for x in v {
                                if let InfoVlan::Id(id) = x {
                                    link.vlan_id = Some(*id);
                                }
                            }
                        }
                        LinkInfo::Data(InfoData::Vrf(v)) => {
                            for x in v {
                                if let InfoVrf::TableId(t) = x {
                                    link.vrf_table = Some(*t);
                                }
                            }
                        }
                        LinkInfo::Data(InfoData::Vxlan(v)) => link.vxlan = Some(decode_vxlan(v)),
                        LinkInfo::PortKind(k) => port_kind = Some(k.clone()),
                        LinkInfo::PortData(InfoPortData::BridgePort(v)) => {
                            for x in v {
                                match x {
                                    InfoBridgePort::Learning(b) => port_flags.learning = *b,
                                    InfoBridgePort::NeighSupress(b) => {
                                        port_flags.neigh_suppress = *b
                                    }
                                    _ => {}
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    if port_kind == Some(InfoPortKind::Bridge) {
        link.bridge_port = Some(port_flags);
    }
    Some(LinkEntry {
        name: name?,
        link,
        master,
        parent: parent.filter(|_| !other_netns),
    })
}

fn decode_vxlan(v: &[InfoVxlan]) -> VxlanInfo {
    // The kernel's defaults for what a message lacks (it sends them all).
    let mut out = VxlanInfo {
        vni: 0,
        local: None,
        dstport: 8472,
        learning: true,
    };
    for x in v {
        match x {
            InfoVxlan::Id(id) => out.vni = *id,
            InfoVxlan::Local(a) => out.local = Some(IpAddr::V4(*a)),
            InfoVxlan::Local6(a) => out.local = Some(IpAddr::V6(*a)),
            InfoVxlan::Port(p) => out.dstport = *p,
            InfoVxlan::Learning(b) => out.learning = *b,
            _ => {}
        }
    }
    out
}

/// Devices by index, as the decoders resolve them.
pub(super) type Links = BTreeMap<u32, LinkEntry>;

fn name_of(links: &Links, index: u32) -> Option<DevName> {
    links.get(&index).map(|l| l.name.clone())
}

/// The address, or `None` for a device the mirror does not know or a
/// malformed prefix.
pub(crate) fn decode_address(m: &AddressMessage, links: &Links) -> Option<Address> {
    let dev = name_of(links, m.header.index)?;
    let mut local = None;
    let mut address = None;
    for at in &m.attributes {
        match at {
            AddressAttribute::Local(ip) => local = Some(*ip),
            AddressAttribute::Address(ip) => address = Some(*ip),
            _ => {}
        }
    }
    let net = IpNet::new(local.or(address)?, m.header.prefix_len).ok()?;
    Some(Address { dev, net })
}

fn is_v6(f: AddressFamily) -> Option<bool> {
    match f {
        AddressFamily::Inet => Some(false),
        AddressFamily::Inet6 => Some(true),
        _ => None,
    }
}

/// A `to DST lookup TABLE` rule, or `None` for rules with other selectors or
/// actions (never the agent's, so never read).
pub(crate) fn decode_rule(r: &RuleMessage) -> Option<KernelRule> {
    let v6 = is_v6(r.header.family)?;
    if r.header.action != RuleAction::ToTable || r.header.src_len != 0 || r.header.tos != 0 {
        return None;
    }
    let mut table = u32::from(r.header.table);
    let mut priority = 0;
    let mut dst = None;
    for a in &r.attributes {
        match a {
            RuleAttribute::Table(t) => table = *t,
            RuleAttribute::Priority(p) => priority = *p,
            RuleAttribute::Destination(ip) => dst = Some(*ip),
            RuleAttribute::Protocol(_) => {}
            // Any other selector makes it a rule the agent never writes.
            RuleAttribute::Source(_)
            | RuleAttribute::Iifname(_)
            | RuleAttribute::Oifname(_)
            | RuleAttribute::FwMark(_)
            | RuleAttribute::UidRange(_)
            | RuleAttribute::IpProtocol(_)
            | RuleAttribute::SourcePortRange(_)
            | RuleAttribute::DestinationPortRange(_)
            | RuleAttribute::Goto(_)
            | RuleAttribute::TunId(_) => return None,
            _ => {}
        }
    }
    let dst = match dst {
        Some(ip) => Some(IpNet::new(ip, r.header.dst_len).ok()?.trunc()),
        None if r.header.dst_len == 0 => None,
        None => return None,
    };
    Some(KernelRule {
        v6,
        priority,
        dst,
        table,
    })
}

fn route_type_of(t: NlRouteType) -> Option<obgp_netmodel::RouteType> {
    use obgp_netmodel::RouteType;
    Some(match t {
        NlRouteType::Unicast => RouteType::Unicast,
        NlRouteType::Unreachable => RouteType::Unreachable,
        NlRouteType::BlackHole => RouteType::Blackhole,
        NlRouteType::Local => RouteType::Local,
        _ => return None,
    })
}

/// A route and its preferred source address, or `None` for what is never
/// the agent's (other types, source-specific, multipath).
pub(crate) fn decode_route(
    r: &RouteMessage,
    links: &Links,
) -> Option<(KernelRoute, Option<IpAddr>)> {
    let v6 = is_v6(r.header.address_family)?;
    let kind = route_type_of(r.header.kind)?;
    if r.header.source_prefix_length != 0 {
        return None;
    }
    let mut table = u32::from(r.header.table);
    let mut dst = None;
    let mut dev = None;
    let mut via = None;
    let mut metric = None;
    let mut prefsrc = None;
    for a in &r.attributes {
        match a {
            RouteAttribute::Table(t) => table = *t,
            RouteAttribute::Destination(RouteAddress::Inet(ip)) => dst = Some(IpAddr::V4(*ip)),
            RouteAttribute::Destination(RouteAddress::Inet6(ip)) => dst = Some(IpAddr::V6(*ip)),
            RouteAttribute::Oif(i) => dev = name_of(links, *i),
            RouteAttribute::Gateway(RouteAddress::Inet(ip)) => via = Some(IpAddr::V4(*ip)),
            RouteAttribute::Gateway(RouteAddress::Inet6(ip)) => via = Some(IpAddr::V6(*ip)),
            RouteAttribute::PrefSource(RouteAddress::Inet(ip)) => prefsrc = Some(IpAddr::V4(*ip)),
            RouteAttribute::PrefSource(RouteAddress::Inet6(ip)) => prefsrc = Some(IpAddr::V6(*ip)),
            RouteAttribute::Priority(p) => metric = Some(*p),
            // Multipath routes are never the agent's.
            RouteAttribute::MultiPath(_) => return None,
            _ => {}
        }
    }
    let dst = match dst {
        Some(ip) => Some(IpNet::new(ip, r.header.destination_prefix_length).ok()?),
        None => None,
    };
    // IPv6 unreachable and blackhole routes come with the loopback device
    // as oif; they have no device (what was asked, and what IPv4 reports).
    if matches!(kind, RouteType::Unreachable | RouteType::Blackhole) {
        dev = None;
    }
    let route = KernelRoute {
        table,
        v6,
        dst,
        metric,
        dev,
        via,
        proto: u8::from(r.header.protocol),
        scope: u8::from(r.header.scope),
        kind,
    }
    .normalised();
    Some((route, prefsrc))
}

/// A neighbour entry as the mirror sorts it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Neigh {
    Permanent(Neighbour),
    Proxy(ProxyNeighbour),
    /// Any other state (reachable, stale, noarp...): the kernel's, not read.
    Other {
        dev: DevName,
        dst: IpAddr,
    },
}

pub(crate) fn decode_neighbour(n: &NeighbourMessage, links: &Links) -> Option<Neigh> {
    let dev = name_of(links, n.header.ifindex)?;
    let mut dst = None;
    let mut mac = None;
    for at in &n.attributes {
        match at {
            NeighbourAttribute::Destination(NeighbourAddress::Inet(ip)) => {
                dst = Some(IpAddr::V4(*ip))
            }
            NeighbourAttribute::Destination(NeighbourAddress::Inet6(ip)) => {
                dst = Some(IpAddr::V6(*ip))
            }
            NeighbourAttribute::LinkLayerAddress(b) if b.len() == 6 => {
                let mut m = [0u8; 6];
                m.copy_from_slice(b);
                mac = Some(MacAddr(m));
            }
            _ => {}
        }
    }
    let dst = dst?;
    if n.header.flags.contains(NeighbourFlags::Proxy) {
        return Some(Neigh::Proxy(ProxyNeighbour { dev, dst }));
    }
    match mac {
        Some(lladdr) if n.header.state == NeighbourState::Permanent => {
            Some(Neigh::Permanent(Neighbour { dev, dst, lladdr }))
        }
        _ => Some(Neigh::Other { dev, dst }),
    }
}

/// A Linux bridge's FDB entry (an `AF_BRIDGE` neighbour with `NDA_MASTER`)
/// as the mirror sorts it. The kernel keys it by (bridge, MAC, VLAN); a
/// notification gives the whole new state of that key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BridgeFdb {
    /// A static entry (`NUD_NOARP`, neither learned by the bridge nor
    /// added by a control plane: no `NTF_EXT_LEARNED`) on a veth named
    /// like the agent's L2 VNI veth ends (`vrf<uuid[:11]>`): the only
    /// entries the agent could own, so the only ones mirrored.
    Static(BridgeFdbEntry),
    /// Any other entry at this key: learned or dynamic, permanent (the
    /// bridge's or a port's own MAC), zebra's remote MACs, or on another
    /// port. Not read; its key no longer holds a static entry of ours.
    Other {
        bridge: DevName,
        mac: MacAddr,
        vlan: Option<u16>,
    },
}

/// The bridge FDB entry of an `AF_BRIDGE` neighbour message, or `None`
/// for another family, a device's own address list (`NTF_SELF` entries,
/// which carry no `NDA_MASTER`), an entry without a MAC, or a port or
/// bridge the mirror does not know.
pub(crate) fn decode_bridge_fdb(n: &NeighbourMessage, links: &Links) -> Option<BridgeFdb> {
    if n.header.family != AddressFamily::Bridge {
        return None;
    }
    let (mut bridge, mut mac, mut vlan) = (None, None, None);
    for at in &n.attributes {
        match at {
            NeighbourAttribute::Controller(i) => bridge = Some(*i),
            NeighbourAttribute::LinkLayerAddress(b) if b.len() == 6 => {
                let mut m = [0u8; 6];
                m.copy_from_slice(b);
                mac = Some(MacAddr(m));
            }
            NeighbourAttribute::Vlan(v) => vlan = Some(*v),
            _ => {}
        }
    }
    let bridge = name_of(links, bridge?)?;
    let (mac, port) = (mac?, links.get(&n.header.ifindex)?);
    let agent_port =
        port.link.kind == "veth" && obgp_netmodel::names::evpn::is_nb_vrf_veth(port.name.as_str());
    let is_static = n.header.state == NeighbourState::Noarp
        && !n.header.flags.contains(NeighbourFlags::ExtLearned);
    Some(if agent_port && is_static {
        BridgeFdb::Static(BridgeFdbEntry {
            bridge,
            mac,
            vlan,
            port: port.name.clone(),
        })
    } else {
        BridgeFdb::Other { bridge, mac, vlan }
    })
}
