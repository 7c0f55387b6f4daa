//! The client against real ovsdb-server instances (Debian's
//! openvswitch-switch): cache fidelity, restart resync, RAFT leader loss and
//! SSL. Each test starts its own servers in a temporary directory.
//!
//! Over 700 lines: one test binary, so the servers' setup helpers are shared
//! by every case instead of copied.

mod support;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::switch_names;

use anyhow::{bail, Context, Result};
use obgp_ovsdb::cache::CacheReader;
use obgp_ovsdb::rpc::transport::parse_remotes;
use obgp_ovsdb::{Client, ClientConfig, Remote, Session, SessionConfig, TlsFiles, TlsSettings};
use obgp_ovsdb_data::wire::KeyProjection;
use obgp_ovsdb_data::{ChangeKind, DatabaseSchema, Datum, MonitorSpec, Row, Uuid};
use obgp_testbed::ovsdb::{schema_path, Cluster, OvsdbServer};
use serde_json::{json, Value};

const NB_TABLES: [&str; 7] = [
    "Logical_Switch",
    "Logical_Switch_Port",
    "Logical_Router",
    "Logical_Router_Port",
    "NAT",
    "Load_Balancer",
    "NB_Global",
];

/// Logs of the client under test, shown for failing tests (RUST_LOG).
fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

fn nb_schema() -> Arc<DatabaseSchema> {
    Arc::new(DatabaseSchema::from_file(schema_path("ovn-nb.ovsschema")).unwrap())
}

fn client(remotes: &str) -> Client {
    init_tracing();
    let mut config = ClientConfig::new(
        parse_remotes(remotes).unwrap(),
        "OVN_Northbound",
        MonitorSpec::all(NB_TABLES),
    );
    config.backoff = (Duration::from_millis(50), Duration::from_millis(500));
    Client::start(config)
}

/// The rows of `table` as the server has them, decoded with the schema.
fn server_rows(
    server: &OvsdbServer,
    schema: &DatabaseSchema,
    table: &str,
) -> Result<BTreeMap<Uuid, Row>> {
    let ts = schema.table(table).context("table")?;
    let mut out = BTreeMap::new();
    for r in server.select_all(table)? {
        let uuid = r["_uuid"][1].as_str().context("_uuid")?;
        out.insert(Uuid::parse(uuid)?, ts.decode_row(uuid, &r)?);
    }
    Ok(out)
}

fn cache_rows(cache: &CacheReader, table: &str) -> BTreeMap<Uuid, Row> {
    cache
        .snapshot()
        .table(table)
        .iter()
        .map(|(u, r)| (*u, (**r).clone()))
        .collect()
}

/// Waits until the cache holds exactly the server's rows in every table.
async fn cache_matches_server(client: &Client, server: &OvsdbServer) -> Result<()> {
    let schema = nb_schema();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut diff = None;
        for t in NB_TABLES {
            let want = server_rows(server, &schema, t)?;
            let got = cache_rows(client.cache(), t);
            if want != got {
                diff = Some(format!("{t}:\n server {want:#?}\n cache {got:#?}"));
                break;
            }
        }
        match diff {
            None => return Ok(()),
            Some(d) if Instant::now() > deadline => bail!("cache differs from server: {d}"),
            Some(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
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

fn uuid_of(result: &Value) -> Uuid {
    Uuid::parse(result["uuid"][1].as_str().unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_follows_inserts_modifies_and_deletes_exactly() -> Result<()> {
    let server = OvsdbServer::start("ovn-nb.ovsschema")?;
    let client = client(&server.unix_remote());
    wait_resynced(&client, 1).await?;
    let mut changes = client.cache().subscribe();

    // Another client (ovsdb-client) writes; ours only watches.
    let r = server.transact(&[
        json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p1", "row": {
            "name": "p1", "addresses": ["set", ["fa:16:3e:00:00:01 10.0.0.5"]],
            "external_ids": ["map", [["neutron:cidrs", "10.0.0.5/24"], ["k", "v"]]],
            "options": ["map", [["requested-chassis", "host-0"]]], "up": false}}),
        json!({"op": "insert", "table": "Logical_Switch", "row": {
            "name": "ls1", "ports": ["set", [["named-uuid", "p1"]]]}}),
    ])?;
    let p1 = uuid_of(&r[0]);
    cache_matches_server(&client, &server).await?;

    // Map column: change one key, delete one, add one; set column: replace
    // an element; optional: flip; scalar: rename.
    server.transact(&[
        json!({"op": "mutate", "table": "Logical_Switch_Port", "where": [["name", "==", "p1"]],
               "mutations": [["external_ids", "delete", ["set", ["k"]]],
                             ["external_ids", "insert", ["map", [["neutron:host_id", "host-0"]]]]]}),
        json!({"op": "update", "table": "Logical_Switch_Port", "where": [["name", "==", "p1"]],
               "row": {"addresses": ["set", ["fa:16:3e:00:00:01 10.0.0.6", "unknown"]],
                       "options": ["map", [["requested-chassis", "host-1"]]],
                       "up": true, "name": "p1-renamed"}}),
    ])?;
    cache_matches_server(&client, &server).await?;
    let row = client
        .cache()
        .snapshot()
        .get("Logical_Switch_Port", p1)
        .cloned()
        .unwrap();
    assert_eq!(
        row.map_str("external_ids", "neutron:host_id"),
        Some("host-0")
    );
    assert_eq!(row.map_str("external_ids", "k"), None);
    assert_eq!(row.bool("up"), Some(true));

    // The change stream saw the update, with the old values of what changed.
    let deadline = Instant::now() + Duration::from_secs(5);
    let update = loop {
        let c = tokio::time::timeout_at(deadline.into(), changes.recv()).await??;
        if c.uuid == p1 && c.kind == ChangeKind::Update {
            break c;
        }
    };
    let old = update.old.unwrap();
    assert!(old.get("external_ids").is_some() || old.get("name").is_some());

    // Clear an optional and a map, delete a row through a reference drop.
    server.transact(&[
        json!({"op": "update", "table": "Logical_Switch_Port", "where": [["_uuid", "==", ["uuid", p1.to_string()]]],
               "row": {"up": ["set", []], "options": ["map", []]}}),
    ])?;
    cache_matches_server(&client, &server).await?;
    server.transact(&[
        json!({"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "ls1"]],
               "mutations": [["ports", "delete", ["set", [["uuid", p1.to_string()]]]]]}),
    ])?;
    cache_matches_server(&client, &server).await?;
    assert!(
        client
            .cache()
            .snapshot()
            .get("Logical_Switch_Port", p1)
            .is_none(),
        "unreferenced LSP is garbage collected"
    );
    server.transact(&[json!({"op": "delete", "table": "Logical_Switch", "where": []})])?;
    cache_matches_server(&client, &server).await?;
    assert!(client.cache().snapshot().table("Logical_Switch").is_empty());
    Ok(())
}

/// `rows` with only the keys `projection` keeps of its map columns; a map
/// left empty is dropped, as the cache stores no default.
fn project(
    rows: BTreeMap<Uuid, Row>,
    table: &str,
    projection: &KeyProjection,
) -> BTreeMap<Uuid, Row> {
    rows.into_iter()
        .map(|(uuid, mut row)| {
            row.columns.retain(|column, datum| {
                if let (Some(keys), true) = (projection.keys(table, column), datum.is_map()) {
                    let kept = datum.pairs().iter().filter(|(k, _)| {
                        k.as_str()
                            .is_some_and(|k| keys.iter().any(|kept| kept == k))
                    });
                    *datum = Datum::map(kept.cloned().collect());
                    return !datum.is_empty();
                }
                true
            });
            (uuid, row)
        })
        .collect()
}

/// Waits until the cache holds exactly the projection of the server's rows.
async fn cache_matches_projected_server(
    client: &Client,
    server: &OvsdbServer,
    projection: &KeyProjection,
) -> Result<()> {
    let schema = nb_schema();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut diff = None;
        for t in NB_TABLES {
            let want = project(server_rows(server, &schema, t)?, t, projection);
            let got = cache_rows(client.cache(), t);
            if want != got {
                diff = Some(format!("{t}:\n server {want:#?}\n cache {got:#?}"));
                break;
            }
        }
        match diff {
            None => return Ok(()),
            Some(d) if Instant::now() > deadline => {
                bail!("cache differs from the projected server: {d}")
            }
            Some(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_projected_cache_follows_the_projection_of_the_server() -> Result<()> {
    let server = OvsdbServer::start("ovn-nb.ovsschema")?;
    let mut spec = MonitorSpec::all(NB_TABLES);
    let lsp = spec.tables.get_mut("Logical_Switch_Port").unwrap();
    lsp.map_keys.insert(
        "external_ids".into(),
        vec!["neutron:cidrs".into(), "neutron:host_id".into()],
    );
    lsp.map_keys
        .insert("options".into(), vec!["requested-chassis".into()]);
    let projection = spec.key_projection();
    let mut config = ClientConfig::new(
        parse_remotes(&server.unix_remote())?,
        "OVN_Northbound",
        spec,
    );
    config.backoff = (Duration::from_millis(50), Duration::from_millis(500));
    init_tracing();
    let projected = Client::start(config);
    let plain = client(&server.unix_remote());
    wait_resynced(&projected, 1).await?;
    wait_resynced(&plain, 1).await?;

    let r = server.transact(&[
        json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p1", "row": {
            "name": "p1",
            "external_ids": ["map", [["neutron:cidrs", "10.0.0.5/24"], ["neutron:project_id", "p"],
                                     ["neutron:revision_number", "1"]]],
            "options": ["map", [["requested-chassis", "host-0"], ["mcast_flood", "true"]]]}}),
        json!({"op": "insert", "table": "Logical_Switch", "row": {
            "name": "ls1", "ports": ["set", [["named-uuid", "p1"]]],
            "external_ids": ["map", [["neutron:network_name", "n1"]]]}}),
    ])?;
    let p1 = uuid_of(&r[0]);
    cache_matches_projected_server(&projected, &server, &projection).await?;
    cache_matches_server(&plain, &server).await?;
    let mut changes = projected.cache().subscribe();

    // Only dropped keys change: the projected cache sees no change at all
    // (the next change it reports is the one of the transaction after).
    server.transact(&[json!({"op": "mutate", "table": "Logical_Switch_Port", "where": [["name", "==", "p1"]],
        "mutations": [["external_ids", "delete", ["set", ["neutron:revision_number"]]],
                      ["external_ids", "insert", ["map", [["neutron:revision_number", "2"], ["neutron:mtu", "1442"]]]],
                      ["options", "insert", ["map", [["mcast_flood_reports", "true"]]]]]})])?;
    cache_matches_server(&plain, &server).await?;
    cache_matches_projected_server(&projected, &server, &projection).await?;

    // Kept and dropped keys change together; then the kept ones go away.
    server.transact(&[
        json!({"op": "mutate", "table": "Logical_Switch_Port", "where": [["name", "==", "p1"]],
        "mutations": [["external_ids", "delete", ["set", ["neutron:cidrs", "neutron:project_id"]]],
                      ["external_ids", "insert", ["map", [["neutron:host_id", "host-1"]]]]]}),
    ])?;
    cache_matches_server(&plain, &server).await?;
    cache_matches_projected_server(&projected, &server, &projection).await?;
    let first = tokio::time::timeout(Duration::from_secs(5), changes.recv()).await??;
    assert_eq!(
        (first.uuid, first.kind),
        (p1, ChangeKind::Update),
        "{first:?}"
    );
    let old = first.old.unwrap();
    assert_eq!(
        old.map_str("external_ids", "neutron:cidrs"),
        Some("10.0.0.5/24")
    );
    assert!(
        old.get("options").is_none(),
        "options did not change in the projection: {old:?}"
    );

    server.transact(&[
        json!({"op": "update", "table": "Logical_Switch_Port", "where": [["name", "==", "p1"]],
        "row": {"external_ids": ["map", [["neutron:project_id", "q"]]], "options": ["map", []]}}),
    ])?;
    cache_matches_server(&plain, &server).await?;
    cache_matches_projected_server(&projected, &server, &projection).await?;
    let row = projected
        .cache()
        .snapshot()
        .get("Logical_Switch_Port", p1)
        .cloned()
        .unwrap();
    assert!(
        row.get("external_ids").is_none() && row.get("options").is_none(),
        "{row:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dump_decoded_while_it_arrives_equals_the_buffered_one() -> Result<()> {
    init_tracing();
    let server = OvsdbServer::start("ovn-nb.ovsschema")?;
    // ~350 kB: more than one read of the session's 64 KiB buffer.
    let ports: Vec<Value> = (0..1500)
        .map(|i| {
            json!({"op": "insert", "table": "Logical_Switch_Port", "row": {
                "name": format!("p{i}"), "up": i % 2 == 0,
                "addresses": ["set", [format!("fa:16:3e:00:{:02x}:{:02x} 10.0.{}.{}", i / 256, i % 256, i / 256, i % 256)]],
                "external_ids": ["map", [["neutron:cidrs", format!("10.0.0.{i}/24")], ["neutron:project_id", "p"]]]}})
        })
        .collect();
    // ovsdb-client takes the operations on its command line: in batches,
    // each with a switch referencing its ports (unreferenced ports are
    // garbage collected).
    for (b, batch) in ports.chunks(250).enumerate() {
        let mut ops = batch.to_vec();
        let names: Vec<Value> = (0..batch.len())
            .map(|i| {
                ops[i]["uuid-name"] = json!(format!("p{i}"));
                json!(["named-uuid", format!("p{i}")])
            })
            .collect();
        ops.push(json!({"op": "insert", "table": "Logical_Switch",
                        "row": {"name": format!("ls{b}"), "ports": ["set", names]}}));
        server.transact(&ops)?;
    }
    let remote: Remote = server.unix_remote().parse()?;
    let schema = nb_schema();
    let mut spec = MonitorSpec::all(NB_TABLES);
    spec.tables
        .get_mut("Logical_Switch_Port")
        .unwrap()
        .map_keys
        .insert("external_ids".into(), vec!["neutron:cidrs".into()]);
    let mut dumps = Vec::new();
    for stream_above in [Some(4096), None] {
        let config = SessionConfig {
            stream_above,
            ..SessionConfig::default()
        };
        let (session, _notes) = Session::connect(&remote, None, config).await?;
        let dump = session
            .monitor_cond("OVN_Northbound", &json!("m"), &spec, &schema)
            .await?;
        assert_eq!(
            session.streamed_replies(),
            u64::from(stream_above.is_some())
        );
        assert_eq!(dump.row_count(), 1500 + 6); // ports and their switches
        dumps.push(dump);
    }
    assert_eq!(dumps[0], dumps[1]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_through_the_client_are_seen_by_its_own_cache() -> Result<()> {
    let server = OvsdbServer::start("ovn-nb.ovsschema")?;
    let client = client(&server.tcp_remote());
    wait_resynced(&client, 1).await?;
    client
        .transact(vec![json!({"op": "insert", "table": "NB_Global", "row": {
            "external_ids": ["map", [["neutron:fip-distributed", "False"]]]}})])
        .await?;
    cache_matches_server(&client, &server).await?;
    let err = client
        .transact(vec![
            json!({"op": "insert", "table": "No_Such_Table", "row": {}}),
        ])
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("No_Such_Table") || err.to_string().contains("error"),
        "{err}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_resyncs_to_the_servers_state_after_a_restart() -> Result<()> {
    let mut server = OvsdbServer::start("ovn-nb.ovsschema")?;
    server.transact(&[
        json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "stays"}}),
        json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "goes"}}),
    ])?;
    let client = client(&server.tcp_remote());
    wait_resynced(&client, 1).await?;
    cache_matches_server(&client, &server).await?;
    let mut changes = client.cache().subscribe();

    // While the server is down, its database changes behind our back.
    server.kill();
    let db = server.dir().join("db");
    let out = std::process::Command::new("ovsdb-tool")
        .arg("transact")
        .arg(&db)
        .arg(
            json!(["OVN_Northbound",
            {"op": "delete", "table": "Logical_Switch", "where": [["name", "==", "goes"]]},
            {"op": "insert", "table": "Logical_Switch", "row": {"name": "new"}},
            {"op": "update", "table": "Logical_Switch", "where": [["name", "==", "stays"]],
             "row": {"external_ids": ["map", [["changed", "offline"]]]}}])
            .to_string(),
        )
        .output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.restart()?;

    wait_resynced(&client, 2).await?;
    cache_matches_server(&client, &server).await?;
    // The resync is reported as the changes that happened while away.
    let mut kinds = Vec::new();
    while let Ok(c) = changes.try_recv() {
        kinds.push(c.kind);
    }
    kinds.sort_by_key(|k| format!("{k:?}"));
    assert_eq!(
        kinds,
        [ChangeKind::Delete, ChangeKind::Insert, ChangeKind::Update]
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_only_client_follows_a_raft_cluster_through_leader_loss() -> Result<()> {
    let mut cluster = Cluster::start("ovn-nb.ovsschema")?;
    let mut config = ClientConfig::new(
        parse_remotes(&cluster.remotes())?,
        "OVN_Northbound",
        MonitorSpec::all(NB_TABLES),
    );
    config.leader_only = true;
    config.backoff = (Duration::from_millis(50), Duration::from_millis(500));
    config.session.probe_interval = Some(Duration::from_secs(1));
    let client = Client::start(config);
    wait_resynced(&client, 1).await?;
    let leader = cluster.wait_leader(Duration::from_secs(10))?;
    assert_eq!(
        client.connected_to(),
        Some(cluster.tcp_remote(leader)),
        "leader-only picks the leader"
    );
    client
        .transact(vec![
            json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "before"}}),
        ])
        .await?;

    cluster.kill(leader);
    wait_resynced(&client, 2).await?;
    let new_leader = cluster.wait_leader(Duration::from_secs(10))?;
    assert_ne!(new_leader, leader);
    // Writes go through as soon as the new leader accepts them.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match client
            .transact(vec![
                json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "after"}}),
            ])
            .await
        {
            Ok(_) => break,
            Err(e) if Instant::now() < deadline => {
                eprintln!("retrying write after failover: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    // A write by someone else on another member also reaches the cache.
    let other = (0..3).find(|i| *i != leader).unwrap();
    obgp_testbed::ovsdb::transact_cli(
        &cluster.unix_remote(other),
        "OVN_Northbound",
        &[json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "elsewhere"}})],
    )?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let names: Vec<String> = client
            .cache()
            .snapshot()
            .table("Logical_Switch")
            .values()
            .filter_map(|r| r.str("name").map(String::from))
            .collect();
        if ["before", "after", "elsewhere"]
            .iter()
            .all(|n| names.iter().any(|x| x == n))
        {
            break;
        }
        if Instant::now() > deadline {
            bail!("cache has {names:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_ne!(client.connected_to(), Some(cluster.tcp_remote(leader)));
    // The other members keep the transaction history: the reconnect
    // resumed from the last transaction id instead of a full dump.
    assert!(client.resumed_syncs() >= 1, "failover did a full dump");
    // The crashed member rejoins and the cluster is whole again.
    cluster.revive(leader)?;
    cluster.wait_connected(leader)?;
    cluster.wait_leader(Duration::from_secs(10))?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssl_remote_is_verified_against_the_test_ca() -> Result<()> {
    let server = OvsdbServer::start_ssl("ovn-nb.ovsschema")?;
    let pki = server.pki().unwrap().clone();
    let files = TlsFiles {
        private_key: pki.client_key.clone(),
        certificate: pki.client_cert.clone(),
        ca_cert: pki.ca_cert.clone(),
    };
    let remote: Remote = server.ssl_remote().unwrap().parse()?;
    let mut config = ClientConfig::new(
        vec![remote.clone()],
        "OVN_Northbound",
        MonitorSpec::all(NB_TABLES),
    );
    config.tls = Some(TlsSettings::load(&files)?);
    let client = Client::start(config);
    wait_resynced(&client, 1).await?;
    client
        .transact(vec![
            json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "over-tls"}}),
        ])
        .await?;
    cache_matches_server(&client, &server).await?;

    // A CA that did not sign the server's certificate is refused.
    let other_dir = tempfile::tempdir()?;
    let other = obgp_testbed::ovsdb::Pki::create(other_dir.path())?;
    let wrong = TlsSettings::load(&TlsFiles {
        private_key: pki.client_key.clone(),
        certificate: pki.client_cert.clone(),
        ca_cert: other.ca_cert.clone(),
    })?;
    let err = Session::connect(&remote, Some(&wrong), SessionConfig::default())
        .await
        .err()
        .context("connection with the wrong CA succeeded")?;
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_server_is_detected_by_the_probe_and_resynced_when_it_thaws() -> Result<()> {
    init_tracing();
    let server = OvsdbServer::start("ovn-nb.ovsschema")?;
    let mut config = ClientConfig::new(
        parse_remotes(&server.tcp_remote())?,
        "OVN_Northbound",
        MonitorSpec::all(NB_TABLES),
    );
    config.session.probe_interval = Some(Duration::from_millis(500));
    config.backoff = (Duration::from_millis(50), Duration::from_millis(200));
    let client = Client::start(config);
    wait_resynced(&client, 1).await?;
    let pid = server.pid().context("server pid")?.to_string();
    let signal = |sig: &str| -> Result<()> {
        let st = std::process::Command::new("kill")
            .args([sig, &pid])
            .status()?;
        anyhow::ensure!(st.success(), "kill {sig} {pid} failed");
        Ok(())
    };
    // SIGSTOP: the socket stays open but nothing answers, not even echo.
    signal("-STOP")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.connected_to().is_some() {
        if Instant::now() > deadline {
            signal("-CONT")?;
            bail!("silent server not detected");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    signal("-CONT")?;
    server.transact(&[
        json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "after-thaw"}}),
    ])?;
    wait_resynced(&client, 2).await?;
    cache_matches_server(&client, &server).await?;
    Ok(())
}

async fn wait_names(client: &Client, want: &[&str], within: Duration) -> Result<()> {
    let deadline = Instant::now() + within;
    while switch_names(client) != want {
        if Instant::now() > deadline {
            bail!("cache has {:?}, want {want:?}", switch_names(client));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_loses_its_cluster_is_left_and_without_a_good_member_the_cache_stays(
) -> Result<()> {
    init_tracing();
    let mut cluster = Cluster::start("ovn-nb.ovsschema")?;
    let mut config = ClientConfig::new(
        parse_remotes(&cluster.remotes())?,
        "OVN_Northbound",
        MonitorSpec::all(NB_TABLES),
    );
    config.backoff = (Duration::from_millis(50), Duration::from_millis(500));
    config.session.probe_interval = Some(Duration::from_secs(1));
    let client = Client::start(config);
    wait_resynced(&client, 1).await?;
    obgp_testbed::ovsdb::transact_cli(
        &cluster.unix_remote(0),
        "OVN_Northbound",
        &[json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "kept"}})],
    )?;
    wait_names(&client, &["kept"], Duration::from_secs(10)).await?;
    let on = (0..3)
        .find(|i| client.connected_to() == Some(cluster.tcp_remote(*i)))
        .context("connected to no member")?;

    // The member the client reads stays up and reachable, but its two
    // peers crash: it loses its cluster (`connected: false` once its
    // elections fail) and the client leaves it.
    let others: Vec<usize> = (0..3).filter(|i| *i != on).collect();
    for i in &others {
        cluster.kill(*i);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while client.connected_to().is_some() {
        if Instant::now() > deadline {
            bail!("client stayed on member {on}, which lost its cluster");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // No good member: the client keeps trying (the isolated member is
    // refused, the others are down) and the cache keeps its last snapshot,
    // no resync, no change published.
    let resyncs = *client.cache().resynced().borrow();
    let before = cache_rows(client.cache(), "Logical_Switch");
    let mut changes = client.cache().watch();
    changes.borrow_and_update();
    let until = Instant::now() + Duration::from_secs(4);
    while Instant::now() < until {
        assert_eq!(
            client.connected_to(),
            None,
            "used a member without its cluster"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(*client.cache().resynced().borrow(), resyncs);
    assert_eq!(cache_rows(client.cache(), "Logical_Switch"), before);
    assert!(!changes.has_changed()?, "a snapshot was published");

    // The two come back without the isolated member (it crashes now): they
    // are a quorum, and the client syncs from one of them.
    cluster.kill(on);
    for i in &others {
        cluster.revive(*i)?;
    }
    for i in &others {
        cluster.wait_connected(*i)?;
    }
    obgp_testbed::ovsdb::transact_cli(
        &cluster.unix_remote(others[0]),
        "OVN_Northbound",
        &[json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "after"}})],
    )?;
    wait_names(&client, &["after", "kept"], Duration::from_secs(20)).await?;
    let now_on = client.connected_to().context("not connected")?;
    assert!(
        others.iter().any(|i| cluster.tcp_remote(*i) == now_on),
        "{now_on} is not a healthy member"
    );
    Ok(())
}
