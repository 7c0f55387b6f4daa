//! Unit tests of `codec`, beside it so that they may use its private items.

use obgp_netmodel::{proto, scope, Neighbour, ProxyNeighbour};
use obgp_plan::actual::{ActualLink, VxlanInfo};
use rtnetlink::packet_core::{Emitable, NetlinkMessage, NetlinkPayload, NLM_F_REQUEST};
use rtnetlink::packet_route::link::LinkProtoInfoBridge;

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
            let link = ActualLink::new(*i, "ether", None, true);
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
fn a_rule_add_is_exclusive_only_with_a_priority_of_its_own() {
    let add = |priority| Op::AddRule {
        v6: false,
        dst: "10.0.0.5/32".parse().unwrap(),
        table: 200,
        table_name: None,
        priority,
    };
    let flags = |op: &Op| encode(op, "dummy", ifindex).unwrap().flags;
    assert_eq!(flags(&add(Some(1000))), NLM_F_CREATE | NLM_F_EXCL);
    assert_eq!(flags(&add(None)), NLM_F_CREATE);
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
fn an_ipv6_unreachable_route_the_kernel_reports_on_lo_decodes_without_a_device() {
    let route = KernelRoute {
        table: 1001,
        v6: true,
        dst: None,
        metric: Some(4278198272),
        dev: None,
        via: None,
        proto: proto::BOOT,
        scope: scope::UNIVERSE,
        kind: RouteType::Unreachable,
    };
    let op = Op::ReplaceRoute {
        route: route.clone(),
        table_name: None,
    };
    let RouteNetlinkMessage::NewRoute(mut m) = over_the_wire(&op) else {
        panic!("not a new route");
    };
    // What the kernel sends back: oif = the loopback device (here br-ex's
    // index stands in for it).
    m.attributes.push(RouteAttribute::Oif(4));
    assert_eq!(decode_route(&m, &links()), Some((route, None)));
}

#[test]
fn addresses_decode_as_they_were_encoded() {
    for net in ["172.24.4.10/32", "192.0.2.1/24", "2001:db8::10/128"] {
        let ad = Address {
            dev: dev("bgp-nic"),
            net: net.parse().unwrap(),
        };
        let RouteNetlinkMessage::NewAddress(m) = over_the_wire(&Op::AddAddress(ad.clone())) else {
            panic!("{net}: not a new address");
        };
        assert_eq!(decode_address(&m, &links()), Some(ad.clone()));
        let RouteNetlinkMessage::DelAddress(m) = over_the_wire(&Op::DelAddress(ad.clone())) else {
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
        let RouteNetlinkMessage::NewNeighbour(m) = over_the_wire(&Op::ReplaceNeighbour(n.clone()))
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

#[test]
fn a_vxlan_is_created_with_learning_off_and_decodes_with_its_identity() {
    for local in [None, Some("192.0.2.1"), Some("2001:db8::1")] {
        let local: Option<IpAddr> = local.map(|l| l.parse().unwrap());
        let op = Op::AddLink {
            name: dev("vxlan-1001"),
            kind: LinkKind::Vxlan {
                vni: 1001,
                local,
                dstport: 4789,
            },
        };
        let RouteNetlinkMessage::NewLink(m) = over_the_wire(&op) else {
            panic!("{op}: not a new link");
        };
        // The port goes in network byte order (IFLA_VXLAN_PORT is __be16).
        let mut raw = vec![0u8; m.buffer_len()];
        m.emit(&mut raw);
        let port_nla = [6u8, 0, 15, 0, 0x12, 0xb5];
        assert!(
            raw.windows(port_nla.len()).any(|w| w == port_nla),
            "{op}: IFLA_VXLAN_PORT 4789 big-endian in {raw:x?}"
        );
        let entry = decode_link(&m).unwrap();
        assert_eq!(entry.link.kind, "vxlan");
        assert_eq!(
            entry.link.vxlan,
            Some(VxlanInfo {
                vni: 1001,
                local,
                dstport: 4789,
                learning: false,
            }),
            "{op}"
        );
        assert_eq!(entry.link.bridge_port, None);
    }
    let too_big = Op::AddLink {
        name: dev("vxlan-x"),
        kind: LinkKind::Vxlan {
            vni: obgp_netmodel::MAX_VNI + 1,
            local: None,
            dstport: 4789,
        },
    };
    let err = encode(&too_big, "dummy", ifindex).unwrap_err();
    assert!(
        matches!(&err, IoError::Invalid(v) if v.contains("16777216")),
        "{err}"
    );
}

#[test]
fn bridge_port_flags_are_set_as_bridge_slave_data_and_decode_back() {
    for flags in [
        BridgePort::EVPN,
        BridgePort {
            learning: true,
            neigh_suppress: false,
        },
    ] {
        let op = Op::SetBridgePort {
            name: dev("bgp-nic"),
            flags,
        };
        let req = encode(&op, "dummy", ifindex).unwrap();
        // RTM_NEWLINK on the existing device, neither creating nor replacing.
        assert_eq!(req.flags, 0, "{op}");
        let RouteNetlinkMessage::NewLink(m) = over_the_wire(&op) else {
            panic!("{op}: RTM_SETLINK ignores IFLA_LINKINFO; it must be a new link");
        };
        assert_eq!(m.header.index, 7, "bgp-nic by its index");
        // The kernel's dump of a bridge port carries the same slave data
        // (with a name and the rest); decoded, it shows the flags.
        let mut dumped = m.clone();
        dumped
            .attributes
            .push(LinkAttribute::IfName("bgp-nic".into()));
        let entry = decode_link(&dumped).unwrap();
        assert_eq!(entry.link.bridge_port, Some(flags), "{op}");
    }
    let unknown = Op::SetBridgePort {
        name: dev("nope0"),
        flags: BridgePort::EVPN,
    };
    assert!(matches!(
        encode(&unknown, "dummy", ifindex),
        Err(IoError::NoDevice(d)) if d == "nope0"
    ));
}

#[test]
fn a_port_of_another_masters_kind_has_no_bridge_port_flags() {
    let mut m = LinkMessage::default();
    m.header.index = 7;
    m.attributes.push(LinkAttribute::IfName("bgp-nic".into()));
    m.attributes.push(LinkAttribute::Controller(9));
    m.attributes.push(LinkAttribute::LinkInfo(vec![
        LinkInfo::Kind(InfoKind::Dummy),
        LinkInfo::PortKind(InfoPortKind::Vrf),
    ]));
    let entry = decode_link(&m).unwrap();
    assert_eq!(entry.master, Some(9));
    assert_eq!(entry.link.bridge_port, None);
}

#[test]
fn a_veth_names_its_peer_only_when_the_peer_is_in_this_namespace() {
    let mut m = LinkMessage::default();
    m.header.index = 12;
    m.attributes.push(LinkAttribute::IfName("veth-a".into()));
    m.attributes.push(LinkAttribute::Link(13));
    m.attributes
        .push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(
            InfoKind::Veth,
        )]));
    assert_eq!(decode_link(&m).unwrap().parent, Some(13));
    // IFLA_LINK_NETNSID: index 13 is another namespace's device.
    m.attributes.push(LinkAttribute::LinkNetNsId(0));
    assert_eq!(decode_link(&m).unwrap().parent, None);
}

#[test]
fn the_bridges_view_of_a_port_carries_its_flags_and_is_told_apart() {
    use rtnetlink::packet_core::DefaultNla;
    let mut m = LinkMessage::default();
    m.header.interface_family = AddressFamily::Bridge;
    m.header.index = 7;
    m.attributes.push(LinkAttribute::IfName("bgp-nic".into()));
    m.attributes.push(LinkAttribute::Controller(4));
    m.attributes.push(LinkAttribute::ProtoInfoBridge(vec![
        LinkProtoInfoBridge::Other(DefaultNla::new(IFLA_BRPORT_LEARNING, vec![0])),
        LinkProtoInfoBridge::Other(DefaultNla::new(IFLA_BRPORT_NEIGH_SUPPRESS, vec![1])),
        // Another flag of the nest (unicast flood) is not read.
        LinkProtoInfoBridge::Other(DefaultNla::new(19, vec![0])),
    ]));
    // Through the wire, so that the AF_BRIDGE IFLA_PROTINFO parser reads it.
    let mut nl = NetlinkMessage::from(RouteNetlinkMessage::NewLink(m));
    nl.finalize();
    let mut bytes = vec![0u8; nl.buffer_len()];
    nl.serialize(&mut bytes);
    let back = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&bytes).unwrap();
    let NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(mut m)) = back.payload else {
        panic!("not a new link");
    };
    assert!(is_bridge_port_view(&m));
    assert_eq!(decode_bridge_port_view(&m), Some(BridgePort::EVPN));
    // An AF_UNSPEC message is the device's own.
    let mut own = m.clone();
    own.header.interface_family = AddressFamily::Unspec;
    assert!(!is_bridge_port_view(&own));
    // Without IFLA_PROTINFO (the bridge device itself): nothing to read.
    m.attributes
        .retain(|a| !matches!(a, LinkAttribute::ProtoInfoBridge(_)));
    assert_eq!(decode_bridge_port_view(&m), None);
}

/// A bridge FDB request as `bridge fdb replace/del ... master` sends it,
/// and the kernel's notification of it (the request plus `NDA_MASTER`)
/// decoded back; only static entries on the agent's veth ends are read.
#[test]
fn bridge_fdb_entries_are_sent_as_the_bridge_tool_sends_them_and_decode_back() {
    let mut links = links();
    for (name, index, kind) in [
        ("br-2001", 20, "bridge"),
        ("vrfdd3b5a95-aa", 21, "veth"),
        ("vxlan-2001", 22, "vxlan"),
        ("vrfdd3b5a95-ab", 23, "dummy"),
    ] {
        let entry = LinkEntry {
            name: dev(name),
            link: ActualLink::new(index, kind, None, true),
            master: Some(20),
            parent: None,
        };
        links.insert(index, entry);
    }
    let index = |d: &DevName| {
        links
            .values()
            .find(|l| l.name == *d)
            .map(|l| l.link.index)
            .ok_or_else(|| IoError::NoDevice(d.to_string()))
    };
    let e = BridgeFdbEntry {
        bridge: dev("br-2001"),
        mac: "fa:16:3e:11:11:11".parse().unwrap(),
        vlan: None,
        port: dev("vrfdd3b5a95-aa"),
    };
    let add = encode(&Op::AddBridgeFdb(e.clone()), "dummy", index).unwrap();
    assert_eq!(add.flags, NLM_F_CREATE | NLM_F_REPLACE);
    let RouteNetlinkMessage::NewNeighbour(sent) = add.msg else {
        panic!("not a new neighbour: {:?}", add.msg);
    };
    assert_eq!(sent.header.family, AddressFamily::Bridge);
    assert_eq!(sent.header.ifindex, 21);
    assert_eq!(sent.header.flags, NeighbourFlags::Controller);
    assert_eq!(sent.header.state, NeighbourState::Noarp);
    let del = encode(&Op::DelBridgeFdb(e.clone()), "dummy", index).unwrap();
    assert!(matches!(&del.msg,
        RouteNetlinkMessage::DelNeighbour(m) if m.header.flags == NeighbourFlags::Controller
            && m.attributes == sent.attributes));

    // The kernel's notification names the bridge in NDA_MASTER.
    let notified = |state, flags, port: u32| {
        let mut m = sent.clone();
        m.header.state = state;
        m.header.flags = flags;
        m.header.ifindex = port;
        m.attributes.push(NeighbourAttribute::Controller(20));
        m
    };
    let none = NeighbourFlags::empty();
    assert_eq!(
        decode_bridge_fdb(&notified(NeighbourState::Noarp, none, 21), &links),
        Some(BridgeFdb::Static(e.clone()))
    );
    let other = Some(BridgeFdb::Other {
        bridge: e.bridge.clone(),
        mac: e.mac,
        vlan: None,
    });
    for (what, m) in [
        ("learned", notified(NeighbourState::Reachable, none, 21)),
        ("permanent", notified(NeighbourState::Permanent, none, 21)),
        (
            "zebra's",
            notified(NeighbourState::Noarp, NeighbourFlags::ExtLearned, 21),
        ),
        (
            "on the VXLAN port",
            notified(NeighbourState::Noarp, none, 22),
        ),
        ("on a non-veth", notified(NeighbourState::Noarp, none, 23)),
    ] {
        assert_eq!(decode_bridge_fdb(&m, &links), other, "{what}");
    }
    // A device's own address list has no NDA_MASTER; an IP neighbour is
    // no bridge FDB entry.
    assert_eq!(decode_bridge_fdb(&sent, &links), None);
    let mut inet = notified(NeighbourState::Noarp, none, 21);
    inet.header.family = AddressFamily::Inet;
    assert_eq!(decode_bridge_fdb(&inet, &links), None);
    // A VLAN goes in NDA_VLAN and comes back.
    let tagged = BridgeFdbEntry {
        vlan: Some(10),
        ..e.clone()
    };
    let RouteNetlinkMessage::NewNeighbour(mut m) =
        encode(&Op::AddBridgeFdb(tagged.clone()), "dummy", index)
            .unwrap()
            .msg
    else {
        panic!("not a new neighbour");
    };
    m.attributes.push(NeighbourAttribute::Controller(20));
    assert_eq!(
        decode_bridge_fdb(&m, &links),
        Some(BridgeFdb::Static(tagged))
    );
}
