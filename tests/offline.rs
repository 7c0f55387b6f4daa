//! The offline mode (`--ovn FILE`) as an operator meets it: the answers say
//! which node they compare with, a bad row costs that row and names it, a
//! table the agent does not read is reported, a scenario's config that
//! differs from the effective one is reported, `ovsdb-client -f json dump`
//! output is read, and `explain` answers a prefix `status` lists.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn root(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn scratch(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("offline")
        .join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    p
}

/// The agent with the demo config and `args`.
fn agent(config: &Path, args: &[&str]) -> Output {
    let home = scratch("home");
    std::fs::create_dir_all(&home).unwrap();
    Command::new(env!("CARGO_BIN_EXE_ovn-bgp-agent"))
        .arg("--config-file")
        .arg(config)
        .args(args)
        .env_clear()
        .env("HOME", &home)
        .output()
        .expect("running ovn-bgp-agent")
}

fn demo_config() -> PathBuf {
    root("fixtures/demo/bgp-agent.conf")
}

fn topology() -> String {
    root("fixtures/demo/topology.json").display().to_string()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const EMPTY_NODE: &str =
    "node: empty (no --node-state given): every object is shown as missing, none as held";

#[test]
fn without_a_node_state_plan_status_and_explain_say_the_node_is_empty() {
    let t = topology();
    let plan = agent(&demo_config(), &["plan", "--ovn", &t]);
    assert_eq!(plan.status.code(), Some(0), "{}", err(&plan));
    assert_eq!(
        out(&plan).lines().next(),
        Some(EMPTY_NODE),
        "{}",
        out(&plan)
    );

    let status = agent(&demo_config(), &["status", "--ovn", &t]);
    assert_eq!(status.status.code(), Some(0), "{}", err(&status));
    let text = out(&status);
    assert_eq!(text.lines().next(), Some(EMPTY_NODE), "{text}");
    assert!(text.contains("NOT HELD"), "{text}");

    let explain = agent(&demo_config(), &["explain", "--ovn", &t, "172.24.4.10"]);
    assert_eq!(explain.status.code(), Some(0), "{}", err(&explain));
    let text = out(&explain);
    assert!(
        text.starts_with("172.24.4.10: exposed on this node"),
        "{text}"
    );
    assert_eq!(text.lines().last(), Some(EMPTY_NODE), "{text}");

    // JSON stays the model alone.
    let json = agent(&demo_config(), &["plan", "--ovn", &t, "--format", "json"]);
    serde_json::from_slice::<Value>(&json.stdout).unwrap();
}

#[test]
fn a_bad_row_is_skipped_with_its_uuid_and_an_unknown_table_is_reported() {
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(topology()).unwrap()).unwrap();
    let lsps = doc["OVN_Northbound"]["Logical_Switch_Port"]
        .as_object_mut()
        .unwrap();
    let (uuid, row) = lsps
        .iter_mut()
        .find(|(_, r)| r["name"] == "vm3-port" || r.get("tag").is_none())
        .unwrap();
    let uuid = uuid.clone();
    row["tag"] = serde_json::json!(["bogus", 1]);
    doc["OVN_Northbound"]["Bogus_Table"] = serde_json::json!({});
    let file = scratch("bad-row.json");
    std::fs::write(&file, doc.to_string()).unwrap();

    let o = agent(
        &demo_config(),
        &[
            "status",
            "--ovn",
            file.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    let e = err(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(
        e.contains(&format!(
            "skipping OVN_Northbound.Logical_Switch_Port row {uuid}: column tag"
        )),
        "{e}"
    );
    assert_eq!(e.matches("column tag").count(), 1, "said once: {e}");
    assert!(
        e.contains("unknown table OVN_Northbound.Bogus_Table (not in the OVN_Northbound schema)"),
        "{e}"
    );
    // The other rows still answer.
    let s: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(!s["exposed"].as_array().unwrap().is_empty(), "{s}");
}

#[test]
fn a_scenarios_config_that_differs_from_the_effective_one_is_reported() {
    let config = scratch("other-as.conf");
    std::fs::write(
        &config,
        "[DEFAULT]\ndriver = nb_ovn_bgp_driver\nbgp_AS = 65123\nbgp_router_id = 192.168.100.11\n",
    )
    .unwrap();
    let scenario = root("fixtures/conformance/scenarios/nb-provider-vm.json");
    let o = agent(&config, &["plan", "--ovn", scenario.to_str().unwrap()]);
    let e = err(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(
        e.contains("the scenario sets [DEFAULT] bgp_AS = ")
            && e.contains("the effective configuration has")
            && e.contains("65123"),
        "{e}"
    );
    // The options it sets alike are not reported.
    assert!(!e.contains("[DEFAULT] driver ="), "{e}");
    assert!(
        out(&o).starts_with("node: the scenario's initial_node\n"),
        "{}",
        out(&o)
    );
}

#[test]
fn explain_answers_the_tenant_subnet_status_lists() {
    let t = topology();
    let o = agent(&demo_config(), &["explain", "--ovn", &t, "10.0.0.0/24"]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        text.starts_with("10.0.0.0/24: exposed on this node"),
        "{text}"
    );
    assert!(
        text.contains("prefix: 10.0.0.0/24 is a tenant subnet of router"),
        "{text}"
    );
    assert!(!text.contains("no port named"), "{text}");
}

/// `ovsdb-client -f json dump` of an NB server, as it prints it (cut to
/// the tables that matter), then the local OVS's Open_vSwitch row.
const NB_DUMP: &str = r#"{"caption":"ACL table","data":[],"headings":["_uuid","action"]}
{"caption":"Logical_Switch_Port table","data":[[["uuid","8c78f1be-c47a-4ef7-a884-90857e212d3a"],"fa:16:3e:00:00:01 10.0.0.5",["map",[]],"p1",["set",[]],""]],"headings":["_uuid","addresses","external_ids","name","options","type"]}
{"caption":"Logical_Switch table","data":[[["uuid","8138477c-a79f-45c0-8cd5-993e3a271f68"],"sw",["uuid","8c78f1be-c47a-4ef7-a884-90857e212d3a"]]],"headings":["_uuid","name","ports"]}
{"caption":"Open_vSwitch table","data":[[["uuid","0f3a1b2c-0000-4000-8000-000000000001"],["map",[["hostname","compute-1"]]]]],"headings":["_uuid","external_ids"]}
"#;

#[test]
fn ovsdb_client_dump_output_is_read_and_named_when_the_driver_reads_the_other_database() {
    let file = scratch("nb-dump.json");
    std::fs::write(&file, NB_DUMP).unwrap();
    let f = file.to_str().unwrap();

    let o = agent(&demo_config(), &["explain", "--ovn", f, "p1"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        out(&o).starts_with("p1: not exposed on this node (nb_ovn_bgp_driver; hostname compute-1"),
        "{}",
        out(&o)
    );

    // Upstream's default driver reads the SB: the dump is named for what it is.
    let sb = scratch("sb-driver.conf");
    std::fs::write(&sb, "[DEFAULT]\ndriver = ovn_bgp_driver\n").unwrap();
    let o = agent(&sb, &["explain", "--ovn", f, "p1"]);
    let e = err(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("is `ovsdb-client -f json dump` output of OVN_Northbound (tables Logical_Switch_Port, Logical_Switch), and driver = ovn_bgp_driver reads OVN_Southbound"),
        "{e}"
    );
}
