//! Which keys of which map columns a monitor keeps: the decoder skips the
//! other pairs in the frame's bytes, so a dropped key or value is never
//! allocated. Map diffs (`modify`) are per key, so projecting every message
//! gives the cache exactly the projection of the server's rows.
//!
//! The projection is handed down the decoder as a serde seed
//! ([`super::TableUpdatesSeed`], [`super::MonitorResultSeed`]): a reference
//! passed by value, which costs the decoder nothing.

use std::collections::HashMap;
use std::sync::Arc;

/// Which keys of which map columns a monitor keeps, per table. Columns not
/// named here are decoded whole.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyProjection {
    tables: Arc<HashMap<String, Vec<ColumnKeys>>>,
}

impl KeyProjection {
    /// Keeps only `keys` of map column `column` of `table` (replacing any
    /// earlier list for that column).
    pub fn keep<S: Into<String>>(
        mut self,
        table: &str,
        column: &str,
        keys: impl IntoIterator<Item = S>,
    ) -> KeyProjection {
        let keys: Vec<String> = keys.into_iter().map(Into::into).collect();
        let columns = Arc::make_mut(&mut self.tables)
            .entry(table.to_string())
            .or_default();
        columns.retain(|(c, _)| c != column);
        columns.push((column.to_string(), keys));
        self
    }

    /// Whether every column is decoded whole.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// The keys kept of `table`.`column`, or `None` if it is decoded whole.
    pub fn keys(&self, table: &str, column: &str) -> Option<&[String]> {
        self.tables
            .get(table)?
            .iter()
            .find(|(c, _)| c == column)
            .map(|(_, k)| k.as_slice())
    }

    /// The kept keys of each projected column of `table`, if any.
    pub(super) fn table(&self, table: &str) -> Option<&TableKeys> {
        self.tables.get(table).map(Vec::as_slice)
    }
}

/// A projected map column and the keys kept of it.
pub(super) type ColumnKeys = (String, Vec<String>);

/// The kept keys of each projected column of one table.
pub(super) type TableKeys = [ColumnKeys];

pub(super) fn column_keys<'k>(table: Option<&'k TableKeys>, column: &str) -> Option<&'k [String]> {
    table?
        .iter()
        .find(|(c, _)| c == column)
        .map(|(_, k)| k.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datum::Datum;
    use crate::wire::{decode_table_updates, DecodeError, RowUpdate, TableUpdates};
    use proptest::prelude::*;
    use serde_json::json;

    fn projected(p: &KeyProjection, text: &str) -> Result<TableUpdates, DecodeError> {
        decode_table_updates(text.as_bytes(), p)
    }

    #[test]
    fn a_key_projection_keeps_only_the_listed_keys_of_its_columns() {
        let text = json!({
            "Logical_Switch_Port": {
                "22222222-2222-4222-8222-222222222222": {"initial": {
                    "external_ids": ["map", [["neutron:cidrs", "10.0.0.5/24"],
                                             ["neutron:project_id", "p1"],
                                             ["neutron:revision_number", "3"],
                                             ["esc\"aped", "x"]]],
                    "options": ["map", [["requested-chassis", "h1"], ["mcast_flood", "true"]]],
                    "addresses": ["set", ["fa:16:3e:11:11:11 10.0.0.5"]]}},
                "33333333-2222-4222-8222-222222222222": {"modify": {
                    "external_ids": ["map", [["neutron:revision_number", "4"]]]}}
            },
            "Logical_Router_Port": {
                "44444444-2222-4222-8222-222222222222": {"initial": {
                    "external_ids": ["map", [["neutron:project_id", "p1"]]]}}
            }
        })
        .to_string();
        let p = KeyProjection::default().keep(
            "Logical_Switch_Port",
            "external_ids",
            ["neutron:cidrs", "esc\"aped"],
        );
        let u = projected(&p, &text).unwrap();
        let lsp =
            &u.0.iter()
                .find(|t| t.table == "Logical_Switch_Port")
                .unwrap()
                .rows;
        let col = |r: &RowUpdate, c: &str| {
            r.columns
                .iter()
                .find(|(n, _)| n.as_str() == c)
                .map(|(_, d)| d.clone())
        };
        let ids = col(&lsp[0], "external_ids").unwrap();
        let keys: Vec<&str> = ids.pairs().iter().filter_map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["neutron:cidrs", "esc\"aped"]);
        // Columns and tables without a list are whole.
        assert_eq!(col(&lsp[0], "options").unwrap().pairs().len(), 2);
        assert_eq!(col(&lsp[0], "addresses").unwrap().atoms().len(), 1);
        let lrp =
            &u.0.iter()
                .find(|t| t.table == "Logical_Router_Port")
                .unwrap()
                .rows;
        assert_eq!(col(&lrp[0], "external_ids").unwrap().pairs().len(), 1);
        // A diff touching only dropped keys is an empty diff.
        assert_eq!(col(&lsp[1], "external_ids"), Some(Datum::empty_map()));
        // Without a projection nothing is projected.
        let whole: TableUpdates = serde_json::from_str(&text).unwrap();
        let whole_lsp = &whole
            .0
            .iter()
            .find(|t| t.table == "Logical_Switch_Port")
            .unwrap()
            .rows;
        assert_eq!(col(&whole_lsp[0], "external_ids").unwrap().pairs().len(), 4);
    }

    #[test]
    fn a_projected_map_of_the_wrong_shape_is_a_bad_row() {
        let p = KeyProjection::default().keep("T", "c", ["kept"]);
        for bad in [
            r#"{"T": {"22222222-2222-4222-8222-222222222222": {"insert": {"c": ["map", [["dropped"]]]}}}}"#,
            r#"{"T": {"22222222-2222-4222-8222-222222222222": {"insert": {"c": ["map", [["dropped", "v", "x"]]]}}}}"#,
            r#"{"T": {"22222222-2222-4222-8222-222222222222": {"insert": {"c": ["map", [[]]]}}}}"#,
            r#"{"T": {"22222222-2222-4222-8222-222222222222": {"insert": {"c": ["map", {"dropped": 1}]}}}}"#,
            r#"{"T": {"22222222-2222-4222-8222-222222222222": {"insert": {"c": ["map", [["kept"]]]}}}}"#,
        ] {
            let u = projected(&p, bad).unwrap();
            assert_eq!(u.row_count(), 0, "{bad}");
            let skipped: Vec<_> = u.skipped().collect();
            assert_eq!(skipped.len(), 1, "{bad}");
            assert!(skipped[0].reason.contains("column c"), "{}", skipped[0]);
        }
    }

    fn map_message(pairs: &[(String, String)]) -> String {
        json!({"T": {"22222222-2222-4222-8222-222222222222": {"modify": {
            "c": ["map", pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()],
            "d": ["map", pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()]}}}})
        .to_string()
    }

    proptest! {
        #[test]
        fn projecting_while_decoding_equals_filtering_after(
            pairs in prop::collection::vec(("[a-e\\\\\"é]{0,3}", "[a-z]{0,3}"), 0..12),
            kept in prop::collection::vec("[a-e\\\\\"é]{0,3}", 0..4),
        ) {
            let text = map_message(&pairs);
            let p = KeyProjection::default().keep("T", "c", kept.clone());
            let got = projected(&p, &text).unwrap();
            let mut want: TableUpdates = serde_json::from_str(&text).unwrap();
            for (name, d) in &mut want.0[0].rows[0].columns {
                if name.as_str() == "c" && d.is_map() {
                    let pairs = d.pairs().iter().filter(|(k, _)| {
                        kept.iter().any(|s| Some(s.as_str()) == k.as_str())
                    });
                    *d = Datum::map(pairs.cloned().collect());
                }
            }
            prop_assert_eq!(got, want);
        }

    }
}
