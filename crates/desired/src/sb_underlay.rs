//! `ovn_bgp_driver` (the SB driver) with `exposing_method = underlay`: what
//! upstream's `OVNBGPDriver.sync()` would leave on the node, computed from
//! the OVN_Southbound rows, as a pure function.
//!
//! The chassis is the OVS `system-id` (a Port_Binding is local when its
//! `chassis` row is named so). Differences from the NB driver that upstream
//! has and we keep: provider VM IPs get a rule and a route but no permanent
//! neighbour (only gateway ports carry their MAC), and tenant VM IPs behind
//! a local gateway are announced when bound to any chassis. How each
//! exposure is wired is [`crate::wiring`]'s, under [`POLICY`].

use std::collections::HashMap;
use std::net::IpAddr;
use std::rc::Rc;

use ipnet::IpNet;
use obgp_config::Config;
use obgp_ovn::hash::FastHash;
use obgp_ovn::{PbMac, PbType, PortBinding, SbLoadBalancer, Snapshot};
use obgp_ovsdb_data::Uuid;

use crate::model::{Desired, RowRef};
use crate::provenance::{ExposeRule, Origin, Reason, Rejection, Trace};
use crate::wiring::{
    localnet_target, DriverPolicy, Gateway, MacTweakOnce, NoProvider, ProviderNetwork, SameIp,
    Wiring,
};

/// The SB driver's policy. The first exposure of an IP wins: upstream's
/// later re-exposures in the same sync (a gateway IP again through its NAT
/// addresses) wire without a MAC and leave the first neighbour in place.
/// The MAC-tweak flow is asked for once per localnet port.
pub(crate) const POLICY: DriverPolicy = DriverPolicy {
    same_ip: SameIp::FirstWins,
    mac_tweak_once: MacTweakOnce::PerLocalnet,
};

use obgp_ovn::neutron::CR_LRP_PREFIX;
/// `neutron:port_name` prefix of an OVN LB VIP port: `ovn-lb-vip-<lb name>`.
const LB_VIP_PORT_PREFIX: &str = "ovn-lb-vip-";

/// Why datapath `dp` has no localnet mapped here (the caller found none):
/// none at all, or the first one's physical network is not mapped.
pub(crate) fn unmapped_localnet(snap: &Snapshot, dp: Uuid) -> NoProvider<'_> {
    let first = snap.sb().localnets_of_datapath(dp).next();
    first.map_or(NoProvider::NoLocalnet, |ln| {
        match ln.network_name.as_deref() {
            Some(physnet) => NoProvider::Unmapped {
                localnet: &ln.logical_port,
                physnet,
            },
            None => NoProvider::NoPhysnet {
                localnet: &ln.logical_port,
            },
        }
    })
}

pub(crate) fn pb_ref(p: &PortBinding) -> RowRef {
    RowRef {
        table: PortBinding::TABLE,
        uuid: p.uuid,
    }
}

/// A gateway (cr-lrp) bound here on a provider network.
#[derive(Debug)]
struct LocalGateway<'a> {
    cr_lrp: &'a PortBinding,
    router_datapath: Uuid,
    provider_datapath: Uuid,
    /// Its provider network and IPs.
    gw: Gateway<'a>,
}

pub(crate) struct SbUnderlay<'a> {
    snap: &'a Snapshot,
    w: Wiring<'a>,
    /// Wiring target per datapath (or why it is none).
    providers: HashMap<Uuid, Provider<'a>, FastHash>,
}

/// A provider network looked up by datapath, or why there is none.
type Provider<'a> = Result<Rc<ProviderNetwork<'a>>, NoProvider<'a>>;

impl<'a> SbUnderlay<'a> {
    pub(crate) fn new(snap: &'a Snapshot, cfg: &'a Config, base: Desired, trace: Trace) -> Self {
        SbUnderlay {
            snap,
            w: Wiring::new(&snap.ovs, cfg, POLICY, base, trace),
            providers: HashMap::default(),
        }
    }

    /// Records, when tracing, that `row` (or its `ip`) is not exposed
    /// because datapath `dp` gives no provider network.
    fn reject_provider(&mut self, row: RowRef, ip: Option<IpAddr>, dp: Uuid, why: NoProvider) {
        let ovs = &self.snap.ovs;
        self.w.trace.reject(|| {
            let r = Rejection::of(row, why.reason(ovs, &dp.to_string()));
            match ip {
                Some(ip) => r.ip(ip),
                None => r,
            }
        });
    }

    pub(crate) fn run(mut self) -> (Desired, Trace) {
        let snap = self.snap;
        self.w.wire_bridges(|net| {
            snap.sb()
                .localnets_on_network(net)
                .filter_map(|ln| ln.tag)
                .collect()
        });
        let Some(system_id) = self.snap.ovs.system_id.clone() else {
            self.w
                .note("Open_vSwitch external_ids:system-id is unset: no port is local".into());
            self.w.trace.reject(|| Rejection::node(Reason::NoSystemId));
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

    fn finish(self) -> (Desired, Trace) {
        let (desired, _, trace) = self.w.finish();
        (desired, trace)
    }

    /// Whether datapath `dp` has a localnet port at all (upstream
    /// `is_provider_network`), mapped here or not.
    fn is_provider(&self, dp: Uuid) -> bool {
        self.snap.sb().localnets_of_datapath(dp).next().is_some()
    }

    /// The wiring target of datapath `dp`: its first localnet whose
    /// network is in `ovn-bridge-mappings` (upstream `_get_bridge_for_datapath`),
    /// or why there is none.
    fn provider(&mut self, dp: Uuid) -> Provider<'a> {
        if let Some(p) = self.providers.get(&dp) {
            return p.clone();
        }
        let p = self.find_provider(dp);
        self.providers.insert(dp, p.clone());
        p
    }

    fn find_provider(&self, dp: Uuid) -> Provider<'a> {
        let sb = self.snap.sb();
        let ovs = &self.snap.ovs;
        let Some(ln) = sb.localnet_of_datapath(dp, |net| ovs.bridge_for_network(net).is_some())
        else {
            return Err(unmapped_localnet(self.snap, dp));
        };
        let target = localnet_target(ovs, &ln.logical_port, ln.network_name.as_deref(), ln.tag)?;
        Ok(Rc::new(ProviderNetwork::new(&ln.logical_port, target)))
    }

    /// A VM or virtual port bound here (upstream `_ensure_port_exposed` and
    /// `_expose_ip`): on a provider network its own IPs, else the FIP that
    /// a router's NAT addresses give it.
    fn bound_vif(&mut self, pb: &'a PortBinding) {
        let row = pb_ref(pb);
        let Some(dp) = pb.datapath else {
            return;
        };
        let provider_network = self.is_provider(dp);
        let ips = match &pb.mac {
            PbMac::Empty | PbMac::Router => {
                self.w
                    .trace
                    .reject(|| Rejection::of(row, Reason::NoAddresses));
                return;
            }
            // Config-drive ports: their IPs are in `neutron:cidrs` (pack
            // § 2.3; upstream's SB sync skips them, docs/defects.md).
            PbMac::Unknown => pb.vm_ips(),
            PbMac::Addresses { ips, .. } if ips.is_empty() => {
                self.w
                    .trace
                    .reject(|| Rejection::of(row, Reason::NoAddresses));
                return;
            }
            PbMac::Addresses { ips, .. } => ips.iter().map(IpNet::addr).collect(),
        };
        if provider_network {
            if ips.is_empty() {
                self.w
                    .trace
                    .reject(|| Rejection::of(row, Reason::NoAddresses));
                return;
            }
            let provider = match self.provider(dp) {
                Ok(p) => p,
                Err(why) => return self.reject_provider(row, None, dp, why),
            };
            // Amphora VIPs (virtual ports) need proxy NDP for their subnet.
            let proxy: &[IpNet] = if pb.kind == PbType::Virtual {
                &pb.cidrs
            } else {
                &[]
            };
            let origin = Origin::new(ExposeRule::ProviderVm, row);
            self.w.expose_provider(&ips, None, &provider, proxy, origin);
            return;
        }
        // Upstream `get_fip_associated`: the first NAT address entry naming
        // the port, its first IP, on the patch port's datapath.
        let sb = self.snap.sb();
        let Some((patch, nat)) = sb.nat_addresses_of(&pb.logical_port).next() else {
            self.w
                .trace
                .reject(|| Rejection::of(row, Reason::NoNatAddressFip).network(dp.to_string()));
            return;
        };
        let (Some(&fip), Some(fip_dp)) = (nat.ips.first(), patch.datapath) else {
            return;
        };
        if !self.is_provider(fip_dp) {
            self.reject_provider(row, Some(fip), fip_dp, NoProvider::NoLocalnet);
            return;
        }
        match self.provider(fip_dp) {
            Ok(provider) => {
                let origin = Origin::new(ExposeRule::NatAddressFip, pb_ref(patch)).via(row);
                self.w.expose_provider(&[fip], None, &provider, &[], origin);
            }
            Err(why) => self.reject_provider(row, Some(fip), fip_dp, why),
        }
    }

    /// A cr-lrp bound here: its IPs with its MAC on the provider network of
    /// its gateway port (upstream `_expose_ip` for chassisredirect).
    fn gateway(&mut self, cr: &'a PortBinding) -> Option<LocalGateway<'a>> {
        let sb = self.snap.sb();
        let row = pb_ref(cr);
        let gw_port = cr.logical_port.split_once(CR_LRP_PREFIX)?.1;
        let Some(gw_pb) = sb.port(gw_port) else {
            self.w.trace.reject(|| {
                let port = gw_port.to_string();
                Rejection::of(row, Reason::GatewayPortMissing { port })
            });
            return None;
        };
        let provider_dp = gw_pb.datapath?;
        if !self.is_provider(provider_dp) {
            self.reject_provider(row, None, provider_dp, NoProvider::NoLocalnet);
            return None;
        }
        let provider = match self.provider(provider_dp) {
            Ok(p) => p,
            Err(why) => {
                self.reject_provider(row, None, provider_dp, why);
                return None;
            }
        };
        let PbMac::Addresses { mac, ips: nets } = &cr.mac else {
            self.w.note(format!(
                "{} has no \"<mac> <ip>...\" mac: gateway not exposed",
                pb_ref(cr)
            ));
            self.w
                .trace
                .reject(|| Rejection::of(row, Reason::NoAddresses));
            return None;
        };
        let ips: Vec<IpAddr> = nets.iter().map(IpNet::addr).collect();
        let origin = Origin::new(ExposeRule::Gateway, row);
        self.w
            .expose_provider(&ips, Some(*mac), &provider, nets, origin);
        Some(LocalGateway {
            cr_lrp: cr,
            router_datapath: cr.datapath?,
            provider_datapath: provider_dp,
            gw: Gateway { provider, ips, row },
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
        let Ok(provider) = self.provider(dp) else {
            return;
        };
        for nat in &patch.nat_addresses {
            let Some(resident) = sb
                .port(&nat.resident_port)
                .filter(|p| p.chassis.as_deref() == Some(system_id))
            else {
                continue;
            };
            let fips: Vec<IpAddr> = nat
                .ips
                .iter()
                .copied()
                .filter(|ip| !gw.gw.ips.contains(ip))
                .collect();
            let origin =
                Origin::new(ExposeRule::NatAddressFip, pb_ref(patch)).via(pb_ref(resident));
            self.w.expose_provider(&fips, None, &provider, &[], origin);
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
            let source = RowRef {
                table: SbLoadBalancer::TABLE,
                uuid: lb.uuid,
            };
            if behind_router {
                let origin = Origin::new(ExposeRule::LbVip, source).via(pb_ref(vip_port));
                self.w
                    .expose_provider(&[vip], None, &gw.gw.provider, &[], origin);
            } else {
                self.w
                    .trace
                    .reject(|| Rejection::of(pb_ref(vip_port), Reason::LbNotBehindGateway).ip(vip));
            }
        }
    }

    fn scope_allowed(&self, ip: IpAddr, peer: Option<&PortBinding>) -> bool {
        self.w
            .tenant
            .allows_scope(peer.and_then(|p| p.addr_scope_for(ip)))
    }

    /// The router's other ports (`lrp-*` patch ports of its datapath):
    /// each address is a tenant subnet routed through the gateway, and the
    /// subnet's bound VM IPs are announced (upstream `_process_lrp_port`,
    /// `_expose_lrp_port`, `_expose_tenant_port`). Unlike upstream, which
    /// reads only the first address, every address of the port counts.
    fn tenant_networks(&mut self, gw: &LocalGateway<'a>) {
        if !self.w.tenant.any() {
            let row = gw.gw.row;
            self.w
                .trace
                .reject(|| Rejection::of(row, Reason::TenantNotExposed { gua_only: false }));
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
                } else if let Some(dp) = peer.and_then(|p| p.datapath) {
                    let scope = peer.and_then(|p| p.addr_scope_for(net.addr()));
                    let allowed = &self.w.tenant;
                    let reason = allowed.scope_reason(scope);
                    self.w
                        .trace
                        .reject(|| Rejection::of(pb_ref(lrp), reason()).network(dp.to_string()));
                }
            }
        }
    }

    fn tenant_subnet(&mut self, gw: &LocalGateway<'a>, net: IpNet, subnet_datapath: Option<Uuid>) {
        // Reached only with some tenant exposure on (`tenant_networks`).
        if !self.w.tenant.exposes(net.addr()) {
            if let Some(dp) = subnet_datapath {
                self.w.trace.reject(|| {
                    Rejection::of(gw.gw.row, Reason::TenantNotExposed { gua_only: true })
                        .network(dp.to_string())
                });
            }
            return;
        }
        if gw.gw.ips.contains(&net.addr()) {
            return;
        }
        self.w
            .route_tenant_subnet(&gw.gw, net, gw.router_datapath.to_string());
        let Some(dp) = subnet_datapath else {
            return;
        };
        if self.w.tenant.subnet_method() {
            let subnet = Some(net.trunc());
            self.w.trace.reject(|| {
                Rejection::of(gw.gw.row, Reason::SubnetMethod { subnet }).network(dp.to_string())
            });
            return;
        }
        let v6 = net.addr().is_ipv6();
        for port in self.snap.sb().ports_on_datapath(dp) {
            self.tenant_port(port, v6, gw.gw.row);
        }
    }

    /// Upstream `_expose_tenant_port`: announce (no wiring) the IPs of
    /// `port` in the router interface's family; VM ports must be bound to
    /// some chassis. A port without MAC, chassis or `up` is an OVN LB VIP:
    /// its first `neutron:cidrs` IP is announced. Only in the host method
    /// (pack § 3.2): the subnet method announces the subnet route instead.
    fn tenant_port(&mut self, port: &'a PortBinding, v6: bool, gateway: RowRef) {
        if port.mac == PbMac::Empty {
            if port.chassis.is_none() && port.up == Some(false) {
                if let Some(vip) = port.cidrs.first() {
                    let origin = Origin::new(ExposeRule::TenantOvnLbVip, pb_ref(port)).via(gateway);
                    self.w.announce(vip.addr(), origin);
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
            if port.kind == PbType::Vm {
                self.w
                    .trace
                    .reject(|| Rejection::of(pb_ref(port), Reason::Unbound));
            }
            return;
        }
        for ip in port.vm_ips() {
            if ip.is_ipv6() == v6 {
                let origin = Origin::new(ExposeRule::TenantVm, pb_ref(port)).via(gateway);
                self.w.announce(ip, origin);
            }
        }
    }
}
