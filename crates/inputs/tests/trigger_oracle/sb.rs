//! The SB drivers' world (underlay, EVPN, stretched L2): topogen's NB
//! compiled by a real ovn-northd into a real OVN_Southbound, with
//! ovn-controller's part played by the test: SB Chassis rows for the
//! hosts, and each Port_Binding's `chassis` (and `up`) following what the
//! NB asks (`requested-chassis` for VM ports, the gateway ports'
//! Gateway_Chassis for their `chassisredirect` bindings).
//!
//! A step is an NB transaction (Neutron's part, compiled by northd; the
//! step waits until `SB_Global.nb_cfg` follows `NB_Global.nb_cfg`), then
//! one SB transaction: ovn-controller's bindings, the step's own SB
//! change (a port going up or down) and the marker (a portless Chassis
//! renamed `oracle-marker-<step>`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use obgp_config::{AdvertisementMethod, Config, Driver};
use obgp_ovsdb_data::DbSnapshot;
use obgp_testbed::ovsdb::{Northd, OvsdbServer};
use obgp_topogen::{Rng, Topology};
use serde_json::{json, Value};

use super::nb::{nb_change, omap, ovs_server, params};
use super::{chassis, check, host, Combo, World, HOSTS};

const MARKER: &str = "oracle-marker";

fn marker(step: usize) -> String {
    format!("{MARKER}-{step}")
}

/// The SB driver's change kinds: NB ones through northd, and SB ones.
const KINDS: &[&str] = &[
    "bind",
    "unbind",
    "gateway move",
    "up flap",
    "FIP move",
    "FIP delete",
    "SNAT delete",
    "LB delete",
    "LB VIP",
    "port type",
    "port delete",
    "router port annotation",
    "address scope",
    "router interface delete",
];

pub struct SbWorld {
    nb: OvsdbServer,
    sb: OvsdbServer,
    ovs: OvsdbServer,
    _northd: Northd,
    nb_cfg: i64,
    /// A port binding to flip `up` with the next SB transaction.
    flap: Option<String>,
}

fn uuid_of(row: &Value) -> String {
    row["_uuid"][1].as_str().unwrap_or_default().to_string()
}

/// `column`'s map of a wire row, as pairs.
fn map_of(row: &Value, column: &str) -> BTreeMap<String, String> {
    row[column][1]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|kv| Some((kv[0].as_str()?.to_string(), kv[1].as_str()?.to_string())))
        .collect()
}

/// The uuid a wire reference column holds, if any (`["uuid", u]` or an
/// empty set).
fn ref_of(row: &Value, column: &str) -> Option<String> {
    match row[column][0].as_str() {
        Some("uuid") => row[column][1].as_str().map(str::to_string),
        _ => None,
    }
}

impl SbWorld {
    /// `bgpvpn`: every router port starts annotated with its router's VNI
    /// (the EVPN driver's world).
    pub fn new(seed: u64, bgpvpn: bool) -> SbWorld {
        let nb = OvsdbServer::start("ovn-nb.ovsschema").unwrap();
        for txn in Topology::generate(params(seed)).nb_transactions() {
            nb.transact(&txn).unwrap();
        }
        // Gateway ports get the Gateway_Chassis that makes northd create
        // their `chassisredirect` bindings, on the chassis topogen hosts
        // them on.
        let mut ops = Vec::new();
        for lrp in nb.select_all("Logical_Router_Port").unwrap() {
            let Some(c) = map_of(&lrp, "status").get("hosting-chassis").cloned() else {
                continue;
            };
            let name = format!("{}_{c}", lrp["name"].as_str().unwrap_or_default());
            ops.push(
                json!({"op": "insert", "table": "Gateway_Chassis", "uuid-name": "gc",
                "row": {"name": name, "chassis_name": c, "priority": 1}}),
            );
            ops.push(json!({"op": "mutate", "table": "Logical_Router_Port",
                "where": [["_uuid", "==", ["uuid", uuid_of(&lrp)]]],
                "mutations": [["gateway_chassis", "insert", ["set", [["named-uuid", "gc"]]]]]}));
            nb.transact(&ops).unwrap();
            ops.clear();
        }
        // Every router port in address scope scope-0 (the stretched-L2
        // driver announces a subnet when its gateway and interface agree
        // with `address_scopes`).
        nb.transact(&[json!({"op": "mutate", "table": "Logical_Switch_Port",
            "where": [["type", "==", "router"]],
            "mutations": [["external_ids", "insert",
                omap(&[("neutron:subnet_pool_addr_scope4", "scope-0")])]]})])
            .unwrap();
        if bgpvpn {
            for lsp in nb.select_all("Logical_Switch_Port").unwrap() {
                if lsp["type"].as_str() != Some("router") {
                    continue;
                }
                let router = map_of(&lsp, "external_ids")
                    .get("neutron:device_id")
                    .cloned();
                let vni = router_vni(&router.unwrap_or_default()).to_string();
                nb.transact(&[json!({"op": "mutate", "table": "Logical_Switch_Port",
                    "where": [["_uuid", "==", ["uuid", uuid_of(&lsp)]]],
                    "mutations": [["external_ids", "insert", omap(&[
                        ("neutron_bgpvpn:type", "l3"), ("neutron_bgpvpn:vni", &vni),
                        ("neutron_bgpvpn:as", "64512")])]]})])
                    .unwrap();
            }
        }
        provider_load_balancers(&nb, &Topology::generate(params(seed)).provider_switch());
        let sb = OvsdbServer::start("ovn-sb.ovsschema").unwrap();
        let mut ops = Vec::new();
        for (i, name) in (0..HOSTS)
            .map(|i| (i, chassis(i)))
            .chain([(HOSTS, marker(0))])
        {
            let e = format!("e{i}");
            ops.push(json!({"op": "insert", "table": "Encap", "uuid-name": e,
                "row": {"type": "geneve", "ip": format!("192.0.2.{}", 10 + i), "chassis_name": name}}));
            ops.push(json!({"op": "insert", "table": "Chassis", "row": {
                "name": name, "hostname": host(i), "encaps": ["named-uuid", e]}}));
        }
        sb.transact(&ops).unwrap();
        let northd = Northd::start(&nb, &sb).unwrap();
        let mut world = SbWorld {
            nb,
            sb,
            ovs: ovs_server(),
            _northd: northd,
            nb_cfg: 0,
            flap: None,
        };
        world.compiled();
        let mut ops = world.controller();
        // Octavia's VIP ports are never bound: ovn-controller leaves them
        // down (upstream's `get_provider_ovn_lbs_on_cr_lrp` asks for
        // `up = false`).
        ops.push(json!({"op": "update", "table": "Port_Binding",
            "where": [["mac", "==", ["set", []]], ["type", "==", ""]], "row": {"up": false}}));
        world.sb.transact(&ops).unwrap();
        world
    }

    /// Waits until northd compiled every NB transaction so far.
    fn compiled(&mut self) {
        self.nb_cfg += 1;
        self.nb
            .transact(&[json!({"op": "update", "table": "NB_Global", "where": [],
                "row": {"nb_cfg": self.nb_cfg}})])
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let g = self.sb.select_all("SB_Global").unwrap();
            if g.first().and_then(|r| r["nb_cfg"].as_i64()) >= Some(self.nb_cfg) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "northd never compiled nb_cfg {}",
                self.nb_cfg
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// ovn-controller's part: the Port_Binding updates that bind each
    /// binding where the NB asks.
    fn controller(&mut self) -> Vec<Value> {
        let chassis_uuid: BTreeMap<String, String> = self
            .sb
            .select_all("Chassis")
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or_default().to_string(),
                    uuid_of(c),
                )
            })
            .collect();
        let host_chassis = |h: &str| {
            (0..HOSTS)
                .find(|i| host(*i) == h)
                .and_then(|i| chassis_uuid.get(&chassis(i)).cloned())
        };
        let mut wanted: BTreeMap<String, Option<String>> = BTreeMap::new();
        for lsp in self.nb.select_all("Logical_Switch_Port").unwrap() {
            if !matches!(lsp["type"].as_str(), Some("" | "virtual")) {
                continue;
            }
            let requested = map_of(&lsp, "options").get("requested-chassis").cloned();
            let first = requested
                .as_deref()
                .and_then(|r| r.split(',').next())
                .unwrap_or("");
            let name = lsp["name"].as_str().unwrap_or_default().to_string();
            wanted.insert(name, host_chassis(first));
        }
        let gateways: BTreeMap<String, String> = self
            .nb
            .select_all("Gateway_Chassis")
            .unwrap()
            .iter()
            .filter_map(|g| {
                let lrp = g["name"].as_str()?.rsplit_once('_')?.0.to_string();
                Some((lrp, g["chassis_name"].as_str()?.to_string()))
            })
            .collect();
        for (lrp, c) in &gateways {
            wanted.insert(format!("cr-{lrp}"), chassis_uuid.get(c).cloned());
        }
        let mut ops = Vec::new();
        for pb in self.sb.select_all("Port_Binding").unwrap() {
            let port = pb["logical_port"].as_str().unwrap_or_default();
            let Some(want) = wanted.get(port) else {
                continue;
            };
            let up = pb["up"].as_bool() == Some(true);
            let flap = self.flap.as_deref() == Some(port);
            if ref_of(&pb, "chassis") == *want && !flap {
                continue;
            }
            let chassis = match want {
                Some(u) => json!(["uuid", u]),
                None => json!(["set", []]),
            };
            let up = if flap { !up } else { want.is_some() };
            ops.push(json!({"op": "update", "table": "Port_Binding",
                "where": [["_uuid", "==", ["uuid", uuid_of(&pb)]]],
                "row": {"chassis": chassis, "up": up}}));
        }
        self.flap = None;
        ops
    }
}

/// An SB step's NB operations, or its SB-side choice (`flap`). Long
/// (about 125 lines) on purpose: one arm per change kind, each the
/// operations Neutron would write, read in one place.
fn sb_change(world: &mut SbWorld, kind: &str, rng: &mut Rng) -> Option<(Vec<Value>, String)> {
    let nb = world.nb.select_all("Logical_Switch_Port").unwrap();
    let vms: Vec<&Value> = nb
        .iter()
        .filter(|l| {
            l["type"].as_str() == Some("")
                && l["addresses"].as_str().is_some_and(|a| a.contains(' '))
        })
        .collect();
    let mut vms = vms;
    vms.sort_by_key(|l| l["name"].as_str().unwrap_or_default().to_string());
    let to = if rng.below(2) == 0 {
        0
    } else {
        1 + rng.below(HOSTS - 1)
    };
    match kind {
        "bind" | "unbind" => {
            let vm = vms.get(rng.below(vms.len().max(1)))?;
            let target = (kind == "bind").then(|| host(to));
            let mut mutations = vec![json!(["options", "delete", ["set", ["requested-chassis"]]])];
            if let Some(t) = &target {
                mutations.push(json!([
                    "options",
                    "insert",
                    omap(&[("requested-chassis", t)])
                ]));
            }
            let ops = vec![json!({"op": "mutate", "table": "Logical_Switch_Port",
                "where": [["_uuid", "==", ["uuid", uuid_of(vm)]]], "mutations": mutations})];
            Some((ops, format!("port {} bound to {target:?}", vm["name"])))
        }
        "gateway move" => {
            let mut gcs = world.nb.select_all("Gateway_Chassis").unwrap();
            gcs.sort_by_key(|g| g["name"].as_str().unwrap_or_default().to_string());
            let g = gcs.get(rng.below(gcs.len().max(1)))?;
            let ops = vec![json!({"op": "update", "table": "Gateway_Chassis",
                "where": [["_uuid", "==", ["uuid", uuid_of(g)]]], "row": {"chassis_name": chassis(to)}})];
            Some((
                ops,
                format!("gateway {} moved to {}", g["name"], chassis(to)),
            ))
        }
        "up flap" => {
            let vm = vms.get(rng.below(vms.len().max(1)))?;
            let name = vm["name"].as_str()?.to_string();
            world.flap = Some(name.clone());
            Some((Vec::new(), format!("port {name} up flips")))
        }
        "router port annotation" | "address scope" => {
            let mut routers: Vec<&Value> = nb
                .iter()
                .filter(|l| l["type"].as_str() == Some("router"))
                .collect();
            routers.sort_by_key(|l| l["name"].as_str().unwrap_or_default().to_string());
            let r = routers.get(rng.below(routers.len().max(1)))?;
            let ext = map_of(r, "external_ids");
            let pairs: Vec<(&str, String)> = if kind == "address scope" {
                let now = ext
                    .get("neutron:subnet_pool_addr_scope4")
                    .cloned()
                    .unwrap_or_default();
                let next = match now.as_str() {
                    "scope-0" => "scope-1",
                    "scope-1" => "",
                    _ => "scope-0",
                }
                .to_string();
                vec![("neutron:subnet_pool_addr_scope4", next)]
            } else if ext.contains_key("neutron_bgpvpn:vni") {
                vec![]
            } else {
                // One VNI per router (networking-bgpvpn annotates a
                // router's gateway and interfaces alike).
                let vni = router_vni(ext.get("neutron:device_id").map_or("", String::as_str));
                vec![
                    ("neutron_bgpvpn:type", "l3".into()),
                    ("neutron_bgpvpn:vni", vni.to_string()),
                    ("neutron_bgpvpn:as", "64512".into()),
                ]
            };
            let keys: Vec<&str> = if kind == "address scope" {
                vec!["neutron:subnet_pool_addr_scope4"]
            } else {
                vec![
                    "neutron_bgpvpn:type",
                    "neutron_bgpvpn:vni",
                    "neutron_bgpvpn:as",
                ]
            };
            let pairs_ref: Vec<(&str, &str)> =
                pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let mut mutations = vec![json!(["external_ids", "delete", ["set", keys]])];
            if !pairs.is_empty() {
                mutations.push(json!(["external_ids", "insert", omap(&pairs_ref)]));
            }
            let ops = vec![json!({"op": "mutate", "table": "Logical_Switch_Port",
                "where": [["_uuid", "==", ["uuid", uuid_of(r)]]], "mutations": mutations})];
            Some((ops, format!("router port {} {kind} {pairs:?}", r["name"])))
        }
        "router interface delete" => {
            // A subnet removed from its router: the interface's LRP goes
            // (northd deletes its `lrp-` binding).
            let mut lrps: Vec<Value> = world
                .nb
                .select_all("Logical_Router_Port")
                .unwrap()
                .into_iter()
                .filter(|l| {
                    map_of(l, "external_ids")
                        .get("neutron:is_ext_gw")
                        .map(String::as_str)
                        == Some("False")
                })
                .collect();
            lrps.sort_by_key(|l| l["name"].as_str().unwrap_or_default().to_string());
            let l = lrps.get(rng.below(lrps.len().max(1)))?;
            let ops = vec![
                json!({"op": "mutate", "table": "Logical_Router", "where": [],
                "mutations": [["ports", "delete", ["set", [["uuid", uuid_of(l)]]]]]}),
            ];
            Some((ops, format!("router interface {} deleted", l["name"])))
        }
        other => nb_change(other, rng, &world.nb_snapshot()),
    }
}

impl World for SbWorld {
    fn config(&self, base: &Config) -> Config {
        let mut config = base.clone();
        config.ovn.ovn_sb_connection = Some(self.sb.unix_remote());
        config.default.ovsdb_connection = self.ovs.unix_remote();
        config
    }

    /// `db` is the SB truth's cache; the NB changes pick their rows from
    /// the NB server itself.
    fn change(&mut self, rng: &mut Rng, _db: &DbSnapshot, step: usize) -> Option<String> {
        let kind = KINDS[rng.below(KINDS.len())];
        let (ops, what) = sb_change(self, kind, rng)?;
        if !ops.is_empty() {
            self.nb
                .transact(&ops)
                .unwrap_or_else(|e| panic!("step {step} ({what}): {e}"));
        }
        self.compiled();
        let mut ops = self.controller();
        ops.push(
            json!({"op": "update", "table": "Chassis", "where": [["name", "==", marker(step - 1)]],
            "row": {"name": marker(step)}}),
        );
        self.sb
            .transact(&ops)
            .unwrap_or_else(|e| panic!("step {step} ({what}), SB: {e}"));
        Some(what)
    }

    fn landed(&self, db: &DbSnapshot, step: usize) -> bool {
        let name = marker(step);
        db.table("Chassis")
            .values()
            .any(|r| r.str("name") == Some(name.as_str()))
    }
}

impl SbWorld {
    /// The NB rows as a cache snapshot would hold them, for the NB
    /// changes' picks: read with the same wire decoding as the agent's.
    fn nb_snapshot(&self) -> DbSnapshot {
        super::wire_snapshot(&self.nb, "ovn-nb.ovsschema")
    }
}

/// An Octavia load balancer on the provider network behind each router:
/// its VIP port (no MAC, never bound, `neutron:port_name =
/// ovn-lb-vip-<lb>`) on the provider switch, the LB on the router and the
/// switch. The SB driver announces its VIP through the router's gateway
/// when the gateway is here; "LB delete" may pick it.
fn provider_load_balancers(nb: &OvsdbServer, provider: &str) {
    let mut routers = nb.select_all("Logical_Router").unwrap();
    routers.sort_by_key(|r| r["name"].as_str().unwrap_or_default().to_string());
    for (i, router) in routers.iter().enumerate() {
        let lb = format!("plb-{i}");
        let vip = format!("172.16.9.{}", 10 + i);
        nb.transact(&[
            json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "vp", "row": {
                "name": format!("vip-{lb}"), "type": "", "up": false,
                "external_ids": omap(&[("neutron:port_name", &format!("ovn-lb-vip-{lb}")),
                    ("neutron:cidrs", &format!("{vip}/12")), ("neutron:network_name", provider),
                    ("neutron:device_owner", "Octavia")])}}),
            json!({"op": "insert", "table": "Load_Balancer", "uuid-name": "lb", "row": {
                "name": lb, "protocol": "tcp",
                "vips": omap(&[(&format!("{vip}:80"), "10.0.0.5:80")])}}),
            json!({"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", provider]],
                "mutations": [["ports", "insert", ["set", [["named-uuid", "vp"]]]],
                              ["load_balancer", "insert", ["set", [["named-uuid", "lb"]]]]]}),
            json!({"op": "mutate", "table": "Logical_Router",
                "where": [["_uuid", "==", ["uuid", uuid_of(router)]]],
                "mutations": [["load_balancer", "insert", ["set", [["named-uuid", "lb"]]]]]}),
        ])
        .unwrap();
    }
}

/// The VNI networking-bgpvpn gives router `router`'s ports here: one per
/// router.
fn router_vni(router: &str) -> usize {
    1000 + router.bytes().map(usize::from).sum::<usize>() % 20
}

fn sb_config(driver: Driver) -> Config {
    let mut config = Config::default();
    config.default.driver = driver;
    config.default.bgp_router_id = Some("192.0.2.1".into());
    config.default.expose_tenant_networks = true;
    config.default.advertisement_method_tenant_networks = AdvertisementMethod::Host;
    config.default.evpn_local_ip = Some("192.0.2.10".parse().unwrap());
    config
}

fn sb_check(name: &'static str, driver: Driver) {
    let mut config = sb_config(driver);
    if driver == Driver::OvnStretchedL2BgpDriver {
        // Address scope changes matter (the world draws scope-0..2).
        config.default.address_scopes = Some(vec!["scope-0".into()]);
    }
    let combo = Combo {
        name,
        config,
        conditional: false,
        moves: true,
        seeds: 1,
    };
    let bgpvpn = driver == Driver::OvnEvpnDriver;
    check(combo, |seed| Box::new(SbWorld::new(seed, bgpvpn)));
}

#[test]
fn sb_underlay() {
    sb_check("SB underlay", Driver::OvnBgpDriver);
}

#[test]
fn sb_evpn() {
    sb_check("SB EVPN", Driver::OvnEvpnDriver);
}

#[test]
fn sb_stretched_l2() {
    sb_check("SB stretched L2", Driver::OvnStretchedL2BgpDriver);
}
