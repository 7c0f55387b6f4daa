//! The framer harness (raw bytes): `JsonFramer` must cut the same messages
//! however the stream is split into reads, with or without handing the
//! scanned part of a message out early, and must agree with a real JSON
//! parser whenever the stream is a valid sequence of objects.

use bytes::BytesMut;
use obgp_ovsdb::framing::{FrameError, JsonFramer, DEFAULT_MAX_MESSAGE};
use serde_json::Value;
use tokio_util::codec::Decoder;

/// What a framer made of a stream: the messages it cut, then the error
/// that stopped it, if one did.
type Framed = (Vec<Vec<u8>>, Option<FrameError>);

/// Feeds `stream` in pieces of the sizes `cuts` gives (cycled; the rest in
/// one piece), calling `take_scanned` after every incomplete read when
/// `take` is set, and collects every message.
fn frame_all(stream: &[u8], limit: usize, cuts: &[u8], take: bool) -> Framed {
    let mut framer = JsonFramer::new(limit);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut partial: Vec<u8> = Vec::new();
    let mut rest = stream;
    let mut sizes = cuts.iter().cycle();
    while !rest.is_empty() {
        let n = match sizes.next() {
            Some(&c) => (usize::from(c) + 1).min(rest.len()),
            None => rest.len(),
        };
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        buf.extend_from_slice(chunk);
        loop {
            match framer.decode(&mut buf) {
                Ok(Some(frame)) => {
                    partial.extend_from_slice(&frame);
                    out.push(std::mem::take(&mut partial));
                }
                Ok(None) => {
                    if take {
                        partial.extend_from_slice(&framer.take_scanned(&mut buf));
                    }
                    break;
                }
                Err(e) => return (out, Some(e)),
            }
        }
    }
    loop {
        match framer.decode_eof(&mut buf) {
            Ok(Some(frame)) => {
                partial.extend_from_slice(&frame);
                out.push(std::mem::take(&mut partial));
            }
            Ok(None) => return (out, None),
            Err(e) => return (out, Some(e)),
        }
    }
}

/// The harness: the first two bytes choose the limit and the way the rest
/// (the stream) is split; the split sizes come from the stream's own bytes.
pub fn run(data: &[u8]) {
    let [ctl, cut_seed, stream @ ..] = data else {
        return;
    };
    let limit = match ctl % 4 {
        0 => DEFAULT_MAX_MESSAGE,
        1 => 16,
        2 => 100,
        _ => 4096,
    };
    let take = ctl & 4 != 0;
    let cuts: Vec<u8> = stream
        .iter()
        .skip(usize::from(*cut_seed))
        .take(8)
        .map(|b| b % 64)
        .collect();

    let whole = frame_all(stream, limit, &[], false);
    let split = frame_all(stream, limit, &cuts, take);
    assert_eq!(
        whole, split,
        "the framer cut differently when the stream arrived in pieces {cuts:?} (take {take})"
    );
    for frame in &whole.0 {
        assert_eq!(frame.first(), Some(&b'{'), "a message must start with '{{'");
        assert!(
            frame.len() <= limit,
            "a message over the limit was handed out"
        );
    }

    // On a valid stream of objects the framer and the parser agree.
    let parsed: Result<Vec<Value>, _> = serde_json::Deserializer::from_slice(stream)
        .into_iter::<Value>()
        .collect();
    if let Ok(values) = parsed {
        if limit == DEFAULT_MAX_MESSAGE && values.iter().all(Value::is_object) {
            assert_eq!(whole.1, None, "the framer refused a valid stream");
            let cut: Vec<Value> = whole
                .0
                .iter()
                .filter_map(|f| serde_json::from_slice(f).ok())
                .collect();
            assert_eq!(
                cut, values,
                "the framer's messages differ from the parser's"
            );
        }
    }
}

/// Real messages: each scenario's databases as the monitor reply a server
/// sends (`monitor_cond`, rows as `initial`), followed by an `update3`
/// notification and an `echo`, back to back as on the socket; prefixed
/// with the two control bytes (default limit, split in small reads).
pub fn seed_inputs() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (i, (_, sc)) in crate::seeds::scenarios().iter().enumerate() {
        let Some(dbs) = sc["ovn"].as_object() else {
            continue;
        };
        for (id, (db, tables)) in dbs.iter().enumerate() {
            let Some(tables) = tables.as_object() else {
                continue;
            };
            let mut updates = serde_json::Map::new();
            for (table, rows) in tables {
                let Some(rows) = rows.as_object() else {
                    continue;
                };
                let rows: serde_json::Map<String, Value> = rows
                    .iter()
                    .map(|(u, r)| (u.clone(), serde_json::json!({ "initial": r })))
                    .collect();
                updates.insert(table.clone(), Value::Object(rows));
            }
            let reply = serde_json::json!({"id": id, "result": updates, "error": null});
            let notify = serde_json::json!({
                "id": null,
                "method": "update3",
                "params": [db, "00000000-0000-0000-0000-000000000000", {}]
            });
            let mut bytes = vec![(i % 2) as u8 * 4, (i % 7) as u8];
            bytes.extend_from_slice(reply.to_string().as_bytes());
            bytes.extend_from_slice(b"\n");
            bytes.extend_from_slice(notify.to_string().as_bytes());
            bytes.extend_from_slice(br#" {"id":"echo","method":"echo","params":[]}"#);
            out.push(bytes);
        }
    }
    out
}
