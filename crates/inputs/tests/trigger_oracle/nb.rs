//! The NB driver's world: a topogen topology in a real OVN_Northbound
//! server, and the changes Neutron and OVN make to it.

use std::collections::BTreeSet;

use obgp_config::{AdvertisementMethod, Config, Driver, ExposingMethod};
use obgp_ovsdb_data::{DbSnapshot, Row, Uuid};
use obgp_testbed::ovsdb::OvsdbServer;
use obgp_topogen::{Params, Rng, Topology};
use serde_json::{json, Value};

use super::{chassis, check, host, Combo, World, HOSTNAME, HOSTS};

const LSP: &str = "Logical_Switch_Port";
const LS: &str = "Logical_Switch";
/// A portless switch renamed by every step: once a cache shows a step's
/// name, it holds that step's transaction.
const MARKER: &str = "oracle-marker";

fn marker(step: usize) -> String {
    format!("{MARKER}-{step}")
}

pub fn uuid_ref(u: Uuid) -> Value {
    json!(["uuid", u.to_string()])
}

pub fn omap(pairs: &[(&str, &str)]) -> Value {
    json!([
        "map",
        pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()
    ])
}

/// The uuids of `table`'s rows passing `keep`, in an order that does not
/// depend on the uuids the server drew (names, NAT addresses): a seed
/// picks the same rows on every run.
pub fn rows(db: &DbSnapshot, table: &str, keep: impl Fn(&Row) -> bool) -> Vec<Uuid> {
    let key = |r: &Row| {
        ["name", "logical_port", "external_ip", "logical_ip", "type"]
            .map(|c| r.str(c).unwrap_or("").to_string())
    };
    let mut v: Vec<(_, Uuid)> = db
        .table(table)
        .iter()
        .filter(|(_, r)| keep(r))
        .map(|(u, r)| (key(r), *u))
        .collect();
    v.sort();
    v.into_iter().map(|(_, u)| u).collect()
}

fn port_named(db: &DbSnapshot, name: &str) -> Option<Uuid> {
    rows(db, LSP, |r| r.str("name") == Some(name))
        .first()
        .copied()
}

fn pick(rng: &mut Rng, v: &[Uuid]) -> Option<Uuid> {
    (!v.is_empty()).then(|| v[rng.below(v.len())])
}

fn by_uuid(u: Uuid) -> Value {
    json!([["_uuid", "==", uuid_ref(u)]])
}

fn set_key(table: &str, u: Uuid, column: &str, key: &str, value: Option<&str>) -> Vec<Value> {
    let mut ops = vec![json!({"op": "mutate", "table": table, "where": by_uuid(u),
        "mutations": [[column, "delete", ["set", [key]]]]})];
    if let Some(v) = value {
        ops.push(json!({"op": "mutate", "table": table, "where": by_uuid(u),
            "mutations": [[column, "insert", omap(&[(key, v)])]]}));
    }
    ops
}

/// The NB driver's change kinds, drawn uniformly.
const KINDS: &[&str] = &[
    "gateway move",
    "migration start",
    "bind",
    "unbind",
    "up flap",
    "FIP move",
    "FIP delete",
    "FIP external_mac",
    "LB delete",
    "LB VIP",
    "SNAT delete",
    "fip-distributed flip",
    "bgpvpn annotation",
    "port type",
    "port delete",
];

/// The operations of one random change of kind `kind` on the rows `db`
/// holds, with its description; `None` when the topology lacks what it
/// names.
/// Long (about 190 lines) on purpose: one arm per change kind, each the
/// operations Neutron or OVN would write, read in one place.
pub fn nb_change(kind: &str, rng: &mut Rng, db: &DbSnapshot) -> Option<(Vec<Value>, String)> {
    let vms = rows(db, LSP, |r| {
        matches!(r.str("type").unwrap_or(""), "" | "virtual" | "localport")
            && r.str("addresses").is_some_and(|a| a.contains(' '))
    });
    let name = |u: Uuid| {
        db.get(LSP, u)
            .and_then(|r| r.str("name"))
            .unwrap_or("")
            .to_string()
    };
    let to = if rng.below(2) == 0 {
        0
    } else {
        1 + rng.below(HOSTS - 1)
    };
    let fips = rows(db, "NAT", |r| r.str("type") == Some("dnat_and_snat"));
    let out = match kind {
        "gateway move" => {
            let gws = rows(db, "Logical_Router_Port", |r| {
                r.map_str("status", "hosting-chassis").is_some()
            });
            let u = pick(rng, &gws)?;
            let ops = vec![
                json!({"op": "update", "table": "Logical_Router_Port", "where": by_uuid(u),
                "row": {"status": omap(&[("hosting-chassis", &chassis(to))])}}),
            ];
            (ops, format!("gateway LRP {u} hosted on {}", chassis(to)))
        }
        "migration start" => {
            let u = pick(rng, &vms)?;
            let src = db
                .get(LSP, u)
                .and_then(|r| r.map_str("options", "requested-chassis"))
                .unwrap_or("")
                .to_string();
            let both = format!("{src},{}", host(to));
            let ops = vec![json!({"op": "update", "table": LSP, "where": by_uuid(u),
                "row": {"options": omap(&[("requested-chassis", &both), ("activation-strategy", "rarp")])}})];
            (ops, format!("port {} migrating {both}", name(u)))
        }
        "bind" | "unbind" => {
            let u = pick(rng, &vms)?;
            let target = (kind == "bind").then(|| host(to));
            let mut ops = set_key(LSP, u, "options", "requested-chassis", target.as_deref());
            ops.extend(set_key(LSP, u, "options", "activation-strategy", None));
            ops.extend(set_key(
                LSP,
                u,
                "external_ids",
                "neutron:host_id",
                target.as_deref(),
            ));
            (ops, format!("port {} bound to {target:?}", name(u)))
        }
        "up flap" => {
            let u = pick(rng, &vms)?;
            let up = db.get(LSP, u).and_then(|r| r.bool("up")).unwrap_or(false);
            let ops = vec![
                json!({"op": "update", "table": LSP, "where": by_uuid(u), "row": {"up": !up}}),
            ];
            (ops, format!("port {} up={}", name(u), !up))
        }
        "FIP move" => {
            // As Neutron associates a FIP with another port: the NAT's
            // port and address, and `neutron:port_fip` moves with it.
            let free = rows(db, LSP, |r| {
                r.str("type") == Some("")
                    && r.map_str("external_ids", "neutron:port_fip").is_none()
                    && r.str("addresses").is_some_and(|a| a.contains(' '))
            });
            let (n, u) = (pick(rng, &fips)?, pick(rng, &free)?);
            let nat = db.get("NAT", n)?;
            let fip = nat.str("external_ip")?.to_string();
            let ip = db
                .get(LSP, u)?
                .str("addresses")?
                .split(' ')
                .nth(1)?
                .to_string();
            let mut ops = vec![json!({"op": "update", "table": "NAT", "where": by_uuid(n),
                "row": {"logical_port": name(u), "logical_ip": ip}})];
            if let Some(old) = nat.str("logical_port").and_then(|p| port_named(db, p)) {
                ops.extend(set_key(LSP, old, "external_ids", "neutron:port_fip", None));
            }
            ops.extend(set_key(
                LSP,
                u,
                "external_ids",
                "neutron:port_fip",
                Some(&fip),
            ));
            (ops, format!("FIP {fip} moved to port {}", name(u)))
        }
        "FIP delete" => {
            // As Neutron deletes a FIP: the NAT goes, and its port's
            // `neutron:port_fip` with it.
            let n = pick(rng, &fips)?;
            let nat = db.get("NAT", n)?;
            let mut ops = vec![
                json!({"op": "mutate", "table": "Logical_Router", "where": [],
                "mutations": [["nat", "delete", ["set", [uuid_ref(n)]]]]}),
            ];
            if let Some(old) = nat.str("logical_port").and_then(|p| port_named(db, p)) {
                ops.extend(set_key(LSP, old, "external_ids", "neutron:port_fip", None));
            }
            (
                ops,
                format!("FIP {} deleted", nat.str("external_ip").unwrap_or("?")),
            )
        }
        "SNAT delete" => {
            let n = pick(rng, &rows(db, "NAT", |r| r.str("type") == Some("snat")))?;
            let ops = vec![
                json!({"op": "mutate", "table": "Logical_Router", "where": [],
                "mutations": [["nat", "delete", ["set", [uuid_ref(n)]]]]}),
            ];
            (ops, format!("SNAT {n} deleted"))
        }
        "FIP external_mac" => {
            // Neutron sets a FIP's MAC (port up) or clears it (port down)
            // only while FIPs are distributed.
            let distributed = rows(db, "NB_Global", |r| {
                r.map_str("external_ids", "neutron:fip-distributed") != Some("False")
            });
            if distributed.is_empty() {
                return None;
            }
            let n = pick(rng, &fips)?;
            let has = db
                .get("NAT", n)
                .and_then(|r| r.str("external_mac"))
                .is_some();
            let mac = if has {
                json!(["set", []])
            } else {
                json!("fa:16:3e:77:77:77")
            };
            let ops = vec![json!({"op": "update", "table": "NAT", "where": by_uuid(n),
                "row": {"external_mac": mac}})];
            (ops, format!("FIP {n} external_mac {mac}"))
        }
        "LB delete" => {
            let lb = pick(rng, &rows(db, "Load_Balancer", |_| true))?;
            let ops = ["Logical_Router", LS]
                .iter()
                .map(|t| {
                    json!({"op": "mutate", "table": t, "where": [],
                    "mutations": [["load_balancer", "delete", ["set", [uuid_ref(lb)]]]]})
                })
                .collect();
            (ops, format!("LB {lb} deleted"))
        }
        "LB VIP" => {
            let lb = pick(rng, &rows(db, "Load_Balancer", |_| true))?;
            let vip = format!("172.24.{}.{}:80", 200 + rng.below(10), 1 + rng.below(250));
            let ops = vec![
                json!({"op": "mutate", "table": "Load_Balancer", "where": by_uuid(lb),
                "mutations": [["vips", "insert", omap(&[(&vip, "10.0.0.9:80")])]]}),
            ];
            (ops, format!("LB {lb} gains VIP {vip}"))
        }
        "fip-distributed flip" => {
            let g = pick(rng, &rows(db, "NB_Global", |_| true))?;
            let now = db
                .get("NB_Global", g)
                .and_then(|r| r.map_str("external_ids", "neutron:fip-distributed"))
                .unwrap_or("True")
                .to_string();
            let next = if now == "True" { "False" } else { "True" };
            let ops = set_key(
                "NB_Global",
                g,
                "external_ids",
                "neutron:fip-distributed",
                Some(next),
            );
            (ops, format!("neutron:fip-distributed {next}"))
        }
        "bgpvpn annotation" => {
            let ls = pick(
                rng,
                &rows(db, LS, |r| {
                    r.str("name").is_some_and(|n| n.starts_with("neutron-"))
                }),
            )?;
            let row = db.get(LS, ls);
            let has = row
                .and_then(|r| r.map_str("external_ids", "neutron_bgpvpn:vni"))
                .is_some();
            let kind = row.and_then(|r| r.map_str("external_ids", "neutron_bgpvpn:type"));
            // Added (l3 or l2), removed, or switched l3 <-> l2 (what moves
            // a network between dynamic's methods).
            let (vni, kind) = match (has, rng.below(2)) {
                (false, k) => (
                    Some((1000 + rng.below(20)).to_string()),
                    Some(if k == 0 { "l3" } else { "l2" }),
                ),
                (true, 0) => (None, None),
                (true, _) => (
                    row.and_then(|r| r.map_str("external_ids", "neutron_bgpvpn:vni"))
                        .map(str::to_string),
                    Some(if kind == Some("l2") { "l3" } else { "l2" }),
                ),
            };
            let mut ops = set_key(LS, ls, "external_ids", "neutron_bgpvpn:vni", vni.as_deref());
            ops.extend(set_key(LS, ls, "external_ids", "neutron_bgpvpn:type", kind));
            (ops, format!("switch {ls} bgpvpn {kind:?} vni {vni:?}"))
        }
        "port type" => {
            let u = pick(rng, &vms)?;
            let next = match db.get(LSP, u).and_then(|r| r.str("type")).unwrap_or("") {
                "" => "virtual",
                "virtual" => "localport",
                _ => "",
            };
            let ops = vec![
                json!({"op": "update", "table": LSP, "where": by_uuid(u), "row": {"type": next}}),
            ];
            (ops, format!("port {} type {next:?}", name(u)))
        }
        "port delete" => {
            let u = pick(rng, &vms)?;
            let ops = vec![json!({"op": "mutate", "table": LS, "where": [],
                "mutations": [["ports", "delete", ["set", [uuid_ref(u)]]]]})];
            (ops, format!("port {} deleted", name(u)))
        }
        other => unreachable!("change kind {other}"),
    };
    Some(out)
}

/// A live migration written without `activation-strategy` (Neutron for
/// vhost-user ports, or with `[ovn] live_migration_activation_strategy`
/// empty): drawn by [`NbWorld`] besides [`KINDS`], since towards this node
/// it plugs the VIF in the local OVS first, as Nova's `pre_live_migration`
/// does, and writes `requested-chassis` in the next step.
const PLAIN_MIGRATION: &str = "migration start, no strategy";

/// The NB servers with a topogen topology; host 0 is this node.
pub struct NbWorld {
    nb: OvsdbServer,
    ovs: OvsdbServer,
    /// The node-local NB of `exposing_method = ovn`.
    local: OvsdbServer,
    /// The logical ports whose VIF this world plugged on this node's br-int.
    plugged: BTreeSet<String>,
    /// The NB half of a migration whose VIF was plugged here last step.
    pending: Option<(Vec<Value>, String)>,
}

/// The OVS Port and Interface name of logical port `port`'s VIF.
fn vif_name(port: &str) -> String {
    format!("vif-{port}")
}

/// A migration of a random bound VM towards a random host without
/// `activation-strategy`: the NB operations and their description. As
/// Neutron writes it: `requested-chassis` is the port's binding host
/// (`neutron:host_id`) and the destination, whatever it was before (an
/// unfinished migration's list is replaced, not extended).
fn plain_migration(rng: &mut Rng, db: &DbSnapshot) -> Option<(String, usize, Vec<Value>, String)> {
    let vms = rows(db, LSP, |r| {
        matches!(r.str("type").unwrap_or(""), "" | "virtual" | "localport")
            && r.str("addresses").is_some_and(|a| a.contains(' '))
    });
    let u = pick(rng, &vms)?;
    let to = rng.below(HOSTS);
    let row = db.get(LSP, u)?;
    let name = row.str("name")?.to_string();
    let src = row.map_str("external_ids", "neutron:host_id")?;
    let both = format!("{src},{}", host(to));
    let ops = vec![json!({"op": "update", "table": LSP, "where": by_uuid(u),
        "row": {"options": omap(&[("requested-chassis", &both)])}})];
    let what = format!("port {name} migrating {both} without activation-strategy");
    Some((name, to, ops, what))
}

/// The topology's parameters for `seed` (FIPs distributed for odd seeds).
pub fn params(seed: u64) -> Params {
    Params {
        vms: 40,
        seed,
        hosts: HOSTS,
        local_fraction: 0.3,
        vms_per_net: 8,
        nets_per_router: 2,
        provider_vm_ratio: 0.3,
        fip_ratio: 0.4,
        lb_ratio: 0.1,
        distributed: seed % 2 == 1,
        ..Params::default()
    }
}

/// The local Open_vSwitch row of this node.
pub fn ovs_server() -> OvsdbServer {
    let ovs = OvsdbServer::start("vswitch.ovsschema").unwrap();
    ovs.transact(&[json!({"op": "insert", "table": "Open_vSwitch", "row": {
        "external_ids": omap(&[("hostname", HOSTNAME), ("system-id", &chassis(0)),
                               ("ovn-bridge-mappings", "physnet1:br-ex"),
                               // The node-local cluster's bridges
                               // (`exposing_method = ovn`).
                               ("ovn-bridge-mappings-bgp", "fabric1:br-fab,local:br-ex")])}})])
        .unwrap();
    ovs
}

impl NbWorld {
    pub fn new(seed: u64) -> NbWorld {
        let nb = OvsdbServer::start("ovn-nb.ovsschema").unwrap();
        for txn in Topology::generate(params(seed)).nb_transactions() {
            nb.transact(&txn).unwrap();
        }
        nb.transact(&[json!({"op": "insert", "table": LS, "row": {"name": marker(0)}})])
            .unwrap();
        let ovs = ovs_server();
        ovs.transact(&[
            json!({"op": "insert", "table": "Bridge", "uuid-name": "brint", "row": {"name": "br-int"}}),
            json!({"op": "mutate", "table": "Open_vSwitch", "where": [],
                   "mutations": [["bridges", "insert", ["set", [["named-uuid", "brint"]]]]]}),
        ])
        .unwrap();
        NbWorld {
            nb,
            ovs,
            local: OvsdbServer::start("ovn-nb.ovsschema").unwrap(),
            plugged: BTreeSet::new(),
            pending: None,
        }
    }

    /// Plugs the VIF of logical port `port` on this node's br-int, as
    /// os-vif does: an OVS port whose interface carries `iface-id`.
    fn plug(&mut self, port: &str) {
        let name = vif_name(port);
        self.ovs
            .transact(&[
                json!({"op": "insert", "table": "Interface", "uuid-name": "i", "row": {
                    "name": name, "external_ids": omap(&[("iface-id", port)])}}),
                json!({"op": "insert", "table": "Port", "uuid-name": "p", "row": {
                    "name": name, "interfaces": ["set", [["named-uuid", "i"]]]}}),
                json!({"op": "mutate", "table": "Bridge", "where": [["name", "==", "br-int"]],
                       "mutations": [["ports", "insert", ["set", [["named-uuid", "p"]]]]]}),
            ])
            .unwrap_or_else(|e| panic!("plugging {port}: {e}"));
        self.plugged.insert(port.to_string());
    }

    /// The next change: the NB half of a migration whose VIF was plugged
    /// last step, else a random one.
    fn next_change(&mut self, rng: &mut Rng, db: &DbSnapshot) -> Option<(Vec<Value>, String)> {
        if let Some(pending) = self.pending.take() {
            return Some(pending);
        }
        let kind = match rng.below(KINDS.len() + 1) {
            i if i < KINDS.len() => KINDS[i],
            _ => PLAIN_MIGRATION,
        };
        if kind != PLAIN_MIGRATION {
            return nb_change(kind, rng, db);
        }
        let (port, to, ops, what) = plain_migration(rng, db)?;
        if to != 0 || self.plugged.contains(&port) {
            return Some((ops, what));
        }
        // Nova's order: the VIF is plugged here, the agent reconciles on
        // it, then Neutron lists this chassis.
        self.plug(&port);
        self.pending = Some((ops, what));
        Some((
            vec![],
            format!("VIF of port {port} plugged here before its migration"),
        ))
    }
}

pub fn marker_op(step: usize) -> Value {
    json!({"op": "update", "table": LS, "where": [["name", "==", marker(step - 1)]],
           "row": {"name": marker(step)}})
}

pub fn has_marker(db: &DbSnapshot, step: usize) -> bool {
    let name = marker(step);
    db.table(LS)
        .values()
        .any(|r| r.str("name") == Some(name.as_str()))
}

impl World for NbWorld {
    fn config(&self, base: &Config) -> Config {
        let mut config = base.clone();
        config.ovn.ovn_nb_connection = Some(self.nb.unix_remote());
        config.default.ovsdb_connection = self.ovs.unix_remote();
        config.local_ovn_cluster.ovn_nb_connection = self.local.unix_remote();
        config
    }

    fn change(&mut self, rng: &mut Rng, db: &DbSnapshot, step: usize) -> Option<String> {
        let (mut ops, what) = self.next_change(rng, db)?;
        ops.push(marker_op(step));
        self.nb
            .transact(&ops)
            .unwrap_or_else(|e| panic!("step {step} ({what}): {e}"));
        Some(what)
    }

    fn landed(&self, db: &DbSnapshot, step: usize) -> bool {
        has_marker(db, step)
    }

    fn ovs_landed(&self, ovs: &DbSnapshot) -> bool {
        let plugged: BTreeSet<&str> = ovs
            .table("Interface")
            .values()
            .filter_map(|r| r.str("name")?.strip_prefix("vif-"))
            .collect();
        plugged.len() == self.plugged.len()
            && self.plugged.iter().all(|p| plugged.contains(p.as_str()))
    }
}

fn nb_config(method: ExposingMethod) -> Config {
    let mut config = Config::default();
    config.default.driver = Driver::NbOvnBgpDriver;
    config.default.exposing_method = method;
    config.default.bgp_router_id = Some("192.0.2.1".into());
    config.default.expose_tenant_networks = true;
    config.default.advertisement_method_tenant_networks = AdvertisementMethod::Host;
    // The VXLAN source of the `vrf`, `l2vni` and `dynamic` methods.
    config.default.evpn_local_ip = Some("192.0.2.10".parse().unwrap());
    let lc = &mut config.local_ovn_cluster;
    lc.peer_ips = vec!["100.64.1.10".into()];
    lc.provider_networks_pool_prefixes = vec!["172.16.0.0/12".into()];
    lc.external_nics = vec!["eth-fab".into()];
    config
}

fn nb_check(name: &'static str, method: ExposingMethod, conditional: bool) {
    let combo = Combo {
        name,
        config: nb_config(method),
        conditional,
        moves: true,
        seeds: 4,
    };
    check(combo, |seed| Box::new(NbWorld::new(seed)));
}

#[test]
fn nb_underlay_monitor_all() {
    nb_check("NB underlay, monitor all", ExposingMethod::Underlay, false);
}

#[test]
fn nb_underlay_conditional() {
    nb_check("NB underlay, conditional", ExposingMethod::Underlay, true);
}

#[test]
fn nb_vrf_monitor_all() {
    nb_check("NB vrf, monitor all", ExposingMethod::Vrf, false);
}

#[test]
fn nb_vrf_conditional() {
    nb_check("NB vrf, conditional", ExposingMethod::Vrf, true);
}

#[test]
fn nb_dynamic_monitor_all() {
    nb_check("NB dynamic, monitor all", ExposingMethod::Dynamic, false);
}

#[test]
fn nb_dynamic_conditional() {
    nb_check("NB dynamic, conditional", ExposingMethod::Dynamic, true);
}

#[test]
fn nb_ovn_monitor_all() {
    nb_check("NB ovn, monitor all", ExposingMethod::Ovn, false);
}

#[test]
fn nb_ovn_conditional() {
    nb_check("NB ovn, conditional", ExposingMethod::Ovn, true);
}
