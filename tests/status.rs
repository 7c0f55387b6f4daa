//! `ovn-bgp-agent status` from files, as an operator runs it: the demo
//! config on a golden scenario, JSON and text.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn root(p: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(p)
        .to_str()
        .unwrap()
        .to_string()
}

fn status(format: &str) -> (Option<i32>, String, String) {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("status-home");
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ovn-bgp-agent"))
        .args(["--config-file", &root("fixtures/demo/bgp-agent.conf")])
        .args(["status", "--format", format, "--ovn"])
        .arg(root("fixtures/conformance/scenarios/nb-provider-vm.json"))
        .env_clear()
        .env("HOME", &home)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn status_of_a_scenario_names_each_exposed_ip_its_row_and_what_the_node_lacks() {
    let (code, out, err) = status("json");
    assert_eq!(code, Some(0), "{err}");
    let s: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(s["origin"], "offline");
    assert_eq!(s["driver"], "nb_ovn_bgp_driver");
    assert_eq!(s["chassis"], "compute-1");
    let exposed = s["exposed"].as_array().unwrap();
    let prefixes: Vec<&str> = exposed
        .iter()
        .map(|e| e["prefix"].as_str().unwrap())
        .collect();
    assert_eq!(prefixes, ["172.24.4.10/32", "2001:db8::10/128"]);
    for e in exposed {
        assert_eq!(e["kind"], "vm");
        let row = &e["rows"][0];
        assert_eq!(row["table"], "Logical_Switch_Port");
        assert_eq!(row["uuid"], "c1f46c6c-dca9-47a2-98c0-62789a0211d6");
        assert_eq!(row["name"], "77777777-7777-4777-8777-777777777777");
        assert_eq!(row["neutron"]["host_id"], "compute-1");
        assert_eq!(e["wiring"]["bridge"], "br-ex");
        assert_eq!(e["wiring"]["table"], "br-ex");
        assert_eq!(
            e["wiring"]["table_id"],
            Value::Null,
            "no rt_tables entry yet"
        );
        // The scenario's initial node has no bgp-nic and no br-ex table.
        assert_eq!(e["held"], false);
        let missing: Vec<&str> = e["missing"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        assert!(
            missing.contains(
                &format!("address {} on bgp-nic", e["prefix"].as_str().unwrap()).as_str()
            ),
            "{missing:?}"
        );
    }
    assert!(s["health"]["pending_ops"].as_u64().unwrap() > 0);

    let (code, text, err) = status("text");
    assert_eq!(code, Some(0), "{err}");
    assert!(
        text.starts_with(
            "node: the scenario's initial_node\novn-bgp-agent status (computed offline from files)"
        ),
        "{text}"
    );
    assert!(
        text.contains("exposed: 2 IP(s) and prefix(es), 0 held by the node"),
        "{text}"
    );
    assert!(
        text.contains("row Logical_Switch_Port c1f46c6c-dca9-47a2-98c0-62789a0211d6"),
        "{text}"
    );
}

#[test]
fn status_asked_of_a_daemon_that_is_not_there_fails_with_the_address() {
    let out = Command::new(env!("CARGO_BIN_EXE_ovn-bgp-agent"))
        .args(["status", "--daemon", "127.0.0.1:1"])
        .env_clear()
        .env("HOME", env!("CARGO_TARGET_TMPDIR"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("connecting to the daemon at 127.0.0.1:1"),
        "{err}"
    );
}
