//! The scenarios' JSON shape of a node state, and its conversion to and from [`Actual`].

use super::*;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NodeState {
    #[serde(default)]
    pub links: Vec<LinkState>,
    #[serde(default)]
    pub addresses: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub routes: Vec<RouteState>,
    #[serde(default)]
    pub rules: Vec<RuleState>,
    #[serde(default)]
    pub neighbours: Vec<NeighState>,
    /// Static entries of Linux bridges' FDBs (not in upstream's
    /// recordings: the `l2vni` method's own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bridge_fdb: Vec<BridgeFdbEntry>,
    #[serde(default)]
    pub sysctls: BTreeMap<String, String>,
    #[serde(default)]
    pub rt_tables: String,
    #[serde(default)]
    pub ovs: OvsState,
    #[serde(default)]
    pub frr: FrrJson,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LinkState {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub mac: Option<String>,
    pub state: String,
    #[serde(default)]
    pub master: Option<String>,
    #[serde(default)]
    pub link: Option<String>,
    #[serde(default)]
    pub vlan_id: Option<u16>,
    #[serde(default)]
    pub vrf_table: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// VXLAN devices (the EVPN scenarios' extra keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vxlan_id: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vxlan_local: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vxlan_port: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vxlan_learning: Option<bool>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RouteState {
    pub table: u32,
    pub family: String,
    pub dst: String,
    #[serde(default)]
    pub dev: Option<String>,
    #[serde(default)]
    pub via: Option<String>,
    pub proto: u8,
    pub scope: u8,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<u32>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RuleState {
    pub family: String,
    pub dst: String,
    pub table: u32,
    pub priority: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NeighState {
    pub dev: String,
    pub dst: String,
    #[serde(default)]
    pub lladdr: Option<String>,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub proxy: bool,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct OvsState {
    #[serde(default)]
    pub bridges: BTreeMap<String, BridgeState>,
    #[serde(default)]
    pub flows: BTreeMap<String, Vec<FlowState>>,
    /// Static FDB entries of the bridges (upstream's recordings have an
    /// empty list).
    #[serde(default)]
    pub fdb: Vec<obgp_netmodel::FdbEntry>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BridgeState {
    #[serde(default)]
    pub ports: BTreeMap<String, u32>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FlowState {
    pub cookie: String,
    pub table: u8,
    pub priority: u16,
    #[serde(rename = "match")]
    pub matches: Vec<String>,
    pub actions: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FrrJson {
    #[serde(default)]
    pub router_id_reported: Option<String>,
    #[serde(default)]
    pub applied_configs: u32,
    /// Not in upstream's data: absent means "applied_configs > 0".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_our_config: Option<bool>,
}

fn family_v6(family: &str) -> Result<bool, StateError> {
    match family {
        "inet" => Ok(false),
        "inet6" => Ok(true),
        other => Err(bad("address family", other)),
    }
}

fn family_name(v6: bool) -> String {
    if v6 { "inet6" } else { "inet" }.to_string()
}

fn parse_net(s: &str, what: &'static str) -> Result<IpNet, StateError> {
    s.parse::<IpNet>().map_err(|_| bad(what, s))
}

fn parse_ip(s: &str, what: &'static str) -> Result<IpAddr, StateError> {
    s.parse::<IpAddr>().map_err(|_| bad(what, s))
}

pub(crate) fn route_type(s: &str) -> Result<RouteType, StateError> {
    Ok(match s {
        "unicast" => RouteType::Unicast,
        "unreachable" => RouteType::Unreachable,
        "blackhole" => RouteType::Blackhole,
        "local" => RouteType::Local,
        other => return Err(bad("route type", other)),
    })
}

pub(crate) fn route_type_name(t: RouteType) -> &'static str {
    match t {
        RouteType::Unicast => "unicast",
        RouteType::Unreachable => "unreachable",
        RouteType::Blackhole => "blackhole",
        RouteType::Local => "local",
    }
}

fn opt_dev(s: &Option<String>) -> Result<Option<DevName>, StateError> {
    s.as_deref()
        .map(DevName::new)
        .transpose()
        .map_err(Into::into)
}

impl TryFrom<NodeState> for Actual {
    type Error = StateError;

    /// Long (about 155 lines) on purpose: one block per object kind of the
    /// scenarios' node state, each parsed field by field into its `Actual`
    /// counterpart.
    fn try_from(s: NodeState) -> Result<Actual, StateError> {
        let mut a = Actual::default();
        for (i, l) in s.links.iter().enumerate() {
            let name = DevName::new(&l.name)?;
            let mac = l.mac.as_deref().map(str::parse::<MacAddr>).transpose()?;
            let up = match l.state.as_str() {
                "up" => true,
                "down" => false,
                other => return Err(bad("link state", other)),
            };
            a.links.insert(
                name,
                ActualLink {
                    index: l.index.unwrap_or(i as u32 + 1),
                    kind: l.kind.clone(),
                    mac,
                    up,
                    master: opt_dev(&l.master)?,
                    parent: opt_dev(&l.link)?,
                    vlan_id: l.vlan_id,
                    vrf_table: l.vrf_table,
                    vxlan: match l.vxlan_id {
                        None => None,
                        Some(vni) => Some(VxlanInfo {
                            vni,
                            local: l
                                .vxlan_local
                                .as_deref()
                                .map(|v| parse_ip(v, "vxlan local"))
                                .transpose()?,
                            dstport: l.vxlan_port.unwrap_or(4789),
                            learning: l.vxlan_learning.unwrap_or(true),
                        }),
                    },
                    bridge_port: None,
                },
            );
        }
        for (dev, nets) in &s.addresses {
            let dev = DevName::new(dev)?;
            for n in nets {
                a.addresses.insert(Address {
                    dev: dev.clone(),
                    net: parse_net(n, "address")?,
                });
            }
        }
        for r in &s.routes {
            let v6 = family_v6(&r.family)?;
            let dst = match r.dst.as_str() {
                "default" => None,
                d => Some(parse_net(d, "route destination")?),
            };
            let via = r
                .via
                .as_deref()
                .map(|v| parse_ip(v, "gateway"))
                .transpose()?;
            a.routes.insert(
                KernelRoute {
                    table: r.table,
                    v6,
                    dst,
                    metric: r.metric,
                    dev: opt_dev(&r.dev)?,
                    via,
                    proto: r.proto,
                    scope: r.scope,
                    kind: route_type(&r.kind)?,
                }
                .normalised(),
            );
        }
        for r in &s.rules {
            let v6 = family_v6(&r.family)?;
            let dst = match r.dst.as_str() {
                "all" => None,
                d => Some(parse_net(d, "rule destination")?.trunc()),
            };
            a.rules.insert(KernelRule {
                v6,
                priority: r.priority,
                dst,
                table: r.table,
            });
        }
        for n in &s.neighbours {
            let dev = DevName::new(&n.dev)?;
            let dst = parse_ip(&n.dst, "neighbour address")?;
            if n.proxy {
                a.proxy_neighbours.insert(ProxyNeighbour { dev, dst });
            } else if n.state.as_deref() == Some("permanent") {
                let mac = n
                    .lladdr
                    .as_deref()
                    .ok_or_else(|| bad("permanent neighbour without lladdr", &n.dst))?;
                a.neighbours.insert(Neighbour {
                    dev,
                    dst,
                    lladdr: mac.parse()?,
                });
            }
        }
        a.bridge_fdb = s.bridge_fdb.into_iter().collect();
        a.sysctls = s.sysctls;
        a.rt_tables = RtTables::parse(s.rt_tables);
        let fdb_bridges: BTreeSet<String> =
            s.ovs.fdb.iter().map(|e| e.bridge.to_string()).collect();
        let names: BTreeSet<&String> = s
            .ovs
            .bridges
            .keys()
            .chain(s.ovs.flows.keys())
            .chain(&fdb_bridges)
            .collect();
        for br in names {
            let mut bridge = OvsBridge {
                ports: s
                    .ovs
                    .bridges
                    .get(br)
                    .map(|b| b.ports.clone())
                    .unwrap_or_default(),
                flows: BTreeSet::new(),
                fdb: s
                    .ovs
                    .fdb
                    .iter()
                    .filter(|e| e.bridge.as_str() == br.as_str())
                    .cloned()
                    .collect(),
            };
            for f in s.ovs.flows.get(br).into_iter().flatten() {
                let hex = f.cookie.trim_start_matches("0x");
                let cookie =
                    u64::from_str_radix(hex, 16).map_err(|_| bad("flow cookie", &f.cookie))?;
                bridge.flows.insert(OfFlow {
                    cookie,
                    table: f.table,
                    priority: f.priority,
                    matches: f.matches.iter().cloned().collect(),
                    actions: OfFlow::normalise_actions(&f.actions),
                });
            }
            a.bridges.insert(DevName::new(br)?, bridge);
        }
        a.frr = FrrState {
            router_id_reported: s.frr.router_id_reported,
            applied_configs: s.frr.applied_configs,
            has_our_config: s.frr.has_our_config.unwrap_or(s.frr.applied_configs > 0),
            unknown: false,
            evpn_vrfs: BTreeMap::new(),
            evpn_unplaced_interfaces: BTreeSet::new(),
        };
        Ok(a)
    }
}

impl From<Actual> for NodeState {
    /// Long (about 125 lines) on purpose: the inverse of the `TryFrom`
    /// above, one block per object kind.
    fn from(a: Actual) -> NodeState {
        let mut links: Vec<(u32, LinkState)> = a
            .links
            .iter()
            .map(|(name, l)| {
                (
                    l.index,
                    LinkState {
                        name: name.to_string(),
                        kind: l.kind.clone(),
                        mac: l.mac.map(|m| m.to_string()),
                        state: if l.up { "up" } else { "down" }.into(),
                        master: l.master.as_ref().map(ToString::to_string),
                        link: l.parent.as_ref().map(ToString::to_string),
                        vlan_id: l.vlan_id,
                        vrf_table: l.vrf_table,
                        index: Some(l.index),
                        vxlan_id: l.vxlan.as_ref().map(|v| v.vni),
                        vxlan_local: l
                            .vxlan
                            .as_ref()
                            .and_then(|v| v.local)
                            .map(|v| v.to_string()),
                        vxlan_port: l.vxlan.as_ref().map(|v| v.dstport),
                        vxlan_learning: l.vxlan.as_ref().map(|v| v.learning),
                    },
                )
            })
            .collect();
        links.sort_by_key(|(i, _)| *i);
        let mut addresses: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for ad in &a.addresses {
            addresses
                .entry(ad.dev.to_string())
                .or_default()
                .push(ad.net.to_string());
        }
        let routes = a
            .routes
            .iter()
            .map(|r| RouteState {
                table: r.table,
                family: family_name(r.v6),
                dst: r.dst.map_or("default".into(), |d| d.to_string()),
                dev: r.dev.as_ref().map(ToString::to_string),
                via: r.via.map(|v| v.to_string()),
                proto: r.proto,
                scope: r.scope,
                kind: route_type_name(r.kind).into(),
                metric: r.metric,
            })
            .collect();
        let rules = a
            .rules
            .iter()
            .map(|r| RuleState {
                family: family_name(r.v6),
                dst: r.dst.map_or("all".into(), |d| d.to_string()),
                table: r.table,
                priority: r.priority,
            })
            .collect();
        let mut neighbours: Vec<NeighState> = a
            .neighbours
            .iter()
            .map(|n| NeighState {
                dev: n.dev.to_string(),
                dst: n.dst.to_string(),
                lladdr: Some(n.lladdr.to_string()),
                state: Some("permanent".into()),
                proxy: false,
            })
            .collect();
        neighbours.extend(a.proxy_neighbours.iter().map(|p| NeighState {
            dev: p.dev.to_string(),
            dst: p.dst.to_string(),
            lladdr: None,
            state: None,
            proxy: true,
        }));
        let mut ovs = OvsState {
            fdb: a
                .bridges
                .values()
                .flat_map(|b| b.fdb.iter().cloned())
                .collect(),
            ..OvsState::default()
        };
        for (br, b) in &a.bridges {
            ovs.bridges.insert(
                br.to_string(),
                BridgeState {
                    ports: b.ports.clone(),
                },
            );
            ovs.flows.insert(
                br.to_string(),
                b.flows
                    .iter()
                    .map(|f| FlowState {
                        cookie: format!("{:#x}", f.cookie),
                        table: f.table,
                        priority: f.priority,
                        matches: f.ordered_matches().into_iter().map(String::from).collect(),
                        actions: f.actions.clone(),
                    })
                    .collect(),
            );
        }
        NodeState {
            links: links.into_iter().map(|(_, l)| l).collect(),
            addresses,
            routes,
            rules,
            neighbours,
            bridge_fdb: a.bridge_fdb.iter().cloned().collect(),
            sysctls: a.sysctls,
            rt_tables: a.rt_tables.text_lossy().into_owned(),
            ovs,
            frr: FrrJson {
                router_id_reported: a.frr.router_id_reported,
                applied_configs: a.frr.applied_configs,
                has_our_config: Some(a.frr.has_our_config),
            },
        }
    }
}
