//! The NB predicates read only columns the NB driver monitors
//! (`obgp_ovn::nb::MONITORED_COLUMNS`): a column left out of the monitor
//! would read as its default and silently change a decision.
//!
//! Predicates name columns as literals (`row.col("external_ids")`,
//! `row.text("type")`, `old.has("up")`); this test collects every such
//! literal from the NB predicates and the helpers they share, and checks it
//! against the monitored columns.

use obgp_ovn::nb::MONITORED_COLUMNS;

/// The column literals passed to `.col(`, `.text(` and `.has(` in `source`.
fn column_literals(source: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for call in [".col(\"", ".text(\"", ".has(\""] {
        for (at, _) in source.match_indices(call) {
            let rest = &source[at + call.len()..];
            if let Some(end) = rest.find('"') {
                out.push(&rest[..end]);
            }
        }
    }
    out
}

fn monitored_anywhere(column: &str) -> bool {
    MONITORED_COLUMNS
        .iter()
        .any(|(_, cols)| cols.contains(&column))
}

#[test]
fn nb_predicates_read_only_monitored_columns() {
    let nb = include_str!("../src/nb.rs");
    let found = column_literals(nb);
    assert!(found.len() > 50, "only {} column reads found", found.len());
    for c in found {
        assert!(
            monitored_anywhere(c),
            "an NB predicate reads column {c:?}, which nb::MONITORED_COLUMNS leaves out"
        );
    }
}

#[test]
fn shared_helpers_read_only_monitored_columns() {
    // `first_chassis_name` reads the SB Port_Binding `chassis` column; every
    // other helper is used on NB rows too.
    const SB_ONLY: &[&str] = &["chassis"];
    for source in [
        include_str!("../src/neutron.rs"),
        include_str!("../src/registry.rs"),
    ] {
        for c in column_literals(source) {
            assert!(
                monitored_anywhere(c) || SB_ONLY.contains(&c),
                "a shared helper reads column {c:?}, which nb::MONITORED_COLUMNS leaves out"
            );
        }
    }
}

#[test]
fn the_scan_finds_reads() {
    let src = r#"row.col("external_ids")?.get(X); old.has("up"); row.text("type")"#;
    assert_eq!(column_literals(src), ["external_ids", "type", "up"]);
}
