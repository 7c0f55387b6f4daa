//! `conformance scenario FILE...`: replays upstream's golden node-side
//! scenarios (`fixtures/conformance/scenarios/*.json`) through desired state,
//! the planner and the simulated node.
//!
//! Per scenario: the OVN snapshot comes from its `ovn` member, the simulated node
//! starts from `initial_node`; every `start`/`sync` step reconciles through
//! the daemon's [`Pipeline`] (desired state, plan after the settled result,
//! apply, settle), every `ovn_update` step applies its transaction in
//! memory and reconciles (the agent's events schedule a reconcile) unless the
//! scenario says events were off. After each `sync` step and at the end the
//! node is compared with the scenario's state by the README's rules, each
//! plan is checked against O1–O4, and a second plan must be empty.
//!
//! A difference listed for (scenario, step) in
//! `fixtures/conformance/deviations-scenarios.json` (next to the scenarios'
//! directory) is an upstream defect the rewrite fixes: the scenario passes
//! with each such difference printed with its reason, never silently.
//! The NB (`nb_ovn_bgp_driver`) and SB (`ovn_bgp_driver`) underlay drivers,
//! the SB EVPN driver and the stretched-L2 driver are replayed; the
//! snapshot carries the NB, SB and OVS rows. The FRR rendering file (driver
//! `frr-utils`) is replayed call by call (see [`crate::frr_renderings`]).
//! Drivers or exposing methods the rewrite does not implement are reported
//! as skipped with that reason. The golden files of `exposing_method = ovn`
//! (`fixtures/ovn-local/*.json`, no upstream recording exists) are checked
//! by [`crate::local_cluster`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use obgp_netmodel::DesiredNode;
use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::{NbChanges, Snapshot};
use obgp_pipeline::{node_facts, NodeReadings, Pipeline, PipelineError, PipelineInputs, PlanScope};
use obgp_plan::compare::differences;
use obgp_plan::plan::order_violations;
use obgp_plan::{Actual, Op, Plan, SimulatedNode};
use serde_json::Value;

use crate::scenario_file::{parse, read_json, Scenario};
use crate::verdict::{frr_canonical, judge, Deviations, Judged, Outcome};
use crate::Summary;

/// How a replay reconciles: one run per reconciling step (the desired
/// node objects and their plan against the node), the follow-up plans of
/// the same objects, and the settling of what was applied.
pub trait Reconcile {
    /// The desired node objects for `snapshot` under `config`, and their
    /// plan against `node` after the settled ones.
    fn run(
        &mut self,
        snapshot: &Snapshot,
        config: &obgp_config::Config,
        node: &Actual,
    ) -> anyhow::Result<(DesiredNode, Plan)>;
    /// The plan of the last desired objects against `node`, after the
    /// settled ones: a follow-up reconcile's.
    fn replan(&self, node: &Actual) -> anyhow::Result<Plan>;
    /// The last desired objects were applied: the next plans take them as
    /// the previous desired state.
    fn settle(&mut self);
}

/// The production path: the daemon's [`Pipeline`], with the node facts
/// ([`node_facts`]) of the scenario's initial node: the router-id its FRR
/// reported, the VXLAN source among its addresses; the simulated node is
/// the observation its port gives ([`Pipeline::run_recorded`]).
pub struct PipelineReplay {
    pipeline: Pipeline,
    initial: Actual,
    router_id: Option<String>,
}

impl PipelineReplay {
    pub fn new(sc: &Scenario) -> PipelineReplay {
        PipelineReplay {
            pipeline: Pipeline::default(),
            initial: serde_json::from_value(sc.initial_node.clone()).unwrap_or_default(),
            router_id: sc.initial_node["frr"]["router_id_reported"]
                .as_str()
                .map(String::from),
        }
    }
}

/// The pipeline's error with the half it came from, as the replay's
/// failures name it.
fn half(e: PipelineError) -> anyhow::Error {
    match e {
        PipelineError::Desired(e) => anyhow::Error::new(e).context("desired state"),
        PipelineError::Plan(e) => anyhow::Error::new(e).context("plan"),
        PipelineError::Observe(never) => match never {},
    }
}

impl Reconcile for PipelineReplay {
    fn run(
        &mut self,
        snapshot: &Snapshot,
        config: &obgp_config::Config,
        node: &Actual,
    ) -> anyhow::Result<(DesiredNode, Plan)> {
        let read = NodeReadings {
            frr_router_id: self.router_id.as_deref(),
            ..NodeReadings::of_node(&self.initial)
        };
        let facts = node_facts(config, snapshot, read);
        let inputs = PipelineInputs {
            snapshot,
            changes: &mut NbChanges::Full,
            config,
            facts: &facts,
        };
        let run = self
            .pipeline
            .run_recorded(inputs, PlanScope::Whole, node)
            .map_err(half)?;
        let desired = self.pipeline.node().context("a run leaves a result")?;
        Ok((desired.clone(), run.planned.plan))
    }

    fn replan(&self, node: &Actual) -> anyhow::Result<Plan> {
        let planned = self
            .pipeline
            .replan_recorded(PlanScope::Whole, node)
            .map_err(half)?;
        Ok(planned.context("planned before a desired state")?.plan)
    }

    fn settle(&mut self) {
        self.pipeline.settle();
    }
}

pub fn run(files: &[String]) -> anyhow::Result<Summary> {
    let mut summary = Summary::default();
    for file in files {
        let path = PathBuf::from(file);
        let deviations = Deviations::load(&deviations_path(&path))?;
        let outcome = match read_json(&path) {
            Ok(doc) if crate::local_cluster::is_local_cluster(&doc) => {
                crate::local_cluster::check(&path, doc)
            }
            Ok(doc) => scenario_outcome(&path, doc, &deviations),
            Err(e) => Outcome::Failed(vec![format!("{e:#}")]),
        };
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| file.clone());
        print_outcome(&name, &outcome);
        match outcome {
            Outcome::Passed => summary.passed += 1,
            Outcome::PassedWithDeviations(_) => {
                summary.passed += 1;
                summary.with_deviations += 1;
            }
            Outcome::Skipped(_) => summary.skipped += 1,
            Outcome::Failed(_) => summary.failed += 1,
        }
    }
    Ok(summary)
}

/// Replays one of upstream's recorded scenarios (`doc`, read from `path`).
fn scenario_outcome(path: &Path, doc: Value, deviations: &Deviations) -> Outcome {
    let scenario = parse(path, doc);
    match scenario {
        Ok(sc) => {
            let mut pipeline = PipelineReplay::new(&sc);
            replay(&sc, deviations, &mut pipeline)
        }
        Err(e) => Outcome::Failed(vec![format!("{e:#}")]),
    }
}

fn print_outcome(name: &str, outcome: &Outcome) {
    match outcome {
        Outcome::Passed => println!("PASS {name}"),
        Outcome::PassedWithDeviations(why) => {
            println!(
                "PASS {name}, with {}",
                why.first().map(String::as_str).unwrap_or("")
            );
            for w in why.iter().skip(1) {
                println!("     {w}");
            }
        }
        Outcome::Skipped(why) => {
            println!(
                "SKIP {name}: {}",
                why.first().map(String::as_str).unwrap_or("")
            );
            for w in why.iter().skip(1) {
                println!("     {w}");
            }
        }
        Outcome::Failed(why) => {
            println!("FAIL {name}: {} difference(s)", why.len());
            for w in why {
                println!("     {w}");
            }
        }
    }
}

/// `<scenarios dir>/../deviations-scenarios.json`.
fn deviations_path(scenario: &Path) -> PathBuf {
    let dir = scenario.parent().unwrap_or(Path::new("."));
    dir.join("..").join("deviations-scenarios.json")
}

/// Why a scenario is outside what the rewrite implements, if it is.
fn unsupported(sc: &Scenario) -> Option<String> {
    let driver = sc
        .config
        .get("driver")
        .and_then(Value::as_str)
        .unwrap_or(&sc.driver);
    // The SB scenarios say `ovn_bgp_driver` in both places; EVPN and
    // stretched-L2 ones name their own driver at the top level.
    let implemented = [
        "nb_ovn_bgp_driver",
        "ovn_bgp_driver",
        "ovn_evpn_driver",
        "ovn_stretched_l2_bgp_driver",
    ];
    if !implemented.contains(&driver) || driver != sc.driver {
        return Some(format!("driver {} is not implemented", sc.driver));
    }
    let method = sc
        .config
        .get("exposing_method")
        .and_then(Value::as_str)
        .unwrap_or("underlay");
    let method_ok = match driver {
        "nb_ovn_bgp_driver" => matches!(method, "underlay" | "vrf"),
        // Upstream ignores exposing_method with the SB EVPN and
        // stretched-L2 drivers.
        "ovn_evpn_driver" | "ovn_stretched_l2_bgp_driver" => true,
        _ => method == "underlay",
    };
    if !method_ok {
        return Some(format!("exposing_method {method} is not implemented"));
    }
    None
}

/// The scenario's `config` (oslo option names, dotted = group.option) as a
/// [`obgp_config::Config`], through the real loader.
pub fn config_of(sc: &Scenario) -> anyhow::Result<obgp_config::Config> {
    let loader = obgp_config::Loader::new()
        .json_overrides(&sc.config)
        .map_err(|key| anyhow!("config {key}: a map is not an option value"))?;
    Ok(loader.load().context("scenario config")?.config)
}

fn fixture_db(sc: &Scenario) -> anyhow::Result<FixtureDb> {
    let mut db = FixtureDb::from_wire(&sc.ovn).map_err(|e| anyhow!("ovn: {e}"))?;
    let schemas = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/schemas");
    for f in ["ovn-nb.ovsschema", "ovn-sb.ovsschema", "vswitch.ovsschema"] {
        let p = schemas.join(f);
        let text =
            std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        db = db.with_schema(&serde_json::from_str(&text)?);
    }
    Ok(db)
}

/// The database an `ovn_update` transaction is for, by its tables.
fn db_of(ops: &[Value]) -> &'static str {
    const OVS_TABLES: [&str; 4] = ["Open_vSwitch", "Bridge", "Port", "Interface"];
    // Tables only the Southbound schema has (the SB scenarios' updates).
    const SB_TABLES: [&str; 6] = [
        "Port_Binding",
        "Datapath_Binding",
        "Chassis",
        "Chassis_Private",
        "Encap",
        "MAC_Binding",
    ];
    let tables = || ops.iter().filter_map(|o| o["table"].as_str());
    if ops.is_empty() {
        obgp_ovn::NB_DB
    } else if tables().all(|t| OVS_TABLES.contains(&t)) {
        obgp_ovn::OVS_DB
    } else if tables().all(|t| SB_TABLES.contains(&t)) {
        obgp_ovn::SB_DB
    } else {
        obgp_ovn::NB_DB
    }
}

/// The snapshot of the fixture's NB, SB and OVS contents, as the
/// controller builds it when it monitors all three.
fn snapshot_of(db: &FixtureDb) -> Snapshot {
    let empty = obgp_ovn::Tables::new();
    let get = |name: &str| db.dbs.get(name).unwrap_or(&empty);
    Snapshot::build_with_sb(
        get(obgp_ovn::NB_DB),
        get(obgp_ovn::SB_DB),
        get(obgp_ovn::OVS_DB),
    )
}

/// A test's desired node objects, from a function instead of the pipeline,
/// planned after the settled ones as the pipeline plans.
#[cfg(test)]
pub(crate) struct Injected<F> {
    desired: F,
    now: Option<DesiredNode>,
    settled: Option<DesiredNode>,
}

#[cfg(test)]
impl<F> Injected<F>
where
    F: FnMut() -> anyhow::Result<DesiredNode>,
{
    pub(crate) fn new(desired: F) -> Injected<F> {
        Injected {
            desired,
            now: None,
            settled: None,
        }
    }
}

#[cfg(test)]
impl<F> Reconcile for Injected<F>
where
    F: FnMut() -> anyhow::Result<DesiredNode>,
{
    fn run(
        &mut self,
        _: &Snapshot,
        _: &obgp_config::Config,
        node: &Actual,
    ) -> anyhow::Result<(DesiredNode, Plan)> {
        let d = (self.desired)().context("desired state")?;
        self.now = Some(d.clone());
        let plan = self.replan(node).context("plan")?;
        Ok((d, plan))
    }

    fn replan(&self, node: &Actual) -> anyhow::Result<Plan> {
        let now = self
            .now
            .as_ref()
            .context("planned before a desired state")?;
        Ok(obgp_plan::plan_after(now, self.settled.as_ref(), node)?)
    }

    fn settle(&mut self) {
        self.settled = self.now.clone();
    }
}

/// Replays one scenario, reconciling through `reconciler`.
pub fn replay(sc: &Scenario, deviations: &Deviations, reconciler: &mut dyn Reconcile) -> Outcome {
    let judged = if sc.driver == crate::frr_renderings::DRIVER {
        crate::frr_renderings::judge_steps(sc, deviations)
    } else if let Some(why) = unsupported(sc) {
        return Outcome::Skipped(vec![why]);
    } else {
        replay_inner(sc, deviations, reconciler)
    };
    Outcome::of(judged)
}

/// How many follow-up reconciles a step may take when its plans wait on
/// the node (see [`reconcile_step`]).
const MAX_FOLLOW_UPS: usize = 3;

/// The FRR texts a plan gives vtysh, in order.
fn frr_texts(p: &obgp_plan::Plan) -> Vec<String> {
    p.ops()
        .filter_map(|op| match op {
            Op::ApplyFrr { config } | Op::RemoveFrr { config } => Some(config.clone()),
            _ => None,
        })
        .collect()
}

/// `node` with each flow's `mod_dl_dst:<MAC>` naming the link that has that
/// MAC instead: a MAC the kernel picks (the SB EVPN flow's veth end) differs
/// between the recording's fake node and the simulated node, so flows compare
/// through the link, as the scenarios' README says.
fn flows_through_link_macs(node: &Actual) -> Actual {
    let mut out = node.clone();
    let macs: BTreeMap<String, String> = node
        .links
        .iter()
        .filter_map(|(name, l)| {
            Some((
                format!("mod_dl_dst:{}", l.mac?),
                format!("mod_dl_dst:<{name}>"),
            ))
        })
        .collect();
    for bridge in out.bridges.values_mut() {
        bridge.flows = std::mem::take(&mut bridge.flows)
            .into_iter()
            .map(|mut f| {
                let actions: Vec<String> = f
                    .actions
                    .split(',')
                    .map(|a| macs.get(a).cloned().unwrap_or_else(|| a.to_string()))
                    .collect();
                f.actions = actions.join(",");
                f
            })
            .collect();
    }
    out
}

/// Replays the steps of one recorded scenario: applies each step's OVN
/// transaction, reconciles ([`reconcile_step`]) unless the step had the
/// agent's events off, and judges the node after each `sync` step, the
/// final node and the last FRR text against the recording.
fn replay_inner(
    sc: &Scenario,
    deviations: &Deviations,
    reconciler: &mut dyn Reconcile,
) -> anyhow::Result<Judged> {
    let config = config_of(sc)?;
    let mut db = fixture_db(sc)?;
    let initial: Actual =
        serde_json::from_value(sc.initial_node.clone()).context("initial_node")?;
    let mut node = SimulatedNode::new(initial);
    let mut failures = Vec::new();
    let mut accepted = Vec::new();
    let mut last_frr: Option<String> = None;

    for (i, step) in sc.steps.iter().enumerate() {
        let label = i.to_string();
        if let Some(ops) = &step.ovn_transaction {
            db.apply(db_of(ops), ops)
                .map_err(|e| anyhow!("step {i}: ovn_transaction: {e}"))?;
        }
        let reconcile = !step.action.contains("events disabled");
        if reconcile {
            let snapshot = snapshot_of(&db);
            let frr = reconcile_step(i, &snapshot, &config, reconciler, &mut node, &mut failures)?;
            if frr.is_some() {
                last_frr = frr;
            }
        }
        let last = i + 1 == sc.steps.len();
        if step.action.starts_with("sync") && !step.node_after.is_null() && !last {
            let want: Actual = serde_json::from_value(step.node_after.clone())
                .with_context(|| format!("step {i}: node_after"))?;
            let diffs = node_differences(&want, &node.actual);
            judge(
                &sc.name,
                &label,
                diffs,
                deviations,
                &mut failures,
                &mut accepted,
            );
        }
    }
    // The final node is the last step's node_after: deviations name that step.
    let final_label = sc.steps.len().saturating_sub(1).to_string();
    let want: Actual = serde_json::from_value(sc.final_node.clone()).context("final_node")?;
    let diffs = node_differences(&want, &node.actual);
    judge(
        &sc.name,
        &final_label,
        diffs,
        deviations,
        &mut failures,
        &mut accepted,
    );

    if let (Some(want), Some(got)) = (sc.frr.last(), &last_frr) {
        if frr_canonical(want) != frr_canonical(got) {
            let diff = format!(
                "frr text differs: want {:?}, got {:?}",
                frr_canonical(want),
                frr_canonical(got)
            );
            judge(
                &sc.name,
                "frr",
                vec![diff],
                deviations,
                &mut failures,
                &mut accepted,
            );
        }
    }
    Ok((failures, accepted))
}

/// One reconcile of step `i`, as the daemon's: the desired state of
/// `snapshot`, its plan applied to the simulated node and settled, then the
/// follow-up reconciles a plan that waited on the node gets (at most
/// [`MAX_FOLLOW_UPS`]). Plans out of order, ops the simulated node rejected
/// and a non-empty last plan (not idempotent) go to `failures`. Returns
/// the last FRR text: the last one these plans gave vtysh (an EVPN
/// removal included), else the one the desired state holds.
fn reconcile_step(
    i: usize,
    snapshot: &Snapshot,
    config: &obgp_config::Config,
    reconciler: &mut dyn Reconcile,
    node: &mut SimulatedNode,
    failures: &mut Vec<String>,
) -> anyhow::Result<Option<String>> {
    let label = i.to_string();
    let (d, p) = reconciler
        .run(snapshot, config, &node.actual)
        .with_context(|| format!("step {i}"))?;
    for v in order_violations(&p.steps) {
        failures.push(format!("step {label}: order: {v}"));
    }
    let start = node.log.len();
    node.apply_all(p.ops());
    let mut texts: Vec<String> = frr_texts(&p);
    // Applied: the next plans are made after it, as the daemon's.
    reconciler.settle();
    // A plan that waited on the node (a device, a port, FRR holding
    // its text) is followed by another reconcile, as the daemon's
    // CommandsSettled one; then the node must have converged.
    let mut again = reconciler
        .replan(&node.actual)
        .with_context(|| format!("step {i}: second plan"))?;
    let mut waited = !p.skipped.is_empty();
    for _ in 0..MAX_FOLLOW_UPS {
        if again.is_empty() || !waited {
            break;
        }
        for v in order_violations(&again.steps) {
            failures.push(format!("step {label}: order (follow-up): {v}"));
        }
        node.apply_all(again.ops());
        texts.extend(frr_texts(&again));
        waited = !again.skipped.is_empty();
        again = reconciler
            .replan(&node.actual)
            .with_context(|| format!("step {i}: follow-up plan"))?;
    }
    for (op, r) in &node.log[start..] {
        if let Err(e) = r {
            failures.push(format!("step {label}: model node rejected '{op}': {e}"));
        }
    }
    for s in &again.steps {
        failures.push(format!(
            "step {label}: not idempotent: second plan has '{}'",
            s.op
        ));
    }
    Ok(texts.pop().or_else(|| d.frr_config.clone()))
}

/// The differences between the recorded node `want` and the simulated node,
/// flows compared through the links' MACs ([`flows_through_link_macs`]).
fn node_differences(want: &Actual, got: &Actual) -> Vec<String> {
    differences(
        &flows_through_link_macs(want),
        &flows_through_link_macs(got),
    )
}

#[cfg(test)]
mod tests;
