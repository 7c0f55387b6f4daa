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

/// The demo topology with br-fab in the node's OVS and the local
/// cluster's bridge mappings.
fn topology(bgp_mappings: &str) -> Result<Value> {
    let mut t = obgp_e2e::demo_topology()?;
    let ovs = t["Open_vSwitch"]
        .as_object_mut()
        .context("Open_vSwitch rows")?;
    let mut ports = Vec::new();
    for (i, name) in ["br-fab", "eth-fab", "patch-fabric1-localnet-to-br-int"]
        .iter()
        .enumerate()
    {
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
    for t in obgp_localnb::Table::ALL {
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
    let dir = tempfile::Builder::new()
        .prefix("obgp-e2e-ovnmode-")
        .tempdir_in("/tmp")?;
    let mut b = Bench::start(
        dir.path(),
        &topology("fabric1:br-fab,local:br-ex")?,
        &BenchOptions::default(),
    )?;
    let local = OvsdbServer::start("ovn-nb.ovsschema").context("local NB")?;
    let local_sb = OvsdbServer::start("ovn-sb.ovsschema").context("local SB")?;
    let northd = Northd::start(&local, &local_sb)?;
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
    let conf = dir.path().join("ovn-mode.conf");
    std::fs::write(
        &conf,
        format!(
            "[DEFAULT]\nexposing_method = ovn\n\
             [local_ovn_cluster]\novn_nb_connection = {}\npeer_ips = 100.64.1.10\n\
             provider_networks_pool_prefixes = 172.24.4.0/24,2001:db8::/64\n\
             external_nics = eth-fab\nbgp_chassis_id = bgp\n",
            local.unix_remote()
        ),
    )?;
    b.agent.config_files.push(conf);
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
        Ok((rows(&local, "Static_MAC_Binding")?.len() >= 4).then_some(()))
    })?;
    let router = rows(&local, "Logical_Router")?;
    let router = named(&router, "bgp-router").context("bgp-router")?;
    ensure!(map_has(router, "external_ids", "ovn-bgp-agent", "managed"));
    let lrps = rows(&local, "Logical_Router_Port")?;
    let fabric = named(&lrps, "bgp-router-fabric1").context("bgp-router-fabric1")?;
    ensure!(
        fabric["mac"] == fab_mac.as_str() && fabric["networks"] == "100.64.1.9/30",
        "{fabric}"
    );
    let announced: BTreeSet<String> = b.bgp_nic_addrs()?.into_iter().collect();
    for smb in rows(&local, "Static_MAC_Binding")? {
        let ip = smb["ip"].as_str().context("ip")?;
        ensure!(
            announced.iter().any(|a| a.starts_with(&format!("{ip}/"))),
            "binding {ip} not announced: {announced:?}"
        );
    }
    let switches = rows(&local, "Logical_Switch")?;
    ensure!(named(&switches, "ops-net").is_some_and(|s| !map_has(
        s,
        "external_ids",
        "ovn-bgp-agent",
        "managed"
    )));
    step(t0, "local NB rows marked, fabric port from the kernel");

    // northd compiles them.
    obgp_e2e::wait_for("bgp-router's logical flows", LEARN, || {
        let dps = rows(&local_sb, "Datapath_Binding")?;
        let Some(dp) = dps
            .iter()
            .find(|d| map_has(d, "external_ids", "name", "bgp-router"))
        else {
            return Ok(None);
        };
        let uuid = dp["_uuid"][1].clone();
        let n = rows(&local_sb, "Logical_Flow")?
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
    let before = uuids(&local)?;
    let once = b.agent_ok(&["reconcile", "--once"])?;
    let plan = b.plan()?;
    ensure!(
        plan.contains("nothing to do: the node matches OVN")
            && plan.contains("nothing to do: the local NB holds the desired rows"),
        "after reconcile --once ({once}):\n{plan}"
    );
    ensure!(uuids(&local)? == before, "the local NB's uuids changed");
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
        let switches = rows(&local, "Logical_Switch")?;
        let lrps = rows(&local, "Logical_Router_Port")?;
        Ok((named(&switches, "fabric1").is_none()
            && named(&lrps, "bgp-router-fabric1").is_none()
            && !b.flows("br-fab", 999)?.contains("cookie="))
        .then_some(()))
    })
    .with_context(|| b.agent_log())?;
    let switches = rows(&local, "Logical_Switch")?;
    ensure!(named(&switches, "ops-net").is_some() && named(&switches, "local").is_some());
    let peer = b.peer_prefixes()?;
    ensure!(
        ANNOUNCED.iter().all(|p| peer.iter().any(|h| h == p)),
        "announcements kept: {peer:?}"
    );
    step(t0, "segment fabric1 removed: its rows gone, the rest kept");
    Ok(())
}
