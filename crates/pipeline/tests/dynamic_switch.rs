//! `exposing_method = dynamic`: a provider network that changes method
//! (underlay → l3 → l2 → none) on `fixtures/dynamic/basic.json`, each
//! desired state computed by `obgp-desired`, planned by `obgp-plan`
//! against the simulated node the previous plans left, with the two other
//! networks of the scenario beside it. Across each switch: O1–O4 hold,
//! the new wiring and announcement come up before the old announcement
//! goes (an L3 VNI's announcement is its VXLAN device, which waits until
//! FRR holds the text: the old announcement waits with it), nothing of the
//! other networks moves, and the node converges.

use obgp_config::Config;
use obgp_desired::{desired_state, NodeFacts};
use obgp_netmodel::DesiredNode;
use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::{Snapshot, Tables, NB_DB, OVS_DB, SB_DB};
use obgp_plan::op::Op;
use obgp_plan::plan::{order_violations, plan_after};
use obgp_plan::{Actual, Plan, SimulatedNode};
use serde_json::{json, Value};

const PLAIN_SWITCH: &str = "a5000000-0000-4000-8000-000000000001";
const VM: &str = "192.168.50.10";

fn scenario() -> Value {
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/dynamic/basic.json"
    );
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn config(sc: &Value) -> Config {
    obgp_config::Loader::new()
        .json_overrides(sc["config"].as_object().unwrap())
        .unwrap()
        .load()
        .unwrap()
        .config
}

fn snapshot(db: &FixtureDb) -> Snapshot {
    let empty = Tables::new();
    let get = |n: &str| db.dbs.get(n).unwrap_or(&empty);
    Snapshot::build_with_sb(get(NB_DB), get(SB_DB), get(OVS_DB))
}

fn annotate(db: &mut FixtureDb, kind: Option<&str>) {
    let ids = match kind {
        Some(k) => json!([
            "map",
            [["neutron_bgpvpn:type", k], ["neutron_bgpvpn:vni", "3001"]]
        ]),
        None => json!(["map", []]),
    };
    let op = json!([{"op": "update", "table": "Logical_Switch",
        "where": [["_uuid", "==", ["uuid", PLAIN_SWITCH]]], "row": {"external_ids": ids}}]);
    db.apply(NB_DB, op.as_array().unwrap()).unwrap();
}

/// The node, the settled desired state, and how the switch went.
struct Run {
    node: SimulatedNode,
    settled: DesiredNode,
    config: Config,
}

impl Run {
    /// One reconcile: plans `d` after the settled state and applies it.
    /// FRR is read back as the command lane would: it holds our text only
    /// if it was applied since the text last changed.
    fn reconcile(&mut self, d: &DesiredNode, what: &str) -> Plan {
        if d.frr_config != self.settled.frr_config {
            self.node.actual.frr.has_our_config = false;
        }
        let plan = plan_after(d, Some(&self.settled), &self.node.actual).expect("plannable");
        let violations = order_violations(&plan.steps);
        assert!(violations.is_empty(), "{what}: {violations:?}\n{plan}");
        let start = self.node.log.len();
        self.node.apply_all(plan.ops());
        let failed: Vec<_> = self.node.log[start..]
            .iter()
            .filter(|(_, r)| r.is_err())
            .collect();
        assert!(failed.is_empty(), "{what}: {failed:?}");
        self.settled = d.clone();
        plan
    }

    /// Reconciles until the plan is empty (at most `n` times).
    fn converge(&mut self, d: &DesiredNode, what: &str) -> Vec<Plan> {
        let mut plans = Vec::new();
        for _ in 0..4 {
            let p = self.reconcile(d, what);
            if p.is_empty() {
                return plans;
            }
            plans.push(p);
        }
        panic!("{what}: not converged:\n{}", plans.last().unwrap());
    }

    fn desired(&self, db: &FixtureDb) -> DesiredNode {
        desired_state(&snapshot(db), &self.config, &NodeFacts::default())
            .expect("supported")
            .to_node()
    }
}

fn start(delete_vrf: bool) -> (Run, FixtureDb) {
    let sc = scenario();
    let mut config = config(&sc);
    config.default.delete_vrf_on_disconnect = delete_vrf;
    let db = FixtureDb::from_wire(&sc["ovn"]).unwrap();
    let actual: Actual = serde_json::from_value(sc["initial_node"].clone()).unwrap();
    let mut run = Run {
        node: SimulatedNode::new(actual),
        settled: DesiredNode::default(),
        config,
    };
    let d = run.desired(&db);
    run.converge(&d, "the scenario");
    (run, db)
}

fn is_vm(op: &Op) -> bool {
    op.subject()
        .is_some_and(|s| s.contains(&VM.parse::<std::net::IpAddr>().unwrap()))
}

fn announced_on_nic(a: &Actual) -> bool {
    a.addresses
        .iter()
        .any(|x| x.dev.as_str() == "bgp-nic" && x.net.to_string() == format!("{VM}/32"))
}

/// What does not belong to the switching network stays as it was.
fn others_untouched(plans: &[Plan], what: &str) {
    for p in plans {
        for s in &p.steps {
            let t = s.op.to_string();
            for other in [
                "1001",
                "2002",
                "172.24.4.10",
                "10.100.0.10",
                "br-foo",
                "vxlan-9",
                "br-8",
            ] {
                assert!(!t.contains(other), "{what}: {t}");
            }
        }
    }
}

#[test]
fn a_network_switched_underlay_l3_l2_none_keeps_its_announcement_until_the_new_one_is_up() {
    let (mut run, mut db) = start(true);
    assert!(announced_on_nic(&run.node.actual));

    // underlay -> l3: the first reconcile builds VNI 3001 (not its VXLAN
    // device, which waits for FRR) and keeps the VM on bgp-nic with its
    // wiring and its MAC-tweak flow.
    annotate(&mut db, Some("l3"));
    let d = run.desired(&db);
    let first = run.reconcile(&d, "underlay -> l3, FRR not read back");
    assert!(
        first.ops().any(|o| matches!(o, Op::ApplyFrr { .. })),
        "{first}"
    );
    assert!(
        !first.ops().any(|o| o.to_string().contains("vxlan-3001")),
        "{first}"
    );
    assert!(
        first.ops().any(|o| o.to_string().contains("vrf-3001")),
        "{first}"
    );
    assert!(
        !first.ops().any(|o| !o.is_add() && is_vm(o)),
        "the VM's announcement and wiring wait for VNI 3001:\n{first}"
    );
    assert!(
        !first.ops().any(|o| matches!(o, Op::AddFlow { bridge, .. } | Op::DelFlow { bridge, .. } if bridge.as_str() == "br-u")),
        "the MAC-tweak flow switches with the announcement:\n{first}"
    );
    assert!(announced_on_nic(&run.node.actual));
    // FRR read back: the VXLAN device comes, then the old announcement goes.
    run.node.actual.frr.has_our_config = true;
    let plans = run.converge(&d, "underlay -> l3");
    assert_eq!(
        plans.len(),
        1,
        "one plan converges: {:?}",
        plans.iter().map(ToString::to_string).collect::<Vec<_>>()
    );
    let second = &plans[0];
    let ops: Vec<String> = second.ops().map(|o| o.to_string()).collect();
    let vxlan = ops
        .iter()
        .position(|o| o.contains("vxlan-3001"))
        .expect("the VXLAN device");
    let withdraw = ops
        .iter()
        .position(|o| {
            o.starts_with('-') && o.contains(&format!("{VM}/32")) && o.contains("bgp-nic")
        })
        .expect("the withdrawal");
    assert!(vxlan < withdraw, "{second}");
    assert!(!announced_on_nic(&run.node.actual));
    others_untouched(&plans, "underlay -> l3");

    // l3 -> l2: the same VNI as an L2 VNI; vrf-3001 and its FRR VRF go,
    // which frees br-3001 from the VRF.
    annotate(&mut db, Some("l2"));
    let d = run.desired(&db);
    let plans = run.converge(&d, "l3 -> l2");
    assert_eq!(plans.len(), 1, "one plan converges");
    let a = &run.node.actual;
    assert!(!a.links.keys().any(|l| l.as_str() == "vrf-3001"));
    let br = a
        .links
        .iter()
        .find(|(n, _)| n.as_str() == "br-3001")
        .expect("br-3001")
        .1;
    assert_eq!(br.master, None);
    assert!(a
        .neighbours
        .iter()
        .any(|n| n.dev.as_str() == "br-3001" && n.dst.to_string() == VM));
    assert!(plans
        .iter()
        .any(|p| p.ops().any(|o| matches!(o, Op::RemoveFrr { .. }))));
    others_untouched(&plans, "l3 -> l2");

    // l2 -> none: back on bgp-nic before the L2 VNI goes (O4).
    annotate(&mut db, None);
    let d = run.desired(&db);
    let plans = run.converge(&d, "l2 -> none");
    assert_eq!(plans.len(), 1, "one plan converges");
    let ops: Vec<String> = plans[0].ops().map(|o| o.to_string()).collect();
    let announce = ops
        .iter()
        .position(|o| {
            o.starts_with('+') && o.contains(&format!("{VM}/32")) && o.contains("bgp-nic")
        })
        .expect("the announcement");
    let teardown = ops
        .iter()
        .position(|o| o.contains("br-3001"))
        .expect("the teardown");
    assert!(announce < teardown, "{}", plans[0]);
    assert!(announced_on_nic(&run.node.actual));
    assert!(!run
        .node
        .actual
        .links
        .keys()
        .any(|l| l.as_str().contains("3001")));
    others_untouched(&plans, "l2 -> none");
}

#[test]
fn without_delete_vrf_on_disconnect_an_l3_vni_switched_to_l2_is_warned_about() {
    let (mut run, mut db) = start(false);
    annotate(&mut db, Some("l3"));
    let d = run.desired(&db);
    run.reconcile(&d, "underlay -> l3");
    run.node.actual.frr.has_our_config = true;
    run.converge(&d, "underlay -> l3");
    annotate(&mut db, Some("l2"));
    let d = run.desired(&db);
    let p = plan_after(&d, Some(&run.settled), &run.node.actual).unwrap();
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("vrf-3001") && w.contains("delete_vrf_on_disconnect")),
        "{:?}",
        p.warnings
    );
}

/// Reconciles `d` as the daemon would across a method switch: a first
/// plan while FRR may not hold the new text, then FRR read back, then
/// until empty. Returns every plan.
fn switch_to(run: &mut Run, d: &DesiredNode, what: &str) -> Vec<Plan> {
    let mut plans = vec![run.reconcile(d, what)];
    run.node.actual.frr.has_our_config = true;
    plans.extend(run.converge(d, what));
    plans
}

#[test]
fn every_switch_between_the_three_methods_keeps_o1_to_o4_and_converges() {
    let kinds = [None, Some("l3"), Some("l2")];
    for from in kinds {
        for to in kinds.into_iter().filter(|k| *k != from) {
            let what = format!("{from:?} -> {to:?}");
            let (mut run, mut db) = start(true);
            annotate(&mut db, from);
            let d = run.desired(&db);
            switch_to(&mut run, &d, &format!("{what}: setting up"));
            annotate(&mut db, to);
            let d = run.desired(&db);
            let plans = switch_to(&mut run, &d, &what);
            // From the underlay: the plan that withdraws the VM from
            // bgp_nic creates the VNI's VXLAN device first.
            if from.is_none() {
                let withdraws = |o: &String| {
                    o.starts_with('-') && o.contains(&format!("{VM}/32")) && o.contains("bgp-nic")
                };
                let p = plans
                    .iter()
                    .map(|p| p.ops().map(|o| o.to_string()).collect::<Vec<_>>())
                    .find(|ops| ops.iter().any(withdraws))
                    .unwrap_or_else(|| panic!("{what}: no withdrawal"));
                let vxlan = p.iter().position(|o| o.starts_with("+ link vxlan-3001"));
                let withdraw = p.iter().position(withdraws);
                assert!(vxlan.is_some() && vxlan < withdraw, "{what}: {p:#?}");
            }
            assert_eq!(announced_on_nic(&run.node.actual), to.is_none(), "{what}");
            // l2 -> l3: the L2 VNI's VXLAN device goes and comes back once
            // FRR holds the L3 text (zebra must not have seen it first).
            if (from, to) == (Some("l2"), Some("l3")) {
                let ops: Vec<String> = plans
                    .iter()
                    .flat_map(|p| p.ops().map(|o| o.to_string()))
                    .collect();
                let del = ops.iter().position(|o| o == "- link vxlan-3001");
                let add = ops.iter().position(|o| o.starts_with("+ link vxlan-3001"));
                assert!(del.is_some() && del < add, "{what}: {ops:#?}");
            }
            others_untouched(&plans, &what);
            let again = plan_after(&d, Some(&d), &run.node.actual).unwrap();
            assert!(again.is_empty(), "{what}: not converged:\n{again}");
        }
    }
}
