//! Neutron's conventions inside OVN rows: the `external_ids`/`options` keys,
//! port and NAT types and boolean spelling the agent reads, the
//! `neutron-<uuid>` naming, and the address-string formats. The one home of
//! these strings: the parsers here and the event predicates (`obgp-events`)
//! both name them from here.

use std::net::IpAddr;

use ipnet::IpNet;

/// `external_ids` keys written by Neutron (upstream `constants.py`).
pub mod key {
    pub const CIDRS: &str = "neutron:cidrs";
    pub const NETWORK_NAME: &str = "neutron:network_name";
    pub const ROUTER_NAME: &str = "neutron:router_name";
    pub const DEVICE_ID: &str = "neutron:device_id";
    pub const DEVICE_OWNER: &str = "neutron:device_owner";
    pub const HOST_ID: &str = "neutron:host_id";
    pub const PORT_FIP: &str = "neutron:port_fip";
    pub const FIP_NETWORK_ID: &str = "neutron:fip_network_id";
    pub const FIP_EXTERNAL_MAC: &str = "neutron:fip_external_mac";
    pub const IS_EXT_GW: &str = "neutron:is_ext_gw";
    pub const LB_VIP: &str = "neutron:vip";
    pub const LB_VIP_FIP: &str = "neutron:vip_fip";
    pub const LB_VIP_PORT_ID: &str = "neutron:vip_port_id";
    /// The Neutron name of a port (`ovn-lb-vip-<lb>` for an OVN LB VIP port).
    pub const PORT_NAME: &str = "neutron:port_name";
    pub const LB_LR_REF: &str = "lr_ref";
    pub const FIP_DISTRIBUTED: &str = "neutron:fip-distributed";
    pub const ADDR_SCOPE4: &str = "neutron:subnet_pool_addr_scope4";
    pub const ADDR_SCOPE6: &str = "neutron:subnet_pool_addr_scope6";
    /// `options` key of an LSP naming the chassis (hostnames) it should bind to.
    pub const REQUESTED_CHASSIS: &str = "requested-chassis";
    /// `options` key of a Port_Binding that has a chassisredirect port.
    pub const CHASSIS_REDIRECT_PORT: &str = "chassis-redirect-port";
    /// `options` key of a localnet LSP naming its physical network.
    pub const LOCALNET_NETWORK_NAME: &str = "network_name";
    /// `status` key of an LRP naming the chassis (system-id) hosting it.
    pub const HOSTING_CHASSIS: &str = "hosting-chassis";
    /// networking-bgpvpn's keys on ports (read by the EVPN predicates).
    pub const EVPN_TYPE: &str = "neutron_bgpvpn:type";
    pub const EVPN_VNI: &str = "neutron_bgpvpn:vni";
    pub const EVPN_AS: &str = "neutron_bgpvpn:as";
}

/// The `type` values of Logical_Switch_Port / Port_Binding rows the agent
/// tells apart.
pub mod port_type {
    /// A VM port (the empty type).
    pub const VM: &str = "";
    /// A virtual (VIP) port.
    pub const VIRTUAL: &str = "virtual";
    /// The switch side of a router port.
    pub const ROUTER: &str = "router";
    /// The connection to a physical network.
    pub const LOCALNET: &str = "localnet";
    /// The SB binding of a logical router port pinned to a gateway chassis.
    pub const CHASSISREDIRECT: &str = "chassisredirect";
    /// One end of a patch between datapaths (SB).
    pub const PATCH: &str = "patch";
}

/// The `type` values of NAT rows the agent tells apart.
pub mod nat_type {
    pub const SNAT: &str = "snat";
    /// A floating IP.
    pub const DNAT_AND_SNAT: &str = "dnat_and_snat";
}

/// A true boolean value as Neutron writes it (Python's `str(True)`), e.g.
/// in [`key::FIP_DISTRIBUTED`].
pub const TRUE: &str = "True";

/// `device_owner` of a router interface LSP.
pub const ROUTER_INTERFACE_OWNER: &str = "network:router_interface";
/// Name prefix of a port-forwarding Load_Balancer.
pub const PF_LB_PREFIX: &str = "pf-floatingip-";
/// Prefix Neutron puts before its uuids in OVN names.
pub const NAME_PREFIX: &str = "neutron-";
/// Prefix Neutron puts before a router port's id in its LRP name.
pub const LRP_PREFIX: &str = "lrp-";

/// `neutron-<id>` for an id; the name Neutron gives switches and routers.
pub fn ovn_name(id: &str) -> String {
    format!("{NAME_PREFIX}{id}")
}

/// Strips one leading `neutron-`, as upstream does before comparing router
/// references (`router.py`).
pub fn strip_prefix(name: &str) -> &str {
    name.strip_prefix(NAME_PREFIX).unwrap_or(name)
}

/// Parses an IP with or without a prefix length (`10.0.0.5` or `10.0.0.5/24`)
/// into an interface network that keeps the host bits.
pub fn parse_ip_net(s: &str) -> Option<IpNet> {
    if s.contains('/') {
        s.parse::<IpNet>().ok()
    } else {
        s.parse::<IpAddr>().ok().map(IpNet::from)
    }
}

/// The IP of an LB `vips` key: `10.0.0.1:80`, `10.0.0.1`, `[2001:db8::1]:80`
/// or a bare IPv6 address. Upstream splits on `:` (breaking IPv6, see
/// docs/defects.md); this parses every form.
pub fn vip_key_ip(key: &str) -> Option<IpAddr> {
    if let Some(rest) = key.strip_prefix('[') {
        let end = rest.find(']')?;
        return rest[..end].parse().ok();
    }
    if let Ok(ip) = key.parse::<IpAddr>() {
        return Some(ip);
    }
    let (host, port) = key.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

/// Python's `ipaddress.IPv6Address.is_global` (3.12): not in one of IANA's
/// special-purpose blocks. Upstream's `expose_ipv6_gua_tenant_networks`
/// exposes exactly the addresses for which this holds.
pub fn is_ipv6_gua(ip: IpAddr) -> bool {
    let v6 = match ip {
        IpAddr::V6(v6) => v6,
        IpAddr::V4(_) => return false,
    };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return is_ipv4_global(v4);
    }
    const PRIVATE: &[(&str, u8)] = &[
        ("::1", 128),
        ("::", 128),
        ("::ffff:0:0", 96),
        ("64:ff9b:1::", 48),
        ("100::", 64),
        ("2001::", 23),
        ("2001:db8::", 32),
        ("2002::", 16),
        ("3fff::", 20),
        ("fc00::", 7),
        ("fe80::", 10),
    ];
    const EXCEPTIONS: &[(&str, u8)] = &[
        ("2001:1::1", 128),
        ("2001:1::2", 128),
        ("2001:3::", 32),
        ("2001:4:112::", 48),
        ("2001:20::", 28),
        ("2001:30::", 28),
    ];
    let within = |list: &[(&str, u8)]| {
        list.iter().any(|(net, len)| {
            let net = net.parse::<std::net::Ipv6Addr>().expect("literal");
            ipnet::Ipv6Net::new(net, *len)
                .map(|n| n.contains(&v6))
                .unwrap_or(false)
        })
    };
    !within(PRIVATE) || within(EXCEPTIONS)
}

fn is_ipv4_global(v4: std::net::Ipv4Addr) -> bool {
    !(v4.is_private()
        || v4.is_loopback()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_documentation()
        || v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64
        || v4.octets()[0] >= 240)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gua_follows_python_is_global() {
        for (ip, gua) in [
            ("2620:52:0:10::5", true),
            ("2001:db8::10", false),
            ("fd00:10::5", false),
            ("fe80::1", false),
            ("2001:20::1", true),
            ("10.0.0.5", false),
        ] {
            assert_eq!(is_ipv6_gua(ip.parse().unwrap()), gua, "{ip}");
        }
    }

    #[test]
    fn vip_keys_parse_with_and_without_ports() {
        assert_eq!(
            vip_key_ip("172.24.4.70:2222"),
            Some("172.24.4.70".parse().unwrap())
        );
        assert_eq!(
            vip_key_ip("172.24.4.70"),
            Some("172.24.4.70".parse().unwrap())
        );
        assert_eq!(
            vip_key_ip("[2001:db8::7]:80"),
            Some("2001:db8::7".parse().unwrap())
        );
        assert_eq!(
            vip_key_ip("2001:db8::7"),
            Some("2001:db8::7".parse().unwrap())
        );
        assert_eq!(vip_key_ip("garbage:80"), None);
    }
}
