//! The routes of FRR's `l2vpn evpn` table that `status` and `explain`
//! look up for the EVPN modes' exposures: a VM's MAC/IP (type-2) and an
//! IP prefix (type-5), as FRR 8.4 keys them in its JSON
//! (`[2]:[0]:[48]:[MAC]:[32]:[IP]`, `[5]:[0]:[32]:[IP]`).

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

use crate::MacAddr;

/// What an EVPN route announces, the part `status` matches an exposure on
/// (the route distinguisher and Ethernet tag aside).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EvpnRouteKey {
    /// Type-2, MAC/IP advertisement with an IP.
    MacIp { mac: MacAddr, ip: IpAddr },
    /// Type-5, IP prefix.
    Prefix(IpNet),
}

impl EvpnRouteKey {
    /// The key of one member of FRR's JSON (`[2]:[0]:[48]:[fa:16:3e:11:11:11]:[32]:[172.24.4.10]`,
    /// `[5]:[0]:[32]:[172.24.4.10]`). `None` for every other member: a
    /// type-2 without an IP, type-1/3/4, or anything that does not parse.
    pub fn of_frr_key(key: &str) -> Option<EvpnRouteKey> {
        let inner = key.strip_prefix('[')?.strip_suffix(']')?;
        let fields: Vec<&str> = inner.split("]:[").collect();
        match fields.as_slice() {
            ["2", _tag, "48", mac, len, ip] => {
                let ip: IpAddr = ip.parse().ok()?;
                let full = if ip.is_ipv4() { "32" } else { "128" };
                (*len == full).then_some(())?;
                Some(EvpnRouteKey::MacIp {
                    mac: mac.parse().ok()?,
                    ip,
                })
            }
            ["5", _tag, len, ip] => {
                let net = IpNet::new(ip.parse().ok()?, len.parse().ok()?).ok()?;
                Some(EvpnRouteKey::Prefix(net.trunc()))
            }
            _ => None,
        }
    }
}

impl fmt::Display for EvpnRouteKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvpnRouteKey::MacIp { mac, ip } => write!(f, "type-2 route {mac} {ip}"),
            EvpnRouteKey::Prefix(net) => write!(f, "type-5 route {net}"),
        }
    }
}

/// One route of FRR's `l2vpn evpn` table, as `show bgp l2vpn evpn route
/// detail type macip|prefix json` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvpnRoute {
    /// The route distinguisher it is held under.
    pub rd: String,
    pub key: EvpnRouteKey,
    /// One of its paths is this node's own (FRR: `local`/`sourced`, or a
    /// path learnt from no peer), not a route another VTEP sent.
    pub local: bool,
    /// The VNI (label) of its first path, where FRR shows one.
    pub vni: Option<u32>,
    /// The peers FRR sent it to (`advertisedTo`).
    pub advertised_to: BTreeSet<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frr_keys_of_type2_with_ip_and_type5_parse_and_the_rest_does_not() {
        assert_eq!(
            EvpnRouteKey::of_frr_key("[2]:[0]:[48]:[fa:16:3e:11:11:11]:[32]:[172.24.4.10]"),
            Some(EvpnRouteKey::MacIp {
                mac: "fa:16:3e:11:11:11".parse().unwrap(),
                ip: "172.24.4.10".parse().unwrap()
            })
        );
        assert_eq!(
            EvpnRouteKey::of_frr_key("[2]:[0]:[48]:[fa:16:3e:11:11:11]:[128]:[2001:db8::10]")
                .map(|k| k.to_string()),
            Some("type-2 route fa:16:3e:11:11:11 2001:db8::10".to_string())
        );
        assert_eq!(
            EvpnRouteKey::of_frr_key("[5]:[0]:[24]:[10.0.0.1]"),
            Some(EvpnRouteKey::Prefix("10.0.0.0/24".parse().unwrap()))
        );
        for other in [
            "[2]:[0]:[48]:[fa:16:3e:11:11:11]",
            "[3]:[0]:[32]:[10.1.1.1]",
            "[2]:[0]:[48]:[zz:16:3e:11:11:11]:[32]:[172.24.4.10]",
            "[2]:[0]:[48]:[fa:16:3e:11:11:11]:[24]:[172.24.4.10]",
            "[5]:[0]:[33]:[10.0.0.1]",
            "rd",
            "",
        ] {
            assert_eq!(EvpnRouteKey::of_frr_key(other), None, "{other}");
        }
    }
}
