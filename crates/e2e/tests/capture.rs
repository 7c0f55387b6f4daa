//! `ovn-bgp-agent capture` round trip, as an operator attaches it to a bug
//! report: on the demo topology (real NB and OVS ovsdb-servers with the
//! OVN schemas, ovs-vswitchd, FRR, a node namespace), `reconcile --once`
//! configures the node as far as this kernel allows, `capture` writes the
//! node to one file, and `plan`, `status` and `explain` answer the same
//! from that file offline as they do live on the node; `explain` answers
//! the same from `ovsdb-client -f json dump` output of the NB and OVS. Netns tier (this
//! kernel; no VRF needed: the answers are compared, not the convergence).

use std::path::Path;

use anyhow::{ensure, Context, Result};
use obgp_e2e::Bench;
use serde_json::Value;

fn json(b: &Bench, args: &[&str]) -> Result<Value> {
    let out = b.agent_ok(args)?;
    serde_json::from_str(&out).with_context(|| format!("{args:?} printed no JSON: {out}"))
}

/// What a status says of the node, without where it was computed.
/// What a capture must answer as the node does: the exposures without
/// their `frr` member, which only a live status reads (a capture holds no
/// FRR tables).
fn exposures(status: &Value) -> Value {
    let mut exposed = status["exposed"].clone();
    for e in exposed.as_array_mut().into_iter().flatten() {
        if let Some(e) = e.as_object_mut() {
            e.remove("frr");
        }
    }
    serde_json::json!({
        "chassis": status["chassis"],
        "driver": status["driver"],
        "exposed": exposed,
        "pending_ops": status["health"]["pending_ops"],
    })
}

#[test]
fn a_capture_answers_plan_status_and_explain_offline_as_the_node_does() -> Result<()> {
    let (_dir, b) = obgp_e2e::demo_bench("capture", "")?;
    // Exit 1 on a kernel without VRFs: the node is then half-configured,
    // which the capture must carry as it is.
    b.agent(&["reconcile", "--once"])?;
    let file = b.dir().join("node-capture.json");
    let file_arg = file.to_str().context("capture path")?;
    b.agent_ok(&["capture", "--output", file_arg])?;
    ensure!(Path::new(&file).exists(), "capture wrote no {file_arg}");
    let mode = std::fs::metadata(&file)?.permissions();
    ensure!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o077 == 0,
        "the capture is readable by others"
    );
    let captured: Value = serde_json::from_str(&std::fs::read_to_string(&file)?)?;
    ensure!(captured["capture"]["driver"] == "nb_ovn_bgp_driver");
    ensure!(
        captured["ovn"]["OVN_Northbound"]["Logical_Switch_Port"]
            .as_object()
            .is_some_and(|rows| !rows.is_empty()),
        "no ports captured"
    );
    ensure!(captured["ovn"]["Open_vSwitch"]["Open_vSwitch"].is_object());

    let live_plan = json(&b, &["plan", "--format", "json"])?;
    let offline_plan = json(&b, &["plan", "--format", "json", "--ovn", file_arg])?;
    ensure!(
        live_plan["steps"].as_array().is_some_and(|s| !s.is_empty()),
        "a half-configured node has a plan: {live_plan}"
    );
    assert_eq!(offline_plan, live_plan, "plan offline != live");

    let live_status = json(&b, &["status", "--direct", "--format", "json"])?;
    let offline_status = json(&b, &["status", "--format", "json", "--ovn", file_arg])?;
    assert_eq!(live_status["origin"], "direct");
    assert_eq!(offline_status["origin"], "offline");
    assert_eq!(exposures(&offline_status), exposures(&live_status));
    ensure!(
        live_status["exposed"][0]["frr"].is_object()
            && offline_status["exposed"][0]["frr"].is_null(),
        "live reads FRR's tables, offline has none: {live_status}"
    );
    ensure!(
        live_status["exposed"]
            .as_array()
            .is_some_and(|e| e.len() >= 5),
        "the demo node exposes its VMs, FIP, gateway and subnet: {live_status}"
    );

    // Every exposed prefix, its address, and the ports behind them.
    let mut targets: Vec<String> = Vec::new();
    for e in live_status["exposed"].as_array().into_iter().flatten() {
        let prefix = e["prefix"].as_str().context("prefix")?;
        targets.push(prefix.to_string());
        targets.push(prefix.split('/').next().unwrap_or_default().to_string());
        let row = &e["rows"][0];
        if let (Some(name), Some("Logical_Switch_Port")) =
            (row["name"].as_str(), row["table"].as_str())
        {
            targets.push(name.to_string());
        }
    }
    // `ovsdb-client -f json dump` of the NB and the local OVS, concatenated:
    // no node state, but the same rows, so explain answers alike.
    let dump = b.dir().join("dump.json");
    let mut text = String::new();
    for remote in [b.nb.connection(), b.ovs.unix_remote()] {
        let out = std::process::Command::new("ovsdb-client")
            .args(["-f", "json", "dump", &remote])
            .output()?;
        ensure!(out.status.success(), "ovsdb-client dump {remote} failed");
        text.push_str(&String::from_utf8(out.stdout)?);
    }
    std::fs::write(&dump, text)?;
    let dump_arg = dump.to_str().context("dump path")?;
    for target in &targets {
        // The fabric side is live only (a capture holds no FRR tables).
        let mut live = json(&b, &["explain", target, "--format", "json"])?;
        if let Some(o) = live.as_object_mut() {
            o.remove("fabric");
        }
        let offline = json(
            &b,
            &["explain", target, "--format", "json", "--ovn", file_arg],
        )?;
        assert_eq!(offline, live, "explain {target}: capture != live");
        let dumped = json(
            &b,
            &["explain", target, "--format", "json", "--ovn", dump_arg],
        )?;
        assert_eq!(dumped, live, "explain {target}: ovsdb-client dump != live");
    }
    Ok(())
}
