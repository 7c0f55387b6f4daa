//! Event-to-node latency of the agent's daemon loop (issue 6's benchmark).
//!
//! Real NB and local OVS ovsdb-servers (crates/testbed), a topogen topology
//! of N ports (10 % local), the controller's `run` loop in-process against a
//! namespace node. After the initial reconcile converged, each event inserts
//! a provider-network LSP bound to this host with `up=false`, then transacts
//! `up=true`; the latency runs from the transact reply to the kernel's
//! notification of the VM's announcement, received by an rtnetlink
//! multicast listener inside the namespace: RTM_NEWADDR for its /32 on
//! `bgp-nic`, or with `announce=route` RTM_NEWROUTE for its /32 route
//! (`common/kernel_events.rs`).
//!
//! Run (root, ovsdb-server installed):
//! `cargo bench -p obgp-controller --bench latency -- [1000 10000 50000] [events=200] [monitor=full|conditional|both] [periodic=0|1|both] [announce=address|route|both] [window=MS] [rate=N] [gap=MS]`
//!
//! Not part of `cargo test`: without cargo bench's `--bench` argument it
//! exits at once.
//!
//! Over 700 lines: one benchmark binary (bench harness, event driver,
//! kernel listener and report) that must run as a whole.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use common::kernel_events::{announcements_on, spawn_announcement_monitor};
use common::{start_node, BenchNode};
use obgp_config::AnnounceWith;
use obgp_controller::{run, QueueConfig};
use obgp_topogen::Params;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tracing_subscriber::layer::{Context as LayerContext, SubscriberExt};
use tracing_subscriber::Layer;

mod common;

/// The per-phase timings of one "reconciled" log event.
#[derive(Clone, Debug, Default)]
struct Phases {
    reasons: String,
    fields: HashMap<&'static str, f64>,
    /// When the event was logged (right after the reconcile's apply).
    at: Option<Instant>,
}

impl Phases {
    /// When the reconcile started: its log time minus its phases.
    fn started(&self) -> Option<Instant> {
        let ms: f64 = [
            "snapshot_ms",
            "desired_ms",
            "observe_ms",
            "plan_ms",
            "apply_ms",
        ]
        .iter()
        .filter_map(|k| self.fields.get(k))
        .sum();
        self.at?.checked_sub(Duration::from_secs_f64(ms / 1e3))
    }
}

/// Collects the controller's "reconciled" events (per-phase timings), its
/// warnings (failed ops) and the applier's per-op times.
struct PhaseLog {
    phases: Shared<Phases>,
    warnings: Shared<String>,
    ops: Shared<OpTime>,
}

/// One applied (or failed) op: its kind (`+ address`, `+ link`...), whether
/// it failed, and how long it took.
#[derive(Clone, Debug)]
struct OpTime {
    kind: String,
    failed: bool,
    us: f64,
}

/// The event's fields, its message and its `op` field.
struct PhaseVisitor<'a>(&'a mut Phases, String, String);

impl tracing::field::Visit for PhaseVisitor<'_> {
    fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
        self.0.fields.insert(field.name(), value);
    }
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        self.0.fields.insert(field.name(), value as f64);
    }
    fn record_bool(&mut self, field: &tracing::field::Field, value: bool) {
        self.0
            .fields
            .insert(field.name(), f64::from(u8::from(value)));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "reasons" {
            self.0.reasons = value.to_string();
        }
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.1 = format!("{value:?}");
        } else if field.name() == "op" {
            self.2 = format!("{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for PhaseLog {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: LayerContext<'_, S>) {
        let mut p = Phases::default();
        let mut v = PhaseVisitor(&mut p, String::new(), String::new());
        event.record(&mut v);
        let (message, op) = (v.1, v.2);
        if message == "applied" || message == "failed" {
            let kind: Vec<&str> = op.split_whitespace().take(2).collect();
            self.ops.lock().expect("op log").push(OpTime {
                kind: kind.join(" "),
                failed: message == "failed",
                us: p.fields.get("us").copied().unwrap_or(f64::NAN),
            });
        }
        if message == "reconciled" {
            p.at = Some(Instant::now());
            self.phases.lock().expect("phase log").push(p);
        } else if message == "observed" && std::env::var_os("OBGP_BENCH_TRACE").is_some() {
            // The node's own split of observe (refresh, netlink, total ms).
            eprintln!("observed {:?}", p.fields);
        } else if *event.metadata().level() <= tracing::Level::WARN {
            self.warnings.lock().expect("warnings").push(message);
        }
    }
}

type Shared<T> = Arc<Mutex<Vec<T>>>;
type Logs = (Shared<Phases>, Shared<String>, Shared<OpTime>);

/// The process-wide phase log: the daemon's tasks log from tokio's worker
/// threads, so the collecting subscriber must be the global one.
fn logs() -> Logs {
    static LOGS: OnceLock<Logs> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs: Logs = (Arc::default(), Arc::default(), Arc::default());
        let layer = PhaseLog {
            phases: Arc::clone(&logs.0),
            warnings: Arc::clone(&logs.1),
            ops: Arc::clone(&logs.2),
        };
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
            .expect("the first global subscriber");
        logs
    })
    .clone()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    // Nearest rank.
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

struct Outcome {
    vms: usize,
    announce_with: AnnounceWith,
    periodic: bool,
    latencies_ms: Vec<f64>,
    lost: usize,
    initial_s: f64,
    exposed_initial: usize,
    phases: Vec<Phases>,
    failed_ops: Vec<String>,
    op_times: Vec<OpTime>,
    /// Per event: commit to reconcile start, and reconcile start to address.
    split_ms: (Vec<f64>, Vec<f64>),
    /// Per event: how long the work queue held its reconcile back.
    queued: Vec<QueueWait>,
    /// Steal time during the events and their duration, ms.
    steal: Option<(f64, f64)>,
}

/// An event's latency and what the work queue added to it: the merge
/// window (it came within `window` of the previous event's reconcile) and
/// the rate limit.
struct QueueWait {
    latency_ms: f64,
    window_ms: f64,
    rate_ms: f64,
    /// Its reconcile's start and phases, and the reconcile before it.
    detail: String,
}

async fn bench_one(
    vms: usize,
    monitor_all: bool,
    announce_with: AnnounceWith,
    periodic: bool,
    events: usize,
    gap: Duration,
    queue: QueueConfig,
) -> Result<Outcome> {
    let node = start_node(vms, Params::default().seed, "lat").await?;
    let BenchNode {
        ns,
        topo,
        nb_session,
        ..
    } = &node;
    let monitor = spawn_announcement_monitor(ns, announce_with)?;
    let mut config = node.config(if periodic { 1 } else { 3600 });
    config.default.announce_with = announce_with;
    config.default.ovn_nb_monitor_all = monitor_all;
    let opts = node.options(queue)?;
    let (phase_log, warnings, op_log) = logs();
    phase_log.lock().expect("log").clear();
    warnings.lock().expect("warnings").clear();

    let shutdown = CancellationToken::new();
    let t = Instant::now();
    let daemon = tokio::spawn(run(config, opts, shutdown.clone()));

    // Converged: a reconcile ran, and the next (startup retries aside)
    // settled: the address count on bgp-nic is stable for 2 s.
    let mut last = (0, Instant::now());
    loop {
        if daemon.is_finished() {
            bail!("the daemon stopped: {:?}", daemon.await);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let n = announcements_on(ns, "bgp-nic", announce_with);
        let reconciled = !phase_log.lock().expect("log").is_empty();
        if n != last.0 {
            last = (n, Instant::now());
        } else if reconciled && n > 0 && last.1.elapsed() > Duration::from_secs(2) {
            break;
        }
        if t.elapsed() > Duration::from_secs(600) {
            bail!("no convergence within 600 s ({n} announcements on bgp-nic)");
        }
    }
    let initial_s = t.elapsed().as_secs_f64() - 2.0;
    let exposed_initial = last.0;
    while monitor.try_recv().is_ok() {}
    let first_phase = phase_log.lock().expect("log").len();
    op_log.lock().expect("op log").clear();
    eprintln!(
        "  N={vms}: converged, {exposed_initial} announcements on bgp-nic after ~{initial_s:.1} s"
    );

    let provider = topo.provider_switch();
    let mut latencies = Vec::with_capacity(events);
    let mut seen_at = Vec::with_capacity(events);
    let mut lost = 0;
    let (events_started, steal_before) = (Instant::now(), steal_ms());
    for i in 0..events {
        let ip = Ipv4Addr::new(172, 30, (i / 250) as u8, (i % 250 + 1) as u8);
        let name = format!("latency-vm-{i}");
        let mac = format!("fa:16:3f:00:{:02x}:{:02x}", i / 256, i % 256);
        let addr = format!("{mac} {ip}");
        let insert = vec![
            json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p", "row": {
                "name": name, "type": "", "addresses": addr, "port_security": addr,
                "up": false, "enabled": true,
                "options": ["map", [["requested-chassis", "host-000"]]],
                "external_ids": ["map", [
                    ["neutron:cidrs", format!("{ip}/12")],
                    ["neutron:device_id", format!("latency-dev-{i}")],
                    ["neutron:device_owner", "compute:nova"],
                    ["neutron:host_id", "host-000"],
                    ["neutron:network_name", provider.clone()]]]}}),
            json!({"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", provider]],
                "mutations": [["ports", "insert", ["set", [["named-uuid", "p"]]]]]}),
        ];
        nb_session
            .transact("OVN_Northbound", insert)
            .await
            .context("inserting the event's LSP")?;
        // Let the insert's (non-matching) update pass before the event.
        tokio::time::sleep(Duration::from_millis(50)).await;
        while monitor.try_recv().is_ok() {}
        let up = vec![json!({"op": "update", "table": "Logical_Switch_Port",
            "where": [["name", "==", name]], "row": {"up": true}})];
        nb_session.transact("OVN_Northbound", up).await?;
        let committed = Instant::now();
        // A lost event (no reconcile follows it, see docs/latency.md) is
        // counted and reported, not measured; the run goes on.
        let deadline = committed + Duration::from_secs(20);
        let seen = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match monitor.recv_timeout(left) {
                Ok((got, _ifindex, at)) if got == ip => break Some(at),
                Ok(_) => {}
                Err(_) => break None,
            }
        };
        match seen {
            Some(at) => {
                latencies.push(at.duration_since(committed).as_secs_f64() * 1e3);
                seen_at.push((committed, at));
            }
            None => {
                let phases = phase_log.lock().expect("log");
                let last: Vec<_> = phases.iter().rev().take(2).collect();
                eprintln!(
                    "  LOST: {ip} (event {i}) not on the node within 20 s; last reconciles {last:?}"
                );
                lost += 1;
            }
        }
        // Spread events so periodic reconciles fall at varying offsets;
        // `gap` is the shortest pause (see `main`).
        tokio::time::sleep(gap + Duration::from_millis((i as u64 * 37) % 60)).await;
    }
    let steal = steal_ms()
        .zip(steal_before)
        .map(|(after, before)| (after - before, events_started.elapsed().as_secs_f64() * 1e3));
    shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(60), daemon).await;
    let phases: Vec<Phases> = phase_log.lock().expect("log")[first_phase..].to_vec();
    let op_times = op_log.lock().expect("op log").clone();
    // Split each latency at the start of the reconcile that wrote the
    // address (the one running when it appeared): before it (OVSDB
    // delivery, event filter, work queue, a reconcile in flight) and from
    // it to the address (the reconcile up to that op).
    let (mut before, mut within) = (Vec::new(), Vec::new());
    let mut queued = Vec::new();
    for (committed, seen) in seen_at {
        let reconcile = phases
            .iter()
            .filter(|p| p.at.is_some_and(|at| at >= seen))
            .filter_map(|p| Some((p.started()?, p)))
            .find(|(started, _)| *started <= seen);
        if let Some((started, p)) = reconcile {
            let wait = |key| p.fields.get(key).copied().unwrap_or(0.0);
            let signed_ms = |a: Instant, b: Instant| {
                if a >= b {
                    a.duration_since(b).as_secs_f64() * 1e3
                } else {
                    -(b.duration_since(a).as_secs_f64() * 1e3)
                }
            };
            // The reconcile before it: what it was, and when it ended.
            let previous = phases
                .iter()
                .rfind(|q| q.at.is_some_and(|at| at < p.at.unwrap_or(at)))
                .map(|q| {
                    format!(
                        "previous [{}] ended {:+.2} ms from the commit",
                        q.reasons,
                        signed_ms(q.at.unwrap_or(committed), committed)
                    )
                })
                .unwrap_or_default();
            let phase = |k| p.fields.get(k).copied().unwrap_or(f64::NAN);
            queued.push(QueueWait {
                latency_ms: seen.duration_since(committed).as_secs_f64() * 1e3,
                window_ms: wait("window_wait_ms"),
                rate_ms: wait("rate_wait_ms"),
                detail: format!(
                    "start {:+.2} ms; snapshot {:.2} desired {:.2} observe {:.2} plan {:.2} apply {:.2}; {previous}",
                    signed_ms(started, committed),
                    phase("snapshot_ms"),
                    phase("desired_ms"),
                    phase("observe_ms"),
                    phase("plan_ms"),
                    phase("apply_ms"),
                ),
            });
            before.push(signed_ms(started, committed));
            within.push(signed_ms(seen, started));
        }
    }
    // Distinct warnings (the failing ops repeat every reconcile).
    let mut failed_ops: Vec<String> = warnings.lock().expect("warnings").clone();
    failed_ops.sort();
    failed_ops.dedup();
    Ok(Outcome {
        vms,
        announce_with,
        periodic,
        latencies_ms: latencies,
        lost,
        initial_s,
        exposed_initial,
        phases,
        failed_ops,
        op_times,
        split_ms: (before, within),
        queued,
        steal,
    })
}

/// CPU time the hypervisor gave to others while this VM wanted it (the
/// `steal` column of /proc/stat, all CPUs), in milliseconds. On a shared
/// VM it comes in bursts that stall whatever runs, so the bench reports it.
fn steal_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let cpu = stat.lines().find(|l| l.starts_with("cpu "))?;
    let steal: f64 = cpu.split_whitespace().nth(8)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some(steal * 1e3 / hz)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    percentile(&v, 50.0)
}

fn report(o: &Outcome) {
    let mut l = o.latencies_ms.clone();
    l.sort_by(f64::total_cmp);
    println!(
        "N={:<6} announce_with={:<7} periodic={:<5} events={:<4} lost={} median {:>8.2} ms  p95 {:>8.2}  p99 {:>8.2}  max {:>8.2}  min {:>6.2}   (initial reconcile ~{:.1} s, {} announcements)",
        o.vms,
        o.announce_with.as_str(),
        o.periodic,
        l.len(),
        o.lost,
        percentile(&l, 50.0),
        percentile(&l, 95.0),
        percentile(&l, 99.0),
        l.last().copied().unwrap_or(f64::NAN),
        l.first().copied().unwrap_or(f64::NAN),
        o.initial_s,
        o.exposed_initial,
    );
    let periodic = o
        .phases
        .iter()
        .filter(|p| p.reasons.contains("eriodic"))
        .count();
    print!(
        "    {} reconciles during the events ({} periodic); median per reconcile:",
        o.phases.len(),
        periodic
    );
    for key in [
        "snapshot_ms",
        "desired_ms",
        "desired_patched",
        "observe_ms",
        "plan_ms",
        "apply_ms",
        "ops",
        "failed",
    ] {
        let v: Vec<f64> = o
            .phases
            .iter()
            .filter_map(|p| p.fields.get(key).copied())
            .collect();
        print!(" {key} {:.2}", median(v));
    }
    println!();
    // The plan step of the reconciles that planned the changed keys alone
    // (events) against those that planned the whole node (periodic,
    // retries...), in the same run.
    let plan_ms = |incremental: bool| -> Vec<f64> {
        o.phases
            .iter()
            .filter(|p| (p.fields.get("plan_incremental") == Some(&1.0)) == incremental)
            .filter_map(|p| p.fields.get("plan_ms").copied())
            .collect()
    };
    let (inc, full) = (plan_ms(true), plan_ms(false));
    if !inc.is_empty() && !full.is_empty() {
        let (mi, mf) = (median(inc.clone()), median(full.clone()));
        println!(
            "    plan_ms median: {mi:.3} over {} reconciles of the changed keys, {mf:.3} over {} of the whole node (ratio {:.0})",
            inc.len(),
            full.len(),
            mf / mi.max(0.001)
        );
    }
    // The tails, and the periodic reconciles on their own (an event that
    // arrives during one waits for it).
    for (label, periodic_only, pct) in [
        ("p95 per reconcile", false, 95.0),
        ("periodic ones, median", true, 50.0),
    ] {
        let picked: Vec<&Phases> = o
            .phases
            .iter()
            .filter(|p| !periodic_only || p.reasons.contains("eriodic"))
            .collect();
        if picked.is_empty() {
            continue;
        }
        print!("    {label}:");
        for key in [
            "snapshot_ms",
            "desired_ms",
            "observe_ms",
            "plan_ms",
            "apply_ms",
        ] {
            let mut v: Vec<f64> = picked
                .iter()
                .filter_map(|p| p.fields.get(key).copied())
                .collect();
            v.sort_by(f64::total_cmp);
            print!(" {key} {:.2}", percentile(&v, pct));
        }
        println!();
    }
    let p95 = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        percentile(&v, 95.0)
    };
    let (before, within) = &o.split_ms;
    println!(
        "    commit -> reconcile start: median {:.2} ms, p95 {:.2}; reconcile start -> address: median {:.2} ms, p95 {:.2} ({} events)",
        median(before.clone()),
        p95(before),
        median(within.clone()),
        p95(within),
        before.len()
    );
    // What the work queue added: events whose reconcile it held back.
    let held = |f: fn(&QueueWait) -> f64| -> Vec<f64> {
        o.queued.iter().map(f).filter(|ms| *ms > 0.0).collect()
    };
    let (window, rate) = (held(|q| q.window_ms), held(|q| q.rate_ms));
    let mut quiet: Vec<f64> = o
        .queued
        .iter()
        .filter(|q| q.window_ms == 0.0 && q.rate_ms == 0.0)
        .map(|q| q.latency_ms)
        .collect();
    quiet.sort_by(f64::total_cmp);
    println!(
        "    queue: {} events waited for the merge window (median {:.2} ms), {} for the rate limit (median {:.2} ms); the {} others: median {:.2} ms, p99 {:.2}, max {:.2}",
        window.len(),
        median(window.clone()),
        rate.len(),
        median(rate.clone()),
        quiet.len(),
        percentile(&quiet, 50.0),
        percentile(&quiet, 99.0),
        quiet.last().copied().unwrap_or(f64::NAN),
    );
    if let Some((steal, span)) = o.steal {
        println!(
            "    machine: {steal:.0} ms of CPU stolen by the hypervisor during the {:.1} s of events ({:.2}% of 2 CPUs)",
            span / 1e3,
            steal / (2.0 * span) * 100.0
        );
    }
    // The slowest events, with what their reconcile and the one before did.
    let mut slowest: Vec<&QueueWait> = o.queued.iter().collect();
    slowest.sort_by(|a, b| b.latency_ms.total_cmp(&a.latency_ms));
    for q in slowest.iter().take(4) {
        println!("    slow: {:.2} ms: {}", q.latency_ms, q.detail);
    }
    // Per op kind over the reconciles during the events.
    let mut kinds: Vec<(&str, bool)> = o
        .op_times
        .iter()
        .map(|t| (t.kind.as_str(), t.failed))
        .collect();
    kinds.sort();
    kinds.dedup();
    for (kind, failed) in kinds {
        let us: Vec<f64> = o
            .op_times
            .iter()
            .filter(|t| t.kind == kind && t.failed == failed)
            .map(|t| t.us)
            .collect();
        let n = us.len();
        let mut sorted = us.clone();
        sorted.sort_by(f64::total_cmp);
        println!(
            "    op `{kind}`{}: {n} applied, median {:.0} us, p95 {:.0} us, max {:.0} us",
            if failed { " (failed)" } else { "" },
            median(us),
            percentile(&sorted, 95.0),
            sorted.last().copied().unwrap_or(f64::NAN),
        );
    }
    if let Some(p) = o.phases.last() {
        println!("    last reconcile: {:?} reasons={}", p.fields, p.reasons);
    }
    for f in &o.failed_ops {
        println!("    warning (deduplicated): {f}");
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        // `cargo test --all-targets` runs harness-less benches without
        // `--bench`: this one needs root and minutes, so it is bench-only.
        return Ok(());
    }
    let mut sizes: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    if sizes.is_empty() {
        sizes = vec![1000, 10_000, 50_000];
    }
    let events: usize = args
        .iter()
        .find_map(|a| a.strip_prefix("events=")?.parse().ok())
        .unwrap_or(200);
    // `announce=address|route|both`: how exposures are announced
    // (`announce_with`); `both` runs each size twice, alternating, so the
    // two are compared within one run.
    let announce: Vec<AnnounceWith> = match args.iter().find_map(|a| a.strip_prefix("announce=")) {
        Some("route") => vec![AnnounceWith::Route],
        Some("both") => vec![AnnounceWith::Address, AnnounceWith::Route],
        _ => vec![AnnounceWith::Address],
    };
    // `monitor=full|conditional|both` (full): `ovn_nb_monitor_all`.
    let monitors: Vec<bool> = match args.iter().find_map(|a| a.strip_prefix("monitor=")) {
        Some("conditional") => vec![false],
        Some("both") => vec![true, false],
        _ => vec![true],
    };
    let modes: Vec<bool> = match args.iter().find_map(|a| a.strip_prefix("periodic=")) {
        Some("0") => vec![false],
        Some("1") => vec![true],
        _ => vec![false, true],
    };
    // The work queue's policy (default: 100 ms merge window, 10/s sustained,
    // burst 5); `window=MS` and `rate=N` change it to see what the policy,
    // rather than the reconcile, adds to the tail.
    let mut queue = QueueConfig::default();
    if let Some(ms) = args
        .iter()
        .find_map(|a| a.strip_prefix("window=")?.parse().ok())
    {
        queue.window = std::time::Duration::from_millis(ms);
    }
    if let Some(rate) = args
        .iter()
        .find_map(|a| a.strip_prefix("rate=")?.parse::<u32>().ok())
        .and_then(std::num::NonZeroU32::new)
    {
        queue.max_per_second = rate;
    }
    // The pause after an event's address appeared before the next event's
    // insert: `gap` plus 0-59 ms. The next `up=true` follows the insert by
    // 50 ms, so the default 50 ms puts each event past the merge window
    // (100 ms) of the one before: every event is "the first after a quiet
    // period", which the issue says reconciles at once. `gap=20` (the
    // pacing before 2026-11-30 08:40) puts some events inside the previous
    // one's window; they wait for it to close, as the coalescing
    // rule asks, and the report counts them.
    let gap = Duration::from_millis(
        args.iter()
            .find_map(|a| a.strip_prefix("gap=")?.parse().ok())
            .unwrap_or(50),
    );
    println!(
        "queue: merge window {} ms, {} reconciles/s sustained, burst {}; events paced {}-{} ms after the previous address",
        queue.window.as_millis(),
        queue.max_per_second,
        queue.burst,
        gap.as_millis() + 50,
        gap.as_millis() + 109,
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    for &vms in &sizes {
        for &monitor_all in &monitors {
            let monitor = if monitor_all { "full" } else { "conditional" };
            for &periodic in &modes {
                for &how in &announce {
                    println!("N={vms} monitor={monitor}:");
                    let o = rt.block_on(bench_one(
                        vms,
                        monitor_all,
                        how,
                        periodic,
                        events,
                        gap,
                        queue.clone(),
                    ))?;
                    report(&o);
                }
            }
        }
    }
    Ok(())
}
