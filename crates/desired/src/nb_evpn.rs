//! The NB driver's `exposing_method = vrf`: the annotated provider
//! networks mapped here ([`nb_networks`]) and the NB driver's exposures
//! re-wired through their VNIs ([`rewire`]), giving the per-VNI model of
//! [`crate::evpn`]. Which IPs are exposed is the underlay method's
//! decision ([`crate::nb_underlay`]); this module decides only how they are
//! wired.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipnet::IpNet;
use obgp_config::Config;
use obgp_netmodel::frr::{nd, AddVrf, Asn, Nd, RedistSource, RouteDistinguisher};
use obgp_netmodel::names::evpn as names;
use obgp_netmodel::{Class, DevName, Sysctl};
use obgp_ovn::{BgpVpn, BgpVpnType, LogicalSwitch, LogicalSwitchPort, Snapshot};

use crate::arp_ndp::arp_ndp_addresses;
use crate::evpn::{add_vrf_text, anycast_mac, EvpnL3, EvpnPort, EvpnRoute, EvpnVni};
use crate::model::{Desired, RowRef};
use crate::provenance::{Reason, Rejection, Trace};
use crate::wiring::localnet_patch_port;
use crate::DesiredError;

/// What both EVPN methods of the NB driver (`vrf`, `l2vni`) need from the
/// configuration: the VXLAN source (`evpn_local_ip`, required, as upstream
/// refuses to start without it) and the local AS.
pub(crate) fn vxlan_source_and_asn(config: &Config) -> Result<(IpAddr, Asn), DesiredError> {
    let d = &config.default;
    let Some(local_ip) = d.evpn_local_ip else {
        return Err(DesiredError::BadConfig {
            option: "evpn_local_ip",
            value: String::new(),
            reason: format!(
                "exposing_method = {} needs the VXLAN source address",
                d.exposing_method.as_str()
            ),
        });
    };
    let asn = d
        .bgp_as
        .parse::<Asn>()
        .map_err(|e| DesiredError::BadConfig {
            option: "bgp_AS",
            value: d.bgp_as.clone(),
            reason: e.to_string(),
        })?;
    Ok((local_ip, asn))
}

/// The provider bridges of `ovn-bridge-mappings`: the EVPN methods' veths
/// start from them.
pub(crate) fn mapped_bridges<B: FromIterator<DevName>>(snap: &Snapshot) -> B {
    snap.ovs
        .bridge_mappings
        .iter()
        .map(|m| m.bridge.clone())
        .collect()
}

/// The NB driver's `exposing_method = vrf`: its exposures, wired through
/// the annotated networks' VNIs ([`crate::evpn`]). Upstream skips the VRF leak
/// and `bgp_nic` in this mode (`ensure_base_bgp_configuration` returns
/// early), and refuses to start without `evpn_local_ip`.
pub(crate) fn nb_vrf(
    snap: &Snapshot,
    config: &Config,
    desired: &mut Desired,
    trace: &mut Trace,
) -> Result<(), DesiredError> {
    let mut notes = Vec::new();
    let l3 = vrf_evpn(snap, config, desired, &mut notes, trace)?;
    desired.notes.extend(notes);
    desired.frr_config = None;
    desired.evpn = Some(l3);
    Ok(())
}

/// The vrf method's VNIs: every `l3` network mapped here, with the
/// exposures of `exposures` (the NB driver's decisions) re-wired through
/// them. `exposing_method = dynamic` passes only the decisions on its `l3`
/// networks ([`crate::dynamic`]).
pub(crate) fn vrf_evpn(
    snap: &Snapshot,
    config: &Config,
    exposures: &Desired,
    notes: &mut Vec<String>,
    trace: &mut Trace,
) -> Result<EvpnL3, DesiredError> {
    let d = &config.default;
    let (local_ip, asn) = vxlan_source_and_asn(config)?;
    let networks = nb_networks(snap, &asn, local_ip, notes, trace);
    let bridges = mapped_bridges(snap);
    Ok(rewire(
        exposures,
        networks,
        local_ip,
        d.evpn_udp_dstport,
        (bridges, d.delete_vrf_on_disconnect),
        notes,
        trace,
    ))
}

/// A provider network annotated for EVPN L3 and mapped here.
struct AnnotatedNetwork {
    pub vni: u32,
    pub port: EvpnPort,
    pub frr_text: String,
}

/// Re-wires the NB driver's exposures through the annotated networks'
/// VNIs. Exposures on a network without a VNI are not wired in this mode
/// (upstream logs "EVPN has not been setup" and skips them); so are the
/// tenant IPs announced without wiring.
fn rewire(
    underlay: &Desired,
    networks: Vec<AnnotatedNetwork>,
    local_ip: IpAddr,
    udp_port: u16,
    cleanup: (BTreeSet<DevName>, bool),
    notes: &mut Vec<String>,
    trace: &mut Trace,
) -> EvpnL3 {
    // (bridge, vlan) -> the network's port, first annotated network wins.
    let mut by_target: BTreeMap<(DevName, Option<u16>), AnnotatedNetwork> = BTreeMap::new();
    for n in networks {
        let key = (n.port.ovs_bridge.clone(), n.port.vlan);
        if let Some(first) = by_target.get(&key) {
            notes.push(format!(
                "EVPN: VNI {} and VNI {} both use bridge {} vlan {:?}; VNI {} kept",
                first.vni, n.vni, key.0, key.1, first.vni
            ));
            continue;
        }
        by_target.insert(key, n);
    }
    for e in underlay.exposed.values() {
        let Some(w) = &e.wiring else {
            trace.reject(|| Rejection::of(e.source, Reason::NotWiredInVrfMode).ip(e.ip));
            continue;
        };
        let key = (w.target.bridge.clone(), w.target.vlan);
        let Some(n) = by_target.get_mut(&key) else {
            trace.reject(|| {
                let (bridge, vlan) = key;
                Rejection::of(e.source, Reason::NoVni { bridge, vlan }).ip(e.ip)
            });
            continue;
        };
        n.port.routes.push(EvpnRoute {
            dst: IpNet::from(e.ip),
            via: None,
            lladdr: w.lladdr,
            class: e.class,
        });
    }
    for s in &underlay.tenant_subnets {
        let vlan = by_target
            .keys()
            .find(|(b, v)| {
                *b == s.bridge
                    && match v {
                        None => s.dev == s.bridge,
                        Some(v) => s.dev == obgp_netmodel::names::vlan_device(b, *v),
                    }
            })
            .map(|(_, v)| *v);
        let Some(vlan) = vlan else { continue };
        if let Some(n) = by_target.get_mut(&(s.bridge.clone(), vlan)) {
            n.port.routes.push(EvpnRoute {
                dst: s.net,
                via: s.via,
                lladdr: None,
                class: Class::Subnet,
            });
        }
    }
    let mut out = EvpnL3 {
        bridges: cleanup.0,
        delete_vrf: cleanup.1,
        steering_flows: false,
        ..EvpnL3::default()
    };
    for (_, n) in by_target {
        // Upstream builds a VNI's devices at its first exposure only.
        if n.port.routes.is_empty() {
            continue;
        }
        let (Some(vrf), Some(bridge), Some(vxlan)) =
            (names::vrf(n.vni), names::bridge(n.vni), names::vxlan(n.vni))
        else {
            notes.push(format!(
                "EVPN: VNI {} gives device names over 15 bytes",
                n.vni
            ));
            continue;
        };
        let entry = out.vnis.entry(n.vni).or_insert_with(|| EvpnVni {
            sysctls: vec![
                Sysctl::conf(false, &bridge, "forwarding", "1"),
                Sysctl::conf(true, &bridge, "forwarding", "1"),
            ],
            lo: None,
            unreachable_defaults: false,
            flows: Vec::new(),
            proxy_neighbours: Vec::new(),
            vni: n.vni,
            vrf,
            bridge,
            vxlan,
            local_ip,
            udp_port,
            ports: Vec::new(),
            frr_text: n.frr_text.clone(),
        });
        entry.ports.push(n.port);
    }
    out
}

/// The annotated provider networks mapped to a bridge here (NB vrf mode).
/// A bad annotation skips its network with a note naming the row; the
/// others still converge.
fn nb_networks(
    snap: &Snapshot,
    asn: &Asn,
    local_ip: IpAddr,
    notes: &mut Vec<String>,
    trace: &mut Trace,
) -> Vec<AnnotatedNetwork> {
    let mut out = Vec::new();
    for ls in snap.bgpvpn_switches() {
        let Some(vpn) = annotation_of_type(ls, BgpVpnType::L3, notes, trace) else {
            continue;
        };
        let Some((ln, bridge)) = mapped_localnet(snap, ls) else {
            continue;
        };
        let Some((vrf_end, ovs_end)) = names::nb_veth(&ln.uuid.to_string()) else {
            notes.push(format!(
                "{} {}: no veth name from its uuid",
                "Logical_Switch_Port", ln.uuid
            ));
            continue;
        };
        let rd = match vpn.rd.first() {
            Some(rd) => *rd,
            None => match RouteDistinguisher::of_ip_and_vni(local_ip, vpn.vni) {
                Ok(rd) => rd,
                Err(e) => {
                    notes.push(format!("{} {}: {e}", LogicalSwitch::TABLE, ls.uuid));
                    continue;
                }
            },
        };
        let Some(vrf) = names::vrf(vpn.vni) else {
            notes.push(format!(
                "{} {}: VNI {} gives a VRF name over 15 bytes",
                LogicalSwitch::TABLE,
                ls.uuid,
                vpn.vni
            ));
            continue;
        };
        let row = format!("{} {}", LogicalSwitch::TABLE, ls.uuid);
        let mut frr_text = add_vrf_text(
            &AddVrf {
                vrf,
                vni: vpn.vni,
                // The annotation's AS is not used (upstream neither): FRR
                // keeps a VRF's BGP instance under the AS it was created with,
                // so a node taken over from the Python agent must keep bgp_AS.
                asn: asn.clone(),
                redistribute: vec![RedistSource::Connected, RedistSource::Kernel],
                rd,
                route_targets: vpn.route_targets.clone(),
                import_targets: vpn.import_targets.clone(),
                export_targets: vpn.export_targets.clone(),
            },
            &row,
            notes,
        );
        let mut addresses = network_dhcp(snap, ls, ln, &vrf_end, &mut frr_text, notes);
        addresses.extend(port_arp_ndp_addresses(ln.tag));
        let patch = localnet_patch_port(&ln.name);
        let patch_port = snap
            .ovs
            .bridge_has_port(bridge.as_str(), &patch)
            .then_some(patch);
        out.push(AnnotatedNetwork {
            vni: vpn.vni,
            frr_text,
            port: EvpnPort {
                sysctls: nb_port_sysctls(&vrf_end),
                vrf_end,
                ovs_end: Some(ovs_end),
                ovs_bridge: bridge,
                vlan: ln.tag,
                mac: Some(anycast_mac(vpn.vni, ln.tag)),
                patch_port,
                addresses,
                routes: Vec::new(),
            },
        });
    }
    out
}

/// The network's `neutron_bgpvpn` annotation when it asks for `kind`
/// (the vrf method selects `l3`, as upstream; the l2vni method `l2`); a
/// bad one is noted and rejected.
pub(crate) fn annotation_of_type<'a>(
    ls: &'a LogicalSwitch,
    kind: BgpVpnType,
    notes: &mut Vec<String>,
    trace: &mut Trace,
) -> Option<&'a BgpVpn> {
    match &ls.bgpvpn {
        None => None,
        Some(Err(e)) => {
            notes.push(format!("{} {}: {e}", LogicalSwitch::TABLE, ls.uuid));
            trace.reject(|| {
                let row = RowRef {
                    table: LogicalSwitch::TABLE,
                    uuid: ls.uuid,
                };
                let error = e.to_string();
                Rejection::of(row, Reason::BadAnnotation { error }).network(ls.name.clone())
            });
            None
        }
        Some(Ok(v)) if v.kind != Some(kind) => None,
        Some(Ok(v)) => Some(v),
    }
}

/// The network's first localnet port whose physical network is mapped
/// here, with the bridge it is mapped to.
pub(crate) fn mapped_localnet<'a>(
    snap: &'a Snapshot,
    ls: &LogicalSwitch,
) -> Option<(&'a LogicalSwitchPort, DevName)> {
    let localnets = ls.ports.iter().filter_map(|u| snap.lsp_by_uuid(*u));
    localnets
        .filter(|p| p.kind == obgp_ovn::LspType::Localnet)
        .find_map(|ln| {
            let physnet = ln.localnet_network.as_deref()?;
            let m = snap
                .ovs
                .bridge_mappings
                .iter()
                .find(|m| m.network == physnet)?;
            Some((ln, m.bridge.clone()))
        })
}

/// The DHCP options of the network's ports (but the localnet): their
/// router IPs go on the VRF end, returned (so OVN can reach its gateway
/// there), and their IPv6 subnets are announced by FRR's router
/// advertisements, added to `frr_text`. Bad values are noted and skipped.
fn network_dhcp(
    snap: &Snapshot,
    ls: &LogicalSwitch,
    ln: &LogicalSwitchPort,
    vrf_end: &DevName,
    frr_text: &mut String,
    notes: &mut Vec<String>,
) -> Vec<IpNet> {
    let mut dhcp: BTreeSet<obgp_ovsdb_data::Uuid> = BTreeSet::new();
    for port in ls.ports.iter().filter_map(|u| snap.lsp_by_uuid(*u)) {
        if port.uuid == ln.uuid {
            continue;
        }
        dhcp.extend(port.dhcpv4_options);
        dhcp.extend(port.dhcpv6_options);
    }
    let mut addresses = Vec::new();
    for opt in dhcp.iter().filter_map(|u| snap.dhcp_options(*u)) {
        if let Some(router) = opt.options.get(obgp_ovn::neutron::dhcp_option::ROUTER) {
            match router.parse::<IpAddr>() {
                Ok(ip) => match obgp_netmodel::exposable::unexposable_ip(ip) {
                    None => addresses.push(IpNet::from(ip)),
                    Some(why) => {
                        notes.push(format!("DHCP_Options {}: router {ip} is {why}", opt.uuid))
                    }
                },
                Err(_) => notes.push(format!("DHCP_Options {}: bad router {router:?}", opt.uuid)),
            }
        }
        if let IpNet::V6(prefix) = opt.cidr {
            match Nd::from_dhcpv6_options(vrf_end.clone(), prefix, &opt.options) {
                Ok(v) => frr_text.push_str(&nd(&v)),
                Err(e) => notes.push(format!("DHCP_Options {}: {e}", opt.uuid)),
            }
        }
    }
    addresses
}

/// The sysctls of the NB mode's VRF end and of the node: forwarding on
/// (the VRF routes between the fabric and the provider network), proxy
/// ARP/NDP on the VRF end (OVN's VMs find their gateway there).
fn nb_port_sysctls(vrf_end: &DevName) -> Vec<Sysctl> {
    let mut out = vec![
        Sysctl::conf(false, vrf_end, "forwarding", "1"),
        Sysctl::conf(true, vrf_end, "forwarding", "1"),
        Sysctl::conf(false, vrf_end, "proxy_arp", "1"),
        Sysctl::conf(true, vrf_end, "proxy_ndp", "1"),
    ];
    for key in [
        "net.ipv4.ip_forward",
        "net.ipv4.conf.all.forwarding",
        "net.ipv6.conf.all.forwarding",
    ] {
        out.push(Sysctl {
            key: key.into(),
            value: "1".into(),
        });
    }
    out
}

/// The VRF end's ARP/NDP addresses: upstream passes the VLAN tag as the
/// offset (`169.254.<vlan>.<vlan>`; 0 on a flat network).
fn port_arp_ndp_addresses(vlan: Option<u16>) -> [IpNet; 2] {
    arp_ndp_addresses(u32::from(vlan.unwrap_or(0)), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_addresses_use_the_vlan_as_offset() {
        let [v4, v6] = port_arp_ndp_addresses(None);
        assert_eq!(
            (v4.to_string(), v6.to_string()),
            ("169.254.0.0/32".into(), "fd53:d91e:400:7f17::/128".into())
        );
    }
}
