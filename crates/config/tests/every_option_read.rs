//! Every option of the registry is either read by the agent or marked
//! ignored (and then warned about when set): a source scan of the crates
//! that use the configuration.
//!
//! An option is read when its `Config` field (the option's name in lower
//! case) is accessed as `.<field>` in the non-test code of the binary
//! (`src/`) or of any crate but this one (`crates/*/src/`). Test code is
//! left out (`tests/`, `benches/`, `tests.rs` files, and a file's text from
//! its first `#[cfg(test)]` on), and so are comments. A field name two
//! sections share (`ovn_nb_connection` in `[ovn]` and
//! `[local_ovn_cluster]`) counts for a section only when it is accessed
//! through that section's field (`config.ovn.ovn_nb_connection`).

use std::path::{Path, PathBuf};

use obgp_config::options::{OptSpec, OPTIONS};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "tests" && name != "benches" {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// The agent's non-test code outside the config crate, comments removed.
fn agent_sources() -> Vec<(PathBuf, String)> {
    let root = workspace();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let crates = std::fs::read_dir(root.join("crates")).expect("crates/");
    for krate in crates.flatten() {
        if krate.file_name() != "config" {
            rust_files(&krate.path().join("src"), &mut files);
        }
    }
    assert!(files.len() > 50, "found only {} source files", files.len());
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            let code: String = code
                .lines()
                .map(|l| l.split("//").next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n");
            (path, code)
        })
        .collect()
}

/// The `Config` field that holds `spec`, and the section field it is in.
fn field(spec: &OptSpec) -> (String, &'static str) {
    let section = match (spec.section, spec.name) {
        ("DEFAULT", "debug" | "log_file" | "log_dir" | "use_json" | "use_stderr") => "log",
        ("DEFAULT", _) => "default",
        (s, _) => s,
    };
    (spec.name.to_lowercase(), section)
}

/// Where `spec`'s field is read: `path: line` of each access.
fn reads(spec: &OptSpec, sources: &[(PathBuf, String)]) -> Vec<String> {
    let (name, section) = field(spec);
    // The sections of the other options with the same field name.
    let others: Vec<&str> = OPTIONS
        .iter()
        .filter(|o| !std::ptr::eq(*o, spec))
        .map(field)
        .filter(|(n, _)| *n == name)
        .map(|(_, s)| s)
        .collect();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let pattern = format!(".{name}");
    let mut found = Vec::new();
    for (path, code) in sources {
        let mut from = 0;
        while let Some(at) = code[from..].find(&pattern) {
            let start = from + at;
            let end = start + pattern.len();
            from = end;
            if code[end..].starts_with(ident) {
                continue;
            }
            // The identifier the field is read from, across the line
            // breaks of a method chain (`config\n    .ovn\n    .field`).
            let head = code[..start].trim_end();
            let before = &head[head.trim_end_matches(ident).len()..];
            // A name two sections share counts only written through
            // its own section's field (`config.ovn.ovn_nb_connection`):
            // an alias (`o.ovn_nb_connection`) could be either.
            if !others.is_empty() && before != section {
                continue;
            }
            let line = code[..start].matches('\n').count() + 1;
            found.push(format!("{}:{line}", path.display()));
        }
    }
    found
}

#[test]
fn every_registered_option_is_read_by_the_agent_or_marked_ignored() {
    let sources = agent_sources();
    let mut wrong = Vec::new();
    for spec in OPTIONS {
        let at = reads(spec, &sources);
        match (spec.ignored, at.is_empty()) {
            (None, true) => wrong.push(format!(
                "[{}] {}: never read; read it, or mark it ignored with the reason",
                spec.section, spec.name
            )),
            (Some(_), false) => wrong.push(format!(
                "[{}] {}: marked ignored but read at {at:?}; drop the mark",
                spec.section, spec.name
            )),
            _ => {}
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The scan finds what it must: a read through an alias of the section
/// (`d.bgp_nic`), not a longer name that starts the same, and tells the
/// two `ovn_nb_connection` options apart.
#[test]
fn the_scan_finds_reads_and_tells_shared_names_apart() {
    let find = |section: &str, name: &str| {
        OPTIONS
            .iter()
            .find(|o| o.section == section && o.name == name)
            .unwrap()
    };
    let code = |text: &str| vec![(PathBuf::from("x.rs"), text.to_string())];
    let local = find("local_ovn_cluster", "ovn_nb_connection");
    let ovn = find("ovn", "ovn_nb_connection");
    let through_local = code("let c = &config.local_ovn_cluster.ovn_nb_connection;");
    assert_eq!(reads(local, &through_local).len(), 1);
    assert!(reads(ovn, &through_local).is_empty());
    let through_ovn = code("config.ovn.ovn_nb_connection.as_deref()");
    assert_eq!(reads(ovn, &through_ovn).len(), 1);
    assert!(reads(local, &through_ovn).is_empty());
    let through_alias = code("let o = &config.ovn; o.ovn_nb_connection.as_deref()");
    assert!(
        reads(ovn, &through_alias).is_empty(),
        "ambiguous: counts for neither"
    );
    assert!(
        reads(local, &through_alias).is_empty(),
        "ambiguous: counts for neither"
    );
    let nic = find("DEFAULT", "bgp_nic");
    assert_eq!(reads(nic, &code("d.bgp_nic.clone()")).len(), 1);
    assert!(reads(nic, &code("d.bgp_nic_kind")).is_empty());
}
