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
//! ```sh
//! cargo build --release -p obgp-ovsdb --example nb-resume-bench
//! target/release/examples/nb-resume-bench --vms 50000
//! ```

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use obgp_ovsdb::{Client, ClientConfig, Session, SessionConfig};
use obgp_ovsdb_data::cache_file;
use obgp_testbed::ovsdb::Cluster;
use obgp_topogen::{Params, Topology};
use serde_json::json;

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

/// Starts a client on `remote` (with the cache file `state`, if any), waits
/// for its first sync and measures it; returns the client still running.
async fn sync(
    cluster: &Cluster,
    remote: &str,
    state: Option<&std::path::Path>,
) -> Result<(Client, Sync)> {
    let mut config = ClientConfig::new(
        remote.parse::<obgp_ovsdb::Remote>().map(|r| vec![r])?,
        obgp_ovn::NB_DB,
        obgp_ovn::nb::monitor_spec(),
    );
    config.state_file = state.map(std::path::Path::to_path_buf);
    let (server0, client0) = (cluster_cpu_s(cluster)?, cpu_s("self")?);
    let t0 = Instant::now();
    let client = Client::start(config);
    tokio::time::timeout(Duration::from_secs(300), client.cache().wait_resynced(1))
        .await
        .context("no sync within 300 s")??;
    let wall_s = t0.elapsed().as_secs_f64();
    let figures = Sync {
        wall_s,
        server_cpu_s: cluster_cpu_s(cluster)? - server0,
        client_cpu_s: cpu_s("self")? - client0,
        rows: client.last_sync_rows(),
    };
    Ok((client, figures))
}

#[tokio::main]
async fn main() -> Result<()> {
    let vms: usize = arg("--vms")
        .map(|v| v.parse())
        .transpose()?
        .unwrap_or(50_000);
    let changes: usize = arg("--changes")
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
    let topo = Topology::generate(Params {
        vms,
        ..Params::default()
    });
    topo.load(&session).await?;
    eprintln!(
        "loaded {vms} VMs into the cluster in {:.1}s",
        t0.elapsed().as_secs_f64()
    );

    let dir = tempfile::tempdir()?;
    let file = dir.path().join("OVN_Northbound.cache");
    let remote = cluster.tcp_remote(0);
    let (client, full) = sync(&cluster, &remote, Some(&file)).await?;
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

    for i in 0..changes {
        session
            .transact(
                obgp_ovn::NB_DB,
                vec![
                    json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p",
                           "row": {"name": format!("bench-late-{i}")}}),
                    json!({"op": "insert", "table": "Logical_Switch",
                           "row": {"name": format!("bench-late-{i}"), "ports": ["named-uuid", "p"]}}),
                ],
            )
            .await?;
    }

    let (resumed_client, resumed) = sync(&cluster, &remote, Some(&file)).await?;
    if resumed_client.resumed_syncs() != 1 {
        bail!("the restart did not resume");
    }
    let (fresh, _) = sync(&cluster, &remote, None).await?;
    let (a, b) = (resumed_client.cache().snapshot(), fresh.cache().snapshot());
    let equal = a.tables().all(|t| a.table(t) == b.table(t));
    if !equal {
        bail!("the resumed cache differs from a fresh dump");
    }
    println!(
        "vms={vms} lsp_rows={} file_mb={:.1} write_s={write_s:.3} decode_s={decode_s:.3} \
         full: sync_s={:.3} server_cpu_s={:.2} client_cpu_s={:.2} rows={} \
         resumed: sync_s={:.3} server_cpu_s={:.2} client_cpu_s={:.2} rows={} \
         server_cpu_ratio={:.3} sync_time_ratio={:.3} resumed_equals_fresh={equal}",
        a.table("Logical_Switch_Port").len(),
        bytes.len() as f64 / 1e6,
        full.wall_s,
        full.server_cpu_s,
        full.client_cpu_s,
        full.rows,
        resumed.wall_s,
        resumed.server_cpu_s,
        resumed.client_cpu_s,
        resumed.rows,
        resumed.server_cpu_s / full.server_cpu_s,
        resumed.wall_s / full.wall_s,
    );
    Ok(())
}
