//! Restarts that resume, against a real 3-member RAFT cluster of
//! OVN_Northbound: a client keeping a cache file (`state_file`) asks
//! `monitor_cond_since` from the file's transaction at start and gets only
//! what changed; every way the file cannot be used (the server's history
//! no longer reaching back, a truncated, corrupt or foreign file, another
//! schema or cluster, other monitor conditions) ends in a full dump with
//! one log line saying why; and the file's rows are never published before
//! the server answered.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use obgp_ovsdb::rpc::transport::parse_remotes;
use obgp_ovsdb::{Client, ClientConfig};
use obgp_ovsdb_data::cache_file;
use obgp_ovsdb_data::wire::KeyProjection;
use obgp_ovsdb_data::{Atom, Condition, Datum, MonitorSpec, TableMonitor};
use obgp_testbed::ovsdb::{free_port, transact_cli, Cluster};
use serde_json::{json, Value};

const LSP: &str = "Logical_Switch_Port";
const DB: &str = "OVN_Northbound";
const PORTS: usize = 50;

/// The log lines of the test's own thread (the tests run on a
/// current-thread runtime, so the client's tasks log here too).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

impl Captured {
    /// Takes what was logged so far.
    fn take(&self) -> String {
        String::from_utf8_lossy(&std::mem::take(&mut *self.0.lock().unwrap())).into_owned()
    }
}

fn capture_logs() -> (Captured, tracing::subscriber::DefaultGuard) {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(captured.clone())
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .finish();
    (captured, tracing::subscriber::set_default(subscriber))
}

/// One switch `ls` with ports `p0`..`p49`.
fn ports() -> Vec<Value> {
    let mut ops: Vec<Value> = (0..PORTS)
        .map(|i| {
            json!({"op": "insert", "table": LSP, "uuid-name": format!("p{i}"),
                         "row": {"name": format!("p{i}"), "external_ids": ["map", [["n", "0"]]]}})
        })
        .collect();
    let refs: Vec<Value> = (0..PORTS)
        .map(|i| json!(["named-uuid", format!("p{i}")]))
        .collect();
    ops.push(json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "ls", "ports": ["set", refs]}}));
    ops
}

fn set_n(port: usize, n: usize) -> Vec<Value> {
    vec![
        json!({"op": "update", "table": LSP, "where": [["name", "==", format!("p{port}")]],
               "row": {"external_ids": ["map", [["n", n.to_string()]]]}}),
    ]
}

fn add_port(name: &str) -> Vec<Value> {
    vec![
        json!({"op": "insert", "table": LSP, "uuid-name": "new", "row": {"name": name}}),
        json!({"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "ls"]],
               "mutations": [["ports", "insert", ["set", [["named-uuid", "new"]]]]]}),
    ]
}

fn spec() -> MonitorSpec {
    MonitorSpec::all(["Logical_Switch", LSP])
}

fn named(name: &str) -> MonitorSpec {
    spec().table(
        LSP,
        TableMonitor {
            conditions: Some(vec![Condition::eq(
                "name",
                Datum::scalar(Atom::String(name.into())),
            )]),
            ..Default::default()
        },
    )
}

fn config(remotes: &str, spec: MonitorSpec, state: Option<&Path>) -> Result<ClientConfig> {
    let mut c = ClientConfig::new(parse_remotes(remotes)?, DB, spec);
    c.state_file = state.map(Path::to_path_buf);
    c.backoff = (Duration::from_millis(50), Duration::from_millis(200));
    Ok(c)
}

async fn synced(config: ClientConfig) -> Result<Client> {
    let client = Client::start(config);
    tokio::time::timeout(Duration::from_secs(20), client.cache().wait_resynced(1))
        .await
        .context("no sync within 20 s")??;
    Ok(client)
}

/// The client's cache holds exactly what a fresh full dump of the same
/// monitor holds.
async fn assert_matches_server(client: &Client, remotes: &str, spec: MonitorSpec) -> Result<()> {
    let fresh = synced(config(remotes, spec, None)?).await?;
    let (a, b) = (client.cache().snapshot(), fresh.cache().snapshot());
    for t in ["Logical_Switch", LSP] {
        if a.table(t) != b.table(t) {
            bail!(
                "{t}: the client holds {} rows, a fresh dump {}",
                a.table(t).len(),
                b.table(t).len()
            );
        }
    }
    Ok(())
}

/// A cluster with the ports, and a cache file written by a client that
/// synced it, saw one change of its own, and stopped.
async fn cluster_with_cache_file(
    spec: MonitorSpec,
) -> Result<(Cluster, tempfile::TempDir, PathBuf)> {
    let cluster = Cluster::start("ovn-nb.ovsschema")?;
    transact_cli(&cluster.remotes(), DB, &ports())?;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("state").join("OVN_Northbound.cache");
    let client = synced(config(&cluster.remotes(), spec, Some(&file))?).await?;
    client.transact(set_n(1, 1)).await?;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !client
        .cache()
        .snapshot()
        .table(LSP)
        .values()
        .any(|r| r.map_str("external_ids", "n") == Some("1"))
    {
        if std::time::Instant::now() > deadline {
            bail!("the client's own write never reached its cache");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(client.save_state().await?, "a synced cache was not written");
    assert!(
        !client.save_state().await?,
        "an unchanged cache was written again"
    );
    drop(client);
    Ok((cluster, dir, file))
}

#[tokio::test(flavor = "current_thread")]
async fn a_restart_resumes_from_the_cache_file_and_gets_only_the_changes() -> Result<()> {
    let (logs, _guard) = capture_logs();
    let (cluster, _dir, file) = cluster_with_cache_file(spec()).await?;
    let remotes = cluster.remotes();
    // While the agent is down: a port changes, one is added.
    transact_cli(&remotes, DB, &set_n(2, 2))?;
    transact_cli(&remotes, DB, &add_port("late"))?;

    // The file alone is never the truth: with no server answering, nothing
    // is published and no sync is signalled.
    let nowhere = format!("tcp:127.0.0.1:{}", free_port()?);
    let unanswered = Client::start(config(&nowhere, spec(), Some(&file))?);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(logs.take().contains("OVSDB cache file loaded"));
    assert!(unanswered.cache().snapshot().table(LSP).is_empty());
    assert_eq!(*unanswered.cache().resynced().borrow(), 0);
    drop(unanswered);

    let client = synced(config(&remotes, spec(), Some(&file))?).await?;
    assert_eq!(client.resumed_syncs(), 1, "the restart did not resume");
    assert!(client.resumed_at_start());
    // The modified port, the new one and its switch: not the 51 rows.
    assert!(
        client.last_sync_rows() <= 3,
        "the resume sent {} rows",
        client.last_sync_rows()
    );
    let log = logs.take();
    assert!(
        log.contains("resumed monitor from the cache file's transaction id"),
        "{log}"
    );
    assert_matches_server(&client, &remotes, spec()).await?;
    assert_eq!(client.cache().snapshot().table(LSP).len(), PORTS + 1);
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn a_restart_after_the_history_expired_takes_a_full_dump() -> Result<()> {
    let (logs, _guard) = capture_logs();
    let (cluster, _dir, file) = cluster_with_cache_file(spec()).await?;
    let remotes = cluster.remotes();
    // ovsdb-server keeps at most 100 transactions of history, and fewer
    // atoms than the database holds (ovsdb_txn_history_run): 150 go past
    // both.
    let writer = synced(config(&remotes, MonitorSpec::all(["NB_Global"]), None)?).await?;
    for i in 0..150 {
        writer.transact(set_n(i % PORTS, i + 10)).await?;
    }
    drop(writer);
    logs.take();

    let client = synced(config(&remotes, spec(), Some(&file))?).await?;
    assert_eq!(
        client.resumed_syncs(),
        0,
        "resumed past the server's history"
    );
    assert_eq!(client.last_sync_rows(), PORTS as u64 + 1, "not a full dump");
    let log = logs.take();
    assert!(
        log.contains("the server no longer has its transaction"),
        "{log}"
    );
    assert_matches_server(&client, &remotes, spec()).await?;
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn an_unusable_cache_file_takes_a_full_dump_and_says_why() -> Result<()> {
    let (logs, _guard) = capture_logs();
    let (cluster, _dir, file) = cluster_with_cache_file(spec()).await?;
    let remotes = cluster.remotes();
    let good = std::fs::read(&file)?;
    let loaded = cache_file::decode(&good, &KeyProjection::default())?;
    let rewritten = |edit: &dyn Fn(&mut cache_file::CacheHeader)| {
        let mut header = loaded.header.clone();
        edit(&mut header);
        cache_file::encode(&header, &loaded.snapshot)
    };
    let mut corrupt = good.clone();
    let at = corrupt.len() - 200;
    corrupt[at] ^= 0x01;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated", good[..good.len() - 300].to_vec(), "truncated"),
        ("corrupt", corrupt, "corrupt"),
        (
            "foreign",
            b"{\"not\": \"a cache\"}\n".to_vec(),
            "not an OVSDB cache file",
        ),
        (
            "another schema",
            rewritten(&|h| {
                let mut schema = (*h.schema).clone();
                schema["version"] = json!("0.0.1");
                h.schema = Arc::new(schema);
            }),
            "it was written with schema OVN_Northbound 0.0.1",
        ),
        (
            "another cluster",
            rewritten(&|h| h.cluster_id = Some("12345678-1234-4234-8234-123456789abc".into())),
            "it was written from cluster 12345678-1234-4234-8234-123456789abc",
        ),
    ];
    for (case, bytes, why) in cases {
        std::fs::File::create(&file)?.write_all(&bytes)?;
        logs.take();
        let client = synced(config(&remotes, spec(), Some(&file))?).await?;
        assert_eq!(client.resumed_syncs(), 0, "{case}: resumed");
        assert!(!client.resumed_at_start(), "{case}");
        assert_eq!(
            client.last_sync_rows(),
            PORTS as u64 + 1,
            "{case}: not a full dump"
        );
        let log = logs.take();
        let lines: Vec<&str> = log.lines().filter(|l| l.contains(why)).collect();
        assert_eq!(
            lines.len(),
            1,
            "{case}: expected one line saying {why:?}:\n{log}"
        );
        assert!(lines[0].contains("full dump"), "{case}: {}", lines[0]);
        assert_matches_server(&client, &remotes, spec()).await?;
    }
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn a_cache_filled_under_other_conditions_is_not_resumed() -> Result<()> {
    let (logs, _guard) = capture_logs();
    let (cluster, _dir, file) = cluster_with_cache_file(named("p1")).await?;
    let remotes = cluster.remotes();
    logs.take();
    // A resume would answer "nothing changed" and p2 would never arrive.
    let client = synced(config(&remotes, named("p2"), Some(&file))?).await?;
    assert_eq!(client.resumed_syncs(), 0);
    let names: Vec<String> = client
        .cache()
        .snapshot()
        .table(LSP)
        .values()
        .filter_map(|r| r.str("name").map(String::from))
        .collect();
    assert_eq!(names, ["p2"]);
    let log = logs.take();
    assert!(
        log.contains("it was filled with other monitor conditions"),
        "{log}"
    );
    assert_matches_server(&client, &remotes, named("p2")).await?;
    drop(client);

    // The same conditions as the file's: resumed.
    let client = synced(config(&remotes, named("p2"), Some(&file))?).await?;
    assert_eq!(client.resumed_syncs(), 0, "the p2 client wrote no file yet");
    assert!(client.save_state().await?);
    drop(client);
    let client = synced(config(&remotes, named("p2"), Some(&file))?).await?;
    assert_eq!(
        client.resumed_syncs(),
        1,
        "the same conditions did not resume"
    );
    Ok(())
}

async fn wait_for(what: &str, done: impl Fn() -> bool) -> Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        if std::time::Instant::now() > deadline {
            bail!("{what} within 10 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn the_cache_file_is_rewritten_every_interval_while_the_cache_changes() -> Result<()> {
    let cluster = Cluster::start("ovn-nb.ovsschema")?;
    let remotes = cluster.remotes();
    transact_cli(&remotes, DB, &ports())?;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("OVN_Northbound.cache");
    let mut cfg = config(&remotes, spec(), Some(&file))?;
    cfg.state_interval = Duration::from_millis(100);
    let client = synced(cfg).await?;
    let txn_in_file = || -> Result<String> {
        let loaded = cache_file::decode(&std::fs::read(&file)?, &KeyProjection::default())?;
        Ok(loaded.header.last_txn_id)
    };
    wait_for("no cache file written", || file.exists()).await?;
    let first = txn_in_file()?;
    client.transact(add_port("later")).await?;
    wait_for("the file never caught up with a write", || {
        txn_in_file().is_ok_and(|t| t != first)
    })
    .await?;
    let loaded = cache_file::decode(&std::fs::read(&file)?, &KeyProjection::default())?;
    assert_eq!(loaded.snapshot.table(LSP).len(), PORTS + 1);
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn a_cache_file_that_cannot_be_written_is_an_error_and_the_client_goes_on() -> Result<()> {
    let cluster = Cluster::start("ovn-nb.ovsschema")?;
    let remotes = cluster.remotes();
    transact_cli(&remotes, DB, &ports())?;
    let dir = tempfile::tempdir()?;
    // The state directory is a regular file: nothing can be created in it.
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, b"")?;
    let file = blocker.join("OVN_Northbound.cache");
    let client = synced(config(&remotes, spec(), Some(&file))?).await?;
    let e = client.save_state().await.unwrap_err();
    assert!(e.to_string().contains("not-a-dir"), "{e}");
    client.transact(add_port("after")).await?;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while client.cache().snapshot().table(LSP).len() != PORTS + 1 {
        if std::time::Instant::now() > deadline {
            bail!("the client stopped following after a failed write");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}
