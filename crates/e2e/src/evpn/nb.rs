//! The OVN_Northbound rows of the EVPN tests: provider networks (a
//! Logical_Switch, its localnet port, VM ports bound to a chassis) and
//! their networking-bgpvpn annotations, built from a few facts each.

use anyhow::{ensure, Result};
use serde_json::{json, Map, Value};

use super::{ovsdb_map, EvpnBench};

/// A VM port on a provider network, bound to `chassis`
/// (`requested-chassis`, `neutron:host_id`, `up`), a Nova port.
#[derive(Clone, Copy, Debug)]
pub struct VmPort<'a> {
    /// The Logical_Switch_Port name (Neutron's port id).
    pub name: &'a str,
    pub mac: &'a str,
    pub ip: &'a str,
    /// The subnet's prefix length (`neutron:cidrs` = `ip/len`).
    pub prefix_len: u8,
    pub chassis: &'a str,
}

/// A flat provider network: the Logical_Switch `switch` (Neutron network
/// name `public`) with `external_ids` besides its name, the localnet
/// port `localnet` on `physnet`, and `vms`.
#[derive(Clone, Copy, Debug)]
pub struct ProviderNet<'a> {
    pub switch: &'a str,
    pub localnet: &'a str,
    pub physnet: &'a str,
    pub external_ids: &'a [(&'a str, &'a str)],
    pub vms: &'a [VmPort<'a>],
}

/// A provider network's networking-bgpvpn annotation: `neutron_bgpvpn:type`
/// `kind` (`l3`, `l2`), `:vni`, `:rd` `['<rd>']`, `:rt` `['<rt>']`.
#[derive(Clone, Copy, Debug)]
pub struct Bgpvpn<'a> {
    pub kind: &'a str,
    pub vni: u32,
    pub rd: &'a str,
    pub rt: &'a str,
}

/// The annotation keys [`Bgpvpn`] writes (and [`EvpnBench::set_bgpvpn`]
/// deletes).
pub const BGPVPN_KEYS: [&str; 4] = [
    "neutron_bgpvpn:type",
    "neutron_bgpvpn:vni",
    "neutron_bgpvpn:rd",
    "neutron_bgpvpn:rt",
];

impl Bgpvpn<'_> {
    /// The `external_ids` pairs, in [`BGPVPN_KEYS`] order, values as
    /// networking-bgpvpn writes them.
    pub fn pairs(&self) -> [(&'static str, String); 4] {
        [
            (BGPVPN_KEYS[0], self.kind.to_string()),
            (BGPVPN_KEYS[1], self.vni.to_string()),
            (BGPVPN_KEYS[2], format!("['{}']", self.rd)),
            (BGPVPN_KEYS[3], format!("['{}']", self.rt)),
        ]
    }
}

/// The `OVN_Northbound` rows of `nets`: NB_Global, and per network its
/// Logical_Switch, localnet port and VM ports, uuids by position.
pub fn provider_nets_rows(nets: &[ProviderNet]) -> Value {
    let uuid = |table: u8, n: usize| format!("00000000-0000-4000-8000-{table:02x}{n:010x}");
    let (mut switches, mut ports) = (Map::new(), Map::new());
    for (i, net) in nets.iter().enumerate() {
        let in_net = ("neutron:network_name", net.switch);
        let mut port_refs = Vec::new();
        let mut add_port = |row: Value| {
            let u = uuid(0xc0, ports.len());
            port_refs.push(json!(["uuid", u]));
            ports.insert(u, row);
        };
        add_port(json!({
            "name": net.localnet,
            "type": "localnet",
            "addresses": "unknown",
            "options": ovsdb_map(&[("network_name", net.physnet), ("mcast_flood", "false")]),
            "external_ids": ovsdb_map(&[in_net]),
        }));
        for vm in net.vms {
            let cidr = format!("{}/{}", vm.ip, vm.prefix_len);
            add_port(json!({
                "name": vm.name,
                "addresses": format!("{} {}", vm.mac, vm.ip),
                "up": true,
                "options": ovsdb_map(&[("requested-chassis", vm.chassis)]),
                "external_ids": ovsdb_map(&[
                    ("neutron:cidrs", &cidr),
                    ("neutron:device_owner", "compute:nova"),
                    ("neutron:host_id", vm.chassis),
                    in_net,
                ]),
            }));
        }
        let mut ids = vec![("neutron:network_name", "public")];
        ids.extend_from_slice(net.external_ids);
        switches.insert(
            uuid(0xb0, i),
            json!({
                "name": net.switch,
                "external_ids": ovsdb_map(&ids),
                "ports": ["set", port_refs],
            }),
        );
    }
    json!({
        "NB_Global": {"00000000-0000-4000-8000-0000000000a1": {}},
        "Logical_Switch": switches,
        "Logical_Switch_Port": ports,
    })
}

impl EvpnBench {
    /// Replaces the networking-bgpvpn annotations ([`BGPVPN_KEYS`]) of
    /// the Logical_Switch `switch` with `bgpvpn`'s, in one transaction;
    /// `None` removes them. Printed.
    pub fn set_bgpvpn(&self, switch: &str, bgpvpn: Option<&Bgpvpn>) -> Result<()> {
        println!("evpn-bench: OVN_Northbound Logical_Switch {switch}: neutron_bgpvpn = {bgpvpn:?}");
        let mut ops = vec![json!({
            "op": "mutate", "table": "Logical_Switch",
            "where": [["name", "==", switch]],
            "mutations": [["external_ids", "delete", ["set", BGPVPN_KEYS]]],
        })];
        if let Some(b) = bgpvpn {
            let pairs = b.pairs();
            let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
            ops.push(json!({
                "op": "mutate", "table": "Logical_Switch",
                "where": [["name", "==", switch]],
                "mutations": [["external_ids", "insert", ovsdb_map(&pairs)]],
            }));
        }
        let r = self.nb.transact(&ops)?;
        // a where clause that matched nothing is no error to ovsdb-server
        ensure!(
            r.len() == ops.len() && r.iter().all(|o| o["count"].as_u64() == Some(1)),
            "no single Logical_Switch {switch}: {r:?}"
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_get_their_ports_and_the_annotation_its_values() {
        let vm = VmPort {
            name: "vm1",
            mac: "fa:16:3e:11:11:11",
            ip: "172.24.4.10",
            prefix_len: 24,
            chassis: "node",
        };
        let ann = Bgpvpn {
            kind: "l2",
            vni: 1002,
            rd: "64999:1002",
            rt: "64512:1002",
        }
        .pairs();
        let ids: Vec<(&str, &str)> = ann.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let rows = provider_nets_rows(&[
            ProviderNet {
                switch: "ls-a",
                localnet: "ln-a",
                physnet: "physnet1",
                external_ids: &[],
                vms: &[vm],
            },
            ProviderNet {
                switch: "ls-b",
                localnet: "ln-b",
                physnet: "physnet2",
                external_ids: &ids,
                vms: &[],
            },
        ]);
        let ls: Vec<&Value> = rows["Logical_Switch"]
            .as_object()
            .unwrap()
            .values()
            .collect();
        assert_eq!(ls.len(), 2);
        assert_eq!(ls[0]["ports"][1].as_array().unwrap().len(), 2);
        assert_eq!(ls[1]["ports"][1].as_array().unwrap().len(), 1);
        let b_ids = ls[1]["external_ids"][1].to_string();
        for want in [
            r#"["neutron_bgpvpn:type","l2"]"#,
            r#"["neutron_bgpvpn:vni","1002"]"#,
            r#"["neutron_bgpvpn:rd","['64999:1002']"]"#,
            r#"["neutron_bgpvpn:rt","['64512:1002']"]"#,
        ] {
            assert!(b_ids.contains(want), "{want} not in {b_ids}");
        }
        let lsp = rows["Logical_Switch_Port"].as_object().unwrap();
        assert_eq!(lsp.len(), 3);
        let vm_row = lsp.values().find(|r| r["name"] == "vm1").unwrap();
        assert_eq!(vm_row["addresses"], "fa:16:3e:11:11:11 172.24.4.10");
        assert!(vm_row["external_ids"][1]
            .to_string()
            .contains(r#"["neutron:cidrs","172.24.4.10/24"]"#));
        let ln_b = lsp.values().find(|r| r["name"] == "ln-b").unwrap();
        assert!(ln_b["options"][1]
            .to_string()
            .contains(r#"["network_name","physnet2"]"#));
    }
}
