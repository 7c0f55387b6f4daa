//! `plan --ovn` and `explain --ovn` with `exposing_method = l2vni`, through
//! the built binary, on `fixtures/l2vni/basic.json` with
//! `fixtures/l2vni/bgp-agent.conf`: the L2 VNIs' ops (the VXLAN devices
//! once FRR holds the text), the static bridge FDB entries before the
//! neighbours, the agent's leftover VNI torn down (its FDB entry after its
//! neighbour), the foreign `br-*`/`vxlan-*` and their FDB entries
//! untouched, and which VNI and method expose an IP.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> PathBuf {
    root().join("fixtures/l2vni").join(name)
}

fn scenario() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture("basic.json")).unwrap()).unwrap()
}

fn agent(args: &[&str]) -> String {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plan-l2vni-home");
    std::fs::create_dir_all(&home).unwrap();
    let conf = fixture("bgp-agent.conf");
    let o: Output = Command::new(env!("CARGO_BIN_EXE_ovn-bgp-agent"))
        .arg("--config-file")
        .arg(&conf)
        .args(args)
        .env_clear()
        .env("HOME", &home)
        .output()
        .expect("running ovn-bgp-agent");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn lines_after<'a>(text: &'a str, header: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| *l != header)
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(str::trim)
        .collect()
}

#[test]
fn plan_builds_the_l2_vnis_and_tears_down_only_the_agents_leftover() {
    let sc = scenario();
    let path = fixture("basic.json");
    let out = agent(&["plan", "--ovn", path.to_str().unwrap()]);
    let base = lines_after(&out, "base wiring:");
    for want in [
        "+ link br-2001 type bridge",
        "+ link br-2002 type bridge",
        "+ link vrfdd3b5a95-aa type veth peer name ovsdd3b5a95-aa",
        "~ link vrfdd3b5a95-aa master br-2001",
        "+ ovs-port br-ex ovsdd3b5a95-aa",
        "+ ovs-port br-vlan ovse2000000-00 tag=100",
    ] {
        assert!(base.contains(&want), "{want:?} missing:\n{out}");
    }
    // FRR does not hold the text yet: the VXLAN devices wait for it.
    assert!(
        out.contains("link vxlan-2001: waiting for FRR to hold the VNI's configuration"),
        "{out}"
    );
    let expose = lines_after(&out, "expose:");
    let at = |want: &str| {
        expose
            .iter()
            .position(|l| *l == want)
            .unwrap_or_else(|| panic!("{want:?} missing:\n{out}"))
    };
    for n in strings(&sc["expected"]["neighbours"]) {
        let mut f = n.split(' ');
        let (dev, ip, mac) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
        let neighbour = at(&format!(
            "+ neighbour {ip} lladdr {mac} dev {dev} permanent"
        ));
        // The MAC is pinned in the bridge's FDB before (or with) the IP's
        // neighbour: zebra advertises the MAC/IP route once it has both.
        let fdb = strings(&sc["expected"]["bridge_fdb"])
            .into_iter()
            .find(|e| e.starts_with(&format!("{dev} ")) && e.ends_with(mac))
            .unwrap_or_else(|| panic!("no expected FDB entry for {mac} on {dev}"));
        assert!(
            at(&format!("+ bridge-fdb {fdb} static")) < neighbour,
            "{out}"
        );
    }
    let cleanup: Vec<String> = lines_after(&out, "cleanup:")
        .iter()
        .map(|l| l.trim_start_matches("- ").to_string())
        .collect();
    // The leftover VNI's neighbour goes before its MAC's FDB entry (the
    // MAC/IP route is withdrawn first), both before its devices; the
    // static entries on VXLAN ports (remote MACs) are not the agent's.
    assert_eq!(cleanup, strings(&sc["expected"]["plan_removes"]), "{out}");
    assert!(out.contains("advertise-all-vni") && out.contains("rd 64512:2001"));
    let ops_text: String = out
        .lines()
        .take_while(|l| !l.starts_with("frr text"))
        .collect::<Vec<_>>()
        .join("\n");
    for foreign in strings(&sc["expected"]["never_touched"]) {
        let touched = ops_text.split_whitespace().any(|w| w == foreign.as_str());
        assert!(!touched, "{foreign} touched:\n{out}");
    }
}

#[test]
fn once_frr_holds_the_text_the_vxlan_devices_are_created_with_their_flags() {
    let mut sc = scenario();
    sc["initial_node"]["frr"]["applied_configs"] = 1.into();
    sc["initial_node"]["frr"]["has_our_config"] = true.into();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plan-l2vni-frr");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("basic-frr-applied.json");
    std::fs::write(&path, sc.to_string()).unwrap();
    let out = agent(&["plan", "--ovn", path.to_str().unwrap()]);
    let base = lines_after(&out, "base wiring:");
    for vni in [2001, 2002] {
        let want = format!("+ link vxlan-{vni} type vxlan id {vni} local 10.1.1.1 dstport 4789");
        assert!(
            base.iter().any(|l| l.starts_with(&want)),
            "{want:?} missing:\n{out}"
        );
        let master = format!("~ link vxlan-{vni} master br-{vni}");
        assert!(
            base.contains(&master.as_str()),
            "{master:?} missing:\n{out}"
        );
        assert!(
            base.iter()
                .any(|l| l.contains(&format!("vxlan-{vni}")) && l.contains("neigh_suppress on")),
            "bridge-port flags of vxlan-{vni} missing:\n{out}"
        );
    }
    assert!(!out.contains("frr apply"), "FRR already holds it:\n{out}");
}

#[test]
fn explain_says_which_l2_vni_and_method_expose_an_ip() {
    let path = fixture("basic.json");
    let out = agent(&["explain", "--ovn", path.to_str().unwrap(), "10.100.0.10"]);
    assert!(
        out.contains("L2 VNI 2002 (exposing_method = l2vni: type-2 MAC/IP on br-2002)"),
        "{out}"
    );
}

#[test]
fn status_lists_each_host_on_its_l2_vni_bridge_with_its_port_row() {
    let path = fixture("basic.json");
    let out = agent(&[
        "status",
        "--format",
        "json",
        "--ovn",
        path.to_str().unwrap(),
    ]);
    let s: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let exposed = s["exposed"].as_array().unwrap();
    let prefixes: Vec<&str> = exposed
        .iter()
        .map(|e| e["prefix"].as_str().unwrap())
        .collect();
    assert_eq!(
        prefixes,
        ["10.100.0.10/32", "172.24.4.10/32", "2001:db8::10/128"],
        "{out}"
    );
    for e in exposed {
        assert_eq!(e["kind"], "vm", "{e}");
        assert_eq!(e["rows"][0]["table"], "Logical_Switch_Port", "{e}");
        assert_eq!(e["wiring"]["vrf"], Value::Null, "{e}");
        // Nothing is on the node yet: the FDB entry of the host's MAC
        // and its neighbour are missing.
        assert_eq!(e["held"], false, "{e}");
        let missing: Vec<&str> = e["missing"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        assert!(missing[0].starts_with("bridge-fdb br-20"), "{e}");
        assert!(missing[1].starts_with("neighbour "), "{e}");
    }
    assert_eq!(
        exposed[0]["missing"][0], "bridge-fdb br-2002 vrfe2000000-00 fa:16:3e:33:33:33 static",
        "{out}"
    );
    // Once the node holds the entry, only the neighbour is missing.
    let mut sc = scenario();
    sc["initial_node"]["bridge_fdb"]
        .as_array_mut()
        .unwrap()
        .push(
            serde_json::json!({"bridge": "br-2002", "port": "vrfe2000000-00",
            "mac": "fa:16:3e:33:33:33"}),
        );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plan-l2vni-fdb-held");
    std::fs::create_dir_all(&dir).unwrap();
    let held = dir.join("basic-fdb-held.json");
    std::fs::write(&held, sc.to_string()).unwrap();
    let out = agent(&[
        "status",
        "--format",
        "json",
        "--ovn",
        held.to_str().unwrap(),
    ]);
    let s: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let vlan_host = &s["exposed"][0];
    assert_eq!(
        vlan_host["missing"],
        serde_json::json!(["neighbour 10.100.0.10 lladdr fa:16:3e:33:33:33 dev br-2002"]),
        "{out}"
    );
    let vlan = &exposed[0]["wiring"];
    assert_eq!(
        (&vlan["dev"], &vlan["bridge"], &vlan["vlan"]),
        (
            &Value::from("br-2002"),
            &Value::from("br-vlan"),
            &Value::from(100)
        ),
        "{out}"
    );
}
