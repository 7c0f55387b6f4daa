//! `NB_BENCH_SNAPSHOT_PARTS=1`: the indexed snapshot's heap by part.

use obgp_ovn::{LiveSnapshot, LogicalSwitchPort};
use obgp_ovsdb_data::DbSnapshot;
use obgp_testbed::heap;

use crate::indexed;

/// The NB cache restricted to some tables, as a snapshot source.
struct SomeTables<'a>(&'a DbSnapshot, &'a [&'a str]);

impl obgp_ovn::RowSource for SomeTables<'_> {
    fn rows(&self, table: &str) -> Vec<(obgp_ovsdb_data::Uuid, &obgp_ovsdb_data::Row)> {
        match self.1.contains(&table) {
            true => self.0.rows(table),
            false => Vec::new(),
        }
    }
    fn contains(&self, table: &str, uuid: obgp_ovsdb_data::Uuid) -> bool {
        self.1.contains(&table) && self.0.contains(table, uuid)
    }
}

/// `NB_BENCH_SNAPSHOT_PARTS=1`: where the indexed snapshot's heap goes,
/// on stderr: the typed ports alone (no index), then the snapshot built
/// over the NB tables added one at a time (`LiveSnapshot`'s order), each
/// line the heap that table's rows and indexes add.
pub fn snapshot_parts(nb: &DbSnapshot, ovs: &obgp_ovn::Tables, partial: bool) {
    use obgp_ovn::RowSource;
    let base = heap::live();
    let typed: Vec<_> = nb
        .rows(LogicalSwitchPort::TABLE)
        .into_iter()
        .filter_map(|(u, r)| LogicalSwitchPort::parse(u, r).ok().map(std::sync::Arc::new))
        .collect();
    eprintln!(
        "snapshot parts: typed ports alone ({} rows, Arc'd, no index) {:.1} MiB, size_of {} B",
        typed.len(),
        heap::mib(heap::live() - base),
        std::mem::size_of::<LogicalSwitchPort>()
    );
    drop(typed);
    let tables = obgp_ovn::live::NB_TABLES;
    let mut last = 0usize;
    for n in 1..=tables.len() {
        let base = heap::live();
        let snap = indexed(&SomeTables(nb, &tables[..n]), ovs, partial);
        let held = heap::live() - base;
        eprintln!(
            "snapshot parts: + {:<20} {:>6.1} MiB (rows {})",
            tables[n - 1],
            heap::mib(held.saturating_sub(last)),
            nb.rows(tables[n - 1]).len()
        );
        last = held;
        drop(snap);
    }
    // The live snapshot the agent keeps holds reverse references and the
    // parsed NATs beside the snapshot it hands out.
    let base = heap::live();
    let mut live = match partial {
        true => LiveSnapshot::with_partial_ports(),
        false => LiveSnapshot::default(),
    };
    live.reset_ovs(ovs);
    live.reset_nb(nb);
    let snap = live.snapshot();
    eprintln!(
        "snapshot parts: the live snapshot kept with its snapshot {:.1} MiB (the snapshot alone {:.1})",
        heap::mib(heap::live() - base),
        heap::mib(last)
    );
    drop((snap, live));
}
