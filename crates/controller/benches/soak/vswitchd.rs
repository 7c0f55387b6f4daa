//! A real ovs-vswitchd for the soak's node (netdev datapath: the CI kernel
//! has no openvswitch module), so the agent's flows on `br-ex` are applied
//! and the end check reads them back with `ovs-ofctl dump-flows`.
//!
//! The bench node's OVS rows get what a node's OVS has and the rows
//! `common::start_node` writes lack: `br-ex` and `br-int` with their own
//! internal ports, and the localnet patch port paired with its peer on
//! `br-int` (a patch port without a peer gets no OpenFlow port number).
//! `br-ex` becomes ovs-vswitchd's tap in the node namespace, replacing the
//! Linux bridge of that name, with the same MAC.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use obgp_testbed::netns::Netns;
use obgp_testbed::ovsdb::OvsdbServer;
use serde_json::{json, Value};

/// The MAC `common` gives `br-ex`.
const BR_EX_MAC: &str = "02:00:00:00:0e:01";

/// ovs-vswitchd in the node namespace (stopped on drop), with the bridges
/// of a node.
pub struct Vswitchd {
    daemon: obgp_testbed::vswitchd::Vswitchd,
}

/// The rows of `table` named `name`: its uuid.
fn uuid_of(ovs: &OvsdbServer, table: &str, name: &str) -> Result<Value> {
    ovs.select_all(table)?
        .iter()
        .find(|r| r["name"] == name)
        .map(|r| r["_uuid"].clone())
        .with_context(|| format!("no {table} row named {name}"))
}

impl Vswitchd {
    /// Starts ovs-vswitchd for `ovs` in `ns`, with the agent's OVS run
    /// directory `run_dir`, once `ovs-vswitchd` is installed (`None`
    /// otherwise: the soak then lists the flows as not checked).
    pub fn start(ns: &Netns, ovs: &OvsdbServer, run_dir: &Path) -> Result<Option<Vswitchd>> {
        if Command::new("ovs-vswitchd")
            .arg("--version")
            .output()
            .is_err()
        {
            return Ok(None);
        }
        let patch = ovs
            .select_all("Interface")?
            .iter()
            .find_map(|r| {
                r["name"]
                    .as_str()
                    .filter(|n| n.starts_with("patch-"))
                    .map(String::from)
            })
            .context("the localnet patch port")?;
        let peer = "patch-br-int-to-localnet";
        let patch_uuid = uuid_of(ovs, "Interface", &patch)?;
        let br_ex = uuid_of(ovs, "Bridge", "br-ex")?;
        ovs.transact(&[
            json!({"op": "update", "table": "Interface", "where": [["_uuid", "==", patch_uuid]],
                "row": {"options": ["map", [["peer", peer]]]}}),
            json!({"op": "insert", "table": "Interface", "uuid-name": "exif",
                "row": {"name": "br-ex", "type": "internal"}}),
            json!({"op": "insert", "table": "Port", "uuid-name": "export",
                "row": {"name": "br-ex", "interfaces": ["named-uuid", "exif"]}}),
            json!({"op": "update", "table": "Bridge", "where": [["_uuid", "==", br_ex]],
                "row": {"datapath_type": "netdev",
                    "other_config": ["map", [["hwaddr", BR_EX_MAC]]]}}),
            json!({"op": "mutate", "table": "Bridge", "where": [["_uuid", "==", br_ex]],
                "mutations": [["ports", "insert", ["set", [["named-uuid", "export"]]]]]}),
            json!({"op": "insert", "table": "Interface", "uuid-name": "peerif",
                "row": {"name": peer, "type": "patch", "options": ["map", [["peer", patch]]]}}),
            json!({"op": "insert", "table": "Port", "uuid-name": "peerport",
                "row": {"name": peer, "interfaces": ["named-uuid", "peerif"]}}),
            json!({"op": "insert", "table": "Interface", "uuid-name": "intif",
                "row": {"name": "br-int", "type": "internal"}}),
            json!({"op": "insert", "table": "Port", "uuid-name": "intport",
                "row": {"name": "br-int", "interfaces": ["named-uuid", "intif"]}}),
            json!({"op": "insert", "table": "Bridge", "uuid-name": "brint",
                "row": {"name": "br-int", "datapath_type": "netdev",
                    "ports": ["set", [["named-uuid", "peerport"], ["named-uuid", "intport"]]]}}),
            json!({"op": "mutate", "table": "Open_vSwitch", "where": [],
                "mutations": [["bridges", "insert", ["set", [["named-uuid", "brint"]]]]]}),
        ])
        .context("the OVS rows of a node's br-ex and br-int")?;
        // ovs-vswitchd makes br-ex its own tap.
        ns.ip(&["link", "del", "br-ex"])?;
        let v = Vswitchd {
            daemon: obgp_testbed::vswitchd::Vswitchd::start(ns.name(), ovs, run_dir)?,
        };
        ns.ip(&["link", "set", "br-ex", "address", BR_EX_MAC, "up"])?;
        Ok(Some(v))
    }

    /// The flows of `bridge` with `cookie`, as `ovs-ofctl dump-flows`
    /// prints them (one line each, the statistics fields dropped).
    pub fn flows(&self, bridge: &str, cookie: u64) -> Result<Vec<String>> {
        let out = Command::new("ovs-ofctl")
            .env("OVS_RUNDIR", self.daemon.run_dir())
            .args(["dump-flows", bridge, &format!("cookie={cookie}/-1")])
            .output()
            .context("ovs-ofctl dump-flows")?;
        if !out.status.success() {
            bail!(
                "ovs-ofctl dump-flows {bridge}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains("cookie="))
            .map(|l| {
                l.split(", ")
                    .filter(|f| {
                        ![
                            "duration=",
                            "n_packets=",
                            "n_bytes=",
                            "idle_age=",
                            "hard_age=",
                        ]
                        .iter()
                        .any(|s| f.trim().starts_with(s))
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
                    .trim()
                    .to_string()
            })
            .collect())
    }

    /// Adds a flow to `bridge` (`ovs-ofctl add-flow`), as a foreign hand
    /// would.
    pub fn add_flow(&self, bridge: &str, flow: &str) -> Result<()> {
        let out = Command::new("ovs-ofctl")
            .env("OVS_RUNDIR", self.daemon.run_dir())
            .args(["add-flow", bridge, flow])
            .output()
            .context("ovs-ofctl add-flow")?;
        if !out.status.success() {
            bail!(
                "ovs-ofctl add-flow {bridge} {flow}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }
}
