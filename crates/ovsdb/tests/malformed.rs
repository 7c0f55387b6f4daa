//! A fake OVSDB server on a unix socket feeds the client broken input:
//! garbage, truncated JSON, a message of the wrong shape, an oversized
//! message, and hostile input aimed at memory (a long string, terminated
//! or not, deep nesting, a message past its size limit held whole or
//! streamed, a message trickled byte by byte, invalid UTF-8, a close
//! mid-message). Each must end the session with an error naming the limit,
//! the cache must never show a half-applied batch, and the client must
//! reconnect and end up in sync with the last, well-behaved connection. A
//! row of the wrong type, with a bad UUID or an invalid atom is skipped and
//! the rest syncs. A fake cluster member whose `_Server` row is behind what
//! the client saw is left for another. Never a panic.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{bail, Result};
use bytes::BytesMut;
use obgp_ovsdb::framing::JsonFramer;
use obgp_ovsdb::{Client, ClientConfig, Remote};
use obgp_ovsdb_data::MonitorSpec;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::codec::Decoder;

const A: &str = "aaaaaaaa-0000-4000-8000-000000000001";
const B: &str = "bbbbbbbb-0000-4000-8000-000000000002";
const C: &str = "cccccccc-0000-4000-8000-000000000003";
const X: &str = "eeeeeeee-0000-4000-8000-000000000004";

/// What one connection of the fake server does after answering
/// `get_schema`.
enum Script {
    /// Reply to monitor_cond with `dump`, then write `after` and close.
    DumpThen { dump: Value, after: Vec<u8> },
    /// Reply to get_schema with these bytes and close.
    BrokenSchemaReply(Vec<u8>),
    /// Reply with `dump` and stay connected.
    DumpAndStay { dump: Value },
    /// Reply with `dump`, write `after` and stay connected.
    DumpThenStay { dump: Value, after: Vec<u8> },
    /// Reply with `dump`, write `head`, then one space every 100 ms.
    DumpThenTrickle { dump: Value, head: Vec<u8> },
}

fn ls(uuid: &str, name: &str) -> (String, Value) {
    (uuid.to_string(), json!({"initial": {"name": name}}))
}

fn dump(rows: &[(String, Value)]) -> Value {
    let table: serde_json::Map<String, Value> = rows.iter().cloned().collect();
    json!({"Logical_Switch": table})
}

fn update2(body: Value) -> Vec<u8> {
    json!({"id": null, "method": "update2", "params": ["obgp-db", body]})
        .to_string()
        .into_bytes()
}

async fn read_request(
    sock: &mut UnixStream,
    framer: &mut JsonFramer,
    buf: &mut BytesMut,
) -> Result<Value> {
    loop {
        if let Some(frame) = framer.decode(buf)? {
            return Ok(serde_json::from_slice(&frame)?);
        }
        if sock.read_buf(buf).await? == 0 {
            bail!("client closed");
        }
    }
}

async fn serve(sock: UnixStream, script: Script) -> Result<()> {
    serve_as(sock, script, None).await
}

/// The `_Server` database of a fake cluster member: the columns of its
/// `Database` row for OVN_Northbound.
struct Member {
    database_row: Value,
}

/// The part of `_Server`'s schema the client reads.
fn server_schema() -> Value {
    json!({"name": "_Server", "version": "1.2.0", "tables": {"Database": {"columns": {
        "name": {"type": "string"},
        "model": {"type": {"key": {"type": "string", "enum": ["set", ["standalone", "clustered", "relay"]]}}},
        "connected": {"type": "boolean"},
        "leader": {"type": "boolean"},
        "cid": {"type": {"key": {"type": "uuid"}, "min": 0, "max": 1}},
        "index": {"type": {"key": {"type": "integer"}, "min": 0, "max": 1}}
    }, "isRoot": true}}})
}

/// Serves `script`; with `member`, also a `_Server` database saying what
/// the member's `Database` row says.
async fn serve_as(mut sock: UnixStream, script: Script, member: Option<Member>) -> Result<()> {
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/schemas/ovn-nb.ovsschema"
    ))?)?;
    let mut framer = JsonFramer::default();
    let mut buf = BytesMut::new();
    loop {
        let req = read_request(&mut sock, &mut framer, &mut buf).await?;
        let id = req["id"].clone();
        let reply = match (req["method"].as_str(), &script) {
            (Some("get_schema"), Script::BrokenSchemaReply(bytes)) => {
                sock.write_all(bytes).await?;
                return Ok(());
            }
            (Some("get_schema"), _) if req["params"][0] == "OVN_Northbound" => {
                json!({"id": id, "result": schema, "error": null})
            }
            (Some("get_schema"), _) if req["params"][0] == "_Server" && member.is_some() => {
                json!({"id": id, "result": server_schema(), "error": null})
            }
            (Some("monitor_cond"), _) if req["params"][0] == "_Server" => {
                let row = member.as_ref().map(|m| m.database_row.clone());
                let rows = json!({"dddddddd-0000-4000-8000-00000000000d": {"initial": row}});
                json!({"id": id, "result": {"Database": rows}, "error": null})
            }
            (Some("get_schema"), _) => {
                json!({"id": id, "result": null, "error": "unknown database"})
            }
            (Some("monitor_cond_since"), _) => {
                json!({"id": id, "result": null, "error": "unknown method"})
            }
            (Some("monitor_cond"), Script::DumpThen { dump, after }) => {
                let r = json!({"id": id, "result": dump, "error": null});
                sock.write_all(r.to_string().as_bytes()).await?;
                sock.write_all(after).await?;
                // Give the client time to read before the close.
                tokio::time::sleep(Duration::from_millis(50)).await;
                return Ok(());
            }
            (Some("monitor_cond"), Script::DumpAndStay { dump }) => {
                json!({"id": id, "result": dump, "error": null})
            }
            (Some("monitor_cond"), Script::DumpThenStay { dump, after }) => {
                let r = json!({"id": id, "result": dump, "error": null});
                sock.write_all(r.to_string().as_bytes()).await?;
                sock.write_all(after).await?;
                continue;
            }
            (Some("monitor_cond"), Script::DumpThenTrickle { dump, head }) => {
                let r = json!({"id": id, "result": dump, "error": null});
                sock.write_all(r.to_string().as_bytes()).await?;
                sock.write_all(head).await?;
                loop {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    sock.write_all(b" ").await?;
                }
            }
            (Some("echo"), _) => json!({"id": id, "result": req["params"], "error": null}),
            // A server that never commits: transactions go unanswered.
            (Some("transact"), Script::DumpAndStay { .. }) => continue,
            (m, _) => json!({"id": id, "result": null, "error": format!("unexpected {m:?}")}),
        };
        sock.write_all(reply.to_string().as_bytes()).await?;
    }
}

fn names(client: &Client) -> BTreeSet<String> {
    client
        .cache()
        .snapshot()
        .table("Logical_Switch")
        .values()
        .filter_map(|r| r.str("name").map(String::from))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_server_input_drops_the_session_and_the_client_recovers() -> Result<()> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("fake.sock");
    let listener = UnixListener::bind(&path)?;
    let big = "x".repeat(200 * 1024);
    let scripts = vec![
        // A batch whose second row is not JSON: the first row (x) must not
        // appear either.
        Script::DumpThen {
            dump: dump(&[ls(A, "a")]),
            after: String::from_utf8(update2(json!({"Logical_Switch": {
                X: {"insert": {"name": "x"}},
                A: {"modify": {"name": "BROKEN"}}
            }})))?
            .replace("\"BROKEN\"", "tru")
            .into_bytes(),
        },
        Script::BrokenSchemaReply(b"{\"id\": 1, \"result\": nonsense}".to_vec()),
        Script::DumpThen {
            dump: dump(&[ls(A, "a"), ls(B, "b")]),
            after:
                b"{\"id\":null,\"method\":\"update2\",\"params\":[\"obgp-db\",{\"Logical_Switch\""
                    .to_vec(),
        },
        // A dump of the wrong shape.
        Script::DumpThen {
            dump: json!({"Logical_Switch": {A: [1]}, "Bogus": 7}),
            after: Vec::new(),
        },
        // A table's updates that are not an object of rows.
        Script::DumpThen {
            dump: dump(&[ls(A, "a")]),
            after: update2(json!({"Logical_Switch": [X]})),
        },
        Script::DumpThen {
            dump: dump(&[ls(A, "a")]),
            after: update2(json!({"Logical_Switch": {X: {"insert": {"name": big}}}})),
        },
        Script::DumpThen {
            dump: dump(&[ls(A, "a")]),
            after: b"]]]garbage".to_vec(),
        },
        Script::DumpThen {
            dump: dump(&[ls(A, "a")]),
            after: update2(json!({"Logical_Switch": {C: {"modify": {"name": "c"}}}})),
        },
        Script::DumpAndStay {
            dump: dump(&[ls(C, "c")]),
        },
    ];
    let server = tokio::spawn(async move {
        let mut handled = 0;
        for script in scripts {
            let (sock, _) = listener.accept().await?;
            // Each connection's outcome is the client's business; the fake
            // only follows its script.
            let _ = serve(sock, script).await;
            handled += 1;
        }
        // Keep the listener alive for the final connection.
        tokio::time::sleep(Duration::from_secs(3600)).await;
        anyhow::Ok(handled)
    });

    let mut config = ClientConfig::new(
        vec![Remote::Unix(path.clone())],
        "OVN_Northbound",
        MonitorSpec::all(["Logical_Switch"]),
    );
    config.backoff = (Duration::from_millis(10), Duration::from_millis(50));
    config.session.max_message = 64 * 1024;
    let client = Client::start(config);

    // Watch every published snapshot: none may contain the half-applied
    // row x.
    let mut snapshots = client.cache().watch();
    let watcher = tokio::spawn(async move {
        let mut seen = Vec::new();
        while snapshots.changed().await.is_ok() {
            let names: BTreeSet<String> = snapshots
                .borrow_and_update()
                .table("Logical_Switch")
                .values()
                .filter_map(|r| r.str("name").map(String::from))
                .collect();
            seen.push(names);
        }
        seen
    });

    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if names(&client) == BTreeSet::from(["c".to_string()]) && client.connected_to().is_some() {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("client never recovered: cache {:?}", names(&client));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Scripts 1, 3, 5, 6, 7, 8 and 9 got as far as a synced cache.
    assert_eq!(*client.cache().resynced().borrow(), 7);
    assert_eq!(client.skipped_rows(), 0, "no row was merely malformed");
    drop(client);
    let seen = watcher.await?;
    assert!(
        seen.iter().all(|s| !s.contains("x")),
        "half-applied batch published: {seen:?}"
    );
    assert!(
        seen.iter().any(|s| s.contains("b")),
        "the good dump of script 3 was published"
    );
    server.abort();
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_client_closes_its_connection() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("fake.sock");
    let listener = UnixListener::bind(&path)?;
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (sock, _) = listener.accept().await?;
        // Serves schema and dump, then returns when the client hangs up.
        let r = serve(
            sock,
            Script::DumpAndStay {
                dump: dump(&[ls(A, "a")]),
            },
        )
        .await;
        let _ = closed_tx.send(r.err().map(|e| e.to_string()));
        anyhow::Ok(())
    });
    let client = Client::start(ClientConfig::new(
        vec![Remote::Unix(path.clone())],
        "OVN_Northbound",
        MonitorSpec::all(["Logical_Switch"]),
    ));
    tokio::time::timeout(Duration::from_secs(10), client.cache().wait_resynced(1)).await??;
    let reader = client.cache().clone();
    drop(client);
    let why = tokio::time::timeout(Duration::from_secs(5), closed_rx).await??;
    assert_eq!(why.as_deref(), Some("client closed"));
    // Readers keep the last snapshot after the client is gone.
    assert_eq!(reader.snapshot().table("Logical_Switch").len(), 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_transaction_times_out_without_dropping_the_session() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("fake.sock");
    let listener = UnixListener::bind(&path)?;
    tokio::spawn(async move {
        let (sock, _) = listener.accept().await?;
        serve(
            sock,
            Script::DumpAndStay {
                dump: dump(&[ls(A, "a")]),
            },
        )
        .await
    });
    let mut config = ClientConfig::new(
        vec![Remote::Unix(path.clone())],
        "OVN_Northbound",
        MonitorSpec::all(["Logical_Switch"]),
    );
    config.transact_timeout = Duration::from_millis(300);
    let client = Client::start(config);
    tokio::time::timeout(Duration::from_secs(10), client.cache().wait_resynced(1)).await??;
    let err = client
        .transact(vec![
            json!({"op": "insert", "table": "Logical_Switch", "row": {}}),
        ])
        .await
        .unwrap_err();
    assert!(matches!(err, obgp_ovsdb::Error::Timeout(_)), "{err}");
    assert!(
        client.connected_to().is_some(),
        "a slow transaction is not a dead session"
    );
    Ok(())
}

/// Serves `script()` to every connection; counts them.
fn serve_every_connection(
    listener: UnixListener,
    script: impl Fn() -> Script + Send + 'static,
) -> (
    tokio::task::JoinHandle<()>,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = connections.clone();
    let task = tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let script = script();
            tokio::spawn(async move {
                let _ = serve(sock, script).await;
            });
        }
    });
    (task, connections)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_row_is_skipped_by_uuid_and_the_rest_of_the_database_syncs() -> Result<()> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("fake.sock");
    let listener = UnixListener::bind(&path)?;
    // The dump: a good row, one with a wrong type, one keyed by a bad
    // UUID, one with an invalid atom. The update after it: a good insert,
    // a bad modify of the good row, an unknown column.
    let dump = json!({"Logical_Switch": {
        A: {"initial": {"name": "a"}},
        B: {"initial": {"name": 5}},
        "not-a-uuid": {"initial": {"name": "n"}},
        C: {"initial": {"name": ["uuid", "zz"]}},
    }});
    let after = update2(json!({"Logical_Switch": {
        X: {"insert": {"name": "x"}},
        A: {"modify": {"name": ["set", [1, 2]]}},
        "dddddddd-0000-4000-8000-000000000005": {"insert": {"no_such_column": 1}},
    }}));
    let (server, connections) = serve_every_connection(listener, move || Script::DumpThenStay {
        dump: dump.clone(),
        after: after.clone(),
    });
    let client = Client::start(ClientConfig::new(
        vec![Remote::Unix(path.clone())],
        "OVN_Northbound",
        MonitorSpec::all(["Logical_Switch"]),
    ));
    tokio::time::timeout(Duration::from_secs(10), client.cache().wait_resynced(1)).await??;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while names(&client) != BTreeSet::from(["a".to_string(), "x".to_string()]) {
        if tokio::time::Instant::now() > deadline {
            bail!("good rows not synced: {:?}", names(&client));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while client.skipped_rows() < 5 {
        if tokio::time::Instant::now() > deadline {
            bail!("skipped {} rows, want 5", client.skipped_rows());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The session stayed up: one connection, one sync, nothing dropped.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(client.skipped_rows(), 5);
    assert!(client.connected_to().is_some());
    assert_eq!(*client.cache().resynced().borrow(), 1);
    assert_eq!(connections.load(std::sync::atomic::Ordering::Relaxed), 1);
    server.abort();
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_right_after_every_sync_backs_off_instead_of_looping() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("fake.sock");
    let listener = UnixListener::bind(&path)?;
    // Every connection syncs, then gets an update that is not JSON.
    let (server, connections) = serve_every_connection(listener, || {
        Script::DumpThenStay {
        dump: dump(&[ls(A, "a")]),
        after: b"{\"id\":null,\"method\":\"update2\",\"params\":[\"obgp-db\",{\"Logical_Switch\": tru}]}".to_vec(),
    }
    });
    let mut config = ClientConfig::new(
        vec![Remote::Unix(path.clone())],
        "OVN_Northbound",
        MonitorSpec::all(["Logical_Switch"]),
    );
    config.backoff = (Duration::from_millis(50), Duration::from_secs(8));
    let client = Client::start(config);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let n = connections.load(std::sync::atomic::Ordering::Relaxed);
    // Delays of at least 25, 50, 100, 200, 400, 800, 1600 ms (jitter halves
    // them at worst): at most 8 connections in 3 s. Starting over after
    // every sync, the client would reconnect every 25-50 ms: 60 or more.
    assert!((3..=8).contains(&n), "{n} connections in 3 s");
    assert_eq!(names(&client), BTreeSet::from(["a".to_string()]));
    server.abort();
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_member_behind_the_index_already_seen_is_left_for_another() -> Result<()> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let dir = tempfile::tempdir()?;
    let fresh_path = dir.path().join("fresh.sock");
    let stale_path = dir.path().join("stale.sock");
    let (fresh, stale) = (
        UnixListener::bind(&fresh_path)?,
        UnixListener::bind(&stale_path)?,
    );
    let row = |index: i64, name: &str| Member {
        database_row: json!({"name": "OVN_Northbound", "model": "clustered",
            "connected": true, "index": index,
            "cid": ["uuid", "cccccccc-0000-4000-8000-00000000000c"], "leader": name == "fresh"}),
    };
    // The fresh member (index 120): the first connection syncs and closes,
    // the second stays. The stale one (index 100, connected, a different
    // content) must never be read.
    let fresh_server = tokio::spawn(async move {
        let mut n = 0;
        while let Ok((sock, _)) = fresh.accept().await {
            n += 1;
            let script = if n == 1 {
                Script::DumpThen {
                    dump: dump(&[ls(A, "fresh")]),
                    after: Vec::new(),
                }
            } else {
                Script::DumpAndStay {
                    dump: dump(&[ls(A, "fresh"), ls(B, "fresh-2")]),
                }
            };
            tokio::spawn(serve_as(sock, script, Some(row(120, "fresh"))));
        }
    });
    let stale_tries = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tries = stale_tries.clone();
    let stale_server = tokio::spawn(async move {
        while let Ok((sock, _)) = stale.accept().await {
            tries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let script = Script::DumpAndStay {
                dump: dump(&[ls(C, "stale")]),
            };
            tokio::spawn(serve_as(sock, script, Some(row(100, "stale"))));
        }
    });
    let mut config = ClientConfig::new(
        vec![Remote::Unix(fresh_path), Remote::Unix(stale_path)],
        "OVN_Northbound",
        MonitorSpec::all(["Logical_Switch"]),
    );
    config.backoff = (Duration::from_millis(10), Duration::from_millis(50));
    let client = Client::start(config);
    let mut snapshots = client.cache().watch();
    let watcher = tokio::spawn(async move {
        let mut seen = BTreeSet::new();
        while snapshots.changed().await.is_ok() {
            seen.extend(
                snapshots
                    .borrow_and_update()
                    .table("Logical_Switch")
                    .values()
                    .filter_map(|r| r.str("name").map(String::from)),
            );
        }
        seen
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while names(&client) != BTreeSet::from(["fresh".to_string(), "fresh-2".to_string()]) {
        if tokio::time::Instant::now() > deadline {
            bail!("never back on the fresh member: {:?}", names(&client));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        stale_tries.load(std::sync::atomic::Ordering::Relaxed) >= 1,
        "the stale member was tried"
    );
    assert_eq!(*client.cache().resynced().borrow(), 2);
    drop(client);
    let seen = watcher.await?;
    assert!(!seen.contains("stale"), "read the stale member: {seen:?}");
    fresh_server.abort();
    stale_server.abort();
    Ok(())
}

/// The limits of the hostile-server tests: small, so that each case is
/// quick, in the same proportions as the defaults.
fn small_limits(config: &mut obgp_ovsdb::SessionConfig) {
    config.max_string = 64 * 1024;
    config.max_message = 64 * 1024;
    config.stream_above = Some(16 * 1024);
    config.max_streamed = 256 * 1024;
    config.max_decoded = 512 * 1024;
    config.message_deadline = Some(Duration::from_secs(1));
}

/// An update2 inserting `n` Logical_Switch rows named `n0`, `n1`...
fn many_rows(n: usize) -> Vec<u8> {
    let rows: serde_json::Map<String, Value> = (0..n)
        .map(|i| {
            (
                format!("{i:08x}-1111-4111-8111-111111111111"),
                json!({"insert": {"name": format!("n{i}")}}),
            )
        })
        .collect();
    update2(json!({ "Logical_Switch": rows }))
}

/// Each hostile case, and the words its error must contain.
fn hostile_cases() -> Vec<(&'static str, Script, &'static str)> {
    let head = br#"{"id":null,"method":"update2","params":["obgp-db",{"Logical_Switch":{"eeeeeeee-0000-4000-8000-000000000004":{"insert":{"name":""#;
    let a = || dump(&[ls(A, "a")]);
    let mut unterminated = head.to_vec();
    unterminated.extend(std::iter::repeat_n(b'x', 1 << 20));
    let mut deep = br#"{"id":null,"method":"update2","params":["obgp-db","#.to_vec();
    deep.extend(std::iter::repeat_n(b'[', 100_000));
    let mut invalid_utf8 = head.to_vec();
    invalid_utf8.extend_from_slice(b"\xff\xfe\"}}}}]}");
    let mut cut = many_rows(3000);
    cut.truncate(cut.len() / 2);
    // 12 000 atoms of 2 bytes each on the wire (24 KiB a row; 8 rows are
    // within max_streamed, and more than one read of the client, so the
    // update is streamed), 24 bytes each decoded: 2.3 MB.
    let ints: Vec<u32> = (0..12_000).map(|i| i % 10).collect();
    let int_rows: serde_json::Map<String, Value> = (0..8)
        .map(|i| {
            (
                format!("{i:08x}-5555-4555-8555-555555555555"),
                json!({"insert": {"ports": ["set", ints]}}),
            )
        })
        .collect();
    let mut held_whole = br#"{"id":99,"result":[""#.to_vec();
    held_whole.extend(std::iter::repeat_n(b"\",\"".as_slice(), 40_000).flatten());
    held_whole.extend_from_slice(b"\"]}");
    vec![
        (
            "a terminated string past max_string",
            Script::DumpThenStay {
                dump: a(),
                after: update2(
                    json!({"Logical_Switch": {X: {"insert": {"name": "x".repeat(200 * 1024)}}}}),
                ),
            },
            "65536-byte limit (max_string)",
        ),
        (
            "an unterminated string",
            Script::DumpThenStay {
                dump: a(),
                after: unterminated,
            },
            "65536-byte limit (max_string)",
        ),
        (
            "100 000 opening brackets",
            Script::DumpThenStay {
                dump: a(),
                after: deep,
            },
            "limit of 64 (max_depth)",
        ),
        (
            "a reply held whole past max_message",
            Script::DumpThenStay {
                dump: a(),
                after: held_whole,
            },
            "65536-byte limit (max_message)",
        ),
        (
            "an update past max_streamed",
            Script::DumpThenStay {
                dump: a(),
                after: many_rows(10_000),
            },
            "262144-byte limit (max_streamed)",
        ),
        (
            "rows decoding to more than max_decoded (small integers)",
            Script::DumpThenStay {
                dump: a(),
                after: update2(json!({ "Logical_Switch": int_rows })),
            },
            "524288 bytes (max_decoded)",
        ),
        (
            "a message trickled byte by byte",
            Script::DumpThenTrickle {
                dump: a(),
                head: head.to_vec(),
            },
            "message_deadline",
        ),
        (
            "invalid UTF-8 in a string",
            Script::DumpThenStay {
                dump: a(),
                after: invalid_utf8,
            },
            "malformed message",
        ),
        (
            "a close in the middle of a streamed update",
            Script::DumpThen {
                dump: a(),
                after: cut,
            },
            "in the middle of a message",
        ),
    ]
}

fn hostile_config(path: &std::path::Path) -> ClientConfig {
    let mut config = ClientConfig::new(
        vec![Remote::Unix(path.to_path_buf())],
        "OVN_Northbound",
        MonitorSpec::all(["Logical_Switch"]),
    );
    config.backoff = (Duration::from_millis(10), Duration::from_millis(50));
    small_limits(&mut config.session);
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_server_is_dropped_at_each_limit_with_an_error_naming_it() -> Result<()> {
    for (case, script, want) in hostile_cases() {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("fake.sock");
        let listener = UnixListener::bind(&path)?;
        let server = tokio::spawn(async move {
            let (sock, _) = listener.accept().await?;
            serve(sock, script).await
        });
        let config = hostile_config(&path);
        let (session, mut notes) =
            obgp_ovsdb::Session::connect(&config.remotes[0], None, config.session.clone()).await?;
        let schema = session.get_schema("OVN_Northbound").await?;
        let started = tokio::time::Instant::now();
        session
            .monitor_cond(
                "OVN_Northbound",
                &json!("obgp-db"),
                &config.monitor,
                &schema,
            )
            .await?;
        let why = loop {
            match tokio::time::timeout(Duration::from_secs(10), notes.recv()).await? {
                Some(obgp_ovsdb::rpc::session::Notification::Closed(e)) => break e.to_string(),
                Some(_) => continue,
                None => bail!("{case}: notifications ended without a reason"),
            }
        };
        assert!(why.contains(want), "{case}: {why}");
        // Dropped at the limit, not when the server gave up.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{case}: took {:?}",
            started.elapsed()
        );
        server.abort();
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_every_hostile_case_the_client_reconnects_and_a_large_legit_update_still_loads(
) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("fake.sock");
    let listener = UnixListener::bind(&path)?;
    let mut scripts: Vec<Script> = hostile_cases().into_iter().map(|(_, s, _)| s).collect();
    let n_hostile = scripts.len();
    // Then a good server whose first update is larger than stream_above
    // (decoded while it arrives) but within max_streamed.
    scripts.push(Script::DumpThenStay {
        dump: dump(&[ls(C, "c")]),
        after: many_rows(2000),
    });
    let server = tokio::spawn(async move {
        for script in scripts {
            let (sock, _) = listener.accept().await?;
            // A hostile connection ends when the client drops it; serve
            // each in its own task so the next can be accepted.
            tokio::spawn(serve(sock, script));
        }
        tokio::time::sleep(Duration::from_secs(3600)).await;
        anyhow::Ok(())
    });
    let client = Client::start(hostile_config(&path));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let snap = client.cache().snapshot();
        let rows = snap.table("Logical_Switch");
        if rows.len() == 2001 && names(&client).contains("c") {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            bail!(
                "client never loaded the good server: {} rows, resynced {}",
                rows.len(),
                *client.cache().resynced().borrow()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Every hostile connection got as far as a synced cache, then was
    // dropped; the good one synced once more.
    assert_eq!(*client.cache().resynced().borrow() as usize, n_hostile + 1);
    assert!(!names(&client).contains("x"), "a hostile row was applied");
    server.abort();
    Ok(())
}
