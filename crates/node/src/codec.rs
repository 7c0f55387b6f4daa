//! The rtnetlink codec: each object the agent writes or mirrors (link,
//! address, rule, route, neighbour and proxy neighbour) encoded into the
//! request that writes it and decoded from the message the kernel sends, in
//! one place, so that what is written and what is read back agree. Devices
//! go by name here and by index on the wire; the caller resolves them.
//!
//! Over 700 lines because the round-trip tests (about 380) sit beside the
//! crate-private encoders and decoders they check.

use std::collections::BTreeMap;
use std::net::IpAddr;

use obgp_netmodel::{
    Address, DevName, IpNet, LinkKind, MacAddr, Neighbour, ProxyNeighbour, RouteType,
};
use obgp_plan::actual::{ActualLink, KernelRoute, KernelRule};
use obgp_plan::op::Op;
use rtnetlink::packet_core::{NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE};
use rtnetlink::packet_route::address::{AddressAttribute, AddressMessage};
use rtnetlink::packet_route::link::{
    InfoData, InfoKind, InfoVeth, InfoVlan, InfoVrf, LinkAttribute, LinkFlags, LinkInfo,
    LinkLayerType, LinkMessage,
};
use rtnetlink::packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourFlags, NeighbourMessage, NeighbourState,
};
use rtnetlink::packet_route::route::{
    RouteAddress, RouteAttribute, RouteMessage, RouteProtocol, RouteScope, RouteType as NlRouteType,
};
use rtnetlink::packet_route::rule::{RuleAction, RuleAttribute, RuleMessage};
use rtnetlink::packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::kernel::IoError;

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

/// The rtnetlink request that makes `op`; an op that is not a netlink write
/// (sysctl, rt_tables, flows, FRR) is refused. `dummy_kind` is the link kind
/// a dummy device is created as; `ifindex` resolves a device name.
pub(crate) fn encode(
    op: &Op,
    dummy_kind: &str,
    ifindex: impl Fn(&DevName) -> Result<u32, IoError>,
) -> Result<Request, IoError> {
    let req = match op {
        Op::AddLink { name, kind } => {
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
                LinkKind::Vxlan { .. } | LinkKind::Existing => {
                    return Err(IoError::Unsupported(op.to_string()))
                }
            };
            m.attributes.push(LinkAttribute::LinkInfo(info));
            Request::new(RouteNetlinkMessage::NewLink(m), NLM_F_CREATE | NLM_F_EXCL)
        }
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
        Op::DelLink { name } => {
            let mut m = LinkMessage::default();
            m.header.index = ifindex(name)?;
            Request::new(RouteNetlinkMessage::DelLink(m), 0)
        }
        Op::AddAddress(ad) | Op::DelAddress(ad) => {
            let mut m = AddressMessage::default();
            m.header.family = family(ad.net.addr().is_ipv6());
            m.header.prefix_len = ad.net.prefix_len();
            m.header.index = ifindex(&ad.dev)?;
            if ad.net.addr().is_ipv4() {
                m.attributes.push(AddressAttribute::Local(ad.net.addr()));
            }
            m.attributes.push(AddressAttribute::Address(ad.net.addr()));
            match op {
                Op::AddAddress(_) => Request::new(
                    RouteNetlinkMessage::NewAddress(m),
                    NLM_F_CREATE | NLM_F_EXCL,
                ),
                _ => Request::new(RouteNetlinkMessage::DelAddress(m), 0),
            }
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
            Request::new(RouteNetlinkMessage::NewRule(m), NLM_F_CREATE | NLM_F_EXCL)
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
        | Op::ApplyFrr { .. } => return Err(IoError::Unsupported(format!("{op} over rtnetlink"))),
    };
    Ok(req)
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
    pub(crate) parent: Option<u32>,
}

pub(crate) fn decode_link(l: &LinkMessage) -> Option<LinkEntry> {
    let mut name = None;
    let mut link = ActualLink {
        index: l.header.index,
        kind: match l.header.link_layer_type {
            LinkLayerType::Loopback => "loopback".into(),
            _ => "ether".into(),
        },
        mac: None,
        up: l.header.flags.contains(LinkFlags::Up),
        master: None,
        parent: None,
        vlan_id: None,
        vrf_table: None,
    };
    let (mut master, mut parent) = (None, None);
    for a in &l.attributes {
        match a {
            LinkAttribute::IfName(n) => name = DevName::new(n).ok(),
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
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Some(LinkEntry {
        name: name?,
        link,
        master,
        parent,
    })
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
mod tests {
    use obgp_netmodel::{proto, scope};
    use rtnetlink::packet_core::{NetlinkMessage, NetlinkPayload, NLM_F_REQUEST};

    use super::*;

    fn dev(s: &str) -> DevName {
        DevName::new(s).unwrap()
    }

    /// The node's devices: name and index.
    const DEVICES: [(&str, u32); 3] = [("br-ex", 4), ("bgp-nic", 7), ("bgp-vrf", 9)];

    fn ifindex(d: &DevName) -> Result<u32, IoError> {
        DEVICES
            .iter()
            .find(|(n, _)| *n == d.as_str())
            .map(|(_, i)| *i)
            .ok_or_else(|| IoError::NoDevice(d.to_string()))
    }

    fn links() -> Links {
        DEVICES
            .iter()
            .map(|(n, i)| {
                let link = ActualLink {
                    index: *i,
                    kind: "ether".into(),
                    mac: None,
                    up: true,
                    master: None,
                    parent: None,
                    vlan_id: None,
                    vrf_table: None,
                };
                let entry = LinkEntry {
                    name: dev(n),
                    link,
                    master: None,
                    parent: None,
                };
                (*i, entry)
            })
            .collect()
    }

    /// Encodes `op`, puts it on the wire and reads it back as the kernel's
    /// side would: the request's flags survive, and the message is returned.
    fn over_the_wire(op: &Op) -> RouteNetlinkMessage {
        let req = encode(op, "dummy", ifindex).unwrap();
        let mut m = NetlinkMessage::from(req.msg);
        m.header.flags = NLM_F_REQUEST | req.flags;
        m.finalize();
        let mut bytes = vec![0u8; m.buffer_len()];
        m.serialize(&mut bytes);
        let back = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&bytes).unwrap();
        assert_eq!(back.header.flags, NLM_F_REQUEST | req.flags, "{op}");
        match back.payload {
            NetlinkPayload::InnerMessage(m) => m,
            other => panic!("{op}: not an rtnetlink message: {other:?}"),
        }
    }

    #[test]
    fn rules_decode_as_they_were_encoded() {
        let rules = [
            KernelRule {
                v6: false,
                priority: 1000,
                dst: Some("172.24.4.10/32".parse().unwrap()),
                table: 200,
            },
            // Above 255: the header says RT_TABLE_UNSPEC, the attribute the number.
            KernelRule {
                v6: true,
                priority: 32000,
                dst: Some("2001:db8::/64".parse().unwrap()),
                table: 1000,
            },
        ];
        for rule in rules {
            let op = Op::DelRule {
                rule: rule.clone(),
                table_name: None,
            };
            let RouteNetlinkMessage::DelRule(m) = over_the_wire(&op) else {
                panic!("{op}: not a rule delete");
            };
            assert_eq!(decode_rule(&m), Some(rule.clone()));
            let add = Op::AddRule {
                v6: rule.v6,
                dst: rule.dst.unwrap(),
                table: rule.table,
                table_name: None,
                priority: Some(rule.priority),
            };
            let RouteNetlinkMessage::NewRule(m) = over_the_wire(&add) else {
                panic!("{add}: not a new rule");
            };
            assert_eq!(decode_rule(&m), Some(rule));
        }
    }

    #[test]
    fn a_rule_without_a_priority_is_sent_without_one() {
        let add = Op::AddRule {
            v6: false,
            dst: "10.0.0.0/24".parse().unwrap(),
            table: 200,
            table_name: None,
            priority: None,
        };
        let RouteNetlinkMessage::NewRule(m) = over_the_wire(&add) else {
            panic!("not a new rule");
        };
        assert!(!m
            .attributes
            .iter()
            .any(|a| matches!(a, RuleAttribute::Priority(_))));
        assert_eq!(decode_rule(&m).map(|r| r.priority), Some(0));
    }

    #[test]
    fn routes_decode_as_they_were_encoded() {
        let routes = [
            KernelRoute {
                table: 200,
                v6: false,
                dst: Some("10.0.0.0/24".parse().unwrap()),
                metric: None,
                dev: Some(dev("br-ex")),
                via: Some("172.24.4.1".parse().unwrap()),
                proto: proto::STATIC,
                scope: scope::UNIVERSE,
                kind: RouteType::Unicast,
            },
            KernelRoute {
                table: 1000,
                v6: true,
                dst: Some("2001:db8:1::/64".parse().unwrap()),
                metric: Some(1024),
                dev: Some(dev("bgp-nic")),
                via: None,
                proto: proto::STATIC,
                scope: scope::LINK,
                kind: RouteType::Unicast,
            },
            KernelRoute {
                table: 10,
                v6: false,
                dst: None,
                metric: Some(4278198272),
                dev: None,
                via: None,
                proto: proto::BOOT,
                scope: scope::UNIVERSE,
                kind: RouteType::Unreachable,
            },
        ];
        for route in routes {
            let route = route.normalised();
            let op = Op::ReplaceRoute {
                route: route.clone(),
                table_name: None,
            };
            let RouteNetlinkMessage::NewRoute(m) = over_the_wire(&op) else {
                panic!("{op}: not a new route");
            };
            assert_eq!(decode_route(&m, &links()), Some((route.clone(), None)));
            let del = Op::DelRoute {
                route: route.clone(),
                table_name: None,
            };
            let RouteNetlinkMessage::DelRoute(m) = over_the_wire(&del) else {
                panic!("{del}: not a route delete");
            };
            assert_eq!(decode_route(&m, &links()), Some((route, None)));
        }
    }

    #[test]
    fn addresses_decode_as_they_were_encoded() {
        for net in ["172.24.4.10/32", "192.0.2.1/24", "2001:db8::10/128"] {
            let ad = Address {
                dev: dev("bgp-nic"),
                net: net.parse().unwrap(),
            };
            let RouteNetlinkMessage::NewAddress(m) = over_the_wire(&Op::AddAddress(ad.clone()))
            else {
                panic!("{net}: not a new address");
            };
            assert_eq!(decode_address(&m, &links()), Some(ad.clone()));
            let RouteNetlinkMessage::DelAddress(m) = over_the_wire(&Op::DelAddress(ad.clone()))
            else {
                panic!("{net}: not an address delete");
            };
            assert_eq!(decode_address(&m, &links()), Some(ad));
        }
    }

    #[test]
    fn neighbours_and_proxy_entries_decode_as_they_were_encoded() {
        for dst in ["172.24.4.10", "2001:db8::10"] {
            let n = Neighbour {
                dev: dev("br-ex"),
                dst: dst.parse().unwrap(),
                lladdr: "fa:16:3e:11:22:33".parse().unwrap(),
            };
            let RouteNetlinkMessage::NewNeighbour(m) =
                over_the_wire(&Op::ReplaceNeighbour(n.clone()))
            else {
                panic!("{dst}: not a new neighbour");
            };
            assert_eq!(
                decode_neighbour(&m, &links()),
                Some(Neigh::Permanent(n.clone()))
            );
            // A delete names the entry by device and address only.
            let RouteNetlinkMessage::DelNeighbour(m) = over_the_wire(&Op::DelNeighbour(n.clone()))
            else {
                panic!("{dst}: not a neighbour delete");
            };
            assert_eq!(
                decode_neighbour(&m, &links()),
                Some(Neigh::Other {
                    dev: n.dev.clone(),
                    dst: n.dst
                })
            );
            let p = ProxyNeighbour {
                dev: dev("br-ex"),
                dst: n.dst,
            };
            for op in [
                Op::AddProxyNeighbour(p.clone()),
                Op::DelProxyNeighbour(p.clone()),
            ] {
                let (RouteNetlinkMessage::NewNeighbour(m) | RouteNetlinkMessage::DelNeighbour(m)) =
                    over_the_wire(&op)
                else {
                    panic!("{op}: not a neighbour message");
                };
                assert_eq!(
                    decode_neighbour(&m, &links()),
                    Some(Neigh::Proxy(p.clone()))
                );
            }
        }
    }

    #[test]
    fn created_links_decode_with_their_kind_and_its_data() {
        let cases = [
            (LinkKind::Vrf { table: 10 }, "vrf"),
            (LinkKind::Dummy, "dummy"),
            (LinkKind::Bridge, "bridge"),
            (
                LinkKind::Vlan {
                    parent: dev("br-ex"),
                    vlan_id: 100,
                },
                "vlan",
            ),
            (
                LinkKind::Veth {
                    peer: dev("veth-b"),
                },
                "veth",
            ),
        ];
        for (kind, name) in cases {
            let op = Op::AddLink {
                name: dev("new0"),
                kind: kind.clone(),
            };
            let RouteNetlinkMessage::NewLink(m) = over_the_wire(&op) else {
                panic!("{op}: not a new link");
            };
            let entry = decode_link(&m).unwrap();
            assert_eq!(entry.name, dev("new0"));
            assert_eq!(entry.link.kind, name);
            match kind {
                LinkKind::Vrf { table } => assert_eq!(entry.link.vrf_table, Some(table)),
                LinkKind::Vlan { vlan_id, .. } => {
                    assert_eq!(entry.link.vlan_id, Some(vlan_id));
                    assert_eq!(entry.parent, Some(4), "br-ex by its index");
                }
                _ => {
                    assert_eq!((entry.link.vrf_table, entry.link.vlan_id), (None, None));
                    assert_eq!(entry.parent, None);
                }
            }
        }
    }

    #[test]
    fn what_is_no_rtnetlink_write_is_refused_not_encoded() {
        let ops = [
            Op::AddLink {
                name: dev("vxlan0"),
                kind: LinkKind::Existing,
            },
            Op::ApplyFrr {
                config: "router bgp 64999\n".into(),
            },
            Op::AddRtTable {
                number: 200,
                name: dev("br-ex"),
            },
        ];
        for op in ops {
            assert!(
                matches!(encode(&op, "dummy", ifindex), Err(IoError::Unsupported(_))),
                "{op}"
            );
        }
        let unknown = Op::SetLinkUp { name: dev("nope0") };
        assert!(matches!(
            encode(&unknown, "dummy", ifindex),
            Err(IoError::NoDevice(d)) if d == "nope0"
        ));
    }
}
