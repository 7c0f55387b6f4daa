//! Benchmark on the project's shared topology generator (crates/topogen, the
//! shape of upstream's `gen_ovn_topology.py`): its NB transactions are
//! replayed in memory with `obgp_ovn::fixture`, then `desired_state` and
//! `to_node` are timed as in `desired_state.rs`.
//!
//! Run: `cargo bench -p obgp-desired --bench desired_topogen [-- 10000 ...] [iters=N]`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use obgp_config::{Config, Driver, ExposingMethod};
use obgp_desired::{desired_state, NodeFacts};
use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::{Snapshot, NB_DB, OVS_DB};
use obgp_topogen::{Params, Topology};
use serde_json::json;

fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The NB topology of `vms` VM ports plus this node's OVS database
/// (`host-000`/`chassis-000`, physnet1 on br-ex with the provnet patch port).
fn load(vms: usize, distributed: bool) -> Snapshot {
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
    db.snapshot()
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let iters: usize = std::env::args()
        .find_map(|a| a.strip_prefix("iters=").and_then(|n| n.parse().ok()))
        .unwrap_or(30);
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
    println!(
        "{:>8} {:>12} {:>8} {:>12} {:>12} {:>12} {:>13}",
        "vms", "fip mode", "exposed", "desired min", "desired med", "desired cpu", "+to_node med"
    );
    for n in sizes {
        for distributed in [false, true] {
            let snap = load(n, distributed);
            assert!(snap.warnings().is_empty(), "{:?}", &snap.warnings()[..1]);
            let (mut runs, mut with_node, mut cpu, mut exposed) = (Vec::new(), Vec::new(), 0u64, 0);
            for _ in 0..iters {
                let c0 = cpu_ns();
                let t = Instant::now();
                let d = desired_state(black_box(&snap), &config, &facts).expect("supported");
                runs.push(t.elapsed());
                cpu += cpu_ns() - c0;
                let node = d.to_node();
                with_node.push(t.elapsed());
                exposed = d.exposed.len();
                black_box(node);
            }
            runs.sort();
            with_node.sort();
            let mode = if distributed {
                "distributed"
            } else {
                "centralized"
            };
            println!(
                "{n:>8} {mode:>12} {exposed:>8} {:>12.2?} {:>12.2?} {:>12.2?} {:>13.2?}",
                runs[0],
                runs[runs.len() / 2],
                Duration::from_nanos(cpu / iters as u64),
                with_node[with_node.len() / 2]
            );
        }
    }
}
