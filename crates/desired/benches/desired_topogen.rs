//! Benchmark on the project's shared topology generator (crates/topogen, the
//! shape of upstream's `gen_ovn_topology.py`): its NB transactions are
//! replayed in memory with `obgp_ovn::fixture`, then the pure part of one
//! reconcile is timed phase by phase: `desired_state`, `to_node`, and
//! `obgp_plan::plan_after` in the two event cases:
//!
//! - `plan +1`: a VM port came up. The node is converged on the desired
//!   state without that VM's exposure (the previous desired state), and the
//!   new desired state has it;
//! - `plan -1`: a VM port went away. The node is converged on the full
//!   desired state, the new desired state lacks the exposure.
//!
//! `patched` is `DesiredCache::compute` after one local VM port went down or
//! came up (alternately) in a live snapshot, desired state and node objects
//! both: what an event costs now, against `desired` + `to_node` (the full
//! computation).
//!
//! Last, one event's plan both ways on the same inputs: `plan_after` (the
//! whole node) and `plan_changes` on `DesiredCache::changes` (the keys the
//! patch changed), while a local VM port flips `up` and the node takes each
//! plan; the two must give the same steps. Measured twice: with warm
//! caches, and with caches emptied before each plan (as in the daemon,
//! where events come a reconcile apart).
//!
//! "Converged" is what the kernel would report after the plan ran: the plan
//! from a bare node (br-ex with its patch port, the kernel's default rules)
//! is applied to an `obgp_plan::SimulatedNode`, which must then plan nothing.
//!
//! Run: `cargo bench -p obgp-desired --bench desired_topogen [-- 10000 ...] [iters=N] [dump=DIR]`.
//! `dump=DIR` writes the desired node and both plans per size (Debug text),
//! to diff the results of two builds.

use std::hint::black_box;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use obgp_config::{Config, Driver, ExposingMethod};
use obgp_desired::{desired_state, explain, Computed, Desired, DesiredCache, NodeFacts, Query};
use obgp_netmodel::{Class, DesiredNode, DevName, MacAddr};
use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::{LiveSnapshot, Snapshot, Tables, NB_DB, OVS_DB};
use obgp_ovsdb_data::Datum;
use obgp_plan::{
    plan, plan_after, plan_changes, Actual, ActualLink, Coverage, Plan, SimulatedNode,
};
use obgp_topogen::{Params, Topology};
use serde_json::json;

/// This thread's CPU time in ns (`CLOCK_THREAD_CPUTIME_ID`; schedstat only
/// moves at scheduler ticks here).
fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The NB topology of `vms` VM ports plus this node's OVS database
/// (`host-000`/`chassis-000`, physnet1 on br-ex with the provnet patch
/// port). Returns the snapshot, the patch port's name, and both databases'
/// rows.
fn load(vms: usize, distributed: bool) -> (Snapshot, String, Tables, Tables) {
    let topo = Topology::generate(Params {
        vms,
        distributed,
        batch_ops: usize::MAX,
        ..Params::default()
    });
    let mut db = FixtureDb::from_wire(&json!({ NB_DB: {} })).expect("empty db");
    for ops in topo.nb_transactions() {
        db.apply(NB_DB, &ops).expect("topogen transaction");
    }
    let localnet = db.dbs[NB_DB]["Logical_Switch_Port"]
        .values()
        .find(|r| r.str("type") == Some("localnet"))
        .and_then(|r| r.str("name"))
        .expect("a localnet")
        .to_string();
    let patch = format!("patch-{localnet}-to-br-int");
    let ovs = FixtureDb::from_wire(&json!({ OVS_DB: {
        "Open_vSwitch": {"00000000-0000-4000-8000-0000000000a1": {"external_ids": ["map", [
            ["hostname", "host-000"], ["system-id", "chassis-000"],
            ["ovn-bridge-mappings", "physnet1:br-ex"]]]}},
        "Bridge": {"00000000-0000-4000-8000-0000000000a2": {"name": "br-ex",
            "ports": ["uuid", "00000000-0000-4000-8000-0000000000a3"]}},
        "Port": {"00000000-0000-4000-8000-0000000000a3": {"name": patch}}
    }}))
    .expect("ovs fixture");
    db.dbs.insert(OVS_DB.to_string(), ovs.dbs[OVS_DB].clone());
    (
        db.snapshot(),
        patch,
        db.dbs[NB_DB].clone(),
        db.dbs[OVS_DB].clone(),
    )
}

/// On-CPU ns of `DesiredCache::compute` after a local VM port (the source
/// of a wired VM exposure) flips `up`, once per iteration.
fn patched_cpu_ns(
    nb: &Tables,
    ovs: &Tables,
    d: &Desired,
    config: &Config,
    facts: &NodeFacts,
    iters: usize,
) -> Vec<u64> {
    let lsp = "Logical_Switch_Port";
    let vms: Vec<_> = d
        .exposed
        .values()
        .filter(|e| e.class == Class::Vm && e.source.table == lsp)
        .map(|e| e.source.uuid)
        .collect();
    let vm = vms[vms.len() / 2];
    let up = nb[lsp][&vm].clone();
    let mut down = up.clone();
    down.columns
        .insert("up", Datum::from_wire(&json!(false)).expect("boolean"));
    let mut live = LiveSnapshot::default();
    let mut changes = live.reset_nb(nb);
    changes.then(live.reset_ovs(ovs));
    let mut cache = DesiredCache::default();
    cache
        .compute(&live.snapshot(), &mut changes, config, facts)
        .expect("supported");
    cache.settle();
    (0..iters)
        .map(|i| {
            let row = if i % 2 == 0 { &down } else { &up };
            changes.then(live.apply_nb([(lsp, vm, Some(row))]));
            let snap = live.snapshot();
            let c0 = cpu_ns();
            let how = cache
                .compute(black_box(&snap), &mut changes, config, facts)
                .expect("supported");
            black_box(cache.node());
            let c1 = cpu_ns();
            assert_eq!(how, Computed::Patched { ports: 1 });
            cache.settle();
            c1 - c0
        })
        .collect()
}

/// Writes 32 MB: whatever the caches held is gone, as it is in the daemon
/// when the next event comes (the sets were last walked a reconcile ago).
fn evict_caches() {
    let mut junk = vec![0u8; 32 << 20];
    for (i, b) in junk.iter_mut().enumerate() {
        *b = i as u8;
    }
    black_box(&junk);
}

/// On-CPU ns of planning one event, in full (`plan_after`) and from the
/// changed keys (`DesiredCache::changes` + `plan_changes`), on the same
/// inputs in the same iteration: a local VM port flips `up` (down, up, ...),
/// the cache patches the desired state, and the node holds the settled one
/// (it takes each plan, as a reconcile would). The two alternate which runs
/// first; with `cold`, the caches are emptied before each.
#[allow(clippy::too_many_arguments)]
fn event_plan_cpu_ns(
    nb: &Tables,
    ovs: &Tables,
    d: &Desired,
    config: &Config,
    facts: &NodeFacts,
    patch: &str,
    iters: usize,
    cold: bool,
) -> (Vec<u64>, Vec<u64>) {
    let lsp = "Logical_Switch_Port";
    let vm = d
        .exposed
        .values()
        .filter(|e| e.class == Class::Vm && e.wiring.is_some() && e.source.table == lsp)
        .map(|e| e.source.uuid)
        .nth(d.exposed.len() / 20)
        .expect("a wired VM");
    let up = nb[lsp][&vm].clone();
    let mut down = up.clone();
    down.columns
        .insert("up", Datum::from_wire(&json!(false)).expect("boolean"));
    let mut live = LiveSnapshot::default();
    let mut changes = live.reset_nb(nb);
    changes.then(live.reset_ovs(ovs));
    let mut cache = DesiredCache::default();
    cache
        .compute(&live.snapshot(), &mut changes, config, facts)
        .expect("supported");
    cache.settle();
    let mut actual = converge(cache.node().expect("computed"), bare_node(patch));
    let (mut full, mut inc) = (Vec::new(), Vec::new());
    for i in 0..iters {
        let row = if i % 2 == 0 { &down } else { &up };
        changes.then(live.apply_nb([(lsp, vm, Some(row))]));
        let how = cache
            .compute(&live.snapshot(), &mut changes, config, facts)
            .expect("supported");
        assert_eq!(how, Computed::Patched { ports: 1 });
        let (node, settled) = (cache.node().expect("computed"), cache.settled());
        let time_full = || {
            if cold {
                evict_caches();
            }
            let c0 = cpu_ns();
            let p = plan_after(black_box(node), settled, &actual).expect("plannable");
            (cpu_ns() - c0, p)
        };
        let time_inc = || {
            if cold {
                evict_caches();
            }
            let c0 = cpu_ns();
            let changes = cache.changes().expect("patched");
            let (p, how) =
                plan_changes(black_box(node), settled, &actual, &changes).expect("plannable");
            let ns = cpu_ns() - c0;
            assert_eq!(how, Coverage::Changes);
            (ns, p)
        };
        let ((f, pf), (n, pi)) = if i % 4 < 2 {
            (time_full(), time_inc())
        } else {
            let inc = time_inc();
            (time_full(), inc)
        };
        assert!(
            !pf.is_empty() && pf.steps == pi.steps,
            "full:\n{pf}\nincremental:\n{pi}"
        );
        full.push(f);
        inc.push(n);
        let mut m = SimulatedNode::new(actual);
        m.apply_all(pf.ops());
        actual = m.actual;
        cache.settle();
    }
    (full, inc)
}

/// A node before the agent touched it: br-ex (an OVS bridge with a MAC and
/// the patch port), the kernel's default rules and rt_tables.
fn bare_node(patch: &str) -> Actual {
    let mut a = Actual::booted();
    let br = DevName::new("br-ex").expect("valid");
    a.links.insert(
        br.clone(),
        ActualLink::new(
            1,
            "openvswitch",
            Some(MacAddr([0x02, 0, 0, 0, 0xbe, 0xef])),
            true,
        ),
    );
    a.bridges
        .entry(br)
        .or_default()
        .ports
        .insert(patch.to_string(), 1);
    a
}

/// The node after the agent converged it on `node`, starting from `from`.
fn converge(node: &DesiredNode, from: Actual) -> Actual {
    let p = plan(node, &from).expect("plannable");
    let mut m = SimulatedNode::new(from);
    m.apply_all(p.ops());
    let failed: Vec<_> = m.log.iter().filter(|(_, r)| r.is_err()).collect();
    assert!(failed.is_empty(), "converging failed: {:?}", &failed[..1]);
    let again = plan_after(node, Some(node), &m.actual).expect("plannable");
    assert!(again.is_empty(), "not converged:\n{again}");
    m.actual
}

/// The desired state without one wired VM exposure (the middle one by IP).
fn without_one_vm(d: &Desired) -> (Desired, IpAddr) {
    let vms: Vec<IpAddr> = d
        .exposed
        .values()
        .filter(|e| e.class == Class::Vm && e.wiring.is_some())
        .map(|e| e.ip)
        .collect();
    let ip = vms[vms.len() / 2];
    let mut less = d.clone();
    less.exposed.remove(&ip);
    (less, ip)
}

fn median<T: Ord + Copy>(mut v: Vec<T>) -> T {
    v.sort();
    v[v.len() / 2]
}

/// Milliseconds, from nanoseconds (CPU time) or a `Duration` (wall time).
fn ms(t: impl Into<Nanos>) -> String {
    format!("{:.2}", t.into().0 as f64 / 1e6)
}

struct Nanos(u128);

impl From<u64> for Nanos {
    fn from(ns: u64) -> Nanos {
        Nanos(ns.into())
    }
}

impl From<Duration> for Nanos {
    fn from(d: Duration) -> Nanos {
        Nanos(d.as_nanos())
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sizes: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let iters: usize = args
        .iter()
        .find_map(|a| a.strip_prefix("iters=").and_then(|n| n.parse().ok()))
        .unwrap_or(30);
    let dump = args.iter().find_map(|a| a.strip_prefix("dump="));
    let sizes = if sizes.is_empty() {
        vec![10_000, 50_000, 100_000]
    } else {
        sizes
    };
    let mut config = Config::default();
    config.default.driver = Driver::NbOvnBgpDriver;
    config.default.exposing_method = ExposingMethod::Underlay;
    config.default.bgp_router_id = Some("192.0.2.1".into());
    config.default.expose_tenant_networks = true;
    let facts = NodeFacts::default();
    println!("median on-CPU ms per phase, and wall ms of the +1 pipeline ({iters} iterations)");
    println!(
        "{:>7} {:>11} {:>7} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6} {:>9} {:>9} {:>8}",
        "vms",
        "fip mode",
        "exposed",
        "objects",
        "desired",
        "patched",
        "to_node",
        "plan +1",
        "plan -1",
        "ops +1",
        "cpu +1",
        "wall +1",
        "explain"
    );
    let mut events = Vec::new();
    for &n in &sizes {
        for distributed in [false, true] {
            let (snap, patch, nb, ovs) = load(n, distributed);
            assert!(snap.warnings().is_empty(), "{:?}", &snap.warnings()[..1]);
            let desired = desired_state(&snap, &config, &facts).expect("supported");
            let full = desired.to_node();
            let c_patched = patched_cpu_ns(&nb, &ovs, &desired, &config, &facts, iters);
            let (less, gone) = without_one_vm(&desired);
            let less = less.to_node();
            let before = converge(&less, bare_node(&patch));
            let after = converge(&full, before.clone());

            // On-CPU time per phase (robust to the other load on the
            // machine), and the wall time of the +1 pipeline.
            let (mut c_desired, mut c_node, mut c_add, mut c_del, mut c_total, mut w_total) = (
                Vec::new(),
                Vec::new(),
                Vec::new(),
                Vec::new(),
                Vec::new(),
                Vec::new(),
            );
            let (mut add, mut del) = (Plan::default(), Plan::default());
            for _ in 0..iters {
                let t = Instant::now();
                let c0 = cpu_ns();
                let d = desired_state(black_box(&snap), &config, &facts).expect("supported");
                let c1 = cpu_ns();
                let node = d.to_node();
                let c2 = cpu_ns();
                add = plan_after(black_box(&node), Some(&less), &before).expect("plannable");
                let c3 = cpu_ns();
                w_total.push(t.elapsed());
                del = plan_after(black_box(&less), Some(&node), &after).expect("plannable");
                let c4 = cpu_ns();
                c_desired.push(c1 - c0);
                c_node.push(c2 - c1);
                c_add.push(c3 - c2);
                c_del.push(c4 - c3);
                c_total.push(c3 - c0);
                black_box((d, node));
            }
            // `explain` of one exposed IP: the traced full computation and
            // the lookups (whole-table scans included).
            let mut c_explain = Vec::new();
            for _ in 0..iters {
                let c0 = cpu_ns();
                let e = explain(black_box(&snap), &config, &facts, &Query::Ip(gone));
                c_explain.push(cpu_ns() - c0);
                assert!(e.expect("explained").exposed());
            }
            assert!(
                add.steps.iter().all(|s| s.op.is_add()) && !add.is_empty(),
                "plan +1 for {gone}:\n{add}"
            );
            assert!(
                del.steps.iter().all(|s| !s.op.is_add()) && !del.is_empty(),
                "plan -1 for {gone}:\n{del}"
            );
            let mode = if distributed {
                "distributed"
            } else {
                "centralized"
            };
            if let Some(dir) = dump {
                let path = format!("{dir}/{n}-{mode}.txt");
                let text = format!("{full:#?}\n{add:#?}\n{del:#?}\n");
                std::fs::write(&path, text).expect("write dump");
            }
            for cold in [false, true] {
                let (ev_full, ev_inc) = event_plan_cpu_ns(
                    &nb,
                    &ovs,
                    &desired,
                    &config,
                    &facts,
                    &patch,
                    iters * 2,
                    cold,
                );
                events.push((n, distributed, cold, ev_full, ev_inc));
            }
            let objects = full.addresses.len()
                + full.rules.len()
                + full.routes.len()
                + full.neighbours.len()
                + full.proxy_neighbours.len();
            println!(
                "{n:>7} {mode:>11} {:>7} {objects:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6} {:>9} {:>9} {:>8}",
                desired.exposed.len(),
                ms(median(c_desired)),
                ms(median(c_patched)),
                ms(median(c_node)),
                ms(median(c_add)),
                ms(median(c_del)),
                add.steps.len(),
                ms(median(c_total)),
                ms(median(w_total)),
                ms(median(c_explain)),
            );
        }
    }
    println!();
    println!("one event's plan (a local VM port's up flips), on-CPU ms: full plan_after vs the changed keys ({} iterations)", iters * 2);
    println!(
        "{:>7} {:>11} {:>6} {:>10} {:>10} {:>10} {:>10} {:>7}",
        "vms", "fip mode", "caches", "full med", "full p95", "incr med", "incr p95", "ratio"
    );
    for (n, distributed, cold, full, inc) in events {
        let p95 = |mut v: Vec<u64>| {
            v.sort_unstable();
            v[v.len() * 95 / 100]
        };
        let (fm, im) = (median(full.clone()), median(inc.clone()));
        println!(
            "{n:>7} {:>11} {:>6} {:>10.3} {:>10.3} {:>10.4} {:>10.4} {:>7.0}",
            if distributed {
                "distributed"
            } else {
                "centralized"
            },
            if cold { "cold" } else { "warm" },
            fm as f64 / 1e6,
            p95(full) as f64 / 1e6,
            im as f64 / 1e6,
            p95(inc) as f64 / 1e6,
            fm as f64 / im.max(1) as f64,
        );
    }
}
