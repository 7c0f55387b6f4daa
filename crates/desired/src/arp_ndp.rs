//! The link-local addresses a bridge (or a VNI's VRF end) carries so the
//! node answers ARP and NDP on it, as upstream numbers them. A leaf: the
//! driver-level model and the EVPN wiring both use it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// The bridge's ARP/NDP addresses: `169.254.<idx>.<idx>` and
/// `fd53:d91e:400:7f17::<idx hex>:<idx hex>`; on a VLAN device the last
/// group is the VLAN (mod 256), as upstream's `ensure_arp_ndp_enabled_for_bridge`.
pub fn arp_ndp_addresses(index: u32, vlan: Option<u16>) -> [IpNet; 2] {
    let dev_index = vlan.map(|v| u32::from(v) % 256).unwrap_or(index);
    let v4 = Ipv4Addr::new(169, 254, (index % 256) as u8, (dev_index % 256) as u8);
    let v6 = Ipv6Addr::new(
        0xfd53,
        0xd91e,
        0x400,
        0x7f17,
        0,
        0,
        index as u16,
        dev_index as u16,
    );
    [IpNet::from(IpAddr::V4(v4)), IpNet::from(IpAddr::V6(v6))]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arp_ndp_addresses_follow_index_and_vlan() {
        let s = |a: [IpNet; 2]| a.map(|n| n.to_string());
        assert_eq!(
            s(arp_ndp_addresses(1, None)),
            ["169.254.1.1/32", "fd53:d91e:400:7f17::1:1/128"]
        );
        assert_eq!(
            s(arp_ndp_addresses(1, Some(100))),
            ["169.254.1.100/32", "fd53:d91e:400:7f17::1:64/128"]
        );
        assert_eq!(
            s(arp_ndp_addresses(2, Some(300))),
            ["169.254.2.44/32", "fd53:d91e:400:7f17::2:2c/128"]
        );
    }
}
