//! Typed views of the OVN_Northbound rows the NB driver reads, parsed once
//! from OVSDB rows with Neutron's conventions applied.
//!
//! Every parser takes the row's uuid and returns a [`RowError`] naming the
//! table, the uuid and the offending value when a column the agent relies on
//! is garbled; the snapshot then skips that row and keeps the rest.

use std::net::IpAddr;

use ipnet::IpNet;
use obgp_netmodel::MacAddr;
use obgp_ovsdb_data::{Datum, Row, Str, Uuid};

use crate::addresses::{Entry, MacIps};
use crate::neutron::{self, dhcp_option, key, nat_type, port_type, BgpVpn, BgpVpnError};

mod monitor;
pub use monitor::{
    monitor_spec, monitored_columns, monitored_keys, EXTERNAL_IDS_READ, MONITORED_COLUMNS,
    MONITORED_KEYS,
};

/// A row that could not be used, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{table} row {uuid}: {reason}")]
pub struct RowError {
    pub table: &'static str,
    pub uuid: Uuid,
    pub reason: String,
}

/// Logs each skipped row with its table, uuid and reason (the snapshot
/// keeps them for [`crate::Snapshot::warnings`]).
pub(crate) fn log_warnings(ws: &[RowError]) {
    for w in ws {
        tracing::warn!(table = w.table, uuid = %w.uuid, "skipping OVN data: {}", w.reason);
    }
}

fn bad(table: &'static str, uuid: Uuid, reason: impl Into<String>) -> RowError {
    RowError {
        table,
        uuid,
        reason: reason.into(),
    }
}

/// Non-empty string from a map column (Neutron writes `""` for "unset").
fn ext<'a>(row: &'a Row, column: &str, k: &str) -> Option<&'a str> {
    row.map_str(column, k).filter(|s| !s.is_empty())
}

fn ext_string(row: &Row, k: &str) -> Option<String> {
    ext(row, "external_ids", k).map(str::to_string)
}

/// A string column that must be a string when present (a wrong type is a
/// garbled row, an absent column is the default `""`).
fn string_col(table: &'static str, uuid: Uuid, row: &Row, col: &str) -> Result<String, RowError> {
    shared_string_col(table, uuid, row, col).map(String::from)
}

/// A scalar string column, sharing the cache's string (empty if absent).
fn shared_string_col(
    table: &'static str,
    uuid: Uuid,
    row: &Row,
    col: &str,
) -> Result<Str, RowError> {
    match row.get(col) {
        None => Ok(Str::default()),
        Some(d) => match d.atoms() {
            [] => Ok(Str::default()),
            [a] => a
                .as_shared_str()
                .cloned()
                .ok_or_else(|| bad(table, uuid, format!("column {col} is not a string"))),
            _ => Err(bad(table, uuid, format!("column {col} has several values"))),
        },
    }
}

/// `Logical_Switch`.
#[derive(Clone, Debug, PartialEq)]
pub struct LogicalSwitch {
    pub uuid: Uuid,
    /// `neutron-<network id>` for Neutron networks.
    pub name: String,
    /// The `ports` references, in the order the row lists them.
    pub ports: Vec<Uuid>,
    /// networking-bgpvpn's annotations (`neutron_bgpvpn:*`); `None` when it
    /// is not a BGPVPN network. A bad value does not drop the switch (its
    /// ports still matter to the other drivers): it is kept as the error,
    /// for the EVPN mode to skip the network with a note.
    pub bgpvpn: Option<Result<BgpVpn, BgpVpnError>>,
}

impl LogicalSwitch {
    pub const TABLE: &'static str = "Logical_Switch";

    pub fn parse(uuid: Uuid, row: &Row) -> Result<Self, RowError> {
        Ok(LogicalSwitch {
            uuid,
            name: string_col(Self::TABLE, uuid, row, "name")?,
            ports: row.uuids("ports").collect(),
            bgpvpn: neutron::bgpvpn_of(|k| row.map_str("external_ids", k)),
        })
    }
}

/// The `type` of a Logical_Switch_Port.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LspType {
    /// `""`: a VM (VIF) port.
    Vm,
    /// `virtual`: a port whose chassis is the one of its active parent.
    Virtual,
    /// `router`: the switch side of a router port.
    Router,
    /// `localnet`: the connection to a physical network.
    Localnet,
    Other(String),
}

impl LspType {
    /// The `type` column's value ([`port_type`]).
    pub fn as_str(&self) -> &str {
        match self {
            LspType::Vm => port_type::VM,
            LspType::Virtual => port_type::VIRTUAL,
            LspType::Router => port_type::ROUTER,
            LspType::Localnet => port_type::LOCALNET,
            LspType::Other(other) => other,
        }
    }

    fn from_column(s: &str) -> LspType {
        match s {
            port_type::VM => LspType::Vm,
            port_type::VIRTUAL => LspType::Virtual,
            port_type::ROUTER => LspType::Router,
            port_type::LOCALNET => LspType::Localnet,
            other => LspType::Other(other.to_string()),
        }
    }
}

/// The MAC and IPs of a port, from `addresses[0]` = `"<mac> <ip> <ip>..."`,
/// or from `neutron:cidrs` when the port only says `unknown`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortAddresses {
    /// `None` when the port's addresses are `unknown` (or absent).
    pub mac: Option<MacAddr>,
    pub ips: Vec<IpAddr>,
}

/// The `external_ids` of an LSP the agent reads, borrowed from the row.
#[derive(Default)]
struct LspExternalIds<'r> {
    cidrs: Option<&'r Str>,
    network: Option<&'r Str>,
    device_owner: Option<&'r Str>,
    device_id: Option<&'r Str>,
    host_id: Option<&'r Str>,
    port_fip: Option<&'r Str>,
    addr_scope4: Option<&'r Str>,
    addr_scope6: Option<&'r Str>,
}

/// `options:requested-chassis` as [`neutron::requested_chassis`] reads
/// it; one chassis written without spaces (the usual case) keeps the
/// cache's string.
fn split_chassis(value: &Str) -> Vec<Str> {
    let names: Vec<&str> = neutron::requested_chassis(value).collect();
    match names[..] {
        [only] if only == value.as_str() => vec![value.clone()],
        _ => names.into_iter().map(Str::from).collect(),
    }
}

/// `Logical_Switch_Port`. Its strings are the cache's own (`Str`, shared
/// by reference count): the snapshot holds every port of the cloud, and
/// copies of their names and ids cost ~15 MiB at 50k ports.
#[derive(Clone, Debug, PartialEq)]
pub struct LogicalSwitchPort {
    pub uuid: Uuid,
    /// The Neutron port id for VM ports; `provnet-<id>` for localnets.
    pub name: Str,
    pub kind: LspType,
    /// `up == [true]`; absent means not up.
    pub up: bool,
    pub addresses: PortAddresses,
    /// `neutron:cidrs`: the port's IPs with their subnet prefix length.
    pub cidrs: Vec<IpNet>,
    /// `neutron:network_name`: the `neutron-<id>` name of its switch.
    pub network: Option<Str>,
    pub device_owner: Option<Str>,
    /// `neutron:device_id`: for a router interface, the router id.
    pub device_id: Option<Str>,
    /// `options:requested-chassis`, split on commas (hostnames).
    pub requested_chassis: Vec<Str>,
    /// `neutron:host_id` (hostname).
    pub host_id: Option<Str>,
    /// `neutron:port_fip`: the port has a floating IP.
    pub port_fip: Option<Str>,
    pub addr_scope4: Option<Str>,
    pub addr_scope6: Option<Str>,
    /// Localnet only: `options:network_name`, the physical network.
    pub localnet_network: Option<Str>,
    /// Localnet only: the VLAN `tag`.
    pub tag: Option<u16>,
    /// The `DHCP_Options` rows of its IPv4 and IPv6 subnets (see
    /// [`crate::Snapshot::dhcp_options`]).
    pub dhcpv4_options: Option<Uuid>,
    pub dhcpv6_options: Option<Uuid>,
}

impl LogicalSwitchPort {
    pub const TABLE: &'static str = "Logical_Switch_Port";

    pub fn parse(uuid: Uuid, row: &Row) -> Result<Self, RowError> {
        let t = Self::TABLE;
        let name = shared_string_col(t, uuid, row, "name")?;
        let kind = match row.get("type").map(Datum::atoms) {
            None | Some([]) => LspType::Vm,
            Some([a]) => LspType::from_column(
                a.as_str()
                    .ok_or_else(|| bad(t, uuid, "column type is not a string"))?,
            ),
            Some(_) => return Err(bad(t, uuid, "column type has several values")),
        };
        let up = row.bool("up").unwrap_or(false);

        // One pass over each map: this runs for every port of the cloud on
        // every snapshot build.
        let mut ids = LspExternalIds::default();
        for (k, v) in row.get("external_ids").map(Datum::pairs).unwrap_or(&[]) {
            let (Some(k), Some(v)) = (k.as_str(), v.as_shared_str()) else {
                continue;
            };
            if v.is_empty() {
                continue;
            }
            let slot = match k {
                key::CIDRS => &mut ids.cidrs,
                key::NETWORK_NAME => &mut ids.network,
                key::DEVICE_OWNER => &mut ids.device_owner,
                key::DEVICE_ID => &mut ids.device_id,
                key::HOST_ID => &mut ids.host_id,
                key::PORT_FIP => &mut ids.port_fip,
                key::ADDR_SCOPE4 => &mut ids.addr_scope4,
                key::ADDR_SCOPE6 => &mut ids.addr_scope6,
                _ => continue,
            };
            *slot = Some(v);
        }
        let (mut requested, mut physnet) = (None, None);
        for (k, v) in row.get("options").map(Datum::pairs).unwrap_or(&[]) {
            match (k.as_str(), v.as_shared_str()) {
                (Some(key::REQUESTED_CHASSIS), Some(v)) if !v.is_empty() => requested = Some(v),
                (Some(key::LOCALNET_NETWORK_NAME), Some(v)) if !v.is_empty() => physnet = Some(v),
                _ => {}
            }
        }

        let mut cidrs = Vec::new();
        for c in ids.cidrs.map_or("", Str::as_str).split_whitespace() {
            let net = neutron::parse_ip_net(c)
                .ok_or_else(|| bad(t, uuid, format!("{} has bad entry {c:?}", key::CIDRS)))?;
            cidrs.push(net);
        }

        // Only VM-like ports' addresses matter; a router port says "router".
        let mut addresses = match kind {
            LspType::Vm | LspType::Virtual => parse_addresses(t, uuid, row, &cidrs)?,
            _ => PortAddresses::default(),
        };
        // Both lists grew from empty, to room for four (~70 bytes each for
        // the usual one IP): ~5 MiB over the snapshot's 52k ports at 50k.
        cidrs.shrink_to_fit();
        addresses.ips.shrink_to_fit();

        let tag = match row.get("tag").map(|d| d.atoms()) {
            None | Some([]) => None,
            // 0 is untagged, as upstream's `if localnet.tag:` reads it.
            Some([a]) => match a.as_i64() {
                Some(0) => None,
                Some(v) if (1..=4094).contains(&v) => Some(v as u16),
                _ => return Err(bad(t, uuid, format!("bad VLAN tag {a:?}"))),
            },
            Some(_) => return Err(bad(t, uuid, "several VLAN tags")),
        };

        let own = |v: Option<&Str>| v.cloned();
        Ok(LogicalSwitchPort {
            uuid,
            name,
            kind,
            up,
            addresses,
            cidrs,
            network: own(ids.network),
            device_owner: own(ids.device_owner),
            device_id: own(ids.device_id),
            requested_chassis: requested.map(split_chassis).unwrap_or_default(),
            host_id: own(ids.host_id),
            port_fip: own(ids.port_fip),
            addr_scope4: own(ids.addr_scope4),
            addr_scope6: own(ids.addr_scope6),
            localnet_network: own(physnet),
            tag,
            dhcpv4_options: row.uuid("dhcpv4_options"),
            dhcpv6_options: row.uuid("dhcpv6_options"),
        })
    }

    /// The chassis names (hostnames) this port can be bound to, the way
    /// upstream's `get_port_chassis` decides: `requested-chassis` (all of its
    /// entries: "our host wins if listed") except for virtual ports, else
    /// `neutron:host_id`. A port is on chassis C iff C is in this list.
    pub fn binding_candidates(&self) -> &[Str] {
        match self.binding_key() {
            key::REQUESTED_CHASSIS => &self.requested_chassis,
            _ => self.host_id.as_slice(),
        }
    }

    /// Which column [`Self::binding_candidates`] reads: `requested-chassis`
    /// (not for virtual ports), else `neutron:host_id`.
    pub fn binding_key(&self) -> &'static str {
        if neutron::requested_chassis_binds(self.kind.as_str())
            && !self.requested_chassis.is_empty()
        {
            key::REQUESTED_CHASSIS
        } else {
            key::HOST_ID
        }
    }

    /// Whether the port is an up VM or virtual port: what the agent binds
    /// to a chassis (upstream `get_active_lsp_on_chassis`).
    pub fn is_active_vif(&self) -> bool {
        matches!(self.kind, LspType::Vm | LspType::Virtual) && self.up
    }

    /// Whether upstream's `get_port_chassis(port, chassis) == chassis`.
    pub fn is_bound_to(&self, chassis: &str) -> bool {
        self.binding_candidates().iter().any(|c| c == chassis)
    }

    /// The address scope of the port's subnet for `ip`'s family.
    pub fn addr_scope_for(&self, ip: IpAddr) -> Option<&str> {
        match ip {
            IpAddr::V4(_) => self.addr_scope4.as_deref(),
            IpAddr::V6(_) => self.addr_scope6.as_deref(),
        }
    }
}

fn parse_addresses(
    t: &'static str,
    uuid: Uuid,
    row: &Row,
    cidrs: &[IpNet],
) -> Result<PortAddresses, RowError> {
    let entries: Vec<Entry<'_>> = row.strs("addresses").map(Entry::read).collect();
    // The first "<mac> <ip>..." entry wins; the keywords carry no IP.
    let first = entries
        .iter()
        .find_map(|e| e.mac_ips(|w| w.parse::<IpAddr>().ok()));
    match first {
        Some(parsed) => {
            let MacIps { mac, ips } =
                parsed.map_err(|e| bad(t, uuid, format!("{e} in addresses")))?;
            Ok(PortAddresses {
                mac: Some(mac),
                ips,
            })
        }
        None if entries.contains(&Entry::Unknown) => Ok(PortAddresses {
            mac: None,
            ips: cidrs.iter().map(IpNet::addr).collect(),
        }),
        None => Ok(PortAddresses::default()),
    }
}

/// `DHCP_Options`: a subnet's DHCP settings, which the EVPN vrf mode reads
/// for the ports of a BGPVPN network.
#[derive(Clone, Debug, PartialEq)]
pub struct DhcpOptions {
    pub uuid: Uuid,
    /// The subnet.
    pub cidr: IpNet,
    /// The [`dhcp_option::READ`] keys of `options` that are set, as written
    /// (OVN syntax: `{a, b}` for a list); the others are not kept.
    pub options: std::collections::BTreeMap<String, String>,
}

impl DhcpOptions {
    pub const TABLE: &'static str = "DHCP_Options";

    pub fn parse(uuid: Uuid, row: &Row) -> Result<Self, RowError> {
        let t = Self::TABLE;
        let cidr = string_col(t, uuid, row, "cidr")?;
        let cidr = cidr
            .parse::<IpNet>()
            .map_err(|_| bad(t, uuid, format!("bad cidr {cidr:?}")))?;
        let options = dhcp_option::READ
            .iter()
            .filter_map(|k| ext(row, "options", k).map(|v| (k.to_string(), v.to_string())))
            .collect();
        Ok(DhcpOptions {
            uuid,
            cidr,
            options,
        })
    }
}

/// `Logical_Router`.
#[derive(Clone, Debug, PartialEq)]
pub struct LogicalRouter {
    pub uuid: Uuid,
    /// `neutron-<router id>`.
    pub name: String,
    pub ports: Vec<Uuid>,
    pub nat: Vec<Uuid>,
    pub load_balancer: Vec<Uuid>,
}

impl LogicalRouter {
    pub const TABLE: &'static str = "Logical_Router";

    pub fn parse(uuid: Uuid, row: &Row) -> Result<Self, RowError> {
        Ok(LogicalRouter {
            uuid,
            name: string_col(Self::TABLE, uuid, row, "name")?,
            ports: row.uuids("ports").collect(),
            nat: row.uuids("nat").collect(),
            load_balancer: row.uuids("load_balancer").collect(),
        })
    }
}

/// `Logical_Router_Port`.
#[derive(Clone, Debug, PartialEq)]
pub struct LogicalRouterPort {
    pub uuid: Uuid,
    pub name: String,
    pub mac: MacAddr,
    /// `networks`: interface addresses with their prefix length.
    pub networks: Vec<IpNet>,
    /// `neutron:network_name`: the switch this port plugs into.
    pub network: Option<String>,
    /// `neutron:router_name`: the bare router id (no `neutron-` prefix).
    pub router: Option<String>,
    /// `status:hosting-chassis`: the system-id of the chassis hosting the
    /// gateway (OVN >= 23.09).
    pub hosting_chassis: Option<String>,
}

impl LogicalRouterPort {
    pub const TABLE: &'static str = "Logical_Router_Port";

    pub fn parse(uuid: Uuid, row: &Row) -> Result<Self, RowError> {
        let t = Self::TABLE;
        let mac_s = string_col(t, uuid, row, "mac")?;
        let mac = mac_s
            .parse::<MacAddr>()
            .map_err(|_| bad(t, uuid, format!("bad mac {mac_s:?}")))?;
        let mut networks = Vec::new();
        for n in row.strs("networks") {
            let net = neutron::parse_ip_net(n)
                .ok_or_else(|| bad(t, uuid, format!("bad network {n:?}")))?;
            networks.push(net);
        }
        Ok(LogicalRouterPort {
            uuid,
            name: string_col(t, uuid, row, "name")?,
            mac,
            networks,
            network: ext_string(row, key::NETWORK_NAME),
            router: ext_string(row, key::ROUTER_NAME),
            hosting_chassis: ext(row, "status", key::HOSTING_CHASSIS).map(str::to_string),
        })
    }
}

/// `NAT.type`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NatType {
    Snat,
    DnatAndSnat,
    Other(String),
}

/// `NAT`.
#[derive(Clone, Debug, PartialEq)]
pub struct Nat {
    pub uuid: Uuid,
    pub kind: NatType,
    pub external_ip: IpAddr,
    pub external_mac: Option<MacAddr>,
    /// A host (`10.0.0.5`) or a network (`10.0.0.0/24`).
    pub logical_ip: IpNet,
    /// The LSP name the FIP is bound to.
    pub logical_port: Option<String>,
    /// The gateway LRP (OVN >= 23.09).
    pub gateway_port: Option<Uuid>,
    /// `neutron:fip_network_id`: the provider network of the FIP.
    pub fip_network_id: Option<String>,
    /// `neutron-<fip_network_id>`: the provider switch of the FIP.
    pub fip_switch: Option<String>,
}

impl Nat {
    pub const TABLE: &'static str = "NAT";

    pub fn parse(uuid: Uuid, row: &Row) -> Result<Self, RowError> {
        let t = Self::TABLE;
        let kind = match string_col(t, uuid, row, "type")?.as_str() {
            nat_type::SNAT => NatType::Snat,
            nat_type::DNAT_AND_SNAT => NatType::DnatAndSnat,
            other => NatType::Other(other.to_string()),
        };
        let ext_ip = string_col(t, uuid, row, "external_ip")?;
        let external_ip = ext_ip
            .parse::<IpAddr>()
            .map_err(|_| bad(t, uuid, format!("bad external_ip {ext_ip:?}")))?;
        let log_ip = string_col(t, uuid, row, "logical_ip")?;
        let logical_ip = neutron::parse_ip_net(&log_ip)
            .ok_or_else(|| bad(t, uuid, format!("bad logical_ip {log_ip:?}")))?;
        let external_mac = match row.strs("external_mac").next() {
            None => None,
            Some(m) => Some(
                m.parse::<MacAddr>()
                    .map_err(|_| bad(t, uuid, format!("bad external_mac {m:?}")))?,
            ),
        };
        Ok(Nat {
            uuid,
            kind,
            external_ip,
            external_mac,
            logical_ip,
            logical_port: row.strs("logical_port").next().map(str::to_string),
            gateway_port: row.uuids("gateway_port").next(),
            fip_network_id: ext_string(row, key::FIP_NETWORK_ID),
            fip_switch: ext(row, "external_ids", key::FIP_NETWORK_ID).map(neutron::ovn_name),
        })
    }
}

/// `Load_Balancer`.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadBalancer {
    pub uuid: Uuid,
    pub name: String,
    /// The IPs of the `vips` keys, in key order (ports removed).
    pub vip_ips: Vec<IpAddr>,
    /// Router references: `lr_ref` and `neutron:router_name`, without `neutron-`.
    pub lr_ref: Option<String>,
    pub router_name: Option<String>,
    /// `neutron:vip_port_id`: the LSP name of the VIP port.
    pub vip_port: Option<String>,
    /// `neutron:vip`.
    pub vip: Option<IpAddr>,
    /// `neutron:vip_fip`: the LB has a floating IP.
    pub vip_fip: Option<String>,
}

impl LoadBalancer {
    pub const TABLE: &'static str = "Load_Balancer";

    pub fn parse(uuid: Uuid, row: &Row) -> Result<Self, RowError> {
        let t = Self::TABLE;
        let mut vip_ips = Vec::new();
        if let Some(d) = row.get("vips") {
            for (k, _) in d.pairs() {
                let k = k.as_str().unwrap_or("");
                let ip = neutron::vip_key_ip(k)
                    .ok_or_else(|| bad(t, uuid, format!("bad vips key {k:?}")))?;
                vip_ips.push(ip);
            }
        }
        let vip = match ext(row, "external_ids", key::LB_VIP) {
            None => None,
            Some(v) => Some(
                v.parse::<IpAddr>()
                    .map_err(|_| bad(t, uuid, format!("bad {} {v:?}", key::LB_VIP)))?,
            ),
        };
        Ok(LoadBalancer {
            uuid,
            name: string_col(t, uuid, row, "name")?,
            vip_ips,
            lr_ref: ext(row, "external_ids", key::LB_LR_REF)
                .map(|s| neutron::strip_prefix(s).to_string()),
            router_name: ext(row, "external_ids", key::ROUTER_NAME)
                .map(|s| neutron::strip_prefix(s).to_string()),
            vip_port: ext_string(row, key::LB_VIP_PORT_ID),
            vip,
            vip_fip: ext_string(row, key::LB_VIP_FIP),
        })
    }

    /// A Neutron port-forwarding LB (`pf-floatingip-<fip>-<proto>`).
    pub fn is_port_forwarding(&self) -> bool {
        self.name.starts_with(neutron::PF_LB_PREFIX)
    }
}

/// `NB_Global`: only what the agent reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NbGlobal {
    /// `external_ids:neutron:fip-distributed`. Absent means distributed for
    /// the agent (upstream `get_distributed_flag`); only the exact text
    /// `True` means distributed when present.
    pub fip_distributed: bool,
}

impl NbGlobal {
    pub const TABLE: &'static str = "NB_Global";

    pub fn parse(_uuid: Uuid, row: &Row) -> NbGlobal {
        NbGlobal {
            fip_distributed: row
                .map_str("external_ids", key::FIP_DISTRIBUTED)
                .map(|v| v == neutron::TRUE)
                .unwrap_or(true),
        }
    }
}

impl Default for NbGlobal {
    fn default() -> Self {
        NbGlobal {
            fip_distributed: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsp_type_reads_and_writes_the_type_column() {
        for (column, kind) in [
            (port_type::VM, LspType::Vm),
            (port_type::VIRTUAL, LspType::Virtual),
            (port_type::ROUTER, LspType::Router),
            (port_type::LOCALNET, LspType::Localnet),
            ("vtep", LspType::Other("vtep".into())),
        ] {
            assert_eq!(LspType::from_column(column), kind);
            assert_eq!(kind.as_str(), column);
        }
    }

    /// The snapshot holds every port of the cloud: a parsed port's IP
    /// lists hold what the row says, not room for four.
    #[test]
    fn a_parsed_port_holds_its_ip_lists_without_spare_room() {
        let row = Row::from_wire(&serde_json::json!({
            "name": "p1",
            "type": "",
            "addresses": "fa:16:3e:00:00:01 10.0.0.5",
            "external_ids": ["map", [["neutron:cidrs", "10.0.0.5/24"]]],
        }))
        .unwrap();
        let p = LogicalSwitchPort::parse(Uuid(1), &row).unwrap();
        assert_eq!(p.addresses.ips, vec!["10.0.0.5".parse::<IpAddr>().unwrap()]);
        assert_eq!(p.cidrs.len(), 1);
        assert_eq!(p.addresses.ips.capacity(), 1);
        assert_eq!(p.cidrs.capacity(), 1);
    }
}
