//! `ovn_bgp_driver` (the SB driver) with `exposing_method = underlay`: what
//! upstream's `OVNBGPDriver.sync()` would leave on the node, computed from
//! the OVN_Southbound rows, as a pure function.
//!
//! The chassis is the OVS `system-id` (a Port_Binding is local when its
//! `chassis` row is named so). Differences from the NB driver that upstream
//! has and we keep: provider VM IPs get a rule and a route but no permanent
//! neighbour (only gateway ports carry their MAC), and tenant VM IPs behind
//! a local gateway are announced when bound to any chassis.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

use ipnet::IpNet;
use obgp_config::{AdvertisementMethod, Config};
use obgp_netmodel::{Class, MacAddr};
use obgp_ovn::hash::FastHash;
use obgp_ovn::{neutron, PbMac, PbType, PortBinding, SbLoadBalancer, Snapshot};
use obgp_ovsdb_data::Uuid;

use crate::model::{
    proxy_ndp_networks, vlan_device, BridgeWiring, Desired, ExposedIp, IpWiring, RowRef,
    TenantSubnet, VlanDevice, WireTarget,
};

/// Prefix of a gateway chassis-redirect port: `cr-lrp-<lrp id>`.
const CR_LRP_PREFIX: &str = "cr-lrp-";
/// `neutron:port_name` prefix of an OVN LB VIP port: `ovn-lb-vip-<lb name>`.
const LB_VIP_PORT_PREFIX: &str = "ovn-lb-vip-";

fn pb_ref(p: &PortBinding) -> RowRef {
    RowRef {
        table: PortBinding::TABLE,
        uuid: p.uuid,
    }
}

/// Where a provider datapath (one with a localnet mapped here) lands.
#[derive(Clone, Debug)]
struct Provider<'a> {
    /// The localnet port (`provnet-<id>`): its patch port is
    /// `patch-<name>-to-br-int`.
    localnet: &'a str,
    target: Arc<WireTarget>,
}

/// A gateway (cr-lrp) bound here on a provider network.
#[derive(Debug)]
struct LocalGateway<'a> {
    cr_lrp: &'a PortBinding,
    router_datapath: Uuid,
    provider_datapath: Uuid,
    provider: Provider<'a>,
    /// The gateway's IPs (first of each family is the tenant routes' via).
    ips: Vec<IpAddr>,
}

pub(crate) struct SbUnderlay<'a> {
    snap: &'a Snapshot,
    cfg: &'a Config,
    out: Desired,
    exposed: BTreeMap<IpAddr, ExposedIp>,
    allowed_scopes: HashSet<&'a str>,
    /// Wiring target per datapath (`None`: not a provider mapped here).
    providers: HashMap<Uuid, Option<Provider<'a>>, FastHash>,
    /// Localnets whose MAC-tweak flow was already asked for.
    flow_checked: HashSet<&'a str>,
}

impl<'a> SbUnderlay<'a> {
    pub(crate) fn new(snap: &'a Snapshot, cfg: &'a Config, base: Desired) -> Self {
        SbUnderlay {
            snap,
            cfg,
            out: base,
            exposed: BTreeMap::new(),
            providers: HashMap::default(),
            flow_checked: HashSet::new(),
            allowed_scopes: cfg
                .default
                .address_scopes
                .iter()
                .flatten()
                .map(String::as_str)
                .collect(),
        }
    }

    pub(crate) fn run(mut self) -> Desired {
        self.base_wiring();
        let Some(system_id) = self.snap.ovs.system_id.clone() else {
            self.out
                .notes
                .push("Open_vSwitch external_ids:system-id is unset: no port is local".into());
            return self.finish();
        };
        let sb = self.snap.sb();
        let mut gateways = Vec::new();
        for pb in sb.ports_on_chassis(&system_id) {
            match pb.kind {
                PbType::Vm | PbType::Virtual => self.bound_vif(pb),
                PbType::ChassisRedirect if pb.logical_port.starts_with("cr-") => {
                    if let Some(gw) = self.gateway(pb) {
                        gateways.push(gw);
                    }
                }
                _ => {}
            }
        }
        for gw in &gateways {
            self.gateway_fips(gw, &system_id);
            self.tenant_networks(gw);
            self.provider_load_balancers(gw);
        }
        self.finish()
    }

    fn finish(mut self) -> Desired {
        self.out.exposed = self.exposed;
        self.out
    }

    fn tenant_exposure(&self) -> bool {
        self.cfg.default.expose_tenant_networks || self.cfg.default.expose_ipv6_gua_tenant_networks
    }

    /// Per bridge mapping: the bridge, the VLAN devices of the tagged
    /// localnets of its network, and the MAC-tweak flows for the
    /// `patch-provnet-*` ports on it.
    fn base_wiring(&mut self) {
        let snap = self.snap;
        for m in &snap.ovs.bridge_mappings {
            let vlans: BTreeSet<u16> = snap
                .sb()
                .localnets_on_network(&m.network)
                .filter_map(|ln| ln.tag)
                .collect();
            let mac_tweak_ports = snap
                .ovs
                .bridge_ports
                .get(m.bridge.as_str())
                .into_iter()
                .flatten()
                .filter(|p| p.starts_with("patch-provnet-"))
                .cloned()
                .collect();
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

    /// Whether datapath `dp` has a localnet port at all (upstream
    /// `is_provider_network`), mapped here or not.
    fn is_provider(&self, dp: Uuid) -> bool {
        self.snap.sb().localnets_of_datapath(dp).next().is_some()
    }

    /// The wiring target of datapath `dp`: its first localnet whose
    /// network is in `ovn-bridge-mappings` (upstream `_get_bridge_for_datapath`).
    fn provider(&mut self, dp: Uuid) -> Option<Provider<'a>> {
        if let Some(p) = self.providers.get(&dp) {
            return p.clone();
        }
        let p = self.find_provider(dp);
        self.providers.insert(dp, p.clone());
        p
    }

    fn find_provider(&self, dp: Uuid) -> Option<Provider<'a>> {
        let snap = self.snap;
        let ln = snap
            .sb()
            .localnet_of_datapath(dp, |net| snap.ovs.bridge_for_network(net).is_some())?;
        let m = snap.ovs.bridge_for_network(ln.network_name.as_deref()?)?;
        Some(Provider {
            localnet: &ln.logical_port,
            target: Arc::new(WireTarget {
                bridge: m.bridge.clone(),
                vlan: ln.tag,
                dev: ln
                    .tag
                    .map(|v| vlan_device(&m.bridge, v))
                    .unwrap_or_else(|| m.bridge.clone()),
            }),
        })
    }

    /// The first exposure of an IP wins: upstream's later re-exposures in
    /// the same sync (a gateway IP again through its NAT addresses) wire
    /// without a MAC and leave the first neighbour in place.
    fn expose(&mut self, ip: IpAddr, class: Class, wiring: Option<IpWiring>, source: RowRef) {
        self.exposed.entry(ip).or_insert(ExposedIp {
            ip,
            class,
            wiring,
            source,
        });
    }

    /// Upstream `_expose_provider_port`: rule, route (and neighbour when
    /// `lladdr` is given, proxy NDP for the IPv6 `proxy_cidrs`) per IP, and
    /// the MAC-tweak flow of the localnet's patch port if OVS has it.
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
        if !self.flow_checked.insert(provider.localnet) {
            return;
        }
        self.out.ask_mac_tweak(
            &self.snap.ovs,
            &provider.target.bridge,
            provider.localnet,
            source,
        );
    }

    /// A VM or virtual port bound here (upstream `_ensure_port_exposed` and
    /// `_expose_ip`): on a provider network its own IPs, else the FIP that
    /// a router's NAT addresses give it.
    fn bound_vif(&mut self, pb: &'a PortBinding) {
        let Some(dp) = pb.datapath else {
            return;
        };
        let provider_network = self.is_provider(dp);
        let ips = match &pb.mac {
            PbMac::Empty | PbMac::Router => return,
            // Config-drive ports: their IPs are in `neutron:cidrs` (pack
            // § 2.3; upstream's SB sync skips them, docs/defects.md).
            PbMac::Unknown => pb.vm_ips(),
            PbMac::Addresses { ips, .. } if ips.is_empty() => return,
            PbMac::Addresses { ips, .. } => ips.iter().map(IpNet::addr).collect(),
        };
        if provider_network {
            if ips.is_empty() {
                return;
            }
            let Some(provider) = self.provider(dp) else {
                return;
            };
            // Amphora VIPs (virtual ports) need proxy NDP for their subnet.
            let proxy: &[IpNet] = if pb.kind == PbType::Virtual {
                &pb.cidrs
            } else {
                &[]
            };
            self.expose_provider(&ips, None, &provider, proxy, Class::Vm, pb_ref(pb));
            return;
        }
        // Upstream `get_fip_associated`: the first NAT address entry naming
        // the port, its first IP, on the patch port's datapath.
        let sb = self.snap.sb();
        let Some((patch, nat)) = sb.nat_addresses_of(&pb.logical_port).next() else {
            return;
        };
        let (Some(&fip), Some(fip_dp)) = (nat.ips.first(), patch.datapath) else {
            return;
        };
        if !self.is_provider(fip_dp) {
            return;
        }
        if let Some(provider) = self.provider(fip_dp) {
            self.expose_provider(&[fip], None, &provider, &[], Class::Fip, pb_ref(patch));
        }
    }

    /// A cr-lrp bound here: its IPs with its MAC on the provider network of
    /// its gateway port (upstream `_expose_ip` for chassisredirect).
    fn gateway(&mut self, cr: &'a PortBinding) -> Option<LocalGateway<'a>> {
        let sb = self.snap.sb();
        let gw_port = cr.logical_port.split_once(CR_LRP_PREFIX)?.1;
        let provider_dp = sb.port(gw_port)?.datapath?;
        if !self.is_provider(provider_dp) {
            return None;
        }
        let provider = self.provider(provider_dp)?;
        let PbMac::Addresses { mac, ips: nets } = &cr.mac else {
            self.out.notes.push(format!(
                "{} has no \"<mac> <ip>...\" mac: gateway not exposed",
                pb_ref(cr)
            ));
            return None;
        };
        let ips: Vec<IpAddr> = nets.iter().map(IpNet::addr).collect();
        self.expose_provider(
            &ips,
            Some(*mac),
            &provider,
            nets,
            Class::Gateway,
            pb_ref(cr),
        );
        Some(LocalGateway {
            cr_lrp: cr,
            router_datapath: cr.datapath?,
            provider_datapath: provider_dp,
            provider,
            ips,
        })
    }

    /// FIPs of VMs on this chassis, from the gateway port's NAT addresses
    /// (upstream `get_cr_lrp_nat_addresses_info`).
    fn gateway_fips(&mut self, gw: &LocalGateway<'a>, system_id: &str) {
        let sb = self.snap.sb();
        let Some(name) = gw.cr_lrp.logical_port.split_once(CR_LRP_PREFIX) else {
            return;
        };
        let Some(patch) = sb.port(name.1) else {
            return;
        };
        let Some(dp) = patch.datapath else {
            return;
        };
        if !self.is_provider(dp) {
            return;
        }
        let Some(provider) = self.provider(dp) else {
            return;
        };
        for nat in &patch.nat_addresses {
            let local = sb
                .port(&nat.resident_port)
                .is_some_and(|p| p.chassis.as_deref() == Some(system_id));
            if !local {
                continue;
            }
            let fips: Vec<IpAddr> = nat
                .ips
                .iter()
                .copied()
                .filter(|ip| !gw.ips.contains(ip))
                .collect();
            self.expose_provider(&fips, None, &provider, &[], Class::Fip, pb_ref(patch));
        }
    }

    /// OVN LB VIPs on the gateway's provider network whose load balancer
    /// sits behind this gateway's router (upstream
    /// `get_provider_ovn_lbs_on_cr_lrp`, `_expose_ovn_lb_on_provider`): the
    /// VIP port's first `neutron:cidrs` IP, wired without a neighbour.
    fn provider_load_balancers(&mut self, gw: &LocalGateway<'a>) {
        let sb = self.snap.sb();
        for vip_port in sb.lb_vip_ports_on_datapath(gw.provider_datapath) {
            let Some(vip) = vip_port.cidrs.first().map(IpNet::addr) else {
                continue;
            };
            let Some(lb_name) = vip_port
                .port_name
                .as_deref()
                .and_then(|n| n.strip_prefix(LB_VIP_PORT_PREFIX))
                .filter(|n| !n.is_empty())
            else {
                continue;
            };
            let Some(lb) = sb.load_balancer(lb_name) else {
                continue;
            };
            let behind_router = if lb.router_datapaths.is_empty() {
                // Upstream assumes every member is behind one router and
                // checks the first switch datapath's router ports.
                lb.switch_datapaths.first().is_some_and(|&dp| {
                    sb.ports_on_datapath(dp)
                        .filter(|p| p.kind == PbType::Patch)
                        .filter_map(|p| p.peer.as_deref())
                        .any(|peer| {
                            sb.port(peer).and_then(|p| p.datapath) == Some(gw.router_datapath)
                        })
                })
            } else {
                lb.router_datapaths.contains(&gw.router_datapath)
            };
            if behind_router {
                let source = RowRef {
                    table: SbLoadBalancer::TABLE,
                    uuid: lb.uuid,
                };
                let provider = gw.provider.clone();
                self.expose_provider(&[vip], None, &provider, &[], Class::Lb, source);
            }
        }
    }

    fn scope_allowed(&self, ip: IpAddr, peer: Option<&PortBinding>) -> bool {
        if self.allowed_scopes.is_empty() {
            return true;
        }
        peer.and_then(|p| p.addr_scope_for(ip))
            .is_some_and(|s| self.allowed_scopes.contains(s))
    }

    /// The router's other ports (`lrp-*` patch ports of its datapath):
    /// each address is a tenant subnet routed through the gateway, and the
    /// subnet's bound VM IPs are announced (upstream `_process_lrp_port`,
    /// `_expose_lrp_port`, `_expose_tenant_port`). Unlike upstream, which
    /// reads only the first address, every address of the port counts.
    fn tenant_networks(&mut self, gw: &LocalGateway<'a>) {
        if !self.tenant_exposure() {
            return;
        }
        let sb = self.snap.sb();
        let gw_lrp = gw.cr_lrp.logical_port.strip_prefix("cr-");
        for lrp in sb.ports_on_datapath(gw.router_datapath) {
            if lrp.kind != PbType::Patch
                || lrp.chassis.is_some()
                || !lrp.logical_port.starts_with("lrp-")
                || lrp.has_chassis_redirect_option
                || Some(lrp.logical_port.as_str()) == gw_lrp
            {
                continue;
            }
            let PbMac::Addresses { ips: nets, .. } = &lrp.mac else {
                continue;
            };
            // No peer yet: the router interface is being created or removed.
            let Some(peer_name) = lrp.peer.as_deref() else {
                continue;
            };
            let peer = sb.port(peer_name);
            for &net in nets {
                if self.scope_allowed(net.addr(), peer) {
                    self.tenant_subnet(gw, net, peer.and_then(|p| p.datapath));
                }
            }
        }
    }

    fn tenant_subnet(&mut self, gw: &LocalGateway<'a>, net: IpNet, subnet_datapath: Option<Uuid>) {
        if !self.cfg.default.expose_tenant_networks && !neutron::is_ipv6_gua(net.addr()) {
            return;
        }
        if gw.ips.contains(&net.addr()) {
            return;
        }
        let subnet_method =
            self.cfg.default.advertisement_method_tenant_networks == AdvertisementMethod::Subnet;
        self.out.tenant_subnets.push(TenantSubnet {
            rule_dst: net,
            net: net.trunc(),
            via: gw
                .ips
                .iter()
                .copied()
                .find(|g| g.is_ipv6() == net.addr().is_ipv6()),
            bridge: gw.provider.target.bridge.clone(),
            dev: gw.provider.target.dev.clone(),
            vrf_route: subnet_method,
            router: gw.router_datapath.to_string(),
        });
        let Some(dp) = subnet_datapath else {
            return;
        };
        let v6 = net.addr().is_ipv6();
        for port in self.snap.sb().ports_on_datapath(dp) {
            self.tenant_port(port, v6);
        }
    }

    /// Upstream `_expose_tenant_port`: announce (no wiring) the IPs of
    /// `port` in the router interface's family; VM ports must be bound to
    /// some chassis. A port without MAC, chassis or `up` is an OVN LB VIP:
    /// its first `neutron:cidrs` IP is announced. Only in the host method
    /// (pack § 3.2): the subnet method announces the subnet route instead.
    fn tenant_port(&mut self, port: &'a PortBinding, v6: bool) {
        if self.cfg.default.advertisement_method_tenant_networks == AdvertisementMethod::Subnet {
            return;
        }
        if port.mac == PbMac::Empty {
            if port.chassis.is_none() && port.up == Some(false) {
                if let Some(vip) = port.cidrs.first() {
                    self.expose(vip.addr(), Class::Lb, None, pb_ref(port));
                }
            }
            return;
        }
        let bound_vm = match port.kind {
            PbType::Vm => port.chassis.is_some(),
            PbType::Virtual => true,
            _ => false,
        };
        if !bound_vm {
            return;
        }
        for ip in port.vm_ips() {
            if ip.is_ipv6() == v6 {
                self.expose(ip, Class::TenantVm, None, pb_ref(port));
            }
        }
    }
}
