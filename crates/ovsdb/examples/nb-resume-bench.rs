//! Benchmark: a restart that resumes from the cache file against one that
//! reads the whole NB, on a 3-member RAFT cluster of OVN_Northbound
//! holding N VM ports (topogen), with exactly what the agent's NB driver
//! monitors (`obgp_ovn::nb::monitor_spec()`, the full monitor).
//!
//! One run: a client pinned to member 0 takes the full dump and writes its
//! cache file (`state_file`, as the daemon does at SIGTERM); `--changes`
//! transactions (a switch with one port each) are committed while no
//! client runs; a second client started on the file resumes
//! (`monitor_cond_since` found). For both syncs it reports the cluster's
//! CPU (the three ovsdb-servers' user+system time, from `/proc`), the
//! client process's CPU, the rows the server sent, and the time from
//! `Client::start` to the synced cache (the point the agent's first
//! reconcile waits for; what follows does not depend on how the cache was
//! filled). Also the file's size and the time to write it and to decode it
//! alone. A third, plain client's full dump checks that the resumed cache
//! equals the server's.
//!
//! `--fleet N` then restarts N agents at once (spread over the members):
//! all take a full dump and write their files, and after the changes all
//! restart on their files; the time until the last synced and the
//! cluster's CPU, both ways. Then the same N agents start cold with the
//! conditional monitor (`ovn_nb_monitor_all = false`, the default), each
//! as its own chassis `host-NNN` (`support/conditional_agent.rs`; the
//! topology then spreads its ports over max(10, N) hosts evenly, so that
//! each agent has its share), until the last one's conditions stopped
//! changing. The agents run in this one process (their decoding shares its
//! cores with the three servers).
//!
//! ```sh
//! cargo build --release -p obgp-ovsdb --example nb-resume-bench
//! target/release/examples/nb-resume-bench --vms 50000 [--changes 20] [--fleet 20]
//! ```

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use obgp_ovsdb::{Client, ClientConfig, Session, SessionConfig};
use obgp_ovsdb_data::cache_file;
use obgp_testbed::ovsdb::Cluster;
use obgp_topogen::{Params, Topology};
use serde_json::json;

#[path = "support/conditional_agent.rs"]
mod conditional_agent;

/// User + system CPU seconds of process `pid` ("self" for this one).
fn cpu_s(pid: &str) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // utime and stime: fields 14 and 15 of the line, 12 and 13 after the
    // ")" that ends the command name.
    let rest = stat.rsplit_once(')').context("stat format")?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    Ok((f[11].parse::<f64>()? + f[12].parse::<f64>()?) / 100.0)
}

/// The three members' CPU seconds together.
fn cluster_cpu_s(cluster: &Cluster) -> Result<f64> {
    (0..3)
        .map(|i| {
            let pid = cluster.pid(i).context("a member is down")?;
            cpu_s(&pid.to_string())
        })
        .sum()
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// One sync's figures.
struct Sync {
    wall_s: f64,
    server_cpu_s: f64,
    client_cpu_s: f64,
    rows: u64,
}

impl Sync {
    /// `<wall>=… server_cpu_s=… client_cpu_s=… rows=…`, the wall time
    /// with `digits` decimals.
    fn fields(&self, wall: &str, digits: usize) -> String {
        format!(
            "{wall}={:.digits$} server_cpu_s={:.2} client_cpu_s={:.2} rows={}",
            self.wall_s, self.server_cpu_s, self.client_cpu_s, self.rows
        )
    }

    /// `server_cpu_ratio=… <wall_ratio>=…`: this sync against `base`.
    fn ratios(&self, base: &Sync, wall_ratio: &str) -> String {
        format!(
            "server_cpu_ratio={:.3} {wall_ratio}={:.3}",
            self.server_cpu_s / base.server_cpu_s,
            self.wall_s / base.wall_s
        )
    }
}

/// Starts one client per entry of `clients` (its remotes, tried in order,
/// and its cache file) at once, waits until every one has synced and
/// measures that: the wall time until the last, the cluster's and this
/// process's CPU, the rows the server sent them all. Returns the clients
/// still running.
async fn sync(
    cluster: &Cluster,
    clients: &[(Vec<String>, Option<PathBuf>)],
) -> Result<(Vec<Client>, Sync)> {
    let (server0, client0) = (cluster_cpu_s(cluster)?, cpu_s("self")?);
    let t0 = Instant::now();
    let mut started = Vec::new();
    for (remotes, state) in clients {
        let remotes = remotes
            .iter()
            .map(|r| r.parse::<obgp_ovsdb::Remote>())
            .collect::<Result<Vec<_>, _>>()?;
        let mut config = ClientConfig::new(remotes, obgp_ovn::NB_DB, obgp_ovn::nb::monitor_spec());
        config.state_file = state.clone();
        started.push(Client::start(config));
    }
    for client in &started {
        tokio::time::timeout(Duration::from_secs(600), client.cache().wait_resynced(1))
            .await
            .context("no sync within 600 s")??;
    }
    let figures = Sync {
        wall_s: t0.elapsed().as_secs_f64(),
        server_cpu_s: cluster_cpu_s(cluster)? - server0,
        client_cpu_s: cpu_s("self")? - client0,
        rows: started.iter().map(Client::last_sync_rows).sum(),
    };
    Ok((started, figures))
}

/// Commits `n` small transactions (a switch with one port each) named
/// after `tag`: what Neutron writes while agents are down.
async fn changes(session: &Session, tag: &str, n: usize) -> Result<()> {
    for i in 0..n {
        session
            .transact(
                obgp_ovn::NB_DB,
                vec![
                    json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p",
                           "row": {"name": format!("bench-{tag}-{i}")}}),
                    json!({"op": "insert", "table": "Logical_Switch",
                           "row": {"name": format!("bench-{tag}-{i}"), "ports": ["named-uuid", "p"]}}),
                ],
            )
            .await?;
    }
    Ok(())
}

/// `agents` agents spread over the members (agent `i` tries member `i % 3`
/// first) take their full dump at once and write their files; after
/// `n_changes` transactions they all restart at once on their files.
/// Prints both syncs and their ratios.
async fn fleet(
    cluster: &Cluster,
    session: &Session,
    dir: &std::path::Path,
    agents: usize,
    n_changes: usize,
) -> Result<()> {
    let clients: Vec<(Vec<String>, Option<PathBuf>)> = (0..agents)
        .map(|i| {
            let remotes = (0..3).map(|k| cluster.tcp_remote((i + k) % 3)).collect();
            (remotes, Some(dir.join(format!("agent-{i}.cache"))))
        })
        .collect();
    let (running, full) = sync(cluster, &clients).await?;
    // Each writes its file now unless its 60 s timer already wrote this
    // very state (a long fleet sync).
    for client in &running {
        client.save_state().await?;
    }
    if let Some((_, Some(missing))) = clients
        .iter()
        .find(|(_, f)| f.as_ref().is_some_and(|f| !f.exists()))
    {
        bail!("a synced agent wrote no cache file: {}", missing.display());
    }
    drop(running);
    changes(session, "fleet", n_changes).await?;
    let (running, resumed) = sync(cluster, &clients).await?;
    let n_resumed = running.iter().filter(|c| c.resumed_at_start()).count();
    println!(
        "fleet={agents} full: {} resumed: {} resumed_agents={n_resumed} {}",
        full.fields("all_synced_s", 2),
        resumed.fields("all_synced_s", 2),
        resumed.ratios(&full, "all_synced_ratio"),
    );
    drop(running);
    let conditional = conditional_fleet(cluster, agents).await?;
    println!(
        "fleet={agents} conditional: {} {} (conditional / full)",
        conditional.fields("all_synced_s", 2),
        conditional.ratios(&full, "all_synced_ratio"),
    );
    Ok(())
}

/// `agents` conditional agents (chassis `host-000`.., agent `i` on member
/// `i % 3` first) start cold at once; measured until the last one's
/// conditions stopped changing.
async fn conditional_fleet(cluster: &Cluster, agents: usize) -> Result<Sync> {
    let (server0, client0) = (cluster_cpu_s(cluster)?, cpu_s("self")?);
    let t0 = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..agents {
        let remotes = (0..3)
            .map(|k| {
                cluster
                    .tcp_remote((i + k) % 3)
                    .parse::<obgp_ovsdb::Remote>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        tasks.spawn(conditional_agent::sync(remotes, i));
    }
    let mut clients = Vec::new();
    while let Some(done) = tasks.join_next().await {
        clients.push(done??);
    }
    Ok(Sync {
        wall_s: t0.elapsed().as_secs_f64(),
        server_cpu_s: cluster_cpu_s(cluster)? - server0,
        client_cpu_s: cpu_s("self")? - client0,
        rows: clients.iter().map(Client::last_sync_rows).sum(),
    })
}

#[tokio::main]
async fn main() -> Result<()> {
    let vms: usize = arg("--vms")
        .map(|v| v.parse())
        .transpose()?
        .unwrap_or(50_000);
    let n_changes: usize = arg("--changes")
        .map(|v| v.parse())
        .transpose()?
        .unwrap_or(20);
    let cluster = Cluster::start("ovn-nb.ovsschema")?;
    // A 5000-operation commit on a loaded machine can outlast the default
    // 1 s election timer; an election mid-load failed one run.
    cluster.set_election_timer(16_000)?;
    let leader = cluster.wait_leader(Duration::from_secs(30))?;
    // Loading through the leader; no inactivity probe (a 5000-operation
    // commit keeps the server silent for seconds).
    let loader = SessionConfig {
        probe_interval: None,
        ..SessionConfig::default()
    };
    let (session, _notes) =
        Session::connect(&cluster.tcp_remote(leader).parse()?, None, loader).await?;
    let t0 = Instant::now();
    let fleet_size: Option<usize> = arg("--fleet").map(|n| n.parse()).transpose()?;
    // A conditional agent per host: with more agents than topogen's 10
    // hosts, the ports spread over as many hosts.
    let hosts = fleet_size.unwrap_or(0).max(Params::default().hosts);
    let topo = Topology::generate(Params {
        vms,
        hosts,
        local_fraction: match hosts == Params::default().hosts {
            true => Params::default().local_fraction,
            false => 1.0 / hosts as f64,
        },
        ..Params::default()
    });
    topo.load(&session).await?;
    eprintln!(
        "loaded {vms} VMs into the cluster in {:.1}s",
        t0.elapsed().as_secs_f64()
    );

    let dir = tempfile::tempdir()?;
    let file = dir.path().join("OVN_Northbound.cache");
    // One agent, pinned to member 0.
    let one = [(vec![cluster.tcp_remote(0)], Some(file.clone()))];
    let (mut clients, full) = sync(&cluster, &one).await?;
    let client = clients.pop().context("one client")?;
    let t0 = Instant::now();
    if !client.save_state().await? {
        bail!("the synced cache was not written");
    }
    let write_s = t0.elapsed().as_secs_f64();
    drop(client);
    let bytes = std::fs::read(&file)?;
    let t0 = Instant::now();
    let loaded = cache_file::decode(&bytes, &obgp_ovn::nb::monitor_spec().key_projection())?;
    let decode_s = t0.elapsed().as_secs_f64();
    drop(loaded);

    changes(&session, "late", n_changes).await?;

    let (mut clients, resumed) = sync(&cluster, &one).await?;
    let resumed_client = clients.pop().context("one client")?;
    if resumed_client.resumed_syncs() != 1 {
        bail!("the restart did not resume");
    }
    let (fresh, _) = sync(&cluster, &[(vec![cluster.tcp_remote(0)], None)]).await?;
    let (a, b) = (
        resumed_client.cache().snapshot(),
        fresh[0].cache().snapshot(),
    );
    let equal = a.tables().all(|t| a.table(t) == b.table(t));
    if !equal {
        bail!("the resumed cache differs from a fresh dump");
    }
    println!(
        "vms={vms} lsp_rows={} file_mb={:.1} write_s={write_s:.3} decode_s={decode_s:.3} \
         full: {} resumed: {} {} resumed_equals_fresh={equal}",
        a.table("Logical_Switch_Port").len(),
        bytes.len() as f64 / 1e6,
        full.fields("sync_s", 3),
        resumed.fields("sync_s", 3),
        resumed.ratios(&full, "sync_time_ratio"),
    );
    drop((resumed_client, fresh));
    if let Some(agents) = fleet_size {
        fleet(&cluster, &session, dir.path(), agents, n_changes).await?;
    }
    Ok(())
}
