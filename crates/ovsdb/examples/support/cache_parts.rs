//! `NB_BENCH_CACHE_PARTS=1`: where the synced cache's rows take their
//! memory, per table and column, in glibc chunks (what RSS pays, not the
//! bytes asked: a 24-byte request takes a 32-byte chunk, a 40-byte one 48).

use std::collections::{BTreeMap, HashSet};

use obgp_ovsdb_data::{Atom, DatumKind, DbSnapshot, Row};

/// The glibc malloc chunk of an `n`-byte request (64-bit: an 8-byte
/// header, 16-byte steps, 32 bytes at least); none for an empty slice.
fn chunk(n: usize) -> usize {
    match n {
        0 => 0,
        n => ((n + 8 + 15) & !15).max(32),
    }
}

/// Prints on stderr the cache's row memory by part, largest first: per
/// table the `Arc<Row>` and the column values, per column the boxed set
/// or map and the strings it holds (each allocation counted once, at its
/// first holder: interned strings shared by many rows count once). The
/// tables' B-trees, the rows' shared column names and the schema are not
/// counted.
pub fn print(nb: &DbSnapshot) {
    let mut seen: HashSet<*const u8> = HashSet::new();
    let mut parts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut add = |part: String, bytes: usize| {
        let e = parts.entry(part).or_default();
        e.0 += bytes;
        e.1 += 1;
    };
    let tables: Vec<String> = nb.tables().map(String::from).collect();
    for table in &tables {
        for (_, row) in nb.table(table).iter() {
            let arc_row = 2 * std::mem::size_of::<usize>() + std::mem::size_of::<Row>();
            add(format!("{table} Arc<Row>"), chunk(arc_row));
            // The values; the names are shared by the rows of one shape.
            let value = std::mem::size_of::<obgp_ovsdb_data::Datum>();
            add(
                format!("{table} column values"),
                chunk(row.columns.len() * value),
            );
            for (name, d) in row.columns.iter() {
                let (boxed, atoms): (usize, Vec<&Atom>) = match d.kind() {
                    // The empty set and a single atom are held inline.
                    DatumKind::Set(a) if a.len() <= 1 => (0, a.iter().collect()),
                    DatumKind::Set(a) => (chunk(std::mem::size_of_val(a)), a.iter().collect()),
                    DatumKind::Map(p) => (
                        chunk(std::mem::size_of_val(p)),
                        p.iter().flat_map(|(k, v)| [k, v]).collect(),
                    ),
                };
                add(format!("{table}.{name} set or map"), boxed);
                for s in atoms.into_iter().filter_map(Atom::as_str) {
                    if seen.insert(s.as_ptr()) {
                        // An `Arc<str>`: two counts, then the text.
                        add(format!("{table}.{name} strings"), chunk(16 + s.len()));
                    }
                }
            }
        }
    }
    let total: usize = parts.values().map(|(bytes, _)| bytes).sum();
    let mut parts: Vec<_> = parts.into_iter().filter(|(_, (b, _))| *b > 0).collect();
    parts.sort_by_key(|(_, (bytes, _))| std::cmp::Reverse(*bytes));
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    eprintln!("cache parts: rows {:.1} MiB in glibc chunks", mib(total));
    for (part, (bytes, n)) in parts.iter().take(20) {
        eprintln!("cache parts: {part:<44} {:>6.2} MiB ({n})", mib(*bytes));
    }
}
