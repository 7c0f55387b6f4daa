//! `nb_ovn_bgp_driver` with `exposing_method = underlay`: what upstream's
//! `NBOVNBGPDriver.sync()` would leave on the node, as a pure function.
//!
//! The order of the passes follows upstream's sync (gateways with their
//! subnets, centralized FIPs, ports bound here, load balancers); how each
//! exposure is wired is [`crate::wiring`]'s, under [`POLICY`]. Every lookup
//! goes through the snapshot's indexes: the work is proportional to what is
//! local to this chassis.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::rc::Rc;

use ipnet::IpNet;
use obgp_config::Config;
use obgp_netmodel::MacAddr;
use obgp_ovn::hash::FastHash;
use obgp_ovn::{LoadBalancer, LogicalRouterPort, LogicalSwitchPort, Nat, NatType, Snapshot};

use crate::model::{Desired, ExposedIp, RowRef};
use crate::provenance::{ExposeRule, Origin, Reason, Rejection, Trace};
use crate::wiring::{
    localnet_target, DriverPolicy, Gateway, MacTweakOnce, NoProvider, ProviderNetwork, SameIp,
    Wiring,
};

/// The NB driver's policy. Where two OVN objects ask for the same IP the
/// later one's wiring wins, as upstream's `ip neigh replace` does in its
/// pass order. A provider network is a logical switch: the MAC-tweak flow
/// is asked for once per switch, on its first exposure.
pub(crate) const POLICY: DriverPolicy = DriverPolicy {
    same_ip: SameIp::LaterWiringWins,
    mac_tweak_once: MacTweakOnce::PerProvider,
};

fn lsp_ref(p: &LogicalSwitchPort) -> RowRef {
    RowRef {
        table: LogicalSwitchPort::TABLE,
        uuid: p.uuid,
    }
}

fn lrp_ref(p: &LogicalRouterPort) -> RowRef {
    RowRef {
        table: LogicalRouterPort::TABLE,
        uuid: p.uuid,
    }
}

fn nat_ref(n: &Nat) -> RowRef {
    RowRef {
        table: Nat::TABLE,
        uuid: n.uuid,
    }
}

/// A provider network looked up by switch name, or why there is none.
type Provider<'a> = Result<Rc<ProviderNetwork<'a>>, NoProvider<'a>>;

/// What a distributed FIP needs from a port's NAT (upstream
/// `get_port_external_ip_and_ls`), or the first thing it lacks.
type DistributedFip<'a> = Result<(IpAddr, MacAddr, &'a str, RowRef), &'static str>;

/// The address scopes of a router interface's subnets: `(IPv4 scope, IPv6 scope)`
/// (`neutron:subnet_pool_addr_scope4/6`).
type Scopes<'a> = (Option<&'a str>, Option<&'a str>);

/// The address scope of `ip`'s family.
fn scope_of<'a>(ip: IpAddr, scopes: Scopes<'a>) -> Option<&'a str> {
    match ip {
        IpAddr::V4(_) => scopes.0,
        IpAddr::V6(_) => scopes.1,
    }
}

/// What a full computation read besides the ports bound here, so that
/// [`crate::DesiredCache`] can tell whether a port change may touch more than
/// that port's own exposures.
#[derive(Clone, Debug, Default)]
pub(crate) struct Reads {
    /// Port names looked up by name (FIP logical ports, LB VIP ports),
    /// found or not.
    pub lsp_names: HashSet<String>,
    /// Networks whose active ports were read (tenant networks behind a
    /// gateway hosted here).
    pub networks: HashSet<String>,
    /// IPs exposed more than once: which exposure wins depends on the order.
    pub contested: HashSet<IpAddr>,
}

/// The exposures one port bound here asks for, computed on its own.
pub(crate) struct PortExposures {
    pub exposed: Vec<ExposedIp>,
    /// IPs the port exposes twice.
    pub contested: Vec<IpAddr>,
    /// Whether each provider network it goes through has its MAC-tweak flow
    /// in the bridge's base wiring, i.e. asking for it changes nothing.
    pub mac_tweak_in_base: bool,
    /// Whether computing them noted something (an IP or MAC refused): the
    /// notes are part of the desired state, which a patch does not carry.
    pub noted: bool,
}

pub(crate) struct NbUnderlay<'a> {
    snap: &'a Snapshot,
    cfg: &'a Config,
    w: Wiring<'a>,
    /// Provider network per switch name (or why it is none).
    providers: HashMap<&'a str, Provider<'a>, FastHash>,
    /// The last switch [`Self::provider`] answered for: consecutive ports
    /// are mostly on the same network, and comparing the name is cheaper
    /// than hashing it.
    last_provider: Option<(&'a str, Provider<'a>)>,
    /// Gateways (cr-lrp) hosted here, by router id.
    gateways: HashMap<&'a str, Gateway<'a>>,
    /// Tenant networks whose subnets are wired here (upstream `ovn_local_lrps`).
    local_tenant_networks: HashSet<&'a str>,
    reads: Reads,
}

impl<'a> NbUnderlay<'a> {
    pub(crate) fn new(snap: &'a Snapshot, cfg: &'a Config, base: Desired, trace: Trace) -> Self {
        NbUnderlay {
            snap,
            cfg,
            w: Wiring::new(&snap.ovs, cfg, POLICY, base, trace),
            providers: HashMap::default(),
            last_provider: None,
            gateways: HashMap::new(),
            local_tenant_networks: HashSet::new(),
            reads: Reads::default(),
        }
    }

    /// The exposures of `port` alone, as [`Self::run`] would add them if it
    /// is bound here (the caller checks that).
    pub(crate) fn port_exposures(mut self, port: &'a LogicalSwitchPort) -> PortExposures {
        self.bound_port(port);
        let w = &self.w;
        let mac_tweak_in_base = self
            .providers
            .values()
            .flatten()
            .all(|p| w.mac_tweak_in_base(p));
        debug_assert!(!w.trace.is_on(), "a port's exposures are computed untraced");
        let noted = self.w.has_notes();
        let (exposed, contested) = self.w.into_exposures();
        PortExposures {
            exposed,
            contested: contested.into_iter().collect(),
            mac_tweak_in_base,
            noted,
        }
    }

    /// The desired state, what computing it read (see [`Reads`]), and the trace.
    pub(crate) fn run(mut self, hostname: Option<&str>) -> (Desired, Reads, Trace) {
        let snap = self.snap;
        self.w.wire_bridges(|net| {
            snap.localnets_on_physnet(net)
                .filter_map(|ln| ln.tag)
                .collect()
        });
        match self.snap.ovs.system_id.clone() {
            Some(system_id) => self.gateways_and_subnets(&system_id),
            None => {
                self.w.note(
                    "Open_vSwitch external_ids:system-id is unset: no gateway is local".into(),
                );
                self.w.trace.reject(|| Rejection::node(Reason::NoSystemId));
            }
        }
        if !self.snap.nb_global.fip_distributed {
            if let Some(system_id) = self.snap.ovs.system_id.clone() {
                self.centralized_fips(&system_id);
            }
        }
        match hostname {
            Some(h) => self.bound_ports(h),
            None => {
                self.w.note(
                    "no chassis hostname (OVS external_ids:hostname or system): no port is local"
                        .into(),
                );
                self.w.trace.reject(|| Rejection::node(Reason::NoHostname));
            }
        }
        self.load_balancers();
        let (desired, contested, trace) = self.w.finish();
        self.reads.contested = contested;
        (desired, self.reads, trace)
    }

    /// Records, when tracing, that `row` (or its `ip`) is not exposed
    /// because switch `switch` gives no provider network.
    fn reject_provider(&mut self, row: RowRef, ip: Option<IpAddr>, switch: &str, why: NoProvider) {
        let ovs = &self.snap.ovs;
        self.w.trace.reject(|| {
            let r = Rejection::of(row, why.reason(ovs, switch));
            match ip {
                Some(ip) => r.ip(ip),
                None => r,
            }
        });
    }

    /// The provider wiring of switch `switch`, or why there is none (no
    /// localnet, or its physical network is not mapped here).
    fn provider(&mut self, switch: &'a str) -> Provider<'a> {
        if let Some((last, p)) = &self.last_provider {
            // Ports of one network often share the name's allocation.
            if std::ptr::eq(*last, switch) || *last == switch {
                return p.clone();
            }
        }
        let p = self.provider_uncached(switch);
        self.last_provider = Some((switch, p.clone()));
        p
    }

    fn provider_uncached(&mut self, switch: &'a str) -> Provider<'a> {
        if let Some(p) = self.providers.get(switch) {
            return p.clone();
        }
        let snap = self.snap;
        // The switch's localnet, on its `options:network_name`.
        let p = snap
            .localnet_of_switch(switch)
            .ok_or(NoProvider::NoLocalnet)
            .and_then(|ln| {
                let target =
                    localnet_target(&snap.ovs, &ln.name, ln.localnet_network.as_deref(), ln.tag)?;
                Ok(Rc::new(ProviderNetwork::new(&ln.name, target)))
            });
        self.providers.insert(switch, p.clone());
        p
    }

    /// Gateway router ports hosted here, then each one's tenant subnets.
    fn gateways_and_subnets(&mut self, system_id: &str) {
        let snap = self.snap;
        let mut routers: Vec<&'a str> = Vec::new();
        for lrp in snap.lrps_hosted_on(system_id) {
            let source = lrp_ref(lrp);
            if lrp.networks.is_empty() {
                self.w
                    .trace
                    .reject(|| Rejection::of(source, Reason::NoAddresses));
                continue;
            }
            let Some(switch) = lrp.network.as_deref() else {
                self.w
                    .trace
                    .reject(|| Rejection::of(source, Reason::NoNetworkName));
                continue;
            };
            let provider = match self.provider(switch) {
                Ok(p) => p,
                Err(why) => {
                    self.reject_provider(source, None, switch, why);
                    continue;
                }
            };
            let ips: Vec<IpAddr> = lrp.networks.iter().map(IpNet::addr).collect();
            self.w.expose_provider(
                &ips,
                Some(lrp.mac),
                &provider,
                &lrp.networks,
                Origin::new(ExposeRule::Gateway, source),
            );
            if let Some(router) = lrp.router.as_deref() {
                let gw = Gateway {
                    provider,
                    ips,
                    row: source,
                };
                self.gateways.insert(router, gw);
                routers.push(router);
            }
        }
        for router in routers {
            for iface in snap.router_interfaces(router) {
                self.expose_subnet(router, iface);
            }
        }
    }

    fn scope_allowed(&self, ip: IpAddr, scopes: Scopes) -> bool {
        self.w.tenant.allows_scope(scope_of(ip, scopes))
    }

    /// Upstream `_expose_subnet` for one router interface LSP.
    fn expose_subnet(&mut self, router: &'a str, iface: &'a LogicalSwitchPort) {
        let snap = self.snap;
        let Some(gw) = self.gateways.get(router).cloned() else {
            return;
        };
        let Some(network) = iface.network.as_deref() else {
            return;
        };
        let scopes: Scopes = (iface.addr_scope4.as_deref(), iface.addr_scope6.as_deref());
        let mut cidrs: Vec<IpNet> = iface.cidrs.clone();
        let iface_row = lsp_ref(iface);

        if self.cfg.default.require_snat_disabled_for_tenant_networks {
            if let Some(lr) = snap.router(router) {
                let snat_nets: Vec<IpNet> = snap
                    .router_nats(lr)
                    .filter(|n| n.kind == NatType::Snat)
                    .map(|n| n.logical_ip.trunc())
                    .collect();
                cidrs.retain(|c| !snat_nets.iter().any(|n| n.contains(&c.addr())));
            }
            if cidrs.is_empty() {
                self.w.trace.reject(|| {
                    Rejection::of(
                        iface_row,
                        Reason::SnatEnabled {
                            cidrs: iface.cidrs.clone(),
                        },
                    )
                    .network(network)
                });
                return;
            }
        }

        if self.w.tenant.any() {
            let subnet = self.w.tenant.subnet_method();
            let candidates: Vec<IpNet> = cidrs
                .iter()
                .map(|c| if subnet { c.trunc() } else { *c })
                .filter(|c| self.w.tenant.exposes(c.addr()))
                .collect();
            if let Some(first) = candidates.first() {
                let candidates_first = first.addr();
                let allowed: Vec<IpNet> = candidates
                    .into_iter()
                    .filter(|c| self.scope_allowed(c.addr(), scopes))
                    .collect();
                if allowed.is_empty() {
                    // Upstream's ExposeDeniedForAddressScope: neither the
                    // subnet nor its VMs are exposed.
                    let scope = scope_of(candidates_first, scopes);
                    let reason = self.w.tenant.scope_reason(scope);
                    self.w
                        .trace
                        .reject(|| Rejection::of(iface_row, reason()).network(network));
                    return;
                }
                for rule_dst in allowed {
                    self.w
                        .route_tenant_subnet(&gw, rule_dst, router.to_string());
                    self.local_tenant_networks.insert(network);
                }
            }
        }

        if self.w.tenant.subnet_method() {
            let any = self.w.tenant.any();
            let subnet = cidrs.first().map(IpNet::trunc);
            self.w.trace.reject(|| {
                let reason = if any {
                    Reason::SubnetMethod { subnet }
                } else {
                    Reason::TenantNotExposed { gua_only: false }
                };
                Rejection::of(iface_row, reason).network(network)
            });
            return;
        }
        self.reads.networks.insert(network.to_string());
        for vm in snap.active_vifs_on_network(network) {
            for &ip in &vm.addresses.ips {
                if self.scope_allowed(ip, scopes) {
                    let origin = Origin::new(ExposeRule::TenantVm, lsp_ref(vm)).via(gw.row);
                    self.expose_tenant_ip(ip, origin);
                } else {
                    let reason = self.w.tenant.scope_reason(scope_of(ip, scopes));
                    self.w
                        .trace
                        .reject(|| Rejection::of(lsp_ref(vm), reason()).ip(ip));
                }
            }
        }
    }

    /// Upstream `_expose_remote_ip`, host method: announce only. Unlike
    /// upstream, nothing is announced when neither tenant option is set.
    fn expose_tenant_ip(&mut self, ip: IpAddr, origin: Origin) {
        if self.w.tenant.subnet_method() {
            let subnet = None;
            self.w
                .trace
                .reject(|| Rejection::of(origin.source, Reason::SubnetMethod { subnet }).ip(ip));
        } else if self.w.tenant.exposes(ip) {
            self.w.announce(ip, origin);
        } else {
            let gua_only = self.w.tenant.any();
            self.w.trace.reject(|| {
                Rejection::of(origin.source, Reason::TenantNotExposed { gua_only }).ip(ip)
            });
        }
    }

    /// Upstream `_expose_fip`: the FIP is wired on the bridge of its provider
    /// network with `mac` as permanent neighbour.
    fn expose_fip(
        &mut self,
        ip: IpAddr,
        mac: MacAddr,
        provider_switch: &'a str,
        port: &LogicalSwitchPort,
        origin: Origin,
    ) {
        let provider = match self.provider(provider_switch) {
            Ok(p) => p,
            Err(why) => return self.reject_provider(origin.source, Some(ip), provider_switch, why),
        };
        if port.network.is_none() {
            self.w
                .trace
                .reject(|| Rejection::of(lsp_ref(port), Reason::NoNetworkName).ip(ip));
            return;
        }
        self.w
            .expose_provider(&[ip], Some(mac), &provider, &[], origin);
    }

    /// The provider switch `neutron-<fip_network_id>` of a NAT.
    fn fip_switch(&self, nat: &'a Nat) -> Option<&'a str> {
        nat.fip_switch.as_deref()
    }

    /// Centralized FIPs: every dnat_and_snat whose gateway port is hosted
    /// here, with the gateway port's MAC.
    fn centralized_fips(&mut self, system_id: &str) {
        let snap = self.snap;
        for lrp in snap.lrps_hosted_on(system_id) {
            for nat in snap.fips_on_gateway_port(lrp.uuid) {
                let source = nat_ref(nat);
                let Some(switch) = self.fip_switch(nat) else {
                    self.w
                        .note(format!("{source} has no neutron:fip_network_id"));
                    self.w
                        .trace
                        .reject(|| Rejection::of(source, Reason::NatWithoutFipNetwork));
                    continue;
                };
                if let Some(p) = &nat.logical_port {
                    self.reads.lsp_names.insert(p.clone());
                }
                let Some(port) = nat.logical_port.as_deref().and_then(|p| snap.lsp(p)) else {
                    self.w
                        .note(format!("{source} has no existing logical_port"));
                    let port = nat.logical_port.clone();
                    self.w
                        .trace
                        .reject(|| Rejection::of(source, Reason::NatWithoutPort { port }));
                    continue;
                };
                let origin = Origin::new(ExposeRule::CentralizedFip, source).via(lrp_ref(lrp));
                self.expose_fip(nat.external_ip, lrp.mac, switch, port, origin);
            }
        }
    }

    /// The NAT of `port` if it carries what a distributed FIP needs
    /// (upstream `get_port_external_ip_and_ls`): external IP, external MAC
    /// and the provider switch; else what it lacks.
    fn distributed_fip_of(&mut self, port: &str) -> DistributedFip<'a> {
        let nat = self.snap.nat_of_logical_port(port).ok_or("NAT")?;
        let mac = nat.external_mac.ok_or("external_mac")?;
        let switch = self.fip_switch(nat).ok_or("neutron:fip_network_id")?;
        Ok((nat.external_ip, mac, switch, nat_ref(nat)))
    }

    /// The distributed FIP of `port` under `rule`, asked for by row `by`
    /// (the port itself, or the load balancer of a VIP port); refused with
    /// what its NAT lacks.
    fn distributed_fip(&mut self, port: &'a LogicalSwitchPort, rule: ExposeRule, by: RowRef) {
        match self.distributed_fip_of(&port.name) {
            Ok((ip, mac, switch, nat)) => {
                let origin = Origin::new(rule, nat).via(by);
                self.expose_fip(ip, mac, switch, port, origin);
            }
            Err(missing) => self
                .w
                .trace
                .reject(|| Rejection::of(by, Reason::FipIncomplete { missing })),
        }
    }

    /// VM and virtual ports bound to this chassis: their FIP if they have
    /// one, else their own IPs when on a provider network.
    fn bound_ports(&mut self, hostname: &str) {
        for port in self.snap.active_vifs_on_chassis(hostname) {
            self.bound_port(port);
        }
    }

    fn bound_port(&mut self, port: &'a LogicalSwitchPort) {
        let row = lsp_ref(port);
        if port.port_fip.is_some() {
            self.distributed_fip(port, ExposeRule::DistributedFip, row);
            return;
        }
        let Some(switch) = port.network.as_deref() else {
            self.w
                .trace
                .reject(|| Rejection::of(row, Reason::NoNetworkName));
            return;
        };
        let provider = match self.provider(switch) {
            Ok(p) => p,
            Err(why) => return self.reject_provider(row, None, switch, why),
        };
        self.w.expose_provider(
            &port.addresses.ips,
            port.addresses.mac,
            &provider,
            &port.cidrs,
            Origin::new(ExposeRule::ProviderVm, row),
        );
    }

    /// OVN load balancers of routers whose gateway is here: VIPs,
    /// VIP-FIPs and port-forwarding FIPs.
    fn load_balancers(&mut self) {
        let snap = self.snap;
        let mut routers: Vec<&'a str> = self.gateways.keys().copied().collect();
        routers.sort_unstable();
        let mut seen = HashSet::new();
        for router in routers {
            for lb in snap.lbs_of_router(router) {
                if seen.insert(lb.uuid) {
                    self.load_balancer(lb);
                }
            }
        }
    }

    fn load_balancer(&mut self, lb: &'a LoadBalancer) {
        let snap = self.snap;
        let source = RowRef {
            table: LoadBalancer::TABLE,
            uuid: lb.uuid,
        };
        if lb.is_port_forwarding() {
            // Upstream takes the router from neutron:router_name only and
            // exposes the first VIP key's IP.
            let Some(gw) = lb
                .router_name
                .as_deref()
                .and_then(|r| self.gateways.get(r))
                .cloned()
            else {
                let router = lb.router_name.clone();
                self.w
                    .trace
                    .reject(|| Rejection::of(source, Reason::LbRouterNotLocal { router }));
                return;
            };
            if let Some(&fip) = lb.vip_ips.first() {
                let origin = Origin::new(ExposeRule::PortForwarding, source).via(gw.row);
                self.w
                    .expose_provider(&[fip], None, &gw.provider, &[], origin);
            }
            return;
        }
        let (Some(vip), Some(_), Some(vip_port)) =
            (lb.vip, lb.lr_ref.as_deref(), lb.vip_port.as_deref())
        else {
            self.w.note(format!(
                "{source} lacks neutron:vip, lr_ref or neutron:vip_port_id"
            ));
            self.w
                .trace
                .reject(|| Rejection::of(source, Reason::LbIncomplete));
            return;
        };
        self.reads.lsp_names.insert(vip_port.to_string());
        let Some(vip_lsp) = snap.lsp(vip_port) else {
            self.w
                .note(format!("{source}: VIP port {vip_port} not found"));
            self.w.trace.reject(|| {
                Rejection::of(
                    source,
                    Reason::VipPortMissing {
                        port: vip_port.to_string(),
                    },
                )
                .ip(vip)
            });
            return;
        };
        let vip_row = lsp_ref(vip_lsp);
        match vip_lsp.network.as_deref() {
            Some(net) if self.local_tenant_networks.contains(net) => self.expose_tenant_ip(
                vip,
                Origin::new(ExposeRule::TenantLbVip, source).via(vip_row),
            ),
            Some(net) => match self.provider(net) {
                Ok(provider) => {
                    let origin = Origin::new(ExposeRule::LbVip, source).via(vip_row);
                    self.w.expose_provider(&[vip], None, &provider, &[], origin);
                }
                Err(why) => self.reject_provider(source, Some(vip), net, why),
            },
            None => self
                .w
                .trace
                .reject(|| Rejection::of(vip_row, Reason::NoNetworkName).ip(vip)),
        }
        if lb.vip_fip.is_some() {
            self.distributed_fip(vip_lsp, ExposeRule::VipFip, source);
        }
    }
}
