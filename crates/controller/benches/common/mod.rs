//! The bench node shared by the latency and soak benchmarks: real NB and
//! local OVS ovsdb-servers with a topogen topology, a network namespace
//! standing for the node, a fake vtysh, and the agent's config for them.

// Each bench uses its own subset of these helpers.
#![allow(dead_code)]

pub mod kernel_events;

use std::time::Instant;

use anyhow::{Context, Result};
use obgp_config::{Config, Driver, ExposingMethod};
use obgp_controller::{QueueConfig, RunOptions};
use obgp_node::KernelConfig;
use obgp_ovsdb::{Remote, Session, SessionConfig};
use obgp_testbed::netns::Netns;
use obgp_testbed::ovsdb::OvsdbServer;
use obgp_topogen::{Params, Topology};
use serde_json::json;

/// Everything the agent under test runs against.
pub struct BenchNode {
    pub nb: OvsdbServer,
    pub ovs: OvsdbServer,
    pub topo: Topology,
    /// A session to the NB (the topology was loaded through it).
    pub nb_session: Session,
    /// The node: `br-ex` (a Linux bridge with a MAC) and `bgp-nic` (an ifb:
    /// no dummy/vrf on this kernel).
    pub ns: Netns,
    /// rt_tables, the empty OVS run dir and the fake vtysh's files.
    pub dir: tempfile::TempDir,
}

/// Starts the servers, loads a topology of `vms` ports (`seed`), writes the
/// local OVS identity rows (`host-000`, `physnet1:br-ex` with the localnet
/// patch port) and creates the namespace node `ns_tag`.
pub async fn start_node(vms: usize, seed: u64, ns_tag: &str) -> Result<BenchNode> {
    let nb = OvsdbServer::start("ovn-nb.ovsschema").context("OVN_Northbound ovsdb-server")?;
    let ovs = OvsdbServer::start("vswitch.ovsschema").context("Open_vSwitch ovsdb-server")?;
    let topo = Topology::generate(Params {
        vms,
        seed,
        ..Params::default()
    });
    let nb_session = connect(&nb.unix_remote()).await?;
    let t = Instant::now();
    topo.load(&nb_session)
        .await
        .context("loading the topology")?;
    eprintln!(
        "  N={vms}: topology loaded in {:.1} s ({:?})",
        t.elapsed().as_secs_f64(),
        topo.summary()
    );
    let localnet: String = nb
        .select_all("Logical_Switch_Port")?
        .iter()
        .find(|r| r["type"] == "localnet")
        .and_then(|r| r["name"].as_str().map(String::from))
        .context("the topology has a localnet port")?;
    ovs.transact(&[
        json!({"op": "insert", "table": "Interface", "uuid-name": "patchif",
            "row": {"name": format!("patch-{localnet}-to-br-int"), "type": "patch"}}),
        json!({"op": "insert", "table": "Port", "uuid-name": "patch",
            "row": {"name": format!("patch-{localnet}-to-br-int"),
                "interfaces": ["named-uuid", "patchif"]}}),
        json!({"op": "insert", "table": "Bridge", "uuid-name": "brex",
            "row": {"name": "br-ex", "ports": ["named-uuid", "patch"]}}),
        json!({"op": "insert", "table": "Open_vSwitch", "row": {
            "bridges": ["named-uuid", "brex"],
            "external_ids": ["map", [["hostname", "host-000"], ["system-id", "chassis-000"],
                ["ovn-bridge-mappings", "physnet1:br-ex"]]]}}),
    ])
    .context("the local OVS identity rows")?;

    let ns = node_namespace(ns_tag)?;
    let dir = tempfile::tempdir()?;
    write_rt_tables(dir.path())?;
    std::fs::create_dir_all(dir.path().join("ovs-run"))?;
    Ok(BenchNode {
        nb,
        ovs,
        topo,
        nb_session,
        ns,
        dir,
    })
}

/// The node namespace: `br-ex` (a Linux bridge with a MAC) and `bgp-nic`
/// (an ifb: no dummy/vrf on this kernel), both up.
fn node_namespace(tag: &str) -> Result<Netns> {
    let ns = Netns::new(tag)?;
    ns.ip(&["link", "add", "br-ex", "type", "bridge"])?;
    ns.ip(&["link", "set", "br-ex", "address", "02:00:00:00:0e:01", "up"])?;
    ns.ip(&["link", "add", "bgp-nic", "type", "ifb"])?;
    ns.ip(&["link", "set", "bgp-nic", "up"])?;
    Ok(ns)
}

/// The system's four reserved tables, nothing of the agent's.
fn write_rt_tables(dir: &std::path::Path) -> Result<()> {
    std::fs::write(dir.join("rt_tables"), obgp_plan::RtTables::RESERVED)?;
    Ok(())
}

/// Replaces the node with an untouched one (a new namespace, rt_tables
/// without the agent's entries, FRR's running config empty), for a run
/// that must start from nothing on the same databases.
pub fn fresh_node_namespace(node: &mut BenchNode, tag: &str) -> Result<()> {
    node.ns = node_namespace(tag)?;
    write_rt_tables(node.dir.path())?;
    let _ = std::fs::remove_file(node.dir.path().join("frr-running.conf"));
    let _ = std::fs::remove_file(node.dir.path().join(FRR_LAST_APPLIED));
    Ok(())
}

impl BenchNode {
    /// The agent's config: NB driver, underlay, tenant networks exposed,
    /// a periodic reconcile every `reconcile_interval` s, FRR checked hourly,
    /// the full NB monitor (what the benchmarks' figures were measured
    /// with; the convergence bench and the conditional test set the
    /// monitor themselves, the latency bench with its `monitor=`).
    pub fn config(&self, reconcile_interval: u64) -> Config {
        let mut config = Config::default();
        config.default.driver = Driver::NbOvnBgpDriver;
        config.default.ovn_nb_monitor_all = true;
        config.default.exposing_method = ExposingMethod::Underlay;
        config.default.expose_tenant_networks = true;
        config.default.bgp_router_id = Some("192.0.2.1".into());
        config.default.ovsdb_connection = self.ovs.unix_remote();
        config.ovn.ovn_nb_connection = Some(self.nb.unix_remote());
        config.default.reconcile_interval = reconcile_interval;
        config.default.frr_reconcile_interval = 3600;
        config
    }

    /// The run options: the namespace node, the fake vtysh, no ovs-vswitchd.
    pub fn options(&self, queue: QueueConfig) -> Result<RunOptions> {
        Ok(RunOptions {
            kernel: KernelConfig {
                netns: Some(self.ns.path()),
                rt_tables: self.dir.path().join("rt_tables"),
                dummy_kind: "ifb".into(),
                // No ovs-vswitchd: `ovs-ofctl show br-ex` fails on the empty
                // run dir, so the bridge counts as absent (one spawn per observe).
                // The soak starts one there (benches/soak/vswitchd.rs).
                ovs_rundir: Some(self.dir.path().join("ovs-run")),
                // No FRR: a script stands in for vtysh and answers like a
                // healthy FRR (see `fake_vtysh`).
                vtysh: fake_vtysh(self.dir.path())?.into(),
                vty_socket: None,
                frr_config_dir: self.dir.path().to_path_buf(),
                ..KernelConfig::default()
            },
            queue,
            ..RunOptions::default()
        })
    }
}

pub async fn connect(remote: &str) -> Result<Session> {
    let remote: Remote = remote.parse()?;
    let (session, _notes) = Session::connect(
        &remote,
        None,
        SessionConfig {
            probe_interval: None,
            ..Default::default()
        },
    )
    .await?;
    Ok(session)
}

/// How many IPv4 addresses `dev` has in `ns`.
pub fn addresses_on(ns: &Netns, dev: &str) -> usize {
    kernel_events::announcements_on(ns, dev, obgp_config::AnnounceWith::Address)
}

/// Where [`fake_vtysh`] keeps the last file it was given with `-f`: the
/// FRR text the agent applied last.
pub const FRR_LAST_APPLIED: &str = "frr-last-applied.conf";

/// A vtysh stand-in that behaves like a healthy FRR (after an optional
/// `--vty_socket DIR`, which it ignores): `-f FILE` keeps the
/// file's lines as the running configuration (and the file itself as
/// [`FRR_LAST_APPLIED`]), `-c "show running-config"`
/// prints them, anything else succeeds silently. With plain `true`, every
/// FRR check (periodic, retry) found no config and re-applied it, a cost
/// (two process spawns) a node with a running FRR does not pay.
pub fn fake_vtysh(dir: &std::path::Path) -> Result<String> {
    let script = dir.join("vtysh");
    let running = dir.join("frr-running.conf");
    // Tests run beside each other: written without a write descriptor a
    // parallel fork could keep (ETXTBSY).
    obgp_testbed::script::write_executable(
        &script,
        &format!(
            "#!/bin/sh\n\
             [ \"$1\" = --vty_socket ] && shift 2\n\
             case \"$1 $2\" in\n\
             \"-f \"*) cat \"$2\" >> '{r}'; cp \"$2\" '{l}' ;;\n\
             \"-c show running-config\") cat '{r}' 2>/dev/null ;;\n\
             esac\n\
             exit 0\n",
            r = running.display(),
            l = dir.join(FRR_LAST_APPLIED).display()
        ),
    )?;
    Ok(script.display().to_string())
}

/// GET `path` from the daemon's listener at `addr`, within `within`:
/// status and body (the listener closes after one answer).
pub async fn http_get(
    addr: std::net::SocketAddr,
    path: &str,
    within: std::time::Duration,
) -> Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
        .await?;
    let mut text = String::new();
    tokio::time::timeout(within, s.read_to_string(&mut text))
        .await
        .with_context(|| format!("the listener did not answer within {within:?}"))??;
    let status = text
        .get(9..12)
        .and_then(|c| c.parse().ok())
        .with_context(|| format!("status line of {text:?}"))?;
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Ok((status, body.to_string()))
}

/// The daemon's `GET /status` at `addr`, parsed.
pub async fn daemon_status(
    addr: std::net::SocketAddr,
) -> Result<obgp_controller::ops::status::Status> {
    let (code, body) = http_get(addr, "/status", std::time::Duration::from_secs(15)).await?;
    anyhow::ensure!(code == 200, "/status {code}: {body}");
    Ok(serde_json::from_str(&body)?)
}
