//! The agent binary's main job and initial convergence, from process start
//! (issue 18): at N ports, announcing with addresses and with routes, with
//! peak RSS.
//!
//! Per size N: real NB (a topogen topology of N ports, 10 % local) and
//! local OVS ovsdb-servers, a namespace node (`common::start_node`). Then,
//! per announce mode, on a fresh node namespace:
//! 1. `ovn-bgp-agent plan --format json`: wall time from spawn to exit.
//!    The plan's IPv4 announcements are what the daemon must write.
//! 2. `ovn-bgp-agent --debug plan --format json`: the memory after each
//!    stage (its `stage memory` events: synced, node read, desired,
//!    observed, planned, printed); the last one's VmHWM is the job's peak
//!    RSS. (`wait4`'s `ru_maxrss` cannot tell it: a child's maximum keeps
//!    the image it was forked with, this bench's, across `exec`.)
//! 3. the daemon: from spawn until the kernel reported every announcement
//!    of the plan (an rtnetlink listener in the namespace); VmHWM and VmRSS
//!    at that moment.
//! 4. with `resyncs=K`: K restarts of the NB ovsdb-server under the running
//!    daemon (a standalone server keeps no transaction history, so each
//!    reconnect is a full dump and a resync); after each, once the daemon
//!    logged the reconcile that follows the resync and 5 s more (its heap
//!    trim runs after that reconcile), its VmRSS, and at the end its VmHWM:
//!    the whole agent's peak through resyncs, against the DaemonSet's
//!    memory limit.
//! 5. with `nb=raft`: the NB is a 3-member RAFT cluster (the topology
//!    loaded into it; the agent pinned to member 0) and the agent keeps
//!    its cache in a `state_dir` of its own per mode. Steps 1 and 2 then
//!    start cold (no file yet); the daemon of step 3 writes the file at
//!    SIGTERM, and steps 1 and 2 are run again on it: the main job from a
//!    resumed cache (`monitor_cond_since`; a standalone server keeps no
//!    history, so only a cluster can resume). Around each `plan` the
//!    cluster's CPU (the three ovsdb-servers' user+system time from
//!    `/proc`): what one agent's sync costs the NB, cold and resumed.
//!
//! Run (root, ovsdb-server installed; the agent binary built first):
//! `cargo build --release --bin ovn-bgp-agent && cargo bench -p obgp-controller --bench convergence -- [10000 50000 100000] [announce=address|route|both] [monitor=full|conditional|both] [runs=N] [resyncs=K] [nb=standalone|raft]`
//!
//! The binary is `$OBGP_AGENT_BIN`, else `ovn-bgp-agent` beside the bench's
//! `target/release/`. Not part of `cargo test`: without cargo bench's
//! `--bench` argument it exits at once.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use common::kernel_events::spawn_announcement_monitor;
use common::{start_node, BenchNode};
use obgp_config::AnnounceWith;
use obgp_plan::op::Op;
use obgp_plan::Plan;
use obgp_testbed::ovsdb::Cluster;

mod common;

fn main() -> Result<()> {
    if !std::env::args().any(|a| a == "--bench") {
        return Ok(());
    }
    let mut sizes = Vec::new();
    let mut modes = vec![AnnounceWith::Address, AnnounceWith::Route];
    let mut monitors = vec![Monitor::Full];
    let mut runs = 1usize;
    let mut resyncs = 0usize;
    let mut raft = false;
    for a in std::env::args().skip(1).filter(|a| !a.starts_with("--")) {
        if let Some(v) = a.strip_prefix("announce=") {
            modes = match v {
                "address" => vec![AnnounceWith::Address],
                "route" => vec![AnnounceWith::Route],
                "both" => vec![AnnounceWith::Address, AnnounceWith::Route],
                _ => bail!("announce=address|route|both, not {v:?}"),
            };
        } else if let Some(v) = a.strip_prefix("monitor=") {
            monitors = match v {
                "full" => vec![Monitor::Full],
                "conditional" => vec![Monitor::Conditional],
                "both" => vec![Monitor::Full, Monitor::Conditional],
                _ => bail!("monitor=full|conditional|both, not {v:?}"),
            };
        } else if let Some(v) = a.strip_prefix("runs=") {
            runs = v.parse().context("runs=N")?;
        } else if let Some(v) = a.strip_prefix("resyncs=") {
            resyncs = v.parse().context("resyncs=K")?;
        } else if let Some(v) = a.strip_prefix("nb=") {
            raft = match v {
                "standalone" => false,
                "raft" => true,
                _ => bail!("nb=standalone|raft, not {v:?}"),
            };
        } else {
            sizes.push(a.parse::<usize>().with_context(|| format!("size {a:?}"))?);
        }
    }
    if sizes.is_empty() {
        sizes = vec![10_000, 50_000];
    }
    if raft && resyncs > 0 {
        bail!("resyncs=K restarts the standalone NB: not with nb=raft");
    }
    let binary = agent_binary()?;
    println!("agent binary: {}", binary.display());
    let rt = tokio::runtime::Runtime::new()?;
    for &n in &sizes {
        let mut node = rt.block_on(start_node(n, 1, "conv"))?;
        let cluster = match raft {
            true => Some(rt.block_on(raft_nb(&node))?),
            false => None,
        };
        for run in 0..runs {
            for &monitor in &monitors {
                for &how in &modes {
                    common::fresh_node_namespace(&mut node, "conv")?;
                    let r = measure(&binary, &mut node, how, monitor, resyncs, cluster.as_ref())
                        .with_context(|| {
                            format!("N={n}, announce_with={how:?}, {monitor:?} NB monitor")
                        })?;
                    r.print(n, how, monitor, run);
                }
            }
        }
    }
    Ok(())
}

/// The `ovn-bgp-agent` release binary.
fn agent_binary() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("OBGP_AGENT_BIN") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe()?;
    // target/release/deps/convergence-HASH -> target/release/ovn-bgp-agent
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("ovn-bgp-agent"))
        .context("the bench's target directory")?;
    if !bin.is_file() {
        bail!(
            "{} not found: `cargo build --release --bin ovn-bgp-agent` first, or set OBGP_AGENT_BIN",
            bin.display()
        );
    }
    Ok(bin)
}

/// A 3-member RAFT OVN_Northbound holding `node`'s topology (`nb=raft`).
async fn raft_nb(node: &BenchNode) -> Result<Cluster> {
    let cluster = Cluster::start("ovn-nb.ovsschema").context("the RAFT NB cluster")?;
    // A 5000-operation commit on a loaded machine can outlast the default
    // 1 s election timer (as in nb-resume-bench).
    cluster.set_election_timer(16_000)?;
    let leader = cluster.wait_leader(Duration::from_secs(30))?;
    let session = common::connect(&cluster.tcp_remote(leader)).await?;
    let t = Instant::now();
    node.topo
        .load(&session)
        .await
        .context("loading the topology into the cluster")?;
    eprintln!(
        "  topology loaded into the RAFT NB in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    Ok(cluster)
}

/// User + system CPU seconds of the three members together.
fn cluster_cpu_s(cluster: &Cluster) -> Result<f64> {
    let mut total = 0.0;
    for i in 0..3 {
        let pid = cluster.pid(i).context("a NB cluster member is down")?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        // utime and stime: fields 14 and 15, 12 and 13 after the ")" that
        // ends the command name.
        let rest = stat.rsplit_once(')').context("/proc/PID/stat format")?.1;
        let f: Vec<&str> = rest.split_whitespace().collect();
        total += (f[11].parse::<f64>()? + f[12].parse::<f64>()?) / 100.0;
    }
    Ok(total)
}

/// The main job again on the cache file the daemon wrote (`nb=raft`).
struct Resumed {
    plan_wall: Duration,
    plan_hwm_mib: f64,
    /// The cluster's CPU during the timed `plan`.
    server_cpu_s: f64,
    file_mb: f64,
}

/// `ovn_nb_monitor_all`: every NB row, or the rows this node needs.
#[derive(Clone, Copy, Debug)]
enum Monitor {
    Full,
    Conditional,
}

/// One mode's figures.
struct Figures {
    plan_wall: Duration,
    plan_hwm_mib: f64,
    stages: Vec<Stage>,
    announcements: usize,
    converged: Duration,
    daemon_hwm_mib: f64,
    daemon_rss_mib: f64,
    /// VmRSS after each NB resync (`resyncs=K`).
    resync_rss_mib: Vec<f64>,
    /// VmHWM after the last resync.
    resync_hwm_mib: Option<f64>,
    /// `nb=raft`: the cluster's CPU during the cold `plan`.
    plan_server_cpu_s: Option<f64>,
    /// `nb=raft`: the main job from the resumed cache.
    resumed: Option<Resumed>,
}

impl Figures {
    fn print(&self, n: usize, how: AnnounceWith, monitor: Monitor, run: usize) {
        println!(
            "N={n} announce_with={how:?} monitor={monitor:?} run={run}: plan {:.2} s, peak RSS {:.1} MiB | daemon converged ({} announcements) {:.2} s, VmHWM {:.1} MiB, VmRSS {:.1} MiB",
            self.plan_wall.as_secs_f64(),
            self.plan_hwm_mib,
            self.announcements,
            self.converged.as_secs_f64(),
            self.daemon_hwm_mib,
            self.daemon_rss_mib,
        );
        if let (Some(cold_cpu), Some(r)) = (self.plan_server_cpu_s, &self.resumed) {
            println!(
                "    cold plan: NB cluster CPU {cold_cpu:.2} s | resumed ({:.1} MB cache file): plan {:.2} s, peak RSS {:.1} MiB, NB cluster CPU {:.2} s | resumed/cold: time {:.3}, server CPU {:.3}",
                r.file_mb,
                r.plan_wall.as_secs_f64(),
                r.plan_hwm_mib,
                r.server_cpu_s,
                r.plan_wall.as_secs_f64() / self.plan_wall.as_secs_f64(),
                r.server_cpu_s / cold_cpu,
            );
        }
        if let Some(hwm) = self.resync_hwm_mib {
            let rss: Vec<String> = self
                .resync_rss_mib
                .iter()
                .map(|r| format!("{r:.1}"))
                .collect();
            println!(
                "    after {} NB resyncs: VmRSS {} MiB, VmHWM {hwm:.1} MiB",
                rss.len(),
                rss.join(" / ")
            );
        }
        for s in &self.stages {
            println!(
                "    {:<10} at {:>6.0} ms  RSS {:>6.1} MiB  VmHWM {:>6.1} MiB  heap {:>6.1} MiB",
                s.stage,
                s.at as f64 / 1e3,
                s.rss_mib,
                s.hwm_mib,
                s.heap_mib
            );
        }
    }
}

fn measure(
    binary: &Path,
    node: &mut BenchNode,
    how: AnnounceWith,
    monitor: Monitor,
    resyncs: usize,
    raft: Option<&Cluster>,
) -> Result<Figures> {
    let dir = node.dir.path();
    // `nb=raft`: a state_dir of this mode's own, empty: the first `plan`
    // starts cold.
    let state = match raft {
        Some(_) => {
            let d = dir.join(format!("state-{how:?}-{monitor:?}"));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d)?;
            Some(d)
        }
        None => None,
    };
    let config = write_config(node, how, monitor, raft.zip(state.as_deref()))?;
    common::fake_vtysh(dir)?;

    // 1. The main job, as an operator runs it.
    let cpu_before = raft.map(cluster_cpu_s).transpose()?;
    let (out, plan_wall) = timed_plan(binary, node, &config)?;
    let plan_server_cpu_s = match (raft, cpu_before) {
        (Some(c), Some(before)) => Some(cluster_cpu_s(c)? - before),
        _ => None,
    };
    let plan: Plan = serde_json::from_slice(&out).context("plan --format json")?;
    let expected = ipv4_announcements(&plan, how);
    if expected.is_empty() {
        bail!("the plan announces nothing");
    }

    // 2. The same with the stage memory at debug.
    let spawned_at = unix_micros(std::time::SystemTime::now());
    let out = agent(
        binary,
        node,
        &config,
        &["--debug", "--use-json", "plan", "--format", "json"],
    )
    .stdout(Stdio::null())
    .output()
    .context("plan --debug")?;
    let stages = stage_memory(&String::from_utf8_lossy(&out.stderr), spawned_at);
    let plan_hwm_mib = stages
        .last()
        .filter(|s| s.stage == "printed")
        .map(|s| s.hwm_mib)
        .context("no `printed` stage memory in plan --debug")?;

    // 3. The daemon, until the kernel holds every announcement.
    let monitor = spawn_announcement_monitor(&node.ns, how)?;
    let log = std::fs::File::create(dir.join(format!("agent-{how:?}.log")))?;
    let started = Instant::now();
    let log_path = dir.join(format!("agent-{how:?}.log"));
    let mut daemon = agent(binary, node, &config, &["--use-stderr"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .context("spawning the daemon")?;
    let mut seen = HashSet::new();
    let deadline = started + Duration::from_secs(300);
    while seen.len() < expected.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        match monitor.recv_timeout(left.min(Duration::from_secs(1))) {
            Ok((ip, _, _)) => {
                if expected.contains(&ip) {
                    seen.insert(ip);
                }
            }
            Err(_) if Instant::now() >= deadline => {
                stop(&mut daemon);
                bail!(
                    "{} of {} announcements after {:?}",
                    seen.len(),
                    expected.len(),
                    deadline - started
                );
            }
            Err(_) => {
                if let Some(status) = daemon.try_wait()? {
                    bail!("the daemon exited: {status}");
                }
            }
        }
    }
    let converged = started.elapsed();
    let status = std::fs::read_to_string(format!("/proc/{}/status", daemon.id()))?;
    let mut resync_rss_mib = Vec::new();
    let mut resync_hwm_mib = None;
    for k in 1..=resyncs {
        let resynced = || resync_reconciles(&log_path);
        let before = resynced()?;
        node.nb
            .restart()
            .context("restarting the NB ovsdb-server")?;
        let deadline = Instant::now() + Duration::from_secs(300);
        while resynced()? <= before {
            if let Some(status) = daemon.try_wait()? {
                bail!("the daemon exited during resync {k}: {status}");
            }
            if Instant::now() >= deadline {
                stop(&mut daemon);
                bail!("no reconcile after NB resync {k} within 300 s");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        std::thread::sleep(Duration::from_secs(5));
        let now = std::fs::read_to_string(format!("/proc/{}/status", daemon.id()))?;
        resync_rss_mib.push(status_kib(&now, "VmRSS:")? as f64 / 1024.0);
        resync_hwm_mib = Some(status_kib(&now, "VmHWM:")? as f64 / 1024.0);
    }
    stop(&mut daemon);
    let resumed = match (raft, &state) {
        // On an empty node again, as the cold plan ran: the daemon left
        // its announcements in this one.
        (Some(cluster), Some(state)) => Some(resumed_plan(
            binary, node, &config, cluster, state, how, &expected,
        )?),
        _ => None,
    };
    Ok(Figures {
        plan_wall,
        plan_hwm_mib,
        stages,
        announcements: expected.len(),
        converged,
        daemon_hwm_mib: status_kib(&status, "VmHWM:")? as f64 / 1024.0,
        daemon_rss_mib: status_kib(&status, "VmRSS:")? as f64 / 1024.0,
        resync_rss_mib,
        resync_hwm_mib,
        plan_server_cpu_s,
        resumed,
    })
}

/// Steps 1 and 2 again on the cache file the daemon wrote at SIGTERM
/// into `state`; fails unless the `--debug` run logged the resume and
/// the plan announces what the cold one did (`expected`).
fn resumed_plan(
    binary: &Path,
    node: &mut BenchNode,
    config: &Path,
    cluster: &Cluster,
    state: &Path,
    how: AnnounceWith,
    expected: &HashSet<std::net::Ipv4Addr>,
) -> Result<Resumed> {
    common::fresh_node_namespace(node, "conv")?;
    let file = state.join("OVN_Northbound.cache");
    let file_mb = std::fs::metadata(&file)
        .with_context(|| format!("the daemon wrote no cache file {}", file.display()))?
        .len() as f64
        / 1e6;
    let cpu_before = cluster_cpu_s(cluster)?;
    let (out, plan_wall) = timed_plan(binary, node, config)?;
    let server_cpu_s = cluster_cpu_s(cluster)? - cpu_before;
    let plan: Plan = serde_json::from_slice(&out).context("resumed plan --format json")?;
    if &ipv4_announcements(&plan, how) != expected {
        bail!("the plan from the resumed cache announces otherwise than the cold one");
    }
    let spawned_at = unix_micros(std::time::SystemTime::now());
    let out = agent(
        binary,
        node,
        config,
        &["--debug", "--use-json", "plan", "--format", "json"],
    )
    .stdout(Stdio::null())
    .output()
    .context("resumed plan --debug")?;
    let log = String::from_utf8_lossy(&out.stderr);
    if !log.contains("resumed monitor from the cache file's transaction id") {
        bail!(
            "the plan on {} did not resume; its log:\n{log}",
            file.display()
        );
    }
    let stages = stage_memory(&log, spawned_at);
    let at = |stage: &str| {
        stages
            .iter()
            .find(|s| s.stage == stage)
            .map(|s| s.at / 1000)
    };
    eprintln!(
        "    resumed plan --debug: synced at {:?} ms, desired at {:?} ms, printed at {:?} ms",
        at("synced"),
        at("desired"),
        at("printed")
    );
    let plan_hwm_mib = stages
        .last()
        .filter(|s| s.stage == "printed")
        .map(|s| s.hwm_mib)
        .context("no `printed` stage memory in the resumed plan --debug")?;
    Ok(Resumed {
        plan_wall,
        plan_hwm_mib,
        server_cpu_s,
        file_mb,
    })
}

/// How many reconciles the daemon's log reports done for a resync of the
/// central NB (its `reconciled` lines naming that reason).
fn resync_reconciles(log: &Path) -> Result<usize> {
    let text = std::fs::read_to_string(log).with_context(|| format!("{}", log.display()))?;
    Ok(text
        .lines()
        .filter(|l| l.contains("reconciled") && l.contains("resync of OVN_Northbound"))
        .count())
}

/// The agent's command line: its config file, the namespace node, the
/// fake vtysh first on PATH, an OVS run directory with no ovs-vswitchd.
fn agent(binary: &Path, node: &BenchNode, config: &Path, args: &[&str]) -> Command {
    let dir = node.dir.path();
    let mut c = Command::new(binary);
    c.arg("--config-file")
        .arg(config)
        .arg("--netns")
        .arg(node.ns.name())
        .arg("--rt-tables")
        .arg(dir.join("rt_tables"))
        .arg("--vty-socket")
        .arg(dir)
        .args(["--bgp-nic-kind", "ifb"])
        .args(args)
        .env("OVS_RUNDIR", dir.join("ovs-run"))
        .env(
            "PATH",
            format!(
                "{}:{}",
                dir.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        );
    c
}

/// The bench node's settings (`BenchNode::config`) as the agent's INI file.
/// `raft`: the cluster's member 0 as the NB and a `state_dir`.
fn write_config(
    node: &BenchNode,
    how: AnnounceWith,
    monitor: Monitor,
    raft: Option<(&Cluster, &Path)>,
) -> Result<PathBuf> {
    let c = node.config(300);
    let d = &c.default;
    let nb = match raft {
        Some((cluster, _)) => cluster.tcp_remote(0),
        None => c.ovn.ovn_nb_connection.clone().unwrap_or_default(),
    };
    let mut text = format!(
        "[DEFAULT]\n\
         driver = nb_ovn_bgp_driver\n\
         exposing_method = underlay\n\
         expose_tenant_networks = {}\n\
         bgp_router_id = {}\n\
         ovsdb_connection = {}\n\
         reconcile_interval = {}\n\
         frr_reconcile_interval = {}\n\
         announce_with = {}\n\
         ovn_nb_monitor_all = {}\n\
         \n[ovn]\n\
         ovn_nb_connection = {}\n",
        d.expose_tenant_networks,
        d.bgp_router_id.as_deref().unwrap_or_default(),
        d.ovsdb_connection,
        d.reconcile_interval,
        d.frr_reconcile_interval,
        match how {
            AnnounceWith::Address => "address",
            AnnounceWith::Route => "route",
        },
        matches!(monitor, Monitor::Full),
        nb,
    );
    if let Some((_, state)) = raft {
        text = text.replacen(
            "[DEFAULT]\n",
            &format!("[DEFAULT]\nstate_dir = {}\n", state.display()),
            1,
        );
    }
    let path = node.dir.path().join("bgp-agent.conf");
    std::fs::write(&path, text)?;
    Ok(path)
}

/// The IPv4 announcements a plan adds: /32 addresses on `bgp-nic`, or /32
/// routes with the agent's announcement protocol.
fn ipv4_announcements(plan: &Plan, how: AnnounceWith) -> HashSet<std::net::Ipv4Addr> {
    let v4_host = |net: &ipnet::IpNet| match net {
        ipnet::IpNet::V4(n) if n.prefix_len() == 32 => Some(n.addr()),
        _ => None,
    };
    plan.steps
        .iter()
        .filter_map(|s| match (&s.op, how) {
            (Op::AddAddress(a), AnnounceWith::Address) if a.dev.as_str() == "bgp-nic" => {
                v4_host(&a.net)
            }
            (Op::ReplaceRoute { route, .. }, AnnounceWith::Route)
                if route.proto == obgp_netmodel::proto::ANNOUNCE =>
            {
                route.dst.as_ref().and_then(v4_host)
            }
            _ => None,
        })
        .collect()
}

/// One `stage memory` event of the agent's log.
struct Stage {
    stage: String,
    rss_mib: f64,
    hwm_mib: f64,
    heap_mib: f64,
    /// When it was logged, µs after the process was spawned.
    at: i64,
}

/// The `stage memory` events of a `--use-json` log.
fn stage_memory(log: &str, spawned_at: i64) -> Vec<Stage> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["message"] == "stage memory")
        .map(|v| Stage {
            stage: v["stage"].as_str().unwrap_or("?").to_string(),
            rss_mib: v["rss_mib"].as_f64().unwrap_or(f64::NAN),
            hwm_mib: v["hwm_mib"].as_f64().unwrap_or(f64::NAN),
            heap_mib: v["heap_mib"].as_f64().unwrap_or(f64::NAN),
            at: v["timestamp"].as_str().map_or(0, micros_of) - spawned_at,
        })
        .collect()
}

/// µs since the Unix epoch of an RFC 3339 UTC timestamp as tracing writes
/// it (`2026-12-03T17:16:07.977509Z`); 0 if it is not one.
fn micros_of(ts: &str) -> i64 {
    let field = |r: std::ops::Range<usize>| ts.get(r).and_then(|v| v.parse::<i64>().ok());
    let (Some(y), Some(mo), Some(d), Some(h), Some(mi)) = (
        field(0..4),
        field(5..7),
        field(8..10),
        field(11..13),
        field(14..16),
    ) else {
        return 0;
    };
    let secs: f64 = ts
        .get(17..)
        .map(|v| v.trim_end_matches('Z'))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    // Days since 1970-01-01 of a proleptic Gregorian date (Howard
    // Hinnant's days_from_civil).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if mo > 2 { mo - 3 } else { mo + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 24 + h) * 60 + mi) * 60_000_000 + (secs * 1e6) as i64
}

fn unix_micros(t: std::time::SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// `plan --format json` from spawn to exit: its stdout and wall time.
fn timed_plan(binary: &Path, node: &BenchNode, config: &Path) -> Result<(Vec<u8>, Duration)> {
    let started = Instant::now();
    let child = agent(binary, node, config, &["plan", "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("spawning plan")?;
    let out = wait_for_stdout(child)?;
    Ok((out, started.elapsed()))
}

/// Waits for `child`, reading its stdout. Fails if it did not exit 0.
fn wait_for_stdout(child: Child) -> Result<Vec<u8>> {
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "plan: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(out.stdout)
}

fn status_kib(status: &str, key: &str) -> Result<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .with_context(|| format!("{key} in /proc/PID/status"))
}

/// SIGTERM, then wait (the agent leaves the node as it is).
fn stop(daemon: &mut Child) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(daemon.id() as libc::pid_t, libc::SIGTERM) };
    let _ = daemon.wait();
}
