//! `explain`: why an IP or a port is, or is not, exposed on this node.
//!
//! A pure function of the same inputs as [`crate::desired_state`]. It runs
//! the drivers' one computation with a recording [`Trace`], so every
//! exposure comes with the rule and rows behind it and every refusal with
//! its [`Reason`]; rows the drivers never visit (ports bound to other
//! chassis, gateways hosted elsewhere) are explained by the predicates the
//! snapshot's indexes use to leave them out. Nothing here decides anew:
//! why this is computed on demand rather than kept by the daemon is
//! [ADR 0007](../../../docs/adr/0007-explain-on-demand.md).

mod prefix;
mod render;
mod subjects;

use std::net::IpAddr;

use ipnet::IpNet;
use obgp_config::{Config, Driver};
use obgp_netmodel::{Class, DevName};
use obgp_ovn::Snapshot;
use serde::Serialize;

use crate::model::{Desired, RowRef};
use crate::provenance::{ExposeRule, Origin, Reason, Rejection, Trace};
use crate::{chassis_hostname, compute_traced, DesiredError, NodeFacts};

use subjects::Subject;

/// What to explain: an IP, a prefix (a tenant subnet, a VRF or EVPN
/// route), or a port by name (for Neutron ports, the Neutron port id), by
/// uuid, or (SB drivers) a Port_Binding's `logical_port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Query {
    Ip(IpAddr),
    Prefix(IpNet),
    Port(String),
}

impl Query {
    /// An IP if `s` parses as one; a prefix if it parses as `addr/len`
    /// (its network: `10.0.0.1/24` names `10.0.0.0/24`; a host prefix,
    /// as `status` lists a VM's IP, names the IP); else a port.
    pub fn parse(s: &str) -> Query {
        if let Ok(ip) = s.parse::<IpAddr>() {
            return Query::Ip(ip);
        }
        match s.parse::<IpNet>() {
            Ok(net) if net.prefix_len() == net.max_prefix_len() => Query::Ip(net.addr()),
            Ok(net) => Query::Prefix(net.trunc()),
            Err(_) => Query::Port(s.to_string()),
        }
    }
}

impl std::fmt::Display for Query {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Query::Ip(ip) => write!(f, "{ip}"),
            Query::Prefix(net) => write!(f, "{net}"),
            Query::Port(p) => write!(f, "{p}"),
        }
    }
}

/// Why `explain` gave no answer.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExplainError {
    #[error(transparent)]
    Desired(#[from] DesiredError),
    #[error("no port named {0:?} (by name, uuid or logical_port) in the {1} database")]
    NoSuchPort(String, &'static str),
}

/// An OVN row as an operator reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RowInfo {
    pub table: &'static str,
    pub uuid: String,
    /// Its name (port or router name, NAT external IP, binding's logical_port).
    pub name: Option<String>,
    #[serde(skip)]
    pub row: RowRef,
}

impl RowInfo {
    pub(crate) fn of(snap: &Snapshot, sb: bool, row: RowRef) -> Self {
        RowInfo {
            table: row.table,
            uuid: row.uuid.to_string(),
            name: snap.row_facts(row.table, row.uuid, sb).and_then(|f| f.name),
            row,
        }
    }
}

/// One verdict about one IP or row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Finding {
    /// The IP is announced from this node.
    Exposed {
        ip: IpAddr,
        rule: ExposeRule,
        class: Class,
        /// The row that asks for it.
        source: RowInfo,
        /// The row the decision rested on (a FIP's port, a VIP port...).
        via: Option<RowInfo>,
        /// Where it lands: the bridge or VLAN device, `bgp_nic` only, or the VNI.
        through: String,
        /// The rows' values that matter (a FIP's logical IP and router...).
        detail: Option<String>,
    },
    /// The IP is inside a tenant subnet routed through a gateway hosted here.
    Covered {
        ip: IpAddr,
        subnet: IpNet,
        router: String,
        bridge: DevName,
        /// Announced as a subnet (subnet method); otherwise routed only.
        announced: bool,
    },
    /// Stretched L2: the IP is inside a route of the VRF table, announced
    /// by `redistribute kernel` from every node alike.
    Routed {
        ip: IpAddr,
        /// The route's destination.
        subnet: IpNet,
        /// Its next hop (a tenant subnet's gateway IP); `None`: on-link.
        via: Option<IpAddr>,
        class: Class,
        /// The rows it rests on (router interface, gateway ports).
        rows: Vec<RowInfo>,
    },
    /// A prefix this node announces or routes: a tenant subnet behind a
    /// local gateway, a route of the stretched-L2 VRF table or of an EVPN
    /// VNI's table.
    Prefix {
        prefix: IpNet,
        class: Class,
        /// What it is and how it is announced, for people.
        what: String,
        /// Announced (a tenant subnet of the host method is only routed).
        announced: bool,
        /// The rows it rests on, where known.
        rows: Vec<RowInfo>,
    },
    /// Not exposed, and why.
    NotExposed {
        ip: Option<IpAddr>,
        row: Option<RowInfo>,
        #[serde(flatten)]
        reason: Reason,
    },
}

/// The answer to one query.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Explanation {
    pub query: String,
    pub driver: &'static str,
    /// This node as OVN names it.
    pub hostname: Option<String>,
    pub system_id: Option<String>,
    /// The rows the query named or that carry the IP.
    pub rows: Vec<RowInfo>,
    pub findings: Vec<Finding>,
    /// Refusals that concern the whole node (no system-id...).
    pub node: Vec<Reason>,
}

impl Explanation {
    /// Whether anything the query names is announced (an exposed IP, or
    /// one covered by an announced subnet).
    pub fn exposed(&self) -> bool {
        self.findings.iter().any(|f| {
            matches!(
                f,
                Finding::Exposed { .. }
                    | Finding::Routed { .. }
                    | Finding::Prefix {
                        announced: true,
                        ..
                    }
                    | Finding::Covered {
                        announced: true,
                        ..
                    }
            )
        })
    }

    /// The prefixes the findings say this node announces, in order and
    /// once each: an exposed IP as its host prefix, an announced subnet
    /// or route. What `explain` looks up in FRR's tables.
    pub fn announced_prefixes(&self) -> Vec<IpNet> {
        let mut out: Vec<IpNet> = Vec::new();
        for f in &self.findings {
            let net = match f {
                Finding::Exposed { ip, .. } => IpNet::from(*ip),
                Finding::Routed { subnet, .. } => *subnet,
                Finding::Prefix {
                    prefix,
                    announced: true,
                    ..
                } => *prefix,
                Finding::Covered {
                    subnet,
                    announced: true,
                    ..
                } => *subnet,
                _ => continue,
            };
            if !out.contains(&net) {
                out.push(net);
            }
        }
        out
    }

    /// The refusals found, in order (the first is the deciding one).
    pub fn reasons(&self) -> impl Iterator<Item = &Reason> {
        self.findings.iter().filter_map(|f| match f {
            Finding::NotExposed { reason, .. } => Some(reason),
            _ => None,
        })
    }
}

/// One exposure on the node, with its origin and where it lands.
pub(crate) struct Exposure {
    pub ip: IpAddr,
    pub origin: Origin,
    pub through: String,
}

/// What the computation gave, for the lookups.
pub(crate) struct Decisions<'a> {
    pub snap: &'a Snapshot,
    /// The configured driver's name.
    pub driver: &'static str,
    pub desired: Desired,
    pub exposures: Vec<Exposure>,
    pub rejections: Vec<Rejection>,
    pub hostname: Option<&'a str>,
    pub system_id: Option<&'a str>,
    pub sb: bool,
    /// The SB EVPN driver: VM ports count only through a local gateway's VNI.
    pub sb_evpn: bool,
    /// The stretched-L2 driver: every gateway counts, wherever it is hosted.
    pub stretched: bool,
}

impl Decisions<'_> {
    /// Row `row` as the driver's database names it.
    pub fn row(&self, row: RowRef) -> RowInfo {
        RowInfo::of(self.snap, self.sb, row)
    }
}

/// Explains `query` on this node: the same inputs as [`crate::desired_state`].
pub fn explain(
    snap: &Snapshot,
    config: &Config,
    facts: &NodeFacts,
    query: &Query,
) -> Result<Explanation, ExplainError> {
    let (desired, _, trace) = compute_traced(snap, config, facts, Trace::recording())?;
    let d = &config.default;
    let sb = d.driver.reads_sb();
    let exposures = exposures(&desired, &trace);
    let ctx = Decisions {
        snap,
        driver: d.driver.as_str(),
        desired,
        exposures,
        rejections: trace.rejections,
        hostname: chassis_hostname(snap, facts),
        system_id: snap.ovs.system_id.as_deref(),
        sb,
        sb_evpn: d.driver == Driver::OvnEvpnDriver,
        stretched: d.driver == Driver::OvnStretchedL2BgpDriver,
    };
    let subjects = match query {
        Query::Ip(ip) => subjects::carrying(&ctx, *ip),
        Query::Prefix(_) => Vec::new(),
        Query::Port(name) => subjects::named(&ctx, name)?,
    };
    let ip = match query {
        Query::Ip(ip) => Some(*ip),
        Query::Prefix(_) | Query::Port(_) => None,
    };
    let mut findings = match query {
        Query::Prefix(net) => prefix::announcing(&ctx, *net),
        _ => Vec::new(),
    };
    if let Some(ip) = ip {
        findings.extend(
            ctx.exposures
                .iter()
                .filter(|e| e.ip == ip)
                .map(|e| exposed(&ctx, e)),
        );
    }
    for s in &subjects {
        for f in findings_of(&ctx, s, ip) {
            if !findings.contains(&f) {
                findings.push(f);
            }
        }
    }
    if let Some(ip) = ip {
        if findings.is_empty() {
            findings.extend(covered(&ctx, ip));
        }
        // Reached through an announced subnet (or a VRF route) and not
        // exposed itself: that is the answer, and the refusals of its
        // IP one by one (or of the router port's) are no news.
        if reached_through_a_prefix(&findings) {
            findings.retain(|f| matches!(f, Finding::Covered { .. } | Finding::Routed { .. }));
            findings.sort_by_key(|f| {
                !matches!(
                    f,
                    Finding::Covered {
                        announced: true,
                        ..
                    }
                )
            });
            return Ok(answer(query, &ctx, &subjects, findings));
        }
        // Refusals of the IP by a row that does not carry it (a VIP's LB).
        for r in ctx.rejections.iter().filter(|r| r.ip == Some(ip)) {
            let f = not_exposed(&ctx, r);
            if !findings.contains(&f) && !ctx.exposures.iter().any(|e| e.ip == ip) {
                findings.push(f);
            }
        }
    }
    Ok(answer(query, &ctx, &subjects, findings))
}

/// Whether an IP's findings say it is reached through a prefix this node
/// announces and not exposed itself.
fn reached_through_a_prefix(findings: &[Finding]) -> bool {
    let through = findings.iter().any(|f| {
        matches!(
            f,
            Finding::Covered {
                announced: true,
                ..
            } | Finding::Routed { .. }
        )
    });
    through
        && !findings
            .iter()
            .any(|f| matches!(f, Finding::Exposed { .. }))
}

fn answer(
    query: &Query,
    ctx: &Decisions,
    subjects: &[Subject],
    findings: Vec<Finding>,
) -> Explanation {
    Explanation {
        query: query.to_string(),
        driver: ctx.driver,
        hostname: ctx.hostname.map(str::to_string),
        system_id: ctx.system_id.map(str::to_string),
        rows: subjects.iter().map(|s| ctx.row(s.row)).collect(),
        findings,
        node: ctx
            .rejections
            .iter()
            .filter(|r| r.row.is_none())
            .map(|r| r.reason.clone())
            .collect(),
    }
}

/// Every exposure that reaches the node, from the desired state (the
/// underlay drivers, the NB vrf mode's re-wired ones) or the trace (the
/// SB EVPN driver's per-VNI state).
fn exposures(desired: &Desired, trace: &Trace) -> Vec<Exposure> {
    let on = match desired.announce_with {
        obgp_config::AnnounceWith::Address => desired.bgp_nic.to_string(),
        obgp_config::AnnounceWith::Route => format!(
            "{} by a route in table {}",
            desired.bgp_nic, desired.vrf_table
        ),
    };
    let underlay = desired.exposed.values().map(|e| Exposure {
        ip: e.ip,
        origin: e.origin(),
        through: match &e.wiring {
            Some(w) => format!("wired on {}, announced on {on}", w.target.dev),
            None => format!("announced on {on} only"),
        },
    });
    let Some(evpn) = &desired.evpn else {
        return underlay.collect();
    };
    // The VNI whose table routes `ip`, or whose lo-<vni> holds it, or
    // the L2 VNI that announces it as a type-2 host.
    let vni_of = |ip: IpAddr| {
        let host = IpNet::from(ip);
        evpn.vnis
            .values()
            .find_map(|v| {
                let routed = v
                    .ports
                    .iter()
                    .any(|p| p.routes.iter().any(|r| r.dst == host));
                let on_lo = v.lo.as_ref().is_some_and(|(_, ips)| ips.contains(&host));
                (routed || on_lo).then(|| format!("VNI {} ({})", v.vni, v.vrf))
            })
            .or_else(|| {
                let v = evpn.l2.values().find(|v| v.hosts.contains_key(&ip))?;
                Some(format!(
                    "L2 VNI {} (exposing_method = l2vni: type-2 MAC/IP on {})",
                    v.vni, v.bridge
                ))
            })
    };
    if let Some(dynamic) = &desired.dynamic {
        return dynamic_exposures(desired, dynamic, underlay, vni_of);
    }
    let from_desired = desired.exposed.values().filter_map(|e| {
        Some(Exposure {
            ip: e.ip,
            origin: e.origin(),
            through: vni_of(e.ip)?,
        })
    });
    let from_trace = trace.exposures.iter().filter_map(|t| {
        Some(Exposure {
            ip: t.ip,
            origin: t.origin,
            through: vni_of(t.ip)?,
        })
    });
    from_desired.chain(from_trace).collect()
}

/// `exposing_method = dynamic`'s exposures: the underlay networks' and
/// the EVPN networks' (through their VNI), each saying which method its
/// provider network got and why.
fn dynamic_exposures<'a>(
    desired: &'a Desired,
    dynamic: &'a crate::dynamic::Dynamic,
    underlay: impl Iterator<Item = Exposure>,
    vni_of: impl Fn(IpAddr) -> Option<String>,
) -> Vec<Exposure> {
    let why = |e: &crate::model::ExposedIp| match dynamic.network_of(desired, e) {
        Some(n) => format!(
            "; exposing_method = dynamic: network {} got {} ({})",
            n.switch,
            n.method.as_str(),
            n.why
        ),
        None => "; exposing_method = dynamic: no provider network here, underlay".into(),
    };
    let mut out: Vec<Exposure> = underlay
        .map(|mut x| {
            if let Some(e) = desired.exposed.get(&x.ip) {
                x.through.push_str(&why(e));
            }
            x
        })
        .collect();
    out.extend(dynamic.evpn_exposed.values().filter_map(|e| {
        Some(Exposure {
            ip: e.ip,
            origin: e.origin(),
            through: vni_of(e.ip)? + &why(e),
        })
    }));
    out
}

fn exposed(ctx: &Decisions, e: &Exposure) -> Finding {
    let snap = ctx.snap;
    Finding::Exposed {
        ip: e.ip,
        rule: e.origin.rule,
        class: e.origin.rule.class(),
        source: ctx.row(e.origin.source),
        via: e.origin.via.map(|v| ctx.row(v)),
        through: e.through.clone(),
        detail: subjects::detail(snap, &e.origin),
    }
}

fn not_exposed(ctx: &Decisions, r: &Rejection) -> Finding {
    Finding::NotExposed {
        ip: r.ip,
        row: r.row.map(|row| ctx.row(row)),
        reason: r.reason.clone(),
    }
}

/// The tenant subnets routed here and the VRF routes that contain `ip`.
fn covered(ctx: &Decisions, ip: IpAddr) -> Vec<Finding> {
    let subnets = ctx
        .desired
        .tenant_subnets
        .iter()
        .filter(|s| s.net.contains(&ip))
        .map(|s| Finding::Covered {
            ip,
            subnet: s.net,
            router: s.router.clone(),
            bridge: s.bridge.clone(),
            announced: s.vrf_route,
        });
    let routes = ctx
        .desired
        .vrf_routes
        .values()
        .filter(|r| r.net.contains(&ip))
        .map(|r| Finding::Routed {
            ip,
            subnet: r.net,
            via: r.via,
            class: r.class,
            rows: r.rows.iter().map(|&row| ctx.row(row)).collect(),
        });
    subnets.chain(routes).collect()
}

/// What is known of one row: its exposures (as source, or as the port
/// behind them), the subnets covering its other IPs, its refusals, why the
/// drivers did not visit it, and the refusals of its whole network.
fn findings_of(ctx: &Decisions, s: &Subject, only: Option<IpAddr>) -> Vec<Finding> {
    let want = |ip: IpAddr| only.is_none_or(|o| o == ip);
    let mut out = Vec::new();
    let mine: Vec<&Exposure> = ctx
        .exposures
        .iter()
        .filter(|e| {
            e.origin.source == s.row
                || (e.origin.via == Some(s.row) && !e.origin.rule.via_gateway())
        })
        .filter(|e| want(e.ip))
        .collect();
    out.extend(mine.iter().map(|e| exposed(ctx, e)));
    let is_exposed = |ip: IpAddr| ctx.exposures.iter().any(|e| e.ip == ip);
    let open: Vec<IpAddr> = s
        .ips
        .iter()
        .copied()
        .filter(|&ip| want(ip) && !is_exposed(ip))
        .collect();
    for &ip in &open {
        out.extend(covered(ctx, ip));
    }
    let applies = |r: &Rejection| r.ip.is_none_or(|ip| want(ip) && !is_exposed(ip));
    let own: Vec<&Rejection> = ctx
        .rejections
        .iter()
        .filter(|r| r.row == Some(s.row) && applies(r))
        .collect();
    if mine.is_empty() && (!open.is_empty() || s.ips.is_empty()) {
        out.extend(own.iter().map(|r| not_exposed(ctx, r)));
        if own.is_empty() {
            if let Some(reason) = &s.selection {
                out.push(Finding::NotExposed {
                    ip: None,
                    row: Some(ctx.row(s.row)),
                    reason: reason.clone(),
                });
            }
        }
    } else {
        // Exposed, but some of its IPs may be refused.
        out.extend(
            own.iter()
                .filter(|r| r.ip.is_some())
                .map(|r| not_exposed(ctx, r)),
        );
    }
    if !open.is_empty() {
        let network_wide: Vec<&Rejection> = ctx
            .rejections
            .iter()
            .filter(|r| {
                r.row != Some(s.row)
                    && r.network.is_some()
                    && r.network == s.network
                    && r.ip.is_none()
            })
            .collect();
        out.extend(network_wide.iter().map(|r| not_exposed(ctx, r)));
        if network_wide.is_empty() {
            if let Some(reason) = &s.undecided {
                let spoken_for = |ip: IpAddr| {
                    out.iter().any(|f| match f {
                        Finding::NotExposed { ip: i, .. } => i.is_none_or(|i| i == ip),
                        Finding::Covered { ip: i, .. } => *i == ip,
                        _ => false,
                    })
                };
                let silent: Vec<IpAddr> =
                    open.iter().copied().filter(|&ip| !spoken_for(ip)).collect();
                out.extend(silent.into_iter().map(|ip| Finding::NotExposed {
                    ip: Some(ip),
                    row: Some(ctx.row(s.row)),
                    reason: reason.clone(),
                }));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The demo topology under its own configuration (subnet method).
    pub(super) fn demo() -> (Snapshot, Config) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo");
        let text = std::fs::read_to_string(dir.join("topology.json")).unwrap();
        let snap = Snapshot::from_wire(&serde_json::from_str(&text).unwrap()).unwrap();
        let config = obgp_config::Loader::new()
            .sources(vec![obgp_config::ConfigSource::File(
                dir.join("bgp-agent.conf"),
            )])
            .load()
            .unwrap()
            .config;
        (snap, config)
    }

    #[test]
    fn a_recording_trace_changes_nothing_of_the_desired_state_and_an_idle_one_records_nothing() {
        let (snap, config) = demo();
        let facts = NodeFacts::default();
        let (quiet, _, idle) = compute_traced(&snap, &config, &facts, Trace::default()).unwrap();
        let (traced, _, rec) = compute_traced(&snap, &config, &facts, Trace::recording()).unwrap();
        assert_eq!(quiet, traced);
        assert!(idle.rejections.is_empty() && idle.exposures.is_empty());
        // The demo's tenant network is announced as a subnet: refused one by one.
        assert!(
            rec.rejections
                .iter()
                .any(|r| matches!(r.reason, Reason::SubnetMethod { .. })),
            "{:?}",
            rec.rejections
        );
    }
}
