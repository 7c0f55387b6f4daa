//! `nb_ovn_bgp_driver` with `exposing_method = underlay`: what upstream's
//! `NBOVNBGPDriver.sync()` would leave on the node, as a pure function.
//!
//! The order of the passes follows upstream's sync (gateways with their
//! subnets, centralized FIPs, ports bound here, load balancers), so where two
//! OVN objects ask for the same IP the later one's wiring wins, as upstream's
//! `ip neigh replace` does. Every lookup goes through the snapshot's indexes:
//! the work is proportional to what is local to this chassis.

use std::cell::Cell;
use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::net::IpAddr;
use std::rc::Rc;
use std::sync::Arc;

use ipnet::IpNet;
use obgp_config::{AdvertisementMethod, Config};
use obgp_netmodel::{Class, DevName, MacAddr};
use obgp_ovn::hash::FastHash;
use obgp_ovn::{
    neutron, LoadBalancer, LogicalRouterPort, LogicalSwitchPort, Nat, NatType, Snapshot,
};

use crate::model::{
    proxy_ndp_networks, vlan_device, BridgeWiring, Desired, ExposedIp, IpWiring, RowRef,
    TenantSubnet, VlanDevice, WireTarget,
};

/// An IP as a hash key: hashed as one or two words, where `IpAddr`'s own
/// `Hash` goes through the hasher's byte-slice path (a third of the
/// exposure bookkeeping's time).
#[derive(Clone, Copy, PartialEq, Eq)]
struct IpKey(IpAddr);

impl Hash for IpKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        match self.0 {
            IpAddr::V4(a) => h.write_u32(u32::from(a)),
            IpAddr::V6(a) => {
                let bits = u128::from(a);
                h.write_u64(bits as u64);
                h.write_u64((bits >> 64) as u64);
            }
        }
    }
}

/// Where a provider network (a switch with a localnet mapped here) lands.
#[derive(Debug)]
struct Provider<'a> {
    /// The localnet LSP name (`provnet-<id>`): its patch port is
    /// `patch-<name>-to-br-int`.
    localnet: &'a str,
    target: Arc<WireTarget>,
    /// Whether the MAC-tweak flow for the localnet's patch port was asked for
    /// (once per provider network, on its first exposure).
    flow_checked: Cell<bool>,
}

fn lsp_ref(p: &LogicalSwitchPort) -> RowRef {
    RowRef {
        table: LogicalSwitchPort::TABLE,
        uuid: p.uuid,
    }
}

/// A gateway (cr-lrp) hosted here, by router id.
#[derive(Clone, Debug)]
struct LocalGateway<'a> {
    provider: Rc<Provider<'a>>,
    /// The gateway's IPs (first of each family is the tenant routes' via).
    ips: Vec<IpAddr>,
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
}

pub(crate) struct NbUnderlay<'a> {
    snap: &'a Snapshot,
    cfg: &'a Config,
    out: Desired,
    /// Index of each bridge's wiring in `out.bridges` (first mapping entry).
    bridge_slot: HashMap<DevName, usize>,
    providers: HashMap<&'a str, Option<Rc<Provider<'a>>>, FastHash>,
    /// Exposures while computing, in insertion order (each slot is taken
    /// when they are sorted into `out.exposed` at the end), with an index by IP.
    exposed: Vec<Option<ExposedIp>>,
    exposed_at: HashMap<IpKey, u32, FastHash>,
    /// The last switch [`Self::provider`] answered for: consecutive ports
    /// are mostly on the same network, and comparing the name is cheaper
    /// than hashing it.
    last_provider: Option<(&'a str, Option<Rc<Provider<'a>>>)>,
    gateways: HashMap<&'a str, LocalGateway<'a>>,
    /// Tenant networks whose subnets are wired here (upstream `ovn_local_lrps`).
    local_tenant_networks: HashSet<&'a str>,
    allowed_scopes: HashSet<&'a str>,
    reads: Reads,
}

impl<'a> NbUnderlay<'a> {
    pub(crate) fn new(snap: &'a Snapshot, cfg: &'a Config, base: Desired) -> Self {
        NbUnderlay {
            snap,
            cfg,
            out: base,
            bridge_slot: HashMap::new(),
            providers: HashMap::default(),
            exposed: Vec::with_capacity(1024),
            exposed_at: HashMap::with_capacity_and_hasher(1024, FastHash::default()),
            last_provider: None,
            gateways: HashMap::new(),
            local_tenant_networks: HashSet::new(),
            allowed_scopes: cfg
                .default
                .address_scopes
                .iter()
                .flatten()
                .map(String::as_str)
                .collect(),
            reads: Reads::default(),
        }
    }

    /// The exposures of `port` alone, as [`Self::run`] would add them if it
    /// is bound here (the caller checks that).
    pub(crate) fn port_exposures(mut self, port: &'a LogicalSwitchPort) -> PortExposures {
        self.bound_port(port);
        let snap = self.snap;
        let mac_tweak_in_base = self.providers.values().flatten().all(|p| {
            // Base wiring already lists every `patch-provnet-*` port on the bridge.
            p.localnet.starts_with("provnet-")
                && snap.ovs.bridge_has_port(
                    p.target.bridge.as_str(),
                    &format!("patch-{}-to-br-int", p.localnet),
                )
        });
        PortExposures {
            exposed: self.exposed.into_iter().flatten().collect(),
            contested: self.reads.contested.into_iter().collect(),
            mac_tweak_in_base,
        }
    }

    /// The desired state, and what computing it read (see [`Reads`]).
    pub(crate) fn run(mut self, hostname: Option<&str>) -> (Desired, Reads) {
        self.base_wiring();
        match self.snap.ovs.system_id.clone() {
            Some(system_id) => self.gateways_and_subnets(&system_id),
            None => self
                .out
                .notes
                .push("Open_vSwitch external_ids:system-id is unset: no gateway is local".into()),
        }
        if !self.snap.nb_global.fip_distributed {
            if let Some(system_id) = self.snap.ovs.system_id.clone() {
                self.centralized_fips(&system_id);
            }
        }
        match hostname {
            Some(h) => self.bound_ports(h),
            None => self.out.notes.push(
                "no chassis hostname (OVS external_ids:hostname or system): no port is local"
                    .into(),
            ),
        }
        self.load_balancers();
        // Every IP has one slot (see `expose`): sort the (IP, slot) pairs,
        // not the exposures, and move each exposure once, into the map.
        // Both vectors are sized up front: a filtered collect grows by
        // doubling, copying the exposures again at each step.
        let mut order: Vec<(IpAddr, u32)> = Vec::with_capacity(self.exposed.len());
        order.extend(
            self.exposed
                .iter()
                .enumerate()
                .filter_map(|(i, e)| Some((e.as_ref()?.ip, i as u32))),
        );
        order.sort_unstable();
        let mut slots = self.exposed;
        let mut sorted = Vec::with_capacity(order.len());
        sorted.extend(
            order
                .into_iter()
                .filter_map(|(ip, i)| Some((ip, slots[i as usize].take()?))),
        );
        // From a vector, the map reuses it for its sort check and builds in bulk.
        self.out.exposed = sorted.into_iter().collect();
        (self.out, self.reads)
    }

    fn tenant_exposure(&self) -> bool {
        self.cfg.default.expose_tenant_networks || self.cfg.default.expose_ipv6_gua_tenant_networks
    }

    fn subnet_method(&self) -> bool {
        self.cfg.default.advertisement_method_tenant_networks == AdvertisementMethod::Subnet
    }

    /// Per bridge mapping: the bridge, its VLAN devices and the MAC-tweak
    /// flows for the provnet patch ports already on the bridge.
    fn base_wiring(&mut self) {
        for m in &self.snap.ovs.bridge_mappings {
            let mut vlans: BTreeSet<u16> = BTreeSet::new();
            for ln in self.snap.localnets_on_physnet(&m.network) {
                if let Some(tag) = ln.tag {
                    vlans.insert(tag);
                }
            }
            let mac_tweak_ports = self
                .snap
                .ovs
                .bridge_ports
                .get(m.bridge.as_str())
                .into_iter()
                .flatten()
                .filter(|p| p.starts_with("patch-provnet-"))
                .cloned()
                .collect();
            self.bridge_slot
                .entry(m.bridge.clone())
                .or_insert(self.out.bridges.len());
            self.out.bridges.push(BridgeWiring {
                bridge: m.bridge.clone(),
                index: m.index,
                network: m.network.clone(),
                vlans: vlans
                    .into_iter()
                    .map(|vlan| VlanDevice {
                        dev: vlan_device(&m.bridge, vlan),
                        vlan,
                    })
                    .collect(),
                mac_tweak_ports,
            });
        }
    }

    /// The provider wiring of switch `switch`, or `None` when it has no
    /// localnet or its physical network is not mapped here.
    fn provider(&mut self, switch: &'a str) -> Option<Rc<Provider<'a>>> {
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

    fn provider_uncached(&mut self, switch: &'a str) -> Option<Rc<Provider<'a>>> {
        if let Some(p) = self.providers.get(switch) {
            return p.clone();
        }
        let snap = self.snap;
        let p = snap.localnet_of_switch(switch).and_then(|ln| {
            let physnet = ln.localnet_network.as_deref()?;
            let m = snap.ovs.bridge_for_network(physnet)?;
            Some(Rc::new(Provider {
                localnet: &ln.name,
                target: Arc::new(WireTarget {
                    bridge: m.bridge.clone(),
                    vlan: ln.tag,
                    dev: ln
                        .tag
                        .map(|v| vlan_device(&m.bridge, v))
                        .unwrap_or_else(|| m.bridge.clone()),
                }),
                flow_checked: Cell::new(false),
            }))
        });
        self.providers.insert(switch, p.clone());
        p
    }

    /// Wires and announces `ips` through `provider` (upstream
    /// `_expose_provider_port`), and asks for the MAC-tweak flow of the
    /// localnet's patch port if OVS has it.
    fn expose_provider(
        &mut self,
        ips: &[IpAddr],
        lladdr: Option<MacAddr>,
        provider: &Provider<'a>,
        proxy_cidrs: &[IpNet],
        class: Class,
        source: RowRef,
    ) {
        let proxy_ndp = proxy_ndp_networks(proxy_cidrs);
        for &ip in ips {
            self.expose(
                ip,
                class,
                Some(IpWiring {
                    target: provider.target.clone(),
                    lladdr,
                    proxy_ndp: proxy_ndp.clone(),
                }),
                source,
            );
        }
        if provider.flow_checked.replace(true) {
            return;
        }
        self.out.ask_mac_tweak(
            &self.snap.ovs,
            &provider.target.bridge,
            provider.localnet,
            source,
        );
    }

    fn expose(&mut self, ip: IpAddr, class: Class, wiring: Option<IpWiring>, source: RowRef) {
        match self.exposed_at.entry(IpKey(ip)) {
            // A later exposure of the same IP replaces the wiring, as
            // upstream's `ip neigh replace` would; the first class stays.
            Entry::Occupied(at) => {
                self.reads.contested.insert(ip);
                if let (Some(wiring), Some(e)) = (wiring, &mut self.exposed[*at.get() as usize]) {
                    e.wiring = Some(wiring);
                }
            }
            Entry::Vacant(at) => {
                at.insert(self.exposed.len() as u32);
                self.exposed.push(Some(ExposedIp {
                    ip,
                    class,
                    wiring,
                    source,
                }));
            }
        }
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
            self.expose_provider(
                &ips,
                Some(lrp.mac),
                &provider,
                &lrp.networks,
                Class::Gateway,
                source,
            );
            if let Some(router) = lrp.router.as_deref() {
                self.gateways.insert(router, LocalGateway { provider, ips });
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
        if self.allowed_scopes.is_empty() {
            return true;
        }
        let scope = match ip {
            IpAddr::V4(_) => scopes.0,
            IpAddr::V6(_) => scopes.1,
        };
        scope.is_some_and(|s| self.allowed_scopes.contains(s))
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

        if self.tenant_exposure() {
            let subnet = self.subnet_method();
            let candidates: Vec<IpNet> = cidrs
                .iter()
                .map(|c| if subnet { c.trunc() } else { *c })
                .filter(|c| {
                    self.cfg.default.expose_tenant_networks || neutron::is_ipv6_gua(c.addr())
                })
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
                    let via = gw
                        .ips
                        .iter()
                        .copied()
                        .find(|g| g.is_ipv6() == rule_dst.addr().is_ipv6());
                    self.out.tenant_subnets.push(TenantSubnet {
                        rule_dst,
                        net: rule_dst.trunc(),
                        via,
                        bridge: gw.provider.target.bridge.clone(),
                        dev: gw.provider.target.dev.clone(),
                        vrf_route: subnet,
                        router: router.to_string(),
                    });
                    self.local_tenant_networks.insert(network);
                }
            }
        }

        if self.subnet_method() {
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
        if self.subnet_method() {
            return;
        }
        let wanted = self.cfg.default.expose_tenant_networks
            || (self.cfg.default.expose_ipv6_gua_tenant_networks && neutron::is_ipv6_gua(ip));
        if wanted {
            self.expose(ip, Class::TenantVm, None, source);
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
        self.expose_provider(&[ip], Some(mac), &provider, &[], class, source);
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
                    self.out
                        .notes
                        .push(format!("{source} has no neutron:fip_network_id"));
                    continue;
                };
                if let Some(p) = &nat.logical_port {
                    self.reads.lsp_names.insert(p.clone());
                }
                let Some(port) = nat.logical_port.as_deref().and_then(|p| snap.lsp(p)) else {
                    self.out
                        .notes
                        .push(format!("{source} has no existing logical_port"));
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
        self.expose_provider(
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
                self.expose_provider(&[fip], None, &gw.provider, &[], Class::Lb, source);
            }
            return;
        }
        let (Some(vip), Some(_), Some(vip_port)) =
            (lb.vip, lb.lr_ref.as_deref(), lb.vip_port.as_deref())
        else {
            self.out.notes.push(format!(
                "{source} lacks neutron:vip, lr_ref or neutron:vip_port_id"
            ));
            return;
        };
        self.reads.lsp_names.insert(vip_port.to_string());
        let Some(vip_lsp) = snap.lsp(vip_port) else {
            self.out
                .notes
                .push(format!("{source}: VIP port {vip_port} not found"));
            return;
        };
        match vip_lsp.network.as_deref() {
            Some(net) if self.local_tenant_networks.contains(net) => {
                self.expose_tenant_ip(vip, source)
            }
            Some(net) => {
                if let Some(provider) = self.provider(net) {
                    self.expose_provider(&[vip], None, &provider, &[], Class::Lb, source);
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
