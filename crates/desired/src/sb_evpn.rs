//! `ovn_evpn_driver` (the SB EVPN driver): what upstream's
//! `OVNEVPNDriver.sync()` would leave on the node, from the OVN_Southbound
//! rows, as a pure function.
//!
//! A router gateway (cr-lrp) bound here whose provider-side patch port is
//! annotated by networking-bgpvpn (`neutron_bgpvpn:vni` and `:as`) gets its
//! VNI: `vrf-<vni>` (table = VNI), `br-<vni>` in it, `vxlan-<vni>` in the
//! bridge, `lo-<vni>` in the VRF, and the connection to the provider
//! bridge: a veth pair `veth-vrf-<vni>` / `veth-ovs-<vni>` on a flat
//! network, the OVS internal port `vlan-<vni>` (tagged) on a VLAN network.
//! In table VNI: the gateway IPs through that connection (with the
//! gateway's MAC as permanent neighbour) and unreachable defaults. Each
//! tenant subnet of the router whose router port is annotated with the
//! same VNI and AS is routed via the gateway IP, steered into the VRF by a
//! cookie-998 flow, and its bound VM IPs go on `lo-<vni>`, where zebra
//! announces them as type-5 routes.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;
use obgp_config::Config;
use obgp_netmodel::frr::{AddVrf, Asn, RedistSource, RouteDistinguisher};
use obgp_netmodel::names::evpn as names;
use obgp_netmodel::{
    cookie, Class, DevName, Flow, FlowAction, FlowMatch, MacAddr, ProxyNeighbour, Sysctl,
};
use obgp_ovn::{BgpVpn, PbMac, PbType, PortBinding, Snapshot};
use obgp_ovsdb_data::Uuid;

use crate::evpn::{EvpnL3, EvpnPort, EvpnRoute, EvpnVni};
use crate::provenance::{ExposeRule, Origin, Reason, Rejection, Trace, Traced};
use crate::sb_underlay::{pb_ref, unmapped_localnet};
use crate::wiring::localnet_patch_port;

use obgp_ovn::neutron::CR_LRP_PREFIX;

/// The SB EVPN desired state. `local_ip` is the VXLAN source in use
/// (`evpn_local_ip`, else the node's address that the caller found on `lo`
/// or `evpn_nic`); without one no VNI can be built.
pub(crate) fn sb_evpn(
    snap: &Snapshot,
    config: &Config,
    local_ip: Option<IpAddr>,
    notes: &mut Vec<String>,
    trace: &mut Trace,
) -> EvpnL3 {
    let d = &config.default;
    let mut out = EvpnL3 {
        bridges: snap
            .ovs
            .bridge_mappings
            .iter()
            .map(|m| m.bridge.clone())
            .collect(),
        bridge_base: snap
            .ovs
            .bridge_mappings
            .iter()
            .map(|m| (m.bridge.clone(), m.index))
            .collect(),
        delete_vrf: d.delete_vrf_on_disconnect,
        steering_flows: true,
        ..EvpnL3::default()
    };
    let Some(system_id) = snap.ovs.system_id.as_deref() else {
        notes.push("Open_vSwitch external_ids:system-id is unset: no port is local".into());
        trace.reject(|| Rejection::node(Reason::NoSystemId));
        return out;
    };
    let sb = snap.sb();
    let gateways: Vec<&PortBinding> = sb
        .ports_on_chassis(system_id)
        .filter(|p| p.kind == PbType::ChassisRedirect && p.logical_port.starts_with(CR_LRP_PREFIX))
        .collect();
    if gateways.is_empty() {
        return out;
    }
    let Some(local_ip) = local_ip else {
        notes.push(
            "EVPN: no VXLAN source address (evpn_local_ip unset, no /32 on lo, no address on evpn_nic): no VNI built"
                .into(),
        );
        trace.reject(|| Rejection::node(Reason::NoVxlanSource));
        return out;
    };
    for cr in gateways {
        if let Some(v) = gateway_vni(snap, cr, local_ip, d.evpn_udp_dstport, notes, trace) {
            match out.vnis.get_mut(&v.vni) {
                None => {
                    out.vnis.insert(v.vni, v);
                }
                // A VNI shared by two routers: one VRF holds both, and it
                // stays while one of them is bound here (upstream tears it
                // down at the first withdraw).
                Some(first) => merge_router(first, v, cr, notes, trace),
            }
        }
    }
    out
}

/// Adds a second router's gateway and subnets to the VNI the first one
/// built, when it reaches the VRF through the same connection.
fn merge_router(
    first: &mut EvpnVni,
    v: EvpnVni,
    cr: &PortBinding,
    notes: &mut Vec<String>,
    trace: &mut Trace,
) {
    let (Some(port), Some(theirs)) = (first.ports.first_mut(), v.ports.into_iter().next()) else {
        return;
    };
    if port.vrf_end != theirs.vrf_end
        || port.ovs_bridge != theirs.ovs_bridge
        || port.vlan != theirs.vlan
    {
        notes.push(format!(
            "EVPN: {} {} asks for VNI {} on bridge {} vlan {:?}, which VNI {} already uses on bridge {} vlan {:?}: not exposed",
            PortBinding::TABLE,
            cr.uuid,
            v.vni,
            theirs.ovs_bridge,
            theirs.vlan,
            first.vni,
            port.ovs_bridge,
            port.vlan
        ));
        trace.reject(|| {
            Rejection::of(
                pb_ref(cr),
                Reason::VniWiredElsewhere {
                    vni: v.vni,
                    bridge: theirs.ovs_bridge.clone(),
                    vlan: theirs.vlan,
                    wired_bridge: port.ovs_bridge.clone(),
                    wired_vlan: port.vlan,
                },
            )
        });
        return;
    }
    for r in theirs.routes {
        if !port.routes.contains(&r) {
            port.routes.push(r);
        }
    }
    first.flows.extend(v.flows);
    first.proxy_neighbours.extend(v.proxy_neighbours);
    if let (Some((_, ips)), Some((_, more))) = (&mut first.lo, v.lo) {
        for ip in more {
            if !ips.contains(&ip) {
                ips.push(ip);
            }
        }
    }
}

/// The VNI and AS annotated on a port (upstream `get_evpn_info`: both, or
/// nothing). A bad annotation is noted with the row.
fn evpn_info<'a>(
    pb: &'a PortBinding,
    notes: &mut Vec<String>,
    trace: &mut Trace,
) -> Option<(&'a BgpVpn, u32)> {
    let info = match pb.bgpvpn.as_ref() {
        None => None,
        Some(Err(e)) => {
            notes.push(format!("{} {}: {e}", PortBinding::TABLE, pb.uuid));
            trace.reject(|| {
                let error = e.to_string();
                let r = Rejection::of(pb_ref(pb), Reason::BadAnnotation { error });
                match pb.datapath {
                    Some(dp) => r.network(dp.to_string()),
                    None => r,
                }
            });
            return None;
        }
        Some(Ok(v)) => v.asn.map(|asn| (v, asn)),
    };
    if info.is_none() {
        // Every port of its network is concerned (a router interface's
        // annotation decides for its subnet's VMs).
        trace.reject(|| {
            let r = Rejection::of(pb_ref(pb), Reason::NotAnnotated);
            match pb.datapath {
                Some(dp) => r.network(dp.to_string()),
                None => r,
            }
        });
    }
    info
}

/// A router gateway's VNI: the annotated gateway and its provider
/// network, the VNI's device names, the FRR VRF, the gateway IPs through
/// the connection, then the router's tenant subnets with that VNI. `None`
/// (with a note or a rejection) when one of them cannot be had.
fn gateway_vni(
    snap: &Snapshot,
    cr: &PortBinding,
    local_ip: IpAddr,
    udp_port: u16,
    notes: &mut Vec<String>,
    trace: &mut Trace,
) -> Option<EvpnVni> {
    let gw = annotated_gateway(snap, cr, notes, trace)?;
    let vni = gw.vpn.vni;
    let row = format!("{} {}", PortBinding::TABLE, gw.gw_port.uuid);
    let devices = vni_devices(vni, gw.vlan, &row, notes)?;
    let frr_text = vrf_frr_text(&gw, &devices.vrf, local_ip, &row, notes)?;
    let mut exposed = gateway_ips(&gw, &devices, trace);
    router_subnets(snap, &gw, &devices, &mut exposed, notes, trace);
    let sysctls = match gw.vlan {
        Some(_) => vec![Sysctl::conf(true, &devices.vrf_end, "proxy_ndp", "1")],
        None => Vec::new(),
    };
    Some(EvpnVni {
        vni,
        vrf: devices.vrf,
        bridge: devices.bridge,
        vxlan: devices.vxlan,
        local_ip,
        udp_port,
        ports: vec![EvpnPort {
            vrf_end: devices.vrf_end,
            ovs_end: devices.ovs_end,
            ovs_bridge: gw.bridge,
            vlan: gw.vlan,
            mac: None,
            patch_port: None,
            addresses: Vec::new(),
            sysctls,
            routes: exposed.routes,
        }],
        lo: Some((devices.lo, exposed.lo_ips)),
        unreachable_defaults: true,
        flows: exposed.flows,
        proxy_neighbours: exposed.proxy_neighbours,
        sysctls: Vec::new(),
        frr_text,
    })
}

/// A router gateway (cr-lrp) whose provider-side port is annotated, with
/// what its VNI is wired from.
struct AnnotatedGateway<'a> {
    cr: &'a PortBinding,
    /// The provider-side patch port the cr-lrp redirects (it carries the
    /// annotation).
    gw_port: &'a PortBinding,
    vpn: &'a BgpVpn,
    asn: u32,
    router_dp: Uuid,
    mac: MacAddr,
    gw_nets: &'a [IpNet],
    /// The provider network's localnet port, on a bridge of the mappings.
    localnet: &'a PortBinding,
    bridge: DevName,
    vlan: Option<u16>,
}

/// The cr-lrp's gateway port, its annotation, its addresses and the
/// provider network it reaches through a mapped bridge; `None` (rejected
/// with the reason) when any is missing.
fn annotated_gateway<'a>(
    snap: &'a Snapshot,
    cr: &'a PortBinding,
    notes: &mut Vec<String>,
    trace: &mut Trace,
) -> Option<AnnotatedGateway<'a>> {
    let sb = snap.sb();
    let cr_row = pb_ref(cr);
    let gw_name = cr.logical_port.strip_prefix(CR_LRP_PREFIX)?;
    let Some(gw_port) = sb.port(gw_name) else {
        trace.reject(|| {
            let port = gw_name.to_string();
            Rejection::of(cr_row, Reason::GatewayPortMissing { port })
        });
        return None;
    };
    let (vpn, asn) = evpn_info(gw_port, notes, trace)?;
    let provider_dp = gw_port.datapath?;
    let router_dp = cr.datapath?;
    let PbMac::Addresses { mac, ips: gw_nets } = &cr.mac else {
        trace.reject(|| Rejection::of(cr_row, Reason::NoAddresses));
        return None;
    };
    let Some(localnet) = sb.localnet_of_datapath(provider_dp, |net| {
        snap.ovs.bridge_for_network(net).is_some()
    }) else {
        trace.reject(|| {
            let reason =
                unmapped_localnet(snap, provider_dp).reason(&snap.ovs, &provider_dp.to_string());
            Rejection::of(cr_row, reason)
        });
        return None;
    };
    let bridge = snap
        .ovs
        .bridge_for_network(localnet.network_name.as_deref()?)?
        .bridge
        .clone();
    Some(AnnotatedGateway {
        cr,
        gw_port,
        vpn,
        asn,
        router_dp,
        mac: *mac,
        gw_nets,
        localnet,
        bridge,
        vlan: localnet.tag,
    })
}

/// The devices of one VNI, and the connection's two ends.
struct VniDevices {
    vrf: DevName,
    bridge: DevName,
    vxlan: DevName,
    lo: DevName,
    /// `vlan-<vni>` on a VLAN network, `veth-vrf-<vni>` on a flat one.
    vrf_end: DevName,
    /// `veth-ovs-<vni>` on a flat network, plugged into the provider bridge.
    ovs_end: Option<DevName>,
}

/// The VNI's device names, and whether the connection is a VLAN port or a
/// veth pair; `None` (noted) when a name would exceed 15 bytes.
fn vni_devices(
    vni: u32,
    vlan: Option<u16>,
    row: &str,
    notes: &mut Vec<String>,
) -> Option<VniDevices> {
    let (Some(vrf), Some(bridge), Some(vxlan), Some(lo)) = (
        names::vrf(vni),
        names::bridge(vni),
        names::vxlan(vni),
        names::lo(vni),
    ) else {
        notes.push(format!("{row}: VNI {vni} gives device names over 15 bytes"));
        return None;
    };
    let (vrf_end, ovs_end) = match vlan {
        Some(_) => (names::sb_vlan(vni)?, None),
        None => match names::sb_veth(vni) {
            Some((v, o)) => (v, Some(o)),
            None => {
                notes.push(format!("{row}: VNI {vni} gives veth names over 15 bytes"));
                return None;
            }
        },
    };
    Some(VniDevices {
        vrf,
        bridge,
        vxlan,
        lo,
        vrf_end,
        ovs_end,
    })
}

/// The FRR VRF stanza of the gateway's VNI; `None` (noted) when the AS or
/// the route distinguisher is not usable.
fn vrf_frr_text(
    gw: &AnnotatedGateway<'_>,
    vrf: &DevName,
    local_ip: IpAddr,
    row: &str,
    notes: &mut Vec<String>,
) -> Option<String> {
    let vpn = gw.vpn;
    let vni = vpn.vni;
    let asn = match Asn::try_from(gw.asn) {
        Ok(a) => a,
        Err(e) => {
            notes.push(format!("{row}: {e}"));
            return None;
        }
    };
    // D15 fixed: the RD's address is the VXLAN source in use, never `None`.
    let rd = match vpn.rd.first() {
        Some(rd) => *rd,
        None => match RouteDistinguisher::of_ip_and_vni(local_ip, vni) {
            Ok(rd) => rd,
            Err(e) => {
                notes.push(format!("{row}: {e}"));
                return None;
            }
        },
    };
    Some(crate::evpn::add_vrf_text(
        &AddVrf {
            vrf: vrf.clone(),
            vni,
            asn,
            redistribute: vec![RedistSource::Connected],
            rd,
            // Upstream's SB driver never reads these; the annotations are the
            // same networking-bgpvpn keys as the NB mode's (docs/evpn.md).
            route_targets: vpn.route_targets.clone(),
            import_targets: vpn.import_targets.clone(),
            export_targets: vpn.export_targets.clone(),
        },
        row,
        notes,
    ))
}

/// What a VNI routes and announces: built from the gateway's IPs, then
/// grown by each tenant subnet.
struct VniExposure {
    routes: Vec<EvpnRoute>,
    proxy_neighbours: Vec<ProxyNeighbour>,
    flows: Vec<Flow>,
    /// The bound VM IPs on `lo-<vni>`, which zebra announces.
    lo_ips: Vec<IpNet>,
}

/// The gateway IPs through the connection, with the gateway's MAC as
/// permanent neighbour, and proxy NDP for its IPv6 networks.
fn gateway_ips(gw: &AnnotatedGateway<'_>, devices: &VniDevices, trace: &mut Trace) -> VniExposure {
    let cr_row = pb_ref(gw.cr);
    for n in gw.gw_nets {
        trace.exposed(|| Traced {
            ip: n.addr(),
            origin: Origin::new(ExposeRule::Gateway, cr_row),
            vni: gw.vpn.vni,
        });
    }
    let routes: Vec<EvpnRoute> = gw
        .gw_nets
        .iter()
        .map(|n| EvpnRoute {
            dst: IpNet::from(n.addr()),
            via: None,
            lladdr: Some(gw.mac),
            class: Class::Gateway,
        })
        .collect();
    // Proxy NDP for the gateway's IPv6 networks: on the provider bridge on
    // a flat network, on `vlan-<vni>` on a VLAN one (upstream `add_ndp_proxy`).
    let ndp_dev = if gw.vlan.is_some() {
        devices.vrf_end.clone()
    } else {
        gw.bridge.clone()
    };
    let proxy_neighbours: Vec<ProxyNeighbour> = gw
        .gw_nets
        .iter()
        .filter(|n| n.addr().is_ipv6())
        .map(|n| ProxyNeighbour {
            dev: ndp_dev.clone(),
            dst: n.trunc().addr(),
        })
        .collect();
    VniExposure {
        routes,
        proxy_neighbours,
        flows: Vec::new(),
        lo_ips: Vec::new(),
    }
}

/// Each tenant subnet of the router whose switch-side port carries the
/// gateway's VNI and AS: routed via the gateway IP of its family, steered
/// into the VRF by a flow, and its bound VM IPs on `lo-<vni>`.
fn router_subnets(
    snap: &Snapshot,
    gw: &AnnotatedGateway<'_>,
    devices: &VniDevices,
    exposed: &mut VniExposure,
    notes: &mut Vec<String>,
    trace: &mut Trace,
) {
    let sb = snap.sb();
    let gw_ips: Vec<IpAddr> = gw.gw_nets.iter().map(IpNet::addr).collect();
    for lrp in sb.ports_on_datapath(gw.router_dp) {
        if lrp.kind != PbType::Patch
            || lrp.chassis.is_some()
            || lrp.has_chassis_redirect_option
            || !lrp.logical_port.starts_with("lrp-")
        {
            continue;
        }
        // The router port's switch-side peer carries the annotation.
        let Some(peer) = lrp
            .logical_port
            .strip_prefix("lrp-")
            .and_then(|n| sb.port(n))
        else {
            continue;
        };
        if !same_vni_as_gateway(gw, peer, notes, trace) {
            continue;
        }
        let PbMac::Addresses { ips: if_nets, .. } = &lrp.mac else {
            continue;
        };
        // Every address of the router port (upstream reads the first only).
        for ifnet in if_nets {
            if gw_ips.contains(&ifnet.addr()) {
                continue;
            }
            let net = ifnet.trunc();
            let v6 = net.addr().is_ipv6();
            let Some(via) = gw_ips.iter().copied().find(|g| g.is_ipv6() == v6) else {
                continue;
            };
            exposed.routes.push(EvpnRoute {
                dst: net,
                via: Some(via),
                lladdr: None,
                class: Class::Subnet,
            });
            exposed.flows.push(subnet_steering_flow(gw, devices, net));
            // The bound VM (and virtual) ports of that subnet's family.
            let Some(tenant_dp) = peer.datapath else {
                continue;
            };
            subnet_vm_ips(snap, gw, tenant_dp, v6, &mut exposed.lo_ips, notes, trace);
        }
    }
}

/// Whether a router port's switch-side peer is annotated with the
/// gateway's VNI and AS; a peer annotated otherwise is noted and rejected
/// (its subnet is not exposed).
fn same_vni_as_gateway(
    gw: &AnnotatedGateway<'_>,
    peer: &PortBinding,
    notes: &mut Vec<String>,
    trace: &mut Trace,
) -> bool {
    let Some((lvpn, lasn)) = evpn_info(peer, notes, trace) else {
        return false;
    };
    let (vni, vpn) = (gw.vpn.vni, gw.vpn);
    if lvpn.vni == vni && Some(lasn) == vpn.asn {
        return true;
    }
    trace.reject(|| {
        let r = Rejection::of(
            pb_ref(peer),
            Reason::VniMismatch {
                vni: lvpn.vni,
                asn: lasn,
                gateway_vni: vni,
                gateway_asn: vpn.asn.unwrap_or(0),
            },
        );
        match peer.datapath {
            Some(dp) => r.network(dp.to_string()),
            None => r,
        }
    });
    notes.push(format!(
        "{} {}: VNI {} AS {} differs from the gateway's (VNI {vni} AS {}): subnet not exposed",
        PortBinding::TABLE,
        peer.uuid,
        lvpn.vni,
        lasn,
        vpn.asn.unwrap_or(0)
    ));
    false
}

/// The cookie-998 flow that steers a tenant subnet's traffic from the
/// gateway's MAC on the provider bridge into the VRF's end of the
/// connection.
fn subnet_steering_flow(gw: &AnnotatedGateway<'_>, devices: &VniDevices, net: IpNet) -> Flow {
    let mut actions = vec![FlowAction::ModDlDstMacOf(devices.vrf_end.clone())];
    if gw.vlan.is_some() {
        // The VXLAN header replaces the provider VLAN in the fabric.
        actions.push(FlowAction::StripVlan);
    }
    actions.push(FlowAction::Output(
        devices
            .ovs_end
            .as_ref()
            .unwrap_or(&devices.vrf_end)
            .to_string(),
    ));
    Flow {
        bridge: gw.bridge.clone(),
        cookie: cookie::EVPN,
        table: 0,
        priority: 1000,
        protocol: if net.addr().is_ipv6() { "ipv6" } else { "ip" }.into(),
        in_port: localnet_patch_port(&gw.localnet.logical_port),
        matches: vec![FlowMatch::DlSrc(gw.mac), FlowMatch::Src(net)],
        actions,
    }
}

/// The IPs of one family of the tenant network's bound VM (and virtual)
/// ports, added to `lo_ips` once each; unbound VMs, ports without
/// addresses and unexposable IPs are rejected.
fn subnet_vm_ips(
    snap: &Snapshot,
    gw: &AnnotatedGateway<'_>,
    tenant_dp: Uuid,
    v6: bool,
    lo_ips: &mut Vec<IpNet>,
    notes: &mut Vec<String>,
    trace: &mut Trace,
) {
    let cr_row = pb_ref(gw.cr);
    for vm in snap.sb().ports_on_datapath(tenant_dp) {
        let bound = match vm.kind {
            PbType::Vm => vm.chassis.is_some(),
            PbType::Virtual => true,
            _ => false,
        };
        if !bound {
            if vm.kind == PbType::Vm {
                trace.reject(|| Rejection::of(pb_ref(vm), Reason::Unbound));
            }
            continue;
        }
        let PbMac::Addresses { ips, .. } = &vm.mac else {
            trace.reject(|| Rejection::of(pb_ref(vm), Reason::NoAddresses));
            continue;
        };
        for ip in ips.iter().map(IpNet::addr).filter(|ip| ip.is_ipv6() == v6) {
            if let Some(why) = obgp_netmodel::exposable::unexposable_ip(ip) {
                notes.push(format!("{} {}: {ip} is {why}", PortBinding::TABLE, vm.uuid));
                trace.reject(|| Rejection::of(pb_ref(vm), Reason::UnexposableIp { why }).ip(ip));
                continue;
            }
            trace.exposed(|| Traced {
                ip,
                origin: Origin::new(ExposeRule::TenantVm, pb_ref(vm)).via(cr_row),
                vni: gw.vpn.vni,
            });
            let host = IpNet::from(ip);
            if !lo_ips.contains(&host) {
                lo_ips.push(host);
            }
        }
    }
}

/// The VXLAN source the SB driver uses without `evpn_local_ip`: the IPv4
/// /32 on `lo`, else the first address of `evpn_nic` (upstream
/// `get_nic_ip`), from the node's addresses.
pub fn vxlan_source<'a>(
    evpn_nic: Option<&str>,
    addresses: impl IntoIterator<Item = (&'a DevName, IpNet)>,
) -> Option<IpAddr> {
    let mut by_dev: BTreeMap<&str, Vec<IpNet>> = BTreeMap::new();
    for (dev, net) in addresses {
        by_dev.entry(dev.as_str()).or_default().push(net);
    }
    match evpn_nic {
        Some(nic) => by_dev
            .get(nic)?
            .iter()
            .map(IpNet::addr)
            .find(|ip| !ip.is_loopback()),
        None => by_dev
            .get("lo")?
            .iter()
            .find(|n| n.addr().is_ipv4() && n.prefix_len() == 32 && !n.addr().is_loopback())
            .map(IpNet::addr),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vxlan_source_is_los_slash_32_or_evpn_nics_address() {
        let lo = DevName::new("lo").unwrap();
        let eth = DevName::new("eth1").unwrap();
        let addrs = [
            (&lo, "127.0.0.1/8".parse().unwrap()),
            (&lo, "10.1.1.1/32".parse().unwrap()),
            (&eth, "192.0.2.5/24".parse().unwrap()),
        ];
        assert_eq!(vxlan_source(None, addrs), Some("10.1.1.1".parse().unwrap()));
        assert_eq!(
            vxlan_source(Some("eth1"), addrs),
            Some("192.0.2.5".parse().unwrap())
        );
        assert_eq!(vxlan_source(Some("eth9"), addrs), None);
        assert_eq!(
            vxlan_source(None, [(&lo, "127.0.0.1/8".parse().unwrap())]),
            None
        );
    }
}
