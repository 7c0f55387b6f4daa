//! The OVN rows behind an exposure, looked up in the snapshot by
//! [`RowRef`], with the Neutron name or id each row carries.

use std::collections::BTreeMap;

use obgp_config::Config;
use obgp_desired::RowRef;
use obgp_ovn::{
    LoadBalancer, LogicalRouter, LogicalRouterPort, LogicalSwitch, LogicalSwitchPort, Nat, PbType,
    PortBinding, Snapshot,
};
use obgp_ovsdb_data::Uuid;
use serde::{Deserialize, Serialize};

/// One OVN row as `status` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowInfo {
    pub table: String,
    pub uuid: String,
    /// The row is in the snapshot (it may have gone since the desired
    /// state was computed).
    pub found: bool,
    /// The row's name (an LSP's is the Neutron port id, a router's
    /// `neutron-<id>`, a Port_Binding's its logical port).
    pub name: Option<String>,
    /// The Neutron ids the row carries (`device_id`, `network_name`,
    /// `router`, `logical_port`...).
    pub neutron: BTreeMap<String, String>,
}

impl RowInfo {
    fn new(table: &str, uuid: Uuid) -> RowInfo {
        RowInfo {
            table: table.to_string(),
            uuid: uuid.to_string(),
            found: false,
            name: None,
            neutron: BTreeMap::new(),
        }
    }

    fn found(mut self, name: Option<&str>, neutron: &[(&str, Option<&str>)]) -> RowInfo {
        self.found = true;
        self.name = name.map(str::to_string);
        self.neutron = neutron
            .iter()
            .filter_map(|(k, v)| Some((k.to_string(), (*v)?.to_string())))
            .collect();
        self
    }
}

/// Looks rows up in one snapshot for one driver (the SB drivers' rows are
/// Southbound ones: `Load_Balancer` is then the SB table).
pub struct Lookup<'a> {
    snap: &'a Snapshot,
    sb: bool,
    chassis: Option<&'a str>,
}

impl<'a> Lookup<'a> {
    pub fn new(snap: &'a Snapshot, config: &Config) -> Lookup<'a> {
        Lookup {
            snap,
            sb: config.default.driver.reads_sb(),
            chassis: snap.ovs.system_id.as_deref(),
        }
    }

    /// The row `r`.
    pub fn of(&self, r: RowRef) -> RowInfo {
        let info = RowInfo::new(r.table, r.uuid);
        let s = self.snap;
        match r.table {
            LogicalSwitchPort::TABLE => match s.lsp_by_uuid(r.uuid) {
                Some(p) => info.found(
                    Some(&p.name),
                    &[
                        ("device_id", p.device_id.as_deref()),
                        ("device_owner", p.device_owner.as_deref()),
                        ("network_name", p.network.as_deref()),
                        ("host_id", p.host_id.as_deref()),
                    ],
                ),
                None => info,
            },
            LogicalRouterPort::TABLE => match s.lrp_by_uuid(r.uuid) {
                Some(p) => info.found(
                    Some(&p.name),
                    &[
                        ("router", p.router.as_deref()),
                        ("network_name", p.network.as_deref()),
                    ],
                ),
                None => info,
            },
            Nat::TABLE => match s.nat_by_uuid(r.uuid) {
                Some(n) => info.found(
                    None,
                    &[
                        ("logical_port", n.logical_port.as_deref()),
                        ("fip_network_id", n.fip_network_id.as_deref()),
                    ],
                ),
                None => info,
            },
            PortBinding::TABLE => match s.sb().port_by_uuid(r.uuid) {
                Some(p) => port_binding(info, p),
                None => info,
            },
            LoadBalancer::TABLE if self.sb => match s.sb().load_balancer_by_uuid(r.uuid) {
                Some(l) => info.found(Some(&l.name), &[]),
                None => info,
            },
            LoadBalancer::TABLE => match s.lb_by_uuid(r.uuid) {
                Some(l) => info.found(
                    Some(&l.name),
                    &[
                        ("router_name", l.router_name.as_deref()),
                        ("lr_ref", l.lr_ref.as_deref()),
                        ("vip_port_id", l.vip_port.as_deref()),
                    ],
                ),
                None => info,
            },
            LogicalRouter::TABLE => match s.router_by_uuid(r.uuid) {
                Some(l) => info.found(Some(&l.name), &[]),
                None => info,
            },
            LogicalSwitch::TABLE => match s.switch_by_uuid(r.uuid) {
                Some(l) => info.found(Some(&l.name), &[]),
                None => info,
            },
            _ => info,
        }
    }

    /// The rows of a tenant subnet's router: the NB driver names it by its
    /// Neutron id (the Logical_Router `neutron-<id>`), the SB driver by its
    /// datapath (its gateway's chassis-redirect Port_Bindings on this
    /// chassis).
    pub fn router(&self, router: &str) -> Vec<RowInfo> {
        if !self.sb {
            return match self.snap.router(router) {
                Some(l) => vec![self.of(row(LogicalRouter::TABLE, l.uuid))],
                None => Vec::new(),
            };
        }
        let Ok(dp) = Uuid::parse(router) else {
            return Vec::new();
        };
        self.snap
            .sb()
            .ports_on_datapath(dp)
            .filter(|p| p.kind == PbType::ChassisRedirect && p.chassis.as_deref() == self.chassis)
            .map(|p| port_binding(RowInfo::new(PortBinding::TABLE, p.uuid), p))
            .collect()
    }

    /// The rows carrying VNI `vni`'s networking-bgpvpn annotation: the
    /// NB driver's Logical_Switches, the SB driver's Port_Bindings.
    pub fn vni(&self, vni: u32) -> Vec<RowInfo> {
        if self.sb {
            return self
                .snap
                .sb()
                .ports_with_vni(vni)
                .into_iter()
                .map(|p| port_binding(RowInfo::new(PortBinding::TABLE, p.uuid), p))
                .collect();
        }
        self.snap
            .bgpvpn_switches()
            .into_iter()
            .filter(|s| matches!(&s.bgpvpn, Some(Ok(v)) if v.vni == vni))
            .map(|s| self.of(row(LogicalSwitch::TABLE, s.uuid)))
            .collect()
    }
}

fn row(table: &'static str, uuid: Uuid) -> RowRef {
    RowRef { table, uuid }
}

fn port_binding(info: RowInfo, p: &PortBinding) -> RowInfo {
    info.found(
        Some(&p.logical_port),
        &[
            ("port_name", p.port_name.as_deref()),
            ("chassis", p.chassis.as_deref()),
            ("network_name", p.network_name.as_deref()),
        ],
    )
}
