//! Benchmark (issue 5): apply 1k and 10k exposures (rule + route + address
//! each) into a fresh network namespace through `KernelNode`, next to
//! `ip -batch` of the same operations; then observe at 10k exposed IPs, with
//! full dumps (a resync) and through the netlink mirror.
//!
//! Run as root: `cargo bench -p obgp-node --bench apply` (results in docs/node.md).

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use obgp_netmodel::{proto, scope, Address, DevName, IpNet, RouteType};
use obgp_node::{KernelConfig, KernelNode, Scope};
use obgp_plan::{KernelRoute, Op};
use obgp_testbed::netns::Netns;

const TABLE: u32 = 200;

fn ip(i: usize) -> Ipv4Addr {
    // 100.64.0.0/10: room for 4M addresses.
    Ipv4Addr::from(u32::from(Ipv4Addr::new(100, 64, 0, 0)) + i as u32)
}

fn ops(n: usize) -> Vec<Op> {
    let br = DevName::new("br-ex").unwrap();
    let nic = DevName::new("bgp-nic").unwrap();
    let mut out = Vec::with_capacity(3 * n);
    for i in 0..n {
        let net = IpNet::new(IpAddr::V4(ip(i)), 32).unwrap();
        out.push(Op::AddRule {
            v6: false,
            dst: net,
            table: TABLE,
            table_name: None,
            priority: None,
        });
        out.push(Op::ReplaceRoute {
            route: KernelRoute {
                table: TABLE,
                v6: false,
                dst: Some(net),
                metric: None,
                dev: Some(br.clone()),
                via: None,
                proto: proto::BOOT,
                scope: scope::LINK,
                kind: RouteType::Unicast,
            },
            table_name: None,
        });
        out.push(Op::AddAddress(Address {
            dev: nic.clone(),
            net,
        }));
    }
    out
}

fn batch_text(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        let a = ip(i);
        s.push_str(&format!("rule add to {a}/32 table {TABLE}\n"));
        s.push_str(&format!(
            "route replace {a}/32 dev br-ex table {TABLE} proto boot scope link\n"
        ));
        s.push_str(&format!("addr add {a}/32 dev bgp-nic\n"));
    }
    s
}

fn fresh_node() -> Netns {
    let ns = Netns::new("bench").expect("netns (run as root)");
    ns.ip(&["link", "add", "br-ex", "type", "bridge"]).unwrap();
    ns.ip(&["link", "set", "br-ex", "up"]).unwrap();
    ns.ip(&["link", "add", "bgp-nic", "type", "ifb"]).unwrap();
    ns.ip(&["link", "set", "bgp-nic", "up"]).unwrap();
    ns
}

fn rate(ops: usize, d: Duration) -> f64 {
    ops as f64 / d.as_secs_f64()
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` would run us too: be quick then.
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    if std::env::var_os("OBGP_BENCH_TRACE").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter("obgp_node=debug,obgp_plan=debug")
            .with_writer(std::io::stderr)
            .init();
    }
    // OBGP_BENCH_ONLY_OBSERVE=1: build the 10k node with ip -batch and only
    // time the observer (quick iterations on the observer).
    let only_observe = std::env::var_os("OBGP_BENCH_ONLY_OBSERVE").is_some();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("| exposures | ops | KernelNode ops/s (median, best) | ip -batch ops/s (median, best) | ratio of medians |");
    println!("|---|---|---|---|---|");
    let mut observe_ns = None;
    let sizes: &[(usize, usize)] = if only_observe {
        &[]
    } else {
        &[(1_000, 7), (10_000, 3)]
    };
    if only_observe {
        let ns = fresh_node();
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(batch_text(10_000).as_bytes()).unwrap();
        ns.ip(&["-batch", f.path().to_str().unwrap()]).unwrap();
        observe_ns = Some((ns, tempfile::tempdir().unwrap()));
    }
    for &(n, rounds) in sizes {
        let plan = ops(n);
        let text = batch_text(n);
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        // Alternate the two in fresh namespaces, so that load from other
        // processes on the machine hits both alike.
        for _ in 0..rounds {
            let ns = fresh_node();
            let dir = tempfile::tempdir().unwrap();
            ours.push(rt.block_on(async {
                let mut k = KernelNode::connect(KernelConfig {
                    netns: Some(ns.path()),
                    rt_tables: dir.path().join("rt_tables"),
                    ..KernelConfig::default()
                })
                .await
                .unwrap();
                // The ifindex cache is filled by observe, as in a reconcile.
                k.observe(&Scope::default()).await.unwrap();
                let start = Instant::now();
                for op in &plan {
                    k.apply(op).await.unwrap_or_else(|e| panic!("{op}: {e}"));
                }
                start.elapsed()
            }));
            if n == 10_000 {
                observe_ns = Some((ns, dir));
            }

            let ns2 = fresh_node();
            let mut f = tempfile::NamedTempFile::new().unwrap();
            f.write_all(text.as_bytes()).unwrap();
            let path = f.path().to_str().unwrap().to_string();
            let start = Instant::now();
            ns2.ip(&["-batch", &path]).unwrap();
            theirs.push(start.elapsed());
        }
        ours.sort();
        theirs.sort();
        let med = |v: &[Duration]| v[v.len() / 2];
        let (a, b) = (rate(plan.len(), med(&ours)), rate(plan.len(), med(&theirs)));
        println!(
            "| {n} | {} | {a:.0}, {:.0} | {b:.0}, {:.0} | {:.2} |",
            plan.len(),
            rate(plan.len(), ours[0]),
            rate(plan.len(), theirs[0]),
            a / b
        );
    }

    let (ns, dir) = observe_ns.unwrap();
    let runs: usize = std::env::var("OBGP_BENCH_OBSERVE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let (full, mirrored, after_write, cloned) = rt.block_on(async {
        let mut k = KernelNode::connect(KernelConfig {
            netns: Some(ns.path()),
            rt_tables: dir.path().join("rt_tables"),
            ..KernelConfig::default()
        })
        .await
        .unwrap();
        let mut scope = Scope::default();
        scope.tables.insert(TABLE);
        let check = |a: &obgp_plan::Actual| {
            assert!(a.routes.len() >= 10_000);
            assert!(a.rules.len() >= 10_000 && a.addresses.len() >= 10_000);
        };
        let (mut full, mut mirrored, mut after_write, mut cloned) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let nic = DevName::new("bgp-nic").unwrap();
        for i in 0..runs {
            // Full dumps: what every observe cost before the mirror.
            k.resync();
            let start = Instant::now();
            check(&k.observe(&scope).await.unwrap());
            full.push(start.elapsed());

            // The mirror, nothing changed since the last observe.
            let start = Instant::now();
            let a = k.observe(&scope).await.unwrap();
            mirrored.push(start.elapsed());
            check(&a);
            // What of that is copying the owned state out.
            let start = Instant::now();
            let copy = a.clone();
            cloned.push(start.elapsed());
            drop(copy);

            // The mirror right after one write (an event's reconcile):
            // draining its notifications is part of the observe.
            let op = Op::AddAddress(Address {
                dev: nic.clone(),
                net: IpNet::new(IpAddr::V4(ip(1_000_000 + i)), 32).unwrap(),
            });
            k.apply(&op).await.unwrap();
            let start = Instant::now();
            check(&k.observe(&scope).await.unwrap());
            after_write.push(start.elapsed());
        }
        (full, mirrored, after_write, cloned)
    });
    let summary = |name: &str, times: &[Duration]| {
        let mut ms: Vec<f64> = times.iter().map(|t| t.as_secs_f64() * 1e3).collect();
        ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "observe at 10k exposed IPs (10k rules, routes, addresses), {name}: median {:.2} ms, min {:.2} ms, max {:.2} ms ({} runs)",
            ms[ms.len() / 2],
            ms[0],
            ms[ms.len() - 1],
            ms.len()
        );
    };
    println!();
    summary("full dumps (resync)", &full);
    summary("mirror, unchanged", &mirrored);
    summary("mirror, after one write", &after_write);
    summary("Actual::clone of that state", &cloned);
}
