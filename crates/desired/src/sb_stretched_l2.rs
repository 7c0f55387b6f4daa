//! `ovn_stretched_l2_bgp_driver` (SB): whole tenant subnets announced
//! through their router's gateway IP on the provider network, from every
//! node alike, as a pure function of the OVN_Southbound rows.
//!
//! Every router gateway port (`chassisredirect` binding) in the database
//! counts, whatever chassis hosts it, bound or not (upstream `sync()` walks
//! `get_cr_lrp_ports`): failover is OVN's business (BFD, GARP on the
//! provider network), no BGP update is needed when the gateway moves. For
//! each gateway IP and each address of a router interface (`lrp-*` patch
//! binding of the gateway's router) of the same family, the VRF table
//! (`bgp_vrf_table_id`) gets, on `bgp_nic`:
//!
//! - `<gateway network> scope link` (the provider subnet, on-link), and
//! - `<tenant network> via <gateway IP>`,
//!
//! which FRR announces with `redistribute kernel`. Nothing else: no bridge
//! tables, rules, flows or addresses.
//!
//! Address scopes (`address_scopes` set): for a family, the gateway's
//! provider-side port (`cr-lrp-<id>` → `<id>`) must carry an allowed
//! `neutron:subnet_pool_addr_scope4/6` and the router interface's
//! switch-side port (`lrp-<id>` → `<id>`) the same one. Unset, every
//! subnet is announced whatever its scope (upstream
//! `_address_scope_allowed`).

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

use ipnet::IpNet;
use obgp_config::Config;
use obgp_netmodel::exposable::unexposable_ip;
use obgp_netmodel::Class;
use obgp_ovn::neutron::{CR_LRP_PREFIX, LRP_PREFIX};
use obgp_ovn::{PbMac, PbType, PortBinding, Snapshot};

use crate::model::{RowRef, VrfRoute};
use crate::provenance::{Reason, Rejection, Trace};
use crate::sb_underlay::pb_ref;
use crate::wiring::TenantRules;

/// The VRF routes of every gateway and its router interfaces, by
/// destination. Two asks for one destination with different next hops
/// (two routers with the same tenant subnet, a gateway with two IPs of
/// one family): the first, by cr-lrp uuid and address order, wins and the
/// other is noted with its rows; the kernel holds one route per
/// destination.
pub(crate) fn stretched_l2(
    snap: &Snapshot,
    config: &Config,
    notes: &mut Vec<String>,
    trace: &mut Trace,
) -> BTreeMap<IpNet, VrfRoute> {
    let rules = TenantRules::new(config);
    let scoped = config
        .default
        .address_scopes
        .as_ref()
        .is_some_and(|s| !s.is_empty());
    let mut out = Routes {
        routes: BTreeMap::new(),
        notes,
    };
    let sb = snap.sb();
    for cr in sb.chassis_redirect_ports() {
        let cr_row = pb_ref(cr);
        let gw_nets = match usable_nets(cr, out.notes, trace) {
            Some(n) => n,
            None => continue,
        };
        let Some(router_dp) = cr.datapath else {
            continue;
        };
        // The provider-side port of the gateway carries its scopes; read
        // only when scopes filter (upstream reads it only then).
        let gw_port = if scoped {
            let name = cr.logical_port.strip_prefix(CR_LRP_PREFIX).unwrap_or("");
            match sb.port(name) {
                Some(p) => Some(p),
                None => {
                    trace.reject(|| {
                        let port = name.to_string();
                        Rejection::of(cr_row, Reason::GatewayPortMissing { port })
                    });
                    continue;
                }
            }
        } else {
            None
        };
        for lrp in sb.ports_on_datapath(router_dp) {
            if lrp.kind != PbType::Patch
                || lrp.chassis.is_some()
                || !lrp.logical_port.starts_with(LRP_PREFIX)
                || lrp.has_chassis_redirect_option
            {
                continue;
            }
            let PbMac::Addresses { ips, .. } = &lrp.mac else {
                continue;
            };
            // The gateway's own router port shares its addresses.
            if ips.is_empty() || ips.iter().any(|n| gw_nets.contains(n)) {
                continue;
            }
            let Some(ri_nets) = usable_nets(lrp, out.notes, trace) else {
                continue;
            };
            let ri_port = if scoped {
                let name = &lrp.logical_port[LRP_PREFIX.len()..];
                match sb.port(name) {
                    Some(p) => Some(p),
                    None => {
                        out.notes.push(format!(
                            "{}: router interface's port {name} is missing: not announced",
                            pb_ref(lrp)
                        ));
                        continue;
                    }
                }
            } else {
                None
            };
            let ri_row = pb_ref(lrp);
            for gw in &gw_nets {
                for ri in &ri_nets {
                    if gw.addr().is_ipv6() != ri.addr().is_ipv6() {
                        continue;
                    }
                    if let (Some(g), Some(r)) = (gw_port, ri_port) {
                        let (gs, rs) = (g.addr_scope_for(gw.addr()), r.addr_scope_for(ri.addr()));
                        if !rules.allows_scope(gs) {
                            let reason = rules.scope_reason(gs);
                            trace.reject(|| {
                                Rejection::of(ri_row, reason()).network(ri.trunc().to_string())
                            });
                            continue;
                        }
                        if gs != rs {
                            trace.reject(|| {
                                let reason = Reason::ScopeMismatch {
                                    gateway: gs.map(str::to_string),
                                    interface: rs.map(str::to_string),
                                };
                                Rejection::of(ri_row, reason).network(ri.trunc().to_string())
                            });
                            continue;
                        }
                    }
                    out.add(gw.trunc(), None, Class::Gateway, &[cr_row]);
                    out.add(
                        ri.trunc(),
                        Some(gw.addr()),
                        Class::Subnet,
                        &[ri_row, cr_row],
                    );
                }
            }
        }
    }
    out.routes
}

/// The `"<mac> <ip>/<len>..."` networks of `pb`, without the addresses
/// that may never be announced (noted); `None` when none is left.
fn usable_nets(pb: &PortBinding, notes: &mut Vec<String>, trace: &mut Trace) -> Option<Vec<IpNet>> {
    let row = pb_ref(pb);
    let PbMac::Addresses { ips, .. } = &pb.mac else {
        trace.reject(|| Rejection::of(row, Reason::NoAddresses));
        return None;
    };
    let mut nets = Vec::with_capacity(ips.len());
    for n in ips {
        match unexposable_ip(n.addr()) {
            None => nets.push(*n),
            Some(why) => {
                notes.push(format!(
                    "{row}: {} is a {why} address: not announced",
                    n.addr()
                ));
                trace.reject(|| Rejection::of(row, Reason::UnexposableIp { why }).ip(n.addr()));
            }
        }
    }
    if nets.is_empty() {
        trace.reject(|| Rejection::of(row, Reason::NoAddresses));
        return None;
    }
    Some(nets)
}

struct Routes<'n> {
    routes: BTreeMap<IpNet, VrfRoute>,
    notes: &'n mut Vec<String>,
}

impl Routes<'_> {
    fn add(&mut self, net: IpNet, via: Option<std::net::IpAddr>, class: Class, rows: &[RowRef]) {
        match self.routes.entry(net) {
            Entry::Vacant(e) => {
                e.insert(VrfRoute {
                    net,
                    via,
                    class,
                    rows: rows.to_vec(),
                });
            }
            Entry::Occupied(mut e) => {
                let r = e.get_mut();
                if r.via == via {
                    for row in rows {
                        if !r.rows.contains(row) {
                            r.rows.push(*row);
                        }
                    }
                } else {
                    let hop = |v: Option<std::net::IpAddr>| {
                        v.map_or("on-link".to_string(), |ip| format!("via {ip}"))
                    };
                    let names = |rows: &[RowRef]| {
                        rows.iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    self.notes.push(format!(
                        "VRF route {net}: {} asks for it {}, kept {} for {}",
                        names(rows),
                        hop(via),
                        hop(r.via),
                        names(&r.rows)
                    ));
                }
            }
        }
    }
}
