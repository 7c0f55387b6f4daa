//! The NB predicates read only columns the NB driver monitors
//! (`obgp_ovn::nb::MONITORED_COLUMNS`), the SB ones only columns the SB
//! drivers monitor (`obgp_ovn::sb::MONITORED_COLUMNS`): a column left out
//! of the monitor would read as its default and silently change a decision.
//!
//! Predicates name columns as literals (`row.col("external_ids")`,
//! `row.text("type")`, `old.has("up")`); this test collects every such
//! literal from the NB predicates and the helpers they share, and checks it
//! against the monitored columns.
//!
//! The same holds for map keys: the NB driver keeps only
//! `obgp_ovn::nb::MONITORED_KEYS` of `external_ids` and `options`. Keys are
//! named by the constants of `obgp_ovn::neutron::key` (`.get(key::PORT_FIP)`,
//! `external_id(&row, key::NETWORK_NAME)`); every one must be kept, and a
//! projected map must only be read key by key (its length, truth or
//! equality would see the projection).

use obgp_ovn::nb::{MONITORED_COLUMNS, MONITORED_KEYS};
use obgp_ovn::sb::MONITORED_COLUMNS as SB_MONITORED_COLUMNS;

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

fn sb_monitored_anywhere(column: &str) -> bool {
    SB_MONITORED_COLUMNS
        .iter()
        .any(|(_, cols)| cols.contains(&column))
}

#[test]
fn sb_predicates_read_only_monitored_columns() {
    let mut found = Vec::new();
    for source in [
        include_str!("../src/sb.rs"),
        include_str!("../src/evpn.rs"),
        include_str!("../src/stretched.rs"),
    ] {
        found.extend(column_literals(code(source)));
    }
    assert!(found.len() > 30, "only {} column reads found", found.len());
    for c in found {
        assert!(
            sb_monitored_anywhere(c),
            "an SB predicate reads column {c:?}, which sb::MONITORED_COLUMNS leaves out"
        );
    }
}

#[test]
fn shared_helpers_read_only_monitored_columns() {
    // The helpers read NB rows and SB rows (`first_chassis_name` reads the
    // Port_Binding `chassis`).
    for source in [
        include_str!("../src/neutron.rs"),
        include_str!("../src/registry.rs"),
    ] {
        for c in column_literals(source) {
            assert!(
                monitored_anywhere(c) || sb_monitored_anywhere(c),
                "a shared helper reads column {c:?}, which neither nb:: nor sb::MONITORED_COLUMNS has"
            );
        }
    }
}

#[test]
fn the_scan_finds_reads() {
    let src = r#"row.col("external_ids")?.get(X); old.has("up"); row.text("type")"#;
    assert_eq!(column_literals(src), ["external_ids", "type", "up"]);
}

/// The key constants of `obgp_ovn::neutron::key` by name, read from its
/// source so that a new one is checked too.
fn constants() -> Vec<(&'static str, &'static str)> {
    let src = include_str!("../../ovn/src/neutron.rs");
    let module = &src[src
        .find("pub mod key {")
        .expect("obgp_ovn::neutron has a key module")..];
    let module = &module[..module.find("\n}").unwrap_or(module.len())];
    module
        .lines()
        .filter_map(|l| {
            let l = l.trim().strip_prefix("pub const ")?;
            let (name, rest) = l.split_once(": &str =")?;
            Some((name.trim(), rest.split('"').nth(1)?))
        })
        .collect()
}

/// The non-test part of a source file.
fn code(source: &'static str) -> &'static str {
    &source[..source.find("#[cfg(test)]").unwrap_or(source.len())]
}

/// The NB predicates and the helpers they share.
fn nb_readers() -> [&'static str; 3] {
    [
        code(include_str!("../src/nb.rs")),
        code(include_str!("../src/neutron.rs")),
        code(include_str!("../src/registry.rs")),
    ]
}

/// Map-key reads: (key constant, the column named earlier in the same
/// statement if any). Calls: `.get(K)`, `.item(K)`, `.contains(K)`,
/// `.keys_contain(K)` with an upper-case constant, and the last argument
/// of `external_id(..)` / `router_name(..)` (`external_ids` keys).
fn key_reads(source: &str) -> Vec<(String, Option<&str>)> {
    let mut out = Vec::new();
    for call in [
        ".get(",
        ".item(",
        ".contains(",
        ".keys_contain(",
        "external_id(",
        "router_name(",
    ] {
        for (at, _) in source.match_indices(call) {
            let args = &source[at + call.len()..];
            let Some(end) = args.find(')') else { continue };
            let arg = args[..end].rsplit(',').next().unwrap_or("").trim();
            let Some(arg) = arg.strip_prefix("key::") else {
                continue;
            };
            let is_const = !arg.is_empty()
                && arg
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if !is_const {
                continue;
            }
            let column = if call.starts_with('.') {
                let statement = &source[source[..at].rfind([';', '{']).map_or(0, |i| i + 1)..at];
                column_named(statement).or_else(|| {
                    // `status.item(K)` after `let status = row.col("status")?;`
                    let receiver: String = source[..at]
                        .chars()
                        .rev()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                        .collect();
                    let binding = format!("let {receiver} = ");
                    let bound_at = source[..at].rfind(&binding)?;
                    let line = source[bound_at..].lines().next()?;
                    column_named(line)
                })
            } else {
                Some("external_ids")
            };
            out.push((arg.to_string(), column));
        }
    }
    out
}

/// The column of the last `.col("C")` in `text`.
fn column_named(text: &str) -> Option<&str> {
    text.rfind(".col(\"")
        .map(|i| &text[i + 6..])
        .and_then(|c| c.split('"').next())
}

#[test]
fn nb_predicates_read_only_monitored_keys() {
    let constants = constants();
    let mut checked = 0;
    for source in nb_readers() {
        for (name, column) in key_reads(source) {
            let value = constants
                .iter()
                .find(|(n, _)| *n == name)
                .unwrap_or_else(|| {
                    panic!("key::{name} is not a constant of obgp_ovn::neutron::key")
                })
                .1;
            let projected_in: Vec<&(&str, &str, &[&str])> = MONITORED_KEYS
                .iter()
                .filter(|(_, c, _)| column.is_none_or(|col| col == *c))
                .collect();
            // A column no table projects is kept whole (`status`, `vips`).
            let whole = column.is_some() && projected_in.is_empty();
            let kept = projected_in
                .iter()
                .any(|(_, _, keys)| keys.contains(&value));
            assert!(
                whole || kept,
                "an NB predicate reads {name} ({value:?}) of {}, which nb::MONITORED_KEYS drops",
                column.unwrap_or("a map")
            );
            checked += 1;
        }
    }
    assert!(checked > 15, "only {checked} key reads found");
}

/// The reads of `.col("C")` (C in `columns`) that are not by key, with
/// their continuation, and how many reads were looked at.
fn whole_map_reads(source: &str, columns: &[&str]) -> (Vec<String>, usize) {
    let by_key = ["?.get(", "?.item(", "?.contains(", "?.keys_contain("];
    let (mut whole, mut checked) = (Vec::new(), 0);
    for column in columns {
        let call = format!(".col(\"{column}\")");
        for (at, _) in source.match_indices(&call) {
            checked += 1;
            // The continuation without whitespace (chains span lines).
            let rest: String = source[at + call.len()..]
                .chars()
                .take(400)
                .filter(|c| !c.is_whitespace())
                .collect();
            if by_key.iter().any(|k| rest.starts_with(k)) {
                continue;
            }
            // `.and_then(|ids| ids.item(K))`: the closure reads by key.
            if let Some(closure) = rest.strip_prefix(".and_then(|") {
                let (var, body) = closure.split_once('|').unwrap_or(("", ""));
                if by_key
                    .iter()
                    .any(|k| body.starts_with(&format!("{var}{}", &k[1..])))
                {
                    continue;
                }
            }
            // `let ids = row.col("external_ids")?;`: every later use of
            // `ids` up to the end of the function reads by key.
            if rest.starts_with("?;") {
                let line = &source[source[..at].rfind('\n').map_or(0, |i| i + 1)..at];
                if let Some(var) = line
                    .trim()
                    .strip_prefix("let ")
                    .and_then(|l| l.split(' ').next())
                {
                    let after = &source[at + call.len()..];
                    let body = &after[..after.find("\n}").unwrap_or(after.len())];
                    let uses = body.matches(&format!("{var}.")).count();
                    let keyed = by_key
                        .iter()
                        .map(|k| body.matches(&format!("{var}{}", &k[1..])).count())
                        .sum::<usize>();
                    if uses == keyed && uses > 0 {
                        continue;
                    }
                }
            }
            whole.push(format!(
                "{call}{}",
                rest.chars().take(60).collect::<String>()
            ));
        }
    }
    (whole, checked)
}

#[test]
fn projected_maps_are_only_read_key_by_key() {
    let projected: Vec<&str> = MONITORED_KEYS.iter().map(|(_, c, _)| *c).collect();
    let mut checked = 0;
    for source in nb_readers() {
        let (whole, n) = whole_map_reads(source, &projected);
        assert!(
            whole.is_empty(),
            "read as whole maps, but nb::MONITORED_KEYS projects them: {whole:?}"
        );
        checked += n;
    }
    assert!(checked > 10, "only {checked} reads of projected maps found");
}

#[test]
fn the_whole_map_scan_finds_whole_reads() {
    let src = "fn f() {\n  let a = row.col(\"external_ids\")?\n    .get(X)?;\n  let ids = row.col(\"external_ids\")?;\n  ids.item(Y)\n}\nfn g() {\n  if row.col(\"external_ids\")?.truthy() {}\n  let ids = row.col(\"options\")?;\n  ids.len()\n}\n";
    let (whole, checked) = whole_map_reads(src, &["external_ids", "options"]);
    assert_eq!(checked, 4);
    assert_eq!(whole.len(), 2, "{whole:?}");
    assert!(whole[0].contains("truthy") && whole[1].contains("?;"));
}

#[test]
fn the_key_scan_finds_reads() {
    let src = "let f = row.col(\"external_ids\")?.get(key::PORT_FIP)?;\n x(lsp.col(\"status\")?\n .item(key::HOSTING_CHASSIS)); external_id(&old, key::NETWORK_NAME); y.contains(\",\"); z.get(OTHER);";
    assert_eq!(
        key_reads(src),
        [
            ("PORT_FIP".to_string(), Some("external_ids")),
            ("HOSTING_CHASSIS".to_string(), Some("status")),
            ("NETWORK_NAME".to_string(), Some("external_ids")),
        ]
    );
}
