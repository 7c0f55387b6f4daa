//! What a one-row NB change costs the OVN snapshot: patching the maintained
//! snapshot ([`LiveSnapshot::apply_nb`], with the changes it returns, +
//! [`LiveSnapshot::snapshot`]) next to
//! rebuilding it from every row: [`Snapshot::build`] (now a fresh live
//! snapshot fed every row: start, resync, lag) and the pre-incremental build
//! that `inputs()` ran on every reconcile (`old build`). Rows come from the shared topology generator, replayed in memory
//! (no server: this times the snapshot, not OVSDB).
//!
//! Two changes are timed, each applied and then reverted, so the database
//! stays the same size:
//! - `vm up/down`: a VM port's `up` flips (one LSP row),
//! - `new port`: a VM port is created on the provider switch (an LSP insert
//!   plus the switch row, whose `ports` lists every port of the network).
//!
//! Run: `cargo bench -p obgp-controller --bench snapshot_update [-- 10000 50000] [iters=N]`.

// The pre-incremental build (vectors rebuilt on every call), kept verbatim
// as the ovn crate's test oracle: timed here for comparison.
#[path = "../../ovn/tests/reference/mod.rs"]
mod reference;

use std::hint::black_box;
use std::time::{Duration, Instant};

use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::{LiveSnapshot, Snapshot, Tables, NB_DB};
use obgp_ovsdb_data::{Atom, Datum, Row, Uuid};
use obgp_topogen::{Params, Topology};
use serde_json::json;

fn nb_rows(vms: usize) -> Tables {
    let topo = Topology::generate(Params {
        vms,
        batch_ops: usize::MAX,
        ..Params::default()
    });
    let mut db = FixtureDb::from_wire(&json!({ NB_DB: {} })).expect("empty db");
    for ops in topo.nb_transactions() {
        db.apply(NB_DB, &ops).expect("topogen transaction");
    }
    let mut nb = db.dbs.remove(NB_DB).expect("NB rows");
    // The OVSDB cache holds every set sorted (the schema check sorts what
    // the server sends, and diffs are applied in place); the fixture keeps
    // insertion order. Sorted like the cache, so the live snapshot takes the
    // path it takes in the agent.
    for row in nb
        .get_mut("Logical_Switch")
        .into_iter()
        .flat_map(|t| t.values_mut())
    {
        if let Some(ports) = row.columns.get_mut("ports") {
            let mut sorted = ports.atoms().to_vec();
            sorted.sort_by_key(|a| a.as_uuid());
            *ports = Datum::set(sorted);
        }
    }
    nb
}

/// This thread's CPU time: unlike wall time, it leaves out the time the
/// thread waited for a core (the bench machine is shared).
fn cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we pass and nothing else.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Times `f` in wall and thread-CPU time.
fn timed(wall: &mut Vec<Duration>, cpu: &mut Vec<Duration>, f: impl FnOnce()) {
    let (c, t) = (cpu_time(), Instant::now());
    f();
    wall.push(t.elapsed());
    cpu.push(cpu_time() - c);
}

fn fmt3((a, b, c): (Duration, Duration, Duration)) -> String {
    format!("{a:.1?}/{b:.1?}/{c:.1?}")
}

/// Median, 99th percentile and maximum.
fn stats(mut d: Vec<Duration>) -> (Duration, Duration, Duration) {
    d.sort();
    let p99 = d[(d.len() * 99 / 100).min(d.len() - 1)];
    (d[d.len() / 2], p99, d[d.len() - 1])
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![10_000, 50_000]
    } else {
        sizes
    };
    let iters: usize = std::env::args()
        .find_map(|a| a.strip_prefix("iters=").and_then(|n| n.parse().ok()))
        .unwrap_or(1000);
    let lsp_table = "Logical_Switch_Port";
    let ls_table = "Logical_Switch";
    let no_ovs = Tables::new();
    println!(
        "{:>7} {:>12} {:>12} {:>26} {:>26}",
        "vms", "old build", "full build", "vm up/down med/p99/max", "new port med/p99/max"
    );
    for n in sizes {
        let nb = nb_rows(n);
        let mut builds = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            black_box(Snapshot::build(&nb, &no_ovs));
            builds.push(t.elapsed());
        }
        let (build_med, _, _) = stats(builds);
        let mut old_builds = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            black_box(reference::Snapshot::build(&nb, &no_ovs));
            old_builds.push(t.elapsed());
        }
        let (old_build_med, _, _) = stats(old_builds);

        let mut live = LiveSnapshot::default();
        live.reset_nb(&nb);
        let mut vms: Vec<(Uuid, Row)> = nb[lsp_table]
            .iter()
            .filter(|(_, r)| {
                r.str("type").unwrap_or("").is_empty() && r.strs("addresses").next().is_some()
            })
            .map(|(u, r)| (*u, r.clone()))
            .collect();
        vms.sort_by_key(|(u, _)| *u);
        let (provider_uuid, provider) = nb[ls_table]
            .iter()
            .max_by_key(|(_, r)| r.uuids("ports").count())
            .map(|(u, r)| (*u, r.clone()))
            .expect("a switch");
        let ports_before = provider.uuids("ports").count();

        let (mut flips, mut flips_cpu) = (Vec::new(), Vec::new());
        for i in 0..iters {
            let (uuid, row) = &vms[i % vms.len()];
            let mut flipped = row.clone();
            let up = row.bool("up") == Some(true);
            flipped
                .columns
                .insert("up", Datum::scalar(Atom::Boolean(!up)));
            for r in [&flipped, row] {
                timed(&mut flips, &mut flips_cpu, || {
                    black_box(live.apply_nb([(lsp_table, *uuid, Some(r))]));
                    black_box(live.snapshot());
                });
            }
        }

        let (mut inserts, mut inserts_cpu) = (Vec::new(), Vec::new());
        let (template_uuid, template) = &vms[0];
        let new_port = Uuid(template_uuid.0 ^ (1 << 127));
        let mut port = template.clone();
        port.columns
            .insert("name", Datum::scalar(Atom::String("bench-new-port".into())));
        let mut grown = provider.clone();
        if let Some(ports) = grown.columns.get_mut("ports") {
            let mut grown_ports = ports.atoms().to_vec();
            grown_ports.push(Atom::Uuid(new_port));
            grown_ports.sort_by_key(|a| a.as_uuid());
            *ports = Datum::set(grown_ports);
        }
        for _ in 0..iters {
            timed(&mut inserts, &mut inserts_cpu, || {
                black_box(live.apply_nb([
                    (lsp_table, new_port, Some(&port)),
                    (ls_table, provider_uuid, Some(&grown)),
                ]));
                black_box(live.snapshot());
            });
            timed(&mut inserts, &mut inserts_cpu, || {
                black_box(live.apply_nb([
                    (lsp_table, new_port, None),
                    (ls_table, provider_uuid, Some(&provider)),
                ]));
                black_box(live.snapshot());
            });
        }
        assert!(
            live.snapshot() == Snapshot::build(&nb, &no_ovs),
            "the live snapshot drifted from the rows"
        );
        println!(
            "{n:>7} {old_build_med:>12.2?} {build_med:>12.2?} {:>26} {:>26}   wall (provider switch: {ports_before} ports)",
            fmt3(stats(flips)),
            fmt3(stats(inserts)),
        );
        println!(
            "{:>33} {:>26} {:>26}   thread CPU",
            "",
            fmt3(stats(flips_cpu)),
            fmt3(stats(inserts_cpu)),
        );
    }
}
