//! The rtnetlink codec: each object the agent writes or mirrors (link,
//! address, rule, route, neighbour, proxy neighbour and Linux bridge FDB
//! entry) encoded into the
//! request that writes it and decoded from the message the kernel sends, in
//! one place, so that what is written and what is read back agree. Devices
//! go by name here and by index on the wire; the caller resolves them.
//!
//! This module encodes; its leaf `decode` decodes. The round-trip tests
//! are in `codec/tests.rs`, beside the crate-private encoders and decoders
//! they check.

use std::net::IpAddr;

use obgp_netmodel::{Address, BridgeFdbEntry, BridgePort, DevName, LinkKind, RouteType};
use obgp_plan::actual::{KernelRoute, KernelRule};
use obgp_plan::op::Op;
use rtnetlink::packet_core::{NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE};
use rtnetlink::packet_route::address::{AddressAttribute, AddressMessage};
use rtnetlink::packet_route::link::{
    InfoBridgePort, InfoData, InfoKind, InfoPortData, InfoPortKind, InfoVeth, InfoVlan, InfoVrf,
    InfoVxlan, LinkAttribute, LinkFlags, LinkInfo, LinkMessage,
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

mod decode;

pub(crate) use decode::{
    decode_address, decode_bridge_fdb, decode_bridge_port_view, decode_link, decode_neighbour,
    decode_route, decode_rule, is_bridge_port_view, BridgeFdb, LinkEntry, Neigh,
};
#[cfg(test)]
use decode::{Links, IFLA_BRPORT_LEARNING, IFLA_BRPORT_NEIGH_SUPPRESS};

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
        Op::AddBridgeFdb(e) => {
            let mut m = bridge_fdb_message(e, &ifindex)?;
            m.header.state = NeighbourState::Noarp;
            Request::new(
                RouteNetlinkMessage::NewNeighbour(m),
                NLM_F_CREATE | NLM_F_REPLACE,
            )
        }
        Op::DelBridgeFdb(e) => {
            let m = bridge_fdb_message(e, &ifindex)?;
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

/// The `AF_BRIDGE` neighbour of a Linux bridge's FDB entry, as `bridge
/// fdb ... dev PORT master` sends it: the port's index, `NTF_MASTER` (the
/// bridge's table, not the port device's own address list) and the MAC;
/// the bridge is the port's master, so it is not sent.
fn bridge_fdb_message(
    e: &BridgeFdbEntry,
    ifindex: impl Fn(&DevName) -> Result<u32, IoError>,
) -> Result<NeighbourMessage, IoError> {
    let mut m = NeighbourMessage::default();
    m.header.family = AddressFamily::Bridge;
    m.header.ifindex = ifindex(&e.port)?;
    m.header.flags = NeighbourFlags::Controller;
    m.attributes
        .push(NeighbourAttribute::LinkLayerAddress(e.mac.0.to_vec()));
    if let Some(v) = e.vlan {
        m.attributes.push(NeighbourAttribute::Vlan(v));
    }
    Ok(m)
}

#[cfg(test)]
mod tests;
