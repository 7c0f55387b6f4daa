//! The snapshot `OvnSources::inputs` maintains from a real ovsdb-server's
//! change stream equals a fresh build of the client's cache (for the NB, of
//! the rows the full monitor's local filter keeps) after
//! every kind of write (update, insert, delete through garbage collection,
//! a localnet turning into a VM port and back) and across a server restart;
//! likewise for the SB driver's OVN_Southbound (unbind, rebind, a chassis
//! rename, a restart).

use std::time::{Duration, Instant};

use obgp_config::{Config, Driver};
use obgp_inputs::{OvnSources, ReconcileInputs};
use obgp_ovn::Snapshot;
use obgp_ovsdb_data::Uuid;
use obgp_testbed::fixture::insert_ops;
use obgp_testbed::ovsdb::OvsdbServer;
use serde_json::{json, Value};

fn scenario(name: &str) -> Value {
    let path = obgp_testbed::fixtures_dir()
        .join("conformance/scenarios")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Waits until the write `step` made is in the client's cache (`landed`)
/// and the maintained snapshot equals a fresh build of that cache: of the
/// rows the follower's local filter keeps (the full NB monitor's snapshot
/// holds only those).
async fn converged(
    sources: &OvnSources,
    step: &str,
    landed: impl Fn(&obgp_ovsdb_data::DbSnapshot) -> bool,
) -> Snapshot {
    converged_with(sources, step, landed, |i| {
        let filter = i
            .local_filter
            .as_ref()
            .expect("the full monitor's local filter");
        Snapshot::build_filtered(&i.raw_ovn, filter, &i.raw_ovs)
    })
    .await
}

async fn converged_with(
    sources: &OvnSources,
    step: &str,
    landed: impl Fn(&obgp_ovsdb_data::DbSnapshot) -> bool,
    build: impl Fn(&ReconcileInputs) -> Snapshot,
) -> Snapshot {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let inputs = sources.inputs();
        let fresh = build(&inputs);
        let in_cache = landed(&inputs.raw_ovn);
        if in_cache && inputs.snapshot == fresh {
            return inputs.snapshot;
        }
        assert!(
            Instant::now() < deadline,
            "{step}: in cache: {in_cache}; maintained {:?} / {:?} vs fresh {:?} / {:?}",
            inputs.snapshot.counts(),
            inputs.snapshot.warnings(),
            fresh.counts(),
            fresh.warnings()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn lsp_named<'a>(
    raw: &'a obgp_ovsdb_data::DbSnapshot,
    name: &str,
) -> Option<(Uuid, &'a obgp_ovsdb_data::Row)> {
    raw.table("Logical_Switch_Port")
        .iter()
        .find(|(_, r)| r.str("name") == Some(name))
        .map(|(u, r)| (*u, &**r))
}

fn uuid_value(u: Uuid) -> Value {
    json!(["uuid", u.to_string()])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintained_snapshot_equals_a_fresh_build_after_each_write_and_a_restart() {
    let s = scenario("nb-fip.json");
    let mut nb = OvsdbServer::start("ovn-nb.ovsschema").unwrap();
    let ovs = OvsdbServer::start("vswitch.ovsschema").unwrap();
    nb.transact(&insert_ops(&s["ovn"]["OVN_Northbound"]))
        .unwrap();
    ovs.transact(&insert_ops(&s["ovn"]["Open_vSwitch"]))
        .unwrap();
    let mut config = Config::default();
    config.default.driver = Driver::NbOvnBgpDriver;
    // The full monitor: the cache holds every row, the snapshot those its
    // local filter keeps; the writes below touch ports it keeps (the VMs
    // bound here) and one it drops (the localnet turned into an unbound
    // VM port). The conditions themselves: conditional_oracle.rs.
    config.default.ovn_nb_monitor_all = true;
    config.ovn.ovn_nb_connection = Some(nb.unix_remote());
    config.default.ovsdb_connection = ovs.unix_remote();
    let sources = OvnSources::start(&config, Duration::from_secs(20))
        .await
        .unwrap();
    sources.wait_synced(Duration::from_secs(20)).await.unwrap();

    let first = converged(&sources, "initial dump", |raw| {
        !raw.table("Logical_Switch_Port").is_empty()
    })
    .await;
    let vm = first
        .active_vifs_on_chassis("compute-1")
        .next()
        .expect("nb-fip has a VM on compute-1")
        .name
        .clone();
    let switch = first
        .lsp(&vm)
        .and_then(|p| p.network.clone())
        .expect("the VM names its network");
    let localnet = first
        .localnets_on_physnet("physnet1")
        .next()
        .expect("nb-fip has a localnet on physnet1")
        .name
        .clone();

    // Update: the VM goes down.
    let set_up = |up: bool| {
        json!({"op": "update", "table": "Logical_Switch_Port",
               "where": [["name", "==", vm]], "row": {"up": up}})
    };
    nb.transact(&[set_up(false)]).unwrap();
    let snap = converged(&sources, "VM down", |raw| {
        lsp_named(raw, &vm).is_some_and(|(_, r)| r.bool("up") == Some(false))
    })
    .await;
    assert!(snap
        .active_vifs_on_chassis("compute-1")
        .all(|p| p.name != vm));

    // Insert: a new VM port on the VM's switch.
    let added = nb
        .transact(&[
            json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "newp",
                   "row": {"name": "vm-new", "up": true,
                           "addresses": "fa:16:3e:00:00:99 10.0.0.99",
                           "options": ["map", [["requested-chassis", "compute-1"]]]}}),
            json!({"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", switch]],
                   "mutations": [["ports", "insert", ["set", [["named-uuid", "newp"]]]]]}),
        ])
        .unwrap();
    let new_uuid = Uuid::parse(added[0]["uuid"][1].as_str().unwrap()).unwrap();
    let snap = converged(&sources, "insert", |raw| lsp_named(raw, "vm-new").is_some()).await;
    assert!(snap
        .active_vifs_on_chassis("compute-1")
        .any(|p| p.name == "vm-new"));

    // Between reconciles the run loop patches what arrived
    // (`follow_changes`); the next reconcile's inputs apply only the rest.
    let set_addresses = |a: &str| {
        json!({"op": "update", "table": "Logical_Switch_Port",
               "where": [["name", "==", "vm-new"]], "row": {"addresses": a}})
    };
    nb.transact(&[set_addresses("fa:16:3e:00:00:99 10.0.0.98")])
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        sources.follow_changes();
        let raw = sources.ovn.client.cache().snapshot();
        if lsp_named(&raw, "vm-new")
            .is_some_and(|(_, r)| r.str("addresses").is_some_and(|a| a.ends_with(".98")))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the address change never reached the cache"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sources.follow_changes();
    nb.transact(&[set_addresses("fa:16:3e:00:00:99 10.0.0.97")])
        .unwrap();
    let snap = converged(&sources, "followed, then caught up", |raw| {
        lsp_named(raw, "vm-new")
            .is_some_and(|(_, r)| r.str("addresses").is_some_and(|a| a.ends_with(".97")))
    })
    .await;
    assert!(snap
        .active_vifs_on_chassis("compute-1")
        .any(|p| p.name == "vm-new"
            && p.addresses
                .ips
                .iter()
                .any(|ip| ip.to_string() == "10.0.0.97")));

    // Delete: unlisting the port from its switch garbage-collects it.
    nb.transact(&[json!({"op": "mutate", "table": "Logical_Switch",
        "where": [["name", "==", switch]],
        "mutations": [["ports", "delete", ["set", [uuid_value(new_uuid)]]]]})])
        .unwrap();
    converged(&sources, "delete", |raw| lsp_named(raw, "vm-new").is_none()).await;

    // The localnet becomes a VM port and back: the switch loses and regains it.
    let set_type = |t: &str| {
        json!({"op": "update", "table": "Logical_Switch_Port",
               "where": [["name", "==", localnet]], "row": {"type": t}})
    };
    nb.transact(&[set_type("")]).unwrap();
    let snap = converged(&sources, "localnet to VM", |raw| {
        lsp_named(raw, &localnet).is_some_and(|(_, r)| r.str("type").is_none())
    })
    .await;
    assert_eq!(snap.localnets_on_physnet("physnet1").count(), 0);
    // An unbound VM port is no port of this node's: the filter drops it.
    assert!(snap.lsp(&localnet).is_none());
    nb.transact(&[set_type("localnet")]).unwrap();
    converged(&sources, "VM to localnet", |raw| {
        lsp_named(raw, &localnet).is_some_and(|(_, r)| r.str("type") == Some("localnet"))
    })
    .await;

    // Restart: the client reconnects and resyncs; writes after it still land.
    let generation = *sources.ovn.resynced().borrow();
    nb.restart().unwrap();
    sources
        .ovn
        .client
        .cache()
        .wait_resynced(generation + 1)
        .await
        .unwrap();
    converged(&sources, "after restart", |raw| {
        lsp_named(raw, &vm).is_some()
    })
    .await;
    nb.transact(&[set_up(true)]).unwrap();
    let snap = converged(&sources, "VM up after restart", |raw| {
        lsp_named(raw, &vm).is_some_and(|(_, r)| r.bool("up") == Some(true))
    })
    .await;
    assert!(snap
        .active_vifs_on_chassis("compute-1")
        .any(|p| p.name == vm));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintained_sb_snapshot_equals_a_fresh_build_after_each_write_and_a_restart() {
    let s = scenario("sb-sync-provider-vm.json");
    let mut sb = OvsdbServer::start("ovn-sb.ovsschema").unwrap();
    let ovs = OvsdbServer::start("vswitch.ovsschema").unwrap();
    sb.transact(&insert_ops(&s["ovn"]["OVN_Southbound"]))
        .unwrap();
    ovs.transact(&insert_ops(&s["ovn"]["Open_vSwitch"]))
        .unwrap();
    let mut config = Config::default();
    config.default.driver = Driver::OvnBgpDriver;
    config.ovn.ovn_sb_connection = Some(sb.unix_remote());
    config.default.ovsdb_connection = ovs.unix_remote();
    let sources = OvnSources::start(&config, Duration::from_secs(20))
        .await
        .unwrap();
    sources.wait_synced(Duration::from_secs(20)).await.unwrap();
    let empty = obgp_ovn::Tables::new();
    let build = |i: &ReconcileInputs| Snapshot::build_with_sb(&empty, &i.raw_ovn, &i.raw_ovs);
    let binding = |raw: &obgp_ovsdb_data::DbSnapshot| {
        raw.table("Port_Binding")
            .iter()
            .find(|(_, r)| r.uuid("chassis").is_some())
            .map(|(_, r)| r.str("logical_port").unwrap_or("").to_string())
    };

    let first = converged_with(
        &sources,
        "initial dump",
        |raw| binding(raw).is_some(),
        build,
    )
    .await;
    let raw = sources.ovn.client.cache().snapshot();
    let port = binding(&raw).expect("a bound port");
    let (chassis_uuid, chassis_row) = raw
        .table("Chassis")
        .iter()
        .next()
        .map(|(u, r)| (*u, r.clone()))
        .expect("a chassis");
    let system_id = chassis_row.str("name").unwrap().to_string();
    assert_eq!(first.sb().ports_on_chassis(&system_id).count(), 1);

    let set_chassis = |c: Value| {
        json!({"op": "update", "table": "Port_Binding",
               "where": [["logical_port", "==", port]], "row": {"chassis": c}})
    };
    let bound = |raw: &obgp_ovsdb_data::DbSnapshot, yes: bool| {
        raw.table("Port_Binding")
            .values()
            .any(|r| r.str("logical_port") == Some(&port) && r.uuid("chassis").is_some() == yes)
    };
    sb.transact(&[set_chassis(json!(["set", []]))]).unwrap();
    let snap = converged_with(&sources, "unbind", |raw| bound(raw, false), build).await;
    assert_eq!(snap.sb().ports_on_chassis(&system_id).count(), 0);

    sb.transact(&[set_chassis(uuid_value(chassis_uuid))])
        .unwrap();
    converged_with(&sources, "rebind", |raw| bound(raw, true), build).await;

    // Renaming the chassis re-resolves the bindings that reference it.
    sb.transact(&[json!({"op": "update", "table": "Chassis",
        "where": [["_uuid", "==", uuid_value(chassis_uuid)]], "row": {"name": "renamed"}})])
        .unwrap();
    let snap = converged_with(
        &sources,
        "chassis rename",
        |raw| {
            raw.table("Chassis")
                .values()
                .any(|r| r.str("name") == Some("renamed"))
        },
        build,
    )
    .await;
    assert_eq!(snap.sb().ports_on_chassis("renamed").count(), 1);
    assert_eq!(snap.sb().ports_on_chassis(&system_id).count(), 0);

    let generation = *sources.ovn.resynced().borrow();
    sb.restart().unwrap();
    sources
        .ovn
        .client
        .cache()
        .wait_resynced(generation + 1)
        .await
        .unwrap();
    sb.transact(&[set_chassis(json!(["set", []]))]).unwrap();
    converged_with(
        &sources,
        "unbind after restart",
        |raw| bound(raw, false),
        build,
    )
    .await;
}
