//! The session against a scripted server on an in-memory stream: routing,
//! echo, the inactivity probe, streamed and buffered replies.

use super::*;
use tokio::io::{duplex, AsyncBufReadExt, BufReader};

/// A fake server on the other end of an in-memory pipe.
fn pair(
    config: SessionConfig,
) -> (
    Session,
    mpsc::Receiver<Notification>,
    tokio::io::DuplexStream,
) {
    let (client, server) = duplex(1 << 20);
    let (s, n) = Session::start(Box::new(client), "test".into(), config);
    (s, n, server)
}

#[tokio::test]
async fn responses_are_matched_to_requests_by_id() {
    let (session, _notes, server) = pair(SessionConfig::default());
    let (rd, mut wr) = tokio::io::split(server);
    let server = tokio::spawn(async move {
        let mut lines = BufReader::new(rd);
        let mut got = Vec::new();
        // Our framing does not need newlines, but reading until '}' is
        // enough here: requests have no nested braces in strings.
        for _ in 0..2 {
            let mut req = Vec::new();
            lines.read_until(b'}', &mut req).await.unwrap();
            let v: Value = serde_json::from_slice(&req).unwrap();
            got.push(v);
        }
        // Answer out of order, the second one first, glued together.
        let a = json!({"id": got[1]["id"], "result": ["second"], "error": null});
        let b = json!({"id": got[0]["id"], "result": ["first"], "error": null});
        wr.write_all(format!("{a}{b}").as_bytes()).await.unwrap();
        wr
    });
    let (r1, r2) = tokio::join!(session.list_dbs(), async {
        tokio::task::yield_now().await;
        session.list_dbs().await
    });
    assert_eq!(r1.unwrap(), ["first"]);
    assert_eq!(r2.unwrap(), ["second"]);
    drop(server.await.unwrap());
}

/// A monitor reply of `rows` ports, each with a kept and a dropped key;
/// row `bad_row` has a map pair without a value.
fn big_reply(id: &Value, rows: usize, bad_row: Option<usize>) -> String {
    let ports: serde_json::Map<String, Value> = (0..rows)
        .map(|i| {
            let kept = if bad_row == Some(i) {
                json!(["kept"])
            } else {
                json!(["kept", format!("k{i}")])
            };
            (
                format!("{i:08x}-2222-4222-8222-222222222222"),
                json!({"initial": {"name": format!("p{i}"), "up": true,
                    "external_ids": ["map", [kept, ["dropped", "x\\\"}y"]]]}}),
            )
        })
        .collect();
    json!({"id": id, "result": {"Logical_Switch_Port": ports}, "error": null}).to_string()
}

type ServerHalves = (
    BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    tokio::io::WriteHalf<tokio::io::DuplexStream>,
);

/// Serves one request with `reply(id)`, written in small pieces.
fn serve_one(
    server: tokio::io::DuplexStream,
    reply: impl FnOnce(&Value) -> String + Send + 'static,
) -> tokio::task::JoinHandle<ServerHalves> {
    tokio::spawn(async move {
        let (rd, mut wr) = tokio::io::split(server);
        let mut lines = BufReader::new(rd);
        // The request's params hold nested objects: frame it properly.
        let mut framer = JsonFramer::default();
        let mut buf = BytesMut::new();
        let frame = loop {
            let mut part = Vec::new();
            lines.read_until(b'}', &mut part).await.unwrap();
            buf.extend_from_slice(&part);
            if let Some(f) = framer.decode(&mut buf).unwrap() {
                break f;
            }
        };
        let v: Value = serde_json::from_slice(&frame).unwrap();
        let text = reply(&v["id"]);
        for piece in text.as_bytes().chunks(97) {
            wr.write_all(piece).await.unwrap();
            tokio::task::yield_now().await;
        }
        (lines, wr)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_reply_is_decoded_while_it_arrives_like_a_buffered_one() {
    let projection = KeyProjection::default().keep("Logical_Switch_Port", "external_ids", ["kept"]);
    let want: obgp_ovsdb_data::wire::TableUpdates = {
        let v: Value = serde_json::from_str(&big_reply(&json!(1), 300, None)).unwrap();
        obgp_ovsdb_data::wire::decode_table_updates(v["result"].to_string().as_bytes(), &projection)
            .unwrap()
    };
    for stream_above in [Some(256), None] {
        let config = SessionConfig {
            stream_above,
            ..SessionConfig::default()
        };
        let (session, _notes, server) = pair(config);
        let server = serve_one(server, |id| big_reply(id, 300, None));
        let got: obgp_ovsdb_data::wire::TableUpdates = session
            .call_streamed("monitor_cond", json!([{}]), &projection)
            .await
            .unwrap();
        assert_eq!(got, want);
        let (_, ids) = got.0[0].rows[0]
            .columns
            .iter()
            .find(|(c, _)| c.as_str() == "external_ids")
            .unwrap();
        assert_eq!(ids.pairs().len(), 1, "the dropped key was kept: {ids:?}");
        assert_eq!(
            session.streamed_replies(),
            u64::from(stream_above.is_some())
        );
        // The session goes on: a small reply to a streamed call too.
        let server = server.await.unwrap();
        let server = serve_one(server.0.into_inner().unsplit(server.1), |id| {
            json!({"id": id, "result": {"NB_Global": {}}, "error": null}).to_string()
        });
        let small: obgp_ovsdb_data::wire::TableUpdates = session
            .call_streamed("monitor_cond", json!([{}]), &projection)
            .await
            .unwrap();
        assert_eq!(small.row_count(), 0);
        drop(server.await.unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_reply_that_is_not_json_is_an_error_naming_the_row_and_ends_the_session() {
    let config = SessionConfig {
        stream_above: Some(256),
        ..SessionConfig::default()
    };
    let (session, mut notes, server) = pair(config);
    let _server = serve_one(server, |id| {
        big_reply(id, 300, None).replace("\"k250\"", "tru")
    });
    let err = session
        .call_streamed::<obgp_ovsdb_data::wire::TableUpdates>(
            "monitor_cond",
            json!([{}]),
            &KeyProjection::default(),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("row 000000fa-2222-4222-8222-222222222222") && err.contains("expected ident"),
        "{err}"
    );
    assert_eq!(session.streamed_replies(), 1);
    match notes.recv().await {
        Some(Notification::Closed(e)) => {
            assert!(e.to_string().contains("expected ident"), "{e}")
        }
        other => panic!("session not closed: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_row_of_a_streamed_reply_is_skipped_by_uuid_and_the_session_goes_on() {
    let config = SessionConfig {
        stream_above: Some(256),
        ..SessionConfig::default()
    };
    let (session, _notes, server) = pair(config);
    let _server = serve_one(server, |id| big_reply(id, 300, Some(250)));
    let updates = session
        .call_streamed::<obgp_ovsdb_data::wire::TableUpdates>(
            "monitor_cond",
            json!([{}]),
            &KeyProjection::default(),
        )
        .await
        .unwrap();
    assert_eq!(updates.row_count(), 299);
    let skipped: Vec<_> = updates.skipped().collect();
    assert_eq!(skipped.len(), 1);
    assert_eq!(
        skipped[0].uuid.map(|u| u.to_string()).as_deref(),
        Some("000000fa-2222-4222-8222-222222222222")
    );
    assert!(
        skipped[0].reason.contains("without value"),
        "{}",
        skipped[0]
    );
    assert!(!session.is_closed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_in_the_middle_of_a_streamed_reply_fails_the_call() {
    let config = SessionConfig {
        stream_above: Some(256),
        ..SessionConfig::default()
    };
    let (session, mut notes, server) = pair(config);
    let server = serve_one(server, |id| {
        let whole = big_reply(id, 300, None);
        whole[..whole.len() / 2].to_string()
    });
    let call = tokio::spawn({
        let session = session.clone();
        async move {
            session
                .call_streamed::<obgp_ovsdb_data::wire::TableUpdates>(
                    "monitor_cond",
                    json!([{}]),
                    &KeyProjection::default(),
                )
                .await
        }
    });
    drop(server.await.unwrap()); // the server goes away mid-reply
    let err = call.await.unwrap().unwrap_err();
    assert!(
        err.to_string().contains("in the middle of a message"),
        "{err}"
    );
    assert_eq!(session.streamed_replies(), 1);
    assert!(matches!(notes.recv().await, Some(Notification::Closed(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_message_that_is_not_the_awaited_reply_ends_the_session() {
    let config = SessionConfig {
        stream_above: Some(256),
        ..SessionConfig::default()
    };
    let (session, mut notes, server) = pair(config);
    let _server = serve_one(server, |_| big_reply(&json!(777), 300, None));
    let err = session
        .call_streamed::<obgp_ovsdb_data::wire::TableUpdates>(
            "monitor_cond",
            json!([{}]),
            &KeyProjection::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Disconnected(_)), "{err}");
    match notes.recv().await {
        Some(Notification::Closed(e)) => assert!(e.to_string().contains("id 777"), "{e}"),
        other => panic!("session not closed: {other:?}"),
    }
}

#[tokio::test]
async fn server_echo_is_answered_and_notifications_forwarded() {
    let (_session, mut notes, mut server) = pair(SessionConfig::default());
    server
        .write_all(br#"{"method":"echo","params":["x"],"id":"e1"}{"method":"update2","params":[null,{}],"id":null}"#)
        .await
        .unwrap();
    let mut buf = vec![0u8; 256];
    let n = server.read(&mut buf).await.unwrap();
    let reply: Value = serde_json::from_slice(&buf[..n]).unwrap();
    assert_eq!(reply, json!({"id": "e1", "result": ["x"], "error": null}));
    match notes.recv().await.unwrap() {
        Notification::Call { method, .. } => assert_eq!(method, "update2"),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn garbage_closes_the_session_with_an_error() {
    let (session, mut notes, mut server) = pair(SessionConfig::default());
    server.write_all(b"{\"id\": nonsense}").await.unwrap();
    match notes.recv().await.unwrap() {
        Notification::Closed(Error::Protocol(msg)) => {
            assert!(msg.contains("nonsense"), "{msg}")
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(
        session.list_dbs().await,
        Err(Error::SessionClosed)
    ));
}

#[tokio::test]
async fn rpc_errors_name_the_method() {
    let (session, _notes, mut server) = pair(SessionConfig::default());
    let call = tokio::spawn(async move { session.get_schema("Nope").await });
    let mut buf = vec![0u8; 256];
    let n = server.read(&mut buf).await.unwrap();
    let req: Value = serde_json::from_slice(&buf[..n]).unwrap();
    let reply = json!({"id": req["id"], "result": null, "error": "unknown database"});
    server
        .write_all(reply.to_string().as_bytes())
        .await
        .unwrap();
    let err = call.await.unwrap().unwrap_err().to_string();
    assert!(
        err.contains("get_schema") && err.contains("unknown database"),
        "{err}"
    );
}

#[tokio::test]
async fn tcp_ipv6_remote_connects_and_talks() {
    // Skip quietly only if this host has no IPv6 loopback at all.
    let Ok(listener) = tokio::net::TcpListener::bind("[::1]:0").await else {
        eprintln!("no IPv6 loopback on this host");
        return;
    };
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 256];
        let n = sock.read(&mut buf).await.unwrap();
        let req: Value = serde_json::from_slice(&buf[..n]).unwrap();
        let reply = json!({"id": req["id"], "result": ["OVN_Northbound"], "error": null});
        sock.write_all(reply.to_string().as_bytes()).await.unwrap();
        sock
    });
    let remote: Remote = format!("tcp:[::1]:{port}").parse().unwrap();
    let (session, _notes) = Session::connect(&remote, None, SessionConfig::default())
        .await
        .unwrap();
    assert_eq!(session.list_dbs().await.unwrap(), ["OVN_Northbound"]);
    drop(server.await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn silent_server_is_probed_then_dropped() {
    let config = SessionConfig {
        probe_interval: Some(Duration::from_secs(5)),
        ..SessionConfig::default()
    };
    let (_session, mut notes, mut server) = pair(config);
    let mut buf = vec![0u8; 256];
    // After one idle interval we send an echo.
    let n = server.read(&mut buf).await.unwrap();
    let probe: Value = serde_json::from_slice(&buf[..n]).unwrap();
    assert_eq!(probe["method"], "echo");
    // Silence for another interval: the connection is dropped.
    match notes.recv().await.unwrap() {
        Notification::Closed(Error::Inactive(_)) => {}
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn any_bytes_from_the_server_count_as_activity() {
    let config = SessionConfig {
        probe_interval: Some(Duration::from_secs(5)),
        ..SessionConfig::default()
    };
    let (_session, mut notes, mut server) = pair(config);
    // A message trickling in over 20 s in pieces never trips the probe.
    server.write_all(b"{\"method\":\"update2\",").await.unwrap();
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_secs(4)).await;
        server.write_all(b" ").await.unwrap();
    }
    server
        .write_all(b"\"params\":[],\"id\":null}")
        .await
        .unwrap();
    match notes.recv().await.unwrap() {
        Notification::Call { method, .. } => assert_eq!(method, "update2"),
        other => panic!("unexpected {other:?}"),
    }
}

/// An `update3` notification of `rows` ports for monitor `db`, each with a
/// kept and a dropped key.
fn big_update(rows: usize) -> String {
    let reply: Value = serde_json::from_str(&big_reply(&json!(1), rows, None)).unwrap();
    json!({"id": null, "method": "update3",
        "params": ["db", "7a3b8c2e-0000-4000-8000-000000000001", reply["result"]]})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_update_is_decoded_while_it_arrives_with_its_monitors_projection() {
    let projection = KeyProjection::default().keep("Logical_Switch_Port", "external_ids", ["kept"]);
    let text = big_update(300);
    let want = crate::monitor::decode_update("update3", text.as_bytes(), &projection).unwrap();
    let config = SessionConfig {
        stream_above: Some(256),
        // Far below the message: a streamed one is bounded by max_streamed.
        max_message: 4096,
        ..SessionConfig::default()
    };
    let (session, mut notes, mut server) = pair(config);
    session.register_monitor(&json!("db"), &projection);
    // The first half, until the session streams it (a message that
    // arrives whole in one read is handed on as a frame), then the rest.
    let (first, rest) = text.as_bytes().split_at(text.len() / 2);
    server.write_all(first).await.unwrap();
    while session.streamed_replies() == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for piece in rest.chunks(97) {
        server.write_all(piece).await.unwrap();
    }
    // A small one after it arrives after it, as a frame.
    let small = json!({"id": null, "method": "update2", "params": ["db", {}]}).to_string();
    server.write_all(small.as_bytes()).await.unwrap();
    match notes.recv().await {
        Some(Notification::Update(u)) => {
            assert_eq!(u.monitor_id, json!("db"));
            assert_eq!(u.last_txn_id, want.last_txn_id);
            assert_eq!(u.updates, want.updates, "projected as the monitor's");
            assert_eq!(u.updates.row_count(), 300);
        }
        other => panic!("not a streamed update: {:.300}", format!("{other:?}")),
    }
    assert_eq!(session.streamed_replies(), 1);
    match notes.recv().await {
        Some(Notification::Call { method, .. }) => assert_eq!(method, "update2"),
        other => panic!("the small update did not follow: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_message_that_is_not_an_update_or_a_streamed_reply_is_refused_at_max_message() {
    let config = SessionConfig {
        stream_above: Some(256),
        max_message: 4096,
        ..SessionConfig::default()
    };
    let (session, mut notes, server) = pair(config);
    // The reply to list_dbs, a call that is never streamed: held whole, so
    // max_message bounds it.
    let _server = serve_one(server, |id| {
        json!({"id": id, "result": vec!["OVN_Northbound"; 1000], "error": null}).to_string()
    });
    let err = session.list_dbs().await.unwrap_err().to_string();
    assert!(err.contains("4096-byte limit (max_message)"), "{err}");
    assert!(matches!(
        notes.recv().await,
        Some(Notification::Closed(Error::Frame(
            crate::framing::FrameError::TooLarge { limit: 4096 }
        )))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_message_trickling_past_its_deadline_ends_the_session_naming_the_limit() {
    let config = SessionConfig {
        probe_interval: Some(Duration::from_secs(5)),
        message_deadline: Some(Duration::from_secs(30)),
        ..SessionConfig::default()
    };
    let (_session, mut notes, mut server) = pair(config);
    // A byte every 4 s keeps the probe quiet; the message never ends.
    server.write_all(b"{\"method\":\"update2\",").await.unwrap();
    let trickle = tokio::spawn(async move {
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_secs(4)).await;
            if server.write_all(b" ").await.is_err() {
                break;
            }
        }
    });
    let started = Instant::now();
    match notes.recv().await {
        Some(Notification::Closed(e @ Error::MessageDeadline { .. })) => {
            let text = e.to_string();
            assert!(
                text.contains("30s") && text.contains("message_deadline"),
                "{text}"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(30) && waited < Duration::from_secs(35),
        "{waited:?}"
    );
    trickle.abort();
}
