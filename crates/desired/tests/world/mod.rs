//! A topogen topology in an in-memory NB and local OVS database, fed to a
//! `LiveSnapshot`, and random changes to it (mostly VM ports, some not):
//! the histories the `DesiredCache` tests replay.

// Each test binary uses its own subset.
#![allow(dead_code)]

use std::collections::BTreeMap;

use obgp_config::{AdvertisementMethod, AnnounceWith, Config, Driver, ExposingMethod};
use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::{LiveSnapshot, NbChanges, Tables, NB_DB, OVS_DB};
use obgp_ovsdb_data::{Row, Uuid};
use obgp_topogen::{Params, Rng, Topology};
use serde_json::{json, Value};

pub const LSP: &str = "Logical_Switch_Port";
pub const LS: &str = "Logical_Switch";

/// Picks from a slice with topogen's seeded generator: a fixed seed gives
/// the same history on every run.
pub trait Pick {
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T;
}

impl Pick for Rng {
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

pub struct World {
    /// The provider network's switch name (`neutron-<id>`).
    pub provider: String,
    pub nb: Tables,
    pub live: LiveSnapshot,
    /// What the live snapshot's updates changed, accumulated until a
    /// computation consumes them.
    pub changes: NbChanges,
    pub rng: Rng,
    pub next_uuid: u128,
}

fn ovs() -> Tables {
    let ovs = FixtureDb::from_wire(&json!({ OVS_DB: {
        "Open_vSwitch": {"00000000-0000-4000-8000-0000000000a1": {"external_ids": ["map", [
            ["hostname", "host-000"], ["system-id", "chassis-000"],
            ["ovn-bridge-mappings", "physnet1:br-ex"]]]}},
        "Bridge": {"00000000-0000-4000-8000-0000000000a2": {"name": "br-ex",
            "ports": ["uuid", "00000000-0000-4000-8000-0000000000a3"]}},
        "Port": {"00000000-0000-4000-8000-0000000000a3": {"name": "PATCH"}}
    }}))
    .expect("ovs fixture");
    ovs.dbs[OVS_DB].clone()
}

impl World {
    pub fn new(seed: u64, distributed: bool) -> World {
        let topo = Topology::generate(Params {
            vms: 400,
            vms_per_net: 20,
            // Many ports with exposures of their own: bound here, on a
            // provider network.
            local_fraction: 0.3,
            provider_vm_ratio: 0.6,
            distributed,
            batch_ops: usize::MAX,
            seed,
            ..Params::default()
        });
        let mut db = FixtureDb::from_wire(&json!({ NB_DB: {} })).expect("empty db");
        for ops in topo.nb_transactions() {
            db.apply(NB_DB, &ops).expect("topogen transaction");
        }
        let nb = db.dbs[NB_DB].clone();
        let localnet = nb[LSP]
            .values()
            .find(|r| r.str("type") == Some("localnet"))
            .and_then(|r| r.str("name"))
            .expect("a localnet")
            .to_string();
        let mut ovs = ovs();
        for r in ovs.get_mut("Port").expect("Port").values_mut() {
            *r = Row::from_wire(&json!({"name": format!("patch-{localnet}-to-br-int")}))
                .expect("port row");
        }
        let mut live = LiveSnapshot::default();
        let mut changes = live.reset_nb(&nb);
        changes.then(live.reset_ovs(&ovs));
        World {
            provider: topo.provider_switch(),
            nb,
            live,
            changes,
            rng: Rng(seed),
            next_uuid: 0xfeed_0000,
        }
    }

    pub fn rows(&self, table: &str) -> Vec<Uuid> {
        let mut v: Vec<Uuid> = self.nb[table].keys().copied().collect();
        v.sort_unstable();
        v
    }

    pub fn vm_ports(&self) -> Vec<Uuid> {
        let mut v: Vec<Uuid> = self.nb[LSP]
            .iter()
            .filter(|(_, r)| r.str("type").unwrap_or("").is_empty())
            .map(|(u, _)| *u)
            .collect();
        v.sort_unstable();
        v
    }

    /// VM ports bound to this chassis (the ones with exposures).
    pub fn local_vm_ports(&self) -> Vec<Uuid> {
        let mut v: Vec<Uuid> = self
            .vm_ports()
            .into_iter()
            .filter(|u| {
                let row = &self.nb[LSP][u];
                row.get("options").is_some_and(|o| {
                    o.to_wire()
                        .to_string()
                        .contains("[\"requested-chassis\",\"host-000\"]")
                })
            })
            .collect();
        v.sort_unstable();
        v
    }

    pub fn wire(&self, table: &str, u: Uuid) -> Value {
        let obj: serde_json::Map<String, Value> = self.nb[table][&u]
            .columns
            .iter()
            .map(|(k, d)| (k.as_str().to_string(), d.to_wire()))
            .collect();
        Value::Object(obj)
    }

    /// Writes the rows and feeds them to the live snapshot: as one batch,
    /// or now and then one batch per row (as a client that saw the
    /// transaction in parts would), accumulating what they changed.
    pub fn commit(&mut self, rows: Vec<(&'static str, Uuid, Option<Value>)>) {
        let mut parsed: Vec<(&'static str, Uuid, Option<Row>)> = Vec::new();
        for (t, u, v) in rows {
            let row = v.map(|v| Row::from_wire(&v).expect("row"));
            match &row {
                Some(r) => {
                    self.nb.get_mut(t).expect("table").insert(u, r.clone());
                }
                None => {
                    self.nb.get_mut(t).expect("table").remove(&u);
                }
            }
            parsed.push((t, u, row));
        }
        let rows = parsed.iter().map(|(t, u, r)| (*t, *u, r.as_ref()));
        if parsed.len() > 1 && self.rng.below(3) == 0 {
            for row in rows {
                self.changes.then(self.live.apply_nb([row]));
            }
        } else {
            self.changes.then(self.live.apply_nb(rows));
        }
    }

    pub fn switch_of(&self, port: Uuid) -> Option<Uuid> {
        self.nb[LS]
            .iter()
            .find(|(_, r)| r.uuids("ports").any(|p| p == port))
            .map(|(u, _)| *u)
    }

    pub fn set_ports(&self, sw: Uuid, f: impl FnOnce(&mut Vec<Uuid>)) -> Value {
        let mut v = self.wire(LS, sw);
        let mut ports: Vec<Uuid> = self.nb[LS][&sw].uuids("ports").collect();
        f(&mut ports);
        let set: Vec<Value> = ports
            .iter()
            .map(|u| json!(["uuid", u.to_string()]))
            .collect();
        v["ports"] = json!(["set", set]);
        v
    }

    /// One random change; returns whether it was a port-only one.
    pub fn step(&mut self) -> bool {
        let vms = self.vm_ports();
        let local = self.local_vm_ports();
        // Half the changes hit a port bound here: those have exposures.
        let port = if local.is_empty() || self.rng.below(2) == 0 {
            *self.rng.pick(&vms)
        } else {
            *self.rng.pick(&local)
        };
        let mut row = self.wire(LSP, port);
        let host = || format!("host-{:03}", 0);
        match self.rng.below(14) {
            0 | 1 => {
                let up = row["up"].as_bool().unwrap_or(false);
                row["up"] = json!(!up);
            }
            2 | 3 => {
                let h = if self.rng.below(2) == 0 {
                    host()
                } else {
                    format!("host-{:03}", 1 + self.rng.below(9))
                };
                set_map(&mut row, "options", "requested-chassis", &h);
                set_map(&mut row, "external_ids", "neutron:host_id", &h);
            }
            4 => {
                // A fresh IP, or one another port has (a contested IP),
                // sometimes with its MAC too (the very same wiring).
                let ip = if self.rng.below(2) == 0 && !local.is_empty() {
                    let other = *self.rng.pick(&local);
                    let other = self.wire(LSP, other);
                    if self.rng.below(2) == 0 {
                        row["addresses"] = other["addresses"].clone();
                        self.commit(vec![(LSP, port, Some(row))]);
                        return true;
                    }
                    first_ip(&other).unwrap_or_else(|| "10.99.0.1".into())
                } else {
                    format!(
                        "10.{}.{}.{}",
                        100 + self.rng.below(50),
                        self.rng.below(250),
                        1 + self.rng.below(250)
                    )
                };
                // Now and then a loopback address beside it, which is never
                // exposed but noted: a port that notes is patched in full.
                let ip = if self.rng.below(8) == 0 {
                    format!("{ip} 127.0.0.1")
                } else {
                    ip
                };
                row["addresses"] =
                    json!(format!("fa:16:3e:00:00:{:02x} {ip}", self.rng.below(256)));
            }
            5 => {
                // Delete the port and take it off its switch.
                let mut rows = vec![(LSP, port, None)];
                if let Some(sw) = self.switch_of(port) {
                    rows.push((
                        LS,
                        sw,
                        Some(self.set_ports(sw, |p| p.retain(|u| *u != port))),
                    ));
                }
                self.commit(rows);
                return true;
            }
            6 | 7 => {
                // A copy of the port under a new name on another VM's
                // network, bound here or elsewhere.
                let like = *self.rng.pick(&vms);
                let mut new = self.wire(LSP, like);
                self.next_uuid += 1;
                let u = Uuid(self.next_uuid);
                new["name"] = json!(format!("new-{}", self.next_uuid));
                new["up"] = json!(self.rng.below(4) != 0);
                let ip = format!(
                    "10.{}.{}.{}",
                    150 + self.rng.below(50),
                    self.rng.below(250),
                    1 + self.rng.below(250)
                );
                new["addresses"] =
                    json!(format!("fa:16:3e:00:01:{:02x} {ip}", self.rng.below(256)));
                let h = if self.rng.below(2) == 0 {
                    host()
                } else {
                    "host-005".into()
                };
                set_map(&mut new, "options", "requested-chassis", &h);
                let mut rows = vec![(LSP, u, Some(new))];
                if let Some(sw) = self.switch_of(like) {
                    rows.push((LS, sw, Some(self.set_ports(sw, |p| p.push(u)))));
                }
                self.commit(rows);
                return true;
            }
            8 => {
                // Move the port to another network (its external_ids say which).
                let other = *self.rng.pick(&vms);
                if let Some(net) = map_get(
                    &self.wire(LSP, other),
                    "external_ids",
                    "neutron:network_name",
                ) {
                    set_map(&mut row, "external_ids", "neutron:network_name", &net);
                }
            }
            12 | 13 => {
                // Dual stack: an IPv6 address in one of two /64s, whose
                // proxy NDP entry other ports may share.
                let v4 = first_ip(&row).unwrap_or_else(|| "10.98.0.1".into());
                let net = self.rng.below(2);
                let host = 1 + self.rng.below(200);
                let mac = format!("fa:16:3e:00:02:{:02x}", self.rng.below(256));
                row["addresses"] = json!(format!("{mac} {v4} 2001:db8:{net}::{host:x}"));
                set_map(
                    &mut row,
                    "external_ids",
                    "neutron:cidrs",
                    &format!("{v4}/24 2001:db8:{net}::{host:x}/64"),
                );
            }
            9 => {
                // A FIP on the port, or none.
                if map_get(&row, "external_ids", "neutron:port_fip").is_some() {
                    del_map(&mut row, "external_ids", "neutron:port_fip");
                } else {
                    set_map(&mut row, "external_ids", "neutron:port_fip", "172.24.4.200");
                }
            }
            10 => {
                // Not a port: a gateway moves, or a NAT changes.
                let lrps = self.rows("Logical_Router_Port");
                if lrps.is_empty() {
                    return false;
                }
                let lrp = *self.rng.pick(&lrps);
                let mut r = self.wire("Logical_Router_Port", lrp);
                let h = format!("chassis-{:03}", self.rng.below(3));
                set_map(&mut r, "status", "hosting-chassis", &h);
                self.commit(vec![("Logical_Router_Port", lrp, Some(r))]);
                return false;
            }
            _ => {
                // Not a VM port: a localnet's VLAN tag.
                let localnets: Vec<Uuid> = self.nb[LSP]
                    .iter()
                    .filter(|(_, r)| r.str("type") == Some("localnet"))
                    .map(|(u, _)| *u)
                    .collect();
                let ln = *self.rng.pick(&localnets);
                let mut r = self.wire(LSP, ln);
                r["tag"] = json!(100 + self.rng.below(3));
                self.commit(vec![(LSP, ln, Some(r))]);
                return false;
            }
        }
        self.commit(vec![(LSP, port, Some(row))]);
        true
    }
}

fn pairs(v: &Value, col: &str) -> BTreeMap<String, String> {
    v.get(col)
        .and_then(|m| m.get(1))
        .and_then(Value::as_array)
        .map(|kvs| {
            kvs.iter()
                .filter_map(|kv| Some((kv[0].as_str()?.to_string(), kv[1].as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn put_pairs(v: &mut Value, col: &str, m: BTreeMap<String, String>) {
    let kvs: Vec<Value> = m.into_iter().map(|(k, v)| json!([k, v])).collect();
    v[col] = json!(["map", kvs]);
}

fn set_map(v: &mut Value, col: &str, key: &str, val: &str) {
    let mut m = pairs(v, col);
    m.insert(key.into(), val.into());
    put_pairs(v, col, m);
}

fn del_map(v: &mut Value, col: &str, key: &str) {
    let mut m = pairs(v, col);
    m.remove(key);
    put_pairs(v, col, m);
}

pub fn map_get(v: &Value, col: &str, key: &str) -> Option<String> {
    pairs(v, col).remove(key)
}

fn first_ip(v: &Value) -> Option<String> {
    let a = match &v["addresses"] {
        Value::String(s) => s.clone(),
        Value::Array(x) if x.len() == 2 && x[0] == "set" => x[1].get(0)?.as_str()?.to_string(),
        _ => return None,
    };
    a.split_whitespace().nth(1).map(str::to_string)
}
/// The advertisement methods and ways of announcing the histories are
/// drawn with (the property tests' configurations, [`config`]).
pub fn method() -> impl proptest::strategy::Strategy<Value = (AdvertisementMethod, AnnounceWith)> {
    use proptest::prelude::*;
    let method = prop_oneof![
        Just(AdvertisementMethod::Host),
        Just(AdvertisementMethod::Subnet)
    ];
    let announce = prop_oneof![Just(AnnounceWith::Address), Just(AnnounceWith::Route)];
    (method, announce)
}

/// The NB driver, underlay, tenant networks exposed by `method`.
pub fn config(method: AdvertisementMethod, announce: AnnounceWith) -> Config {
    let mut config = Config::default();
    config.default.announce_with = announce;
    config.default.driver = Driver::NbOvnBgpDriver;
    config.default.exposing_method = ExposingMethod::Underlay;
    config.default.bgp_router_id = Some("192.0.2.1".into());
    config.default.expose_tenant_networks = true;
    config.default.advertisement_method_tenant_networks = method;
    config
}
