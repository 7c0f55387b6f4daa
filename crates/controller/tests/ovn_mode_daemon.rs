//! `exposing_method = ovn` on the daemon loop (`run`), against real central
//! NB, local OVS and node-local NB ovsdb-servers, the local cluster's SB
//! with a real ovn-northd, and a namespace node (root; the bench node of
//! the latency and soak benchmarks, ifb bgp-nic): the daemon writes the
//! local cluster's rows (marked, the external router port given the
//! fabric bridge's kernel MAC and address, a Static_MAC_Binding per
//! announced IP), northd compiles them without an error into logical flows
//! of `bgp-router`, the daemon announces on bgp-nic, leaves a foreign row
//! alone, puts back an agent row deleted by hand (the local NB's own
//! changes wake it), and removes a segment's rows when its mapping goes; a
//! fresh agent (`plan_once`) plans nothing for the local NB. While the
//! local NB cannot be written, a new IP is not announced (O1); once it is
//! back, the binding is written and the IP announced.

#[path = "../benches/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use obgp_config::ExposingMethod;
use obgp_controller::{plan_once, run, QueueConfig};
use obgp_testbed::ovsdb::{Northd, OvsdbServer};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(30);
const FABRIC_MAC: &str = "02:00:00:00:0f:01";

/// Rows of `table` by uuid.
fn rows(db: &OvsdbServer, table: &str) -> Result<BTreeMap<String, Value>> {
    Ok(db
        .select_all(table)?
        .into_iter()
        .map(|r| (r["_uuid"][1].as_str().unwrap_or_default().to_string(), r))
        .collect())
}

/// A row's `map` column as pairs.
fn map_has(row: &Value, column: &str, key: &str, value: &str) -> bool {
    row[column][1]
        .as_array()
        .is_some_and(|pairs| pairs.iter().any(|p| p[0] == key && p[1] == value))
}

fn named<'a>(rows: &'a BTreeMap<String, Value>, name: &str) -> Option<&'a Value> {
    rows.values().find(|r| r["name"] == name)
}

/// Every uuid of the agent's tables.
fn all_uuids(db: &OvsdbServer) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for t in obgp_local_cluster::NbTable::ALL {
        out.extend(rows(db, t.name())?.into_keys());
    }
    Ok(out)
}

/// Polls `check` until it holds, within [`WAIT`].
async fn until(what: &str, mut check: impl FnMut() -> Result<bool>) -> Result<()> {
    let t = Instant::now();
    loop {
        let last = check();
        if matches!(last, Ok(true)) {
            return Ok(());
        }
        ensure!(t.elapsed() < WAIT, "{what} not within {WAIT:?}: {last:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn set_bgp_mappings(node: &common::BenchNode, value: &str) -> Result<()> {
    node.ovs.transact(&[json!({
        "op": "mutate", "table": "Open_vSwitch", "where": [],
        "mutations": [
            ["external_ids", "delete", ["set", ["ovn-bridge-mappings-bgp"]]],
            ["external_ids", "insert", ["map", [["ovn-bridge-mappings-bgp", value]]]],
        ]
    })])?;
    Ok(())
}

/// The bench node in `exposing_method = ovn`: a local NB (holding a
/// foreign switch `ops-net`), the fabric side (br-fab with its NIC in OVS,
/// its MAC and address in the kernel), the local cluster's mappings
/// (fabric1 on br-fab, `local` on OpenStack's br-ex), and the agent's
/// config and options for them.
struct OvnNode {
    node: common::BenchNode,
    local: OvsdbServer,
    config: obgp_config::Config,
    opts: obgp_controller::RunOptions,
}

async fn ovn_node(tag: &str) -> Result<OvnNode> {
    let node = common::start_node(40, 11, tag).await?;
    let local = OvsdbServer::start("ovn-nb.ovsschema").context("local NB ovsdb-server")?;
    local.transact(&[json!({"op": "insert", "table": "Logical_Switch",
        "row": {"name": "ops-net", "external_ids": ["map", [["owner", "operator"]]]}})])?;
    node.ovs.transact(&[
        json!({"op": "insert", "table": "Interface", "uuid-name": "nicif", "row": {"name": "eth-fab"}}),
        json!({"op": "insert", "table": "Port", "uuid-name": "nic",
            "row": {"name": "eth-fab", "interfaces": ["named-uuid", "nicif"]}}),
        json!({"op": "insert", "table": "Bridge", "uuid-name": "brfab",
            "row": {"name": "br-fab", "ports": ["named-uuid", "nic"]}}),
        json!({"op": "mutate", "table": "Open_vSwitch", "where": [],
            "mutations": [["bridges", "insert", ["set", [["named-uuid", "brfab"]]]]]}),
    ])?;
    set_bgp_mappings(&node, "fabric1:br-fab,local:br-ex")?;
    node.ns.ip(&["link", "add", "br-fab", "type", "bridge"])?;
    node.ns
        .ip(&["link", "set", "br-fab", "address", FABRIC_MAC, "up"])?;
    node.ns
        .ip(&["addr", "add", "100.64.1.9/30", "dev", "br-fab"])?;

    let mut config = node.config(3600);
    config.default.exposing_method = ExposingMethod::Ovn;
    let lc = &mut config.local_ovn_cluster;
    lc.ovn_nb_connection = local.unix_remote();
    lc.peer_ips = vec!["100.64.1.10".into()];
    lc.provider_networks_pool_prefixes = vec!["172.16.0.0/12".into()];
    lc.external_nics = vec!["eth-fab".into()];
    let mut opts = node.options(QueueConfig::default())?;
    opts.kernel.read_static_fdb = true;
    Ok(OvnNode {
        node,
        local,
        config,
        opts,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_keeps_the_local_nb_rows_of_the_ovn_mode() -> Result<()> {
    let OvnNode {
        node,
        local,
        config,
        opts,
    } = ovn_node("ovm").await?;
    let local_sb = OvsdbServer::start("ovn-sb.ovsschema").context("local SB ovsdb-server")?;
    let northd = Northd::start(&local, &local_sb)?;

    let shutdown = CancellationToken::new();
    let agent = tokio::spawn(run(config.clone(), opts.clone(), shutdown.clone()));

    // The rows, marked, with the kernel's MAC and address on the fabric port.
    until("the local cluster's rows", || {
        let smb = rows(&local, "Static_MAC_Binding")?;
        Ok(named(&rows(&local, "Logical_Router")?, "bgp-router").is_some() && !smb.is_empty())
    })
    .await?;
    let routers = rows(&local, "Logical_Router")?;
    let router = named(&routers, "bgp-router").context("bgp-router")?;
    ensure!(map_has(router, "external_ids", "ovn-bgp-agent", "managed"));
    let lrps = rows(&local, "Logical_Router_Port")?;
    let fabric = named(&lrps, "bgp-router-fabric1").context("bgp-router-fabric1")?;
    ensure!(fabric["mac"] == FABRIC_MAC, "{fabric}");
    ensure!(fabric["networks"] == "100.64.1.9/30", "{fabric}");
    let bfd = rows(&local, "BFD")?;
    ensure!(
        bfd.values()
            .any(|b| b["dst_ip"] == "100.64.1.10" && b["logical_port"] == "bgp-router-fabric1"),
        "{bfd:?}"
    );
    let routes = rows(&local, "Logical_Router_Static_Route")?;
    ensure!(
        routes.values().any(|r| r["ip_prefix"] == "0.0.0.0/0"
            && r["nexthop"] == "100.64.1.10"
            && r["bfd"][0] == "uuid"),
        "{routes:?}"
    );
    for t in [
        "Logical_Switch",
        "Logical_Switch_Port",
        "Logical_Router_Port",
    ] {
        for (uuid, r) in rows(&local, t)? {
            let foreign = r["name"] == "ops-net";
            ensure!(
                foreign != map_has(&r, "external_ids", "ovn-bgp-agent", "managed"),
                "{t} {uuid}: {r}"
            );
        }
    }

    // northd compiles the rows: bgp-router is a datapath with logical
    // flows, its ports are bound, nothing is logged as an error.
    until("bgp-router's logical flows", || {
        let dps = rows(&local_sb, "Datapath_Binding")?;
        let Some((dp, _)) = dps
            .iter()
            .find(|(_, d)| map_has(d, "external_ids", "name", "bgp-router"))
        else {
            return Ok(false);
        };
        let flows = rows(&local_sb, "Logical_Flow")?;
        Ok(flows
            .values()
            .filter(|f| f["logical_datapath"][1] == dp.as_str())
            .count()
            > 10)
    })
    .await?;
    let bound: Vec<String> = rows(&local_sb, "Port_Binding")?
        .values()
        .filter_map(|b| b["logical_port"].as_str().map(String::from))
        .collect();
    for port in [
        "bgp-router-openstack",
        "bgp-router-fabric1",
        "local-localnet",
        "fabric1-localnet",
    ] {
        ensure!(
            bound.iter().any(|b| b == port),
            "{port} not in the SB: {bound:?}"
        );
    }
    let log = northd.log();
    ensure!(!log.contains("|ERR|"), "northd logged errors:\n{log}");
    println!(
        "northd: {} logical flows, ports bound {bound:?}, {} warnings",
        rows(&local_sb, "Logical_Flow")?.len(),
        log.matches("|WARN|").count()
    );

    // Each binding is of an IP the node announces on bgp-nic.
    until("the announcements on bgp-nic", || {
        Ok(common::addresses_on(&node.ns, "bgp-nic") > 0)
    })
    .await?;
    let on_nic = node.ns.ip(&["-o", "addr", "show", "dev", "bgp-nic"])?;
    let smb = rows(&local, "Static_MAC_Binding")?;
    for b in smb.values() {
        let ip = b["ip"].as_str().context("ip")?;
        ensure!(on_nic.contains(&format!(" {ip}/")), "{ip} not on bgp-nic");
    }
    println!(
        "ovn mode: {} bindings, {} routers, {} router ports",
        smb.len(),
        routers.len(),
        lrps.len()
    );

    // A fresh agent computes the same rows: nothing to write.
    let planned = plan_once(&config, &opts).await?;
    let local_plan = planned.local_nb.context("a local-NB plan")?;
    ensure!(
        local_plan.is_empty(),
        "a fresh agent would write:\n{local_plan}"
    );
    let before = all_uuids(&local)?;

    // A binding deleted by hand comes back: the local NB's change wakes
    // the daemon.
    let (gone_uuid, gone) = smb.iter().next().context("a binding")?;
    let gone_ip = gone["ip"].clone();
    local.transact(&[json!({"op": "delete", "table": "Static_MAC_Binding",
        "where": [["_uuid", "==", ["uuid", gone_uuid]]]})])?;
    until("the deleted binding back", || {
        Ok(rows(&local, "Static_MAC_Binding")?
            .iter()
            .any(|(u, b)| b["ip"] == gone_ip && u != gone_uuid))
    })
    .await?;
    let after = all_uuids(&local)?;
    ensure!(
        before.iter().filter(|u| !after.contains(u)).count() == 1,
        "only the deleted row has a new uuid"
    );

    // fabric1 leaves the mappings: its switch and router port go, the
    // foreign switch stays.
    set_bgp_mappings(&node, "local:br-ex")?;
    until("fabric1's rows removed", || {
        let switches = rows(&local, "Logical_Switch")?;
        Ok(named(&switches, "fabric1").is_none()
            && named(&rows(&local, "Logical_Router_Port")?, "bgp-router-fabric1").is_none())
    })
    .await?;
    let switches = rows(&local, "Logical_Switch")?;
    ensure!(named(&switches, "ops-net").is_some(), "the foreign switch");
    ensure!(named(&switches, "local").is_some(), "the internal segment");

    shutdown.cancel();
    agent.await??;
    Ok(())
}

/// A VM port bound to this node (`host-000`) on the provider network.
fn add_local_vm(node: &common::BenchNode, mac: &str, ip: &str) -> Result<()> {
    let addr = format!("{mac} {ip}");
    node.nb.transact(&[
        json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "vm",
            "row": {"name": "vm-held", "type": "", "addresses": addr, "up": true, "enabled": true,
                "options": ["map", [["requested-chassis", "host-000"]]],
                "external_ids": ["map", [["neutron:host_id", "host-000"],
                    ["neutron:network_name", node.topo.provider_switch()],
                    ["neutron:device_owner", "compute:nova"], ["neutron:cidrs", format!("{ip}/12")]]]}}),
        json!({"op": "mutate", "table": "Logical_Switch",
            "where": [["name", "==", node.topo.provider_switch()]],
            "mutations": [["ports", "insert", ["set", [["named-uuid", "vm"]]]]]}),
    ])?;
    Ok(())
}

fn on_bgp_nic(node: &common::BenchNode, ip: &str) -> Result<bool> {
    let text = node.ns.ip(&["-o", "addr", "show", "dev", "bgp-nic"])?;
    Ok(text.contains(&format!(" {ip}/")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ip_is_announced_only_once_the_local_nb_holds_its_binding() -> Result<()> {
    let OvnNode {
        node,
        mut local,
        mut config,
        opts,
    } = ovn_node("ovh").await?;
    let port = obgp_testbed::ovsdb::free_port()?;
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse()?;
    config.default.metrics_listen = Some(addr);
    let shutdown = CancellationToken::new();
    let agent = tokio::spawn(run(config, opts, shutdown.clone()));
    until("the local cluster's rows", || {
        Ok(!rows(&local, "Static_MAC_Binding")?.is_empty())
    })
    .await?;

    // The local NB goes away; a VM bound here appears.
    local.kill();
    let vm = "172.31.99.1";
    add_local_vm(&node, "fa:16:3e:99:99:01", vm)?;
    // The daemon wants it (its desired state names it) but holds its
    // announcement back: the binding that routes it cannot be written.
    let t = Instant::now();
    loop {
        let (code, body) = common::http_get(addr, "/status", Duration::from_secs(15)).await?;
        let s: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let wanted = s["exposed"]
            .as_array()
            .is_some_and(|e| e.iter().any(|x| x["prefix"] == format!("{vm}/32")));
        if code == 200 && wanted {
            break;
        }
        ensure!(
            t.elapsed() < WAIT,
            "{vm} not in /status within {WAIT:?}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Retries come 1 s, 2 s... apart: a few of them, still held.
    tokio::time::sleep(Duration::from_secs(4)).await;
    ensure!(
        !on_bgp_nic(&node, vm)?,
        "{vm} announced without its binding"
    );

    // The local NB is back: the binding is written, then the IP announced.
    local.restart()?;
    until("the binding and the announcement", || {
        let bound = rows(&local, "Static_MAC_Binding")?
            .values()
            .any(|b| b["ip"] == vm);
        Ok(bound && on_bgp_nic(&node, vm)?)
    })
    .await?;
    shutdown.cancel();
    agent.await??;
    Ok(())
}
