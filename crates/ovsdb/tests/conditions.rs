//! Row conditions against real ovsdb-servers: what a condition change adds
//! and removes is in the cache when `set_conditions` returns, and a
//! reconnect after the conditions changed does not resume from the last
//! transaction (the rows the new conditions select would be missed).

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use obgp_ovsdb::rpc::transport::parse_remotes;
use obgp_ovsdb::{Client, ClientConfig};
use obgp_ovsdb_data::{Atom, Condition, Datum, MonitorSpec, TableMonitor};
use obgp_testbed::ovsdb::{transact_cli, Cluster, OvsdbServer};
use serde_json::{json, Value};

const LSP: &str = "Logical_Switch_Port";

fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// Ports `ln` (localnet), `vm1` and `vm2` on one switch (a port needs a
/// switch: Logical_Switch_Port is not a root table).
fn three_ports() -> Vec<Value> {
    vec![
        json!({"op": "insert", "table": LSP, "uuid-name": "ln", "row": {"name": "ln", "type": "localnet"}}),
        json!({"op": "insert", "table": LSP, "uuid-name": "vm1", "row": {"name": "vm1", "external_ids": ["map", [["k", "v"]]]}}),
        json!({"op": "insert", "table": LSP, "uuid-name": "vm2", "row": {"name": "vm2"}}),
        json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "ls", "ports": ["set", [["named-uuid", "ln"], ["named-uuid", "vm1"], ["named-uuid", "vm2"]]]}}),
    ]
}

fn named(name: &str) -> Condition {
    Condition::eq("name", Datum::scalar(Atom::String(name.into())))
}

fn ports_spec(conditions: Vec<Condition>) -> MonitorSpec {
    MonitorSpec::default().table(
        LSP,
        TableMonitor {
            columns: Some(vec!["name".into(), "type".into()]),
            conditions: Some(conditions),
            ..TableMonitor::default()
        },
    )
}

fn lsp_names(c: &Client) -> BTreeSet<String> {
    c.cache()
        .snapshot()
        .table(LSP)
        .values()
        .filter_map(|r| r.str("name").map(String::from))
        .collect()
}

fn names(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

async fn wait_resynced(client: &Client, generation: u64) -> Result<()> {
    tokio::time::timeout(
        Duration::from_secs(20),
        client.cache().wait_resynced(generation),
    )
    .await
    .with_context(|| format!("no resync #{generation} within 20 s"))??;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_condition_change_is_in_the_cache_when_set_conditions_returns() -> Result<()> {
    init_tracing();
    let server = OvsdbServer::start("ovn-nb.ovsschema")?;
    server.transact(&three_ports())?;
    let localnet = Condition::eq("type", Datum::scalar(Atom::String("localnet".into())));
    let client = Client::start(ClientConfig::new(
        parse_remotes(&server.unix_remote())?,
        "OVN_Northbound",
        ports_spec(vec![localnet.clone()]),
    ));
    wait_resynced(&client, 1).await?;
    assert_eq!(lsp_names(&client), names(&["ln"]));
    // Only the requested columns arrive.
    let snap = client.cache().snapshot();
    assert!(snap
        .table(LSP)
        .values()
        .all(|r| r.get("external_ids").is_none()));

    // No polling: each change's rows are applied before it returns.
    client.set_conditions(LSP, None).await?;
    assert_eq!(lsp_names(&client), names(&["ln", "vm1", "vm2"]));
    client.set_conditions(LSP, Some(vec![named("vm1")])).await?;
    assert_eq!(lsp_names(&client), names(&["vm1"]));
    client
        .set_conditions(LSP, Some(vec![named("vm2"), localnet]))
        .await?;
    assert_eq!(lsp_names(&client), names(&["ln", "vm2"]));
    // Unchanged conditions answer at once.
    client.set_conditions(LSP, client.conditions(LSP)).await?;
    assert_eq!(lsp_names(&client), names(&["ln", "vm2"]));
    assert!(client.set_conditions("No_Such_Table", None).await.is_err());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_after_the_conditions_changed_takes_a_full_dump() -> Result<()> {
    init_tracing();
    let mut cluster = Cluster::start("ovn-nb.ovsschema")?;
    transact_cli(&cluster.remotes(), cluster.db_name(), &three_ports())?;
    // One member only, so that while it is down the client is disconnected.
    let mut config = ClientConfig::new(
        parse_remotes(&cluster.tcp_remote(0))?,
        "OVN_Northbound",
        ports_spec(vec![named("vm1")]),
    );
    config.backoff = (Duration::from_millis(50), Duration::from_millis(200));
    let client = std::sync::Arc::new(Client::start(config));
    wait_resynced(&client, 1).await?;
    assert_eq!(lsp_names(&client), names(&["vm1"]));

    // Same conditions: the reconnect resumes from the last transaction.
    cluster.kill(0);
    cluster.revive(0)?;
    wait_resynced(&client, 2).await?;
    assert_eq!(client.resumed_syncs(), 1, "the member kept its history");
    assert_eq!(lsp_names(&client), names(&["vm1"]));

    // The conditions change while disconnected: the server would answer a
    // resume with "nothing changed since", and vm2 would never arrive.
    cluster.kill(0);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while client.connected_to().is_some() {
        if std::time::Instant::now() > deadline {
            bail!("the client did not notice the member going down");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let changing = {
        let client = client.clone();
        tokio::spawn(async move { client.set_conditions(LSP, Some(vec![named("vm2")])).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !changing.is_finished(),
        "set_conditions returned while disconnected"
    );
    cluster.revive(0)?;
    tokio::time::timeout(Duration::from_secs(20), changing).await???;
    assert_eq!(lsp_names(&client), names(&["vm2"]));
    assert_eq!(client.resumed_syncs(), 1, "the changed conditions resumed");
    Ok(())
}

/// The clauses the NB driver's conditions use beyond `name`/`type`: `_uuid`
/// and an optional weak reference compared with `==`, changed live and
/// followed by writes; the server must keep serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uuid_and_reference_clauses_survive_changes_and_writes() -> Result<()> {
    init_tracing();
    let server = OvsdbServer::start("ovn-nb.ovsschema")?;
    let r = server.transact(&[
        json!({"op": "insert", "table": "Logical_Router_Port", "uuid-name": "gw",
               "row": {"name": "lrp-gw", "mac": "fa:16:3e:00:00:01", "networks": "172.24.4.1/24"}}),
        json!({"op": "insert", "table": "NAT", "uuid-name": "snat",
               "row": {"type": "snat", "external_ip": "172.24.4.1", "logical_ip": "10.0.0.0/24"}}),
        json!({"op": "insert", "table": "NAT", "uuid-name": "fip",
               "row": {"type": "dnat_and_snat", "external_ip": "172.24.4.9", "logical_ip": "10.0.0.9",
                       "logical_port": "vm9", "gateway_port": ["named-uuid", "gw"]}}),
        json!({"op": "insert", "table": "Logical_Router", "row": {"name": "r",
               "ports": ["named-uuid", "gw"], "nat": ["set", [["named-uuid", "snat"], ["named-uuid", "fip"]]]}}),
    ])?;
    let uuid = |i: usize| obgp_ovsdb_data::Uuid::parse(r[i]["uuid"][1].as_str().unwrap()).unwrap();
    let (gw, snat) = (uuid(0), uuid(1));
    let spec = MonitorSpec::default().table(
        "NAT",
        TableMonitor {
            columns: Some(vec![
                "type".into(),
                "logical_port".into(),
                "gateway_port".into(),
            ]),
            conditions: Some(vec![Condition::False]),
            ..TableMonitor::default()
        },
    );
    let client = Client::start(ClientConfig::new(
        parse_remotes(&server.unix_remote())?,
        "OVN_Northbound",
        spec,
    ));
    wait_resynced(&client, 1).await?;
    let nats = |c: &Client| c.cache().snapshot().table("NAT").len();
    assert_eq!(nats(&client), 0);
    let by_uuid = Condition::eq("_uuid", Datum::scalar(Atom::Uuid(snat)));
    client
        .set_conditions("NAT", Some(vec![by_uuid.clone()]))
        .await?;
    assert_eq!(nats(&client), 1);
    let on_gw = Condition::eq("gateway_port", Datum::scalar(Atom::Uuid(gw)));
    client
        .set_conditions("NAT", Some(vec![by_uuid, on_gw]))
        .await?;
    assert_eq!(nats(&client), 2);
    server.transact(&[json!({"op": "update", "table": "NAT", "where": [],
                             "row": {"external_mac": "fa:16:3e:00:00:09"}})])?;
    server.transact(&[
        json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "after"}}),
    ])?;
    client
        .set_conditions(
            "NAT",
            Some(vec![Condition::eq(
                "type",
                Datum::scalar(Atom::String("snat".into())),
            )]),
        )
        .await?;
    assert_eq!(nats(&client), 1);
    assert!(
        client.connected_to().is_some(),
        "the server stopped serving"
    );
    Ok(())
}
