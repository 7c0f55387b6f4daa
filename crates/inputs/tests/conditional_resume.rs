//! `ovn_nb_monitor_all = false` with `state_dir`, against a real 3-member
//! RAFT cluster of OVN_Northbound and a local Open_vSwitch server: a
//! conditional agent restarted on its cache file starts from the file's
//! conditions, resumes (`monitor_cond_since` found), and, after a VM was
//! bound to this node while it was down, computes the desired state a
//! full monitor computes.

use std::time::{Duration, Instant};

use obgp_config::{Config, Driver};
use obgp_desired::{desired_state, Desired, NodeFacts};
use obgp_inputs::{OvnSources, ReconcileInputs};
use obgp_testbed::ovsdb::{transact_cli, Cluster, OvsdbServer};
use obgp_topogen::{Params, Topology};
use serde_json::json;

const LSP: &str = "Logical_Switch_Port";
const MARKER: &str = "resume-marker";

fn desired(inputs: &ReconcileInputs, config: &Config) -> Desired {
    desired_state(&inputs.snapshot, config, &NodeFacts::default()).expect("desired state")
}

async fn started(config: &Config) -> OvnSources {
    let sources = OvnSources::start(config, Duration::from_secs(20))
        .await
        .expect("sources");
    sources
        .wait_synced(Duration::from_secs(20))
        .await
        .expect("synced");
    sources
}

/// Waits until `sources`' NB cache holds the marker switch.
async fn landed(sources: &OvnSources) -> ReconcileInputs {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let inputs = sources.inputs();
        let there = inputs
            .raw_ovn
            .table("Logical_Switch")
            .values()
            .any(|r| r.str("name") == Some(MARKER));
        if there {
            return inputs;
        }
        assert!(
            Instant::now() < deadline,
            "the marker never reached the cache"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conditional_agent_restarted_on_its_cache_file_resumes_and_agrees_with_a_full_monitor() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let cluster = Cluster::start("ovn-nb.ovsschema").unwrap();
    let ovs = OvsdbServer::start("vswitch.ovsschema").unwrap();
    let topo = Topology::generate(Params {
        vms: 40,
        seed: 5,
        hosts: 3,
        local_fraction: 0.3,
        fip_ratio: 0.4,
        lb_ratio: 0.1,
        ..Params::default()
    });
    for txn in topo.nb_transactions() {
        transact_cli(&cluster.remotes(), "OVN_Northbound", &txn).unwrap();
    }
    // ovsdb-server keeps no more history than the database's atoms: the
    // last transaction of the bulk load may not survive the next one. A
    // small one after it is what the agent's file will name (as Neutron's
    // small writes are in a cloud).
    transact_cli(
        &cluster.remotes(),
        "OVN_Northbound",
        &[json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "after-load"}})],
    )
    .unwrap();
    ovs.transact(&[json!({"op": "insert", "table": "Open_vSwitch", "row": {
        "external_ids": ["map", [["hostname", "host-000"], ["system-id", "chassis-000"],
                                 ["ovn-bridge-mappings", "physnet1:br-ex"]]]}})])
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.default.driver = Driver::NbOvnBgpDriver;
    config.ovn.ovn_nb_connection = Some(cluster.remotes());
    config.default.ovsdb_connection = ovs.unix_remote();
    let mut full_config = config.clone();
    config.default.ovn_nb_monitor_all = false;
    config.default.state_dir = Some(state.path().display().to_string());

    let first = started(&config).await;
    assert!(!first.ovn.client.resumed_at_start(), "no file yet");
    first.converged_inputs().await.expect("converged");
    first.save_state().await;
    drop(first);

    // While the agent is down a VM of another host is bound here.
    full_config.default.ovn_nb_monitor_all = true;
    let full = started(&full_config).await;
    let db = full.inputs().raw_ovn;
    let (uuid, _) = db
        .table(LSP)
        .iter()
        .find(|(_, r)| {
            r.str("type").unwrap_or("").is_empty()
                && r.map_str("external_ids", "neutron:host_id") == Some("host-001")
        })
        .expect("a VM port of host-001");
    let uuid = uuid.to_string();
    transact_cli(
        &cluster.remotes(),
        "OVN_Northbound",
        &[
            json!({"op": "mutate", "table": LSP, "where": [["_uuid", "==", ["uuid", uuid]]],
                   "mutations": [
                       ["options", "delete", ["set", ["requested-chassis"]]],
                       ["options", "insert", ["map", [["requested-chassis", "host-000"]]]],
                       ["external_ids", "delete", ["set", ["neutron:host_id"]]],
                       ["external_ids", "insert", ["map", [["neutron:host_id", "host-000"]]]]]}),
            json!({"op": "insert", "table": "Logical_Switch", "row": {"name": MARKER}}),
        ],
    )
    .unwrap();

    let second = started(&config).await;
    assert!(
        second.ovn.client.resumed_at_start(),
        "the restart on the file did not resume"
    );
    let got = second.converged_inputs().await.expect("converged");
    let want = landed(&full).await;
    assert!(
        got.raw_ovn
            .table("Logical_Switch")
            .values()
            .any(|r| r.str("name") == Some(MARKER)),
        "the resumed cache lacks the change made while the agent was down"
    );
    // The truth: every row of the full monitor's cache (its own snapshot
    // keeps only this node's rows).
    let truth = desired_state(
        &want.unfiltered_snapshot(),
        &full_config,
        &NodeFacts::default(),
    )
    .expect("desired state");
    assert_eq!(desired(&got, &config), truth);
    let bound_here = got.raw_ovn.table(LSP).keys().any(|u| u.to_string() == uuid);
    assert!(
        bound_here,
        "the port bound here is not in the conditional cache"
    );
    assert!(
        got.raw_ovn.table(LSP).len() < want.raw_ovn.table(LSP).len(),
        "the conditions select"
    );
}
