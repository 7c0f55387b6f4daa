//! The EVPN bench: the real `ovn-bgp-agent` in the node namespace of an
//! [`EvpnFabric`] (the node's FRR and a fabric VTEP's FRR, an iBGP `l2vpn
//! evpn` session over a veth underlay), with real OVN_Northbound,
//! OVN_Southbound (when the topology has rows for it) and Open_vSwitch
//! ovsdb-servers and an ovs-vswitchd (userspace datapath) owning the
//! provider bridge in that namespace. VM tier only: the agent builds vrf
//! and vxlan devices.
//!
//! ```text
//!  host: OVN_Northbound, [OVN_Southbound,] Open_vSwitch ovsdb-servers (unix sockets)
//!  node netns: ovs-vswitchd (br-ex, br-int), FRR node, ovn-bgp-agent
//!              ── veth underlay ── peer netns: FRR fabric VTEP
//!  VM netns(es): eth0 <-> a veth whose node end the test adds to br-ex
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use obgp_testbed::evpn::{EvpnFabric, EvpnFabricOptions, NODE_VTEP, VXLAN_PORT};
use obgp_testbed::ovsdb::{run, OvsdbServer};
use serde_json::{json, Map, Value};

mod nb;

pub use nb::{provider_nets_rows, Bgpvpn, ProviderNet, VmPort, BGPVPN_KEYS};

use crate::{agent_binary, fresh_rt_tables, load, start_sb, write_connections, Agent, Vswitchd};

/// A running EVPN bench. Dropping it stops the agent daemon, vswitchd, both
/// FRRs (and deletes the namespaces), then the databases.
pub struct EvpnBench {
    // drop order: the agent, vswitchd, the fabric, the databases
    /// The agent (its config files, its daemon).
    pub agent: Agent,
    vswitchd: Option<Vswitchd>,
    /// The node's and the fabric VTEP's FRR, the namespaces, the hosts.
    pub fabric: EvpnFabric,
    /// OVN_Northbound.
    pub nb: OvsdbServer,
    /// OVN_Southbound, when the topology has an `OVN_Southbound` member;
    /// the Open_vSwitch row's `external_ids:ovn-remote` names it, as
    /// ovn-controller's node has it.
    pub sb: Option<OvsdbServer>,
    /// The node's local Open_vSwitch database.
    pub ovs: OvsdbServer,
    dir: PathBuf,
    ovs_run: PathBuf,
    /// The OVS bridges of the topology's Open_vSwitch rows.
    bridges: Vec<String>,
}

impl EvpnBench {
    /// [`EvpnBench::start`] below a new directory of /tmp named
    /// `prefix...`, returned with the bench (it must outlive it).
    pub fn start_in_tmp(
        prefix: &str,
        topology: &Value,
        fabric: &EvpnFabricOptions,
        config: &str,
    ) -> Result<(tempfile::TempDir, EvpnBench)> {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir_in("/tmp")?;
        let bench = EvpnBench::start(dir.path(), topology, fabric, config)?;
        Ok((dir, bench))
    }

    /// Starts everything below `dir`: the fabric (session Established),
    /// the databases with `topology`'s `OVN_Northbound` and `Open_vSwitch`
    /// rows (and an OVN_Southbound server with its `OVN_Southbound` rows,
    /// when it has that member), vswitchd in the node namespace (waiting
    /// for br-ex). The agent's config is `config` (written to
    /// `bgp-agent.conf`) followed by the bench's connections file (which
    /// names OVN_Northbound; an SB driver ignores it and finds
    /// OVN_Southbound through `ovn-remote`). The agent is not started.
    pub fn start(
        dir: &Path,
        topology: &Value,
        fabric: &EvpnFabricOptions,
        config: &str,
    ) -> Result<EvpnBench> {
        std::fs::create_dir_all(dir)?;
        let binary = agent_binary()?;
        let nb = OvsdbServer::start("ovn-nb.ovsschema").context("OVN_Northbound ovsdb-server")?;
        load(&nb, topology, "OVN_Northbound")?;
        let ovs = OvsdbServer::start("vswitch.ovsschema").context("Open_vSwitch ovsdb-server")?;
        load(&ovs, topology, "Open_vSwitch")?;
        let sb = start_sb(topology, &ovs)?;
        let fabric = EvpnFabric::start(&dir.join("fabric"), fabric).context("the EVPN fabric")?;
        let ovs_run = dir.join("ovs-run");
        std::fs::create_dir_all(&ovs_run)?;
        let vswitchd = Vswitchd::start(fabric.node_netns(), &ovs, &ovs_run)?;
        let bridges = bridge_names(topology);
        wait_for_links(fabric.node_netns(), &bridges)?;
        println!(
            "evpn-bench: OVN_Northbound {} and Open_vSwitch {} ovsdb-servers on the host; ovs-vswitchd (netdev datapath, run dir {}) in netns {}",
            nb.unix_remote(),
            ovs.unix_remote(),
            ovs_run.display(),
            fabric.node_netns()
        );
        fresh_rt_tables(dir)?;
        let main_conf = dir.join("bgp-agent.conf");
        std::fs::write(&main_conf, config)?;
        let conn = write_connections(dir, &ovs, &nb.unix_remote(), "")?;
        let agent = Agent::new(
            fabric.node_netns(),
            binary,
            ovs_run.clone(),
            vec![main_conf, conn],
            dir.to_path_buf(),
            fabric.node.vty_dir().to_path_buf(),
        );
        Ok(EvpnBench {
            agent,
            vswitchd: Some(vswitchd),
            fabric,
            nb,
            sb,
            ovs,
            dir: dir.to_path_buf(),
            ovs_run,
            bridges,
        })
    }

    /// The bench's directory (configs, rt_tables, agent.log).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `ovs-vsctl ARGS` on the bench's Open_vSwitch database (waits for
    /// vswitchd to apply it, as ovs-vsctl does), printed.
    pub fn ovs_vsctl(&self, args: &[&str]) -> Result<String> {
        println!("evpn-bench: ovs-vsctl {}", args.join(" "));
        self.ovs_vsctl_quiet(args)
    }

    fn ovs_vsctl_quiet(&self, args: &[&str]) -> Result<String> {
        run(Command::new("ovs-vsctl")
            .arg(format!("--db={}", self.ovs.unix_remote()))
            .args(["--timeout", "60"])
            .args(args))
    }

    /// The ports of OVS bridge `bridge`.
    pub fn ovs_ports(&self, bridge: &str) -> Result<Vec<String>> {
        Ok(self
            .ovs_vsctl_quiet(&["list-ports", bridge])?
            .lines()
            .map(str::to_string)
            .collect())
    }

    /// `ovs-ofctl dump-flows --no-stats BRIDGE cookie=C/-1`.
    pub fn flows(&self, bridge: &str, cookie: u32) -> Result<String> {
        run(Command::new("ovs-ofctl")
            .env("OVS_RUNDIR", &self.ovs_run)
            .args(["dump-flows", "--no-stats", bridge])
            .arg(format!("cookie={cookie}/-1")))
    }

    /// Every flow of `bridge` (`ovs-ofctl dump-flows`, with counters).
    pub fn flows_all(&self, bridge: &str) -> Result<String> {
        run(Command::new("ovs-ofctl")
            .env("OVS_RUNDIR", &self.ovs_run)
            .args(["dump-flows", bridge]))
    }

    /// `ip -n NODE -j ARGS`, parsed.
    pub fn node_json(&self, args: &[&str]) -> Result<Vec<Value>> {
        let mut all = vec!["-n", self.fabric.node_netns(), "-j"];
        all.extend_from_slice(args);
        let text = crate::ip(&all)?;
        if text.trim().is_empty() {
            return Ok(Vec::new());
        }
        serde_json::from_str(&text).with_context(|| format!("ip {args:?}: {text}"))
    }

    /// The names of the node namespace's links.
    pub fn node_links(&self) -> Result<Vec<String>> {
        Ok(self
            .node_json(&["link", "show"])?
            .iter()
            .filter_map(|l| l["ifname"].as_str().map(str::to_string))
            .collect())
    }

    /// What the agent did and would do, for a failure: its log, its `plan`
    /// against the node as it is now, the node's FRR running-config, the
    /// flows of the OVS bridges and what both VTEPs know about the path.
    pub fn evidence(&self) -> String {
        let plan = self
            .agent
            .plan()
            .unwrap_or_else(|e| format!("(plan failed: {e:#})"));
        let frr = self
            .fabric
            .node
            .vtysh("show running-config")
            .unwrap_or_else(|e| format!("(vtysh failed: {e:#})"));
        let flows: String = self
            .bridges
            .iter()
            .map(|b| {
                let f = self
                    .flows_all(b)
                    .unwrap_or_else(|e| format!("(ovs-ofctl failed: {e:#})"));
                format!("{b}:\n{f}")
            })
            .collect();
        let path = if self.fabric.is_l2() {
            self.fabric.l2_path_evidence()
        } else {
            self.fabric.path_evidence()
        };
        format!(
            "--- agent log ({}) ---\n{}\n--- ovn-bgp-agent plan now ---\n{plan}\n--- node FRR running-config ---\n{frr}\n--- the OVS bridges' flows ---\n{flows}\n--- the path ---\n{path}",
            self.dir.join("agent.log").display(),
            self.agent.log(),
        )
    }

    /// The `_uuid` of the row of NB `table` whose `name` is `name`.
    pub fn nb_uuid(&self, table: &str, name: &str) -> Result<String> {
        let r = self.nb.transact(&[json!({
            "op": "select", "table": table,
            "where": [["name", "==", name]], "columns": ["_uuid"],
        })])?;
        r[0]["rows"][0]["_uuid"][1]
            .as_str()
            .map(str::to_string)
            .with_context(|| format!("no {table} row named {name}: {r:?}"))
    }

    /// Deletes the keys `keys` from the `external_ids` of the NB `table` row
    /// named `name` (one transaction), printed.
    pub fn nb_delete_external_ids(&self, table: &str, name: &str, keys: &[&str]) -> Result<()> {
        delete_external_ids(&self.nb, table, ("name", name), keys)
    }

    /// Deletes the keys `keys` from the `external_ids` of the SB `table`
    /// row whose `column` is `value` (one transaction), printed.
    pub fn sb_delete_external_ids(
        &self,
        table: &str,
        (column, value): (&str, &str),
        keys: &[&str],
    ) -> Result<()> {
        let sb = self
            .sb
            .as_ref()
            .context("the bench has no OVN_Southbound (the topology had no rows for it)")?;
        delete_external_ids(sb, table, (column, value), keys)
    }
}

/// The `name`s of the topology's Open_vSwitch `Bridge` rows.
fn bridge_names(topology: &Value) -> Vec<String> {
    topology["Open_vSwitch"]["Bridge"]
        .as_object()
        .into_iter()
        .flat_map(|rows| rows.values())
        .filter_map(|row| row["name"].as_str().map(str::to_string))
        .collect()
}

/// Waits until vswitchd made every one of `names` a link in `netns` (it
/// makes br-ex first; the agent wires each mapped bridge).
fn wait_for_links(netns: &str, names: &[String]) -> Result<()> {
    crate::wait_for(
        &format!("ovs-vswitchd's bridges {names:?} in netns {netns}"),
        std::time::Duration::from_secs(60),
        || {
            let links = crate::ip(&["-n", netns, "-br", "link", "show"])?;
            let have: Vec<&str> = links
                .lines()
                .filter_map(|l| l.split_whitespace().next())
                .map(|name| name.split('@').next().unwrap_or(name))
                .collect();
            Ok(names
                .iter()
                .all(|n| have.contains(&n.as_str()))
                .then_some(()))
        },
    )
}

fn delete_external_ids(
    db: &OvsdbServer,
    table: &str,
    (column, value): (&str, &str),
    keys: &[&str],
) -> Result<()> {
    println!(
        "evpn-bench: {} {table} {column}={value}: external_ids delete {}",
        db.db_name(),
        keys.join(", ")
    );
    let r = db.transact(&[json!({
        "op": "mutate", "table": table, "where": [[column, "==", value]],
        "mutations": [["external_ids", "delete", ["set", keys]]],
    })])?;
    // a where clause that matched nothing is no error to ovsdb-server
    if r[0]["count"].as_u64() != Some(1) {
        bail!(
            "{} {table}: no single row with {column}={value}: {r:?}",
            db.db_name()
        );
    }
    Ok(())
}

impl Drop for EvpnBench {
    fn drop(&mut self) {
        let _ = self.agent.stop_daemon();
        self.vswitchd.take();
    }
}

/// The agent's configuration for the NB driver exposing through EVPN with
/// `exposing_method = method` (`vrf`, `l2vni`) on the fabric's node: AS
/// `asn`, router id and VTEP [`NODE_VTEP`], VXLAN port [`VXLAN_PORT`];
/// the periodic reconcile far off (300 s) so that what a test sees comes
/// from the OVSDB events.
pub fn nb_evpn_config(method: &str, asn: u32) -> String {
    format!(
        "# the NB driver exposing through EVPN (obgp_e2e::evpn::nb_evpn_config)
[DEFAULT]
driver = nb_ovn_bgp_driver
exposing_method = {method}
bgp_AS = {asn}
bgp_router_id = {NODE_VTEP}
evpn_local_ip = {NODE_VTEP}
evpn_udp_dstport = {VXLAN_PORT}
expose_tenant_networks = false
reconcile_interval = 300
frr_reconcile_interval = 15
ovsdb_connection_timeout = 30
"
    )
}

/// The localnet port of the EVPN tests' provider network (its
/// `network_name` is `physnet1`); [`node_ovs_rows`] has the patch pair
/// ovn-controller makes for it.
pub const LOCALNET: &str = "provnet-22222222-2222-4222-8222-222222222222";

/// An OVSDB map value, `["map", [[key, value], ..]]`.
pub fn ovsdb_map(pairs: &[(&str, &str)]) -> Value {
    json!([
        "map",
        pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()
    ])
}

/// A provider bridge of the node ([`node_ovs_rows_with`]): the mapping
/// `physnet:bridge` and the patch pair ovn-controller makes to br-int for
/// the localnet port `localnet`.
#[derive(Clone, Copy, Debug)]
pub struct ProviderBridge<'a> {
    pub physnet: &'a str,
    pub bridge: &'a str,
    pub localnet: &'a str,
}

/// The EVPN tests' one provider bridge: `physnet1` on `br-ex`, localnet
/// [`LOCALNET`].
pub const BR_EX: ProviderBridge<'static> = ProviderBridge {
    physnet: "physnet1",
    bridge: "br-ex",
    localnet: LOCALNET,
};

/// The node's Open_vSwitch rows with the one provider bridge [`BR_EX`]
/// ([`node_ovs_rows_with`]).
pub fn node_ovs_rows(system_id: &str, encap_ip: &str) -> Value {
    node_ovs_rows_with(system_id, encap_ip, &[BR_EX])
}

/// The node's Open_vSwitch rows: `system-id` and `hostname` = `system_id`,
/// `ovn-encap-ip` = `encap_ip`, `ovn-bridge-mappings` naming each of
/// `bridges`; each of them and br-int on the netdev datapath with the
/// patch pair ovn-controller would make for its localnet port.
pub fn node_ovs_rows_with(system_id: &str, encap_ip: &str, bridges: &[ProviderBridge]) -> Value {
    let map = ovsdb_map;
    // row uuids: the table's letter and the row's index
    let uuid = |table: u8, n: usize| format!("00000000-0000-4000-8000-{table:02x}{n:010x}");
    let (mut bridge_rows, mut port_rows, mut iface_rows) = (Map::new(), Map::new(), Map::new());
    let mut port = |ports: &mut Vec<Value>, name: &str, iface: Value| {
        let n = port_rows.len();
        port_rows.insert(
            uuid(0xf0, n),
            json!({"name": name, "interfaces": ["uuid", uuid(0xf1, n)]}),
        );
        let mut iface = iface;
        iface["name"] = json!(name);
        iface_rows.insert(uuid(0xf1, n), iface);
        ports.push(json!(["uuid", uuid(0xf0, n)]));
    };
    let mut int_ports = Vec::new();
    port(&mut int_ports, "br-int", json!({"type": "internal"}));
    for b in bridges {
        let patch_ex = format!("patch-{}-to-br-int", b.localnet);
        let patch_int = format!("patch-br-int-to-{}", b.localnet);
        let mut ports = Vec::new();
        port(&mut ports, b.bridge, json!({"type": "internal"}));
        let patch = |peer: &str| json!({"type": "patch", "options": map(&[("peer", peer)])});
        port(&mut ports, &patch_ex, patch(&patch_int));
        port(&mut int_ports, &patch_int, patch(&patch_ex));
        bridge_rows.insert(
            uuid(0xe0, bridge_rows.len() + 1),
            json!({"name": b.bridge, "datapath_type": "netdev", "ports": ["set", ports]}),
        );
    }
    bridge_rows.insert(
        uuid(0xe0, 0),
        json!({"name": "br-int", "datapath_type": "netdev", "ports": ["set", int_ports]}),
    );
    let mappings = bridges
        .iter()
        .map(|b| format!("{}:{}", b.physnet, b.bridge))
        .collect::<Vec<_>>()
        .join(",");
    let bridge_refs: Vec<Value> = bridge_rows.keys().map(|u| json!(["uuid", u])).collect();
    json!({
        "Open_vSwitch": {
            "00000000-0000-4000-8000-0000000000e0": {
                "bridges": ["set", bridge_refs],
                "external_ids": map(&[
                    ("hostname", system_id),
                    ("system-id", system_id),
                    ("ovn-bridge-mappings", &mappings),
                    ("ovn-encap-ip", encap_ip),
                    ("ovn-encap-type", "geneve"),
                ]),
            },
        },
        "Bridge": bridge_rows,
        "Port": port_rows,
        "Interface": iface_rows,
    })
}
