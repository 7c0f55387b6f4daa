//! A steady-state reconcile with nothing to do: how long one reconcile of
//! a converged node takes at N ports, as the daemon's timers run it.
//!
//! The bench node of the latency bench (real NB and local OVS
//! ovsdb-servers with a topogen topology, a namespace node; `common`), a
//! `Reconciler` connected to it and converged by two reconciles, then
//! `iters` reconciles of each shape, alternating:
//!
//! - `periodic`: what `reconcile_interval` runs: the desired state patched
//!   (nothing changed: a no-op), the node observed from the netlink mirror,
//!   the whole node planned, nothing applied;
//! - `full`: the same with the desired state computed from every row, as
//!   start-up, a retry or `reconcile --once` do.
//!
//! Each line is the median (and max) of the reconcile's phases as its
//! report gives them, and its wall time. The CI kernel has no `vrf`, so
//! every reconcile plans and fails the same 3 link ops (`apply`).
//!
//! Run (root, ovsdb-server installed):
//! `cargo bench -p obgp-controller --bench steady -- [50000] [iters=20]`.
//! Not part of `cargo test`: without `--bench` it exits at once.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use common::start_node;
use obgp_controller::inputs::OvnSources;
use obgp_controller::{QueueConfig, ReconcileKind, ReconcileReport, Reconciler};

mod common;

/// One reconcile's phases, in ms: desired, observe, plan, apply, wall.
type Sample = [f64; 5];

fn sample(r: &ReconcileReport, wall: Duration) -> Sample {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    [
        ms(r.desired_time),
        ms(r.observe_time),
        ms(r.plan_time),
        ms(r.apply_time),
        ms(wall),
    ]
}

fn print(what: &str, samples: &[Sample], planned: usize) {
    let column = |i: usize| {
        let mut v: Vec<f64> = samples.iter().map(|s| s[i]).collect();
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[v.len() - 1])
    };
    let cells: Vec<String> = (0..5)
        .map(|i| {
            let (median, max) = column(i);
            format!("{median:>7.2} ({max:>6.2})")
        })
        .collect();
    println!("{what:>9} {} {planned:>7}", cells.join(" "));
}

async fn bench(vms: usize, iters: usize) -> Result<()> {
    let node = start_node(vms, 1, "steady").await?;
    let config = node.config(3600);
    let opts = node.options(QueueConfig::default())?;
    let sources = OvnSources::start(&config, Duration::from_secs(120))
        .await
        .context("connecting to the databases")?;
    sources
        .wait_synced(Duration::from_secs(120))
        .await
        .context("initial dumps")?;
    let mut r = Reconciler::connect(config.clone(), opts.kernel.clone()).await?;
    let inputs = sources.converged_inputs().await?;
    let (snap, ofports) = (&inputs.snapshot, &inputs.ofports);
    let t = Instant::now();
    let first = r
        .reconcile(snap, ofports, ReconcileKind::one_shot())
        .await?;
    eprintln!(
        "  N={vms}: converged in {:.1} s ({} ops, {} exposed)",
        t.elapsed().as_secs_f64(),
        first.ops_applied(),
        first.exposed
    );
    r.reconcile(snap, ofports, ReconcileKind::one_shot())
        .await?;

    let (mut periodic, mut full) = (Vec::new(), Vec::new());
    let mut planned = (0, 0);
    for i in 0..iters * 2 {
        let recompute = i % 2 == 1;
        // A periodic reconcile, whose desired state is patched; every
        // other one computed in full.
        let kind = ReconcileKind {
            recompute_desired: recompute,
            ..ReconcileKind::default()
        };
        let t = Instant::now();
        let report = r.reconcile(snap, ofports, kind).await?;
        let s = sample(&report, t.elapsed());
        if recompute {
            full.push(s);
            planned.1 = report.planned;
        } else {
            periodic.push(s);
            planned.0 = report.planned;
        }
    }
    println!(
        "{vms} ports, {} exposed, median (max) ms of {iters} reconciles each:",
        first.exposed
    );
    println!(
        "{:>9} {:>16} {:>16} {:>16} {:>16} {:>16} {:>7}",
        "reconcile", "desired", "observe", "plan", "apply", "wall", "planned"
    );
    print("periodic", &periodic, planned.0);
    print("full", &full, planned.1);
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        return Ok(());
    }
    let mut sizes: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    if sizes.is_empty() {
        sizes = vec![50_000];
    }
    let iters: usize = args
        .iter()
        .find_map(|a| a.strip_prefix("iters=")?.parse().ok())
        .unwrap_or(20);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    for vms in sizes {
        rt.block_on(bench(vms, iters))?;
    }
    Ok(())
}
