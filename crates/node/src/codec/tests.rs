//! Unit tests of `codec`, beside it so that they may use its private items.

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
                vxlan: None,
                bridge_port: None,
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
