//! The FRR VRF-leak configuration, in upstream's exact wording
//! (`frr.py` `LEAK_VRF_TEMPLATE` as Jinja renders it, blank lines included).

use std::fmt::Write;
use std::net::Ipv4Addr;

/// What FRR redistributes into the VRF's BGP instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redistribute {
    /// `connected` only: /32 and /128 addresses on `bgp_nic`.
    Connected,
    /// `kernel` and `connected`: the subnet advertisement method's VRF routes too.
    KernelAndConnected,
    /// `kernel` only: the VRF routes (the stretched-L2 driver).
    Kernel,
}

/// Renders the VRF leak for `vrf` under `router bgp <asn>`.
///
/// Upstream iterates a Python set, so the order of the `redistribute` lines
/// varies between runs; this renders `kernel` before `connected`, the order
/// the golden scenarios recorded.
pub fn vrf_leak(vrf: &str, asn: &str, router_id: Ipv4Addr, redistribute: Redistribute) -> String {
    let redists: &[&str] = match redistribute {
        Redistribute::Connected => &["connected"],
        Redistribute::KernelAndConnected => &["kernel", "connected"],
        Redistribute::Kernel => &["kernel"],
    };
    let mut t = String::new();
    let _ = write!(
        t,
        "\nrouter bgp {asn}\n  address-family ipv4 unicast\n    import vrf {vrf}\n  exit-address-family\n\n  \
         address-family ipv6 unicast\n    import vrf {vrf}\n  exit-address-family\n\n\
         router bgp {asn} vrf {vrf}\n  bgp router-id {router_id}\n"
    );
    for (i, family) in ["ipv4", "ipv6"].iter().enumerate() {
        if i > 0 {
            t.push('\n');
        }
        let _ = writeln!(t, "  address-family {family} unicast");
        for r in redists {
            let _ = write!(t, "\n    redistribute {r}\n");
        }
        t.push_str("\n  exit-address-family\n");
    }
    t
}

/// Whether `asn` is a BGP AS number FRR accepts (`1..=4294967295` or the
/// `X.Y` asdot form), so it is safe to put in a vtysh script.
pub fn valid_asn(asn: &str) -> bool {
    let plain = |s: &str| !s.is_empty() && s.len() <= 10 && s.bytes().all(|b| b.is_ascii_digit());
    match asn.split_once('.') {
        None => plain(asn) && asn.parse::<u32>().is_ok_and(|v| v > 0),
        Some((hi, lo)) => {
            plain(hi) && plain(lo) && hi.parse::<u16>().is_ok() && lo.parse::<u16>().is_ok()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // frr-and-evpn-renderings.json, steps 0 and 2, byte for byte.
    const CONNECTED: &str = "\nrouter bgp 64999\n  address-family ipv4 unicast\n    import vrf bgp-vrf\n  exit-address-family\n\n  address-family ipv6 unicast\n    import vrf bgp-vrf\n  exit-address-family\n\nrouter bgp 64999 vrf bgp-vrf\n  bgp router-id 192.168.100.11\n  address-family ipv4 unicast\n\n    redistribute connected\n\n  exit-address-family\n\n  address-family ipv6 unicast\n\n    redistribute connected\n\n  exit-address-family\n";
    const KERNEL: &str = "\nrouter bgp 64999\n  address-family ipv4 unicast\n    import vrf bgp-vrf\n  exit-address-family\n\n  address-family ipv6 unicast\n    import vrf bgp-vrf\n  exit-address-family\n\nrouter bgp 64999 vrf bgp-vrf\n  bgp router-id 192.168.100.11\n  address-family ipv4 unicast\n\n    redistribute kernel\n\n    redistribute connected\n\n  exit-address-family\n\n  address-family ipv6 unicast\n\n    redistribute kernel\n\n    redistribute connected\n\n  exit-address-family\n";

    #[test]
    fn vrf_leak_renders_upstream_text_byte_for_byte() {
        let rid = "192.168.100.11".parse().unwrap();
        assert_eq!(
            vrf_leak("bgp-vrf", "64999", rid, Redistribute::Connected),
            CONNECTED
        );
        assert_eq!(
            vrf_leak("bgp-vrf", "64999", rid, Redistribute::KernelAndConnected),
            KERNEL
        );
    }

    // stretched-l2-basic.json, the start step's vtysh_config.
    const KERNEL_ONLY: &str = "\nrouter bgp 64999\n  address-family ipv4 unicast\n    import vrf bgp-vrf\n  exit-address-family\n\n  address-family ipv6 unicast\n    import vrf bgp-vrf\n  exit-address-family\n\nrouter bgp 64999 vrf bgp-vrf\n  bgp router-id 192.168.100.11\n  address-family ipv4 unicast\n\n    redistribute kernel\n\n  exit-address-family\n\n  address-family ipv6 unicast\n\n    redistribute kernel\n\n  exit-address-family\n";

    #[test]
    fn vrf_leak_kernel_only_renders_the_stretched_l2_text() {
        let rid = "192.168.100.11".parse().unwrap();
        assert_eq!(
            vrf_leak("bgp-vrf", "64999", rid, Redistribute::Kernel),
            KERNEL_ONLY
        );
    }

    #[test]
    fn asn_validation_rejects_injection() {
        assert!(valid_asn("64999"));
        assert!(valid_asn("1.10"));
        assert!(!valid_asn("0"));
        assert!(!valid_asn("64999\nno router bgp"));
        assert!(!valid_asn("4294967296"));
    }
}
