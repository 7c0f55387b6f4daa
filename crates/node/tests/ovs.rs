//! MAC-tweak flows and the agent's ports against a real ovs-vswitchd (userspace datapath) running
//! in a network namespace the test creates, with its own ovsdb-server
//! (root; apt packages openvswitch-switch, iproute2).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use obgp_netmodel::{DesiredNode, DevName, Flow, FlowAction, Link, LinkKind, OvsPort};
use obgp_node::fdb::{add_static, read_static};
use obgp_node::{CommandLane, KernelConfig, KernelNode, Scope};
use obgp_plan::plan::plan;
use obgp_plan::{apply_plan, Op};
use obgp_testbed::netns::Netns;

/// ovsdb-server + ovs-vswitchd (netdev datapath) with bridge br-ex and an
/// internal port `patch-prov`; both daemons are killed on drop.
struct Ovs {
    children: Vec<Child>,
    run: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Ovs {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Ovs {
    fn vsctl(&self, args: &[&str]) -> String {
        let db = format!("--db=unix:{}/db.sock", self.run.display());
        let out = Command::new("ovs-vsctl")
            .arg(db)
            .arg("--timeout=20")
            .args(args)
            .output()
            .expect("ovs-vsctl (apt package openvswitch-switch)");
        assert!(
            out.status.success(),
            "ovs-vsctl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn ofctl(&self, args: &[&str]) -> String {
        let out = Command::new("ovs-ofctl")
            .env("OVS_RUNDIR", &self.run)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "ovs-ofctl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn start(ns: &Netns) -> Ovs {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir_all(&run).unwrap();
        let db = dir.path().join("conf.db");
        let schema = Path::new("/usr/share/openvswitch/vswitch.ovsschema");
        let st = Command::new("ovsdb-tool")
            .arg("create")
            .arg(&db)
            .arg(schema)
            .status()
            .expect("ovsdb-tool (apt package openvswitch-switch)");
        assert!(st.success());
        let logdir = dir.path().to_path_buf();
        let log = |name: &str| format!("--log-file={}/{name}.log", logdir.display());
        let server = Command::new("ovsdb-server")
            .arg(&db)
            .arg(format!("--remote=punix:{}/db.sock", run.display()))
            .arg(format!("--unixctl={}/ovsdb-server.ctl", run.display()))
            .arg(log("ovsdb-server"))
            .args(["--no-chdir", "-vconsole:off"])
            .stdin(Stdio::null())
            .spawn()
            .expect("ovsdb-server");
        let mut ovs = Ovs {
            children: vec![server],
            run: run.clone(),
            _dir: dir,
        };
        wait_for("ovsdb-server socket", || run.join("db.sock").exists());
        ovs.vsctl(&["--no-wait", "init"]);
        let vswitchd = Command::new("ip")
            .args(["netns", "exec", ns.name(), "env"])
            .arg(format!("OVS_RUNDIR={}", run.display()))
            .arg("ovs-vswitchd")
            .arg(format!("unix:{}/db.sock", run.display()))
            // ovs-appctl finds the daemon through OVS_RUNDIR's pidfile.
            .arg(format!("--pidfile={}/ovs-vswitchd.pid", run.display()))
            .arg(log("ovs-vswitchd"))
            .args(["--no-chdir", "-vconsole:off"])
            .stdin(Stdio::null())
            .spawn()
            .expect("ovs-vswitchd");
        ovs.children.push(vswitchd);
        ovs.vsctl(&[
            "--",
            "add-br",
            "br-ex",
            "--",
            "set",
            "bridge",
            "br-ex",
            "datapath_type=netdev",
            "--",
            "add-port",
            "br-ex",
            "patch-prov",
            "--",
            "set",
            "interface",
            "patch-prov",
            "type=internal",
        ]);
        wait_for("br-ex.mgmt", || run.join("br-ex.mgmt").exists());
        wait_for("br-ex tap in the namespace", || {
            ns.ip(&["link", "show", "br-ex"]).is_ok()
        });
        ovs
    }
}

fn dev(s: &str) -> DevName {
    DevName::new(s).unwrap()
}

fn desired() -> DesiredNode {
    let br = dev("br-ex");
    let mut d = DesiredNode {
        vrf_table: 10,
        ..DesiredNode::default()
    };
    d.links.insert(Link {
        name: br.clone(),
        kind: LinkKind::Existing,
        master: None,
        mac: None,
        up: true,
    });
    d.bridge_tables.insert(br.clone());
    for proto in ["ip", "ipv6"] {
        d.flows.insert(Flow {
            bridge: br.clone(),
            cookie: 999,
            table: 0,
            priority: 900,
            protocol: proto.into(),
            in_port: "patch-prov".into(),
            matches: Vec::new(),
            actions: vec![FlowAction::ModDlDstBridgeMac, FlowAction::Normal],
        });
    }
    d
}

#[tokio::test]
async fn mac_tweak_flows_round_trip_and_only_cookie_999_leftovers_go() {
    let ns = Netns::new("ovs").expect("netns (root)");
    let ovs = Ovs::start(&ns);
    let dir = tempfile::tempdir().unwrap();
    let mut k = KernelNode::connect(KernelConfig {
        netns: Some(ns.path()),
        rt_tables: dir.path().join("rt_tables"),
        ovs_rundir: Some(ovs.run.clone()),
        ..KernelConfig::default()
    })
    .await
    .unwrap();
    let d = desired();
    let scope = Scope::for_desired(&d);
    let a = k.observe(&scope).await.unwrap();
    let ofport = a.bridges[&dev("br-ex")].ports["patch-prov"];
    let mac = a.links[&dev("br-ex")].mac.unwrap();
    let p = plan(&d, &a).unwrap();
    let flows: Vec<&Op> = p
        .ops()
        .filter(|o| matches!(o, Op::AddFlow { .. }))
        .collect();
    assert_eq!(flows.len(), 2, "{p}");
    let report = apply_plan(&mut k, &p).await;
    assert!(report.ok(), "{report:?}");
    let dump = ovs.ofctl(&["--no-names", "dump-flows", "br-ex", "cookie=999/-1"]);
    assert!(
        dump.contains(&format!(
            "priority=900,ip,in_port={ofport} actions=mod_dl_dst:{mac},NORMAL"
        )),
        "{dump}"
    );
    let a = k.observe(&scope).await.unwrap();
    assert!(plan(&d, &a).unwrap().is_empty());

    // A stale agent flow and someone else's flow: only the agent's goes.
    ovs.ofctl(&[
        "add-flow",
        "br-ex",
        "cookie=999,priority=900,ip,in_port=77,actions=NORMAL",
    ]);
    ovs.ofctl(&[
        "add-flow",
        "br-ex",
        "cookie=0x1234,priority=900,ip,in_port=78,actions=NORMAL",
    ]);
    // (The agent reuses its last read until something says the flows may
    // have changed: the command lane's tests show that.)
    let a = k.observe(&scope).await.unwrap();
    let p = plan(&d, &a).unwrap();
    assert_eq!(p.steps.len(), 1, "{p}");
    assert!(matches!(&p.steps[0].op, Op::DelFlow { flow, .. } if flow.cookie == 999));
    assert!(apply_plan(&mut k, &p).await.ok());
    let dump = ovs.ofctl(&["--no-names", "dump-flows", "br-ex"]);
    assert!(dump.contains("cookie=0x1234"), "{dump}");
    let a = k.observe(&scope).await.unwrap();
    assert!(plan(&d, &a).unwrap().is_empty());
    assert_eq!(a.bridges[&dev("br-ex")].flows.len(), 2);
}

/// The agent's EVPN ports through the command lane, against the real
/// ovs-vswitchd: a veth end untagged and then tagged (`--may-exist` on a
/// port that is there still sets the tag), an internal VLAN port that OVS
/// creates; each in the lane's next read of the bridge with its ofport, and
/// gone after del-port.
#[tokio::test]
async fn ovs_ports_are_added_tagged_and_internal_and_removed_through_the_lane() {
    let ns = Netns::new("ovsport").expect("netns (root)");
    let ovs = Ovs::start(&ns);
    ns.ip(&[
        "link",
        "add",
        "veth-ovs-1001",
        "type",
        "veth",
        "peer",
        "name",
        "veth-vrf-1001",
    ])
    .unwrap();
    let lane = CommandLane::start(KernelConfig {
        ovs_rundir: Some(ovs.run.clone()),
        ovs_ofctl_timeout: Duration::from_secs(20),
        ..KernelConfig::default()
    })
    .unwrap();
    let scope = Scope {
        ovs_bridges: [dev("br-ex")].into(),
        ..Scope::default()
    };
    let port = |name: &str, tag: Option<u16>, internal: bool| {
        Op::AddOvsPort(OvsPort {
            bridge: dev("br-ex"),
            name: dev(name),
            tag,
            internal,
        })
    };
    // Applies `ops` and returns the bridge's ports as the lane reads them
    // next.
    let run = |ops: Vec<Op>| {
        let lane = &lane;
        let scope = &scope;
        async move {
            lane.submit(ops.clone());
            lane.settled().await;
            let outcomes = lane.take_outcomes();
            assert_eq!(outcomes.len(), ops.len(), "{outcomes:?}");
            for o in &outcomes {
                assert!(o.result.is_ok(), "{}: {:?}", o.op, o.result);
            }
            let v = lane.view(scope);
            assert!(v.is_complete(), "read again after the ops: {v:?}");
            v.bridges[&dev("br-ex")].ports.clone()
        }
    };

    let ports = run(vec![port("veth-ovs-1001", None, false)]).await;
    let veth_ofport = ports["veth-ovs-1001"];
    assert!(veth_ofport > 0, "{ports:?}");
    assert_eq!(
        ovs.vsctl(&["get", "Port", "veth-ovs-1001", "tag"]).trim(),
        "[]"
    );

    let ports = run(vec![
        port("veth-ovs-1001", Some(100), false),
        port("vlan-1002", Some(200), true),
    ])
    .await;
    assert_eq!(
        ports["veth-ovs-1001"], veth_ofport,
        "the same port, not re-added"
    );
    assert_eq!(
        ovs.vsctl(&["get", "Port", "veth-ovs-1001", "tag"]).trim(),
        "100"
    );
    assert!(ports["vlan-1002"] > 0, "{ports:?}");
    assert_eq!(
        ovs.vsctl(&["get", "Port", "vlan-1002", "tag"]).trim(),
        "200"
    );
    assert_eq!(
        ovs.vsctl(&["get", "Interface", "vlan-1002", "type"]).trim(),
        "internal"
    );
    // OVS made the internal port's kernel device.
    wait_for("vlan-1002 in the namespace", || {
        ns.ip(&["link", "show", "vlan-1002"]).is_ok()
    });

    let ports = run(vec![
        Op::DelOvsPort {
            bridge: dev("br-ex"),
            name: dev("veth-ovs-1001"),
        },
        Op::DelOvsPort {
            bridge: dev("br-ex"),
            name: dev("vlan-1002"),
        },
        // --if-exists: deleting what is not there is no failure.
        Op::DelOvsPort {
            bridge: dev("br-ex"),
            name: dev("vlan-1002"),
        },
    ])
    .await;
    assert!(
        !ports.contains_key("veth-ovs-1001") && !ports.contains_key("vlan-1002"),
        "{ports:?}"
    );
    assert!(ports.contains_key("patch-prov"), "{ports:?}");
    let listed = ovs.vsctl(&["list-ports", "br-ex"]);
    assert_eq!(listed.trim(), "patch-prov", "{listed}");

    // A bridge OVS does not have: the op fails and says why.
    lane.submit([Op::AddOvsPort(OvsPort {
        bridge: dev("br-nope"),
        name: dev("veth-ovs-1001"),
        tag: None,
        internal: false,
    })]);
    lane.settled().await;
    let outcomes = lane.take_outcomes();
    let err = outcomes[0].result.as_ref().unwrap_err();
    assert!(err.contains("br-nope"), "{err}");
}

/// Static FDB entries (the `ovn` method's pinned bridge MACs) against the
/// real ovs-vswitchd: added, read back by port name, added again without
/// a second entry, and someone else's entry on the bridge's own port read
/// as that port.
#[test]
fn static_fdb_entries_are_added_once_and_read_back_by_port_name() {
    let ns = Netns::new("ovsfdb").expect("netns (root)");
    let ovs = Ovs::start(&ns);
    let config = KernelConfig {
        ovs_rundir: Some(ovs.run.clone()),
        ..KernelConfig::default()
    };
    let ofport: u32 = ovs
        .vsctl(&["get", "interface", "patch-prov", "ofport"])
        .trim()
        .parse()
        .unwrap();
    let ports = std::collections::BTreeMap::from([("patch-prov".to_string(), ofport)]);
    let entry = obgp_netmodel::FdbEntry {
        bridge: dev("br-ex"),
        port: "patch-prov".into(),
        vlan: 0,
        mac: "52:54:00:30:93:ea".parse().unwrap(),
    };
    assert!(read_static(&config, &dev("br-ex"), &ports)
        .unwrap()
        .is_empty());
    add_static(&config, &entry).unwrap();
    add_static(&config, &entry).unwrap();
    let appctl = |args: &[&str]| {
        let out = Command::new("ovs-appctl")
            .env("OVS_RUNDIR", &ovs.run)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    appctl(&["fdb/add", "br-ex", "br-ex", "100", "52:54:00:30:93:eb"]);
    let seen = read_static(&config, &dev("br-ex"), &ports).unwrap();
    let foreign = obgp_netmodel::FdbEntry {
        port: "br-ex".into(),
        vlan: 100,
        mac: "52:54:00:30:93:eb".parse().unwrap(),
        ..entry.clone()
    };
    let show = appctl(&["fdb/show", "br-ex"]);
    assert_eq!(seen, [entry, foreign].into_iter().collect(), "{show}");
}

/// The same through the planner and the writer: a desired entry is
/// planned, applied with ovs-appctl, read back with the bridge, and then
/// planned no more.
#[tokio::test]
async fn a_desired_static_fdb_entry_is_planned_applied_and_then_seen() {
    let ns = Netns::new("ovsfdbplan").expect("netns (root)");
    let ovs = Ovs::start(&ns);
    let dir = tempfile::tempdir().unwrap();
    let mut k = KernelNode::connect(KernelConfig {
        netns: Some(ns.path()),
        rt_tables: dir.path().join("rt_tables"),
        ovs_rundir: Some(ovs.run.clone()),
        read_static_fdb: true,
        ..KernelConfig::default()
    })
    .await
    .unwrap();
    let mut d = desired();
    d.fdb.insert(obgp_netmodel::FdbEntry {
        bridge: dev("br-ex"),
        port: "br-ex".into(),
        vlan: 0,
        mac: "52:54:00:30:93:ea".parse().unwrap(),
    });
    let scope = Scope::for_desired(&d);
    let a = k.observe(&scope).await.unwrap();
    let p = plan(&d, &a).unwrap();
    assert_eq!(
        p.ops().filter(|o| matches!(o, Op::AddFdb(_))).count(),
        1,
        "{p}"
    );
    let report = apply_plan(&mut k, &p).await;
    assert!(report.ok(), "{report:?}");
    let a = k.observe(&scope).await.unwrap();
    assert_eq!(a.bridges[&dev("br-ex")].fdb, d.fdb);
    assert!(plan(&d, &a).unwrap().is_empty());
}
