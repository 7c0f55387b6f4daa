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
use obgp_netmodel::{Class, MacAddr};
use obgp_ovn::hash::FastHash;
use obgp_ovn::{LoadBalancer, LogicalRouterPort, LogicalSwitchPort, Nat, NatType, Snapshot};

use crate::model::{Desired, ExposedIp, RowRef};
use crate::wiring::{
    wire_target, DriverPolicy, Gateway, MacTweakOnce, ProviderNetwork, SameIp, Wiring,
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

/// The address scopes of a router interface's subnets: `(IPv4 scope, IPv6 scope)`
/// (`neutron:subnet_pool_addr_scope4/6`).
type Scopes<'a> = (Option<&'a str>, Option<&'a str>);

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
    /// Provider network per switch name (`None`: no localnet mapped here).
    providers: HashMap<&'a str, Option<Rc<ProviderNetwork<'a>>>, FastHash>,
    /// The last switch [`Self::provider`] answered for: consecutive ports
    /// are mostly on the same network, and comparing the name is cheaper
    /// than hashing it.
    last_provider: Option<(&'a str, Option<Rc<ProviderNetwork<'a>>>)>,
    /// Gateways (cr-lrp) hosted here, by router id.
    gateways: HashMap<&'a str, Gateway<'a>>,
    /// Tenant networks whose subnets are wired here (upstream `ovn_local_lrps`).
    local_tenant_networks: HashSet<&'a str>,
    reads: Reads,
}

impl<'a> NbUnderlay<'a> {
    pub(crate) fn new(snap: &'a Snapshot, cfg: &'a Config, base: Desired) -> Self {
        NbUnderlay {
            snap,
            cfg,
            w: Wiring::new(&snap.ovs, cfg, POLICY, base),
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
        let noted = self.w.has_notes();
        let (exposed, contested) = self.w.into_exposures();
        PortExposures {
            exposed,
            contested: contested.into_iter().collect(),
            mac_tweak_in_base,
            noted,
        }
    }

    /// The desired state, and what computing it read (see [`Reads`]).
    pub(crate) fn run(mut self, hostname: Option<&str>) -> (Desired, Reads) {
        let snap = self.snap;
        self.w.wire_bridges(|net| {
            snap.localnets_on_physnet(net)
                .filter_map(|ln| ln.tag)
                .collect()
        });
        match self.snap.ovs.system_id.clone() {
            Some(system_id) => self.gateways_and_subnets(&system_id),
            None => self
                .w
                .note("Open_vSwitch external_ids:system-id is unset: no gateway is local".into()),
        }
        if !self.snap.nb_global.fip_distributed {
            if let Some(system_id) = self.snap.ovs.system_id.clone() {
                self.centralized_fips(&system_id);
            }
        }
        match hostname {
            Some(h) => self.bound_ports(h),
            None => self.w.note(
                "no chassis hostname (OVS external_ids:hostname or system): no port is local"
                    .into(),
            ),
        }
        self.load_balancers();
        let (desired, contested) = self.w.finish();
        self.reads.contested = contested;
        (desired, self.reads)
    }

    /// The provider wiring of switch `switch`, or `None` when it has no
    /// localnet or its physical network is not mapped here.
    fn provider(&mut self, switch: &'a str) -> Option<Rc<ProviderNetwork<'a>>> {
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

    fn provider_uncached(&mut self, switch: &'a str) -> Option<Rc<ProviderNetwork<'a>>> {
        if let Some(p) = self.providers.get(switch) {
            return p.clone();
        }
        let snap = self.snap;
        // The switch's localnet, on its `options:network_name`.
        let p = snap.localnet_of_switch(switch).and_then(|ln| {
            let target = wire_target(&snap.ovs, ln.localnet_network.as_deref()?, ln.tag)?;
            Some(Rc::new(ProviderNetwork::new(&ln.name, target)))
        });
        self.providers.insert(switch, p.clone());
        p
    }

    /// Gateway router ports hosted here, then each one's tenant subnets.
    fn gateways_and_subnets(&mut self, system_id: &str) {
        let snap = self.snap;
        let mut routers: Vec<&'a str> = Vec::new();
        for lrp in snap.lrps_hosted_on(system_id) {
            if lrp.networks.is_empty() {
                continue;
            }
            let Some(switch) = lrp.network.as_deref() else {
                continue;
            };
            let Some(provider) = self.provider(switch) else {
                continue;
            };
            let ips: Vec<IpAddr> = lrp.networks.iter().map(IpNet::addr).collect();
            let source = RowRef {
                table: LogicalRouterPort::TABLE,
                uuid: lrp.uuid,
            };
            self.w.expose_provider(
                &ips,
                Some(lrp.mac),
                &provider,
                &lrp.networks,
                Class::Gateway,
                source,
            );
            if let Some(router) = lrp.router.as_deref() {
                self.gateways.insert(router, Gateway { provider, ips });
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
        let scope = match ip {
            IpAddr::V4(_) => scopes.0,
            IpAddr::V6(_) => scopes.1,
        };
        self.w.tenant.allows_scope(scope)
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
            if !candidates.is_empty() {
                let allowed: Vec<IpNet> = candidates
                    .into_iter()
                    .filter(|c| self.scope_allowed(c.addr(), scopes))
                    .collect();
                if allowed.is_empty() {
                    // Upstream's ExposeDeniedForAddressScope: neither the
                    // subnet nor its VMs are exposed.
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
            return;
        }
        self.reads.networks.insert(network.to_string());
        for vm in snap.active_vifs_on_network(network) {
            for &ip in &vm.addresses.ips {
                if self.scope_allowed(ip, scopes) {
                    self.expose_tenant_ip(ip, lsp_ref(vm));
                }
            }
        }
    }

    /// Upstream `_expose_remote_ip`, host method: announce only. Unlike
    /// upstream, nothing is announced when neither tenant option is set.
    fn expose_tenant_ip(&mut self, ip: IpAddr, source: RowRef) {
        if !self.w.tenant.subnet_method() && self.w.tenant.exposes(ip) {
            self.w.announce(ip, Class::TenantVm, source);
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
        class: Class,
        source: RowRef,
    ) {
        let Some(provider) = self.provider(provider_switch) else {
            return;
        };
        if port.network.is_none() {
            return;
        }
        self.w
            .expose_provider(&[ip], Some(mac), &provider, &[], class, source);
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
                let source = RowRef {
                    table: Nat::TABLE,
                    uuid: nat.uuid,
                };
                let Some(switch) = self.fip_switch(nat) else {
                    self.w
                        .note(format!("{source} has no neutron:fip_network_id"));
                    continue;
                };
                if let Some(p) = &nat.logical_port {
                    self.reads.lsp_names.insert(p.clone());
                }
                let Some(port) = nat.logical_port.as_deref().and_then(|p| snap.lsp(p)) else {
                    self.w
                        .note(format!("{source} has no existing logical_port"));
                    continue;
                };
                self.expose_fip(nat.external_ip, lrp.mac, switch, port, Class::Fip, source);
            }
        }
    }

    /// The NAT of `port` if it carries what a distributed FIP needs
    /// (upstream `get_port_external_ip_and_ls`): external IP, external MAC
    /// and the provider switch.
    fn distributed_fip_of(&mut self, port: &str) -> Option<(IpAddr, MacAddr, &'a str, RowRef)> {
        let nat = self.snap.nat_of_logical_port(port)?;
        let mac = nat.external_mac?;
        let switch = self.fip_switch(nat)?;
        Some((
            nat.external_ip,
            mac,
            switch,
            RowRef {
                table: Nat::TABLE,
                uuid: nat.uuid,
            },
        ))
    }

    /// VM and virtual ports bound to this chassis: their FIP if they have
    /// one, else their own IPs when on a provider network.
    fn bound_ports(&mut self, hostname: &str) {
        for port in self.snap.active_vifs_on_chassis(hostname) {
            self.bound_port(port);
        }
    }

    fn bound_port(&mut self, port: &'a LogicalSwitchPort) {
        if port.port_fip.is_some() {
            if let Some((ip, mac, switch, source)) = self.distributed_fip_of(&port.name) {
                self.expose_fip(ip, mac, switch, port, Class::Fip, source);
            }
            return;
        }
        let Some(switch) = port.network.as_deref() else {
            return;
        };
        let Some(provider) = self.provider(switch) else {
            return;
        };
        self.w.expose_provider(
            &port.addresses.ips,
            port.addresses.mac,
            &provider,
            &port.cidrs,
            Class::Vm,
            lsp_ref(port),
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
                return;
            };
            if let Some(&fip) = lb.vip_ips.first() {
                self.w
                    .expose_provider(&[fip], None, &gw.provider, &[], Class::Lb, source);
            }
            return;
        }
        let (Some(vip), Some(_), Some(vip_port)) =
            (lb.vip, lb.lr_ref.as_deref(), lb.vip_port.as_deref())
        else {
            self.w.note(format!(
                "{source} lacks neutron:vip, lr_ref or neutron:vip_port_id"
            ));
            return;
        };
        self.reads.lsp_names.insert(vip_port.to_string());
        let Some(vip_lsp) = snap.lsp(vip_port) else {
            self.w
                .note(format!("{source}: VIP port {vip_port} not found"));
            return;
        };
        match vip_lsp.network.as_deref() {
            Some(net) if self.local_tenant_networks.contains(net) => {
                self.expose_tenant_ip(vip, source)
            }
            Some(net) => {
                if let Some(provider) = self.provider(net) {
                    self.w
                        .expose_provider(&[vip], None, &provider, &[], Class::Lb, source);
                }
            }
            None => {}
        }
        if lb.vip_fip.is_some() {
            if let Some((ip, mac, switch, source)) = self.distributed_fip_of(&vip_lsp.name) {
                self.expose_fip(ip, mac, switch, vip_lsp, Class::Lb, source);
            }
        }
    }
}
