//! The OVN rows behind an exposure, looked up in the snapshot by
//! [`RowRef`], with the Neutron name or id each row carries.

use std::collections::BTreeMap;

use obgp_config::Config;
use obgp_desired::RowRef;
use obgp_ovn::{LogicalRouter, LogicalSwitch, PbType, PortBinding, RowFacts, Snapshot};
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

    fn found(mut self, facts: RowFacts<'_>) -> RowInfo {
        self.found = true;
        self.name = facts.name;
        self.neutron = facts
            .neutron
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
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
        match self.snap.row_facts(r.table, r.uuid, self.sb) {
            Some(facts) => info.found(facts),
            None => info,
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
            .map(|p| self.of(row(PortBinding::TABLE, p.uuid)))
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
                .map(|p| self.of(row(PortBinding::TABLE, p.uuid)))
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
