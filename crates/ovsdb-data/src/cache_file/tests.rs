//! Round trip of the cache file, and each way a file is refused.

use super::*;
use crate::monitor_spec::TableMonitor;
use crate::wire::TableUpdates;

const LS1: &str = "11111111-1111-4111-8111-111111111111";
const LSP1: &str = "22222222-2222-4222-8222-222222222222";
const LSP2: &str = "33333333-3333-4333-8333-333333333333";

fn schema_json(file: &str) -> Value {
    let path = format!(
        "{}/../../fixtures/schemas/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Rows with every kind of atom and datum the NB has: strings needing
/// escapes and non-ASCII, integers, optional booleans set and unset, sets
/// of 0, 1 and several, maps, references; and a monitored table with no
/// row.
fn sample() -> (CacheHeader, DbSnapshot) {
    let schema = schema_json("ovn-nb.ovsschema");
    let db = Arc::new(DatabaseSchema::from_json(&schema).unwrap());
    let empty = DbSnapshot::empty(
        db,
        ["Logical_Switch", "Logical_Switch_Port", "NB_Global", "NAT"],
    );
    let updates: TableUpdates = serde_json::from_value(json!({
        "Logical_Switch": {LS1: {"initial": {"name": "net \"a\" \\ é ✓",
            "ports": ["set", [["uuid", LSP1], ["uuid", LSP2]]]}}},
        "Logical_Switch_Port": {
            LSP1: {"initial": {"name": "p1", "tag_request": 4094, "enabled": false,
                "addresses": ["set", ["fa:16:3e:00:00:01 10.0.0.5", "unknown"]],
                "external_ids": ["map", [["neutron:host_id", "host-0"], ["tab", "a\tb\n"]]]}},
            LSP2: {"initial": {"name": "p2", "enabled": true,
                "options": ["map", [["requested-chassis", "c1,c2"]]]}}
        },
        "NB_Global": {"44444444-4444-4444-8444-444444444444": {"initial": {"nb_cfg": -7}}}
    }))
    .unwrap();
    let (snapshot, _) = empty.apply(updates).unwrap();
    let header = CacheHeader {
        database: "OVN_Northbound".into(),
        schema: Arc::new(schema),
        cluster_id: Some("55555555-5555-4555-8555-555555555555".into()),
        last_txn_id: "66666666-6666-4666-8666-666666666666".into(),
        monitor: monitor_identity(&MonitorSpec::all(["Logical_Switch_Port"])),
    };
    (header, snapshot)
}

fn assert_same_rows(a: &DbSnapshot, b: &DbSnapshot) {
    assert_eq!(
        a.tables().collect::<Vec<_>>(),
        b.tables().collect::<Vec<_>>()
    );
    for t in a.tables() {
        assert_eq!(a.table(t), b.table(t), "table {t}");
    }
}

#[test]
fn a_cache_file_reads_back_the_rows_and_header_it_was_written_with() {
    let (header, snapshot) = sample();
    let bytes = encode(&header, &snapshot);
    let loaded = decode(&bytes, &KeyProjection::default()).unwrap();
    assert_eq!(loaded.header, header);
    assert_same_rows(&loaded.snapshot, &snapshot);
    assert_eq!(loaded.snapshot.schema(), snapshot.schema());
    assert_eq!(loaded.snapshot.table("NAT").len(), 0);
    assert_eq!(loaded.snapshot.table("Logical_Switch_Port").len(), 2);
    // Written again, the same bytes: nothing drifts across restarts.
    assert_eq!(encode(&loaded.header, &loaded.snapshot), bytes);
}

#[test]
fn a_standalone_servers_cache_has_no_cluster_id() {
    let (mut header, snapshot) = sample();
    header.cluster_id = None;
    let loaded = decode(&encode(&header, &snapshot), &KeyProjection::default()).unwrap();
    assert_eq!(loaded.header.cluster_id, None);
}

#[test]
fn a_truncated_file_is_refused_by_its_length() {
    let (header, snapshot) = sample();
    let bytes = encode(&header, &snapshot);
    let cut = &bytes[..bytes.len() - 10];
    let e = decode(cut, &KeyProjection::default()).unwrap_err();
    assert!(matches!(e, CacheFileError::Length { .. }), "{e}");
    assert!(e.to_string().contains("truncated"), "{e}");
    // Cut inside the header line.
    let e = decode(&bytes[..MAGIC.len() + 20], &KeyProjection::default()).unwrap_err();
    assert!(matches!(e, CacheFileError::Header(_)), "{e}");
}

#[test]
fn an_altered_body_is_refused_by_its_checksum_before_a_row_is_read() {
    let (header, snapshot) = sample();
    let bytes = encode(&header, &snapshot);
    // Change a host name in place: still valid JSON, still valid rows.
    let text = String::from_utf8(bytes).unwrap();
    let altered = text.replacen("host-0", "host-9", 1).into_bytes();
    let e = decode(&altered, &KeyProjection::default()).unwrap_err();
    assert!(matches!(e, CacheFileError::Checksum { .. }), "{e}");
    assert!(e.to_string().contains("corrupt"), "{e}");
}

#[test]
fn a_foreign_file_and_another_format_are_refused() {
    let e = decode(b"{\"hello\": 1}\n", &KeyProjection::default()).unwrap_err();
    assert_eq!(e, CacheFileError::Foreign);
    let (header, snapshot) = sample();
    let text = String::from_utf8(encode(&header, &snapshot)).unwrap();
    let other = text
        .replacen("\"format\":1", "\"format\":2", 1)
        .into_bytes();
    let e = decode(&other, &KeyProjection::default()).unwrap_err();
    assert_eq!(e, CacheFileError::Format { found: 2 });
}

#[test]
fn schema_identity_tells_schemas_apart_whatever_their_member_order() {
    let nb = schema_json("ovn-nb.ovsschema");
    let sb = schema_json("ovn-sb.ovsschema");
    let id = SchemaIdentity::of(&nb);
    assert_eq!(id.name, "OVN_Northbound");
    assert_ne!(id, SchemaIdentity::of(&sb));
    // A column added, same name and version: another schema.
    let mut grown = nb.clone();
    grown["tables"]["NAT"]["columns"]["x"] = json!({"type": "string"});
    assert_ne!(id.checksum, SchemaIdentity::of(&grown).checksum);
    // The same members in another order: the same schema.
    let text = serde_json::to_string(&nb).unwrap();
    let reparsed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(id, SchemaIdentity::of(&reparsed));
}

#[test]
fn monitor_identity_differs_with_conditions_columns_and_kept_keys() {
    let all = MonitorSpec::all(["Logical_Switch_Port"]);
    let cond = all.clone().table(
        "Logical_Switch_Port",
        TableMonitor {
            conditions: Some(vec![Condition::eq(
                "type",
                Datum::scalar(Atom::String("router".into())),
            )]),
            ..Default::default()
        },
    );
    let cols = all.clone().table(
        "Logical_Switch_Port",
        TableMonitor {
            columns: Some(vec!["name".into()]),
            ..Default::default()
        },
    );
    let keys = all.clone().table(
        "Logical_Switch_Port",
        TableMonitor {
            map_keys: [("external_ids".to_string(), vec!["a".to_string()])].into(),
            ..Default::default()
        },
    );
    let ids = [&all, &cond, &cols, &keys].map(monitor_identity);
    for (i, a) in ids.iter().enumerate() {
        for b in &ids[i + 1..] {
            assert_ne!(a, b);
        }
    }
    assert_eq!(monitor_identity(&all.clone()), ids[0]);
}

#[test]
fn the_checksum_sees_any_one_byte_changed() {
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
    let sum = checksum64(&data);
    for i in (0..data.len()).step_by(37) {
        let mut d = data.clone();
        d[i] ^= 0x80;
        assert_ne!(checksum64(&d), sum, "byte {i}");
    }
    assert_ne!(checksum64(&data[..999]), sum);
}

#[test]
fn the_conditions_of_a_monitor_identity_read_back_and_the_header_reads_alone() {
    let clauses = vec![
        Condition::eq("type", Datum::scalar(Atom::String("router".into()))),
        Condition::includes(
            "options",
            Datum::map(vec![(
                Atom::String("requested-chassis".into()),
                Atom::String("host-0".into()),
            )]),
        ),
        Condition::False,
    ];
    let spec = MonitorSpec::all(["Logical_Switch", "Logical_Switch_Port"]).table(
        "Logical_Switch_Port",
        TableMonitor {
            conditions: Some(clauses.clone()),
            ..Default::default()
        },
    );
    let id = monitor_identity(&spec);
    assert_eq!(
        monitor_conditions(&id, "Logical_Switch_Port"),
        Some(Some(clauses))
    );
    assert_eq!(monitor_conditions(&id, "Logical_Switch"), Some(None));
    assert_eq!(monitor_conditions(&id, "NAT"), None);

    let (header, snapshot) = sample();
    let bytes = encode(&header, &snapshot);
    let eol = MAGIC.len()
        + bytes[MAGIC.len()..]
            .iter()
            .position(|&b| b == b'\n')
            .unwrap();
    assert_eq!(decode_header(&bytes[..eol + 1]).unwrap(), header);
}
