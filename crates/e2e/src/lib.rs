//! The end-to-end bench: real OVN_Northbound and Open_vSwitch ovsdb-servers,
//! an ovs-vswitchd (userspace datapath) owning br-ex in the node's network
//! namespace, an FRR node router with an eBGP peer over a veth, and the real
//! `ovn-bgp-agent` binary run in the node namespace from a config file, as an
//! operator runs it. Used by `obgp-demo` and the tests in `tests/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use obgp_testbed::frr::{FrrPair, FrrPairOptions};
use obgp_testbed::ovsdb::{run, transact_cli, Cluster, OvsdbServer};
use serde_json::Value;

mod agent;
pub mod evpn;
pub mod evpn_fabric_side;
pub mod interrupt;
pub mod python_node;
pub mod watch;
pub use agent::Agent;
use python_node::PythonWrite;

/// `bgp_vrf_table_id` of the demo config: the VRF's routing table.
pub const VRF_TABLE: u32 = 10;

/// The workspace's `fixtures/demo` directory.
pub fn demo_dir() -> PathBuf {
    let dir = obgp_testbed::fixtures_dir().join("demo");
    // canonical, so the agent command line shown to the reader is plain
    dir.canonicalize().unwrap_or(dir)
}

/// The demo topology (`fixtures/demo/topology.json`): OVSDB wire notation per
/// database (`OVN_Northbound`, `Open_vSwitch`).
pub fn demo_topology() -> Result<Value> {
    let path = demo_dir().join("topology.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// The `ovn-bgp-agent` binary: `$OBGP_AGENT_BIN`, else the one cargo built
/// next to the running executable (`target/<profile>/`, also from `deps/`).
pub fn agent_binary() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("OBGP_AGENT_BIN") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe()?;
    let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.ends_with("deps") {
        dir.pop();
    }
    let bin = dir.join("ovn-bgp-agent");
    if !bin.is_file() {
        bail!(
            "{} not found: build it first (`cargo build --bin ovn-bgp-agent`, or `cargo test --workspace` which builds it) or set OBGP_AGENT_BIN",
            bin.display()
        );
    }
    Ok(bin)
}

/// True if this kernel can create what the full agent needs (a vrf and a
/// dummy device), probed in a scratch namespace.
pub fn kernel_has_vrf_and_dummy() -> bool {
    let ns = format!("obgp-probe-{}", std::process::id());
    if ip(&["netns", "add", &ns]).is_err() {
        return false;
    }
    let ok = ip(&[
        "-n", &ns, "link", "add", "p-vrf", "type", "vrf", "table", "99",
    ])
    .is_ok()
        && ip(&["-n", &ns, "link", "add", "p-dummy", "type", "dummy"]).is_ok();
    let _ = ip(&["netns", "del", &ns]);
    ok
}

/// `ip ARGS`, failing with its stderr.
pub fn ip(args: &[&str]) -> Result<String> {
    run(Command::new("ip").args(args))
}

/// Polls `f` every 100 ms until it returns `Some`, up to `timeout`; stops
/// with an error as soon as [`interrupt::catch_interrupts`] caught a signal.
pub fn wait_for<T>(
    what: &str,
    timeout: Duration,
    mut f: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    let start = Instant::now();
    let mut last_err = None;
    loop {
        if let Some(signal) = interrupt::interrupted() {
            bail!("interrupted by signal {signal} while waiting for {what}");
        }
        match f() {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => last_err = Some(e),
        }
        if start.elapsed() > timeout {
            bail!("timed out after {timeout:?} waiting for {what} (last error: {last_err:?})");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The OVN_Northbound database of a bench: one server, or a three-member
/// RAFT cluster (the agent gets all members in `ovn_nb_connection`).
pub enum Nb {
    Standalone(OvsdbServer),
    Clustered(Cluster),
}

impl Nb {
    /// What the agent's `[ovn] ovn_nb_connection` is set to.
    pub fn connection(&self) -> String {
        match self {
            Nb::Standalone(s) => s.unix_remote(),
            // unix sockets: the agent runs in the node namespace, whose
            // 127.0.0.1 is not the one the members listen on
            Nb::Clustered(_) => (0..3)
                .map(|i| self.member_remote(i))
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    fn member_remote(&self, i: usize) -> String {
        match self {
            Nb::Standalone(s) => s.unix_remote(),
            Nb::Clustered(c) => c.unix_remote(i),
        }
    }

    /// Runs `ops` with `ovsdb-client transact` (for a cluster: through the
    /// first member that answers; followers forward writes to the leader).
    pub fn transact(&self, ops: &[Value]) -> Result<Vec<Value>> {
        match self {
            Nb::Standalone(s) => s.transact(ops),
            Nb::Clustered(c) => {
                let mut last = None;
                for i in 0..3 {
                    match transact_cli(&c.unix_remote(i), c.db_name(), ops) {
                        Ok(r) => return Ok(r),
                        Err(e) => last = Some(e),
                    }
                }
                Err(last.unwrap_or_else(|| anyhow::anyhow!("no cluster member")))
            }
        }
    }

    /// Every row of `table`.
    pub fn select_all(&self, table: &str) -> Result<Vec<Value>> {
        let op = serde_json::json!({"op": "select", "table": table, "where": []});
        let r = self.transact(&[op])?;
        Ok(r[0]["rows"].as_array().cloned().unwrap_or_default())
    }

    /// Restarts a standalone server (same file and sockets).
    pub fn restart(&mut self) -> Result<()> {
        match self {
            Nb::Standalone(s) => s.restart(),
            Nb::Clustered(_) => bail!("restart a cluster member with cluster().kill/revive"),
        }
    }

    /// The cluster, if clustered.
    pub fn cluster(&mut self) -> Option<&mut Cluster> {
        match self {
            Nb::Clustered(c) => Some(c),
            Nb::Standalone(_) => None,
        }
    }
}

/// ovs-vswitchd (netdev datapath) in the node namespace on the local
/// Open_vSwitch ovsdb-server; br-ex is its internal port (a tap) there.
pub(crate) use obgp_testbed::vswitchd::Vswitchd;

/// Deletes the Logical_Switch_Port named `name` and its reference from the
/// demo's provider network (its Logical_Switch), as Neutron does on a port
/// delete.
pub fn delete_provider_port(nb: &Nb, name: &str) -> Result<()> {
    let lsp = nb.select_all("Logical_Switch_Port")?;
    let uuid = lsp
        .iter()
        .find(|r| r["name"] == name)
        .and_then(|r| r["_uuid"].get(1))
        .cloned()
        .with_context(|| format!("LSP {name}"))?;
    nb.transact(&[
        serde_json::json!({"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", "neutron-11111111-1111-4111-8111-111111111111"]],
               "mutations": [["ports", "delete", ["uuid", uuid]]]}),
        serde_json::json!({"op": "delete", "table": "Logical_Switch_Port", "where": [["name", "==", name]]}),
    ])?;
    Ok(())
}

/// A running bench. Dropping it stops the agent daemon (if any), vswitchd,
/// FRR, the ovsdb-servers and deletes the namespaces.
pub struct Bench {
    // drop order: the agent (its daemon), vswitchd, FRR + namespaces, databases
    /// How the bench runs the agent (its config files, its daemon).
    pub agent: Agent,
    vswitchd: Option<Vswitchd>,
    /// The node router (in the node namespace) and the fabric peer.
    pub pair: FrrPair,
    /// OVN_Northbound.
    pub nb: Nb,
    /// OVN_Southbound, when the topology has an `OVN_Southbound` member
    /// (named by the Open_vSwitch row's `external_ids:ovn-remote`).
    pub sb: Option<OvsdbServer>,
    /// The node's local Open_vSwitch database.
    pub ovs: OvsdbServer,
    dir: PathBuf,
    ovs_run: PathBuf,
}

/// How to start a [`Bench`].
pub struct BenchOptions {
    /// The agent's config file (the connections are added after it).
    pub config: PathBuf,
    /// Extra `[DEFAULT]` lines for the generated second config file.
    pub extra_default: String,
    /// OVN_Northbound as a three-member RAFT cluster.
    pub nb_cluster: bool,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            config: demo_dir().join("bgp-agent.conf"),
            extra_default: String::new(),
            nb_cluster: false,
        }
    }
}

/// A [`Bench`] of the demo topology in a fresh directory under /tmp
/// (`obgp-e2e-<tag>-*`, removed when the returned guard drops), with
/// `extra_default` lines for the agent's `[DEFAULT]`.
pub fn demo_bench(tag: &str, extra_default: &str) -> Result<(tempfile::TempDir, Bench)> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("obgp-e2e-{tag}-"))
        .tempdir_in("/tmp")?;
    let b = Bench::start(
        dir.path(),
        &demo_topology()?,
        &BenchOptions {
            extra_default: extra_default.to_string(),
            ..BenchOptions::default()
        },
    )?;
    Ok((dir, b))
}

impl Bench {
    /// Starts everything below `dir` with `topology` loaded (its
    /// `OVN_Northbound` and `Open_vSwitch` rows, and its `OVN_Southbound`
    /// rows in their own server when it has them), and the FRR pair
    /// Established.
    pub fn start(dir: &Path, topology: &Value, opts: &BenchOptions) -> Result<Bench> {
        std::fs::create_dir_all(dir)?;
        let binary = agent_binary()?;
        let nb = if opts.nb_cluster {
            Nb::Clustered(Cluster::start("ovn-nb.ovsschema").context("OVN_Northbound cluster")?)
        } else {
            Nb::Standalone(
                OvsdbServer::start("ovn-nb.ovsschema").context("OVN_Northbound ovsdb-server")?,
            )
        };
        load_nb(&nb, topology)?;
        let ovs = OvsdbServer::start("vswitch.ovsschema").context("Open_vSwitch ovsdb-server")?;
        load(&ovs, topology, "Open_vSwitch")?;
        let sb = start_sb(topology, &ovs)?;
        let pair = FrrPair::start_with(
            &dir.join("frr"),
            &FrrPairOptions {
                bgp_nic: false,
                ..FrrPairOptions::default()
            },
        )
        .context("FRR node router and peer")?;
        let ovs_run = dir.join("ovs-run");
        std::fs::create_dir_all(&ovs_run)?;
        let vswitchd = Vswitchd::start(pair.node_netns(), &ovs, &ovs_run)?;
        fresh_rt_tables(dir)?;
        let conn = write_connections(dir, &ovs, &nb.connection(), &opts.extra_default)?;
        let agent = Agent::new(
            pair.node_netns(),
            binary,
            ovs_run.clone(),
            vec![opts.config.clone(), conn],
            dir.to_path_buf(),
            pair.node.vty_dir().to_path_buf(),
        );
        Ok(Bench {
            agent,
            vswitchd: Some(vswitchd),
            pair,
            nb,
            sb,
            ovs,
            dir: dir.to_path_buf(),
            ovs_run,
        })
    }

    /// GET `url` with curl from inside the node namespace (where the
    /// agent's `metrics_listen` is): status and body.
    pub fn http_get(&self, url: &str) -> Result<(u16, String)> {
        let out = Command::new("ip")
            .args(["netns", "exec", self.node_netns(), "curl", "-s", "-m", "15"])
            .args(["-w", "\n%{http_code}", url])
            .output()
            .context("curl")?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", "000"));
        Ok((code.parse().unwrap_or(0), body.to_string()))
    }

    /// The bench's directory (configs, rt_tables, logs).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The node's namespace.
    pub fn node_netns(&self) -> &str {
        self.pair.node_netns()
    }

    /// The agent command line (see [`Agent::command`]).
    pub fn agent_command(&self, args: &[&str]) -> Command {
        self.agent.command(args)
    }

    /// The agent command line as a shell would show it.
    pub fn agent_command_line(&self, args: &[&str]) -> String {
        self.agent.command_line(args)
    }

    /// Runs the agent with `args` to completion.
    pub fn agent(&self, args: &[&str]) -> Result<Output> {
        self.agent.run(args)
    }

    /// Runs the agent with `args`, failing unless it exits 0; returns stdout.
    pub fn agent_ok(&self, args: &[&str]) -> Result<String> {
        self.agent.run_ok(args)
    }

    /// `plan` live against the databases and the node: the plan's text.
    pub fn plan(&self) -> Result<String> {
        self.agent.plan()
    }

    /// `plan --format json`: the number of ops (0 = converged).
    pub fn plan_op_count(&self) -> Result<usize> {
        self.agent.plan_op_count()
    }

    /// Starts the agent daemon, logging to `agent.log` in the bench directory.
    pub fn start_daemon(&mut self) -> Result<()> {
        self.agent.start_daemon()
    }

    /// SIGTERMs the daemon and waits for it; returns how long it took to exit.
    pub fn stop_daemon(&mut self) -> Result<Duration> {
        self.agent.stop_daemon()
    }

    /// SIGKILLs the daemon (a crash).
    pub fn kill_daemon(&mut self) {
        self.agent.kill_daemon()
    }

    /// The process id of the bench's ovs-vswitchd (`ip netns exec` execs
    /// it, so the child's pid is its own).
    pub fn vswitchd_pid(&self) -> Option<u32> {
        self.vswitchd.as_ref().map(|v| v.pid())
    }

    /// `ip -n NODE -j ARGS` parsed.
    pub fn node_json(&self, args: &[&str]) -> Result<Vec<Value>> {
        let mut all = vec!["-j"];
        all.extend_from_slice(args);
        let text = self.node_ip(&all)?;
        if text.trim().is_empty() {
            return Ok(Vec::new());
        }
        serde_json::from_str(&text).with_context(|| format!("ip {args:?}: {text}"))
    }

    /// The addresses on the node's bgp-nic, as `ADDR/LEN`.
    pub fn bgp_nic_addrs(&self) -> Result<Vec<String>> {
        let links = self.node_json(&["addr", "show", "dev", "bgp-nic"])?;
        Ok(links
            .iter()
            .flat_map(|l| l["addr_info"].as_array().cloned().unwrap_or_default())
            .filter_map(|a| Some(format!("{}/{}", a["local"].as_str()?, a["prefixlen"])))
            .collect())
    }

    /// The daemon's log so far.
    pub fn agent_log(&self) -> String {
        self.agent.log()
    }

    /// `ip -n NODE ARGS`.
    pub fn node_ip(&self, args: &[&str]) -> Result<String> {
        self.pair.node_ip(args)
    }

    /// Leaves the node as the Python agent would have for the current
    /// databases: the agent's plan against this (empty) node, written by
    /// the command-line tools the way upstream writes it
    /// ([`python_node::python_writes`]). Returns the number of writes.
    pub fn prepare_like_python_agent(&self) -> Result<usize> {
        let text = self.agent_ok(&["plan", "--format", "json"])?;
        let plan: obgp_plan::Plan =
            serde_json::from_str(&text).with_context(|| format!("plan JSON: {text}"))?;
        let writes = python_node::python_writes(&plan).map_err(anyhow::Error::msg)?;
        let netns = self.node_netns().to_string();
        for w in &writes {
            match w {
                PythonWrite::Ip(args) => {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    self.node_ip(&args)?;
                }
                PythonWrite::Sysctl { key, value } => {
                    run(Command::new("ip")
                        .args(["netns", "exec", &netns, "sysctl", "-q", "-w"])
                        .arg(format!("{key}={value}")))?;
                }
                PythonWrite::RtTable(line) => {
                    use std::io::Write;
                    let mut f = std::fs::OpenOptions::new()
                        .append(true)
                        .open(self.dir.join("rt_tables"))?;
                    writeln!(f, "{line}")?;
                }
                PythonWrite::Flow { bridge, flow } => {
                    run(Command::new("ovs-ofctl")
                        .env("OVS_RUNDIR", &self.ovs_run)
                        .args(["add-flow", bridge, flow]))?;
                }
                PythonWrite::Frr(text) => {
                    let file = self.dir.join("python-agent-frr.conf");
                    std::fs::write(&file, text)?;
                    self.pair.node.vtysh_file(&file)?;
                }
            }
        }
        Ok(writes.len())
    }

    /// The routing table number of `name` in the agent's rt_tables file.
    pub fn table_of(&self, name: &str) -> Result<Option<u32>> {
        let text = std::fs::read_to_string(self.dir.join("rt_tables"))?;
        Ok(text.lines().find_map(|l| {
            let mut it = l.split_whitespace();
            let n = it.next()?;
            (it.next() == Some(name)).then(|| n.parse().ok()).flatten()
        }))
    }

    /// `ovs-ofctl dump-flows BRIDGE cookie=C/-1`.
    pub fn flows(&self, bridge: &str, cookie: u32) -> Result<String> {
        run(Command::new("ovs-ofctl")
            .env("OVS_RUNDIR", &self.ovs_run)
            .args(["dump-flows", "--no-stats", bridge])
            .arg(format!("cookie={cookie}/-1")))
    }

    /// `ovs-ofctl del-flows BRIDGE cookie=C/-1`: an operator's mistake,
    /// for the repair tests.
    pub fn del_flows(&self, bridge: &str, cookie: u32) -> Result<String> {
        run(Command::new("ovs-ofctl")
            .env("OVS_RUNDIR", &self.ovs_run)
            .args(["del-flows", bridge])
            .arg(format!("cookie={cookie}/-1")))
    }

    /// The prefixes the peer has in its BGP table (IPv4 and IPv6).
    pub fn peer_prefixes(&self) -> Result<Vec<String>> {
        let mut all = Vec::new();
        for v in [
            self.pair.peer.show_bgp_json()?,
            self.pair.peer.show_bgp_ipv6_json()?,
        ] {
            if let Some(routes) = v.get("routes").and_then(Value::as_object) {
                all.extend(routes.keys().cloned());
            }
        }
        all.sort();
        Ok(all)
    }

    /// Waits until the peer has (`present`) or lacks every prefix of `prefixes`.
    pub fn wait_peer(
        &self,
        prefixes: &[&str],
        present: bool,
        timeout: Duration,
    ) -> Result<Duration> {
        let start = Instant::now();
        let what = format!(
            "the peer to {} {prefixes:?}",
            if present { "learn" } else { "withdraw" }
        );
        wait_for(&what, timeout, || {
            let have = self.peer_prefixes()?;
            let done = prefixes
                .iter()
                .all(|p| have.iter().any(|h| h == p) == present);
            Ok(done.then_some(()))
        })
        .with_context(|| format!("peer has {:?}", self.peer_prefixes().unwrap_or_default()))?;
        Ok(start.elapsed())
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        let _ = self.stop_daemon();
        self.vswitchd.take();
    }
}

/// A fresh `rt_tables` in `dir`: the agent writes its entries there, never
/// into the host's /etc/iproute2/rt_tables.
fn fresh_rt_tables(dir: &Path) -> Result<()> {
    std::fs::copy("/etc/iproute2/rt_tables", dir.join("rt_tables")).or_else(|_| {
        std::fs::write(dir.join("rt_tables"), obgp_plan::RtTables::RESERVED).map(|_| 0)
    })?;
    Ok(())
}

/// The agent's second config file, `connections.conf` in `dir`: the
/// throwaway databases, VM-tier deadlines and `extra_default` lines.
fn write_connections(
    dir: &Path,
    ovs: &OvsdbServer,
    nb_connection: &str,
    extra_default: &str,
) -> Result<PathBuf> {
    let conn = dir.join("connections.conf");
    // Under TCG a vtysh spawn alone takes seconds (it loads FRR's YANG
    // models), so the VM tier gives the commands far more than the 5 s
    // a real node's defaults give them.
    let deadlines = "vtysh_timeout = 60\novs_ofctl_timeout = 60";
    std::fs::write(
        &conn,
        format!(
            "# written by the e2e bench: the throwaway databases\n[DEFAULT]\novsdb_connection = {}\n{deadlines}\n{extra_default}\n[ovn]\novn_nb_connection = {nb_connection}\n",
            ovs.unix_remote(),
        ),
    )?;
    Ok(conn)
}

fn load_nb(nb: &Nb, topology: &Value) -> Result<()> {
    let rows = topology
        .get("OVN_Northbound")
        .context("the topology has no OVN_Northbound member")?;
    nb.transact(&obgp_testbed::fixture::insert_ops(rows))
        .context("loading the OVN_Northbound rows")?;
    Ok(())
}

/// An OVN_Southbound ovsdb-server with `topology`'s `OVN_Southbound` rows,
/// when it has that member, named by the Open_vSwitch row's
/// `external_ids:ovn-remote` as ovn-controller's node has it (an SB driver
/// finds it there).
pub(crate) fn start_sb(topology: &Value, ovs: &OvsdbServer) -> Result<Option<OvsdbServer>> {
    if topology.get("OVN_Southbound").is_none() {
        return Ok(None);
    }
    let sb = OvsdbServer::start("ovn-sb.ovsschema").context("OVN_Southbound ovsdb-server")?;
    load(&sb, topology, "OVN_Southbound")?;
    ovs.transact(&[serde_json::json!({
        "op": "mutate", "table": "Open_vSwitch", "where": [],
        "mutations": [["external_ids", "insert",
            ["map", [["ovn-remote", sb.unix_remote()]]]]],
    })])
    .context("setting external_ids:ovn-remote")?;
    println!(
        "bench: OVN_Southbound ovsdb-server {} on the host (the Open_vSwitch row's external_ids:ovn-remote)",
        sb.unix_remote()
    );
    Ok(Some(sb))
}

pub(crate) fn load(server: &OvsdbServer, topology: &Value, db: &str) -> Result<()> {
    let rows = topology
        .get(db)
        .with_context(|| format!("the topology has no {db} member"))?;
    let ops = obgp_testbed::fixture::insert_ops(rows);
    server
        .transact(&ops)
        .with_context(|| format!("loading the {db} rows"))?;
    Ok(())
}

/// The number of steps (ops) in a plan's JSON (`ovn-bgp-agent plan --format json`).
pub fn count_ops(plan: &Value) -> usize {
    plan.get("steps")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}
