//! A RAFT member cut off from its peers while they keep their quorum: the
//! member stays up and reachable by the client, but loses its cluster, and
//! the client leaves it for a healthy member. The member runs in its own
//! network namespace, joined to the other two by a veth pair; the partition
//! is that link going down. Needs root, iproute2 and ovsdb-server.

mod support;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::switch_names;

use anyhow::{bail, Context, Result};
use obgp_ovsdb::rpc::transport::parse_remotes;
use obgp_ovsdb::{Client, ClientConfig};
use obgp_ovsdb_data::MonitorSpec;
use obgp_testbed::netns::Netns;
use obgp_testbed::ovsdb::{free_port, run, schema_path, transact_cli};
use serde_json::json;

const DB: &str = "OVN_Northbound";

/// Three members: 0 in `netns` at `10.231.N.2`, 1 and 2 in the test's
/// namespace at `10.231.N.1`, the root end of the veth pair `link`.
struct PartitionableCluster {
    dir: tempfile::TempDir,
    link: String,
    members: Vec<Child>,
    netns: Netns,
}

impl PartitionableCluster {
    fn start() -> Result<PartitionableCluster> {
        let dir = tempfile::Builder::new()
            .prefix("obgp-partition-")
            .tempdir()?;
        let netns = Netns::new("raft0")?;
        let pid = std::process::id();
        let link = format!("obr{}", pid % 100_000);
        let inner = format!("obn{}", pid % 100_000);
        let subnet = format!("10.231.{}", pid % 200 + 20);
        let ip = |args: &[&str]| run(Command::new("ip").args(args));
        ip(&["link", "add", &link, "type", "veth", "peer", "name", &inner])?;
        // From here on, dropping `c` cleans up whatever fails.
        let mut c = PartitionableCluster {
            dir,
            link: link.clone(),
            members: Vec::new(),
            netns,
        };
        ip(&["link", "set", &inner, "netns", c.netns.name()])?;
        ip(&["addr", "add", &format!("{subnet}.1/24"), "dev", &link])?;
        ip(&["link", "set", &link, "up"])?;
        c.netns
            .ip(&["addr", "add", &format!("{subnet}.2/24"), "dev", &inner])?;
        c.netns.ip(&["link", "set", &inner, "up"])?;
        let ports = [free_port()?, free_port()?, free_port()?];
        let raft = |i: usize| {
            let host = if i == 0 { 2 } else { 1 };
            format!("tcp:{subnet}.{host}:{}", ports[i])
        };
        let d = c.dir.path();
        run(Command::new("ovsdb-tool")
            .arg("create-cluster")
            .arg(d.join("m0.db"))
            .arg(schema_path("ovn-nb.ovsschema"))
            .arg(raft(0)))?;
        for i in 1..3 {
            run(Command::new("ovsdb-tool")
                .arg("join-cluster")
                .arg(d.join(format!("m{i}.db")))
                .arg(DB)
                .arg(raft(i))
                .arg(raft(0)))?;
        }
        for i in 0..3 {
            let netns = (i == 0).then(|| c.netns.name().to_string());
            let child = start_member(c.dir.path(), i, netns.as_deref())?;
            c.members.push(child);
        }
        for i in 0..3 {
            c.wait_connected(i)?;
        }
        Ok(c)
    }

    fn unix_remote(&self, i: usize) -> String {
        format!(
            "unix:{}",
            self.dir.path().join(format!("m{i}.sock")).display()
        )
    }

    fn wait_connected(&self, i: usize) -> Result<()> {
        run(Command::new("timeout").arg("20").arg("ovsdb-client").args([
            "wait",
            &self.unix_remote(i),
            DB,
            "connected",
        ]))
        .map(drop)
        .with_context(|| format!("member {i} never joined the cluster"))
    }

    /// Cuts member 0 off from the other two.
    fn partition(&self) -> Result<()> {
        run(Command::new("ip").args(["link", "set", &self.link, "down"])).map(drop)
    }
}

impl Drop for PartitionableCluster {
    fn drop(&mut self) {
        for m in &mut self.members {
            let _ = m.kill();
            let _ = m.wait();
        }
        // Member 0's connections, cut by the partition, would keep its
        // namespace (and so the veth pair) alive while they retransmit:
        // the pair goes explicitly.
        let _ = Command::new("ip")
            .args(["link", "del", &self.link])
            .stderr(Stdio::null())
            .status();
    }
}

/// Member `i` on `dir/m{i}.db`, in `netns` if given; its client socket is
/// `dir/m{i}.sock` (a unix socket is reachable from any namespace).
fn start_member(dir: &Path, i: usize, netns: Option<&str>) -> Result<Child> {
    let sock: PathBuf = dir.join(format!("m{i}.sock"));
    let mut cmd = match netns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, "ovsdb-server"]);
            c
        }
        None => Command::new("ovsdb-server"),
    };
    let mut child = cmd
        .arg(dir.join(format!("m{i}.db")))
        .arg(format!("--remote=punix:{}", sock.display()))
        .arg(format!(
            "--unixctl={}",
            dir.join(format!("m{i}.ctl")).display()
        ))
        .arg(format!(
            "--log-file={}",
            dir.join(format!("m{i}.log")).display()
        ))
        .args(["--no-chdir", "-vconsole:off"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting ovsdb-server")?;
    let deadline = Instant::now() + Duration::from_secs(15);
    while std::os::unix::net::UnixStream::connect(&sock).is_err() {
        if child.try_wait()?.is_some() || Instant::now() > deadline {
            let _ = child.kill();
            bail!("member {i} did not start listening on {}", sock.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(child)
}

async fn wait_until(what: &str, within: Duration, mut done: impl FnMut() -> bool) -> Result<()> {
    let deadline = Instant::now() + within;
    while !done() {
        if Instant::now() > deadline {
            bail!("{what} not within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_cut_off_from_its_quorate_peers_is_left_for_a_healthy_one() -> Result<()> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let cluster = PartitionableCluster::start()?;
    let remotes = (0..3)
        .map(|i| cluster.unix_remote(i))
        .collect::<Vec<_>>()
        .join(",");
    let mut config = ClientConfig::new(
        parse_remotes(&remotes)?,
        DB,
        MonitorSpec::all(["Logical_Switch"]),
    );
    config.backoff = (Duration::from_millis(50), Duration::from_millis(500));
    config.session.probe_interval = Some(Duration::from_secs(1));
    let client = Client::start(config);
    tokio::time::timeout(Duration::from_secs(20), client.cache().wait_resynced(1)).await??;
    assert_eq!(client.connected_to(), Some(cluster.unix_remote(0)));
    transact_cli(
        &cluster.unix_remote(1),
        DB,
        &[json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "before"}})],
    )?;
    wait_until(
        "the first write in the cache",
        Duration::from_secs(10),
        || switch_names(&client) == ["before"],
    )
    .await?;

    cluster.partition()?;
    // Member 0 is still up and answers the client, but is no longer
    // connected to its cluster: the client moves to member 1 or 2.
    let healthy = [cluster.unix_remote(1), cluster.unix_remote(2)];
    wait_until(
        "a move to a healthy member",
        Duration::from_secs(30),
        || client.connected_to().is_some_and(|r| healthy.contains(&r)),
    )
    .await?;
    // The quorate side takes writes, and the client sees them.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let wrote = transact_cli(
            &cluster.unix_remote(2),
            DB,
            &[json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "after"}})],
        );
        match wrote {
            Ok(_) => break,
            Err(e) if Instant::now() < deadline => {
                eprintln!("retrying the write while members 1 and 2 elect a leader: {e:#}");
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            Err(e) => return Err(e),
        }
    }
    wait_until(
        "the write on the healthy side",
        Duration::from_secs(10),
        || switch_names(&client) == ["after", "before"],
    )
    .await?;
    assert!(client.connected_to().is_some_and(|r| healthy.contains(&r)));
    Ok(())
}
