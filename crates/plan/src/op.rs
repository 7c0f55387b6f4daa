//! `Op`: every write the agent makes to a node, one request each, printable
//! as one readable line (`+ rule to 172.24.4.10/32 lookup br-ex (table 200)`).

use std::fmt;

use obgp_netmodel::{
    proto, scope, Address, BridgeFdbEntry, BridgePort, DevName, FdbEntry, IpNet, LinkKind, MacAddr,
    Neighbour, OvsPort, ProxyNeighbour, RouteType, Sysctl,
};
use serde::{Deserialize, Serialize};

use crate::actual::{KernelRoute, KernelRule, OfFlow};

/// One node write. Tables are numbers (resolved by the planner); `table_name`
/// is the rt_tables name, for printing only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Create a link (administratively down; [`Op::SetLinkUp`] follows).
    AddLink {
        name: DevName,
        kind: LinkKind,
    },
    SetLinkUp {
        name: DevName,
    },
    SetMaster {
        name: DevName,
        master: DevName,
    },
    SetLinkMac {
        name: DevName,
        mac: MacAddr,
    },
    DelLink {
        name: DevName,
    },
    /// Bridge-port flags of a device enslaved to a Linux bridge.
    SetBridgePort {
        name: DevName,
        flags: BridgePort,
    },
    /// `ovs-vsctl --may-exist add-port BRIDGE PORT` with its tag and type.
    AddOvsPort(OvsPort),
    /// `ovs-vsctl --if-exists del-port BRIDGE PORT`.
    DelOvsPort {
        bridge: DevName,
        name: DevName,
    },
    /// `ovs-appctl fdb/add BRIDGE PORT VLAN MAC` (no delete: see
    /// [`DesiredNode::fdb`](obgp_netmodel::DesiredNode::fdb)).
    AddFdb(FdbEntry),
    /// `bridge fdb replace MAC dev PORT master static [vlan V]`: a static
    /// entry of a Linux bridge's FDB (moves the MAC to PORT if the bridge
    /// holds it elsewhere).
    AddBridgeFdb(BridgeFdbEntry),
    /// `bridge fdb del MAC dev PORT master [vlan V]`.
    DelBridgeFdb(BridgeFdbEntry),
    AddAddress(Address),
    DelAddress(Address),
    /// `ip rule add to DST lookup TABLE [pref P]`; without a priority the
    /// kernel picks one (lowest non-zero minus one).
    AddRule {
        v6: bool,
        dst: IpNet,
        table: u32,
        table_name: Option<String>,
        priority: Option<u32>,
    },
    DelRule {
        rule: KernelRule,
        table_name: Option<String>,
    },
    ReplaceRoute {
        route: KernelRoute,
        table_name: Option<String>,
    },
    DelRoute {
        route: KernelRoute,
        table_name: Option<String>,
    },
    ReplaceNeighbour(Neighbour),
    DelNeighbour(Neighbour),
    AddProxyNeighbour(ProxyNeighbour),
    DelProxyNeighbour(ProxyNeighbour),
    SetSysctl(Sysctl),
    /// Append `<number> <name>` to rt_tables.
    AddRtTable {
        number: u32,
        name: DevName,
    },
    AddFlow {
        bridge: DevName,
        flow: OfFlow,
    },
    DelFlow {
        bridge: DevName,
        flow: OfFlow,
    },
    /// `vtysh -f` of this configuration text.
    ApplyFrr {
        config: String,
    },
    /// `vtysh -f` of a removal text (an EVPN VRF's del-vrf): a delete,
    /// planned after the devices it names are gone (FRR refuses to delete
    /// an active VRF).
    RemoveFrr {
        config: String,
    },
}

fn table_text(table: u32, name: &Option<String>) -> String {
    match name {
        Some(n) => format!("{n} (table {table})"),
        None => format!("{table}"),
    }
}

fn proto_name(p: u8) -> String {
    match p {
        proto::BOOT => "boot".into(),
        proto::KERNEL => "kernel".into(),
        proto::STATIC => "static".into(),
        proto::FRR => "bgp".into(),
        other => other.to_string(),
    }
}

fn scope_name(s: u8) -> String {
    match s {
        scope::UNIVERSE => "global".into(),
        scope::LINK => "link".into(),
        scope::HOST => "host".into(),
        other => other.to_string(),
    }
}

/// `ip route`'s text for a route, without the table.
pub fn route_text(r: &KernelRoute) -> String {
    let mut out = String::new();
    match r.kind {
        RouteType::Unicast => {}
        RouteType::Unreachable => out.push_str("unreachable "),
        RouteType::Blackhole => out.push_str("blackhole "),
        RouteType::Local => out.push_str("local "),
    }
    match r.dst {
        Some(d) => out.push_str(&d.to_string()),
        None if r.v6 => out.push_str("default (inet6)"),
        None => out.push_str("default"),
    }
    if let Some(via) = r.via {
        out.push_str(&format!(" via {via}"));
    }
    if let Some(dev) = &r.dev {
        out.push_str(&format!(" dev {dev}"));
    }
    out.push_str(&format!(" proto {}", proto_name(r.proto)));
    if !r.v6 {
        out.push_str(&format!(" scope {}", scope_name(r.scope)));
    }
    if let Some(m) = r.metric {
        out.push_str(&format!(" metric {m}"));
    }
    out
}

fn link_kind_text(k: &LinkKind) -> String {
    match k {
        LinkKind::Vrf { table } => format!("type vrf table {table}"),
        LinkKind::Dummy => "type dummy".into(),
        LinkKind::Vlan { parent, vlan_id } => format!("link {parent} type vlan id {vlan_id}"),
        LinkKind::Veth { peer } => format!("type veth peer name {peer}"),
        LinkKind::Bridge => "type bridge".into(),
        LinkKind::Vxlan {
            vni,
            local,
            dstport,
        } => {
            let local = local.map(|l| format!(" local {l}")).unwrap_or_default();
            format!("type vxlan id {vni}{local} dstport {dstport}")
        }
        LinkKind::Existing => "(existing)".into(),
    }
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::AddLink { name, kind } => write!(f, "+ link {name} {}", link_kind_text(kind)),
            Op::SetLinkUp { name } => write!(f, "~ link {name} up"),
            Op::SetMaster { name, master } => write!(f, "~ link {name} master {master}"),
            Op::SetLinkMac { name, mac } => write!(f, "~ link {name} address {mac}"),
            Op::DelLink { name } => write!(f, "- link {name}"),
            Op::SetBridgePort { name, flags } => write!(
                f,
                "~ link {name} bridge_slave learning {} neigh_suppress {}",
                on_off(flags.learning),
                on_off(flags.neigh_suppress)
            ),
            Op::AddOvsPort(p) => {
                write!(f, "+ ovs-port {} {}", p.bridge, p.name)?;
                if let Some(t) = p.tag {
                    write!(f, " tag={t}")?;
                }
                if p.internal {
                    write!(f, " type=internal")?;
                }
                Ok(())
            }
            Op::DelOvsPort { bridge, name } => write!(f, "- ovs-port {bridge} {name}"),
            Op::AddFdb(e) => write!(f, "+ fdb {} {} vlan {} {}", e.bridge, e.port, e.vlan, e.mac),
            Op::AddBridgeFdb(e) => write!(f, "+ bridge-fdb {e} static"),
            Op::DelBridgeFdb(e) => write!(f, "- bridge-fdb {e}"),
            Op::AddAddress(a) => write!(f, "+ address {} dev {}", a.net, a.dev),
            Op::DelAddress(a) => write!(f, "- address {} dev {}", a.net, a.dev),
            Op::AddRule {
                dst,
                table,
                table_name,
                priority,
                ..
            } => {
                write!(f, "+ rule ")?;
                if let Some(p) = priority {
                    write!(f, "pref {p} ")?;
                }
                write!(f, "to {dst} lookup {}", table_text(*table, table_name))
            }
            Op::DelRule { rule, table_name } => {
                let dst = rule.dst.map_or("all".to_string(), |d| d.to_string());
                write!(
                    f,
                    "- rule pref {} to {dst} lookup {}",
                    rule.priority,
                    table_text(rule.table, table_name)
                )
            }
            Op::ReplaceRoute { route, table_name } => write!(
                f,
                "+ route {} table {}",
                route_text(route),
                table_text(route.table, table_name)
            ),
            Op::DelRoute { route, table_name } => write!(
                f,
                "- route {} table {}",
                route_text(route),
                table_text(route.table, table_name)
            ),
            Op::ReplaceNeighbour(n) => write!(
                f,
                "+ neighbour {} lladdr {} dev {} permanent",
                n.dst, n.lladdr, n.dev
            ),
            Op::DelNeighbour(n) => write!(f, "- neighbour {} dev {}", n.dst, n.dev),
            Op::AddProxyNeighbour(p) => write!(f, "+ neighbour proxy {} dev {}", p.dst, p.dev),
            Op::DelProxyNeighbour(p) => write!(f, "- neighbour proxy {} dev {}", p.dst, p.dev),
            Op::SetSysctl(s) => write!(f, "~ sysctl {}={}", s.key, s.value),
            Op::AddRtTable { number, name } => write!(f, "+ rt_tables {number} {name}"),
            Op::AddFlow { bridge, flow } => {
                write!(f, "+ flow {bridge} {}", flow.add_flow_arg())
            }
            Op::DelFlow { bridge, flow } => {
                write!(f, "- flow {bridge} {}", flow.del_flow_arg())
            }
            Op::ApplyFrr { config } => {
                write!(f, "~ frr apply ({} lines)", config.lines().count())
            }
            Op::RemoveFrr { config } => {
                write!(f, "- frr remove ({} lines)", config.lines().count())
            }
        }
    }
}

impl Op {
    /// True for the ops that add or change (as opposed to delete).
    pub fn is_add(&self) -> bool {
        !matches!(
            self,
            Op::DelLink { .. }
                | Op::DelAddress(_)
                | Op::DelRule { .. }
                | Op::DelRoute { .. }
                | Op::DelNeighbour(_)
                | Op::DelProxyNeighbour(_)
                | Op::DelBridgeFdb(_)
                | Op::DelFlow { .. }
                | Op::DelOvsPort { .. }
                | Op::RemoveFrr { .. }
        )
    }

    /// True for the ops an external command makes (`ovs-ofctl`, `vtysh`)
    /// rather than the kernel: the command lane applies them, so that a
    /// wedged bgpd or ovs-vswitchd never holds up the netlink ops. None of
    /// them has a [`Op::subject`]: no announcement waits for one (O1).
    pub fn runs_a_command(&self) -> bool {
        matches!(
            self,
            Op::AddFlow { .. }
                | Op::DelFlow { .. }
                | Op::ApplyFrr { .. }
                | Op::RemoveFrr { .. }
                | Op::AddOvsPort(_)
                | Op::DelOvsPort { .. }
                | Op::AddFdb(_)
        )
    }

    /// The destination network an op wires, announces or removes, if it has one
    /// (used to relate wiring to announcements, O1/O2).
    pub fn subject(&self) -> Option<IpNet> {
        match self {
            Op::AddAddress(a) | Op::DelAddress(a) => Some(a.net),
            Op::AddRule { dst, .. } => Some(*dst),
            Op::DelRule { rule, .. } => rule.dst,
            Op::ReplaceRoute { route, .. } | Op::DelRoute { route, .. } => route.dst,
            Op::ReplaceNeighbour(n) | Op::DelNeighbour(n) => Some(IpNet::from(n.dst)),
            Op::AddProxyNeighbour(p) | Op::DelProxyNeighbour(p) => Some(IpNet::from(p.dst)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(s: &str) -> DevName {
        DevName::new(s).unwrap()
    }

    #[test]
    fn rule_add_prints_like_the_issue_example() {
        let op = Op::AddRule {
            v6: false,
            dst: "172.24.4.10/32".parse().unwrap(),
            table: 200,
            table_name: Some("br-ex".into()),
            priority: None,
        };
        assert_eq!(
            op.to_string(),
            "+ rule to 172.24.4.10/32 lookup br-ex (table 200)"
        );
    }

    #[test]
    fn route_replace_prints_ip_route_words() {
        let op = Op::ReplaceRoute {
            route: KernelRoute {
                table: 1,
                v6: false,
                dst: Some("10.0.0.0/24".parse().unwrap()),
                metric: None,
                dev: Some(dev("br-ex")),
                via: Some("172.24.4.100".parse().unwrap()),
                proto: proto::BOOT,
                scope: scope::UNIVERSE,
                kind: RouteType::Unicast,
            },
            table_name: Some("br-ex".into()),
        };
        assert_eq!(
            op.to_string(),
            "+ route 10.0.0.0/24 via 172.24.4.100 dev br-ex proto boot scope global table br-ex (table 1)"
        );
    }

    #[test]
    fn bridge_fdb_ops_print_like_the_ovs_fdb_op() {
        let e = BridgeFdbEntry {
            bridge: dev("br-2001"),
            mac: "fa:16:3e:11:11:11".parse().unwrap(),
            vlan: None,
            port: dev("vrfdd3b5a95-aa"),
        };
        assert_eq!(
            Op::AddBridgeFdb(e.clone()).to_string(),
            "+ bridge-fdb br-2001 vrfdd3b5a95-aa fa:16:3e:11:11:11 static"
        );
        assert_eq!(
            Op::DelBridgeFdb(e.clone()).to_string(),
            "- bridge-fdb br-2001 vrfdd3b5a95-aa fa:16:3e:11:11:11"
        );
        assert!(Op::AddBridgeFdb(e.clone()).is_add() && !Op::DelBridgeFdb(e.clone()).is_add());
        // Kernel writes (one rtnetlink request), with no IP to order on.
        assert!(!Op::AddBridgeFdb(e.clone()).runs_a_command());
        assert_eq!(Op::DelBridgeFdb(e).subject(), None);
    }

    #[test]
    fn ops_round_trip_through_json() {
        let ops = vec![
            Op::AddLink {
                name: dev("bgp-vrf"),
                kind: LinkKind::Vrf { table: 10 },
            },
            Op::AddProxyNeighbour(ProxyNeighbour {
                dev: dev("br-ex"),
                dst: "2001:db8::".parse().unwrap(),
            }),
            Op::SetSysctl(Sysctl::conf(false, &dev("br-ex"), "proxy_arp", "1")),
        ];
        let text = serde_json::to_string(&ops).unwrap();
        let back: Vec<Op> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, ops);
        assert!(text.contains("\"op\":\"add_link\""), "{text}");
    }
}
