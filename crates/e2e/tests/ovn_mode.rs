//! `exposing_method = ovn` end to end (VM tier: the agent builds the
//! bgp-vrf VRF and the bgp-nic dummy).
//!
//! The real agent in the node namespace of the demo bench (real central
//! NB and Open_vSwitch ovsdb-servers, ovs-vswitchd, the node's FRR and an
//! eBGP peer), plus the node-local cluster's NB and SB ovsdb-servers with
//! a real ovn-northd. The node's OVS gets a fabric bridge `br-fab` (its
//! NIC `eth-fab`, and the port the local ovn-controller would create,
//! `patch-fabric1-localnet-to-br-int`) and
//! `ovn-bridge-mappings-bgp = fabric1:br-fab,local:br-ex`.
//!
//! Checked: the peer learns the provider IPs and not the tenant subnet;
//! the local NB holds the marked rows, the fabric router port with br-fab's
//! kernel MAC and address, a binding per announced IP with a MAC; northd
//! compiles them into logical flows of bgp-router without an error; the
//! cookie-999 egress flows on br-ex, ingress flows on br-fab and the FDB
//! entry are in OVS; no kernel wiring; a restarted agent
//! (`reconcile --once`) changes nothing and every uuid stays; removing
//! segment fabric1 under the daemon removes its rows and its ingress flows
//! and keeps the announcements.

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use obgp_e2e::{Bench, BenchOptions};
use obgp_testbed::netns::Netns;
use obgp_testbed::ovsdb::{Northd, OvsdbServer};
use serde_json::{json, Value};

const LEARN: Duration = Duration::from_secs(90);
const ANNOUNCED: [&str; 7] = [
    "172.24.4.10/32",
    "172.24.4.11/32",
    "172.24.4.50/32",
    "172.24.4.100/32",
    "2001:db8::10/128",
    "2001:db8::11/128",
    "2001:db8::100/128",
];
const ROUTER_INTERNAL_MAC: &str = "40:44:00:00:00:06";

fn step(t0: Instant, what: &str) {
    println!("ovn-mode [{:6.1} s] {what}", t0.elapsed().as_secs_f64());
}

/// The ports of br-fab when no local ovn-controller runs: the NIC, and
/// the patch port it would create (internal ports: no traffic).
const STAND_IN_PORTS: [&str; 3] = ["br-fab", "eth-fab", "patch-fabric1-localnet-to-br-int"];

/// The demo topology with br-fab (internal ports `fab_ports`) in the
/// node's OVS and the local cluster's bridge mappings.
fn topology(bgp_mappings: &str, fab_ports: &[&str]) -> Result<Value> {
    let mut t = obgp_e2e::demo_topology()?;
    let ovs = t["Open_vSwitch"]
        .as_object_mut()
        .context("Open_vSwitch rows")?;
    let mut ports = Vec::new();
    for (i, name) in fab_ports.iter().enumerate() {
        let iface = format!("e0000000-0000-4000-8000-00000000010{i}");
        let port = format!("e0000000-0000-4000-8000-00000000020{i}");
        ovs.entry("Interface")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .context("Interface")?
            .insert(iface.clone(), json!({"name": name, "type": "internal"}));
        ovs.entry("Port")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .context("Port")?
            .insert(
                port.clone(),
                json!({"name": name, "interfaces": ["uuid", iface]}),
            );
        ports.push(json!(["uuid", port]));
    }
    let bridge = "e0000000-0000-4000-8000-000000000300";
    ovs["Bridge"].as_object_mut().context("Bridge")?.insert(
        bridge.into(),
        json!({"name": "br-fab", "datapath_type": "netdev", "ports": ["set", ports]}),
    );
    let root = ovs["Open_vSwitch"]
        .as_object_mut()
        .and_then(|rows| rows.values_mut().next())
        .context("the Open_vSwitch row")?;
    root["bridges"][1]
        .as_array_mut()
        .context("bridges")?
        .push(json!(["uuid", bridge]));
    root["external_ids"][1]
        .as_array_mut()
        .context("external_ids")?
        .push(json!(["ovn-bridge-mappings-bgp", bgp_mappings]));
    Ok(t)
}

/// The node-local cluster's NB and SB ovsdb-servers with a real
/// ovn-northd between them.
struct LocalCluster {
    nb: OvsdbServer,
    sb: OvsdbServer,
    northd: Northd,
}

impl LocalCluster {
    fn start() -> Result<LocalCluster> {
        let nb = OvsdbServer::start("ovn-nb.ovsschema").context("local NB")?;
        let sb = OvsdbServer::start("ovn-sb.ovsschema").context("local SB")?;
        let northd = Northd::start(&nb, &sb)?;
        Ok(LocalCluster { nb, sb, northd })
    }

    /// Adds the agent's `exposing_method = ovn` config file (the peer
    /// 100.64.1.10 behind eth-fab, `pool` the provider prefixes).
    fn configure(&self, b: &mut Bench, pool: &str) -> Result<()> {
        let conf = b.dir().join("ovn-mode.conf");
        std::fs::write(
            &conf,
            format!(
                "[DEFAULT]\nexposing_method = ovn\n\
                 [local_ovn_cluster]\novn_nb_connection = {}\npeer_ips = 100.64.1.10\n\
                 provider_networks_pool_prefixes = {pool}\n\
                 external_nics = eth-fab\nbgp_chassis_id = bgp\n",
                self.nb.unix_remote()
            ),
        )?;
        b.agent.config_files.push(conf);
        Ok(())
    }
}

/// The demo bench with br-fab (internal ports `fab_ports`) in a fresh
/// directory under /tmp (`obgp-e2e-<tag>-*`, removed with the guard), and
/// the local cluster beside it.
fn bench(tag: &str, fab_ports: &[&str]) -> Result<(tempfile::TempDir, Bench, LocalCluster)> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("obgp-e2e-{tag}-"))
        .tempdir_in("/tmp")?;
    let b = Bench::start(
        dir.path(),
        &topology("fabric1:br-fab,local:br-ex", fab_ports)?,
        &BenchOptions::default(),
    )?;
    Ok((dir, b, LocalCluster::start()?))
}

fn rows(db: &OvsdbServer, table: &str) -> Result<Vec<Value>> {
    db.select_all(table)
}

fn named<'a>(rows: &'a [Value], name: &str) -> Option<&'a Value> {
    rows.iter().find(|r| r["name"] == name)
}

fn map_has(row: &Value, column: &str, key: &str, value: &str) -> bool {
    row[column][1]
        .as_array()
        .is_some_and(|pairs| pairs.iter().any(|p| p[0] == key && p[1] == value))
}

/// Every uuid in the agent's tables of the local NB.
fn uuids(db: &OvsdbServer) -> Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    for t in obgp_local_cluster::NbTable::ALL {
        for r in rows(db, t.name())? {
            out.insert(r["_uuid"][1].as_str().unwrap_or_default().to_string());
        }
    }
    Ok(out)
}

fn ovs_appctl(b: &Bench, args: &[&str]) -> Result<String> {
    obgp_testbed::ovsdb::run(
        Command::new("ovs-appctl")
            .env("OVS_RUNDIR", b.dir().join("ovs-run"))
            .args(args),
    )
}

#[test]
#[ignore = "vm tier: full agent needs vrf/dummy"]
fn the_agent_routes_through_the_node_local_cluster_and_keeps_its_rows() -> Result<()> {
    let t0 = Instant::now();
    let (_dir, mut b, cluster) = bench("ovnmode", &STAND_IN_PORTS)?;
    let (local, local_sb, northd) = (&cluster.nb, &cluster.sb, &cluster.northd);
    local.transact(&[json!({"op": "insert", "table": "Logical_Switch",
        "row": {"name": "ops-net"}})])?;
    obgp_e2e::wait_for("br-fab in the node", Duration::from_secs(30), || {
        Ok(b.node_ip(&["link", "show", "br-fab"]).is_ok().then_some(()))
    })?;
    b.node_ip(&["link", "set", "br-fab", "up"])?;
    b.node_ip(&["addr", "add", "100.64.1.9/30", "dev", "br-fab"])?;
    let fab_mac = b.node_json(&["link", "show", "br-fab"])?[0]["address"]
        .as_str()
        .context("br-fab's MAC")?
        .to_string();
    cluster.configure(&mut b, "172.24.4.0/24,2001:db8::/64")?;
    step(
        t0,
        &format!("bench up; local NB, SB and northd; br-fab {fab_mac}"),
    );

    b.start_daemon()?;
    b.wait_peer(&ANNOUNCED, true, LEARN)
        .with_context(|| b.agent_log())?;
    let peer = b.peer_prefixes()?;
    ensure!(
        !peer.iter().any(|p| p == "10.0.0.0/24"),
        "the tenant subnet is refused in this mode: {peer:?}"
    );
    step(t0, &format!("peer learned {ANNOUNCED:?}"));

    // The local NB: marked rows, the fabric port from the kernel.
    obgp_e2e::wait_for("the bindings", LEARN, || {
        Ok((rows(local, "Static_MAC_Binding")?.len() >= 4).then_some(()))
    })?;
    let router = rows(local, "Logical_Router")?;
    let router = named(&router, "bgp-router").context("bgp-router")?;
    ensure!(map_has(router, "external_ids", "ovn-bgp-agent", "managed"));
    let lrps = rows(local, "Logical_Router_Port")?;
    let fabric = named(&lrps, "bgp-router-fabric1").context("bgp-router-fabric1")?;
    ensure!(
        fabric["mac"] == fab_mac.as_str() && fabric["networks"] == "100.64.1.9/30",
        "{fabric}"
    );
    let announced: BTreeSet<String> = b.bgp_nic_addrs()?.into_iter().collect();
    for smb in rows(local, "Static_MAC_Binding")? {
        let ip = smb["ip"].as_str().context("ip")?;
        ensure!(
            announced.iter().any(|a| a.starts_with(&format!("{ip}/"))),
            "binding {ip} not announced: {announced:?}"
        );
    }
    let switches = rows(local, "Logical_Switch")?;
    ensure!(named(&switches, "ops-net").is_some_and(|s| !map_has(
        s,
        "external_ids",
        "ovn-bgp-agent",
        "managed"
    )));
    step(t0, "local NB rows marked, fabric port from the kernel");

    // northd compiles them.
    obgp_e2e::wait_for("bgp-router's logical flows", LEARN, || {
        let dps = rows(local_sb, "Datapath_Binding")?;
        let Some(dp) = dps
            .iter()
            .find(|d| map_has(d, "external_ids", "name", "bgp-router"))
        else {
            return Ok(None);
        };
        let uuid = dp["_uuid"][1].clone();
        let n = rows(local_sb, "Logical_Flow")?
            .iter()
            .filter(|f| f["logical_datapath"][1] == uuid)
            .count();
        Ok((n > 10).then_some(n))
    })?;
    let log = northd.log();
    ensure!(!log.contains("|ERR|"), "northd:\n{log}");
    step(t0, "northd compiled bgp-router");

    // OVS: egress on OpenStack's bridge, ingress and the FDB on the fabric.
    obgp_e2e::wait_for("the cookie-999 flows", LEARN, || {
        let egress = b.flows("br-ex", 999)?;
        let ingress = b.flows("br-fab", 999)?;
        Ok(
            (egress.contains(&format!("mod_dl_dst:{ROUTER_INTERNAL_MAC}"))
                && ingress.contains("nw_dst=172.24.4.0/24")
                && ingress.contains("ipv6_dst=2001:db8::/64"))
            .then_some(()),
        )
    })
    .with_context(|| {
        format!(
            "br-ex:\n{}\nbr-fab:\n{}\nplan:\n{}\nagent log:\n{}",
            b.flows("br-ex", 999).unwrap_or_default(),
            b.flows("br-fab", 999).unwrap_or_default(),
            b.plan().unwrap_or_else(|e| e.to_string()),
            b.agent_log()
        )
    })?;
    let fdb = ovs_appctl(&b, &["fdb/show", "br-fab"])?;
    ensure!(fdb.contains(&fab_mac), "fdb/show br-fab:\n{fdb}");
    ensure!(
        b.table_of("br-ex")?.is_none(),
        "no bridge table in this mode"
    );
    let rules = b.node_ip(&["rule", "show"])?;
    ensure!(
        !rules.contains("br-ex"),
        "no rule to a bridge table:\n{rules}"
    );
    step(t0, "flows and FDB in OVS; no kernel wiring");

    // A restart changes nothing: same uuids, nothing planned.
    b.stop_daemon()?;
    let before = uuids(local)?;
    let once = b.agent_ok(&["reconcile", "--once"])?;
    let plan = b.plan()?;
    ensure!(
        plan.contains("nothing to do: the node matches OVN")
            && plan.contains("nothing to do: the local NB holds the desired rows"),
        "after reconcile --once ({once}):\n{plan}"
    );
    ensure!(uuids(local)? == before, "the local NB's uuids changed");
    step(t0, "restart: nothing planned, every uuid kept");

    // Segment fabric1 goes while the daemon runs: its rows and its
    // ingress flows go, the announcements stay. (A fresh agent does not
    // read a bridge nothing maps any more: the mapping is removed after
    // the daemon's first reconcile, as on a running node.)
    b.start_daemon()?;
    obgp_e2e::wait_for("the restarted daemon's first reconcile", LEARN, || {
        Ok((b.agent_log().matches("reasons=\"startup\"").count() >= 2).then_some(()))
    })?;
    b.ovs.transact(&[json!({
        "op": "mutate", "table": "Open_vSwitch", "where": [],
        "mutations": [
            ["external_ids", "delete", ["set", ["ovn-bridge-mappings-bgp"]]],
            ["external_ids", "insert", ["map", [["ovn-bridge-mappings-bgp", "local:br-ex"]]]],
        ]
    })])?;
    obgp_e2e::wait_for("fabric1's rows and flows removed", LEARN, || {
        let switches = rows(local, "Logical_Switch")?;
        let lrps = rows(local, "Logical_Router_Port")?;
        Ok((named(&switches, "fabric1").is_none()
            && named(&lrps, "bgp-router-fabric1").is_none()
            && !b.flows("br-fab", 999)?.contains("cookie="))
        .then_some(()))
    })
    .with_context(|| b.agent_log())?;
    let switches = rows(local, "Logical_Switch")?;
    ensure!(named(&switches, "ops-net").is_some() && named(&switches, "local").is_some());
    let peer = b.peer_prefixes()?;
    ensure!(
        ANNOUNCED.iter().all(|p| peer.iter().any(|h| h == p)),
        "announcements kept: {peer:?}"
    );
    step(t0, "segment fabric1 removed: its rows gone, the rest kept");
    Ok(())
}

/// Adds the node's devices `ports` to `bridge` as system ports.
fn add_system_ports(b: &Bench, bridge: &str, ports: &[&str]) -> Result<()> {
    let mut ops = Vec::new();
    let mut refs = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        ops.push(
            json!({"op": "insert", "table": "Interface", "uuid-name": format!("i{i}"),
            "row": {"name": p}}),
        );
        ops.push(
            json!({"op": "insert", "table": "Port", "uuid-name": format!("p{i}"),
            "row": {"name": p, "interfaces": ["named-uuid", format!("i{i}")]}}),
        );
        refs.push(json!(["named-uuid", format!("p{i}")]));
    }
    ops.push(
        json!({"op": "mutate", "table": "Bridge", "where": [["name", "==", bridge]],
        "mutations": [["ports", "insert", ["set", refs]]]}),
    );
    b.ovs.transact(&ops)?;
    Ok(())
}

/// A veth pair, `here` in `ns` and `there` in the node's namespace, up.
fn veth_to_node(b: &Bench, ns: &Netns, here: &str, there: &str) -> Result<()> {
    ns.ip(&["link", "add", here, "type", "veth", "peer", "name", there])?;
    ns.ip(&["link", "set", there, "netns", b.node_netns()])?;
    b.node_ip(&["link", "set", there, "up"])?;
    ns.ip(&["link", "set", here, "up"])?;
    Ok(())
}

/// The local cluster's ovn-controller (`-n bgp`: chassis `bgp`, the
/// `-bgp` keys of the Open_vSwitch row) in the node namespace, on the
/// node's ovs-vswitchd; killed on drop.
struct LocalController {
    child: std::process::Child,
    log: std::path::PathBuf,
}

impl LocalController {
    fn start(b: &Bench) -> Result<LocalController> {
        let run = b.dir().join("ovn-run");
        std::fs::create_dir_all(&run)?;
        let log = run.join("ovn-controller.log");
        let child = Command::new("ip")
            .args(["netns", "exec", b.node_netns(), "env"])
            .arg(format!("OVS_RUNDIR={}", b.dir().join("ovs-run").display()))
            .arg(format!("OVN_RUNDIR={}", run.display()))
            .args(["ovn-controller", "-n", "bgp"])
            .arg(b.ovs.unix_remote())
            .arg(format!(
                "--pidfile={}",
                run.join("ovn-controller.pid").display()
            ))
            .arg(format!("--log-file={}", log.display()))
            .args(["--no-chdir", "-vconsole:off"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .context("starting ovn-controller (apt package ovn-host)")?;
        Ok(LocalController { child, log })
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for LocalController {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The OVS port names of `bridge`.
fn bridge_ports(b: &Bench, bridge: &str) -> Result<Vec<String>> {
    let ports: BTreeSet<String> = rows(&b.ovs, "Bridge")?
        .into_iter()
        .filter(|r| r["name"] == bridge)
        .flat_map(|r| match &r["ports"] {
            Value::Array(a) if a.first() == Some(&json!("set")) => {
                a[1].as_array().cloned().unwrap_or_default()
            }
            one => vec![one.clone()],
        })
        .filter_map(|u| u[1].as_str().map(String::from))
        .collect();
    Ok(rows(&b.ovs, "Port")?
        .into_iter()
        .filter(|p| p["_uuid"][1].as_str().is_some_and(|u| ports.contains(u)))
        .filter_map(|p| p["name"].as_str().map(String::from))
        .collect())
}

#[test]
#[ignore = "vm tier: full agent needs vrf/dummy"]
fn traffic_from_the_fabric_reaches_a_vm_through_the_local_router() -> Result<()> {
    let t0 = Instant::now();
    let (_dir, mut b, cluster) = bench("ovntraffic", &["br-fab"])?;

    // The fabric peer behind eth-fab, and VM 172.24.4.10 (the demo's vm1,
    // bound here) behind br-ex, where OpenStack's provider traffic is.
    let peer = Netns::new("ofab")?;
    veth_to_node(&b, &peer, "fp0", "eth-fab")?;
    peer.ip(&["addr", "add", "100.64.1.10/30", "dev", "fp0"])?;
    peer.ip(&["route", "add", "172.24.4.0/24", "via", "100.64.1.9"])?;
    let vm = Netns::new("ovm")?;
    veth_to_node(&b, &vm, "vm0", "vm1-p")?;
    vm.ip(&["link", "set", "vm0", "address", "fa:16:3e:11:11:01"])?;
    vm.ip(&["addr", "add", "172.24.4.10/24", "dev", "vm0"])?;
    vm.ip(&["route", "add", "default", "via", "172.24.4.1"])?;
    // The VM's gateway resolves to the local router's internal MAC. Upstream
    // has the router's switch port proxy ARP for the pool prefixes
    // (arp_proxy); Debian 12's OVN 23.03 reads a prefix there as its first
    // address only (northd's flow is `arp.tpa == {172.24.4.0}`), so the
    // answer a newer OVN gives is pinned here (docs/modes.md).
    vm.ip(&[
        "neigh",
        "replace",
        "172.24.4.1",
        "lladdr",
        ROUTER_INTERNAL_MAC,
        "dev",
        "vm0",
        "nud",
        "permanent",
    ])?;
    add_system_ports(&b, "br-fab", &["eth-fab"])?;
    add_system_ports(&b, "br-ex", &["vm1-p"])?;
    obgp_e2e::wait_for("br-fab in the node", Duration::from_secs(30), || {
        Ok(b.node_ip(&["link", "show", "br-fab"]).is_ok().then_some(()))
    })?;
    b.node_ip(&["link", "set", "br-fab", "up"])?;
    b.node_ip(&["addr", "add", "100.64.1.9/30", "dev", "br-fab"])?;

    // The local cluster's ovn-controller: its own integration bridge,
    // the local SB, no tunnel peer.
    b.ovs.transact(&[json!({
        "op": "mutate", "table": "Open_vSwitch", "where": [],
        "mutations": [["external_ids", "insert", ["map", [
            ["ovn-remote-bgp", cluster.sb.unix_remote()],
            ["ovn-bridge-bgp", "br-bgp"],
            ["ovn-bridge-datapath-type-bgp", "netdev"],
            ["ovn-encap-type-bgp", "geneve"],
            ["ovn-encap-ip-bgp", "127.0.0.1"],
        ]]]]
    })])?;
    let controller = LocalController::start(&b)?;
    cluster.configure(&mut b, "172.24.4.0/24")?;
    step(
        t0,
        "bench up; local NB, SB, northd and ovn-controller -n bgp",
    );

    b.start_daemon()?;
    let patched = obgp_e2e::wait_for("the local cluster's patch ports and flows", LEARN, || {
        let fab = bridge_ports(&b, "br-fab")?;
        let patch = fab
            .iter()
            .find(|p| p.starts_with("patch-fabric1-localnet-to-"))
            .cloned();
        let flows = b.flows("br-fab", 999)?;
        Ok(patch.filter(|_| flows.contains("nw_dst=172.24.4.0/24")))
    })
    .with_context(|| {
        format!(
            "ovn-controller:\n{}\nagent:\n{}",
            controller.log(),
            b.agent_log()
        )
    })?;
    step(
        t0,
        &format!("ovn-controller patched br-fab ({patched}); ingress flows in"),
    );

    obgp_e2e::wait_for("a ping from the fabric peer to the VM", LEARN, || {
        Ok(peer
            // busybox's: the host has no iputils ping.
            .exec("busybox", &["ping", "-c", "1", "-W", "2", "172.24.4.10"])
            .ok()
            .map(|_| ()))
    })
    .with_context(|| diagnose(&b, &cluster, &peer, &vm, &controller))?;
    // It went through the local router: in by the ingress flow.
    let fab = ofctl(&b, &["dump-flows", "br-fab", "cookie=0x3e7/-1"]);
    ensure!(
        fab.contains("n_packets=") && !fab.contains("n_packets=0,"),
        "the ingress flow saw no packet:\n{fab}"
    );
    step(t0, "the peer pings the VM through bgp-router");
    Ok(())
}

/// `ovs-ofctl ARGS` on the node's switch (its output, or the error).
fn ofctl(b: &Bench, args: &[&str]) -> String {
    obgp_testbed::ovsdb::run(
        Command::new("ovs-ofctl")
            .env("OVS_RUNDIR", b.dir().join("ovs-run"))
            .args(args),
    )
    .unwrap_or_else(|e| e.to_string())
}

/// What a failed ping leaves to read: the bindings, both sides'
/// neighbours and counters, OpenFlow and ovn-trace of an echo from the
/// peer, the datapath flows, the daemons' warnings.
fn diagnose(
    b: &Bench,
    cluster: &LocalCluster,
    peer: &Netns,
    vm: &Netns,
    controller: &LocalController,
) -> String {
    let mac = |ns: &str, dev: &str| -> String {
        obgp_e2e::ip(&["-n", ns, "-j", "link", "show", dev])
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| v[0]["address"].as_str().map(String::from))
            .unwrap_or_default()
    };
    let (peer_mac, fab_mac) = (mac(peer.name(), "fp0"), mac(b.node_netns(), "br-fab"));
    let bindings: Vec<String> = rows(&cluster.sb, "Port_Binding")
        .unwrap_or_default()
        .iter()
        .map(|p| format!("{} chassis={}", p["logical_port"], p["chassis"]))
        .collect();
    let of_trace = ovs_appctl(
        b,
        &[
            "ofproto/trace",
            "br-fab",
            &format!(
                "in_port=eth-fab,icmp,icmp_type=8,nw_src=100.64.1.10,nw_dst=172.24.4.10,nw_ttl=64,dl_src={peer_mac},dl_dst={fab_mac}"
            ),
        ],
    )
    .unwrap_or_else(|e| e.to_string());
    let ovn_trace = obgp_testbed::ovsdb::run(Command::new("ovn-trace").args([
        &format!("--db={}", cluster.sb.unix_remote()),
        "--minimal",
        "fabric1",
        &format!(
            "inport==\"fabric1-localnet\" && eth.src=={peer_mac} && eth.dst=={fab_mac} && ip4.src==100.64.1.10 && ip4.dst==172.24.4.10 && ip.ttl==64 && icmp4"
        ),
    ]))
    .unwrap_or_else(|e| e.to_string());
    let warnings = |log: String| -> String {
        log.lines()
            .filter(|l| l.contains("|WARN|") || l.contains("|ERR|"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    format!(
        "port bindings:\n{}\npeer neigh:\n{}\nvm neigh:\n{}\n{}\n{}\nbr-fab:\n{}\nbr-ex:\n{}\nofproto/trace:\n{of_trace}\novn-trace:\n{ovn_trace}\ndatapath:\n{}\nnorthd:\n{}\novn-controller:\n{}",
        bindings.join("\n"),
        peer.ip(&["neigh"]).unwrap_or_default(),
        vm.ip(&["neigh"]).unwrap_or_default(),
        vm.ip(&["-s", "link", "show", "vm0"]).unwrap_or_default(),
        b.node_ip(&["-s", "link", "show", "eth-fab"]).unwrap_or_default(),
        ofctl(b, &["dump-flows", "br-fab"]),
        ofctl(b, &["dump-flows", "br-ex"]),
        ovs_appctl(b, &["dpctl/dump-flows", "-m"]).unwrap_or_else(|e| e.to_string()),
        warnings(cluster.northd.log()),
        warnings(controller.log()),
    )
}
