//! The FRR texts of the EVPN modes, in upstream's exact wording, and the
//! reading of FRR's running configuration back into the agent's EVPN VRFs.
//!
//! The texts are what upstream's `frr.py` templates (`ADD_VRF_TEMPLATE`,
//! `DEL_VRF_TEMPLATE`, `CONFIGURE_ND_TEMPLATE`) give when Jinja renders them
//! with its defaults: every `{% ... %}` line leaves its newline behind (so
//! the texts hold blank lines where the tags were) and the single trailing
//! newline of the template is dropped. The golden scenarios recorded these
//! texts and FRR's `vtysh -f` reads them as they are.
//!
//! Every value a text holds is typed ([`DevName`], [`Asn`],
//! [`RouteDistinguisher`], addresses, numbers), so no newline or other
//! arbitrary text from OVN can reach vtysh.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use ipnet::Ipv6Net;

use crate::names::evpn;
use crate::DevName;

/// A value of the FRR texts that failed validation, with the value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrrValueError {
    #[error("invalid BGP AS number {0:?} (1-4294967295 or asdot X.Y)")]
    BadAsn(String),
    #[error("invalid route distinguisher/target {0:?} (ASN:NN or IPv4:NN)")]
    BadRouteDistinguisher(String),
    #[error("no route distinguisher {ip}:{vni}: an IPv4:NN value holds 16 bits, or the address is not IPv4")]
    NoRdFor { ip: IpAddr, vni: u32 },
    #[error("invalid IPv6 DNS server list {0:?} (\"{{addr, addr}}\")")]
    BadDnsServers(String),
}

/// A BGP AS number as FRR accepts it: plain `1..=4294967295` or asdot
/// `X.Y` (two 16-bit halves). Kept as written (its canonical form: no
/// leading zeros), as `router bgp` prints it back.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Asn(String);

impl Asn {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Digits only, no sign, no leading zero (bar `0` itself): the forms that
/// print back exactly as they were read.
fn canonical_digits(s: &str, max_len: usize) -> bool {
    !s.is_empty()
        && s.len() <= max_len
        && s.bytes().all(|b| b.is_ascii_digit())
        && (s == "0" || !s.starts_with('0'))
}

impl FromStr for Asn {
    type Err = FrrValueError;
    fn from_str(s: &str) -> Result<Asn, FrrValueError> {
        let ok = match s.split_once('.') {
            None => canonical_digits(s, 10) && s.parse::<u32>().is_ok_and(|v| v > 0),
            Some((hi, lo)) => {
                canonical_digits(hi, 5)
                    && canonical_digits(lo, 5)
                    && hi.parse::<u16>().is_ok()
                    && lo.parse::<u16>().is_ok()
                    && s != "0.0"
            }
        };
        if ok {
            Ok(Asn(s.to_string()))
        } else {
            Err(FrrValueError::BadAsn(s.to_string()))
        }
    }
}

impl TryFrom<u32> for Asn {
    type Error = FrrValueError;
    /// Any non-zero 32-bit number is an AS (0 is reserved).
    fn try_from(v: u32) -> Result<Asn, FrrValueError> {
        if v == 0 {
            return Err(FrrValueError::BadAsn(v.to_string()));
        }
        Ok(Asn(v.to_string()))
    }
}

impl fmt::Display for Asn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A route distinguisher or route target (FRR reads both with the same
/// syntax): `ASN:NN` (a 16-bit AS with a 32-bit number, or a 32-bit AS
/// with a 16-bit number) or `IPv4:NN` (a 16-bit number), the three
/// encodings of RFC 4364 §4.2 / RFC 4360. Printed back as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RouteDistinguisher {
    As { asn: u32, number: u32 },
    Ip { ip: Ipv4Addr, number: u16 },
}

/// Route targets have the route distinguisher's syntax.
pub type RouteTarget = RouteDistinguisher;

impl RouteDistinguisher {
    /// Upstream's default RD for a VNI without one: `<VXLAN source IP>:<vni>`.
    /// Only an IPv4 source and a VNI of 16 bits make a valid value.
    pub fn of_ip_and_vni(ip: IpAddr, vni: u32) -> Result<RouteDistinguisher, FrrValueError> {
        match (ip, u16::try_from(vni)) {
            (IpAddr::V4(ip), Ok(number)) => Ok(RouteDistinguisher::Ip { ip, number }),
            _ => Err(FrrValueError::NoRdFor { ip, vni }),
        }
    }
}

impl FromStr for RouteDistinguisher {
    type Err = FrrValueError;
    fn from_str(s: &str) -> Result<RouteDistinguisher, FrrValueError> {
        let bad = || FrrValueError::BadRouteDistinguisher(s.to_string());
        let (admin, number) = s.split_once(':').ok_or_else(bad)?;
        if !canonical_digits(number, 10) {
            return Err(bad());
        }
        let number: u32 = number.parse().map_err(|_| bad())?;
        if admin.contains('.') {
            // `Ipv4Addr`'s parser takes only the dotted-quad form and prints
            // it back the same way.
            let ip: Ipv4Addr = admin.parse().map_err(|_| bad())?;
            let number = u16::try_from(number).map_err(|_| bad())?;
            return Ok(RouteDistinguisher::Ip { ip, number });
        }
        if !canonical_digits(admin, 10) {
            return Err(bad());
        }
        let asn: u32 = admin.parse().map_err(|_| bad())?;
        if asn > u32::from(u16::MAX) && number > u32::from(u16::MAX) {
            return Err(bad());
        }
        Ok(RouteDistinguisher::As { asn, number })
    }
}

impl fmt::Display for RouteDistinguisher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteDistinguisher::As { asn, number } => write!(f, "{asn}:{number}"),
            RouteDistinguisher::Ip { ip, number } => write!(f, "{ip}:{number}"),
        }
    }
}

/// What an EVPN VRF's BGP instance redistributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RedistSource {
    Connected,
    Kernel,
}

impl RedistSource {
    pub fn as_str(self) -> &'static str {
        match self {
            RedistSource::Connected => "connected",
            RedistSource::Kernel => "kernel",
        }
    }
}

/// The inputs of the add-vrf text (upstream's `vrf_reconfigure(...,
/// 'add-vrf')`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddVrf {
    /// `vrf-<vni>`.
    pub vrf: DevName,
    pub vni: u32,
    pub asn: Asn,
    /// Rendered in this order under both address families.
    pub redistribute: Vec<RedistSource>,
    /// Upstream renders the first of the annotation's RDs, or
    /// `<evpn_local_ip>:<vni>` (even when that IP is unset: `rd None:<vni>`,
    /// D15). Here there always is one: the caller picks it.
    pub rd: RouteDistinguisher,
    /// Each gives `route-target import` and `route-target export`.
    pub route_targets: Vec<RouteTarget>,
    pub import_targets: Vec<RouteTarget>,
    pub export_targets: Vec<RouteTarget>,
}

/// The add-vrf text, as upstream's template renders it.
pub fn add_vrf(v: &AddVrf) -> String {
    let mut t = String::new();
    let _ = write!(
        t,
        "\nvrf {vrf}\n  vni {vni}\nexit-vrf\n\nrouter bgp {asn} vrf {vrf}\n",
        vrf = v.vrf,
        vni = v.vni,
        asn = v.asn
    );
    for family in ["ipv4", "ipv6"] {
        let _ = writeln!(t, "  address-family {family} unicast");
        for r in &v.redistribute {
            let _ = write!(t, "\n    redistribute {}\n", r.as_str());
        }
        t.push_str("\n  exit-address-family\n");
    }
    t.push_str(
        "  address-family l2vpn evpn\n    advertise ipv4 unicast\n    advertise ipv6 unicast\n",
    );
    // The `{% if %}` line's newline, the rd line, the `{% endif %}` line's.
    let _ = write!(t, "\n    rd {}\n\n", v.rd);
    for rt in &v.route_targets {
        let _ = write!(
            t,
            "\n    route-target import {rt}\n    route-target export {rt}\n"
        );
    }
    t.push('\n');
    for rt in &v.export_targets {
        let _ = write!(t, "\n    route-target export {rt}\n");
    }
    t.push('\n');
    for rt in &v.import_targets {
        let _ = write!(t, "\n    route-target import {rt}\n");
    }
    t.push_str("\n  exit-address-family\n");
    t
}

/// The annotations of one L2 VNI (`exposing_method = l2vni`) for its
/// `vni` block. Upstream has no template for the method: the text is the
/// rewrite's own (docs/evpn.md, "L2 (l2vni)").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct L2Vni {
    pub vni: u32,
    /// The annotation's first RD; `None`: FRR's automatic one.
    pub rd: Option<RouteDistinguisher>,
    /// Each gives `route-target import` and `route-target export`.
    pub route_targets: Vec<RouteTarget>,
    pub import_targets: Vec<RouteTarget>,
    pub export_targets: Vec<RouteTarget>,
}

/// The `vni <n>` block of an L2 VNI, empty when the annotations give no
/// RD and no route target (FRR then derives `<router-id>:<n>` and
/// `<AS>:<n>`). Route targets in the L3 text's order: both directions,
/// export, import.
pub fn l2_vni_block(v: &L2Vni) -> String {
    if v.rd.is_none()
        && v.route_targets.is_empty()
        && v.import_targets.is_empty()
        && v.export_targets.is_empty()
    {
        return String::new();
    }
    let mut t = format!("    vni {}\n", v.vni);
    if let Some(rd) = &v.rd {
        let _ = writeln!(t, "      rd {rd}");
    }
    for rt in &v.route_targets {
        let _ = write!(
            t,
            "      route-target import {rt}\n      route-target export {rt}\n"
        );
    }
    for rt in &v.export_targets {
        let _ = writeln!(t, "      route-target export {rt}");
    }
    for rt in &v.import_targets {
        let _ = writeln!(t, "      route-target import {rt}");
    }
    t.push_str("    exit-vni\n");
    t
}

/// The L2 VNIs' text: `advertise-all-vni` under the default instance's
/// `address-family l2vpn evpn` (zebra then announces every VXLAN device's
/// VNI: type-2 and type-3 routes), then the VNIs' blocks
/// ([`l2_vni_block`]).
pub fn advertise_all_vni(asn: &Asn, vni_blocks: &[String]) -> String {
    let mut t = format!("\nrouter bgp {asn}\n  address-family l2vpn evpn\n    advertise-all-vni\n");
    for b in vni_blocks {
        t.push_str(b);
    }
    t.push_str("  exit-address-family\n");
    t
}

/// The inputs of the del-vrf text (upstream's `vrf_reconfigure(...,
/// 'del-vrf')`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DelVrf {
    pub vrf: DevName,
    pub asn: Asn,
    /// The interfaces whose `interface` stanza goes with the VRF. Upstream
    /// always names one, `veth-<vrf>` (the SB driver's `veth-vrf-<vni>`),
    /// also in the NB vrf mode whose interface is `vrf<uuid[:11]>`; the
    /// caller names the real ones.
    pub interfaces: Vec<DevName>,
}

/// The del-vrf text, as upstream's template renders it (one `no interface`
/// line per interface, where upstream has its one).
pub fn del_vrf(v: &DelVrf) -> String {
    let mut t = format!("\nno vrf {}\n", v.vrf);
    for i in &v.interfaces {
        let _ = writeln!(t, "no interface {i}");
    }
    let _ = writeln!(t, "no router bgp {} vrf {}", v.asn, v.vrf);
    t
}

/// The inputs of the IPv6 router-advertisement text (upstream's
/// `nd_reconfigure`), for the interface of an EVPN network with an IPv6
/// subnet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nd {
    pub interface: DevName,
    /// The subnet's `cidr` (DHCP_Options).
    pub prefix: Ipv6Net,
    /// SLAAC allowed: the subnet's `dhcpv6_stateless` option is `true`.
    /// Otherwise the prefix gets `no-autoconfig`.
    pub autoconfig: bool,
    /// `ipv6 nd rdnss` servers, in order.
    pub dns_servers: Vec<Ipv6Addr>,
}

/// The DHCPv6 option keys upstream's `nd_reconfigure` reads.
pub mod dhcpv6_option {
    pub const STATELESS: &str = "dhcpv6_stateless";
    pub const DNS_SERVER: &str = "dns_server";
}

impl Nd {
    /// The ND inputs from a DHCPv6 options row's `options`, read as
    /// upstream reads them: `dhcpv6_stateless` is `true` or SLAAC is off;
    /// `dns_server` is OVN's set syntax `{addr, addr}` (braces optional
    /// here, an empty value means none). A server that is not an IPv6
    /// address is an error naming the value.
    pub fn from_dhcpv6_options(
        interface: DevName,
        prefix: Ipv6Net,
        options: &BTreeMap<String, String>,
    ) -> Result<Nd, FrrValueError> {
        let autoconfig = options
            .get(dhcpv6_option::STATELESS)
            .is_some_and(|v| v == "true");
        let dns_servers = match options.get(dhcpv6_option::DNS_SERVER) {
            None => Vec::new(),
            Some(v) => parse_dns_servers(v)?,
        };
        Ok(Nd {
            interface,
            prefix,
            autoconfig,
            dns_servers,
        })
    }
}

fn parse_dns_servers(value: &str) -> Result<Vec<Ipv6Addr>, FrrValueError> {
    let bad = || FrrValueError::BadDnsServers(value.to_string());
    let inner = match value.strip_prefix('{') {
        Some(rest) => rest.strip_suffix('}').ok_or_else(bad)?,
        None => value,
    };
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    inner
        .split(',')
        .map(|s| s.trim().parse::<Ipv6Addr>().map_err(|_| bad()))
        .collect()
}

/// The ND text, as upstream's template renders it (upstream always sets
/// the managed-config flag).
pub fn nd(v: &Nd) -> String {
    let mut t = format!(
        "\ninterface {}\n\n ipv6 nd managed-config-flag\n\n",
        v.interface
    );
    for s in &v.dns_servers {
        let _ = write!(t, "\n ipv6 nd rdnss {s}\n");
    }
    let no_auto = if v.autoconfig { "" } else { " no-autoconfig" };
    let _ = write!(
        t,
        "\n ipv6 nd prefix {}{no_auto}\n no ipv6 nd suppress-ra\nexit",
        v.prefix
    );
    t
}

/// An agent-shaped EVPN VRF found in FRR's running configuration: what a
/// del-vrf text for it names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EvpnVrfSeen {
    /// The AS of its `router bgp <as> vrf vrf-<n>`, if there is one.
    pub asn: Option<String>,
    /// Agent EVPN interfaces with an `interface` stanza in this VRF.
    pub interfaces: BTreeSet<String>,
}

/// The agent's EVPN objects in FRR's running configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EvpnRunning {
    /// By VNI: each `vrf vrf-<n>` stanza holding `vni <n>`.
    pub vrfs: BTreeMap<u32, EvpnVrfSeen>,
    /// Agent-named interface stanzas whose VRF the text does not tell: FRR
    /// prints `interface NAME vrf VRF` only with the netns VRF backend
    /// (recent releases), so with VRF-lite an NB `vrf<uuid[:11]>` stanza
    /// comes without its VRF. (`veth-vrf-<n>` names its VRF itself and is
    /// placed in `vrf-<n>` when that VRF is present.)
    pub unplaced_interfaces: BTreeSet<String>,
}

/// Whether `name` is an interface the EVPN modes give an `interface`
/// stanza: the SB driver's `veth-vrf-<n>` or the NB vrf mode's
/// `vrf<uuid[:11]>`.
fn agent_interface(name: &str) -> bool {
    evpn::vni_of_sb_veth(name).is_some() || evpn::is_nb_vrf_veth(name)
}

/// Reads the agent's EVPN VRFs out of `show running-config` text.
///
/// Stanzas start at column 0 (`vrf NAME`, `interface NAME [vrf VRF]`,
/// `router bgp AS [vrf VRF]`) and run until the next line at column 0
/// (`exit`, `exit-vrf`, `!` or another stanza); anything the agent does not
/// write is passed over.
pub fn evpn_vrfs_of_running_config(text: &str) -> EvpnRunning {
    enum In {
        Vrf(String),
        Other,
    }
    let mut state = In::Other;
    // vrf name -> the VNIs its stanza holds.
    let mut vnis: BTreeMap<String, u32> = BTreeMap::new();
    let mut bgp_as: BTreeMap<String, String> = BTreeMap::new();
    let mut interfaces: Vec<(String, Option<String>)> = Vec::new();
    for line in text.lines() {
        let indented = line.starts_with([' ', '\t']);
        let words: Vec<&str> = line.split_whitespace().collect();
        if indented {
            if let (In::Vrf(name), ["vni", n, ..]) = (&state, words.as_slice()) {
                if let Ok(n) = n.parse::<u32>() {
                    vnis.insert(name.clone(), n);
                }
            }
            continue;
        }
        state = In::Other;
        match words.as_slice() {
            ["vrf", name] => state = In::Vrf(name.to_string()),
            ["interface", name] => interfaces.push((name.to_string(), None)),
            ["interface", name, "vrf", vrf] => {
                interfaces.push((name.to_string(), Some(vrf.to_string())))
            }
            ["router", "bgp", asn, "vrf", vrf] => {
                bgp_as
                    .entry(vrf.to_string())
                    .or_insert_with(|| asn.to_string());
            }
            _ => {}
        }
    }
    let mut out = EvpnRunning::default();
    let mut vni_of_name: BTreeMap<String, u32> = BTreeMap::new();
    for (name, vni) in vnis {
        if evpn::vni_of_vrf(&name) == Some(vni) {
            out.vrfs.insert(
                vni,
                EvpnVrfSeen {
                    asn: bgp_as.get(&name).cloned(),
                    interfaces: BTreeSet::new(),
                },
            );
            vni_of_name.insert(name, vni);
        }
    }
    for (name, vrf) in interfaces {
        if !agent_interface(&name) {
            continue;
        }
        let vni = match &vrf {
            Some(vrf) => vni_of_name.get(vrf).copied(),
            None => evpn::vni_of_sb_veth(&name).filter(|n| out.vrfs.contains_key(n)),
        };
        match vni.and_then(|n| out.vrfs.get_mut(&n)) {
            Some(seen) => {
                seen.interfaces.insert(name);
            }
            // An interface named in a VRF the agent does not own is not ours
            // to place.
            None if vrf.is_none() => {
                out.unplaced_interfaces.insert(name);
            }
            None => {}
        }
    }
    out
}

/// One BGP session of FRR, per VRF and address family, as `show bgp vrf
/// all summary json` reports it: what the fabric was told from here.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BgpSession {
    /// FRR's VRF name (`default` for the default instance).
    pub vrf: String,
    /// FRR's address family key: `ipv4Unicast`, `ipv6Unicast`, `l2VpnEvpn`...
    pub family: String,
    /// The neighbor: an IP address, or an interface (unnumbered BGP).
    pub peer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_as: Option<u64>,
    /// FRR's state: `Established`, `Active`, `Connect`, `Idle`...
    pub state: String,
    /// Seconds since the session was established (FRR's `peerUptimeMsec`;
    /// for a session that is down, since it went down).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uptime_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefixes_received: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefixes_sent: Option<u64>,
}

impl BgpSession {
    pub fn established(&self) -> bool {
        self.state == "Established"
    }
}

/// One prefix in one of FRR's BGP tables, as `show bgp [vrf V] ipv4|ipv6
/// unicast PREFIX json` reports it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BgpPrefix {
    /// FRR's VRF name (`default` for the default instance).
    pub vrf: String,
    /// The paths FRR holds for it (ours is `sourced`; a leaked one comes
    /// from the VRF it was imported from).
    pub paths: usize,
    /// The peers FRR sent it to (`advertisedTo`).
    pub advertised_to: BTreeSet<String>,
}

mod evpn_route;
mod l2;
pub use evpn_route::{EvpnRoute, EvpnRouteKey};
pub use l2::{
    forget_l2_vni_removal, l2_vni_removal, l2_vnis_of_running_config, L2Running, L2VniConfig,
    L2VniRemoval,
};

#[cfg(test)]
mod tests;
