//! `status` on upstream's golden scenarios (fixtures/conformance/scenarios):
//! every exposed IP names OVN rows that exist in the scenario's own OVN
//! data, and whether the node holds it follows the node state: nothing on
//! the scenario's initial node, everything once the agent's plan is
//! applied to it (the in-memory simulated node), and the announcements
//! exactly where upstream's node after its first sync carries them on
//! bgp-nic.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use obgp_controller::live_status;
use obgp_controller::ops::status::{ComputedBy, Status};
use obgp_desired::DesiredError;
use obgp_pipeline::{node_facts, NodeReadings, PipelineError};
use obgp_plan::{Actual, SimulatedNode};
use serde_json::Value;

fn scenarios() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/conformance/scenarios");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    out.sort();
    out
}

fn actual(state: &Value) -> Actual {
    if state.is_null() {
        return Actual::default();
    }
    serde_json::from_value(state.clone()).expect("a node state")
}

/// The scenario's OVN data holds row `uuid` of `table` in some database.
fn row_exists(ovn: &Value, table: &str, uuid: &str) -> bool {
    ovn.as_object()
        .unwrap()
        .values()
        .any(|db| db.get(table).and_then(|t| t.get(uuid)).is_some())
}

/// Upstream's node after its start and first sync (before any OVN update).
fn after_first_sync(sc: &Value) -> Option<Actual> {
    let last = sc["steps"]
        .as_array()?
        .iter()
        .take_while(|s| {
            !s["action"]
                .as_str()
                .is_some_and(|a| a.starts_with("ovn_update"))
        })
        .last()?;
    (!last["node_after"].is_null()).then(|| actual(&last["node_after"]))
}

/// The scenario's `config` (oslo option names) through the real loader.
fn config_of(sc: &Value) -> obgp_config::Config {
    let options: std::collections::BTreeMap<String, Value> =
        serde_json::from_value(sc["config"].clone()).unwrap();
    obgp_config::Loader::new()
        .json_overrides(&options)
        .unwrap()
        .load()
        .unwrap()
        .config
}

struct Checked {
    scenario: String,
    exposed: usize,
}

fn check(path: &Path) -> Option<Checked> {
    let sc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let name = sc["name"].as_str().unwrap_or_default().to_string();
    let config = config_of(&sc);
    let snap = obgp_ovn::Snapshot::from_wire(&sc["ovn"]).unwrap();
    let initial = actual(&sc["initial_node"]);
    let facts = node_facts(&config, &snap, NodeReadings::of_node(&initial));
    let computed = match obgp_pipeline::once(&snap, &config, &facts, &initial) {
        Ok(c) => c,
        Err(PipelineError::Desired(DesiredError::Unsupported { .. })) => return None,
        Err(e) => panic!("{}: {e}", name),
    };
    let (desired, node) = (computed.desired, computed.node);
    let status =
        |node: &Actual| -> Status { live_status::offline(&config, &snap, &facts, node).unwrap() };

    // The rows, on the initial node.
    let before = status(&initial);
    assert_eq!(before.origin, ComputedBy::Offline);
    for e in &before.exposed {
        assert!(!e.rows.is_empty(), "{}: {} has no row", name, e.prefix);
        for r in &e.rows {
            assert!(r.found, "{}: {} row {r:?} not found", name, e.prefix);
            assert!(
                row_exists(&sc["ovn"], &r.table, &r.uuid),
                "{}: {} names {} {}, which the scenario's OVN data lacks",
                name,
                e.prefix,
                r.table,
                r.uuid
            );
        }
        // The initial node has no bgp-nic, no bridge table: nothing held.
        assert!(
            !e.held && !e.missing.is_empty(),
            "{}: {} held on the initial node: {e:?}",
            name,
            e.prefix
        );
    }
    for v in &before.vnis {
        assert!(!v.rows.is_empty(), "{}: VNI {} has no row", name, v.vni);
        assert!(!v.held, "{}: VNI {} held on the initial node", name, v.vni);
    }
    if !before.exposed.is_empty() {
        assert!(before.health.pending_ops > Some(0), "{}", name);
    }

    // Our plan applied to the initial node until it plans nothing (an
    // EVPN VNI's VXLAN device waits for FRR to hold its VRF: two rounds):
    // everything held, nothing pending.
    let mut model = SimulatedNode::new(initial.clone());
    for _ in 0..4 {
        let plan = obgp_plan::plan(&node, &model.actual).unwrap();
        if plan.is_empty() {
            break;
        }
        model.apply_all(plan.ops());
    }
    let after = status(&model.actual);
    for e in &after.exposed {
        assert!(
            e.held,
            "{}: {} not held after the plan: {e:?}",
            name, e.prefix
        );
    }
    for v in &after.vnis {
        assert!(
            v.held,
            "{}: VNI {} not held after the plan: {v:?}",
            name, v.vni
        );
    }
    assert_eq!(after.health.pending_ops, Some(0), "{}", name);

    // Upstream's node after its first sync: the status says an address is
    // on bgp-nic exactly for the addresses upstream's bgp-nic carries.
    if desired.evpn.is_none() {
        if let Some(golden) = after_first_sync(&sc) {
            let nic = config.default.bgp_nic.as_str();
            let on_nic: BTreeSet<String> = golden
                .addresses
                .iter()
                .filter(|a| a.dev.as_str() == nic)
                .map(|a| a.net.to_string())
                .collect();
            let shown = status(&golden);
            let announced: BTreeSet<String> = shown
                .exposed
                .iter()
                .filter(|e| e.prefix.prefix_len() == e.prefix.max_prefix_len())
                .filter(|e| {
                    !e.missing
                        .contains(&format!("address {} on {nic}", e.prefix))
                })
                .map(|e| e.prefix.to_string())
                .collect();
            assert_eq!(announced, on_nic, "{}: {shown:#?}", name);
            for e in shown.exposed.iter().filter(|e| e.held) {
                assert!(
                    e.prefix.prefix_len() < e.prefix.max_prefix_len()
                        || on_nic.contains(&e.prefix.to_string()),
                    "{}: {} held but not on upstream's bgp-nic",
                    name,
                    e.prefix
                );
            }
        }
    }
    Some(Checked {
        scenario: name,
        exposed: before.exposed.len(),
    })
}

#[test]
fn every_exposed_ip_names_its_ovn_rows_and_is_held_as_the_node_state_says() {
    let mut checked = Vec::new();
    for path in scenarios() {
        if let Some(c) = check(&path) {
            checked.push(c);
        }
    }
    let with_exposures = checked.iter().filter(|c| c.exposed > 0).count();
    for c in &checked {
        println!("status: {} exposed {}", c.scenario, c.exposed);
    }
    // The stretched-L2 driver's four VRF routes (two provider subnets, two
    // tenant subnets), each with its rows.
    let l2 = checked
        .iter()
        .find(|c| c.scenario == "stretched-l2-basic")
        .expect("stretched-l2-basic is supported");
    assert_eq!(l2.exposed, 4);
    // Every NB, SB, EVPN and stretched-L2 scenario is supported; most
    // expose something.
    assert!(checked.len() >= 18, "{} scenarios checked", checked.len());
    assert!(
        with_exposures >= 15,
        "{with_exposures} scenarios expose something"
    );
}
