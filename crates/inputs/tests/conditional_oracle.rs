//! Oracle for the port conditions: two agents' sources read one real
//! OVN_Northbound server, one monitoring every port
//! (`ovn_nb_monitor_all = true`: the conditions applied in-process, as the
//! follower's local filter), the other by conditions sent to the server
//! (`false`). Over random topogen topologies and random change sequences
//! (gateway moves, live migrations started and finished, with and without
//! `activation-strategy`, ports bound and unbound, FIPs moved and deleted),
//! after every step the desired state computed from the conditional cache,
//! and the one from the full monitor's filtered snapshot, both equal the
//! truth: the one computed from a build of every row of the full cache.
//!
//! The local Open_vSwitch database follows the VMs as Nova plugs them: a
//! VM bound here has its VIF on br-int (`external_ids:iface-id` = its
//! port), a VM bound elsewhere has none, and a VM migrating here has its
//! VIF plugged before Neutron lists this chassis in `requested-chassis`
//! (Nova's `pre_live_migration` plugs, then sets `migrating_to`), or
//! after it (libvirt creating a plain OVS port when the migration starts).

use std::time::{Duration, Instant};

use obgp_config::{AdvertisementMethod, Config, Driver};
use obgp_desired::{desired_state, Desired, NodeFacts};
use obgp_inputs::{OvnSources, ReconcileInputs};
use obgp_ovn::Snapshot;
use obgp_ovsdb_data::{DbSnapshot, Uuid};
use obgp_testbed::ovsdb::OvsdbServer;
use obgp_topogen::{Params, Topology};
use proptest::prelude::*;
use serde_json::{json, Value};

const HOSTS: usize = 3;
const LSP: &str = "Logical_Switch_Port";
/// A portless switch renamed by every step: once a cache shows a step's
/// name, it holds that step's transaction (one update a transaction).
const MARKER: &str = "oracle-marker";

#[derive(Clone, Debug)]
enum Step {
    /// A gateway LRP's `hosting-chassis` moves to chassis `to`.
    GatewayMove { lrp: usize, to: usize },
    /// A VM starts migrating to host `to` (`requested-chassis = "src,dst"`,
    /// `activation-strategy = rarp`, `neutron:host_id` still the source).
    MigrationStart { vm: usize, to: usize },
    /// A VM starts migrating to host `to` written without
    /// `activation-strategy` (Neutron for vhost-user ports, or with
    /// `[ovn] live_migration_activation_strategy = ""`). Towards this node
    /// the VIF is plugged here first (`plug_first`; the agent reconciles
    /// on that local OVS change) or right after the NB write.
    PlainMigrationStart {
        vm: usize,
        to: usize,
        plug_first: bool,
    },
    /// A VM is bound to host `to` alone (a migration's end, a bind, an
    /// unbind); its VIF is plugged here when `to` is this node, unplugged
    /// from here otherwise.
    Bind { vm: usize, to: usize },
    /// A FIP moves to another VM port.
    FipMove { nat: usize, vm: usize },
    /// A FIP is deleted (dropped from its router; garbage-collected).
    FipDelete { nat: usize },
}

fn step() -> impl Strategy<Value = Step> {
    let i = 0usize..1000;
    // This node (host 0) half the time: the moves that matter here.
    let h = prop_oneof![Just(0usize), 1usize..HOSTS];
    prop_oneof![
        (i.clone(), h.clone()).prop_map(|(lrp, to)| Step::GatewayMove { lrp, to }),
        (i.clone(), h.clone()).prop_map(|(vm, to)| Step::MigrationStart { vm, to }),
        (i.clone(), h.clone(), any::<bool>())
            .prop_map(|(vm, to, plug_first)| { Step::PlainMigrationStart { vm, to, plug_first } }),
        (i.clone(), h).prop_map(|(vm, to)| Step::Bind { vm, to }),
        (i.clone(), i.clone()).prop_map(|(nat, vm)| Step::FipMove { nat, vm }),
        i.prop_map(|nat| Step::FipDelete { nat }),
    ]
}

fn host(i: usize) -> String {
    format!("host-{i:03}")
}

fn uuid_ref(u: Uuid) -> Value {
    json!(["uuid", u.to_string()])
}

fn omap(pairs: &[(&str, &str)]) -> Value {
    json!([
        "map",
        pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()
    ])
}

/// The uuids of `table`'s rows passing `keep`, in uuid order (the full
/// cache holds every row: picks by index are reproducible).
fn rows(db: &DbSnapshot, table: &str, keep: impl Fn(&obgp_ovsdb_data::Row) -> bool) -> Vec<Uuid> {
    let mut v: Vec<Uuid> = db
        .table(table)
        .iter()
        .filter(|(_, r)| keep(r))
        .map(|(u, _)| *u)
        .collect();
    v.sort();
    v
}

/// The operations of `step` on the server's rows as `db` (the full cache)
/// holds them; none when the topology lacks what it names.
fn ops(step: &Step, db: &DbSnapshot) -> Vec<Value> {
    let vms = rows(db, LSP, |r| r.str("type").unwrap_or("").is_empty());
    let vm_name = |i: usize| {
        let u = vms[i % vms.len()];
        (
            u,
            db.get(LSP, u)
                .and_then(|r| r.str("name"))
                .unwrap_or("")
                .to_string(),
        )
    };
    let set_host_id = |u: Uuid, h: &str| {
        json!({"op": "mutate", "table": LSP, "where": [["_uuid", "==", uuid_ref(u)]],
               "mutations": [["external_ids", "delete", ["set", ["neutron:host_id"]]],
                             ["external_ids", "insert", omap(&[("neutron:host_id", h)])]]})
    };
    match *step {
        Step::GatewayMove { lrp, to } => {
            let gws = rows(db, "Logical_Router_Port", |r| {
                r.map_str("status", "hosting-chassis").is_some()
            });
            let Some(&u) = gws.get(lrp % gws.len().max(1)) else {
                return vec![];
            };
            let chassis = format!("chassis-{to:03}");
            vec![json!({"op": "update", "table": "Logical_Router_Port",
                        "where": [["_uuid", "==", uuid_ref(u)]],
                        "row": {"status": omap(&[("hosting-chassis", &chassis)])}})]
        }
        Step::MigrationStart { vm, to } if !vms.is_empty() => {
            let (u, _) = vm_name(vm);
            let src = db
                .get(LSP, u)
                .and_then(|r| r.map_str("options", "requested-chassis"))
                .unwrap_or("")
                .to_string();
            let both = format!("{src},{}", host(to));
            vec![
                json!({"op": "update", "table": LSP, "where": [["_uuid", "==", uuid_ref(u)]],
                        "row": {"options": omap(&[("requested-chassis", &both),
                                                  ("activation-strategy", "rarp")])}}),
            ]
        }
        Step::PlainMigrationStart { vm, to, .. } if !vms.is_empty() => {
            // As Neutron writes it: the binding host, then the destination.
            let (u, _) = vm_name(vm);
            let Some(src) = db
                .get(LSP, u)
                .and_then(|r| r.map_str("external_ids", "neutron:host_id"))
                .map(str::to_string)
            else {
                return vec![];
            };
            let both = format!("{src},{}", host(to));
            vec![
                json!({"op": "update", "table": LSP, "where": [["_uuid", "==", uuid_ref(u)]],
                        "row": {"options": omap(&[("requested-chassis", &both)])}}),
            ]
        }
        Step::Bind { vm, to } if !vms.is_empty() => {
            let (u, _) = vm_name(vm);
            vec![
                json!({"op": "update", "table": LSP, "where": [["_uuid", "==", uuid_ref(u)]],
                       "row": {"options": omap(&[("requested-chassis", &host(to))])}}),
                set_host_id(u, &host(to)),
            ]
        }
        Step::FipMove { nat, vm } if !vms.is_empty() => {
            let fips = rows(db, "NAT", |r| r.str("type") == Some("dnat_and_snat"));
            let Some(&u) = fips.get(nat % fips.len().max(1)) else {
                return vec![];
            };
            let (_, name) = vm_name(vm);
            vec![
                json!({"op": "update", "table": "NAT", "where": [["_uuid", "==", uuid_ref(u)]],
                        "row": {"logical_port": name}}),
            ]
        }
        Step::FipDelete { nat } => {
            let fips = rows(db, "NAT", |r| r.str("type") == Some("dnat_and_snat"));
            let Some(&u) = fips.get(nat % fips.len().max(1)) else {
                return vec![];
            };
            vec![
                json!({"op": "mutate", "table": "Logical_Router", "where": [],
                        "mutations": [["nat", "delete", ["set", [uuid_ref(u)]]]]}),
            ]
        }
        _ => vec![],
    }
}

/// The VM port `step` names and where its VIF goes: `Some(true)` plugged
/// here, `Some(false)` unplugged from here, `None` left as it is.
fn vif_move(step: &Step, db: &DbSnapshot) -> Option<(String, bool)> {
    let vms = rows(db, LSP, |r| r.str("type").unwrap_or("").is_empty());
    let name = |i: usize| {
        let u = vms[i % vms.len()];
        db.get(LSP, u)
            .and_then(|r| r.str("name"))
            .unwrap_or("")
            .to_string()
    };
    match *step {
        _ if vms.is_empty() => None,
        Step::PlainMigrationStart { vm, to: 0, .. } => Some((name(vm), true)),
        Step::Bind { vm, to } => Some((name(vm), to == 0)),
        _ => None,
    }
}

/// This node's local OVS: its identity and an empty br-int.
fn local_ovs(ovs: &OvsdbServer) {
    ovs.transact(&[
        json!({"op": "insert", "table": "Bridge", "uuid-name": "brint", "row": {"name": "br-int"}}),
        json!({"op": "insert", "table": "Open_vSwitch", "row": {
            "bridges": ["set", [["named-uuid", "brint"]]],
            "external_ids": omap(&[("hostname", "host-000"), ("system-id", "chassis-000"),
                                   ("ovn-bridge-mappings", "physnet1:br-ex")])}}),
    ])
    .unwrap();
}

/// The OVS Port and Interface names of port `port`'s VIF.
fn vif_name(port: &str) -> String {
    format!("vif-{port}")
}

/// Plugs (as os-vif does: a br-int port whose interface carries
/// `external_ids:iface-id`) or unplugs the VIF of NB port `port` here.
fn plug(ovs: &OvsdbServer, port: &str, plugged: bool) {
    let name = vif_name(port);
    let ops = if plugged {
        vec![
            json!({"op": "insert", "table": "Interface", "uuid-name": "i", "row": {
                "name": name, "external_ids": omap(&[("iface-id", port),
                                                    ("attached-mac", "fa:16:3e:00:00:01")])}}),
            json!({"op": "insert", "table": "Port", "uuid-name": "p", "row": {
                "name": name, "interfaces": ["set", [["named-uuid", "i"]]]}}),
            json!({"op": "mutate", "table": "Bridge", "where": [["name", "==", "br-int"]],
                   "mutations": [["ports", "insert", ["set", [["named-uuid", "p"]]]]]}),
        ]
    } else {
        let ports = ovs.select_all("Port").unwrap();
        let Some(p) = ports.iter().find(|p| p["name"] == name.as_str()) else {
            return;
        };
        vec![
            json!({"op": "mutate", "table": "Bridge", "where": [["name", "==", "br-int"]],
                   "mutations": [["ports", "delete", ["set", [p["_uuid"].clone()]]]]}),
        ]
    };
    ovs.transact(&ops).unwrap();
}

/// Waits until `sources`' local OVS cache shows the VIF of `port` plugged
/// (or not): the Interface name, which every driver monitors.
async fn vif_landed(sources: &OvnSources, port: &str, plugged: bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let name = vif_name(port);
    while sources
        .ovs
        .client
        .cache()
        .snapshot()
        .table("Interface")
        .values()
        .any(|r| r.str("name") == Some(name.as_str()))
        != plugged
    {
        assert!(Instant::now() < deadline, "the VIF of {port} never moved");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn marker(step: usize) -> String {
    format!("{MARKER}-{step}")
}

/// Waits until `sources`' cache holds step `n`'s transaction.
async fn landed(sources: &OvnSources, n: usize) -> ReconcileInputs {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let inputs = sources.inputs();
        let name = marker(n);
        if inputs
            .raw_ovn
            .table("Logical_Switch")
            .values()
            .any(|r| r.str("name") == Some(name.as_str()))
        {
            return inputs;
        }
        assert!(
            Instant::now() < deadline,
            "step {n} never reached the cache"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The full monitor's converged inputs (its snapshot filtered by its
/// converged local filter) and the truth: the build of every row of the
/// same cache.
async fn filtered_and_truth(full: &OvnSources, what: &str) -> (ReconcileInputs, Snapshot) {
    let inputs = full
        .converged_inputs()
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let truth = Snapshot::build(&inputs.raw_ovn, &inputs.raw_ovs);
    (inputs, truth)
}

fn desired(inputs: &ReconcileInputs, config: &Config) -> Desired {
    desired_state(&inputs.snapshot, config, &NodeFacts::default()).expect("desired state")
}

/// The VM ports `nb` binds to this node.
fn topo_ports_bound_here(nb: &OvsdbServer) -> Vec<String> {
    nb.select_all(LSP)
        .unwrap()
        .iter()
        .filter(|p| {
            p["options"][1].as_array().is_some_and(|kv| {
                kv.iter()
                    .any(|kv| kv[0] == "requested-chassis" && kv[1] == "host-000")
            })
        })
        .filter_map(|p| p["name"].as_str().map(str::to_string))
        .collect()
}

async fn start(nb: &OvsdbServer, ovs: &OvsdbServer, config: &Config, all: bool) -> OvnSources {
    let mut config = config.clone();
    config.default.ovn_nb_monitor_all = all;
    config.ovn.ovn_nb_connection = Some(nb.unix_remote());
    config.default.ovsdb_connection = ovs.unix_remote();
    let sources = OvnSources::start(&config, Duration::from_secs(20))
        .await
        .expect("sources");
    sources
        .wait_synced(Duration::from_secs(20))
        .await
        .expect("synced");
    assert!(sources.port_conditions.is_some());
    assert_eq!(sources.conditions_sent_to_server(), !all);
    sources
}

struct Case {
    seed: u64,
    distributed: bool,
    tenant: Option<AdvertisementMethod>,
    steps: Vec<Step>,
}

async fn run(case: Case) {
    let nb = OvsdbServer::start("ovn-nb.ovsschema").unwrap();
    let ovs = OvsdbServer::start("vswitch.ovsschema").unwrap();
    let topo = Topology::generate(Params {
        vms: 40,
        seed: case.seed,
        hosts: HOSTS,
        local_fraction: 0.3,
        vms_per_net: 8,
        nets_per_router: 2,
        provider_vm_ratio: 0.3,
        fip_ratio: 0.4,
        lb_ratio: 0.1,
        distributed: case.distributed,
        ..Params::default()
    });
    for txn in topo.nb_transactions() {
        nb.transact(&txn).unwrap();
    }
    nb.transact(&[json!({"op": "insert", "table": "Logical_Switch", "row": {"name": marker(0)}})])
        .unwrap();
    local_ovs(&ovs);
    // The VMs bound here have their VIF here.
    let mut plugged_here = std::collections::BTreeSet::new();
    for port in topo_ports_bound_here(&nb) {
        plug(&ovs, &port, true);
        plugged_here.insert(port);
    }

    let mut config = Config::default();
    config.default.driver = Driver::NbOvnBgpDriver;
    if let Some(method) = case.tenant {
        config.default.expose_tenant_networks = true;
        config.default.advertisement_method_tenant_networks = method;
    }
    let full = start(&nb, &ovs, &config, true).await;
    let cond = start(&nb, &ovs, &config, false).await;

    let mut exposed_somewhere = false;
    for n in 0..=case.steps.len() {
        let mut vif = None;
        if n > 0 {
            let step = &case.steps[n - 1];
            let db = full.inputs().raw_ovn;
            let mut txn = ops(step, &db);
            txn.push(json!({"op": "update", "table": "Logical_Switch",
                            "where": [["name", "==", marker(n - 1)]], "row": {"name": marker(n)}}));
            // Only a VIF that moves (a name is plugged once).
            vif = vif_move(step, &db)
                .filter(|(port, plugged)| plugged_here.contains(port) != *plugged);
            if let Some((port, plugged)) = &vif {
                if *plugged {
                    plugged_here.insert(port.clone());
                } else {
                    plugged_here.remove(port);
                }
            }
            let plug_first = match step {
                Step::PlainMigrationStart { plug_first, .. } => *plug_first,
                _ => false,
            };
            if let (Some((port, plugged)), true) = (&vif, plug_first) {
                // Nova's order: the VIF first, and the agent reconciles on it.
                plug(&ovs, port, *plugged);
                vif_landed(&cond, port, *plugged).await;
                cond.converged_inputs()
                    .await
                    .unwrap_or_else(|e| panic!("step {n}, VIF plugged: {e}"));
            }
            nb.transact(&txn)
                .unwrap_or_else(|e| panic!("step {n} {step:?}: {e}"));
            if let (Some((port, plugged)), false) = (&vif, plug_first) {
                // Between the NB write and the VIF's move the full monitor
                // already agrees with the truth: its filter keeps a port
                // whose requested-chassis lists this chassis (no window).
                landed(&full, n).await;
                let (inputs, truth) =
                    filtered_and_truth(&full, &format!("step {n}, before the VIF")).await;
                assert_eq!(
                    desired(&inputs, &config),
                    desired_state(&truth, &config, &NodeFacts::default()).expect("truth"),
                    "step {n} ({step:?}), VIF not moved yet: the full monitor's filtered snapshot gives another desired state"
                );
                plug(&ovs, port, *plugged);
            }
        }
        landed(&full, n).await;
        landed(&cond, n).await;
        if let Some((port, plugged)) = &vif {
            vif_landed(&full, port, *plugged).await;
            vif_landed(&cond, port, *plugged).await;
        }
        let step_name = n.checked_sub(1).map(|i| &case.steps[i]);
        let (filtered, truth) = filtered_and_truth(&full, &format!("step {n}, full monitor")).await;
        // What a question about another node's port reads (`explain`).
        assert!(
            filtered.unfiltered_snapshot() == truth,
            "step {n}: unfiltered_snapshot is not the build of every row"
        );
        let want_d = desired_state(&truth, &config, &NodeFacts::default()).expect("truth");
        let got = cond
            .converged_inputs()
            .await
            .unwrap_or_else(|e| panic!("step {n}: {e}"));
        let (got_d, filtered_d) = (desired(&got, &config), desired(&filtered, &config));
        exposed_somewhere |= !want_d.exposed.is_empty();
        assert_eq!(
            got_d, want_d,
            "step {n} ({step_name:?}): the conditional cache gives another desired state"
        );
        assert_eq!(
            filtered_d, want_d,
            "step {n} ({step_name:?}): the full monitor's filtered snapshot gives another desired state"
        );
        // The conditions select: the conditional cache is not the whole
        // table, the full one is, and its snapshot holds the same ports as
        // the conditional one's.
        let all_ports = filtered.raw_ovn.table(LSP).len();
        let some_ports = got.raw_ovn.table(LSP).len();
        assert!(
            some_ports < all_ports,
            "step {n}: {some_ports} of {all_ports} ports"
        );
        assert_eq!(
            filtered.snapshot.counts(),
            got.snapshot.counts(),
            "step {n}: the filtered snapshot and the conditional one hold other rows"
        );
        assert!(
            filtered.snapshot.counts() != truth.counts(),
            "step {n}: the full monitor's snapshot holds every row"
        );
    }
    assert!(exposed_somewhere, "the topology exposes something here");
}

proptest! {
    // `CONDITIONAL_ORACLE_CASES=N` for a longer run (12 by default).
    #![proptest_config(ProptestConfig {
        cases: std::env::var("CONDITIONAL_ORACLE_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(12),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_conditional_cache_gives_the_full_caches_desired_state(
        seed in 1u64..1_000_000,
        distributed in any::<bool>(),
        tenant in prop_oneof![
            Just(None),
            Just(Some(AdvertisementMethod::Host)),
            Just(Some(AdvertisementMethod::Subnet)),
        ],
        steps in prop::collection::vec(step(), 1..16),
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(run(Case { seed, distributed, tenant, steps }));
    }
}
