//! The streamed decoder against the buffered one: replies and updates in
//! any cut, projections, bounds, errors and their order.

use super::*;
use crate::datum::{Atom, Datum};
use crate::wire::MonitorResultSeed;
use proptest::prelude::*;
use serde::de::DeserializeSeed;
use serde_json::json;

/// A reply's options: `projection`, no monitors, no bound.
fn opts(projection: &KeyProjection) -> StreamOptions<'_> {
    StreamOptions {
        reply: projection,
        monitors: &[],
        max_value: usize::MAX,
        max_decoded: usize::MAX,
    }
}

/// `text` handed out in pieces cut at `cuts`.
fn pieces(text: &[u8], cuts: &[usize]) -> impl FnMut() -> Option<bytes::Bytes> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
    points.push(0);
    points.push(text.len());
    points.sort_unstable();
    let chunks: Vec<bytes::Bytes> = points
        .windows(2)
        .map(|w| bytes::Bytes::copy_from_slice(&text[w[0]..w[1]]))
        .collect();
    let mut chunks = chunks.into_iter();
    move || chunks.next()
}

/// Rows spread over two tables (every third in Logical_Switch, whose
/// maps are never projected), then an empty table.
fn rows_json(rows: &[(String, Vec<(String, String)>)]) -> serde_json::Value {
    let mut ports = serde_json::Map::new();
    let mut switches = serde_json::Map::new();
    for (i, (name, pairs)) in rows.iter().enumerate() {
        let pairs: Vec<serde_json::Value> = pairs.iter().map(|(k, v)| json!([k, v])).collect();
        let table = if i % 3 == 2 {
            &mut switches
        } else {
            &mut ports
        };
        table.insert(
            format!("{i:08x}-2222-4222-8222-222222222222"),
            json!({"initial": {"name": name, "external_ids": ["map", pairs]}}),
        );
    }
    json!({"Logical_Switch_Port": ports, "Logical_Switch": switches, "NB_Global": {}})
}

/// 300 rows of Logical_Switch_Port; the names of rows 60 and 200 are
/// the text `bad`.
fn reply_with_bad_rows(bad: &str) -> String {
    let rows: serde_json::Map<String, serde_json::Value> = (0..300)
        .map(|i| {
            let name = if i == 60 || i == 200 { "BAD" } else { "p" };
            (
                format!("{i:08x}-2222-4222-8222-222222222222"),
                json!({"initial": {"name": name}}),
            )
        })
        .collect();
    json!({"id": 1, "result": {"Logical_Switch_Port": rows}})
        .to_string()
        .replace("\"BAD\"", bad)
}

#[test]
fn of_several_rows_that_are_not_json_the_first_in_the_message_is_reported() {
    let text = reply_with_bad_rows("tru");
    let none = KeyProjection::default();
    // Several decoders racing over small batches, many times: the
    // timing must never change which error is reported.
    for round in 0..30 {
        let err =
            decode_streamed_reply_on(&opts(&none), 3, 40 + round, pieces(text.as_bytes(), &[777]))
                .unwrap_err()
                .to_string();
        assert!(
            err.starts_with("table Logical_Switch_Port: row 0000003c-2222-4222-8222-222222222222: column name: expected ident"),
            "{err}"
        );
    }
    // The buffered decoder reports the same row.
    let result = &text[text.find("{\"Logical").unwrap()..text.len() - 1];
    let buffered = serde_json::from_str::<MonitorResult>(result)
        .unwrap_err()
        .to_string();
    assert!(
        buffered.contains("row 0000003c-2222-4222-8222-222222222222"),
        "{buffered}"
    );
}

#[test]
fn rows_that_are_not_ovsdb_notation_are_skipped_by_uuid_and_the_rest_decodes() {
    let text = reply_with_bad_rows(r#"["set"]"#)
        .replace("\"00000007-2222-4222-8222-222222222222\"", "\"not-a-uuid\"");
    let none = KeyProjection::default();
    let buffered = serde_json::from_str::<MonitorResult>(
        &text[text.find("{\"Logical").unwrap()..text.len() - 1],
    )
    .unwrap();
    for round in 0..10 {
        let reply =
            decode_streamed_reply_on(&opts(&none), 3, 40 + round, pieces(text.as_bytes(), &[777]))
                .unwrap();
        let Some(MonitorResult::Updates(u)) = reply.result else {
            panic!("no updates: {:?}", reply.result);
        };
        assert_eq!(u.row_count(), 297);
        let skipped: Vec<String> = u.skipped().map(|f| f.to_string()).collect();
        assert_eq!(skipped.len(), 3, "{skipped:?}");
        assert!(
            skipped[0].starts_with("Logical_Switch_Port: row key"),
            "{skipped:?}"
        );
        assert!(skipped[0].contains("not-a-uuid"), "{skipped:?}");
        assert!(
            skipped[1].starts_with(
                "Logical_Switch_Port row 0000003c-2222-4222-8222-222222222222: column name:"
            ),
            "{skipped:?}"
        );
        assert_eq!(
            u.skipped().map(|f| f.uuid).collect::<Vec<_>>(),
            [
                None,
                Uuid::parse("0000003c-2222-4222-8222-222222222222").ok(),
                Uuid::parse("000000c8-2222-4222-8222-222222222222").ok()
            ]
        );
        assert_eq!(MonitorResult::Updates(u), buffered);
    }
}

#[test]
fn decoding_threads_share_strings_within_their_batches() {
    let rows: serde_json::Map<String, serde_json::Value> = (0..4)
        .map(|i| {
            (
                format!("{i:08x}-2222-4222-8222-222222222222"),
                json!({"initial": {"type": "compute:nova"}}),
            )
        })
        .collect();
    let text = json!({"id": 1, "result": {"T": rows}}).to_string();
    let reply = decode_streamed_reply_on(
        &opts(&KeyProjection::default()),
        2,
        1 << 20,
        pieces(text.as_bytes(), &[50]),
    )
    .unwrap();
    let Some(MonitorResult::Updates(u)) = reply.result else {
        panic!("no updates: {:?}", reply.result);
    };
    let values: Vec<&Datum> = u.0[0].rows.iter().map(|r| &r.columns[0].1).collect();
    let (Atom::String(a), Atom::String(b)) = (&values[0].atoms()[0], &values[3].atoms()[0]) else {
        panic!("not strings: {values:?}");
    };
    assert!(a.shares_storage_with(b), "one batch, one decoder: one copy");
}

#[test]
fn a_streamed_reply_with_an_error_or_no_result_keeps_its_members() {
    let text = br#"{"error": {"error": "unknown database"}, "id": 4, "result": null}"#;
    let none = KeyProjection::default();
    let r = decode_streamed_reply(&none, pieces(text, &[3, 30])).unwrap();
    assert_eq!((r.id, r.result), (json!(4), None));
    assert_eq!(r.error, json!({"error": "unknown database"}));
    for bad in [
        &br#"{"id": 4, "result": {"T": {"22222222-2222-4222-8222-222222222222": {"initial": {"a": tru}}}}}"#[..],
        br#"{"id": 4} x"#,
        br#"{"id": 4"#,
        b"[1]",
    ] {
        assert!(
            decode_streamed_reply(&none, pieces(bad, &[5])).is_err(),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn an_update_notification_is_decoded_row_by_row_with_its_monitors_projection() {
    let rows = [
        (
            "p".to_string(),
            vec![("kept".into(), "1".into()), ("dropped".into(), "2".into())],
        ),
        ("q".to_string(), vec![("kept".into(), "3".into())]),
    ];
    let updates = rows_json(&rows);
    let kept = KeyProjection::default().keep("Logical_Switch_Port", "external_ids", ["kept"]);
    let want = crate::wire::decode_table_updates(updates.to_string().as_bytes(), &kept).unwrap();
    let monitors = [
        (json!("other"), KeyProjection::default()),
        (json!("db"), kept.clone()),
    ];
    let options = StreamOptions {
        reply: &KeyProjection::default(),
        monitors: &monitors,
        max_value: 1 << 20,
        max_decoded: usize::MAX,
    };
    // update3, params before method (the envelope's member order is
    // the server's), and update2.
    let u3 = format!(
        r#"{{"params": ["db", "7a3b8c2e-0000-4000-8000-000000000001", {updates}], "id": null, "method": "update3"}}"#
    );
    let u2 = json!({"id": null, "method": "update2", "params": ["db", updates]}).to_string();
    for (text, txn) in [
        (u3, Some("7a3b8c2e-0000-4000-8000-000000000001")),
        (u2, None),
    ] {
        let got =
            decode_streamed_reply_on(&options, 2, 40, pieces(text.as_bytes(), &[9, 70])).unwrap();
        assert_eq!(got.id, serde_json::Value::Null);
        assert!(got.result.is_none());
        let params = got.params.expect("update params");
        assert_eq!(params.monitor_id, json!("db"));
        assert_eq!(params.last_txn_id.as_deref(), txn);
        assert_eq!(params.updates, want, "projected as monitor db's");
    }
    assert_eq!(
        decode_streamed_reply_on(
            &options,
            1,
            40,
            pieces(br#"{"method": "update2", "params": ["db", {}]}"#, &[])
        )
        .unwrap()
        .method
        .as_deref(),
        Some("update2")
    );
}

#[test]
fn a_value_longer_than_max_value_is_refused_before_it_ends() {
    let big = "x".repeat(5000);
    let text = json!({"id": null, "method": "update2", "params": ["db", {"T": {
        "00000000-2222-4222-8222-222222222222": {"insert": {"name": big}}
    }}]})
    .to_string();
    let options = StreamOptions {
        reply: &KeyProjection::default(),
        monitors: &[],
        max_value: 1000,
        max_decoded: usize::MAX,
    };
    // In pieces of 100 bytes: refused once 1000 bytes of the row are held.
    let cuts: Vec<usize> = (1..60).map(|i| i * 100).collect();
    let mut handed = 0usize;
    let mut next = pieces(text.as_bytes(), &cuts);
    let err = decode_streamed_reply_on(&options, 1, 64, || {
        let chunk = next();
        handed += chunk.as_ref().map_or(0, bytes::Bytes::len);
        chunk
    })
    .unwrap_err();
    assert!(
        matches!(err, DecodeError::ValueTooLarge { limit: 1000, .. }),
        "{err}"
    );
    assert!(handed < 1300, "read {handed} bytes before refusing");
}

#[test]
fn rows_decoding_past_max_decoded_stop_the_message() {
    // Small integers: 2 bytes an atom on the wire, 24 decoded.
    let ints: Vec<u32> = (0..2000).collect();
    let rows: serde_json::Map<String, serde_json::Value> = (0..20)
        .map(|i| {
            (
                format!("{i:08x}-2222-4222-8222-222222222222"),
                json!({"insert": {"tag": ["set", ints]}}),
            )
        })
        .collect();
    let text = json!({"id": null, "method": "update2", "params": ["db", {"T": rows}]}).to_string();
    let none = KeyProjection::default();
    let whole =
        decode_streamed_reply_on(&opts(&none), 2, 4096, pieces(text.as_bytes(), &[])).unwrap();
    let estimate = whole.decoded_bytes;
    assert!(estimate > 20 * 2000 * 24, "{estimate}");
    assert!(
        estimate > 5 * text.len(),
        "{estimate} for {} bytes",
        text.len()
    );
    let options = StreamOptions {
        max_decoded: estimate / 2,
        ..opts(&none)
    };
    let err =
        decode_streamed_reply_on(&options, 2, 4096, pieces(text.as_bytes(), &[100])).unwrap_err();
    assert!(
        matches!(err, DecodeError::DecodedTooLarge { limit } if limit == estimate / 2),
        "{err}"
    );
}

proptest! {
    #[test]
    fn a_reply_decoded_row_by_row_equals_the_buffered_decode(
        rows in prop::collection::vec(("[a-z\\\\\" ]{0,4}", prop::collection::vec(("[a-c\\\\\"]{0,2}", "[a-z{}\\[\\], ]{0,3}"), 0..4)), 0..6),
        since in any::<bool>(),
        pretty in any::<bool>(),
        result_first in any::<bool>(),
        cuts in prop::collection::vec(any::<usize>(), 0..10),
        kept in prop::collection::vec("[a-c]{0,2}", 0..3),
        decoders in 1usize..4,
        batch_bytes in 1usize..300,
    ) {
        let updates = rows_json(&rows);
        let result = if since { json!([true, "7a3b8c2e-0000-4000-8000-000000000001", updates]) } else { updates };
        let show = |v: &serde_json::Value| if pretty { serde_json::to_string_pretty(v).unwrap() } else { v.to_string() };
        let text = if result_first {
            format!("{{\"result\": {}, \"id\": 7, \"error\": null}}", show(&result))
        } else {
            format!("{{\"id\":7,\"result\":{},\"error\":null}}", show(&result))
        };
        let p = KeyProjection::default().keep("Logical_Switch_Port", "external_ids", kept);
        let want = MonitorResultSeed(&p).deserialize(&mut serde_json::Deserializer::from_str(&result.to_string())).unwrap();
        let got = decode_streamed_reply_on(&opts(&p), decoders, batch_bytes, pieces(text.as_bytes(), &cuts)).unwrap();
        prop_assert_eq!(got.id, json!(7));
        prop_assert_eq!(got.result, Some(want));
    }

    #[test]
    fn a_streamed_reply_decoder_never_panics(
        data in prop::collection::vec(any::<u8>(), 0..256),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
        decoders in 1usize..3,
    ) {
        let _ = decode_streamed_reply_on(&opts(&KeyProjection::default()), decoders, 16, pieces(&data, &cuts));
    }

}

/// Found by the `wire` fuzz target: a byte that is not UTF-8 inside a
/// row's string made the streamed decoder skip the row (`IgnoredAny`, which
/// the row-fault check parses the row with, does not check UTF-8) while the
/// buffered one refused the message.
#[test]
fn a_row_with_bytes_that_are_not_utf8_fails_the_message_streamed_as_buffered() {
    let mut text = json!({"id": 7, "result": {"Bridge": {
        "ccc56e87-580d-41d3-9c73-b0e89e964718": {"initial": {"name": "br-ex"}},
        "f91a7d9e-31f3-4a8b-b4ba-383960dfc640": {"initial": {"name": "br-int"}},
    }}})
    .to_string()
    .into_bytes();
    let at = text.windows(5).position(|w| w == b"br-ex").unwrap() + 3;
    text[at] = 0xff;
    let none = KeyProjection::default();
    let result = &text[text.windows(8).position(|w| w == b"{\"Bridge").unwrap()..text.len() - 1];
    assert!(serde_json::from_slice::<MonitorResult>(result).is_err());
    for round in 0..5 {
        let streamed =
            decode_streamed_reply_on(&opts(&none), 2, 16 + round, pieces(&text, &[7 * round]));
        assert!(streamed.is_err(), "{streamed:?}");
    }
}

/// Found by the `wire` fuzz target's 10M replay: a row key that is not a
/// UUID and holds a JSON escape (`\f`) was named by its JSON text in the
/// streamed decoder's row fault and by the decoded string in the buffered
/// one; both skip the row, and now name it the same way.
#[test]
fn a_bad_row_key_with_an_escape_is_named_alike_streamed_and_buffered() {
    let text = br#"{"id":7,"result":{"Bridge":{"eae18c\f6-1554-4a88-bc1a-606032daf2f9":{"initial":{"name":"br-ex"}},"f91a7d9e-31f3-4a8b-b4ba-383960dfc640":{"initial":{"name":"br-int"}}}},"error":null}"#;
    let none = KeyProjection::default();
    let start = text.windows(9).position(|w| w == b"{\"Bridge\"").unwrap();
    let end = text
        .windows(14)
        .position(|w| w == b",\"error\":null}")
        .unwrap();
    let want = MonitorResultSeed(&none)
        .deserialize(&mut serde_json::Deserializer::from_slice(&text[start..end]))
        .unwrap();
    let faults = format!("{want:?}");
    assert!(faults.contains("\\u{c}6-1554"), "{faults}");
    for round in 0..5 {
        let got = decode_streamed_reply_on(&opts(&none), 2, 16 + round, pieces(text, &[7 * round]))
            .unwrap();
        assert_eq!(got.result.as_ref(), Some(&want), "round {round}");
    }
}

/// Found by the `wire` fuzz target's 10M replay: a byte that is not UTF-8
/// in a map value the key projection drops was skipped unchecked by the
/// streamed decoder's visitors while the buffered decoder (each row a
/// `RawValue`) refused the message; both refuse it now.
#[test]
fn a_non_utf8_byte_in_a_projected_away_value_fails_the_message_streamed_as_buffered() {
    let mut text = json!({"id": 7, "result": {"Logical_Switch_Port": {
        "ccc56e87-580d-41d3-9c73-b0e89e964718": {"initial": {"name": "p1",
            "external_ids": ["map", [["neutron:cidrs", "10.0.0.5/24"], ["dropped", "4320x"]]]}},
    }}})
    .to_string()
    .into_bytes();
    let at = text.windows(5).position(|w| w == b"4320x").unwrap() + 4;
    text[at] = 0xff;
    let p = KeyProjection::default().keep("Logical_Switch_Port", "external_ids", ["neutron:cidrs"]);
    let result = &text[text
        .windows(22)
        .position(|w| w == b"{\"Logical_Switch_Port\"")
        .unwrap()..text.len() - 1];
    assert!(MonitorResultSeed(&p)
        .deserialize(&mut serde_json::Deserializer::from_slice(result))
        .is_err());
    for round in 0..5 {
        let streamed =
            decode_streamed_reply_on(&opts(&p), 2, 16 + round, pieces(&text, &[7 * round]));
        assert!(streamed.is_err(), "round {round}: {streamed:?}");
    }
}
