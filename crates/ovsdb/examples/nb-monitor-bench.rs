//! Benchmark: initial monitor of an OVN_Northbound database holding N VM
//! ports, from connect until the cache is synced, monitoring exactly what
//! the agent's NB driver monitors (`obgp_ovn::nb::monitor_spec()`). Reports wall time and peak RSS of a fresh measuring
//! process, to set beside the Python IDL figures.
//!
//! `nb-monitor-bench --vms 10000,50000` creates a database per size, starts
//! ovsdb-server on it, loads the generated topology, then runs itself as
//! `nb-monitor-bench measure --remote unix:...` (so loading leaves no trace
//! in the measured process) and prints one line per run.
//! `nb-monitor-bench decode-file --file reply.json` decodes a reply saved
//! with `NB_BENCH_SAVE_REPLY` (profiling the streamed decoder alone).
//!
//! `--mode full,conditional` measures both monitors in turn on the same
//! database: `full` is `ovn_nb_monitor_all = true` (every port),
//! `conditional` is `false`: the first request asks for this node's ports
//! (`LspInterest` of the local identity `host-NNN`/`chassis-NNN`), then the
//! conditions follow the synced snapshot until they stop changing, as the
//! agent does before its first reconcile; the clock stops when they have.
//! `NB_BENCH_CACHE_PARTS=1` prints where the synced cache's rows take
//! their memory, per table and column (`support/cache_parts.rs`).
//! `--fleet N` restarts N agents at once instead (identities 0..N of a
//! topology generated with N hosts) and times until the last one synced.

#[path = "support/cache_parts.rs"]
mod cache_parts;
#[path = "support/proc_status.rs"]
mod proc_status;
#[path = "support/small_batches.rs"]
mod small_batches;
#[path = "support/snapshot_parts.rs"]
mod snapshot_parts;
// Its `local_ovs` only: this bench runs its own fixpoint, measured per round.
#[allow(dead_code)]
#[path = "support/conditional_agent.rs"]
mod conditional_agent;
use conditional_agent::local_ovs;
use proc_status::status_kib;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use obgp_ovn::{LiveSnapshot, LogicalSwitchPort, LspInterest};
use obgp_ovsdb::{Client, ClientConfig, Remote, Session, SessionConfig};
use obgp_ovsdb_data::{DbSnapshot, MonitorSpec};
use obgp_testbed::heap::{self, CountingAlloc};
use obgp_topogen::{Params, Topology};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// The NB driver's tables.
fn nb_driver_tables() -> impl Iterator<Item = &'static str> + Clone {
    obgp_ovn::nb::MONITORED_COLUMNS.iter().map(|(t, _)| *t)
}

/// Exactly what the agent's NB driver monitors (`obgp_ovn::nb::monitor_spec`,
/// used by the controller's sources): the tables and, in each, only the
/// columns the parsers and event predicates read, with `external_ids` and
/// `options` projected to the keys they read (`nb::MONITORED_KEYS`).
/// `NB_BENCH_WHOLE_MAPS=1` keeps every map whole, to compare (the
/// environment reaches the measuring process).
fn nb_driver_monitor() -> MonitorSpec {
    let mut spec = obgp_ovn::nb::monitor_spec();
    if std::env::var_os("NB_BENCH_WHOLE_MAPS").is_some() {
        for tm in spec.tables.values_mut() {
            tm.map_keys.clear();
        }
    }
    spec
}

/// Sends the monitor request on a plain socket and times the reply's first
/// and last byte: whether the server streams its reply while building it
/// (then decoding could overlap with building) or builds it whole first.
fn reply_timing(path: &str, request: &serde_json::Value) -> Result<(f64, f64, usize)> {
    reply_bytes(path, request, None)
}

/// [`reply_timing`], keeping the reply's bytes in `keep` if given.
fn reply_bytes(
    path: &str,
    request: &serde_json::Value,
    mut keep: Option<&mut Vec<u8>>,
) -> Result<(f64, f64, usize)> {
    use std::io::{Read, Write};
    let mut sock = std::os::unix::net::UnixStream::connect(path)?;
    let t0 = Instant::now();
    sock.write_all(request.to_string().as_bytes())?;
    let mut buf = vec![0u8; 1 << 20];
    let (mut first, mut total) = (None, 0usize);
    // Brace depth outside strings, as the session's framer counts it.
    let (mut depth, mut in_string, mut escaped) = (0u32, false, false);
    loop {
        let n = sock.read(&mut buf)?;
        if n == 0 {
            bail!("server closed the socket after {total} bytes");
        }
        first.get_or_insert_with(|| t0.elapsed().as_secs_f64());
        total += n;
        if let Some(keep) = keep.as_deref_mut() {
            keep.extend_from_slice(&buf[..n]);
        }
        for &b in &buf[..n] {
            match (in_string, escaped, b) {
                (true, true, _) => escaped = false,
                (true, false, b'\\') => escaped = true,
                (true, false, b'"') => in_string = false,
                (true, false, _) => {}
                (false, _, b'"') => in_string = true,
                (false, _, b'{' | b'[') => depth += 1,
                (false, _, b'}' | b']') => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        if depth == 0 {
            return Ok((first.unwrap_or(0.0), t0.elapsed().as_secs_f64(), total));
        }
    }
}

/// Times the phases of one initial monitor separately: the server's reply
/// on the wire, decoding it, and building the snapshot.
async fn breakdown(remote: &str) -> Result<()> {
    let path = remote.strip_prefix("unix:").map(str::to_string);
    let remote_path = path.clone();
    let remote: Remote = remote.parse()?;
    let config = SessionConfig {
        max_message: 512 << 20,
        ..SessionConfig::default()
    };
    let (session, _notes) = Session::connect(&remote, None, config).await?;
    let schema = session.get_schema("OVN_Northbound").await?;
    let spec = nb_driver_monitor();
    if let Some(path) = path {
        let request = serde_json::json!({"id": 0, "method": "monitor_cond",
            "params": ["OVN_Northbound", "raw", spec.requests(&schema)]});
        let (first, last, bytes) =
            tokio::task::spawn_blocking(move || reply_timing(&path, &request)).await??;
        print!("raw socket: first byte {first:.3}s last byte {last:.3}s ({bytes} bytes); ");
    }
    heap::reset_peak();
    let t0 = Instant::now();
    let reply = session
        .call(
            "monitor_cond",
            serde_json::json!(["OVN_Northbound", "bench", spec.requests(&schema)]),
        )
        .await?;
    let t_reply = t0.elapsed();
    let hwm_reply = status_kib("VmHWM:")?;
    let projection = spec.key_projection();
    let updates = reply.result_with(obgp_ovsdb_data::wire::TableUpdatesSeed(&projection))?;
    let t_decode = t0.elapsed();
    let heap_decoded = (heap::mib(heap::live()), heap::mib(heap::peak()));
    let bytes = reply.len();
    drop(reply);
    let schema = std::sync::Arc::new(schema);
    let empty = obgp_ovsdb_data::DbSnapshot::empty(schema.clone(), nb_driver_tables());
    let (snap, _) = empty.clone().apply(updates)?;
    let t_apply = t0.elapsed();
    print!(
        "heap live/peak MiB: decoded {:.1}/{:.1} applied {:.1}/{:.1}; ",
        heap_decoded.0,
        heap_decoded.1,
        heap::mib(heap::live()),
        heap::mib(heap::peak())
    );
    println!(
        "reply {:.3}s ({} MB, hwm {} MiB) decode {:.3}s apply {:.3}s rows {} hwm {} MiB",
        t_reply.as_secs_f64(),
        bytes / 1_000_000,
        hwm_reply / 1024,
        (t_decode - t_reply).as_secs_f64(),
        (t_apply - t_decode).as_secs_f64(),
        snap.table("Logical_Switch_Port").len(),
        status_kib("VmHWM:")? / 1024
    );
    drop(snap);
    // The agent's path: the reply decoded while it arrives. Its time minus
    // the raw socket's last byte is what the client adds after the server.
    let t0 = Instant::now();
    let updates: obgp_ovsdb_data::wire::TableUpdates = session
        .call_streamed(
            "monitor_cond",
            serde_json::json!(["OVN_Northbound", "streamed", spec.requests(&schema)]),
            &spec.key_projection(),
        )
        .await?;
    let t_streamed = t0.elapsed();
    let (snap, _) = empty.apply(updates)?;
    println!(
        "\n  agent path: reply decoded while it arrives {:.3}s (streamed: {}) snapshot {:.3}s rows {}",
        t_streamed.as_secs_f64(),
        session.streamed_replies(),
        (t0.elapsed() - t_streamed).as_secs_f64(),
        snap.table("Logical_Switch_Port").len()
    );
    drop(snap);
    // The client alone: the same reply fed from memory to the streamed
    // decoder in socket-read-sized chunks, as fast as it can take them
    // (what the client adds after the server's last byte, without the
    // server's timing noise).
    if let Some(path) = remote_path {
        let request = serde_json::json!({"id": 0, "method": "monitor_cond",
            "params": ["OVN_Northbound", "raw2", spec.requests(&schema)]});
        let text = tokio::task::spawn_blocking(move || {
            let mut text = Vec::new();
            reply_bytes(&path, &request, Some(&mut text)).map(|_| text)
        })
        .await??;
        // `NB_BENCH_SAVE_REPLY=<file>` keeps the raw reply for
        // `nb-monitor-bench decode-file` (profiling the decoder alone).
        if let Some(file) = std::env::var_os("NB_BENCH_SAVE_REPLY") {
            std::fs::write(&file, &text)?;
        }
        let projection = spec.key_projection();
        let mut times = Vec::new();
        let cpu0 = cpu_s("self")?;
        for _ in 0..3 {
            let mut chunks = text.chunks(128 << 10);
            let t0 = Instant::now();
            let reply = obgp_ovsdb_data::wire::decode_streamed_reply(&projection, || {
                chunks.next().map(bytes::Bytes::copy_from_slice)
            });
            times.push(t0.elapsed().as_secs_f64());
            reply.map_err(|e| anyhow::anyhow!("in-memory reply: {e}"))?;
        }
        let cpu = (cpu_s("self")? - cpu0) / times.len() as f64;
        println!(
            "  client alone: in-memory reply ({} MB) decoded streamed in {} (CPU {cpu:.2}s each)",
            text.len() / 1_000_000,
            times
                .iter()
                .map(|t| format!("{t:.3}s"))
                .collect::<Vec<_>>()
                .join(" / ")
        );
    }
    Ok(())
}

/// Decodes a reply saved with `NB_BENCH_SAVE_REPLY` `runs` times with the
/// streamed decoder, fed from memory in 128 KiB chunks, and prints the wall
/// and CPU seconds of each decode, then the CPU seconds including dropping
/// the rows (what the breakdown's "client alone" line counts).
fn decode_file(file: &str, runs: usize) -> Result<()> {
    let text = std::fs::read(file).with_context(|| format!("reading {file}"))?;
    let projection = nb_driver_monitor().key_projection();
    for run in 1..=runs {
        let mut chunks = text.chunks(128 << 10);
        let cpu0 = cpu_s("self")?;
        let t0 = Instant::now();
        let reply = obgp_ovsdb_data::wire::decode_streamed_reply(&projection, || {
            chunks.next().map(bytes::Bytes::copy_from_slice)
        });
        let wall = t0.elapsed().as_secs_f64();
        let reply = reply.map_err(|e| anyhow::anyhow!("{file}: {e}"))?;
        let rows = match &reply.result {
            Some(obgp_ovsdb_data::wire::MonitorResult::Updates(u)) => u.row_count(),
            Some(obgp_ovsdb_data::wire::MonitorResult::Since(_, _, u)) => u.row_count(),
            None => 0,
        };
        let cpu_decoded = cpu_s("self")? - cpu0;
        drop(reply);
        println!(
            "run={run} bytes={} rows={rows} decode_wall_s={wall:.3} decode_cpu_s={cpu_decoded:.2} with_drop_cpu_s={:.2}",
            text.len(),
            cpu_s("self")? - cpu0
        );
    }
    Ok(())
}

/// User + system CPU seconds of process `pid` ("self" for this one).
fn cpu_s(pid: &str) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the ")" that ends the command name; utime and stime
    // are fields 14 and 15 of the whole line.
    let rest = stat.rsplit_once(')').context("stat format")?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>()? + f[12].parse::<f64>()?;
    Ok(ticks / 100.0)
}

/// The indexed snapshot of `nb` the agent computes from (`partial`: a
/// conditional cache).
fn indexed(
    nb: &impl obgp_ovn::RowSource,
    ovs: &obgp_ovn::Tables,
    partial: bool,
) -> obgp_ovn::Snapshot {
    let mut live = if partial {
        LiveSnapshot::with_partial_ports()
    } else {
        LiveSnapshot::default()
    };
    live.reset_ovs(ovs);
    live.reset_nb(nb);
    live.snapshot()
}

/// The ports `snap` (of a partial NB cache filled with `filled_with`)
/// calls for on agent `host`.
fn wanted(
    snap: &obgp_ovn::Snapshot,
    host: usize,
    filled_with: Option<&LspInterest>,
) -> LspInterest {
    LspInterest::of(snap, Some(&format!("host-{host:03}")), filled_with)
}

async fn measure(remote: &str, conditional: bool, host: usize) -> Result<()> {
    let rss_before = status_kib("VmRSS:")?;
    let cpu_before = cpu_s("self")?;
    let remote: Remote = remote.parse()?;
    let t0 = Instant::now();
    let ovs = local_ovs(host)?;
    let mut spec = nb_driver_monitor();
    let mut conditions = None;
    if conditional {
        // What the agent's first request asks: from the local OVS alone.
        let empty = DbSnapshot::empty(
            std::sync::Arc::new(obgp_ovsdb_data::DatabaseSchema::empty("OVN_Northbound")),
            [],
        );
        let first = wanted(&indexed(&empty, &ovs, true), host, None);
        // `NB_BENCH_NO_PORTS=1`: no port at all and no fixpoint, what the
        // whole tables alone cost (the floor of the conditional monitor).
        let no_ports = std::env::var_os("NB_BENCH_NO_PORTS").is_some();
        if let Some(t) = spec.tables.get_mut(LogicalSwitchPort::TABLE) {
            t.conditions = Some(match no_ports {
                true => vec![obgp_ovsdb_data::Condition::False],
                false => first.conditions(),
            });
        }
        if let Some(t) = spec.tables.get_mut("NAT") {
            t.conditions = Some(first.nat_conditions());
        }
        conditions = (!no_ports).then_some(first);
    }
    // The session's defaults, the agent's limits: the 100k-port dump
    // (~125 MB) is decoded while it arrives, within `max_streamed`.
    let mut config = ClientConfig::new(vec![remote], "OVN_Northbound", spec);
    // `NB_BENCH_BUFFERED=1` buffers the reply whole first, to compare
    // (past the default `max_message`, so raised).
    if std::env::var_os("NB_BENCH_BUFFERED").is_some() {
        config.session.stream_above = None;
        config.session.max_message = 512 << 20;
    }
    let client = Client::start(config);
    tokio::time::timeout(Duration::from_secs(600), client.cache().wait_resynced(1)).await??;
    let wall_first = t0.elapsed();
    let heap_peak_first = heap::mib(heap::peak());
    if std::env::var_os("NB_BENCH_CACHE_PARTS").is_some() {
        cache_parts::print(&client.cache().snapshot());
    }
    if std::env::var_os("NB_BENCH_SNAPSHOT_PARTS").is_some() {
        snapshot_parts::snapshot_parts(&client.cache().snapshot(), &ovs, conditional);
    }
    // The server's CPU per phase, when the parent said which process it is.
    let server = std::env::var("NB_BENCH_SERVER_PID").ok();
    let server_cpu = || server.as_deref().map(cpu_s).transpose();
    let mut phases = vec![server_cpu()?];
    // The agent's fixpoint: recompute from the synced rows, send, repeat.
    // The agent keeps the indexed snapshot beside the cache: measured
    // with it, in both modes.
    let mut rounds = 0;
    let mut snapshot = indexed(&client.cache().snapshot(), &ovs, conditional);
    while let Some(current) = &conditions {
        let want = wanted(&snapshot, host, Some(current));
        if &want == current {
            break;
        }
        client
            .set_conditions_of(vec![
                (LogicalSwitchPort::TABLE.into(), Some(want.conditions())),
                ("NAT".into(), Some(want.nat_conditions())),
            ])
            .await?;
        conditions = Some(want);
        phases.push(server_cpu()?);
        drop(snapshot);
        snapshot = indexed(&client.cache().snapshot(), &ovs, conditional);
        rounds += 1;
        if rounds > 5 {
            bail!("conditions still changing after {rounds} rounds");
        }
    }
    let wall = t0.elapsed();
    let hwm = status_kib("VmHWM:")?;
    drop(snapshot);
    let rss_after = status_kib("VmRSS:")?;
    let snap = client.cache().snapshot();
    let rows: usize = nb_driver_tables().map(|t| snap.table(t).len()).sum();
    println!(
        "{}",
        serde_json::json!({
            "wall_s": wall.as_secs_f64(),
            "first_sync_s": wall_first.as_secs_f64(),
            "rounds": rounds,
            "server_cpu_s_after_sync_and_each_round": phases,
            "clauses": conditions.as_ref().map_or(0, |c| c.conditions().len()),
            "nat_clauses": conditions.map_or(0, |c| c.nat_conditions().len()),
            "cpu_s": cpu_s("self")? - cpu_before,
            "heap_live_mib": heap::mib(heap::live()),
            "heap_peak_mib": heap::mib(heap::peak()),
            "heap_peak_first_sync_mib": heap_peak_first,
            "rss_before_kib": rss_before,
            "vm_hwm_kib": hwm,
            "rss_after_kib": rss_after,
            "lsp_rows": snap.table("Logical_Switch_Port").len(),
            "rows": rows,
        })
    );
    Ok(())
}

struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A fresh NB database loaded with the topology of `vms` ports over
/// `hosts` hosts, served by its own ovsdb-server.
struct LoadedDb {
    server: Server,
    remote: String,
    dir: std::path::PathBuf,
    load_s: f64,
    summary: obgp_topogen::Summary,
}

impl Drop for LoadedDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl LoadedDb {
    fn server_cpu(&self) -> Result<f64> {
        cpu_s(&self.server.0.id().to_string())
    }
}

async fn load_db(vms: usize, hosts: usize, schema: &str) -> Result<LoadedDb> {
    let dir = std::env::temp_dir().join(format!("obgp-nb-bench-{}-{vms}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let db = dir.join("nb.db");
    let sock = dir.join("nb.sock");
    let st = Command::new("ovsdb-tool")
        .arg("create")
        .arg(&db)
        .arg(schema)
        .status()?;
    if !st.success() {
        bail!("ovsdb-tool create failed");
    }
    let server = Server(
        Command::new("ovsdb-server")
            .arg(&db)
            .arg(format!("--remote=punix:{}", sock.display()))
            .arg(format!("--unixctl={}", dir.join("nb.ctl").display()))
            .arg(format!("--log-file={}", dir.join("nb.log").display()))
            .args(["--no-chdir", "-vconsole:off"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting ovsdb-server (install openvswitch-switch)")?,
    );
    let remote = format!("unix:{}", sock.display());
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::os::unix::net::UnixStream::connect(&sock).is_err() {
        if Instant::now() > deadline {
            bail!("ovsdb-server did not start");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let topo = Topology::generate(Params {
        vms,
        hosts,
        local_fraction: 1.0 / hosts as f64,
        ..Params::default()
    });
    // Committing a 5000-operation transaction can keep the server silent
    // for many seconds: no inactivity probe while loading.
    let loader = SessionConfig {
        probe_interval: None,
        ..SessionConfig::default()
    };
    let (session, _notes) = Session::connect(&remote.parse()?, None, loader).await?;
    let t0 = Instant::now();
    topo.load(&session).await?;
    let load_s = t0.elapsed().as_secs_f64();
    drop(session);
    Ok(LoadedDb {
        server,
        remote,
        dir,
        load_s,
        summary: topo.summary(),
    })
}

/// The `measure` child for agent `host`, started.
fn spawn_measure(
    remote: &str,
    server_pid: u32,
    conditional: bool,
    host: usize,
) -> Result<std::process::Child> {
    let mode = if conditional { "conditional" } else { "full" };
    Command::new(std::env::current_exe()?)
        .env("NB_BENCH_SERVER_PID", server_pid.to_string())
        .args(["measure", "--remote", remote, "--mode", mode])
        .args(["--host", &host.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting the measuring process")
}

/// A finished `measure` child's figures.
fn measured(child: std::process::Child) -> Result<serde_json::Value> {
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!("measure failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let parts = ["NB_BENCH_SNAPSHOT_PARTS", "NB_BENCH_CACHE_PARTS"];
    if parts.iter().any(|v| std::env::var_os(v).is_some()) {
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

async fn run_size(vms: usize, runs: usize, modes: &[bool], schema: &str) -> Result<()> {
    let db = load_db(vms, 10, schema).await?;
    let s = db.summary.clone();
    let (remote, load_s) = (db.remote.clone(), db.load_s);
    if std::env::var_os("NB_BENCH_BREAKDOWN").is_some() {
        let out = Command::new(std::env::current_exe()?)
            .args(["breakdown", "--remote", &remote])
            .output()?;
        print!(
            "vms={vms} breakdown: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
    }
    // Modes alternate run by run: both see the same server conditions.
    for run in 1..=runs {
        for &conditional in modes {
            let server_cpu = db.server_cpu()?;
            let m = measured(spawn_measure(&remote, db.server.0.id(), conditional, 0)?)?;
            let server_cpu = db.server_cpu()? - server_cpu;
            let hwm = m["vm_hwm_kib"].as_u64().unwrap_or(0);
            let before = m["rss_before_kib"].as_u64().unwrap_or(0);
            let mode = if conditional { "conditional" } else { "full" };
            println!(
                "vms={vms} mode={mode} lsp_rows={} run={run} load_s={load_s:.1} sync_s={:.3} first_sync_s={:.3} rounds={} clauses={} nat_clauses={} client_cpu_s={:.2} server_cpu_s={server_cpu:.2} vm_hwm_mib={:.1} delta_mib={:.1} rss_after_mib={:.1} heap_live_mib={:.1} heap_peak_mib={:.1} heap_peak_first_sync_mib={:.1} rows={} server_cpu_phases={}",
                m["lsp_rows"],
                m["wall_s"].as_f64().unwrap_or(0.0),
                m["first_sync_s"].as_f64().unwrap_or(0.0),
                m["rounds"],
                m["clauses"],
                m["nat_clauses"],
                m["cpu_s"].as_f64().unwrap_or(0.0),
                hwm as f64 / 1024.0,
                (hwm.saturating_sub(before)) as f64 / 1024.0,
                m["rss_after_kib"].as_u64().unwrap_or(0) as f64 / 1024.0,
                m["heap_live_mib"].as_f64().unwrap_or(0.0),
                m["heap_peak_mib"].as_f64().unwrap_or(0.0),
                m["heap_peak_first_sync_mib"].as_f64().unwrap_or(0.0),
                m["rows"],
                m["server_cpu_s_after_sync_and_each_round"],
            );
            if !conditional && m["lsp_rows"].as_u64() != Some(s.logical_switch_ports as u64) {
                bail!(
                    "cache has {} LSPs, generator made {}",
                    m["lsp_rows"],
                    s.logical_switch_ports
                );
            }
        }
    }
    Ok(())
}

/// `agents` agents (identities 0..agents of a topology over as many
/// hosts) connect at once, as after a fleet restart; times until the last
/// one synced, and the server's CPU meanwhile.
async fn run_fleet(
    vms: usize,
    agents: usize,
    runs: usize,
    modes: &[bool],
    schema: &str,
) -> Result<()> {
    let db = load_db(vms, agents, schema).await?;
    for run in 1..=runs {
        for &conditional in modes {
            let server_cpu = db.server_cpu()?;
            let t0 = Instant::now();
            let children = (0..agents)
                .map(|host| spawn_measure(&db.remote, db.server.0.id(), conditional, host))
                .collect::<Result<Vec<_>>>()?;
            let mut syncs = Vec::new();
            let mut hwm_max = 0u64;
            let mut client_cpu = 0.0;
            for child in children {
                let m = measured(child)?;
                syncs.push(m["wall_s"].as_f64().unwrap_or(0.0));
                client_cpu += m["cpu_s"].as_f64().unwrap_or(0.0);
                hwm_max = hwm_max.max(m["vm_hwm_kib"].as_u64().unwrap_or(0));
            }
            let all_synced = t0.elapsed().as_secs_f64();
            let server_cpu = db.server_cpu()? - server_cpu;
            syncs.sort_by(f64::total_cmp);
            let mode = if conditional { "conditional" } else { "full" };
            println!(
                "vms={vms} fleet={agents} mode={mode} run={run} all_synced_s={all_synced:.2} agent_sync_s_median={:.2} agent_sync_s_max={:.2} server_cpu_s={server_cpu:.2} clients_cpu_s={client_cpu:.1} agent_vm_hwm_mib_max={:.1}",
                syncs[syncs.len() / 2],
                syncs.last().copied().unwrap_or(0.0),
                hwm_max as f64 / 1024.0,
            );
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if args.get(1).map(String::as_str) == Some("breakdown") {
        return breakdown(&arg("--remote").context("breakdown needs --remote")?).await;
    }
    if args.get(1).map(String::as_str) == Some("small-batches") {
        for rows in [1000, 10_000, 100_000] {
            small_batches::small_batches(rows)?;
        }
        return Ok(());
    }
    if args.get(1).map(String::as_str) == Some("decode-file") {
        let runs = arg("--runs").map(|r| r.parse()).transpose()?.unwrap_or(5);
        return decode_file(&arg("--file").context("decode-file needs --file")?, runs);
    }
    if args.get(1).map(String::as_str) == Some("measure") {
        // `RUST_LOG=obgp_ovsdb::rpc::session=debug` shows the streamed
        // reply's size and its rows' decoded estimate (`decoded_bytes`).
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
        let conditional = arg("--mode").as_deref() == Some("conditional");
        let host = arg("--host").map(|h| h.parse()).transpose()?.unwrap_or(0);
        return measure(
            &arg("--remote").context("measure needs --remote")?,
            conditional,
            host,
        )
        .await;
    }
    let sizes = arg("--vms").unwrap_or_else(|| "10000,50000,100000".into());
    let runs: usize = arg("--runs").map(|r| r.parse()).transpose()?.unwrap_or(3);
    let schema = arg("--schema").unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/schemas/ovn-nb.ovsschema"
        )
        .into()
    });
    let modes = arg("--mode")
        .unwrap_or_else(|| "full".into())
        .split(',')
        .map(|m| match m.trim() {
            "full" => Ok(false),
            "conditional" => Ok(true),
            other => bail!("--mode {other:?}: full or conditional"),
        })
        .collect::<Result<Vec<bool>>>()?;
    let fleet = arg("--fleet").map(|n| n.parse::<usize>()).transpose()?;
    for vms in sizes.split(',') {
        let vms = vms.trim().parse()?;
        match fleet {
            Some(agents) => run_fleet(vms, agents.max(1), runs, &modes, &schema).await?,
            None => run_size(vms, runs, &modes, &schema).await?,
        }
    }
    Ok(())
}
