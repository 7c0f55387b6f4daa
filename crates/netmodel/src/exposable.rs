//! Which IPs and MACs from OVN may reach the node: one rule, for every
//! driver, so that nonsense in a Neutron row never becomes a `bgp-nic`
//! address, a rule, a route or a permanent neighbour.
//!
//! Not exposable: unspecified, loopback, multicast, the IPv4 limited
//! broadcast, and link-local addresses (IPv4 169.254.0.0/16, IPv6
//! fe80::/10). Link-local addresses are not routable across the fabric,
//! and 169.254.<n>.<n> is the agent's own ARP/NDP address on each provider
//! bridge (docs/defects.md, "Nonsense addresses"). Not usable as a
//! neighbour's address: the zero MAC, broadcast and any multicast MAC (the
//! group bit of the first octet).

use std::net::IpAddr;

use crate::MacAddr;

/// Why `ip` must not be exposed, or `None` when it may be.
pub fn unexposable_ip(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => {
            if v4.is_unspecified() {
                Some("unspecified")
            } else if v4.is_loopback() {
                Some("loopback")
            } else if v4.is_broadcast() {
                Some("broadcast")
            } else if v4.is_multicast() {
                Some("multicast")
            } else if v4.is_link_local() {
                Some("link-local")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return unexposable_ip(IpAddr::V4(v4));
            }
            if v6.is_unspecified() {
                Some("unspecified")
            } else if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_multicast() {
                Some("multicast")
            } else if v6.is_unicast_link_local() {
                Some("link-local")
            } else {
                None
            }
        }
    }
}

/// Why `mac` must not be a permanent neighbour's address, or `None`.
pub fn unusable_lladdr(mac: MacAddr) -> Option<&'static str> {
    if mac.0 == [0; 6] {
        Some("zero")
    } else if mac.0 == [0xff; 6] {
        Some("broadcast")
    } else if mac.0[0] & 1 == 1 {
        Some("multicast")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn nonsense_addresses_are_refused_with_their_kind() {
        for (s, why) in [
            ("0.0.0.0", "unspecified"),
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("255.255.255.255", "broadcast"),
            ("224.0.0.5", "multicast"),
            ("239.1.2.3", "multicast"),
            ("169.254.1.1", "link-local"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("ff02::1", "multicast"),
            ("fe80::1", "link-local"),
            ("::ffff:127.0.0.1", "loopback"),
        ] {
            assert_eq!(unexposable_ip(ip(s)), Some(why), "{s}");
        }
    }

    #[test]
    fn ordinary_unicast_addresses_are_exposable() {
        for s in [
            "172.24.4.10",
            "10.0.0.5",
            "192.0.2.1",
            "100.64.0.1",
            "2001:db8::10",
            "fd53:d91e:400:7f17::1",
            "::ffff:192.0.2.1",
        ] {
            assert_eq!(unexposable_ip(ip(s)), None, "{s}");
        }
    }

    #[test]
    fn zero_broadcast_and_multicast_macs_are_refused() {
        let mac = |s: &str| s.parse::<MacAddr>().unwrap();
        assert_eq!(unusable_lladdr(mac("00:00:00:00:00:00")), Some("zero"));
        assert_eq!(unusable_lladdr(mac("ff:ff:ff:ff:ff:ff")), Some("broadcast"));
        assert_eq!(unusable_lladdr(mac("01:00:5e:00:00:05")), Some("multicast"));
        assert_eq!(unusable_lladdr(mac("33:33:00:00:00:01")), Some("multicast"));
        assert_eq!(unusable_lladdr(mac("fa:16:3e:11:11:11")), None);
        assert_eq!(unusable_lladdr(mac("02:00:00:00:00:01")), None);
    }
}
