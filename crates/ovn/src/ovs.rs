//! Typed view of the local Open_vSwitch database: this chassis's identity,
//! its OVN remotes and bridge mappings, the ports of its bridges and the
//! logical ports plugged here.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use obgp_netmodel::DevName;
use obgp_ovsdb_data::{Row, Uuid};

use crate::nb::RowError;

mod monitor;
pub use monitor::{monitor_spec, monitored_columns, MONITORED_COLUMNS, MONITORED_KEYS};

/// `Interface.external_ids:iface-id`: the logical port (NB
/// Logical_Switch_Port name) a VIF plugged on this node belongs to, as
/// os-vif and libvirt write it and ovn-controller binds by.
pub const IFACE_ID: &str = "iface-id";

/// One `ovn-bridge-mappings` entry that parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BridgeMapping {
    /// 1-based position in the mappings list, counting entries that failed
    /// to parse (upstream enumerates before parsing): it drives the bridge's
    /// ARP/NDP addresses, so it must not shift when a neighbour entry is bad.
    pub index: u32,
    /// The physical network name (`physnet1`).
    pub network: String,
    pub bridge: DevName,
}

/// The `Open_vSwitch` row's `external_ids` the agent reads, and the bridges.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LocalOvs {
    /// `system-id`: this chassis in SB rows and LRP `hosting-chassis`.
    pub system_id: Option<String>,
    /// `hostname`: this chassis in LSP `requested-chassis`/`neutron:host_id`.
    /// When absent, the agent uses the system hostname (a node fact).
    pub hostname: Option<String>,
    pub ovn_remote: Option<String>,
    pub ovn_nb_remote: Option<String>,
    pub bridge_mappings: Vec<BridgeMapping>,
    /// Bridge name to the names of its ports, in row order.
    pub bridge_ports: HashMap<String, Vec<String>>,
    /// The instance-specific mappings `ovn-bridge-mappings-<suffix>`, by
    /// suffix: a second ovn-controller started with `-n <suffix>` reads
    /// them (`exposing_method = ovn` reads the one of `bgp_chassis_id`).
    pub suffixed_bridge_mappings: BTreeMap<String, Vec<BridgeMapping>>,
    /// The logical ports plugged here: every Interface's
    /// `external_ids:iface-id` (whichever bridge: a superset of br-int's).
    pub iface_ids: BTreeSet<String>,
}

/// Which of this chassis's names a row uses for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChassisNaming {
    /// The OVS `system-id`: SB `Chassis.name` (what Port_Binding `chassis`
    /// points at) and LRP `status:hosting-chassis`.
    SystemId,
    /// The hostname: LSP `requested-chassis` and `neutron:host_id`.
    Hostname,
}

/// Parses `<network>:<bridge>,...`; bad entries are reported and skipped
/// (their position still counts in the indexes).
fn parse_mappings(mappings: &str, uuid: Uuid, warnings: &mut Vec<RowError>) -> Vec<BridgeMapping> {
    let mut out = Vec::new();
    for (i, entry) in mappings.split(',').enumerate() {
        let entry = entry.trim();
        let bad = |reason: String| RowError {
            table: "Open_vSwitch",
            uuid,
            reason,
        };
        let parts: Vec<&str> = entry.split(':').collect();
        let [network, bridge] = parts[..] else {
            warnings.push(bad(format!(
                "bridge mapping {entry:?} is not <network>:<bridge>"
            )));
            continue;
        };
        if network.is_empty() {
            warnings.push(bad(format!("bridge mapping {entry:?} has no network")));
            continue;
        }
        match DevName::new(bridge) {
            Ok(bridge) => out.push(BridgeMapping {
                index: i as u32 + 1,
                network: network.to_string(),
                bridge,
            }),
            Err(e) => warnings.push(bad(format!("bridge mapping {entry:?}: {e}"))),
        }
    }
    out
}

impl LocalOvs {
    /// Parses the `Open_vSwitch` row, resolves bridge → port names through
    /// the `Bridge` and `Port` tables and collects the interfaces'
    /// `iface-id`s. Bad mapping entries are reported in `warnings` and
    /// skipped.
    pub fn parse(
        root: Option<(Uuid, &Row)>,
        bridges: &[(Uuid, &Row)],
        ports: &HashMap<Uuid, &Row>,
        interfaces: &[(Uuid, &Row)],
        warnings: &mut Vec<RowError>,
    ) -> LocalOvs {
        let mut out = LocalOvs {
            iface_ids: interfaces
                .iter()
                .filter_map(|(_, row)| row.map_str("external_ids", IFACE_ID))
                .filter(|id| !id.is_empty())
                .map(str::to_string)
                .collect(),
            ..LocalOvs::default()
        };
        let Some((uuid, row)) = root else {
            return out;
        };
        let ext = |k: &str| {
            row.map_str("external_ids", k)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        out.system_id = ext("system-id");
        out.hostname = ext("hostname");
        out.ovn_remote = ext("ovn-remote");
        out.ovn_nb_remote = ext("ovn-nb-remote");
        if let Some(mappings) = ext("ovn-bridge-mappings") {
            out.bridge_mappings = parse_mappings(&mappings, uuid, warnings);
        }
        let prefix = "ovn-bridge-mappings-";
        if let Some(external_ids) = row.get("external_ids") {
            for (k, v) in external_ids.pairs() {
                let (Some(k), Some(v)) = (k.as_str(), v.as_str()) else {
                    continue;
                };
                match k.strip_prefix(prefix) {
                    Some(suffix) if !suffix.is_empty() && !v.is_empty() => {
                        let parsed = parse_mappings(v, uuid, warnings);
                        out.suffixed_bridge_mappings
                            .insert(suffix.to_string(), parsed);
                    }
                    _ => {}
                }
            }
        }
        for (_, brow) in bridges {
            let Some(name) = brow.str("name") else {
                continue;
            };
            let names = brow
                .uuids("ports")
                .filter_map(|p| ports.get(&p))
                .filter_map(|p| p.str("name"))
                .map(str::to_string)
                .collect();
            out.bridge_ports.insert(name.to_string(), names);
        }
        out
    }

    /// This chassis's name as `naming`'s rows spell it: the `system-id`,
    /// or the OVS row's `hostname`, else `system_hostname` (the host's own
    /// name, upstream's `socket.gethostname()`). `None` when unknown.
    pub fn chassis_name<'a>(
        &'a self,
        naming: ChassisNaming,
        system_hostname: Option<&'a str>,
    ) -> Option<&'a str> {
        match naming {
            ChassisNaming::SystemId => self.system_id.as_deref(),
            ChassisNaming::Hostname => self.hostname.as_deref().or(system_hostname),
        }
    }

    /// The bridge a physical network maps to here (the last entry wins when a
    /// network is listed twice, as in upstream's dict).
    pub fn bridge_for_network(&self, network: &str) -> Option<&BridgeMapping> {
        self.bridge_mappings
            .iter()
            .rev()
            .find(|m| m.network == network)
    }

    /// Whether the OVS port `port` exists on `bridge`.
    pub fn bridge_has_port(&self, bridge: &str, port: &str) -> bool {
        self.bridge_ports
            .get(bridge)
            .is_some_and(|ps| ps.iter().any(|p| p == port))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chassis_name_by_naming_with_the_system_hostname_as_fallback() {
        let mut ovs = LocalOvs {
            system_id: Some("a1b2c3d4".into()),
            hostname: Some("compute-1".into()),
            ..LocalOvs::default()
        };
        let naming = |ovs: &LocalOvs, n, sys| ovs.chassis_name(n, sys).map(str::to_string);
        assert_eq!(
            naming(&ovs, ChassisNaming::SystemId, Some("host")),
            Some("a1b2c3d4".into())
        );
        assert_eq!(
            naming(&ovs, ChassisNaming::Hostname, Some("host")),
            Some("compute-1".into())
        );
        ovs.hostname = None;
        assert_eq!(
            naming(&ovs, ChassisNaming::Hostname, Some("host")),
            Some("host".into())
        );
        assert_eq!(naming(&ovs, ChassisNaming::Hostname, None), None);
        ovs.system_id = None;
        assert_eq!(naming(&ovs, ChassisNaming::SystemId, Some("host")), None);
    }
}
