//! The rows a query is about, and why the drivers did not visit those they
//! skip: the predicates of the snapshot's indexes ([`obgp_ovn`]'s
//! `is_active_vif`, `is_bound_to`, `hosting-chassis`, the SB `chassis`),
//! read here, not restated.

use std::net::IpAddr;

use ipnet::IpNet;
use obgp_ovn::{
    LoadBalancer, LogicalRouterPort, LogicalSwitchPort, LspType, Nat, NatType, PbMac, PbType,
    PortBinding, Snapshot,
};
use obgp_ovsdb_data::{Str, Uuid};

use super::{Decisions, ExplainError};
use crate::model::RowRef;
use crate::provenance::{ExposeRule, Origin, Reason};

/// A row the query is about.
pub(crate) struct Subject {
    pub row: RowRef,
    /// The IPs it carries.
    pub ips: Vec<IpAddr>,
    /// Its network (NB `neutron-<id>`, SB datapath uuid), for the refusals
    /// of a whole network.
    pub network: Option<String>,
    /// Why the drivers' indexes leave it out, if they do.
    pub selection: Option<Reason>,
    /// Why an IP of a row the drivers did visit was left undecided: a VM
    /// on a tenant network is only looked at behind a gateway hosted here.
    pub undecided: Option<Reason>,
}

fn row(table: &'static str, uuid: Uuid) -> RowRef {
    RowRef { table, uuid }
}

/// Why the NB port rule does not visit `p` on this node.
fn lsp_selection(p: &LogicalSwitchPort, hostname: Option<&str>) -> Option<Reason> {
    if !p.is_active_vif() {
        return Some(match p.kind {
            LspType::Vm | LspType::Virtual => Reason::PortDown,
            _ => Reason::NotAVmPort {
                kind: p.kind.as_str().to_string(),
            },
        });
    }
    let Some(here) = hostname else {
        return Some(Reason::NoHostname);
    };
    (!p.is_bound_to(here)).then(|| Reason::BoundElsewhere {
        chassis: p.binding_candidates().iter().map(Str::to_string).collect(),
        by: p.binding_key(),
        here: here.to_string(),
    })
}

/// Why a gateway LRP is not local: hosted elsewhere (an LRP hosted
/// nowhere is a plain router interface, not a gateway).
fn lrp_selection(p: &LogicalRouterPort, system_id: Option<&str>) -> Option<Reason> {
    let hosting = p.hosting_chassis.as_deref()?;
    let Some(here) = system_id else {
        return Some(Reason::NoSystemId);
    };
    (hosting != here).then(|| Reason::GatewayElsewhere {
        hosting: Some(hosting.to_string()),
        here: here.to_string(),
    })
}

fn lsp_subject(ctx: &Decisions, p: &LogicalSwitchPort) -> Subject {
    let mut ips = p.addresses.ips.clone();
    if ips.is_empty() {
        ips = p.cidrs.iter().map(IpNet::addr).collect();
    }
    // The NB driver reads a tenant network's VMs from the router
    // interfaces of the gateways hosted here (`expose_subnet`), and a VM
    // with a FIP for its FIP only: one it decided nothing for has none.
    let undecided = p
        .network
        .as_deref()
        .filter(|n| ctx.snap.localnet_of_switch(n).is_none())
        .map(|n| Reason::NoLocalGateway {
            network: n.to_string(),
        });
    Subject {
        row: row(LogicalSwitchPort::TABLE, p.uuid),
        ips,
        network: p.network.as_deref().map(str::to_string),
        selection: lsp_selection(p, ctx.hostname),
        undecided,
    }
}

fn lrp_subject(ctx: &Decisions, p: &LogicalRouterPort) -> Subject {
    Subject {
        row: row(LogicalRouterPort::TABLE, p.uuid),
        ips: p.networks.iter().map(IpNet::addr).collect(),
        network: p.network.as_deref().map(str::to_string),
        selection: lrp_selection(p, ctx.system_id),
        undecided: None,
    }
}

/// A FIP NAT: not visited when its port is not bound here (distributed)
/// or its gateway port is not hosted here (centralized).
fn nat_subject(ctx: &Decisions, n: &Nat) -> Subject {
    let snap = ctx.snap;
    let selection = if snap.nb_global.fip_distributed {
        match n.logical_port.as_deref().and_then(|p| snap.lsp(p)) {
            Some(p) => lsp_selection(p, ctx.hostname),
            None => Some(Reason::NatWithoutPort {
                port: n.logical_port.clone(),
            }),
        }
    } else {
        n.gateway_port
            .and_then(|g| snap.lrp_by_uuid(g))
            .and_then(|g| lrp_selection(g, ctx.system_id))
    };
    Subject {
        row: row(Nat::TABLE, n.uuid),
        ips: vec![n.external_ip],
        network: None,
        selection,
        undecided: None,
    }
}

fn lb_subject(lb: &LoadBalancer) -> Subject {
    let mut ips = lb.vip_ips.clone();
    ips.extend(lb.vip.filter(|v| !lb.vip_ips.contains(v)));
    Subject {
        row: row(LoadBalancer::TABLE, lb.uuid),
        ips,
        network: None,
        // Load balancers are read for the routers whose gateway is here.
        selection: Some(Reason::LbRouterNotLocal {
            router: lb.router_name.clone().or_else(|| lb.lr_ref.clone()),
        }),
        undecided: None,
    }
}

/// The IPs a binding carries: its `mac` entry's, `neutron:cidrs`, and a
/// patch port's `nat_addresses`.
fn pb_ips(p: &PortBinding) -> Vec<IpAddr> {
    let mut ips = p.vm_ips();
    if let PbMac::Addresses { ips: nets, .. } = &p.mac {
        for n in nets {
            if !ips.contains(&n.addr()) {
                ips.push(n.addr());
            }
        }
    }
    for ip in p.cidrs.iter().map(IpNet::addr) {
        if !ips.contains(&ip) {
            ips.push(ip);
        }
    }
    for nat in &p.nat_addresses {
        ips.extend(
            nat.ips
                .iter()
                .filter(|ip| !ips.contains(ip))
                .collect::<Vec<_>>(),
        );
    }
    ips
}

/// Why the SB drivers do not visit `p` as bound here.
fn pb_selection(p: &PortBinding, system_id: Option<&str>) -> Option<Reason> {
    let here = system_id;
    match &p.kind {
        PbType::Vm | PbType::Virtual => {
            let Some(here) = here else {
                return Some(Reason::NoSystemId);
            };
            match p.chassis.as_deref() {
                None => Some(Reason::Unbound),
                Some(c) if c != here => Some(Reason::BoundElsewhere {
                    chassis: vec![c.to_string()],
                    by: "chassis",
                    here: here.to_string(),
                }),
                Some(_) => None,
            }
        }
        PbType::ChassisRedirect => {
            let Some(here) = here else {
                return Some(Reason::NoSystemId);
            };
            (p.chassis.as_deref() != Some(here)).then(|| Reason::GatewayElsewhere {
                hosting: p.chassis.clone(),
                here: here.to_string(),
            })
        }
        PbType::Patch => None,
        PbType::Localnet | PbType::Other(_) => Some(Reason::NotAVmPort {
            kind: p.kind.as_str().to_string(),
        }),
    }
}

fn pb_subject(ctx: &Decisions, p: &PortBinding) -> Subject {
    let network = p.datapath.map(|d| d.to_string());
    let selection = match p.kind {
        // The SB EVPN driver reads VM ports, bound to any chassis, only on
        // the subnets of a gateway hosted here: one it did not visit has none.
        PbType::Vm | PbType::Virtual if ctx.sb_evpn && p.chassis.is_some() => {
            Some(Reason::NoLocalGateway {
                network: network.clone().unwrap_or_default(),
            })
        }
        // The stretched-L2 driver reads every gateway, hosted anywhere.
        PbType::ChassisRedirect if ctx.stretched => None,
        _ => pb_selection(p, ctx.system_id),
    };
    Subject {
        row: row(PortBinding::TABLE, p.uuid),
        ips: pb_ips(p),
        network,
        selection,
        undecided: None,
    }
}

/// Every row of the driver's database that carries `ip`: each table is
/// scanned with a cheap test first, and only the rows that carry it are
/// made subjects.
pub(crate) fn carrying(ctx: &Decisions, ip: IpAddr) -> Vec<Subject> {
    let snap = ctx.snap;
    if ctx.sb {
        return snap
            .sb()
            .all_ports()
            .into_iter()
            .filter(|p| pb_ips(p).contains(&ip))
            .map(|p| pb_subject(ctx, p))
            .collect();
    }
    let mut out: Vec<Subject> = Vec::new();
    out.extend(
        snap.all_lsps()
            .into_iter()
            .filter(|p| matches!(p.kind, LspType::Vm | LspType::Virtual))
            .filter(|p| p.addresses.ips.contains(&ip) || p.cidrs.iter().any(|c| c.addr() == ip))
            .map(|p| lsp_subject(ctx, p)),
    );
    out.extend(
        snap.all_lrps()
            .into_iter()
            .filter(|p| p.networks.iter().any(|n| n.addr() == ip))
            .map(|p| lrp_subject(ctx, p)),
    );
    out.extend(
        snap.all_nats()
            .into_iter()
            .filter(|n| n.kind == NatType::DnatAndSnat && n.external_ip == ip)
            .map(|n| nat_subject(ctx, n)),
    );
    out.extend(
        snap.all_lbs()
            .into_iter()
            .filter(|lb| lb.vip_ips.contains(&ip) || lb.vip == Some(ip))
            .map(lb_subject),
    );
    out.retain(|s| s.ips.contains(&ip));
    out
}

/// The rows `name` names: a port by name or uuid (NB: a Logical_Switch_Port,
/// with the router port behind a router-type one; or a Logical_Router_Port;
/// SB: a Port_Binding by `logical_port` or uuid).
pub(crate) fn named(ctx: &Decisions, name: &str) -> Result<Vec<Subject>, ExplainError> {
    let snap = ctx.snap;
    let uuid = Uuid::parse(name).ok();
    if ctx.sb {
        let sb = snap.sb();
        let p = sb
            .port(name)
            .or_else(|| uuid.and_then(|u| sb.port_by_uuid(u)))
            .ok_or_else(|| ExplainError::NoSuchPort(name.to_string(), "OVN_Southbound"))?;
        return Ok(vec![pb_subject(ctx, p)]);
    }
    if let Some(p) = snap
        .lsp(name)
        .or_else(|| uuid.and_then(|u| snap.lsp_by_uuid(u)))
    {
        let mut out = vec![lsp_subject(ctx, p)];
        if p.kind == LspType::Router {
            // Neutron names the router port `lrp-<port id>`.
            let lrp_name = format!("lrp-{}", p.name);
            out.extend(
                snap.all_lrps()
                    .into_iter()
                    .filter(|l| l.name == lrp_name)
                    .map(|l| lrp_subject(ctx, l)),
            );
        }
        return Ok(out);
    }
    let lrp = snap
        .all_lrps()
        .into_iter()
        .find(|l| l.name == name || Some(l.uuid) == uuid);
    match lrp {
        Some(l) => Ok(vec![lrp_subject(ctx, l)]),
        None => Err(ExplainError::NoSuchPort(name.to_string(), "OVN_Northbound")),
    }
}

/// The row values behind an exposure worth naming: a FIP's logical IP and
/// its router, a gateway's or tenant IP's router.
pub(crate) fn detail(snap: &Snapshot, o: &Origin) -> Option<String> {
    let router_of_lrp = |r: &RowRef| {
        (r.table == LogicalRouterPort::TABLE)
            .then(|| snap.lrp_by_uuid(r.uuid))
            .flatten()
            .and_then(|l| l.router.clone())
    };
    match o.rule {
        ExposeRule::DistributedFip | ExposeRule::CentralizedFip | ExposeRule::VipFip => {
            let nat = snap.nat_by_uuid(o.source.uuid)?;
            let router = nat
                .gateway_port
                .and_then(|g| snap.lrp_by_uuid(g))
                .and_then(|g| g.router.clone());
            let logical = match nat.logical_ip {
                n if n.prefix_len() == n.max_prefix_len() => n.addr().to_string(),
                n => n.to_string(),
            };
            let hosted = if o.rule == ExposeRule::CentralizedFip {
                " (gateway hosted here)"
            } else {
                " (distributed: the port is bound here)"
            };
            Some(match router {
                Some(r) => format!("FIP of {logical} on router {r}{hosted}"),
                None => format!("FIP of {logical}{hosted}"),
            })
        }
        ExposeRule::Gateway => router_of_lrp(&o.source).map(|r| format!("gateway of router {r}")),
        ExposeRule::TenantVm | ExposeRule::PortForwarding => o
            .via
            .as_ref()
            .and_then(router_of_lrp)
            .map(|r| format!("behind router {r} (gateway hosted here)")),
        _ => None,
    }
}
