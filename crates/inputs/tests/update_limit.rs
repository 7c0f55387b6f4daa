//! `[DEFAULT] ovsdb_max_update_mib` bounds the decoded rows of one OVSDB
//! update, the initial dump included, and an operator can raise it: against
//! a real ovsdb-server holding ~4000 ports (a dump of a few MiB), the NB
//! client with a 1 MiB bound drops every session and never syncs, and with
//! the default it syncs every row.

use std::time::Duration;

use obgp_config::{Config, Driver};
use obgp_inputs::OvnSources;
use obgp_testbed::ovsdb::OvsdbServer;
use serde_json::{json, Value};

const PORTS: usize = 4000;

/// One Logical_Switch holding `PORTS` VM ports, in transactions of 200
/// ports (`ovsdb-client transact` takes them as one argument). Ports are not
/// root rows: each batch adds itself to the switch, which keeps it.
fn insert_many_ports(nb: &OvsdbServer) {
    nb.transact(&[json!({"op": "insert", "table": "Logical_Switch",
        "row": {"name": "neutron-0000"}})])
        .unwrap();
    for batch in (0..PORTS).collect::<Vec<_>>().chunks(200) {
        let mut ops: Vec<Value> = batch
            .iter()
            .map(|i| {
                json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": format!("p{i}"),
                    "row": {"name": format!("port-{i:05}"),
                            "addresses": format!("fa:16:3e:00:{:02x}:{:02x} 10.0.{}.{}", i / 256, i % 256, i / 250, i % 250 + 1),
                            "external_ids": ["map", [["neutron:cidrs", format!("10.0.{}.{}/16", i / 250, i % 250 + 1)],
                                                     ["neutron:device_owner", "compute:nova"],
                                                     ["neutron:host_id", "compute-elsewhere"],
                                                     ["neutron:network_name", "neutron-0000"]]]}})
            })
            .collect();
        let ports: Vec<Value> = batch
            .iter()
            .map(|i| json!(["named-uuid", format!("p{i}")]))
            .collect();
        ops.push(json!({"op": "mutate", "table": "Logical_Switch",
            "where": [["name", "==", "neutron-0000"]],
            "mutations": [["ports", "insert", ["set", ports]]]}));
        nb.transact(&ops).unwrap();
    }
}

fn config(nb: &OvsdbServer, ovs: &OvsdbServer) -> Config {
    let mut config = Config::default();
    config.default.driver = Driver::NbOvnBgpDriver;
    // Every port is read: the dump is the whole table.
    config.default.ovn_nb_monitor_all = true;
    config.ovn.ovn_nb_connection = Some(nb.unix_remote());
    config.default.ovsdb_connection = ovs.unix_remote();
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_update_bound_stops_a_bigger_dump_and_raising_it_lets_it_sync() {
    let nb = OvsdbServer::start("ovn-nb.ovsschema").unwrap();
    let ovs = OvsdbServer::start("vswitch.ovsschema").unwrap();
    insert_many_ports(&nb);

    let mut small = config(&nb, &ovs);
    small.default.ovsdb_max_update_mib = 1;
    let sources = OvnSources::start(&small, Duration::from_secs(20))
        .await
        .unwrap();
    let synced = sources.ovn.wait_synced(Duration::from_secs(5)).await;
    assert!(
        synced.is_err(),
        "a {PORTS}-port dump synced under a 1 MiB bound"
    );
    drop(sources);

    let default = config(&nb, &ovs);
    assert_eq!(default.default.ovsdb_max_update_mib, 160);
    let sources = OvnSources::start(&default, Duration::from_secs(20))
        .await
        .unwrap();
    sources
        .ovn
        .wait_synced(Duration::from_secs(20))
        .await
        .expect("the default bound holds the dump");
    let raw = sources.inputs().raw_ovn;
    assert_eq!(raw.table("Logical_Switch_Port").len(), PORTS);
}
