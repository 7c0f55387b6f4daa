//! Neutron's conventions inside OVN rows: the `external_ids`/`options` keys,
//! port and NAT types and boolean spelling the agent reads, the
//! `neutron-<uuid>` naming, and the address-string formats. The one home of
//! these strings: the parsers here and the event predicates (`obgp-events`)
//! both name them from here.

use std::net::IpAddr;

use ipnet::IpNet;
use obgp_netmodel::frr::{RouteDistinguisher, RouteTarget};

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
    /// `options:activation-strategy`, which Neutron sets to `rarp` on a
    /// port whose `requested-chassis` names the two chassis of a live
    /// migration (read by the port conditions, `nb_conditions`).
    pub const ACTIVATION_STRATEGY: &str = "activation-strategy";
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
    /// networking-bgpvpn's route distinguishers and targets, Python list
    /// literals (`"['64999:1001']"`).
    pub const EVPN_RD: &str = "neutron_bgpvpn:rd";
    pub const EVPN_RT: &str = "neutron_bgpvpn:rt";
    pub const EVPN_IT: &str = "neutron_bgpvpn:it";
    pub const EVPN_ET: &str = "neutron_bgpvpn:et";
}

/// The `options` keys of a DHCP_Options row the EVPN vrf mode reads (the
/// IPv4 gateway, and what the IPv6 router advertisement says).
pub mod dhcp_option {
    pub const ROUTER: &str = "router";
    pub const DHCPV6_STATELESS: &str = obgp_netmodel::frr::dhcpv6_option::STATELESS;
    pub const DNS_SERVER: &str = obgp_netmodel::frr::dhcpv6_option::DNS_SERVER;
    /// All of them: the options the snapshot keeps.
    pub const READ: &[&str] = &[ROUTER, DHCPV6_STATELESS, DNS_SERVER];
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
/// Prefix of a gateway's chassis-redirect port: `cr-lrp-<router port id>`
/// (the router port's id is also the name of its provider-side peer).
pub const CR_LRP_PREFIX: &str = "cr-lrp-";

/// `neutron-<id>` for an id; the name Neutron gives switches and routers.
pub fn ovn_name(id: &str) -> String {
    format!("{NAME_PREFIX}{id}")
}

/// Strips one leading `neutron-`, as upstream does before comparing router
/// references (`router.py`).
pub fn strip_prefix(name: &str) -> &str {
    name.strip_prefix(NAME_PREFIX).unwrap_or(name)
}

/// The chassis names (hostnames) of an LSP's `options:requested-chassis`:
/// comma-separated, each trimmed. One name usually; two while a live
/// migration is in progress. The snapshot's binding
/// ([`crate::LogicalSwitchPort::binding_candidates`]) and the event
/// filters (`obgp-events`' `port_chassis`) both read it through here, so
/// they agree on a port's host. (Upstream's `get_port_chassis` does not
/// trim; Neutron writes no spaces.)
pub fn requested_chassis(value: &str) -> impl Iterator<Item = &str> + Clone {
    value.split(',').map(str::trim)
}

/// Whether `requested-chassis` binds a port of type `port_type` (when it
/// is set): every type but `virtual`, whose chassis is the one of its
/// active parent (upstream `get_port_chassis`). A port it does not bind is
/// bound by `neutron:host_id`. The snapshot and the event filters decide
/// through here.
pub fn requested_chassis_binds(port_type: &str) -> bool {
    port_type != port_type::VIRTUAL
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

/// networking-bgpvpn's `type`: which EVPN mode the network is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BgpVpnType {
    /// `l3`: EVPN type-5 routes in a per-VNI VRF.
    L3,
    /// `l2`: recognised; no driver of the agent acts on it.
    L2,
}

/// A network's (or port's) networking-bgpvpn annotations, every value
/// validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BgpVpn {
    /// `neutron_bgpvpn:type` (the SB driver's ports carry none).
    pub kind: Option<BgpVpnType>,
    /// `neutron_bgpvpn:vni`, `1..=16777215`.
    pub vni: u32,
    /// `neutron_bgpvpn:as`.
    pub asn: Option<u32>,
    /// `neutron_bgpvpn:rd` (upstream uses the first).
    pub rd: Vec<RouteDistinguisher>,
    /// `neutron_bgpvpn:rt`: imported and exported.
    pub route_targets: Vec<RouteTarget>,
    /// `neutron_bgpvpn:it`.
    pub import_targets: Vec<RouteTarget>,
    /// `neutron_bgpvpn:et`.
    pub export_targets: Vec<RouteTarget>,
}

/// A networking-bgpvpn annotation that does not parse: the key, the value
/// (cut to [`BgpVpnError::SHOWN`] characters) and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{key}={value:?}: {reason}")]
pub struct BgpVpnError {
    pub key: &'static str,
    pub value: String,
    pub reason: String,
}

impl BgpVpnError {
    /// How much of a bad value the error keeps: enough to recognise it, not
    /// a megabyte of it in every log line.
    pub const SHOWN: usize = 80;

    fn new(key: &'static str, value: &str, reason: impl Into<String>) -> BgpVpnError {
        let mut shown: String = value.chars().take(Self::SHOWN).collect();
        if shown.len() < value.len() {
            shown.push('…');
        }
        BgpVpnError {
            key,
            value: shown,
            reason: reason.into(),
        }
    }
}

/// The longest list annotation read: far beyond any real list of route
/// targets, short enough that a garbled one costs nothing.
const MAX_LIST_BYTES: usize = 4096;

/// Reads the networking-bgpvpn annotations from a row's `external_ids`
/// (`get` looks a key up; Neutron's `""` counts as unset). `None` when the
/// row has neither `neutron_bgpvpn:vni` nor `neutron_bgpvpn:type`: it is not
/// a BGPVPN network. Otherwise every present key must parse, and the VNI
/// must be there.
pub fn bgpvpn_of<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Option<Result<BgpVpn, BgpVpnError>> {
    let get = |k: &str| get(k).filter(|v| !v.is_empty());
    let (vni, kind) = (get(key::EVPN_VNI), get(key::EVPN_TYPE));
    if vni.is_none() && kind.is_none() {
        return None;
    }
    Some((|| {
        let kind = kind
            .map(|v| match v {
                "l3" => Ok(BgpVpnType::L3),
                "l2" => Ok(BgpVpnType::L2),
                _ => Err(BgpVpnError::new(key::EVPN_TYPE, v, "not l3 or l2")),
            })
            .transpose()?;
        let vni = vni.ok_or_else(|| {
            BgpVpnError::new(
                key::EVPN_VNI,
                "",
                format!("missing ({} is set)", key::EVPN_TYPE),
            )
        })?;
        let vni = decimal(vni)
            .filter(|v| (1..=u64::from(obgp_netmodel::MAX_VNI)).contains(v))
            .ok_or_else(|| BgpVpnError::new(key::EVPN_VNI, vni, "not a VNI (1-16777215)"))?
            as u32;
        let asn = get(key::EVPN_AS)
            .map(|v| {
                decimal(v)
                    .filter(|a| (1..=u64::from(u32::MAX)).contains(a))
                    .map(|a| a as u32)
                    .ok_or_else(|| {
                        BgpVpnError::new(key::EVPN_AS, v, "not an AS number (1-4294967295)")
                    })
            })
            .transpose()?;
        let list = |k: &'static str| match get(k) {
            None => Ok(Vec::new()),
            Some(v) => route_list(v).map_err(|why| BgpVpnError::new(k, v, why)),
        };
        Ok(BgpVpn {
            kind,
            vni,
            asn,
            rd: list(key::EVPN_RD)?,
            route_targets: list(key::EVPN_RT)?,
            import_targets: list(key::EVPN_IT)?,
            export_targets: list(key::EVPN_ET)?,
        })
    })())
}

/// A plain decimal number as `str(int)` writes it: ASCII digits, no sign,
/// no leading zero, at most 10 digits.
fn decimal(s: &str) -> Option<u64> {
    let ok = !s.is_empty()
        && s.len() <= 10
        && s.bytes().all(|b| b.is_ascii_digit())
        && (s == "0" || !s.starts_with('0'));
    ok.then(|| s.parse().ok()).flatten()
}

/// A Python list of string literals, as `str(list)` or `json.dumps` writes
/// one: `[]`, `['a', 'b']`, `["a","b"]`, spaces around any token, a
/// trailing comma. Each string must be a route distinguisher/target; no
/// escapes (none appears in one).
fn route_list(v: &str) -> Result<Vec<RouteDistinguisher>, String> {
    if v.len() > MAX_LIST_BYTES {
        return Err(format!("longer than {MAX_LIST_BYTES} bytes"));
    }
    let inner = v
        .trim_matches(PY_SPACE)
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .ok_or("not a Python list literal")?;
    let mut out = Vec::new();
    let mut rest = inner.trim_start_matches(PY_SPACE);
    while !rest.is_empty() {
        let quote = rest
            .chars()
            .next()
            .filter(|c| *c == '\'' || *c == '"')
            .ok_or("list element is not a quoted string")?;
        let body = &rest[1..];
        let end = body.find(quote).ok_or("unterminated string")?;
        let item = &body[..end];
        if item.contains('\\') {
            return Err("escapes are not accepted".into());
        }
        out.push(
            item.parse::<RouteDistinguisher>()
                .map_err(|e| e.to_string())?,
        );
        rest = body[end + 1..].trim_start_matches(PY_SPACE);
        match rest.strip_prefix(',') {
            Some(r) => rest = r.trim_start_matches(PY_SPACE),
            None if rest.is_empty() => {}
            None => return Err("list elements are not separated by commas".into()),
        }
    }
    Ok(out)
}

/// The blanks Python's tokenizer skips between tokens of one logical line.
const PY_SPACE: &[char] = &[' ', '\t'];

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn bgpvpn(pairs: &[(&str, &str)]) -> Option<Result<BgpVpn, BgpVpnError>> {
        let m = ids(pairs);
        bgpvpn_of(|k| m.get(k).map(String::as_str))
    }

    fn rds(list: &[&str]) -> Vec<RouteDistinguisher> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn bgpvpn_annotations_parse_as_networking_bgpvpn_writes_them() {
        assert_eq!(bgpvpn(&[]), None);
        assert_eq!(bgpvpn(&[(key::EVPN_AS, "64999")]), None);
        assert_eq!(bgpvpn(&[(key::EVPN_VNI, ""), (key::EVPN_TYPE, "")]), None);
        // The NB vrf mode's switch (evpn-nb-vrf.json).
        let nb = bgpvpn(&[
            (key::EVPN_TYPE, "l3"),
            (key::EVPN_VNI, "1001"),
            (key::EVPN_RD, "['64999:1001']"),
            (key::EVPN_RT, "['64999:1001']"),
            (key::EVPN_IT, "['64999:2001']"),
            (key::EVPN_ET, "['64999:3001']"),
        ]);
        assert_eq!(
            nb,
            Some(Ok(BgpVpn {
                kind: Some(BgpVpnType::L3),
                vni: 1001,
                asn: None,
                rd: rds(&["64999:1001"]),
                route_targets: rds(&["64999:1001"]),
                import_targets: rds(&["64999:2001"]),
                export_targets: rds(&["64999:3001"]),
            }))
        );
        // The SB driver's port: vni and as, no type.
        let sb = bgpvpn(&[(key::EVPN_VNI, "16777215"), (key::EVPN_AS, "4294967295")])
            .unwrap()
            .unwrap();
        assert_eq!(
            (sb.kind, sb.vni, sb.asn),
            (None, 16_777_215, Some(u32::MAX))
        );
        assert!(sb.rd.is_empty() && sb.route_targets.is_empty());
        let l2 = bgpvpn(&[(key::EVPN_TYPE, "l2"), (key::EVPN_VNI, "1")]);
        assert_eq!(l2.unwrap().unwrap().kind, Some(BgpVpnType::L2));
        // Every list spelling Python's literal_eval takes for a list of strings.
        for (text, want) in [
            ("[]", vec![]),
            (" [ ] ", vec![]),
            ("['1:1', \"10.0.0.1:2\"]", vec!["1:1", "10.0.0.1:2"]),
            ("[\"1:1\",\"2:2\"]", vec!["1:1", "2:2"]),
            ("[ '1:1' ,\t'2:2' , ]", vec!["1:1", "2:2"]),
        ] {
            let got = bgpvpn(&[(key::EVPN_VNI, "5"), (key::EVPN_RT, text)]);
            assert_eq!(got.unwrap().unwrap().route_targets, rds(&want), "{text:?}");
        }
    }

    #[test]
    fn bad_bgpvpn_annotations_are_errors_naming_the_key_and_value() {
        let long = format!("['{}']", "1:1', '".repeat(1000));
        let huge = "1".repeat(40);
        let cases: &[(&str, &str)] = &[
            (key::EVPN_TYPE, "L3"),
            (key::EVPN_TYPE, "l3\n"),
            (key::EVPN_VNI, "0"),
            (key::EVPN_VNI, "16777216"),
            (key::EVPN_VNI, "01001"),
            (key::EVPN_VNI, "+1001"),
            (key::EVPN_VNI, " 1001"),
            (key::EVPN_VNI, "1_001"),
            (key::EVPN_VNI, "１００１"),
            (key::EVPN_VNI, &huge),
            (key::EVPN_AS, "0"),
            (key::EVPN_AS, "4294967296"),
            (key::EVPN_AS, "64999\nexit"),
            (key::EVPN_AS, "65000.1"),
            (key::EVPN_RT, "'64999:1'"),
            (key::EVPN_RT, "['64999:1'"),
            (key::EVPN_RT, "['64999:1]"),
            (key::EVPN_RT, "[64999:1]"),
            (key::EVPN_RT, "['64999:1' '2:2']"),
            (key::EVPN_RT, "['64999:1',,]"),
            (key::EVPN_RT, "[,]"),
            (key::EVPN_RT, "['64999:1\\n']"),
            (key::EVPN_RT, "['64999:1\nexit']"),
            (key::EVPN_RT, "['64999:１']"),
            (key::EVPN_RT, "['None:1001']"),
            (key::EVPN_RD, "['4200000000:65536']"),
            (key::EVPN_IT, "('64999:1',)"),
            (key::EVPN_ET, "[b'64999:1']"),
            (key::EVPN_ET, &long),
        ];
        for (k, v) in cases {
            let got = if *k == key::EVPN_VNI {
                bgpvpn(&[(k, v)])
            } else {
                bgpvpn(&[(key::EVPN_VNI, "1001"), (k, v)])
            };
            let err = got.unwrap().unwrap_err();
            assert_eq!(err.key, *k, "{v:?}: {err}");
            assert!(err.value.chars().count() <= BgpVpnError::SHOWN + 1, "{err}");
            assert!(v.starts_with(err.value.trim_end_matches('…')), "{err}");
            assert!(err.to_string().starts_with(&format!("{k}=")), "{err}");
        }
        // A type without a VNI names the missing VNI.
        let err = bgpvpn(&[(key::EVPN_TYPE, "l3")]).unwrap().unwrap_err();
        assert_eq!(err.key, key::EVPN_VNI);
        assert!(err.reason.contains("missing"), "{err}");
    }

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
