//! `plan --ovn FILE` with `exposing_method = ovn`: the node ops (the
//! announcements on `bgp_nic` without kernel wiring, the cookie-999 flows)
//! and the node-local NB transaction, from the golden scenario
//! `fixtures/ovn-local/basic.json`, in text and JSON, against an empty
//! local NB and against the rows that transaction leaves.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Map, Value};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("plan-ovn-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The scenario's `config` as a bgp-agent.conf.
fn config_file(dir: &Path, scenario: &Value) -> PathBuf {
    let c = &scenario["config"];
    let list = |k: &str| {
        c[k].as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect::<Vec<_>>()
            .join(",")
    };
    let text = format!(
        "[DEFAULT]\ndriver = nb_ovn_bgp_driver\nexposing_method = ovn\nbgp_router_id = 192.0.2.1\n\
         [local_ovn_cluster]\npeer_ips = {}\nexternal_nics = {}\nprovider_networks_pool_prefixes = {}\nbgp_chassis_id = {}\n",
        list("peer_ips"),
        list("external_nics"),
        list("provider_networks_pool_prefixes"),
        c["bgp_chassis_id"].as_str().unwrap()
    );
    let p = dir.join("bgp-agent.conf");
    std::fs::write(&p, text).unwrap();
    p
}

fn agent(args: &[&str]) -> Output {
    let home = scratch("home");
    Command::new(env!("CARGO_BIN_EXE_ovn-bgp-agent"))
        .args(args)
        .env_clear()
        .env("HOME", &home)
        .output()
        .expect("running ovn-bgp-agent")
}

fn ok_stdout(o: &Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The rows the local-NB transaction creates, in wire notation by table
/// and uuid: each insert's row, its named-uuid references resolved to
/// invented uuids (what ovsdb-server would give them).
fn rows_after(transact: &Value) -> Value {
    let ops = &transact.as_array().unwrap()[1..];
    let uuid_of = |i: usize| format!("00000000-0000-4000-8000-{i:012}");
    let mut names = Map::new();
    for (i, op) in ops.iter().enumerate() {
        if let Some(n) = op["uuid-name"].as_str() {
            names.insert(n.to_string(), json!(uuid_of(i)));
        }
    }
    fn resolve(v: &Value, names: &Map<String, Value>) -> Value {
        match v {
            Value::Array(a) if a.len() == 2 && a[0] == "named-uuid" => {
                json!(["uuid", names[a[1].as_str().unwrap()]])
            }
            Value::Array(a) => Value::Array(a.iter().map(|x| resolve(x, names)).collect()),
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, x)| (k.clone(), resolve(x, names)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    let mut tables = Map::new();
    for (i, op) in ops.iter().enumerate() {
        assert_eq!(
            op["op"], "insert",
            "an empty local NB gets inserts only: {op}"
        );
        let table = tables
            .entry(op["table"].as_str().unwrap())
            .or_insert_with(|| json!({}));
        table[uuid_of(i)] = resolve(&op["row"], &names);
    }
    Value::Object(tables)
}

#[test]
fn plan_of_the_ovn_mode_prints_node_ops_and_the_local_nb_transaction() {
    let fixture = root().join("fixtures/ovn-local/basic.json");
    let scenario: Value =
        serde_json::from_str(&std::fs::read_to_string(&fixture).unwrap()).unwrap();
    let dir = scratch("basic");
    let conf = config_file(&dir, &scenario);
    // The node: the scenario's OVS bridges with their ports, no flow yet.
    let node = dir.join("node.json");
    let ports = |br: &str| -> Value {
        let bridges = &scenario["ovn"]["Open_vSwitch"]["Bridge"];
        let ports = &scenario["ovn"]["Open_vSwitch"]["Port"];
        let row = bridges
            .as_object()
            .unwrap()
            .values()
            .find(|b| b["name"] == br)
            .unwrap();
        let refs = match row["ports"][0].as_str().unwrap() {
            "uuid" => vec![row["ports"].clone()],
            _ => row["ports"][1].as_array().unwrap().clone(),
        };
        let names: Map<String, Value> = refs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let name = ports[r[1].as_str().unwrap()]["name"].clone();
                (name.as_str().unwrap().to_string(), json!(i + 1))
            })
            .collect();
        Value::Object(names)
    };
    let bridges: Map<String, Value> = ["br-osp", "br-ex", "br-ex-2"]
        .iter()
        .map(|b| (b.to_string(), json!({ "ports": ports(b) })))
        .collect();
    let flows: Map<String, Value> = bridges.keys().map(|b| (b.clone(), json!([]))).collect();
    // The external bridges' links with the scenario's MACs (the ingress
    // flows' mod_dl_dst).
    let links: Vec<Value> = scenario["facts"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(b, f)| {
            json!({"name": b, "type": "openvswitch", "mac": f["mac"], "state": "up",
                   "master": null, "link": null, "vlan_id": null, "vrf_table": null})
        })
        .collect();
    std::fs::write(
        &node,
        json!({"links": links, "ovs": {"bridges": bridges, "flows": flows, "fdb": []}}).to_string(),
    )
    .unwrap();
    let args = vec![
        "--config-file",
        conf.to_str().unwrap(),
        "plan",
        "--ovn",
        fixture.to_str().unwrap(),
        "--node-state",
        node.to_str().unwrap(),
    ];

    let text = ok_stdout(&agent(&args));
    // The announcements, on bgp_nic as the underlay driver has them, and
    // no kernel wiring of the provider bridge.
    for ip in scenario["expected"]["announced"].as_array().unwrap() {
        let ip = ip.as_str().unwrap();
        assert!(
            text.contains(&format!("{ip}/32 dev bgp-nic")),
            "{ip}:\n{text}"
        );
    }
    assert!(
        !text.contains("rule"),
        "no kernel rule in this mode:\n{text}"
    );
    assert!(!text.contains("table br-osp"), "no bridge table:\n{text}");
    // The cookie-999 flows of the golden file, planned.
    let flows = text
        .lines()
        .filter(|l| l.starts_with("  + flow ") && l.contains("cookie=999"))
        .count();
    assert_eq!(
        flows,
        scenario["expected"]["flows"].as_array().unwrap().len(),
        "{text}"
    );
    // Ingress to the router port's MAC (the bridge's), egress to the
    // router's internal MAC.
    assert!(
        text.contains("+ flow br-ex cookie=999,priority=1000,ip,in_port=1,nw_dst=172.16.0.0/16,actions=mod_dl_dst:52:54:00:30:93:ea,output:3"),
        "{text}"
    );
    assert!(
        text.contains("+ flow br-osp cookie=999,priority=1000,ip,in_port=1,actions=mod_dl_dst:40:44:00:00:00:06,NORMAL"),
        "{text}"
    );
    // The local-NB section, headed, saying what it was planned against.
    let (_, nb) = text
        .split_once("node-local OVN NB transaction (planned offline against an EMPTY local NB")
        .unwrap_or_else(|| panic!("no local-NB section:\n{text}"));
    let inserts = nb.lines().filter(|l| l.starts_with("  insert ")).count();
    assert_eq!(
        inserts,
        scenario["expected"]["local_nb"].as_array().unwrap().len(),
        "one insert per desired row:\n{nb}"
    );
    assert!(
        nb.contains("  insert Logical_Router bgp-router as "),
        "{nb}"
    );
    // The bridges' pinned MACs, in the node plan (the node state has
    // none of them).
    for e in scenario["expected"]["fdb"].as_array().unwrap() {
        let [_, bridge, port, vlan, mac] = e.as_str().unwrap().split(' ').collect::<Vec<_>>()[..]
        else {
            panic!("{e}")
        };
        assert!(
            text.contains(&format!("+ fdb {bridge} {port} vlan {vlan} {mac}")),
            "{e}:\n{text}"
        );
    }

    // JSON: the node plan's members plus local_nb.
    let mut jargs = args.clone();
    jargs.extend(["--format", "json"]);
    let j: Value = serde_json::from_str(&ok_stdout(&agent(&jargs))).unwrap();
    assert!(j["steps"].as_array().is_some_and(|s| !s.is_empty()), "{j}");
    let local = &j["local_nb"];
    assert_eq!(local["transact"][0], "OVN_Northbound");
    assert_eq!(
        local["transact"].as_array().unwrap().len() - 1,
        local["lines"].as_array().unwrap().len()
    );
    assert_eq!(local["problems"], json!([]));

    // Against the rows that transaction leaves: nothing more to write.
    let after = dir.join("local-nb.json");
    std::fs::write(&after, rows_after(&local["transact"]).to_string()).unwrap();
    let mut again = args.clone();
    again.extend(["--local-nb", after.to_str().unwrap()]);
    let text = ok_stdout(&agent(&again));
    assert!(
        text.contains(&format!(
            "planned against the local NB rows of {}",
            after.display()
        )),
        "{text}"
    );
    assert!(
        text.contains("nothing to do: the local NB holds the desired rows"),
        "{text}"
    );
}

#[test]
fn local_nb_without_the_ovn_mode_is_refused() {
    let topology = root().join("fixtures/demo/topology.json");
    let conf = root().join("fixtures/demo/bgp-agent.conf");
    let out = agent(&[
        "--config-file",
        conf.to_str().unwrap(),
        "plan",
        "--ovn",
        topology.to_str().unwrap(),
        "--local-nb",
        topology.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--local-nb is for exposing_method = ovn only"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
