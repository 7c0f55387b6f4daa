//! Typed views of the OVN_Southbound rows the SB driver (`ovn_bgp_driver`)
//! reads (`Port_Binding`, `Chassis`), and [`SbIndex`], the lookups its sync
//! makes, each one hash lookup.
//!
//! As for NB, parsing happens once here: a garbled row is skipped with a
//! [`RowError`] naming the table and uuid, never a panic.

use std::net::IpAddr;

use ipnet::IpNet;
use obgp_netmodel::MacAddr;
use obgp_ovsdb_data::{Datum, Row, Uuid};

use imbl::OrdSet;

use crate::addresses::{self, AddressError, Entry, MacIps};
use crate::index::{first_at, rows_at, Index, PMap, RowSet, Rows};
use crate::nb::RowError;
use crate::neutron::{self, key, port_type};

mod monitor;
pub use monitor::{monitor_spec, monitored_columns, MONITORED_COLUMNS};

pub(crate) fn bad(table: &'static str, uuid: Uuid, reason: impl Into<String>) -> RowError {
    RowError {
        table,
        uuid,
        reason: reason.into(),
    }
}

/// `Port_Binding.type`, as the SB driver distinguishes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PbType {
    /// `""`: a VM port.
    Vm,
    Virtual,
    Localnet,
    Patch,
    ChassisRedirect,
    Other(String),
}

impl PbType {
    /// The `type` column's value ([`port_type`]).
    pub fn as_str(&self) -> &str {
        match self {
            PbType::Vm => port_type::VM,
            PbType::Virtual => port_type::VIRTUAL,
            PbType::Localnet => port_type::LOCALNET,
            PbType::Patch => port_type::PATCH,
            PbType::ChassisRedirect => port_type::CHASSISREDIRECT,
            PbType::Other(other) => other,
        }
    }

    fn from_column(s: &str) -> PbType {
        match s {
            port_type::VM => PbType::Vm,
            port_type::VIRTUAL => PbType::Virtual,
            port_type::LOCALNET => PbType::Localnet,
            port_type::PATCH => PbType::Patch,
            port_type::CHASSISREDIRECT => PbType::ChassisRedirect,
            other => PbType::Other(other.to_string()),
        }
    }
}

/// What the first `mac` entry of a Port_Binding says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PbMac {
    /// The column is empty (OVN LB VIP ports, some patch ports).
    #[default]
    Empty,
    /// `unknown` (config-drive ports: IPs come from `neutron:cidrs`).
    Unknown,
    /// `router` (the switch side of a router port).
    Router,
    /// `"<mac> <ip>[/<len>] ..."`: VM IPs have no length, router ports'
    /// do; a bare IP is kept as a host network.
    Addresses { mac: MacAddr, ips: Vec<IpNet> },
}

pub use crate::addresses::NatAddresses;

/// `Port_Binding`.
#[derive(Clone, Debug, PartialEq)]
pub struct PortBinding {
    pub uuid: Uuid,
    pub logical_port: String,
    pub kind: PbType,
    pub datapath: Option<Uuid>,
    /// `Chassis.name` (the system-id) of the chassis it is bound to,
    /// resolved when the snapshot is built.
    pub chassis: Option<String>,
    /// `up == [true]`; `None` when the column is empty.
    pub up: Option<bool>,
    pub mac: PbMac,
    /// `neutron:cidrs`.
    pub cidrs: Vec<IpNet>,
    /// `options:peer`.
    pub peer: Option<String>,
    /// `options:network_name` (localnet).
    pub network_name: Option<String>,
    /// Whether `options` has `chassis-redirect-port`.
    pub has_chassis_redirect_option: bool,
    /// VLAN tag (localnet), 0 read as untagged.
    pub tag: Option<u16>,
    pub nat_addresses: Vec<NatAddresses>,
    pub addr_scope4: Option<String>,
    pub addr_scope6: Option<String>,
    /// `neutron:port_name` (`ovn-lb-vip-<lb>` for an OVN LB VIP port).
    pub port_name: Option<String>,
    /// networking-bgpvpn's annotations (the EVPN driver reads
    /// `neutron_bgpvpn:vni` and `:as` on the gateway and router-interface
    /// ports); `None` when the port has none. A bad value is kept as the
    /// error (the port still matters to the other drivers).
    pub bgpvpn: Option<Result<neutron::BgpVpn, neutron::BgpVpnError>>,
}

/// The first `mac` entry of a Port_Binding. `dynamic` is no keyword here
/// (the SB holds the addresses OVN assigned): it is a bad MAC.
fn parse_mac_entry(t: &'static str, uuid: Uuid, entry: &str) -> Result<PbMac, RowError> {
    let in_mac = |e: AddressError| bad(t, uuid, format!("{e} in mac"));
    match Entry::read(entry) {
        Entry::Empty => Ok(PbMac::Empty),
        Entry::Unknown => Ok(PbMac::Unknown),
        Entry::Router => Ok(PbMac::Router),
        Entry::Dynamic => Err(in_mac(AddressError::Mac(addresses::DYNAMIC.into()))),
        Entry::Addresses { mac, ips } => {
            let MacIps { mac, ips } =
                addresses::parse_mac_ips(mac, ips, neutron::parse_ip_net).map_err(in_mac)?;
            Ok(PbMac::Addresses { mac, ips })
        }
    }
}

impl PortBinding {
    pub const TABLE: &'static str = "Port_Binding";

    /// Parses the row; `chassis` is left unresolved (`None`), see
    /// [`SbIndex::build`].
    pub fn parse(uuid: Uuid, row: &Row) -> Result<Self, RowError> {
        let t = Self::TABLE;
        let logical_port = row
            .str("logical_port")
            .filter(|s| !s.is_empty())
            .ok_or_else(|| bad(t, uuid, "no logical_port"))?
            .to_string();
        let kind = PbType::from_column(row.str("type").unwrap_or(""));
        let mac = match row.strs("mac").next() {
            None => PbMac::Empty,
            Some(first) => parse_mac_entry(t, uuid, first)?,
        };
        let ext = |k: &str| {
            row.map_str("external_ids", k)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let opt = |k: &str| {
            row.map_str("options", k)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let mut cidrs = Vec::new();
        for c in row
            .map_str("external_ids", key::CIDRS)
            .unwrap_or("")
            .split_whitespace()
        {
            cidrs.push(
                neutron::parse_ip_net(c)
                    .ok_or_else(|| bad(t, uuid, format!("{} has bad entry {c:?}", key::CIDRS)))?,
            );
        }
        let tag = match row.get("tag").map(Datum::atoms) {
            None | Some([]) => None,
            Some([a]) => match a.as_i64() {
                Some(0) => None,
                Some(v) if (1..=4094).contains(&v) => Some(v as u16),
                _ => return Err(bad(t, uuid, format!("bad VLAN tag {a:?}"))),
            },
            Some(_) => return Err(bad(t, uuid, "several VLAN tags")),
        };
        let mut nat_addresses = Vec::new();
        for e in row.strs("nat_addresses") {
            nat_addresses
                .push(addresses::parse_nat_addresses(e).map_err(|e| bad(t, uuid, e.to_string()))?);
        }
        Ok(PortBinding {
            uuid,
            logical_port,
            kind,
            datapath: row.uuid("datapath"),
            chassis: None,
            up: row.bool("up"),
            mac,
            cidrs,
            peer: opt("peer"),
            network_name: opt(key::LOCALNET_NETWORK_NAME),
            has_chassis_redirect_option: row
                .map_str("options", key::CHASSIS_REDIRECT_PORT)
                .is_some(),
            tag,
            nat_addresses,
            addr_scope4: ext(key::ADDR_SCOPE4),
            addr_scope6: ext(key::ADDR_SCOPE6),
            port_name: ext(key::PORT_NAME),
            bgpvpn: neutron::bgpvpn_of(|k| row.map_str("external_ids", k)),
        })
    }

    /// The IPs of a VM-like port as upstream reads them: the `mac` entry's
    /// IPs, or `neutron:cidrs` for an `unknown` MAC.
    pub fn vm_ips(&self) -> Vec<IpAddr> {
        match &self.mac {
            PbMac::Addresses { ips, .. } => ips.iter().map(IpNet::addr).collect(),
            PbMac::Unknown => self.cidrs.iter().map(IpNet::addr).collect(),
            _ => Vec::new(),
        }
    }

    /// Whether this is the port Neutron creates for an OVN LB VIP: type
    /// `""`, no chassis, no MAC and `up = false` (upstream
    /// `get_provider_ovn_lbs_on_cr_lrp`'s query).
    pub fn is_lb_vip_port(&self) -> bool {
        self.kind == PbType::Vm
            && self.chassis.is_none()
            && self.mac == PbMac::Empty
            && self.up == Some(false)
    }

    /// The address scope of the port's subnet for `ip`'s family.
    pub fn addr_scope_for(&self, ip: IpAddr) -> Option<&str> {
        match ip {
            IpAddr::V4(_) => self.addr_scope4.as_deref(),
            IpAddr::V6(_) => self.addr_scope6.as_deref(),
        }
    }
}

/// An SB `Load_Balancer` with its datapath groups resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SbLoadBalancer {
    pub uuid: Uuid,
    pub name: String,
    /// Switch datapaths: `ls_datapath_group`, else `datapath_group`, else
    /// the legacy `datapaths` column (upstream `get_lb_datapaths`).
    pub switch_datapaths: Vec<Uuid>,
    /// Router datapaths: `lr_datapath_group`.
    pub router_datapaths: Vec<Uuid>,
}

impl SbLoadBalancer {
    pub const TABLE: &'static str = "Load_Balancer";
}

/// The SB rows, indexed for the SB driver's questions. Persistent maps:
/// clones share structure; kept up to date row by row by
/// [`crate::LiveSnapshot::apply_sb`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SbIndex {
    /// Parsed bindings, chassis resolved.
    pub(crate) pbs: Rows<PortBinding>,
    pub(crate) by_name: Index<String, PortBinding>,
    pub(crate) by_datapath: Index<Uuid, PortBinding>,
    /// Bound ports by `Chassis.name`.
    pub(crate) by_chassis: Index<String, PortBinding>,
    /// Localnet ports by `options:network_name`.
    pub(crate) localnets_by_network: Index<String, PortBinding>,
    /// Localnet ports by datapath.
    pub(crate) localnets_by_datapath: Index<Uuid, PortBinding>,
    /// OVN LB VIP ports (type `""`, no chassis, no MAC, `up = false`) by datapath.
    pub(crate) lb_vip_ports_by_datapath: Index<Uuid, PortBinding>,
    /// Every `chassisredirect` binding, bound or not (one key).
    pub(crate) chassis_redirects: Index<(), PortBinding>,
    /// Patch ports' NAT address entries by their resident port:
    /// `(port binding, entry index)`.
    pub(crate) nat_by_resident: PMap<String, OrdSet<(Uuid, u32)>>,
    /// Named load balancers, datapath groups resolved.
    pub(crate) lbs: Rows<SbLoadBalancer>,
    pub(crate) lbs_by_name: Index<String, SbLoadBalancer>,
}

impl SbIndex {
    /// The load balancer named `name` (upstream `get_ovn_lb`; the first by
    /// uuid if several are).
    pub fn load_balancer(&self, name: &str) -> Option<&SbLoadBalancer> {
        first_at(self.lbs_by_name.get(name))
    }

    fn at<'a>(
        &'a self,
        idx: Option<&'a RowSet<PortBinding>>,
    ) -> impl Iterator<Item = &'a PortBinding> {
        rows_at(idx)
    }

    /// The Port_Binding whose `logical_port` is `name` (the first by uuid).
    pub fn port(&self, name: &str) -> Option<&PortBinding> {
        first_at(self.by_name.get(name))
    }

    /// Ports bound to chassis `system_id` (upstream `get_ports_on_chassis`),
    /// in uuid order.
    pub fn ports_on_chassis<'a>(
        &'a self,
        system_id: &str,
    ) -> impl Iterator<Item = &'a PortBinding> {
        self.at(self.by_chassis.get(system_id))
    }

    /// Every Port_Binding of datapath `dp`, in uuid order.
    pub fn ports_on_datapath(&self, dp: Uuid) -> impl Iterator<Item = &PortBinding> {
        self.at(self.by_datapath.get(&dp))
    }

    /// Localnet ports whose `options:network_name` is `network`.
    pub fn localnets_on_network<'a>(
        &'a self,
        network: &str,
    ) -> impl Iterator<Item = &'a PortBinding> {
        self.at(self.localnets_by_network.get(network))
    }

    /// The localnet ports of datapath `dp`: it is a provider network iff
    /// there is one (upstream `is_provider_network`).
    pub fn localnets_of_datapath(&self, dp: Uuid) -> impl Iterator<Item = &PortBinding> {
        self.at(self.localnets_by_datapath.get(&dp))
    }

    /// The first localnet port of datapath `dp` whose network is accepted
    /// by `mapped` (upstream `get_network_name_and_tag`).
    pub fn localnet_of_datapath(
        &self,
        dp: Uuid,
        mapped: impl Fn(&str) -> bool,
    ) -> Option<&PortBinding> {
        self.localnets_of_datapath(dp)
            .find(|p| p.network_name.as_deref().is_some_and(&mapped))
    }

    /// Every `chassisredirect` binding in the database, whatever chassis
    /// hosts it (upstream `get_cr_lrp_ports`), in uuid order.
    pub fn chassis_redirect_ports(&self) -> impl Iterator<Item = &PortBinding> {
        self.at(self.chassis_redirects.get(&()))
    }

    /// OVN LB VIP ports of datapath `dp` ([`PortBinding::is_lb_vip_port`]).
    pub fn lb_vip_ports_on_datapath(&self, dp: Uuid) -> impl Iterator<Item = &PortBinding> {
        self.at(self.lb_vip_ports_by_datapath.get(&dp))
    }

    /// Every OVN LB VIP port, whatever its datapath, in datapath then uuid
    /// order (few: one per load balancer).
    pub fn lb_vip_ports(&self) -> impl Iterator<Item = &PortBinding> {
        self.lb_vip_ports_by_datapath
            .values()
            .flat_map(|set| set.rows())
    }

    /// NAT address entries of patch ports whose resident port is `port`,
    /// with the patch Port_Binding carrying them, in binding uuid order.
    pub fn nat_addresses_of<'a>(
        &'a self,
        port: &str,
    ) -> impl Iterator<Item = (&'a PortBinding, &'a NatAddresses)> {
        self.nat_by_resident
            .get(port)
            .into_iter()
            .flatten()
            .filter_map(|(u, j)| {
                let pb = self.pbs.get(u)?;
                Some((&**pb, pb.nat_addresses.get(*j as usize)?))
            })
    }

    /// The Port_Binding with uuid `uuid`, if it parsed.
    pub fn port_by_uuid(&self, uuid: Uuid) -> Option<&PortBinding> {
        self.pbs.get(&uuid).map(|p| &**p)
    }

    /// The SB load balancer with uuid `uuid`, if it parsed.
    pub fn load_balancer_by_uuid(&self, uuid: Uuid) -> Option<&SbLoadBalancer> {
        self.lbs.get(&uuid).map(|l| &**l)
    }

    /// The Port_Bindings whose networking-bgpvpn annotation names `vni`,
    /// in uuid order. A walk over every binding: for `status`, not for
    /// the reconcile.
    pub fn ports_with_vni(&self, vni: u32) -> Vec<&PortBinding> {
        let mut out: Vec<&PortBinding> = self
            .pbs
            .values()
            .filter(|p| matches!(&p.bgpvpn, Some(Ok(v)) if v.vni == vni))
            .map(|p| &**p)
            .collect();
        out.sort_unstable_by_key(|p| p.uuid);
        out
    }

    /// Number of parsed Port_Binding rows.
    pub fn len(&self) -> usize {
        self.pbs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pbs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(v: serde_json::Value) -> Row {
        Row::from_wire(&v).unwrap()
    }

    const U: Uuid = Uuid(1);

    #[test]
    fn pb_type_reads_and_writes_the_type_column() {
        for (column, kind) in [
            (port_type::VM, PbType::Vm),
            (port_type::VIRTUAL, PbType::Virtual),
            (port_type::LOCALNET, PbType::Localnet),
            (port_type::PATCH, PbType::Patch),
            (port_type::CHASSISREDIRECT, PbType::ChassisRedirect),
            ("l3gateway", PbType::Other("l3gateway".into())),
        ] {
            assert_eq!(PbType::from_column(column), kind);
            assert_eq!(kind.as_str(), column);
        }
    }

    #[test]
    fn router_port_mac_keeps_prefix_lengths_and_vm_mac_gives_host_ips() {
        let lrp = PortBinding::parse(
            U,
            &row(json!({"logical_port": "lrp-1", "type": "patch",
                         "mac": "fa:16:3e:aa:aa:01 10.0.0.1/24 2620:52:0:10::1/64"})),
        )
        .unwrap();
        let PbMac::Addresses { ips, .. } = &lrp.mac else {
            panic!("{:?}", lrp.mac)
        };
        assert_eq!(ips[0].to_string(), "10.0.0.1/24");
        assert_eq!(ips[1].to_string(), "2620:52:0:10::1/64");
        let vm = PortBinding::parse(
            U,
            &row(json!({"logical_port": "vm", "mac": "fa:16:3e:11:11:11 172.24.4.10"})),
        )
        .unwrap();
        assert_eq!(vm.kind, PbType::Vm);
        assert_eq!(vm.vm_ips(), ["172.24.4.10".parse::<IpAddr>().unwrap()]);
    }

    #[test]
    fn garbled_mac_or_nat_addresses_name_the_value() {
        let e = PortBinding::parse(U, &row(json!({"logical_port": "vm", "mac": "zz 1.2.3.4"})))
            .unwrap_err();
        assert!(e.reason.contains("zz"), "{e}");
        let e = PortBinding::parse(
            U,
            &row(json!({"logical_port": "p", "type": "patch",
                         "nat_addresses": "fa:16:3e:00:00:01 1.2.3.4 resident(x)"})),
        )
        .unwrap_err();
        assert!(e.reason.contains("resident(x)"), "{e}");
    }

    #[test]
    fn nat_addresses_name_the_resident_port() {
        let pb = PortBinding::parse(
            U,
            &row(json!({"logical_port": "p", "type": "patch",
                "nat_addresses": "fa:16:3e:aa:aa:01 172.24.4.100 172.24.4.101 is_chassis_resident(\"cr-lrp-5\")"})),
        )
        .unwrap();
        let n = &pb.nat_addresses[0];
        assert_eq!(n.resident_port, "cr-lrp-5");
        assert_eq!(n.ips.len(), 2);
    }
}
