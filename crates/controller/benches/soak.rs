//! Soak benchmark (issue 14): random churn at scale against the agent's
//! daemon loop, then checks that the node equals a fresh desired state of
//! the final databases (`soak/end_check.rs`), RSS stayed flat, no event
//! was lost and no object leaked (IPv4 and IPv6).
//!
//! The bench node of `common` (real NB and local OVS ovsdb-servers, a
//! topogen topology of N ports, a namespace node, a fake vtysh), with a
//! real ovs-vswitchd for `br-ex` (`soak/vswitchd.rs`), runs the
//! controller's `run` loop in-process with a periodic reconcile. On top of
//! the topology the bench owns, in 172.28.0.0/14 and fd28::/16 (topogen
//! stays in 172.16/16): dual-stack provider-network VM ports (172.30-31,
//! fd28:30::/64), routers with a
//! gateway port on the provider network (172.28.0.x) and centralized FIPs
//! on them (172.29). It churns them at random: create and delete ports,
//! migrate a port to `host-001` and back (requested-chassis and
//! neutron:host_id), FIP on and off (NAT rows), gateway moves
//! (`status:hosting-chassis`), and restarts the NB ovsdb-server a few
//! times. Its own bookkeeping says which of its addresses must be on
//! `bgp-nic` at the end.
//!
//! Run (root, ovsdb-server installed):
//! `cargo bench -p obgp-controller --bench soak -- [50000] [duration=3600] [seed=1] [rate=4] [interval=30] [restarts=3] [rss-bound=1.5] [inject-leak]`
//! (`inject-leak`: leave objects on the node after the daemon stops; the
//! run passes only when the end check reports each of them).
//!
//! Not part of `cargo test`: without cargo bench's `--bench` argument it
//! exits at once.
//!
//! The churn driver is `soak/churn.rs`, the end check against a fresh
//! desired state `soak/end_check.rs`, ovs-vswitchd `soak/vswitchd.rs`; the
//! bench node it shares with the latency bench is in `common`.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use common::{start_node, BenchNode};
use obgp_controller::{run, QueueConfig};
use obgp_testbed::heap::{self, CountingAlloc};
use obgp_testbed::netns::Netns;
use tokio_util::sync::CancellationToken;
use tracing_subscriber::layer::{Context as LayerContext, SubscriberExt};
use tracing_subscriber::Layer;

// Live heap beside RSS: tells what the process holds from what the
// allocator keeps after a resync's transient copies are freed.
#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

#[path = "soak/churn.rs"]
mod churn;
mod common;
#[path = "soak/end_check.rs"]
mod end_check;
#[path = "soak/vswitchd.rs"]
mod vswitchd;

use churn::Churn;
use end_check::{diff, kernel_has_vrf, plural, refused_ops, EndCheck, NodeObjects};

/// The bench's own address ranges, 172.28.0.0/14 and fd28::/16: what the
/// churn's bookkeeping covers.
fn is_soak(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            o[0] == 172 && (28..=31).contains(&o[1])
        }
        IpAddr::V6(v6) => v6.segments()[0] == 0xfd28,
    }
}

struct Args {
    ports: usize,
    duration: Duration,
    seed: u64,
    /// Churn operations per second.
    rate: f64,
    reconcile_interval: u64,
    restarts: usize,
    /// RSS at the end over RSS after the initial sync must stay below this.
    rss_bound: f64,
    /// Leave objects the agent did not make on the node after the daemon
    /// stops; the run passes only if the end check reports each of them.
    inject_leak: bool,
}

impl Args {
    fn parse(args: &[String]) -> Args {
        let opt = |key: &str| {
            args.iter()
                .find_map(|a| a.strip_prefix(key)?.strip_prefix('='))
                .map(str::to_string)
        };
        Args {
            ports: args.iter().find_map(|a| a.parse().ok()).unwrap_or(50_000),
            duration: Duration::from_secs(
                opt("duration").and_then(|v| v.parse().ok()).unwrap_or(3600),
            ),
            seed: opt("seed").and_then(|v| v.parse().ok()).unwrap_or(1),
            rate: opt("rate").and_then(|v| v.parse().ok()).unwrap_or(4.0),
            reconcile_interval: opt("interval").and_then(|v| v.parse().ok()).unwrap_or(30),
            restarts: opt("restarts").and_then(|v| v.parse().ok()).unwrap_or(3),
            rss_bound: opt("rss-bound").and_then(|v| v.parse().ok()).unwrap_or(1.5),
            inject_leak: args.iter().any(|a| a == "inject-leak"),
        }
    }
}

/// Counts the controller's reconciles (all, and periodic ones) and its
/// warnings, from its log events.
#[derive(Clone, Default)]
struct Counters {
    reconciles: Arc<AtomicU64>,
    periodic: Arc<AtomicU64>,
    warnings: Arc<Mutex<BTreeMap<String, u64>>>,
}

struct CounterLayer(Counters);

#[derive(Default)]
struct Fields {
    message: String,
    reasons: String,
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "reasons" {
            self.reasons = value.to_string();
        }
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for CounterLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: LayerContext<'_, S>) {
        let mut f = Fields::default();
        event.record(&mut f);
        if f.message == "reconciled" {
            self.0.reconciles.fetch_add(1, Ordering::Relaxed);
            if f.reasons.contains("eriodic") {
                self.0.periodic.fetch_add(1, Ordering::Relaxed);
            }
        } else if *event.metadata().level() <= tracing::Level::WARN {
            // Bounded: one entry per distinct text, the first 160 chars.
            let key: String = f.message.chars().take(160).collect();
            *self
                .0
                .warnings
                .lock()
                .expect("warnings")
                .entry(key)
                .or_default() += 1;
        }
    }
}

/// This process's resident set, KiB (VmRSS of /proc/self/status).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// One RSS sample: seconds since the churn started, RSS KiB, reconciles
/// and churn events so far.
type Sample = (f64, u64, u64, u64);

/// Samples RSS every 5 s and prints one line per minute until `stop`.
fn spawn_sampler(
    counters: Counters,
    events: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) -> (std::thread::JoinHandle<()>, Arc<Mutex<Vec<Sample>>>) {
    let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
    let out = Arc::clone(&samples);
    let handle = std::thread::spawn(move || {
        let t0 = Instant::now();
        let mut next_minute = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let s = t0.elapsed().as_secs_f64();
            let sample = (
                s,
                rss_kib(),
                counters.reconciles.load(Ordering::Relaxed),
                events.load(Ordering::Relaxed),
            );
            out.lock().expect("samples").push(sample);
            if s as u64 >= next_minute * 60 {
                println!(
                    "  minute {:>3}: RSS {:>7.1} MiB (heap live {:>7.1} MiB), {:>6} reconciles ({} periodic), {:>6} events sent",
                    next_minute,
                    mib(sample.1),
                    heap::mib(heap::live()),
                    sample.2,
                    counters.periodic.load(Ordering::Relaxed),
                    sample.3
                );
                next_minute += 1;
            }
            std::thread::sleep(Duration::from_secs(5));
        }
    });
    (handle, samples)
}

fn soak(args: &Args, rt: &tokio::runtime::Runtime, counters: &Counters) -> Result<Vec<String>> {
    let mut node: BenchNode = rt.block_on(start_node(args.ports, args.seed, "soak"))?;
    let provider = node.topo.provider_switch();
    let mut churn = Churn::new(&node.nb, provider, args.seed)?;
    // The bench's initial objects, present at the first sync.
    for _ in 0..8 {
        churn.add_router(&node.nb)?;
    }
    for _ in 0..churn.max_ports / 2 {
        churn.create_port(&node.nb)?;
    }
    for _ in 0..24 {
        churn.fip_on(&node.nb)?;
    }
    let config = node.config(args.reconcile_interval);
    let opts = node.options(QueueConfig::default())?;
    let vswitchd = vswitchd::Vswitchd::start(&node.ns, &node.ovs, &node.dir.path().join("ovs-run"))
        .context("ovs-vswitchd for br-ex")?;
    // What the namespace holds before the agent ever ran: the end check
    // leaves it out. Whether this kernel has VRFs: which ops it refuses.
    let before_agent = NodeObjects::read(&node.ns)?;
    let refused = refused_ops(kernel_has_vrf(&node.ns));

    let shutdown = CancellationToken::new();
    let t = Instant::now();
    let daemon = rt.spawn(run(config.clone(), opts.clone(), shutdown.clone()));
    // Initial sync: our expected addresses are there and the address count
    // is stable for 3 s.
    let mut last = (0, Instant::now());
    loop {
        if daemon.is_finished() {
            bail!("the daemon stopped: {:?}", rt.block_on(daemon));
        }
        std::thread::sleep(Duration::from_millis(500));
        let objects = NodeObjects::read(&node.ns)?;
        let n = objects.by_kind.get("address").map_or(0, BTreeSet::len);
        let ours = objects.ips("address", is_soak) == churn.expected();
        if n != last.0 {
            last = (n, Instant::now());
        } else if ours && last.1.elapsed() > Duration::from_secs(3) {
            break;
        }
        if t.elapsed() > Duration::from_secs(1800) {
            bail!("no initial convergence within 1800 s ({n} addresses on bgp-nic)");
        }
    }
    let baseline = NodeObjects::read(&node.ns)?;
    let rss_synced = rss_kib();
    let heap_synced = heap::live();
    println!(
        "initial sync: {:.1} s, {} addresses on bgp-nic ({} of the bench), RSS {:.1} MiB",
        t.elapsed().as_secs_f64() - 3.0,
        last.0,
        churn.expected().len(),
        mib(rss_synced)
    );
    for (kind, set) in &baseline.by_kind {
        println!(
            "  node after the sync: {kind}: {} ({} in the bench's range)",
            set.len(),
            baseline.ips(kind, is_soak).len()
        );
    }

    let events = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (sampler, samples) =
        spawn_sampler(counters.clone(), Arc::clone(&events), Arc::clone(&stop));
    let reconciles_before = counters.reconciles.load(Ordering::Relaxed);
    let started = Instant::now();
    let gap = Duration::from_secs_f64(1.0 / args.rate.max(0.01));
    let restart_at: Vec<Duration> = (1..=args.restarts)
        .map(|k| args.duration.mul_f64(k as f64 / (args.restarts + 1) as f64))
        .collect();
    let mut restarts_done = 0;
    let mut restart_pause = Vec::new();
    while started.elapsed() < args.duration {
        if daemon.is_finished() {
            bail!(
                "the daemon stopped during the churn: {:?}",
                rt.block_on(daemon)
            );
        }
        if restart_at
            .get(restarts_done)
            .is_some_and(|at| started.elapsed() >= *at)
        {
            let t = Instant::now();
            node.nb
                .restart()
                .context("restarting the NB ovsdb-server")?;
            restart_pause.push(t.elapsed().as_secs_f64());
            restarts_done += 1;
            println!(
                "  NB ovsdb-server restarted at {:.0} s ({:.2} s down)",
                started.elapsed().as_secs_f64(),
                t.elapsed().as_secs_f64()
            );
        }
        churn.step(&node.nb)?;
        events.fetch_add(1, Ordering::Relaxed);
        let jitter = Duration::from_millis(churn.rng.below(50) as u64);
        std::thread::sleep(gap.saturating_sub(Duration::from_millis(25)) + jitter);
    }
    let churn_s = started.elapsed().as_secs_f64();

    // Quiet: the bench's addresses match the bookkeeping and stay so for
    // two periodic intervals' worth of checks (at most 300 s).
    let want = churn.expected();
    let t = Instant::now();
    let mut settled: Option<f64> = None;
    while t.elapsed() < Duration::from_secs(300) {
        let got = NodeObjects::read(&node.ns)?.ips("address", is_soak);
        if got == want {
            settled.get_or_insert(t.elapsed().as_secs_f64());
            if t.elapsed().as_secs_f64() - settled.unwrap_or(0.0) > 5.0 {
                break;
            }
        } else {
            settled = None;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let rss_end = rss_kib();
    let heap_end = heap::live();
    let reconciles = counters.reconciles.load(Ordering::Relaxed) - reconciles_before;
    shutdown.cancel();
    let _ = rt.block_on(async { tokio::time::timeout(Duration::from_secs(60), daemon).await });

    let injected = if args.inject_leak {
        inject_leaks(&node.ns, node.dir.path(), vswitchd.as_ref())?
    } else {
        Vec::new()
    };

    let mut failures = Vec::new();
    let end = NodeObjects::read(&node.ns)?;
    // (b) bgp-nic carries exactly what the churn's final state exposes.
    if let Some(d) = diff("bench addresses", &end.ips("address", is_soak), &want) {
        failures.push(d);
    }
    // (c) no leak in the bench's ranges: per kind and family, the
    // bench-range objects are the expected addresses (where the agent
    // writes that kind per exposure: it did after the sync) or none. Proxy
    // neighbours are per network, not per exposure: check (a) has them.
    for (kind, set) in &end.by_kind {
        for v6 in [false, true] {
            if *kind == "proxy neighbour" {
                continue;
            }
            let in_family = |ip: IpAddr| is_soak(ip) && ip.is_ipv6() == v6;
            let per_exposure = !baseline.ips(kind, in_family).is_empty();
            let expect: BTreeSet<IpAddr> = if per_exposure {
                want.iter()
                    .copied()
                    .filter(|ip| ip.is_ipv6() == v6)
                    .collect()
            } else {
                BTreeSet::new()
            };
            let family = if v6 { "IPv6" } else { "IPv4" };
            let label = format!("{family} {} in the bench's range", plural(kind));
            failures.extend(diff(&label, &end.ips(kind, in_family), &expect));
        }
        println!(
            "  node at the end: {kind}: {} ({} in the bench's range)",
            set.len(),
            end.ips(kind, is_soak).len()
        );
    }
    // (a) the node against a fresh desired state of the final databases:
    // the plan holds only the refused ops, every IP-carrying object (IPv4
    // and IPv6) is the desired state's, FRR has its text.
    let frr_applied = std::fs::read_to_string(node.dir.path().join(common::FRR_LAST_APPLIED)).ok();
    let end_check = rt.block_on(EndCheck::run(
        &config,
        &opts,
        &node.ns,
        &before_agent,
        frr_applied,
        &refused,
        vswitchd.as_ref(),
    ))?;
    failures.extend(end_check.failures.iter().cloned());
    // (d) RSS flat.
    let ratio = rss_end as f64 / rss_synced.max(1) as f64;
    if ratio > args.rss_bound {
        failures.push(format!(
            "RSS grew {ratio:.2}x (bound {}x): {:.1} MiB after the sync, {:.1} MiB at the end",
            args.rss_bound,
            mib(rss_synced),
            mib(rss_end)
        ));
    }

    let samples = samples.lock().expect("samples").clone();
    let (lo, hi) = samples
        .iter()
        .fold((u64::MAX, 0), |(lo, hi), s| (lo.min(s.1), hi.max(s.1)));
    // Flatness over the churn alone: the last sample over the first.
    let churn_ratio = match (samples.first(), samples.last()) {
        (Some(a), Some(b)) => b.1 as f64 / a.1.max(1) as f64,
        _ => f64::NAN,
    };
    println!("summary:");
    println!(
        "  {} ports (topology) + bench objects, seed {}, churn {:.0} s at {} ops/s target, reconcile_interval {} s",
        args.ports, args.seed, churn_s, args.rate, args.reconcile_interval
    );
    println!(
        "  events sent: {} ({:?}); NB restarts: {} (down {:?} s)",
        events.load(Ordering::Relaxed),
        churn.counts,
        restarts_done,
        restart_pause
            .iter()
            .map(|s| (s * 100.0).round() / 100.0)
            .collect::<Vec<_>>()
    );
    println!(
        "  reconciles during churn and settle: {reconciles} ({} periodic in total)",
        counters.periodic.load(Ordering::Relaxed)
    );
    println!(
        "  final state: {} bench addresses expected ({} ports, {} home; {} routers, {} home; {} FIPs); settled {}",
        want.len(),
        churn.ports.len(),
        churn.ports.iter().filter(|p| p.home).count(),
        churn.routers.len(),
        churn.routers.iter().filter(|r| r.home).count(),
        churn.fips.len(),
        settled.map_or("never (300 s)".to_string(), |s| format!("{s:.1} s after the churn stopped"))
    );
    println!(
        "  RSS: {:.1} MiB after the sync, {:.1} MiB at the end (ratio {ratio:.3}, bound {}), min {:.1} / max {:.1} MiB during the churn ({} samples)",
        mib(rss_synced),
        mib(rss_end),
        args.rss_bound,
        mib(lo),
        mib(hi),
        samples.len()
    );
    println!("  RSS over the churn alone (last sample / first): {churn_ratio:.3}");
    println!(
        "  heap live (what the process holds, not what the allocator keeps): {:.1} MiB after the sync, {:.1} MiB at the end, peak {:.1} MiB",
        heap::mib(heap_synced),
        heap::mib(heap_end),
        heap::mib(heap::peak())
    );
    println!(
        "  plan against a fresh desired state of the final databases: {} steps, {} of them refused by this node (named in the bench):",
        end_check.plan.steps.len(),
        end_check.refused.len()
    );
    for op in &end_check.refused {
        println!("    refused: {op}");
    }
    if vswitchd.is_some() {
        println!(
            "  flows: {} of the agent's read back from ovs-vswitchd (cookies 999 and 998)",
            end_check.flows_checked
        );
    }
    if let Some(lines) = end_check.frr_lines {
        println!("  FRR: the desired state's text ({lines} lines) checked against the text the agent applied last");
    }
    for what in &end_check.unchecked {
        println!("  not checked: {what}");
    }
    if args.inject_leak {
        return Ok(injected_check(&injected, &failures));
    }
    for (w, n) in counters.warnings.lock().expect("warnings").iter() {
        println!("  warning x{n}: {w}");
    }
    Ok(failures)
}

/// Objects the agent did not make, left on the node after the daemon
/// stopped (`inject-leak`): an IPv6 address in the bench's range on
/// `bgp-nic`, an IPv4 host route in a table of its own and an IPv6 rule;
/// and the FRR text applied last loses its last line (an apply that never
/// happened); with ovs-vswitchd, a flow with the agent's cookie 999 on
/// `br-ex`. Returns what the end check must name.
fn inject_leaks(
    ns: &Netns,
    dir: &std::path::Path,
    vswitchd: Option<&vswitchd::Vswitchd>,
) -> Result<Vec<String>> {
    ns.ip(&["-6", "addr", "add", "fd28:31::dead/128", "dev", "bgp-nic"])?;
    ns.ip(&[
        "-4",
        "route",
        "add",
        "172.31.255.250/32",
        "dev",
        "br-ex",
        "table",
        "4242",
    ])?;
    ns.ip(&[
        "-6",
        "rule",
        "add",
        "to",
        "fd28:31::beef",
        "lookup",
        "4242",
        "priority",
        "1000",
    ])?;
    let frr = dir.join(common::FRR_LAST_APPLIED);
    let text = std::fs::read_to_string(&frr).context("the FRR text applied last")?;
    let mut lines: Vec<&str> = text.lines().collect();
    lines.pop();
    std::fs::write(&frr, lines.join("\n"))?;
    println!("inject-leak: left fd28:31::dead on bgp-nic, a route to 172.31.255.250 in table 4242, a rule to fd28:31::beef; dropped the last line of the FRR text applied last");
    let mut injected: Vec<String> = [
        "fd28:31::dead",
        "172.31.255.250",
        "fd28:31::beef",
        "FRR text",
    ]
    .map(String::from)
    .to_vec();
    if let Some(v) = vswitchd {
        v.add_flow("br-ex", "cookie=999,priority=901,ipv6,actions=NORMAL")?;
        println!("inject-leak: added a flow with cookie 999 on br-ex");
        injected.push("cookie 999".to_string());
    }
    Ok(injected)
}

/// With `inject-leak`: the run passes only when the end check reported
/// each injected object (then its failures are what was asked for).
fn injected_check(injected: &[String], failures: &[String]) -> Vec<String> {
    for f in failures {
        println!("  end check reported: {f}");
    }
    let unreported: Vec<&String> = injected
        .iter()
        .filter(|ip| !failures.iter().any(|f| f.contains(ip.as_str())))
        .collect();
    if unreported.is_empty() {
        println!("inject-leak: the end check reported every injected object");
        Vec::new()
    } else {
        vec![format!(
            "inject-leak: the end check did not report {unreported:?}"
        )]
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        // `cargo test --all-targets` runs harness-less benches without
        // `--bench`: this one needs root and minutes, so it is bench-only.
        return Ok(());
    }
    let args = Args::parse(&args);
    let counters = Counters::default();
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(CounterLayer(counters.clone())),
    )
    .context("the global subscriber")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    println!(
        "soak: {} ports, {} s of churn at {} ops/s, seed {}, reconcile_interval {} s, {} NB restarts",
        args.ports,
        args.duration.as_secs(),
        args.rate,
        args.seed,
        args.reconcile_interval,
        args.restarts
    );
    let failures = soak(&args, &rt, &counters)?;
    if failures.is_empty() && args.inject_leak {
        println!("soak inject-leak: the end check reported every injected object");
        Ok(())
    } else if failures.is_empty() {
        println!("soak: all checks passed (node = fresh desired state but the refused ops, bench addresses as expected, no leaked object, RSS within bound)");
        Ok(())
    } else {
        for f in &failures {
            println!("FAILED: {f}");
        }
        std::process::exit(1);
    }
}
