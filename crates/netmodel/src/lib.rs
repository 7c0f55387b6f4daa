//! The vocabulary of node objects.
//!
//! `desired_state` describes what must exist on the node with these types, the
//! observer describes what does exist with the same types, and the planner
//! diffs the two. Every value here is already parsed and validated: a device
//! name is a [`DevName`], an address an [`IpNet`], a MAC a [`MacAddr`], so
//! nothing that reaches netlink, `ovs-ofctl` or `vtysh` is an unchecked string
//! from OVN.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

pub use bridge_fdb::BridgeFdbEntry;
pub use ipnet::IpNet;
use serde::{Deserialize, Serialize};

pub mod bridge_fdb;
pub mod exposable;
pub mod frr;
pub mod hash;
pub mod names;

/// Routing protocol numbers the agent writes or must recognise.
pub mod proto {
    /// `proto boot`: what upstream (and we) tag the agent's routes with.
    pub const BOOT: u8 = 3;
    /// `proto kernel`: routes the kernel adds for addresses.
    pub const KERNEL: u8 = 2;
    /// `proto static`.
    pub const STATIC: u8 = 4;
    /// FRR's zebra (`proto 186`). Never deleted by the agent (O5).
    pub const FRR: u8 = 186;
    /// The agent's announcement routes (`announce_with = route`): a number
    /// no routing daemon in `/etc/iproute2/rt_protos{,.d}` uses, and not
    /// one zebra counts as its own (those it flushes at start and does not
    /// redistribute as kernel routes: 11, 42, 186-198), nor OVN's 84.
    pub const ANNOUNCE: u8 = 44;
}

/// Route scopes (rtnetlink `rt_scope_t`).
pub mod scope {
    pub const UNIVERSE: u8 = 0;
    pub const LINK: u8 = 253;
    pub const HOST: u8 = 254;
}

/// OpenFlow cookies owned by the agent.
pub mod cookie {
    /// MAC-tweak flows on provider bridges.
    pub const MAC_TWEAK: u64 = 999;
    /// EVPN flows.
    pub const EVPN: u64 = 998;
}

/// The largest VXLAN network identifier (24 bits).
pub const MAX_VNI: u32 = 0xff_ffff;

/// An Ethernet address.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MacAddr(pub [u8; 6]);

impl FromStr for MacAddr {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ModelError::BadMac(s.to_string());
        let mut out = [0u8; 6];
        let mut parts = s.split(':');
        for byte in out.iter_mut() {
            let p = parts.next().ok_or_else(bad)?;
            if p.is_empty() || p.len() > 2 {
                return Err(bad());
            }
            *byte = u8::from_str_radix(p, 16).map_err(|_| bad())?;
        }
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(MacAddr(out))
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for MacAddr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MacAddr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A Linux interface name: 1 to 15 bytes, no `/`, no whitespace, not `.` or
/// `..` (the kernel's `dev_valid_name`). Anything derived from OVN (bridge
/// names, VLAN devices) goes through this before it reaches a request.
///
/// Stored inline (the kernel's `IFNAMSIZ` buffer): cloning one never
/// allocates and comparing two is a 16-byte compare. Tens of thousands of
/// node objects name a device on every reconcile, so this matters.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DevName {
    /// The name, zero-padded. A name never holds a NUL (control bytes are
    /// rejected), so comparing the padded arrays orders names exactly as
    /// comparing the strings does.
    bytes: [u8; DevName::MAX_LEN],
    len: u8,
}

impl DevName {
    pub const MAX_LEN: usize = 15;

    pub fn new(s: &str) -> Result<DevName, ModelError> {
        let ok = !s.is_empty()
            && s.len() <= Self::MAX_LEN
            && s != "."
            && s != ".."
            && !s
                .bytes()
                .any(|b| b == b'/' || b == b':' || b.is_ascii_whitespace() || b.is_ascii_control());
        if ok {
            let mut bytes = [0u8; Self::MAX_LEN];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            Ok(DevName {
                bytes,
                len: s.len() as u8,
            })
        } else {
            Err(ModelError::BadDevName(s.to_string()))
        }
    }

    /// A name a derivation in [`names`] built from a valid name and
    /// characters [`DevName::new`] accepts, within the byte limit. The
    /// checks are debug assertions; in release a longer name is cut on a
    /// char boundary rather than panicking the agent.
    pub(crate) fn from_valid(s: &str) -> DevName {
        debug_assert!(DevName::new(s).is_ok(), "derived device name {s:?}");
        let mut end = s.len().min(Self::MAX_LEN);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        let mut bytes = [0u8; Self::MAX_LEN];
        bytes[..end].copy_from_slice(&s.as_bytes()[..end]);
        DevName {
            bytes,
            len: end as u8,
        }
    }

    pub fn as_str(&self) -> &str {
        // Always the bytes of a whole `&str` (see `new`), so never an error.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl std::hash::Hash for DevName {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_str().hash(h)
    }
}

impl fmt::Display for DevName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for DevName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl Serialize for DevName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for DevName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        DevName::new(&s).map_err(serde::de::Error::custom)
    }
}

/// A routing table, either by number or by the provider bridge whose
/// `/etc/iproute2/rt_tables` entry names it. Desired state always names
/// bridge tables by bridge: the planner resolves the number from rt_tables
/// on every reconcile (never cached across reconciles, see D16).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TableRef {
    Id(u32),
    Bridge(DevName),
}

/// What kind of link a desired device is.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum LinkKind {
    Vrf {
        table: u32,
    },
    Dummy,
    Vlan {
        parent: DevName,
        vlan_id: u16,
    },
    Veth {
        peer: DevName,
    },
    Bridge,
    /// Created with learning off; enslaved to a bridge, its bridge port
    /// gets `neigh_suppress on` and `learning off` ([`BridgePort::EVPN`]),
    /// as upstream's EVPN wiring does.
    Vxlan {
        vni: u32,
        local: Option<IpAddr>,
        dstport: u16,
    },
    /// A device the agent does not create but must see up (an OVS bridge).
    Existing,
}

/// A device the agent wants, and how.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Link {
    pub name: DevName,
    pub kind: LinkKind,
    pub master: Option<DevName>,
    pub mac: Option<MacAddr>,
    pub up: bool,
}

/// The bridge-port flags the agent sets on a device enslaved to a Linux
/// bridge (`ip link set DEV type bridge_slave ...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BridgePort {
    pub learning: bool,
    pub neigh_suppress: bool,
}

impl BridgePort {
    /// What a VXLAN device in an EVPN bridge gets: the control plane
    /// (BGP EVPN) fills the FDB, so no data-plane learning, and ARP/ND is
    /// answered locally.
    pub const EVPN: BridgePort = BridgePort {
        learning: false,
        neigh_suppress: true,
    };
}

/// A port the agent plugs into an OVS bridge (`ovs-vsctl add-port`): the
/// OVS end of an EVPN veth pair, or the SB driver's `vlan-<vni>` internal
/// port.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct OvsPort {
    pub bridge: DevName,
    pub name: DevName,
    /// The access VLAN (`tag=`) of a VLAN provider network.
    pub tag: Option<u16>,
    /// `type=internal` (OVS creates the kernel device).
    pub internal: bool,
}

/// A static entry of an OVS bridge's MAC learning table
/// (`ovs-appctl fdb/add BRIDGE PORT VLAN MAC`). The `ovn` exposing method
/// pins an external bridge's own MAC on its own port this way, so the
/// bridge does not re-learn it elsewhere and drop on a table miss. A
/// Linux bridge's FDB entry is another object: [`BridgeFdbEntry`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FdbEntry {
    pub bridge: DevName,
    /// The OVS port's name (OVS port names may be longer than a kernel
    /// device's; the bridge's own port is the bridge's name). Checked
    /// before it reaches `ovs-appctl`.
    pub port: String,
    pub vlan: u16,
    pub mac: MacAddr,
}

/// An address on a device (`ip addr add NET dev DEV`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Address {
    pub dev: DevName,
    pub net: IpNet,
}

/// A policy rule `to DST lookup TABLE`. The priority is chosen by the kernel
/// (lowest non-zero minus one) unless given.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Rule {
    pub dst: IpNet,
    pub table: TableRef,
    pub priority: Option<u32>,
}

/// The route types the agent writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteType {
    Unicast,
    Unreachable,
    Blackhole,
    Local,
}

/// A route in a numbered table. `dst` `None` is the default route of the
/// family given by `v6`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Route {
    pub table: TableRef,
    pub v6: bool,
    pub dst: Option<IpNet>,
    pub dev: Option<DevName>,
    pub via: Option<IpAddr>,
    pub proto: u8,
    pub scope: u8,
    pub kind: RouteType,
    pub metric: Option<u32>,
}

impl Route {
    /// The host route that announces `net` with `announce_with = route`:
    /// in the VRF table, on the announcement device, with the agent's own
    /// protocol ([`proto::ANNOUNCE`]); on-link (scope link for IPv4; the
    /// kernel reports every IPv6 route with scope universe), like the
    /// address it stands for.
    pub fn announcement(net: IpNet, vrf_table: u32, dev: &DevName) -> Route {
        let v6 = net.addr().is_ipv6();
        Route {
            table: TableRef::Id(vrf_table),
            v6,
            dst: Some(net),
            dev: Some(dev.clone()),
            via: None,
            proto: proto::ANNOUNCE,
            scope: if v6 { scope::UNIVERSE } else { scope::LINK },
            kind: RouteType::Unicast,
            metric: None,
        }
    }
}

/// A permanent neighbour entry (`ip neigh replace DST lladdr MAC dev DEV nud permanent`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Neighbour {
    pub dev: DevName,
    pub dst: IpAddr,
    pub lladdr: MacAddr,
}

/// A proxy ARP/NDP entry (`ip -6 neigh add proxy DST dev DEV`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ProxyNeighbour {
    pub dev: DevName,
    pub dst: IpAddr,
}

/// A sysctl the agent writes, by its dotted key (`net.ipv4.conf.br-ex.proxy_arp`).
/// Device names containing `.` are written with `/` in the key, as `sysctl` does.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Sysctl {
    pub key: String,
    pub value: String,
}

impl Sysctl {
    /// `net.<ipv4|ipv6>.conf.<dev>.<leaf>` with the dev's dots turned into slashes.
    pub fn conf(v6: bool, dev: &DevName, leaf: &str, value: &str) -> Sysctl {
        let fam = if v6 { "ipv6" } else { "ipv4" };
        Sysctl {
            key: format!("net.{fam}.conf.{}.{leaf}", dev.as_str().replace('.', "/")),
            value: value.to_string(),
        }
    }
}

/// An OpenFlow flow the agent owns, symbolic where the value is a fact of the
/// node: the in_port is named by its OVS port (the planner looks up the
/// ofport), and `mod_dl_dst` can name "the bridge's own MAC".
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Flow {
    pub bridge: DevName,
    pub cookie: u64,
    pub table: u8,
    pub priority: u16,
    /// `ip` or `ipv6` (or another protocol keyword); validated tokens only.
    pub protocol: String,
    /// The OVS port whose ofport is the `in_port`.
    pub in_port: String,
    /// More match fields (EVPN's steering flows).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<FlowMatch>,
    pub actions: Vec<FlowAction>,
}

/// The match fields beyond protocol and in_port that the agent's flows use.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowMatch {
    DlSrc(MacAddr),
    /// `nw_src=` (IPv4) or `ipv6_src=` (IPv6).
    Src(IpNet),
    /// `nw_dst=` (IPv4) or `ipv6_dst=` (IPv6): the `exposing_method = ovn`
    /// ingress flows (upstream writes `nw_dst` for IPv6 too, which
    /// ovs-ofctl rejects).
    Dst(IpNet),
}

impl fmt::Display for FlowMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowMatch::DlSrc(m) => write!(f, "dl_src={m}"),
            FlowMatch::Src(n @ IpNet::V4(_)) => write!(f, "nw_src={n}"),
            FlowMatch::Src(n @ IpNet::V6(_)) => write!(f, "ipv6_src={n}"),
            FlowMatch::Dst(n @ IpNet::V4(_)) => write!(f, "nw_dst={n}"),
            FlowMatch::Dst(n @ IpNet::V6(_)) => write!(f, "ipv6_dst={n}"),
        }
    }
}

/// The actions the agent's flows use.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowAction {
    /// `mod_dl_dst:<the bridge's MAC>`.
    ModDlDstBridgeMac,
    /// `mod_dl_dst:<the MAC of this device>` (the SB EVPN steering flow
    /// points at `veth-vrf-<vni>`, whose MAC the kernel picks).
    ModDlDstMacOf(DevName),
    ModDlDst(MacAddr),
    ModDlSrc(MacAddr),
    Output(String),
    /// `strip_vlan` (the SB EVPN flows of a VLAN provider network).
    StripVlan,
    Normal,
}

/// What an exposed object is for. The planner uses it to order withdrawals
/// (O3: gateway IPs, then subnets, then load balancers) and `plan` prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Per-bridge base wiring: ARP/NDP addresses, default routes, flows.
    Base,
    /// A router gateway port (cr-lrp) IP.
    Gateway,
    /// A tenant subnet routed behind a local gateway.
    Subnet,
    /// An OVN load-balancer VIP (or VIP-FIP, port-forwarding FIP).
    Lb,
    /// A floating IP.
    Fip,
    /// A VM or virtual port IP on a provider network.
    Vm,
    /// A tenant VM IP exposed by the host advertisement method.
    TenantVm,
}

/// Everything the agent wants on the node, flattened into node objects.
///
/// This is the planner's input. Announcements are the addresses on
/// `announce_dev` (bgp-nic) and the routes in table `vrf_table` (the subnet
/// method's `redistribute kernel`); everything else is wiring. Each object
/// carries the [`Class`] of the exposure that needs it; an object two
/// exposures need keeps the first class inserted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesiredNode {
    /// The device whose addresses BGP announces (`bgp_nic`).
    pub announce_dev: Option<DevName>,
    /// The VRF's table (`bgp_vrf_table_id`).
    pub vrf_table: u32,
    pub links: BTreeSet<Link>,
    /// Provider bridges that need a routing table (an rt_tables entry named after the bridge).
    pub bridge_tables: BTreeSet<DevName>,
    pub sysctls: BTreeSet<Sysctl>,
    pub addresses: BTreeMap<Address, Class>,
    pub rules: BTreeMap<Rule, Class>,
    pub routes: BTreeMap<Route, Class>,
    pub neighbours: BTreeMap<Neighbour, Class>,
    pub proxy_neighbours: BTreeMap<ProxyNeighbour, Class>,
    pub flows: BTreeSet<Flow>,
    /// Ports the agent plugs into OVS bridges (EVPN).
    #[serde(default)]
    pub ovs_ports: BTreeSet<OvsPort>,
    /// Static FDB entries on OVS bridges (the `ovn` exposing method).
    /// Added where missing, never removed: an entry carries no owner mark,
    /// and an OVS restart drops them all anyway (docs/ownership.md).
    #[serde(default)]
    pub fdb: BTreeSet<FdbEntry>,
    /// Static entries of Linux bridges' FDBs (`exposing_method = l2vni`:
    /// each VM bound here pinned on the veth end in `br-<vni>`, so that
    /// zebra advertises its MAC without traffic). Removed only on the
    /// agent's ports of a structure-proven L2 VNI (docs/ownership.md).
    #[serde(default)]
    pub bridge_fdb: BTreeMap<BridgeFdbEntry, Class>,
    /// The VNIs whose FRR VRF (`vrf vrf-<vni>` / `router bgp AS vrf
    /// vrf-<vni>`) the desired FRR text holds; an agent-shaped EVPN VRF in
    /// FRR's running configuration outside this set gets del-vrf.
    #[serde(default)]
    pub evpn_vnis: BTreeSet<u32>,
    /// Kernel local routes the agent removes where they appear: those of
    /// the tenant VM addresses on the SB EVPN driver's `lo-<vni>` (the node
    /// must not take traffic for a VM whose IP it only announces).
    #[serde(default)]
    pub suppressed_local_routes: BTreeSet<Route>,
    /// Set by the EVPN modes: what the agent may tear down of the EVPN
    /// objects nothing wants any more (docs/ownership.md). `None` in the
    /// underlay modes, which never touch EVPN objects.
    #[serde(default)]
    pub evpn: Option<EvpnCleanup>,
    /// The FRR configuration text to apply with `vtysh -f`, if the driver has one.
    pub frr_config: Option<String>,
}

/// The node objects in which one [`DesiredNode`] differs from an earlier
/// one, by key: each listed object was set (added, or its class changed) or
/// removed in between. What a patched desired state knows it changed, so
/// that the planner can judge only these keys (`obgp_plan::plan_changes`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeChanges {
    pub addresses: BTreeSet<Address>,
    pub rules: BTreeSet<Rule>,
    pub routes: BTreeSet<Route>,
    pub neighbours: BTreeSet<Neighbour>,
    /// The proxy NDP entries were recomputed (their keys are not listed).
    pub proxy_neighbours: bool,
}

impl NodeChanges {
    /// Whether no object changed.
    pub fn is_empty(&self) -> bool {
        self.addresses.is_empty()
            && self.rules.is_empty()
            && self.routes.is_empty()
            && self.neighbours.is_empty()
            && !self.proxy_neighbours
    }

    /// How many keys are listed (proxy NDP entries not counted).
    pub fn len(&self) -> usize {
        self.addresses.len() + self.rules.len() + self.routes.len() + self.neighbours.len()
    }
}

/// What an EVPN mode owns beyond the objects its desired state names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvpnCleanup {
    /// `delete_vrf_on_disconnect`: a torn-down VNI also loses its VRF
    /// device and its FRR VRF (del-vrf).
    pub delete_vrf: bool,
    /// The SB driver's cookie-998 steering flows are the agent's.
    pub steering_flows: bool,
    /// The provider bridges (`ovn-bridge-mappings`) whose agent flows
    /// and agent-named ports are judged, also when no VNI wants them.
    pub bridges: BTreeSet<DevName>,
}

/// Values that failed validation, with the value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ModelError {
    #[error("invalid MAC address {0:?}")]
    BadMac(String),
    #[error("invalid interface name {0:?} (1-15 bytes, no '/', ':' or whitespace)")]
    BadDevName(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_parses_and_prints_lowercase() {
        let m: MacAddr = "FA:16:3E:11:11:11".parse().unwrap();
        assert_eq!(m.to_string(), "fa:16:3e:11:11:11");
        for bad in [
            "",
            "fa:16:3e:11:11",
            "fa:16:3e:11:11:11:11",
            "zz:16:3e:11:11:11",
            "fa:16:3e:11:11:111",
        ] {
            assert!(bad.parse::<MacAddr>().is_err(), "{bad}");
        }
    }

    #[test]
    fn dev_name_rejects_what_the_kernel_rejects() {
        assert!(DevName::new("br-ex.100").is_ok());
        assert!(DevName::new("a-very-long-name1").is_err());
        for bad in ["", ".", "..", "br ex", "br/ex", "br;\nex"] {
            assert!(DevName::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn dev_names_compare_and_hash_as_their_strings() {
        let names = [
            "br-ex",
            "br-ex.100",
            "br",
            "b",
            "br-ex1",
            "eth0",
            "br-provide.4094",
            "Br-ex",
            "é0",
            "a-name-of-15-b",
        ];
        let mut by_dev: Vec<DevName> = names.iter().map(|n| DevName::new(n).unwrap()).collect();
        by_dev.sort();
        let mut by_str = names.to_vec();
        by_str.sort();
        let printed: Vec<&str> = by_dev.iter().map(DevName::as_str).collect();
        assert_eq!(printed, by_str);
        let max = "a-name-of-15-by";
        assert_eq!(DevName::new(max).unwrap().as_str(), max);
        assert_eq!(
            serde_json::to_string(&DevName::new("br-ex.100").unwrap()).unwrap(),
            "\"br-ex.100\""
        );
        let hash = |h: &dyn Fn(&mut std::collections::hash_map::DefaultHasher)| {
            let mut s = std::collections::hash_map::DefaultHasher::new();
            h(&mut s);
            std::hash::Hasher::finish(&s)
        };
        use std::hash::Hash;
        assert_eq!(
            hash(&|s| DevName::new("br-ex").unwrap().hash(s)),
            hash(&|s| "br-ex".hash(s))
        );
    }

    #[test]
    fn sysctl_key_writes_vlan_dots_as_slashes() {
        let dev = DevName::new("br-ex.100").unwrap();
        assert_eq!(
            Sysctl::conf(false, &dev, "proxy_arp", "1").key,
            "net.ipv4.conf.br-ex/100.proxy_arp"
        );
    }
}
