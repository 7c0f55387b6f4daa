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
use obgp_netmodel::{cookie, Class, DevName, Flow, FlowAction, FlowMatch, ProxyNeighbour, Sysctl};
use obgp_ovn::{BgpVpn, PbMac, PbType, PortBinding, Snapshot};

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

fn gateway_vni(
    snap: &Snapshot,
    cr: &PortBinding,
    local_ip: IpAddr,
    udp_port: u16,
    notes: &mut Vec<String>,
    trace: &mut Trace,
) -> Option<EvpnVni> {
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
    let vlan = localnet.tag;
    let vni = vpn.vni;
    let row = format!("{} {}", PortBinding::TABLE, gw_port.uuid);
    let (Some(vrf), Some(br), Some(vxlan), Some(lo)) = (
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
    let asn = match Asn::try_from(asn) {
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
    let frr_text = crate::evpn::add_vrf_text(
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
        &row,
        notes,
    );

    // The gateway IPs through the connection, with the gateway's MAC.
    for n in gw_nets {
        trace.exposed(|| Traced {
            ip: n.addr(),
            origin: Origin::new(ExposeRule::Gateway, cr_row),
            vni,
        });
    }
    let mut routes: Vec<EvpnRoute> = gw_nets
        .iter()
        .map(|n| EvpnRoute {
            dst: IpNet::from(n.addr()),
            via: None,
            lladdr: Some(*mac),
            class: Class::Gateway,
        })
        .collect();
    // Proxy NDP for the gateway's IPv6 networks: on the provider bridge on
    // a flat network, on `vlan-<vni>` on a VLAN one (upstream `add_ndp_proxy`).
    let ndp_dev = if vlan.is_some() {
        vrf_end.clone()
    } else {
        bridge.clone()
    };
    let proxy_neighbours: Vec<ProxyNeighbour> = gw_nets
        .iter()
        .filter(|n| n.addr().is_ipv6())
        .map(|n| ProxyNeighbour {
            dev: ndp_dev.clone(),
            dst: n.trunc().addr(),
        })
        .collect();
    let gw_ips: Vec<IpAddr> = gw_nets.iter().map(IpNet::addr).collect();

    let mut lo_ips: Vec<IpNet> = Vec::new();
    let mut flows = Vec::new();
    let patch = localnet_patch_port(&localnet.logical_port);
    for lrp in sb.ports_on_datapath(router_dp) {
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
        let Some((lvpn, lasn)) = evpn_info(peer, notes, trace) else {
            continue;
        };
        if lvpn.vni != vni || Some(lasn) != vpn.asn {
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
            routes.push(EvpnRoute {
                dst: net,
                via: Some(via),
                lladdr: None,
                class: Class::Subnet,
            });
            let mut actions = vec![FlowAction::ModDlDstMacOf(vrf_end.clone())];
            if vlan.is_some() {
                // The VXLAN header replaces the provider VLAN in the fabric.
                actions.push(FlowAction::StripVlan);
            }
            actions.push(FlowAction::Output(
                ovs_end.as_ref().unwrap_or(&vrf_end).to_string(),
            ));
            flows.push(Flow {
                bridge: bridge.clone(),
                cookie: cookie::EVPN,
                table: 0,
                priority: 1000,
                protocol: if v6 { "ipv6" } else { "ip" }.into(),
                in_port: patch.clone(),
                matches: vec![FlowMatch::DlSrc(*mac), FlowMatch::Src(net)],
                actions,
            });
            // The bound VM (and virtual) ports of that subnet's family.
            let Some(tenant_dp) = peer.datapath else {
                continue;
            };
            for vm in sb.ports_on_datapath(tenant_dp) {
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
                        trace.reject(|| {
                            Rejection::of(pb_ref(vm), Reason::UnexposableIp { why }).ip(ip)
                        });
                        continue;
                    }
                    trace.exposed(|| Traced {
                        ip,
                        origin: Origin::new(ExposeRule::TenantVm, pb_ref(vm)).via(cr_row),
                        vni,
                    });
                    let host = IpNet::from(ip);
                    if !lo_ips.contains(&host) {
                        lo_ips.push(host);
                    }
                }
            }
        }
    }
    let sysctls = match vlan {
        Some(_) => vec![Sysctl::conf(true, &vrf_end, "proxy_ndp", "1")],
        None => Vec::new(),
    };
    Some(EvpnVni {
        vni,
        vrf,
        bridge: br,
        vxlan,
        local_ip,
        udp_port,
        ports: vec![EvpnPort {
            vrf_end,
            ovs_end,
            ovs_bridge: bridge,
            vlan,
            mac: None,
            patch_port: None,
            addresses: Vec::new(),
            sysctls,
            routes,
        }],
        lo: Some((lo, lo_ips)),
        unreachable_defaults: true,
        flows,
        proxy_neighbours,
        sysctls: Vec::new(),
        frr_text,
    })
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
