//! The rtnetlink codec: each object the agent writes or mirrors (link,
//! address, rule, route, neighbour and proxy neighbour) encoded into the
//! request that writes it and decoded from the message the kernel sends, in
//! one place, so that what is written and what is read back agree. Devices
//! go by name here and by index on the wire; the caller resolves them.
//!
//! The round-trip tests are in `codec/tests.rs`, beside the crate-private
//! encoders and decoders they check.

use std::collections::BTreeMap;
use std::net::IpAddr;

use obgp_netmodel::{
    Address, BridgePort, DevName, IpNet, LinkKind, MacAddr, Neighbour, ProxyNeighbour, RouteType,
};
use obgp_plan::actual::{ActualLink, KernelRoute, KernelRule, VxlanInfo};
use obgp_plan::op::Op;
use rtnetlink::packet_core::{Nla, NLA_TYPE_MASK};
use rtnetlink::packet_core::{NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE};
use rtnetlink::packet_route::address::{AddressAttribute, AddressMessage};
use rtnetlink::packet_route::link::{
    InfoBridgePort, InfoData, InfoKind, InfoPortData, InfoPortKind, InfoVeth, InfoVlan, InfoVrf,
    InfoVxlan, LinkAttribute, LinkFlags, LinkInfo, LinkLayerType, LinkMessage, LinkProtoInfoBridge,
};
use rtnetlink::packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourFlags, NeighbourMessage, NeighbourState,
};
use rtnetlink::packet_route::route::{
    RouteAddress, RouteAttribute, RouteMessage, RouteProtocol, RouteScope, RouteType as NlRouteType,
};
use rtnetlink::packet_route::rule::{RuleAction, RuleAttribute, RuleMessage};
use rtnetlink::packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::error::IoError;

/// One rtnetlink request: the message and its `NLM_F_*` creation flags
/// (`NLM_F_REQUEST | NLM_F_ACK` are added when it is sent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) msg: RouteNetlinkMessage,
    pub(crate) flags: u16,
}

impl Request {
    fn new(msg: RouteNetlinkMessage, flags: u16) -> Request {
        Request { msg, flags }
    }
}

/// A rule add is exclusive only with a priority of its own. Left to the
/// kernel, the priority is one below the lowest non-zero one, which no
/// rule has, and the kernel's `NLM_F_EXCL` check compares priorities: it
/// never matches (`ip rule add` twice makes two rules), yet walks every
/// rule. With one exposed IP per rule that walk was most of the cost of an
/// event's `+ rule` at 50k ports (docs/latency.md).
fn rule_add_flags(priority: Option<u32>) -> u16 {
    match priority {
        Some(_) => NLM_F_CREATE | NLM_F_EXCL,
        None => NLM_F_CREATE,
    }
}

/// The rtnetlink request that makes `op`; an op that is not a netlink write
/// (sysctl, rt_tables, flows, FRR) is refused. `dummy_kind` is the link kind
/// a dummy device is created as; `ifindex` resolves a device name.
pub(crate) fn encode(
    op: &Op,
    dummy_kind: &str,
    ifindex: impl Fn(&DevName) -> Result<u32, IoError>,
) -> Result<Request, IoError> {
    let req = match op {
        Op::AddLink { name, kind } => new_link_request(op, name, kind, dummy_kind, &ifindex)?,
        Op::SetLinkUp { name } => {
            let mut m = LinkMessage::default();
            m.header.index = ifindex(name)?;
            m.header.flags = LinkFlags::Up;
            m.header.change_mask = LinkFlags::Up;
            Request::new(RouteNetlinkMessage::SetLink(m), 0)
        }
        Op::SetMaster { name, master } => {
            let mut m = LinkMessage::default();
            m.header.index = ifindex(name)?;
            m.attributes
                .push(LinkAttribute::Controller(ifindex(master)?));
            Request::new(RouteNetlinkMessage::SetLink(m), 0)
        }
        Op::SetLinkMac { name, mac } => {
            let mut m = LinkMessage::default();
            m.header.index = ifindex(name)?;
            m.attributes.push(LinkAttribute::Address(mac.0.to_vec()));
            Request::new(RouteNetlinkMessage::SetLink(m), 0)
        }
        Op::SetBridgePort { name, flags } => bridge_port_request(ifindex(name)?, flags),
        Op::DelLink { name } => {
            let mut m = LinkMessage::default();
            m.header.index = ifindex(name)?;
            Request::new(RouteNetlinkMessage::DelLink(m), 0)
        }
        Op::AddAddress(ad) => {
            let m = address_message(ad, &ifindex)?;
            Request::new(
                RouteNetlinkMessage::NewAddress(m),
                NLM_F_CREATE | NLM_F_EXCL,
            )
        }
        Op::DelAddress(ad) => {
            let m = address_message(ad, &ifindex)?;
            Request::new(RouteNetlinkMessage::DelAddress(m), 0)
        }
        Op::AddRule {
            v6,
            dst,
            table,
            priority,
            ..
        } => {
            let rule = KernelRule {
                v6: *v6,
                priority: priority.unwrap_or(0),
                dst: Some(dst.trunc()),
                table: *table,
            };
            let m = rule_message(&rule, priority.is_some());
            Request::new(RouteNetlinkMessage::NewRule(m), rule_add_flags(*priority))
        }
        Op::DelRule { rule, .. } => {
            let m = rule_message(rule, true);
            Request::new(RouteNetlinkMessage::DelRule(m), 0)
        }
        Op::ReplaceRoute { route, .. } => {
            let m = route_message(route, &ifindex)?;
            Request::new(
                RouteNetlinkMessage::NewRoute(m),
                NLM_F_CREATE | NLM_F_REPLACE,
            )
        }
        Op::DelRoute { route, .. } => {
            let m = route_message(route, &ifindex)?;
            Request::new(RouteNetlinkMessage::DelRoute(m), 0)
        }
        Op::ReplaceNeighbour(n) => {
            let mut m = neighbour_message(&ifindex, &n.dev, n.dst, false)?;
            m.header.state = NeighbourState::Permanent;
            m.attributes
                .push(NeighbourAttribute::LinkLayerAddress(n.lladdr.0.to_vec()));
            Request::new(
                RouteNetlinkMessage::NewNeighbour(m),
                NLM_F_CREATE | NLM_F_REPLACE,
            )
        }
        Op::DelNeighbour(n) => {
            let m = neighbour_message(&ifindex, &n.dev, n.dst, false)?;
            Request::new(RouteNetlinkMessage::DelNeighbour(m), 0)
        }
        Op::AddProxyNeighbour(p) => {
            let mut m = neighbour_message(&ifindex, &p.dev, p.dst, true)?;
            m.header.state = NeighbourState::Permanent;
            Request::new(
                RouteNetlinkMessage::NewNeighbour(m),
                NLM_F_CREATE | NLM_F_REPLACE,
            )
        }
        Op::DelProxyNeighbour(p) => {
            let m = neighbour_message(&ifindex, &p.dev, p.dst, true)?;
            Request::new(RouteNetlinkMessage::DelNeighbour(m), 0)
        }
        Op::SetSysctl(_)
        | Op::AddRtTable { .. }
        | Op::AddFlow { .. }
        | Op::DelFlow { .. }
        | Op::ApplyFrr { .. }
        | Op::RemoveFrr { .. }
        | Op::AddOvsPort(_)
        | Op::DelOvsPort { .. }
        | Op::AddFdb(_) => return Err(IoError::Unsupported(format!("{op} over rtnetlink"))),
    };
    Ok(req)
}

/// RTM_NEWLINK creating `name` as `kind` (exclusive: an existing device is
/// EEXIST); an `Existing` device is refused, the agent never creates one.
fn new_link_request(
    op: &Op,
    name: &DevName,
    kind: &LinkKind,
    dummy_kind: &str,
    ifindex: impl Fn(&DevName) -> Result<u32, IoError>,
) -> Result<Request, IoError> {
    let mut m = LinkMessage::default();
    m.attributes.push(LinkAttribute::IfName(name.to_string()));
    let info = match kind {
        LinkKind::Vrf { table } => vec![
            LinkInfo::Kind(InfoKind::Vrf),
            LinkInfo::Data(InfoData::Vrf(vec![InfoVrf::TableId(*table)])),
        ],
        LinkKind::Dummy => vec![LinkInfo::Kind(info_kind(dummy_kind))],
        LinkKind::Bridge => vec![LinkInfo::Kind(InfoKind::Bridge)],
        LinkKind::Vlan { parent, vlan_id } => {
            m.attributes.push(LinkAttribute::Link(ifindex(parent)?));
            vec![
                LinkInfo::Kind(InfoKind::Vlan),
                LinkInfo::Data(InfoData::Vlan(vec![InfoVlan::Id(*vlan_id)])),
            ]
        }
        LinkKind::Veth { peer } => {
            let mut p = LinkMessage::default();
            p.attributes.push(LinkAttribute::IfName(peer.to_string()));
            vec![
                LinkInfo::Kind(InfoKind::Veth),
                LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(p))),
            ]
        }
        LinkKind::Vxlan {
            vni,
            local,
            dstport,
        } => vec![
            LinkInfo::Kind(InfoKind::Vxlan),
            LinkInfo::Data(InfoData::Vxlan(vxlan_info(op, *vni, *local, *dstport)?)),
        ],
        LinkKind::Existing => return Err(IoError::Unsupported(op.to_string())),
    };
    m.attributes.push(LinkAttribute::LinkInfo(info));
    Ok(Request::new(
        RouteNetlinkMessage::NewLink(m),
        NLM_F_CREATE | NLM_F_EXCL,
    ))
}

/// A VXLAN device's data as upstream's `ensure_vxlan` creates it; a VNI
/// over 24 bits is refused before the kernel sees it.
fn vxlan_info(
    op: &Op,
    vni: u32,
    local: Option<IpAddr>,
    dstport: u16,
) -> Result<Vec<InfoVxlan>, IoError> {
    if vni > obgp_netmodel::MAX_VNI {
        return Err(IoError::Invalid(format!("{op}: vni {vni}")));
    }
    let mut v = vec![InfoVxlan::Id(vni)];
    match local {
        Some(IpAddr::V4(a)) => v.push(InfoVxlan::Local(a)),
        Some(IpAddr::V6(a)) => v.push(InfoVxlan::Local6(a)),
        None => {}
    }
    // The crate writes the port in network byte order.
    v.push(InfoVxlan::Port(dstport));
    // As upstream creates it: the EVPN control plane fills
    // the FDB, the data plane learns nothing.
    v.push(InfoVxlan::Learning(false));
    Ok(v)
}

/// `ip link set DEV type bridge_slave ...`: RTM_NEWLINK on the existing
/// device (RTM_SETLINK ignores IFLA_LINKINFO) with the bridge's slave data;
/// the kernel refuses it (EOPNOTSUPP) for a device that is not a bridge
/// port.
fn bridge_port_request(index: u32, flags: &BridgePort) -> Request {
    let mut m = LinkMessage::default();
    m.header.index = index;
    m.attributes.push(LinkAttribute::LinkInfo(vec![
        LinkInfo::PortKind(InfoPortKind::Bridge),
        LinkInfo::PortData(InfoPortData::BridgePort(vec![
            InfoBridgePort::Learning(flags.learning),
            InfoBridgePort::NeighSupress(flags.neigh_suppress),
        ])),
    ]));
    Request::new(RouteNetlinkMessage::NewLink(m), 0)
}

/// The address message of an add or a delete: IFA_ADDRESS, and for IPv4
/// also IFA_LOCAL, as `ip addr` sends them.
fn address_message(
    ad: &Address,
    ifindex: impl Fn(&DevName) -> Result<u32, IoError>,
) -> Result<AddressMessage, IoError> {
    let mut m = AddressMessage::default();
    m.header.family = family(ad.net.addr().is_ipv6());
    m.header.prefix_len = ad.net.prefix_len();
    m.header.index = ifindex(&ad.dev)?;
    if ad.net.addr().is_ipv4() {
        m.attributes.push(AddressAttribute::Local(ad.net.addr()));
    }
    m.attributes.push(AddressAttribute::Address(ad.net.addr()));
    Ok(m)
}

fn family(v6: bool) -> AddressFamily {
    if v6 {
        AddressFamily::Inet6
    } else {
        AddressFamily::Inet
    }
}

fn nl_route_type(t: RouteType) -> NlRouteType {
    match t {
        RouteType::Unicast => NlRouteType::Unicast,
        RouteType::Unreachable => NlRouteType::Unreachable,
        RouteType::Blackhole => NlRouteType::BlackHole,
        RouteType::Local => NlRouteType::Local,
    }
}

/// The header byte for a table: the number itself up to 255, else
/// RT_TABLE_UNSPEC with the real number in the attribute.
fn header_table(t: u32) -> u8 {
    u8::try_from(t).unwrap_or(0)
}

fn info_kind(kind: &str) -> InfoKind {
    match kind {
        "dummy" => InfoKind::Dummy,
        "ifb" => InfoKind::Ifb,
        "bridge" => InfoKind::Bridge,
        other => InfoKind::Other(other.to_string()),
    }
}

fn rule_message(r: &KernelRule, with_priority: bool) -> RuleMessage {
    let mut m = RuleMessage::default();
    m.header.family = family(r.v6);
    m.header.table = header_table(r.table);
    m.header.action = RuleAction::ToTable;
    m.attributes.push(RuleAttribute::Table(r.table));
    if let Some(dst) = r.dst {
        m.header.dst_len = dst.prefix_len();
        m.attributes.push(RuleAttribute::Destination(dst.addr()));
    }
    if with_priority {
        m.attributes.push(RuleAttribute::Priority(r.priority));
    }
    m
}

fn route_message(
    r: &KernelRoute,
    ifindex: impl Fn(&DevName) -> Result<u32, IoError>,
) -> Result<RouteMessage, IoError> {
    let mut m = RouteMessage::default();
    m.header.address_family = family(r.v6);
    m.header.table = header_table(r.table);
    m.header.protocol = RouteProtocol::from(r.proto);
    m.header.scope = RouteScope::from(r.scope);
    m.header.kind = nl_route_type(r.kind);
    m.attributes.push(RouteAttribute::Table(r.table));
    if let Some(dst) = r.dst {
        let dst = dst.trunc();
        m.header.destination_prefix_length = dst.prefix_len();
        m.attributes
            .push(RouteAttribute::Destination(RouteAddress::from(dst.addr())));
    }
    if let Some(dev) = &r.dev {
        m.attributes.push(RouteAttribute::Oif(ifindex(dev)?));
    }
    if let Some(via) = r.via {
        m.attributes
            .push(RouteAttribute::Gateway(RouteAddress::from(via)));
    }
    if let Some(metric) = r.metric {
        m.attributes.push(RouteAttribute::Priority(metric));
    }
    Ok(m)
}

fn neighbour_message(
    ifindex: impl Fn(&DevName) -> Result<u32, IoError>,
    dev: &DevName,
    dst: IpAddr,
    proxy: bool,
) -> Result<NeighbourMessage, IoError> {
    let mut m = NeighbourMessage::default();
    m.header.family = family(dst.is_ipv6());
    m.header.ifindex = ifindex(dev)?;
    if proxy {
        m.header.flags = NeighbourFlags::Proxy;
    }
    m.attributes
        .push(NeighbourAttribute::Destination(match dst {
            IpAddr::V4(a) => NeighbourAddress::Inet(a),
            IpAddr::V6(a) => NeighbourAddress::Inet6(a),
        }));
    Ok(m)
}

// Decoding.

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
const IFLA_BRPORT_LEARNING: u16 = 8;
const IFLA_BRPORT_NEIGH_SUPPRESS: u16 = 32;

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
type Links = BTreeMap<u32, LinkEntry>;

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

#[cfg(test)]
mod tests;
