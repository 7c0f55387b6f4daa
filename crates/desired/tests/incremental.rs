//! `DesiredCache` against the full computation: random histories of port
//! changes (and some other changes) on a topogen topology, each result
//! compared with `desired_state` on the same snapshot.

use std::collections::BTreeMap;

use obgp_config::{AdvertisementMethod, AnnounceWith, Config, Driver, ExposingMethod};
use obgp_desired::{desired_state, Computed, Desired, DesiredCache, NodeFacts};
use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::{LiveSnapshot, Snapshot, Tables, NB_DB, OVS_DB};
use obgp_ovsdb_data::{Row, Uuid};
use obgp_topogen::{Params, Rng, Topology};
use serde_json::{json, Value};

const LSP: &str = "Logical_Switch_Port";
const LS: &str = "Logical_Switch";

/// Picks from a slice with topogen's seeded generator: a fixed seed gives
/// the same history on every run.
trait Pick {
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T;
}

impl Pick for Rng {
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

struct World {
    /// The provider network's switch name (`neutron-<id>`).
    provider: String,
    nb: Tables,
    live: LiveSnapshot,
    rng: Rng,
    next_uuid: u128,
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
    fn new(seed: u64, distributed: bool) -> World {
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
        live.reset_nb(&nb);
        live.reset_ovs(&ovs);
        World {
            provider: topo.provider_switch(),
            nb,
            live,
            rng: Rng(seed),
            next_uuid: 0xfeed_0000,
        }
    }

    fn rows(&self, table: &str) -> Vec<Uuid> {
        let mut v: Vec<Uuid> = self.nb[table].keys().copied().collect();
        v.sort_unstable();
        v
    }

    fn vm_ports(&self) -> Vec<Uuid> {
        let mut v: Vec<Uuid> = self.nb[LSP]
            .iter()
            .filter(|(_, r)| r.str("type").unwrap_or("").is_empty())
            .map(|(u, _)| *u)
            .collect();
        v.sort_unstable();
        v
    }

    /// VM ports bound to this chassis (the ones with exposures).
    fn local_vm_ports(&self) -> Vec<Uuid> {
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

    fn wire(&self, table: &str, u: Uuid) -> Value {
        let obj: serde_json::Map<String, Value> = self.nb[table][&u]
            .columns
            .iter()
            .map(|(k, d)| (k.as_str().to_string(), d.to_wire()))
            .collect();
        Value::Object(obj)
    }

    /// Writes the rows and feeds them to the live snapshot as one batch.
    fn commit(&mut self, rows: Vec<(&'static str, Uuid, Option<Value>)>) {
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
        self.live
            .apply_nb(parsed.iter().map(|(t, u, r)| (*t, *u, r.as_ref())));
    }

    fn switch_of(&self, port: Uuid) -> Option<Uuid> {
        self.nb[LS]
            .iter()
            .find(|(_, r)| r.uuids("ports").any(|p| p == port))
            .map(|(u, _)| *u)
    }

    fn set_ports(&self, sw: Uuid, f: impl FnOnce(&mut Vec<Uuid>)) -> Value {
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
    fn step(&mut self) -> bool {
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

fn map_get(v: &Value, col: &str, key: &str) -> Option<String> {
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

/// `got == want`, with only the differences in the failure message.
fn assert_same(got: &Desired, want: &Desired, what: &str) {
    if got == want {
        return;
    }
    let ips: std::collections::BTreeSet<_> =
        got.exposed.keys().chain(want.exposed.keys()).collect();
    let diff: Vec<String> = ips
        .into_iter()
        .filter(|ip| got.exposed.get(ip) != want.exposed.get(ip))
        .map(|ip| {
            format!(
                "{ip}: patched {:?}, full {:?}",
                got.exposed.get(ip),
                want.exposed.get(ip)
            )
        })
        .collect();
    let rest_equal = Desired {
        exposed: Default::default(),
        ..got.clone()
    } == Desired {
        exposed: Default::default(),
        ..want.clone()
    };
    panic!("{what}: exposures differ: {diff:#?}; the rest is equal: {rest_equal}");
}

fn config(method: AdvertisementMethod) -> Config {
    let mut config = Config::default();
    config.default.driver = Driver::NbOvnBgpDriver;
    config.default.exposing_method = ExposingMethod::Underlay;
    config.default.bgp_router_id = Some("192.0.2.1".into());
    config.default.expose_tenant_networks = true;
    config.default.advertisement_method_tenant_networks = method;
    config
}

/// Runs `steps` random changes, computing through the cache now and then,
/// and checks each result against a full computation. Returns (patched,
/// port-only computations).
fn history(
    seed: u64,
    distributed: bool,
    (method, announce): (AdvertisementMethod, AnnounceWith),
    steps: usize,
) -> (usize, usize) {
    let mut config = config(method);
    config.default.announce_with = announce;
    let facts = NodeFacts::default();
    let mut w = World::new(seed, distributed);
    let mut cache = DesiredCache::default();
    let first = w.live.snapshot();
    let how = cache.compute(&first, &config, &facts).expect("supported");
    assert_eq!(how, Computed::Full);
    cache.settle();
    let mut settled = cache.node().cloned();
    let (mut patched, mut port_only_runs) = (0, 0);
    let mut port_only = true;
    for step in 0..steps {
        port_only &= w.step();
        // Sometimes several changes lie between two computations.
        if w.rng.below(3) == 0 {
            continue;
        }
        let snap: Snapshot = w.live.snapshot();
        let how = cache.compute(&snap, &config, &facts).expect("supported");
        let want = desired_state(&snap, &config, &facts).expect("supported");
        let what = format!("step {step} ({how:?}), seed {seed}");
        assert_same(cache.desired().unwrap(), &want, &what);
        assert!(
            cache.node() == Some(&want.to_node()),
            "{what}: node objects differ"
        );
        // The settled node objects are those of the last settled result,
        // whether or not results were settled in between (a reconcile
        // that failed before applying does not settle).
        assert!(
            cache.settled() == settled.as_ref(),
            "{what}: settled objects differ"
        );
        if w.rng.below(4) != 0 {
            cache.settle();
            settled = cache.node().cloned();
        }
        if port_only {
            port_only_runs += 1;
        }
        if matches!(how, Computed::Patched { .. }) {
            assert!(port_only, "step {step}: patched after a non-port change");
            patched += 1;
        }
        port_only = true;
    }
    (patched, port_only_runs)
}

#[test]
fn patched_results_equal_full_computations() {
    let mut total = (0, 0);
    let (host, subnet) = (AdvertisementMethod::Host, AdvertisementMethod::Subnet);
    let (address, route) = (AnnounceWith::Address, AnnounceWith::Route);
    for (seed, distributed, how) in [
        (1, false, (host, address)),
        (2, true, (host, address)),
        (3, false, (subnet, address)),
        (4, true, (subnet, address)),
        (5, true, (host, route)),
        (6, false, (subnet, route)),
    ] {
        let (patched, port_only) = history(seed, distributed, how, 300);
        total.0 += patched;
        total.1 += port_only;
    }
    // Not vacuous: most port-only changes are patched, not recomputed.
    assert!(
        total.0 * 2 > total.1,
        "only {} of {} port-only computations were patched",
        total.0,
        total.1
    );
}

#[test]
fn a_fresh_cache_or_another_config_computes_in_full() {
    let w = World::new(7, false);
    let snap = w.live.snapshot();
    let facts = NodeFacts::default();
    let mut cache = DesiredCache::default();
    let host = config(AdvertisementMethod::Host);
    assert_eq!(cache.compute(&snap, &host, &facts).unwrap(), Computed::Full);
    assert_eq!(
        cache.compute(&snap, &host, &facts).unwrap(),
        Computed::Patched { ports: 0 }
    );
    cache.clear();
    assert_eq!(cache.compute(&snap, &host, &facts).unwrap(), Computed::Full);
    let subnet = config(AdvertisementMethod::Subnet);
    assert_eq!(
        cache.compute(&snap, &subnet, &facts).unwrap(),
        Computed::Full
    );
    let want = desired_state(&snap, &subnet, &facts).unwrap();
    assert_same(cache.desired().unwrap(), &want, "other config");
}

#[test]
fn two_ports_with_the_same_ip_and_mac_are_recomputed_in_full() {
    let config = config(AdvertisementMethod::Host);
    let facts = NodeFacts::default();
    let mut w = World::new(11, false);
    // Two ports bound here on the provider network, in uuid order.
    let on_provider: Vec<Uuid> = w
        .local_vm_ports()
        .into_iter()
        .filter(|u| {
            map_get(&w.wire(LSP, *u), "external_ids", "neutron:network_name").as_deref()
                == Some(w.provider.as_str())
                && w.wire(LSP, *u)["up"] == json!(true)
        })
        .collect();
    assert!(on_provider.len() >= 2, "topology has {on_provider:?}");
    let (first, second) = (on_provider[0], on_provider[1]);
    let mut cache = DesiredCache::default();
    let mut check = |w: &World, what: &str| {
        let snap = w.live.snapshot();
        let how = cache.compute(&snap, &config, &facts).expect("supported");
        let want = desired_state(&snap, &config, &facts).unwrap();
        assert_same(
            cache.desired().unwrap(),
            &want,
            &format!("{what} ({how:?})"),
        );
        assert!(
            cache.node() == Some(&want.to_node()),
            "{what}: node objects differ"
        );
        how
    };
    check(&w, "start");
    // The second port takes the first one's addresses: the same exposure,
    // asked for twice.
    let mut row = w.wire(LSP, second);
    row["addresses"] = w.wire(LSP, first)["addresses"].clone();
    w.commit(vec![(LSP, second, Some(row))]);
    assert_eq!(check(&w, "shared"), Computed::Full);
    // The first one goes down: the second still asks for the IP.
    let mut row = w.wire(LSP, first);
    row["up"] = json!(false);
    w.commit(vec![(LSP, first, Some(row))]);
    assert_eq!(check(&w, "first down"), Computed::Full);
}
