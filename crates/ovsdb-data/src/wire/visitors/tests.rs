//! Tests of the serde visitors: every level of the notation, bad rows, never a panic.

use super::*;
use crate::wire::WireDatum;
use proptest::prelude::*;
use serde_json::json;

#[test]
fn wire_datum_matches_datum_from_wire() {
    for v in [
        json!("x"),
        json!(5),
        json!(2.5),
        json!(true),
        json!(["uuid", "22222222-2222-4222-8222-222222222222"]),
        json!(["set", ["a", "b"]]),
        json!(["set", []]),
        json!(["map", [["k", "v"], ["k2", 3]]]),
    ] {
        let wire: WireDatum = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(wire.0, Datum::from_wire(&v).unwrap(), "{v}");
    }
}

#[test]
fn table_updates_decode_all_row_ops() {
    let text = json!({
        "Logical_Switch": {
            "22222222-2222-4222-8222-222222222222": {"insert": {"name": "ls1"}},
            "33333333-2222-4222-8222-222222222222": {"delete": null},
            "44444444-2222-4222-8222-222222222222": {"modify": {"ports": ["set", []]}},
            "55555555-2222-4222-8222-222222222222": {"initial": {}}
        }
    })
    .to_string();
    let u: TableUpdates = serde_json::from_str(&text).unwrap();
    let ops: Vec<RowOp> = u.0[0].rows.iter().map(|r| r.op).collect();
    assert_eq!(
        ops,
        [RowOp::Insert, RowOp::Delete, RowOp::Modify, RowOp::Initial]
    );
    assert_eq!(u.row_count(), 4);
}

#[test]
fn a_row_that_is_not_ovsdb_notation_is_skipped_by_its_key() {
    let good = r#""33333333-2222-4222-8222-222222222222": {"insert": {"name": "ok"}}"#;
    for (bad, uuid) in [
        (r#""not-a-uuid": {"insert": {}}"#, false),
        (
            r#""22222222-2222-4222-8222-222222222222": {"upsert": {}}"#,
            true,
        ),
        (r#""22222222-2222-4222-8222-222222222222": {}"#, true),
        (
            r#""22222222-2222-4222-8222-222222222222": {"insert": {}, "delete": null}"#,
            true,
        ),
        (
            r#""22222222-2222-4222-8222-222222222222": {"insert": {"c": ["map", [["k"]]]}}"#,
            true,
        ),
        (
            r#""22222222-2222-4222-8222-222222222222": {"insert": {"c": {"x": 1}}}"#,
            true,
        ),
        (
            r#""22222222-2222-4222-8222-222222222222": {"insert": {"c": ["uuid", "zz"]}}"#,
            true,
        ),
        (
            r#""22222222-2222-4222-8222-222222222222": {"insert": {"c": 18446744073709551615}}"#,
            true,
        ),
        (r#""22222222-2222-4222-8222-222222222222": 7"#, true),
    ] {
        for text in [
            format!(r#"{{"T": {{{bad}, {good}}}}}"#),
            format!(r#"{{"T": {{{good}, {bad}}}}}"#),
        ] {
            let u: TableUpdates =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(u.row_count(), 1, "{text}");
            assert_eq!(
                u.0[0].rows[0].columns[0].1,
                Datum::scalar(Atom::String("ok".into()))
            );
            let skipped: Vec<&RowFault> = u.skipped().collect();
            assert_eq!(skipped.len(), 1, "{text}");
            assert_eq!(skipped[0].table, "T");
            let want = uuid.then(|| Uuid::parse("22222222-2222-4222-8222-222222222222").unwrap());
            assert_eq!(skipped[0].uuid, want, "{text}: {}", skipped[0]);
        }
    }
}

#[test]
fn json_that_does_not_parse_or_a_wrong_shape_above_the_rows_fails_the_message() {
    for bad in [
        r#"{"T": [1]}"#,
        r#"{"T": {"22222222-2222-4222-8222-222222222222": {"insert": {"c": tru}}}}"#,
        r#"{"T": {"22222222-2222-4222-8222-222222222222": {"insert": {"c": 1}"#,
        r#"{"T": {"22222222-2222-4222-8222-222222222222": {"insert": {"c": 1}}}} x"#,
        r#"["T"]"#,
    ] {
        assert!(serde_json::from_str::<TableUpdates>(bad).is_err(), "{bad}");
    }
    let invalid_utf8 =
        b"{\"T\": {\"22222222-2222-4222-8222-222222222222\": {\"insert\": {\"c\": \"\xff\"}}}}";
    assert!(serde_json::from_slice::<TableUpdates>(invalid_utf8).is_err());
}

proptest! {
    #[test]
    fn datum_decoder_never_panics(text in ".{0,64}", bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = serde_json::from_str::<WireDatum>(&text);
        let _ = serde_json::from_slice::<TableUpdates>(&bytes);
        let _ = serde_json::from_str::<TableUpdates>(&format!("{{\"T\":{{\"22222222-2222-4222-8222-222222222222\":{{\"modify\":{{\"c\":{text}}}}}}}}}"));
        let p = KeyProjection::default().keep("T", "c", ["a"]);
        let _ = crate::wire::decode_table_updates(format!("{{\"T\":{{\"22222222-2222-4222-8222-222222222222\":{{\"modify\":{{\"c\":{text}}}}}}}}}").as_bytes(), &p);
    }
}
