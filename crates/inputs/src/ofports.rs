//! OpenFlow port numbers from the local Open_vSwitch database.
//!
//! `ovs-ofctl show` prints port names cut to 15 characters (the OpenFlow
//! port-name field), so Neutron's `patch-provnet-<uuid>-to-br-int` cannot be
//! found there. The agent already monitors the database, whose `Interface`
//! rows carry the full name and `ofport`, as upstream's `ovs-vsctl get
//! Interface <port> ofport` reads them.

use std::collections::{BTreeMap, HashMap};

use obgp_ovn::snapshot::RowSource;
use obgp_ovsdb_data::Uuid;

/// Bridge name → interface name → ofport, for interfaces OVS numbered (> 0).
pub type OfPorts = BTreeMap<String, BTreeMap<String, u32>>;

/// Reads every bridge's interfaces and their ofports (the local OVS
/// database is small: a scan per reconcile costs microseconds).
pub fn ofports(ovs: &impl RowSource) -> OfPorts {
    let ifaces: HashMap<Uuid, (&str, u32)> = ovs
        .rows("Interface")
        .into_iter()
        .filter_map(|(uuid, row)| {
            let ofport = u32::try_from(row.int("ofport")?).ok().filter(|n| *n > 0)?;
            Some((uuid, (row.str("name")?, ofport)))
        })
        .collect();
    let ports: HashMap<Uuid, Vec<Uuid>> = ovs
        .rows("Port")
        .into_iter()
        .map(|(uuid, row)| (uuid, row.uuids("interfaces").collect()))
        .collect();
    let mut out = OfPorts::new();
    for (_, bridge) in ovs.rows("Bridge") {
        let Some(name) = bridge.str("name") else {
            continue;
        };
        let numbered = out.entry(name.to_string()).or_default();
        for port in bridge.uuids("ports") {
            for iface in ports.get(&port).into_iter().flatten() {
                if let Some((iface_name, ofport)) = ifaces.get(iface) {
                    numbered.insert(iface_name.to_string(), *ofport);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use obgp_ovn::Tables;
    use obgp_ovsdb_data::Row;

    fn table(rows: &[(&str, serde_json::Value)]) -> obgp_ovn::Table {
        rows.iter()
            .map(|(u, r)| (Uuid::parse(u).unwrap(), Row::from_wire(r).unwrap()))
            .collect()
    }

    #[test]
    fn long_patch_port_names_keep_their_ofport() {
        let patch = "patch-provnet-22222222-2222-4222-8222-222222222222-to-br-int";
        let (b, p, i) = (
            "11111111-1111-4111-8111-111111111111",
            "22222222-2222-4222-8222-222222222222",
            "33333333-3333-4333-8333-333333333333",
        );
        let mut db = Tables::new();
        db.insert(
            "Bridge".into(),
            table(&[(
                b,
                serde_json::json!({"name": "br-ex", "ports": ["set", [["uuid", p]]]}),
            )]),
        );
        db.insert(
            "Port".into(),
            table(&[(
                p,
                serde_json::json!({"name": patch, "interfaces": ["uuid", i]}),
            )]),
        );
        db.insert(
            "Interface".into(),
            table(&[(i, serde_json::json!({"name": patch, "ofport": 5}))]),
        );
        assert_eq!(ofports(&db)["br-ex"].get(patch), Some(&5));
    }

    #[test]
    fn interfaces_without_an_ofport_yet_are_left_out() {
        let (b, p, i) = (
            "11111111-1111-4111-8111-111111111111",
            "22222222-2222-4222-8222-222222222222",
            "33333333-3333-4333-8333-333333333333",
        );
        let mut db = Tables::new();
        db.insert(
            "Bridge".into(),
            table(&[(
                b,
                serde_json::json!({"name": "br-ex", "ports": ["set", [["uuid", p]]]}),
            )]),
        );
        db.insert(
            "Port".into(),
            table(&[(p, serde_json::json!({"interfaces": ["uuid", i]}))]),
        );
        db.insert(
            "Interface".into(),
            table(&[(i, serde_json::json!({"name": "eth1", "ofport": -1}))]),
        );
        assert!(ofports(&db)["br-ex"].is_empty());
    }
}
