//! Why an IP is exposed ([`Origin`], kept on every [`crate::ExposedIp`])
//! and why an OVN row is not ([`Rejection`], recorded only when a caller
//! asks for a [`Trace`], as `explain` does).
//!
//! The drivers decide once: each place that exposes names its rule and
//! rows, and each place that refuses records its reason here through
//! [`Trace::reject`], whose closure the daemon's computation never calls
//! (its trace is off), so the reasons cost nothing per event
//! ([ADR 0007](../../../docs/adr/0007-explain-on-demand.md)).

use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;
use obgp_netmodel::{Class, DevName, MacAddr};
use serde::Serialize;

use obgp_ovsdb_data::Uuid;
use serde::Serializer;

/// An OVN row, by table and uuid (cheap to copy, names the row in logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RowRef {
    pub table: &'static str,
    pub uuid: Uuid,
}

impl fmt::Display for RowRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.table, self.uuid)
    }
}

impl Serialize for RowRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The rule that exposed an IP: which pass of which driver, and so the
/// class of its node objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExposeRule {
    /// A VM or virtual port bound here on a provider network: its own IPs.
    ProviderVm,
    /// A router gateway port (cr-lrp) hosted here: its IPs.
    Gateway,
    /// NB, distributed FIPs: the NAT of a port bound here (`via`: the port).
    DistributedFip,
    /// NB, centralized FIPs: a NAT on a gateway port hosted here (`via`:
    /// the gateway port).
    CentralizedFip,
    /// SB: a FIP from a router's `nat_addresses` naming a port bound here
    /// (`source`: the patch port; `via`: the VM's port).
    NatAddressFip,
    /// A tenant VM's IP behind a gateway hosted here, host method (`via`:
    /// the gateway port).
    TenantVm,
    /// NB: a port-forwarding load balancer of a router whose gateway is here.
    PortForwarding,
    /// An OVN/Octavia LB VIP on a provider network behind a gateway hosted
    /// here (`via`: the gateway port or VIP port).
    LbVip,
    /// NB: an Octavia VIP on a tenant network routed here, announced as a
    /// tenant IP (`via`: the VIP port).
    TenantLbVip,
    /// SB: an OVN LB VIP port on a tenant network behind a gateway hosted
    /// here (`via`: the gateway port).
    TenantOvnLbVip,
    /// NB: the FIP of an Octavia VIP port (`neutron:vip_fip`; `via`: the
    /// load balancer).
    VipFip,
}

impl ExposeRule {
    /// The class of the node objects the rule asks for.
    pub fn class(self) -> Class {
        match self {
            ExposeRule::ProviderVm => Class::Vm,
            ExposeRule::Gateway => Class::Gateway,
            ExposeRule::DistributedFip | ExposeRule::CentralizedFip | ExposeRule::NatAddressFip => {
                Class::Fip
            }
            ExposeRule::TenantVm | ExposeRule::TenantLbVip => Class::TenantVm,
            ExposeRule::PortForwarding
            | ExposeRule::LbVip
            | ExposeRule::TenantOvnLbVip
            | ExposeRule::VipFip => Class::Lb,
        }
    }

    /// Whether `via` is the gateway the exposure goes through (shared by
    /// every exposure behind it) rather than the one port it stands for.
    pub fn via_gateway(self) -> bool {
        matches!(
            self,
            ExposeRule::TenantVm
                | ExposeRule::CentralizedFip
                | ExposeRule::PortForwarding
                | ExposeRule::TenantOvnLbVip
        )
    }

    /// What it is, for an operator: "provider VM", "floating IP"...
    pub fn describe(self) -> &'static str {
        match self {
            ExposeRule::ProviderVm => "provider-network VM port bound here",
            ExposeRule::Gateway => "router gateway port hosted here",
            ExposeRule::DistributedFip => "floating IP (distributed) of a port bound here",
            ExposeRule::CentralizedFip => "floating IP (centralized) on a gateway hosted here",
            ExposeRule::NatAddressFip => "floating IP of a port bound here (router nat_addresses)",
            ExposeRule::TenantVm => "tenant VM behind a gateway hosted here (host method)",
            ExposeRule::PortForwarding => "port-forwarding floating IP of a router hosted here",
            ExposeRule::LbVip => "load-balancer VIP on a provider network, router hosted here",
            ExposeRule::TenantLbVip => "load-balancer VIP on a tenant network routed here",
            ExposeRule::TenantOvnLbVip => "OVN LB VIP on a tenant network routed here",
            ExposeRule::VipFip => "floating IP of a load-balancer VIP",
        }
    }
}

/// Where an exposure comes from: its rule, the row that asks for it, and
/// the other row the decision rested on (the port of a FIP, the gateway a
/// tenant IP goes through).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    pub rule: ExposeRule,
    pub source: RowRef,
    pub via: Option<RowRef>,
}

impl Origin {
    pub fn new(rule: ExposeRule, source: RowRef) -> Self {
        Origin {
            rule,
            source,
            via: None,
        }
    }

    pub fn via(mut self, row: RowRef) -> Self {
        self.via = Some(row);
        self
    }
}

/// Why something was not exposed, with the values the decision read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Reason {
    /// The OVS row has no `external_ids:system-id`: no gateway or SB port is local.
    NoSystemId,
    /// No chassis hostname (OVS `external_ids:hostname` nor the system's):
    /// no NB port is local.
    NoHostname,
    /// The port's type is not one the port rule exposes (router, localnet...).
    NotAVmPort { kind: String },
    /// The port is not up.
    PortDown,
    /// The port is bound to other chassis (`by` the option that says so).
    BoundElsewhere {
        chassis: Vec<String>,
        by: &'static str,
        here: String,
    },
    /// SB: the VM port is bound to no chassis.
    Unbound,
    /// The gateway router port is hosted on another chassis (or none).
    GatewayElsewhere {
        hosting: Option<String>,
        here: String,
    },
    /// The port has no `neutron:network_name`.
    NoNetworkName,
    /// The network has no localnet port: a tenant network, reachable only
    /// through a router gateway.
    NoLocalnet { network: String },
    /// The network's localnet is on a physical network this node does not
    /// map in `ovn-bridge-mappings`.
    PhysnetNotMapped {
        physnet: String,
        localnet: String,
        mappings: Vec<String>,
    },
    /// The network's localnet has no `options:network_name`.
    LocalnetWithoutPhysnet { localnet: String },
    /// The permanent-neighbour MAC is not a unicast address.
    UnusableMac { mac: MacAddr, why: &'static str },
    /// The IP may never be announced (loopback, link-local, multicast...).
    UnexposableIp { why: &'static str },
    /// `neutron:port_fip` is set but the NAT lacks what a distributed FIP needs.
    FipIncomplete { missing: &'static str },
    /// A NAT names no existing logical port.
    NatWithoutPort { port: Option<String> },
    /// A NAT lacks `neutron:fip_network_id`.
    NatWithoutFipNetwork,
    /// Neither `expose_tenant_networks` nor (for a GUA) `expose_ipv6_gua_tenant_networks`.
    TenantNotExposed { gua_only: bool },
    /// Subnet method: the tenant subnet is announced, not its IPs one by one.
    SubnetMethod { subnet: Option<IpNet> },
    /// `require_snat_disabled_for_tenant_networks` and the router SNATs the subnet.
    SnatEnabled { cidrs: Vec<IpNet> },
    /// The subnet's address scope is not in `address_scopes`.
    AddressScope {
        scope: Option<String>,
        allowed: Vec<String>,
    },
    /// Stretched L2: the router interface's address scope differs from the
    /// gateway's (both read with `address_scopes` set).
    ScopeMismatch {
        gateway: Option<String>,
        interface: Option<String>,
    },
    /// The tenant network's router has no gateway port hosted here.
    NoLocalGateway { network: String },
    /// A load balancer lacks `neutron:vip`, `lr_ref` or `neutron:vip_port_id`.
    LbIncomplete,
    /// A port-forwarding load balancer's router has no gateway here.
    LbRouterNotLocal { router: Option<String> },
    /// The load balancer's VIP port does not exist.
    VipPortMissing { port: String },
    /// SB: the OVN LB is not behind the local gateway's router.
    LbNotBehindGateway,
    /// SB: a port bound here on a tenant network with no FIP in any
    /// router's `nat_addresses`.
    NoNatAddressFip,
    /// SB: the gateway's router port (`cr-lrp-<name>` without `cr-`) is missing.
    GatewayPortMissing { port: String },
    /// The port's `mac` is not `"<mac> <ip>..."`.
    NoAddresses,
    /// NB vrf mode: the IP's provider network has no EVPN VNI here.
    NoVni { bridge: DevName, vlan: Option<u16> },
    /// NB vrf mode: an IP announced without wiring (tenant host method) is
    /// not exposed in this mode.
    NotWiredInVrfMode,
    /// NB l2vni mode: the IP's provider network has no L2 VNI here.
    NoL2Vni { bridge: DevName, vlan: Option<u16> },
    /// NB l2vni mode: only the IPs of ports bound here (with their MAC)
    /// become type-2 entries; gateway IPs, FIPs, VIPs and tenant IPs do not.
    NotAPortInL2vniMode,
    /// NB dynamic mode: the IP's provider network is annotated for EVPN
    /// but not served (`why`), so nothing of it is exposed.
    NetworkSkipped { why: String },
    /// NB ovn mode: the node-local cluster does not reach the IP (a tenant
    /// network, or a provider network off its internal segment).
    NotReachedByLocalCluster { why: String },
    /// SB EVPN: the gateway's provider-side port has no `neutron_bgpvpn:vni` and `:as`.
    NotAnnotated,
    /// A networking-bgpvpn annotation does not parse.
    BadAnnotation { error: String },
    /// SB EVPN: the subnet's VNI or AS differs from the gateway's.
    VniMismatch {
        vni: u32,
        asn: u32,
        gateway_vni: u32,
        gateway_asn: u32,
    },
    /// SB EVPN: no VXLAN source address (evpn_local_ip, lo /32, evpn_nic).
    NoVxlanSource,
    /// SB EVPN: another router's gateway already wires the VNI through a
    /// different bridge or VLAN; one VRF cannot reach two.
    VniWiredElsewhere {
        vni: u32,
        bridge: DevName,
        vlan: Option<u16>,
        wired_bridge: DevName,
        wired_vlan: Option<u16>,
    },
}

impl fmt::Display for Reason {
    /// Long (about 160 lines) on purpose: one message per [`Reason`]
    /// variant, read as a table.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::NoSystemId => write!(f, "Open_vSwitch external_ids:system-id is unset"),
            Reason::NoHostname => write!(
                f,
                "no chassis hostname (OVS external_ids:hostname nor the system's)"
            ),
            Reason::NotAVmPort { kind } => {
                write!(f, "it is a {kind:?} port; only VM and virtual ports are")
            }
            Reason::PortDown => write!(f, "the port is down (up is not true)"),
            Reason::BoundElsewhere { chassis, by, here } => {
                let on = if chassis.is_empty() {
                    "no chassis".to_string()
                } else {
                    chassis.join(",")
                };
                write!(f, "bound to {on} ({by}), this node is {here}")
            }
            Reason::Unbound => write!(f, "bound to no chassis"),
            Reason::GatewayElsewhere { hosting, here } => match hosting {
                Some(h) => write!(f, "gateway hosted on {h} (hosting-chassis), this node is {here}"),
                None => write!(f, "gateway hosted on no chassis, this node is {here}"),
            },
            Reason::NoNetworkName => write!(f, "the port has no neutron:network_name"),
            Reason::NoLocalnet { network } => write!(
                f,
                "network {network} has no localnet port (a tenant network: exposed only through a router gateway hosted here)"
            ),
            Reason::PhysnetNotMapped {
                physnet,
                localnet,
                mappings,
            } => write!(
                f,
                "network {physnet} (localnet {localnet}) is not in ovn-bridge-mappings ({})",
                mappings.join(",")
            ),
            Reason::LocalnetWithoutPhysnet { localnet } => {
                write!(f, "localnet {localnet} has no options:network_name")
            }
            Reason::UnusableMac { mac, why } => write!(f, "MAC {mac} is a {why} address"),
            Reason::UnexposableIp { why } => write!(f, "a {why} address is never announced"),
            Reason::FipIncomplete { missing } => {
                write!(f, "neutron:port_fip is set but the port's NAT has no {missing}")
            }
            Reason::NatWithoutPort { port } => match port {
                Some(p) => write!(f, "the NAT's logical_port {p} does not exist"),
                None => write!(f, "the NAT has no logical_port"),
            },
            Reason::NatWithoutFipNetwork => write!(f, "the NAT has no neutron:fip_network_id"),
            Reason::TenantNotExposed { gua_only: false } => write!(
                f,
                "tenant networks are not exposed (expose_tenant_networks and expose_ipv6_gua_tenant_networks are false)"
            ),
            Reason::TenantNotExposed { gua_only: true } => write!(
                f,
                "not an IPv6 GUA, and only GUA tenant networks are exposed (expose_ipv6_gua_tenant_networks)"
            ),
            Reason::SubnetMethod { subnet } => match subnet {
                Some(s) => write!(
                    f,
                    "advertisement_method_tenant_networks = subnet: subnet {s} is announced instead of its IPs"
                ),
                None => write!(
                    f,
                    "advertisement_method_tenant_networks = subnet: tenant IPs are not announced one by one"
                ),
            },
            Reason::SnatEnabled { cidrs } => {
                let c: Vec<String> = cidrs.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "the router SNATs {} (require_snat_disabled_for_tenant_networks)",
                    c.join(",")
                )
            }
            Reason::AddressScope { scope, allowed } => write!(
                f,
                "address scope {} is not in address_scopes ({})",
                scope.as_deref().unwrap_or("(none)"),
                allowed.join(",")
            ),
            Reason::ScopeMismatch { gateway, interface } => write!(
                f,
                "the router interface's address scope {} differs from the gateway's {}",
                interface.as_deref().unwrap_or("(none)"),
                gateway.as_deref().unwrap_or("(none)")
            ),
            Reason::NoLocalGateway { network } => write!(
                f,
                "tenant network {network} has no router gateway hosted here"
            ),
            Reason::LbIncomplete => write!(
                f,
                "the load balancer lacks neutron:vip, lr_ref or neutron:vip_port_id"
            ),
            Reason::LbRouterNotLocal { router } => write!(
                f,
                "its router {} has no gateway hosted here",
                router.as_deref().unwrap_or("(no neutron:router_name)")
            ),
            Reason::VipPortMissing { port } => write!(f, "VIP port {port} does not exist"),
            Reason::LbNotBehindGateway => {
                write!(f, "the load balancer is not behind the local gateway's router")
            }
            Reason::NoNatAddressFip => write!(
                f,
                "on a tenant network, and no router's nat_addresses gives it a FIP"
            ),
            Reason::GatewayPortMissing { port } => {
                write!(f, "the gateway's router port {port} does not exist")
            }
            Reason::NoAddresses => write!(f, "the port's mac column has no \"<mac> <ip>...\""),
            Reason::NoVni { bridge, vlan } => match vlan {
                Some(v) => write!(
                    f,
                    "exposing_method = vrf: no EVPN VNI on bridge {bridge} vlan {v}"
                ),
                None => write!(f, "exposing_method = vrf: no EVPN VNI on bridge {bridge}"),
            },
            Reason::NoL2Vni { bridge, vlan } => match vlan {
                Some(v) => write!(
                    f,
                    "exposing_method = l2vni: no L2 VNI on bridge {bridge} vlan {v}"
                ),
                None => write!(f, "exposing_method = l2vni: no L2 VNI on bridge {bridge}"),
            },
            Reason::NotAPortInL2vniMode => write!(
                f,
                "exposing_method = l2vni: only the ports bound here become type-2 entries"
            ),
            Reason::NetworkSkipped { why } => write!(
                f,
                "exposing_method = dynamic: its provider network is skipped: {why}"
            ),
            Reason::NotWiredInVrfMode => write!(
                f,
                "exposing_method = vrf: IPs announced without wiring are not exposed"
            ),
            Reason::NotReachedByLocalCluster { why } => {
                write!(f, "exposing_method = ovn: the node-local cluster does not reach it: {why}")
            }
            Reason::NotAnnotated => write!(
                f,
                "the gateway's provider port has no neutron_bgpvpn:vni and neutron_bgpvpn:as"
            ),
            Reason::BadAnnotation { error } => write!(f, "bad networking-bgpvpn annotation: {error}"),
            Reason::VniMismatch {
                vni,
                asn,
                gateway_vni,
                gateway_asn,
            } => write!(
                f,
                "VNI {vni} AS {asn} differs from the gateway's (VNI {gateway_vni} AS {gateway_asn})"
            ),
            Reason::NoVxlanSource => write!(
                f,
                "no VXLAN source address (evpn_local_ip unset, no /32 on lo, no address on evpn_nic)"
            ),
            Reason::VniWiredElsewhere {
                vni,
                bridge,
                vlan,
                wired_bridge,
                wired_vlan,
            } => {
                let tag = |v: &Option<u16>| v.map_or("flat".to_string(), |v| format!("vlan {v}"));
                write!(
                    f,
                    "VNI {vni} is asked on bridge {bridge} ({}), but another router's gateway already wires it on bridge {wired_bridge} ({})",
                    tag(vlan),
                    tag(wired_vlan)
                )
            }
        }
    }
}

/// One refusal: what was refused (a row, one of its IPs, or every port of
/// a network), and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Rejection {
    /// The row refused (`None`: the whole node, e.g. no system-id).
    pub row: Option<RowRef>,
    /// The one IP refused, when not all of the row's.
    pub ip: Option<IpAddr>,
    /// Every port of this network (NB `neutron-<id>`, SB datapath uuid) is
    /// concerned.
    pub network: Option<String>,
    #[serde(flatten)]
    pub reason: Reason,
}

impl Rejection {
    pub fn of(row: RowRef, reason: Reason) -> Self {
        Rejection {
            row: Some(row),
            ip: None,
            network: None,
            reason,
        }
    }

    pub fn node(reason: Reason) -> Self {
        Rejection {
            row: None,
            ip: None,
            network: None,
            reason,
        }
    }

    pub fn ip(mut self, ip: IpAddr) -> Self {
        self.ip = Some(ip);
        self
    }

    pub fn network(mut self, network: impl Into<String>) -> Self {
        self.network = Some(network.into());
        self
    }
}

/// An exposure recorded by a trace where the desired state keeps no
/// [`crate::ExposedIp`] (the SB EVPN driver's per-VNI state).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Traced {
    pub ip: IpAddr,
    #[serde(skip)]
    pub origin: Origin,
    /// The VNI it goes through.
    pub vni: u32,
}

/// The decisions of one computation: off for the daemon (nothing is
/// recorded, no closure runs), on for `explain`.
#[derive(Debug, Default)]
pub struct Trace {
    on: bool,
    pub rejections: Vec<Rejection>,
    pub exposures: Vec<Traced>,
}

impl Trace {
    /// A trace that records.
    pub fn recording() -> Self {
        Trace {
            on: true,
            ..Trace::default()
        }
    }

    /// Whether it records.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Records the rejection `f` builds, only when recording.
    #[inline]
    pub fn reject(&mut self, f: impl FnOnce() -> Rejection) {
        if self.on {
            self.rejections.push(f());
        }
    }

    /// Records an exposure kept outside [`crate::Desired::exposed`].
    #[inline]
    pub fn exposed(&mut self, f: impl FnOnce() -> Traced) {
        if self.on {
            self.exposures.push(f());
        }
    }
}
