//! Loads OVN fixtures (OVSDB wire notation, `{table: {uuid: row}}` per
//! database, the scenarios' `ovn` member) into a real ovsdb-server.

use std::collections::HashSet;

use serde_json::{json, Map, Value};

/// The `insert` operations that create every row of `db` (one database of a
/// fixture) in one transaction. The fixture's UUIDs become named UUIDs, so
/// references between rows (also across tables) survive; the server assigns
/// new UUIDs.
pub fn insert_ops(db: &Value) -> Vec<Value> {
    let Some(tables) = db.as_object() else {
        return Vec::new();
    };
    let known: HashSet<&str> = tables
        .values()
        .filter_map(Value::as_object)
        .flat_map(|rows| rows.keys().map(String::as_str))
        .collect();
    let mut ops = Vec::new();
    for (table, rows) in tables {
        let Some(rows) = rows.as_object() else {
            continue;
        };
        for (uuid, row) in rows {
            let row = rename_refs(row, &known);
            ops.push(json!({
                "op": "insert",
                "table": table,
                "row": row,
                "uuid-name": named(uuid),
            }));
        }
    }
    ops
}

/// A named UUID must be an identifier: `r` plus the UUID without dashes.
fn named(uuid: &str) -> String {
    format!("r{}", uuid.replace('-', "_"))
}

fn rename_refs(v: &Value, known: &HashSet<&str>) -> Value {
    match v {
        Value::Array(a) if a.len() == 2 && a[0] == "uuid" => match a[1].as_str() {
            Some(u) if known.contains(u) => json!(["named-uuid", named(u)]),
            _ => v.clone(),
        },
        Value::Array(a) => Value::Array(a.iter().map(|x| rename_refs(x, known)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), rename_refs(x, known)))
                .collect::<Map<_, _>>(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_to_fixture_rows_become_named_uuids() {
        let db = json!({
            "Logical_Switch": {"11111111-1111-4111-8111-111111111111": {
                "name": "ls", "ports": ["set", [["uuid", "22222222-2222-4222-8222-222222222222"]]]}},
            "Logical_Switch_Port": {"22222222-2222-4222-8222-222222222222": {"name": "p"}}
        });
        let ops = insert_ops(&db);
        assert_eq!(ops.len(), 2);
        let ls = ops.iter().find(|o| o["table"] == "Logical_Switch").unwrap();
        assert_eq!(
            ls["row"]["ports"],
            json!([
                "set",
                [["named-uuid", "r22222222_2222_4222_8222_222222222222"]]
            ])
        );
    }
}
