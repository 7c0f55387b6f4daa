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
//! Every FRR text the scenario records is compared, phase by phase, with
//! the texts the rewrite's plans gave vtysh ([`frr_texts`]); before each
//! plan, FRR's running configuration is read by the daemon's rule
//! ([`replay_node`]), so a changed text is applied again as on a real node.
//!
//! A difference listed for (scenario, step) in
//! `fixtures/conformance/deviations-scenarios.json` (next to the scenarios'
//! directory) is an upstream defect the rewrite fixes: the scenario passes
//! with each such difference printed with its reason, never silently. Each
//! entry names one exact difference; a listed difference that no longer
//! shows fails the scenario (see [`crate::verdict`]).
//! The NB (`nb_ovn_bgp_driver`) and SB (`ovn_bgp_driver`) underlay drivers,
//! the SB EVPN driver and the stretched-L2 driver are replayed; the
//! snapshot carries the NB, SB and OVS rows. The FRR rendering file (driver
//! `frr-utils`) is replayed call by call (see [`crate::frr_renderings`]).
//! A scenario of a driver or exposing method the rewrite does not
//! implement is skipped only when the deviations file lists that skip with
//! its reason; otherwise it fails. The golden files of `exposing_method = ovn`
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
use obgp_plan::{Actual, Plan};
use serde_json::Value;

use crate::scenario_file::{parse, read_json, Scenario};
use crate::verdict::{errored, skipped, Deviations, Outcome, Verdict};
use crate::Summary;

mod frr_texts;
mod replay_node;

use replay_node::ReplayNode;

/// How a replay reconciles: one run per reconciling step (the desired
/// node objects and their plan against the replayed node, observed through
/// the pipeline's port), the follow-up plans of the same objects, and the
/// settling of what was applied.
pub trait Reconcile {
    /// The desired node objects for `snapshot` under `config`, and their
    /// plan against `node` after the settled ones.
    fn run(
        &mut self,
        snapshot: &Snapshot,
        config: &obgp_config::Config,
        node: &mut ReplayNode,
    ) -> anyhow::Result<(DesiredNode, Plan)>;
    /// The plan of the last desired objects against `node`, after the
    /// settled ones: a follow-up reconcile's.
    fn replan(&self, node: &mut ReplayNode) -> anyhow::Result<Plan>;
    /// The last desired objects were applied: the next plans take them as
    /// the previous desired state.
    fn settle(&mut self);
}

/// The production path: the daemon's [`Pipeline`], with the node facts
/// ([`node_facts`]) of the scenario's initial node: the router-id its FRR
/// reported, the VXLAN source among its addresses; the simulated node is
/// the observation its port gives ([`ReplayNode`] as [`obgp_pipeline::ObserveNode`]).
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
        node: &mut ReplayNode,
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
            .run_now(inputs, PlanScope::Whole, node)
            .map_err(half)?;
        let desired = self.pipeline.node().context("a run leaves a result")?;
        Ok((desired.clone(), run.planned.plan))
    }

    fn replan(&self, node: &mut ReplayNode) -> anyhow::Result<Plan> {
        let planned = self
            .pipeline
            .replan_now(PlanScope::Whole, node)
            .map_err(half)?;
        Ok(planned.context("planned before a desired state")?.1.plan)
    }

    fn settle(&mut self) {
        self.pipeline.settle();
    }
}

pub fn run(files: &[String]) -> anyhow::Result<Summary> {
    let mut summary = Summary::default();
    let mut loaded: BTreeMap<PathBuf, Deviations> = BTreeMap::new();
    for file in files {
        let path = PathBuf::from(file);
        let list = deviations_path(&path);
        if !loaded.contains_key(&list) {
            let deviations = Deviations::load(&list)?;
            check_scenarios_exist(&list, &deviations)?;
            loaded.insert(list.clone(), deviations);
        }
        let deviations = &loaded[&list];
        let outcome = match read_json(&path) {
            Ok(doc) if crate::local_cluster::is_local_cluster(&doc) => {
                crate::local_cluster::check(&path, doc)
            }
            Ok(doc) => scenario_outcome(&path, doc, deviations),
            Err(e) => errored(e),
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
        Err(e) => errored(e),
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

/// Refuses a deviations file (at `list`) naming a scenario that has no
/// file in the scenarios directory next to it: such an entry could never
/// be found stale.
fn check_scenarios_exist(list: &Path, deviations: &Deviations) -> anyhow::Result<()> {
    let dir = list.parent().unwrap_or(Path::new(".")).join("scenarios");
    for d in &deviations.0 {
        let file = dir.join(format!("{}.json", d.scenario));
        if !file.exists() {
            anyhow::bail!(
                "{}: scenario {:?} has no file {}",
                list.display(),
                d.scenario,
                file.display()
            );
        }
    }
    Ok(())
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
        node: &mut ReplayNode,
    ) -> anyhow::Result<(DesiredNode, Plan)> {
        let d = (self.desired)().context("desired state")?;
        self.now = Some(d.clone());
        let plan = self.replan(node).context("plan")?;
        Ok((d, plan))
    }

    fn replan(&self, node: &mut ReplayNode) -> anyhow::Result<Plan> {
        let now = self
            .now
            .as_ref()
            .context("planned before a desired state")?;
        let node = node.observe_wanting(now.frr_config.as_deref());
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
        return skipped(&sc.name, why, deviations);
    } else {
        replay_inner(sc, deviations, reconciler)
    };
    match judged {
        Ok(verdict) => verdict.outcome(&sc.name, deviations),
        Err(e) => errored(e),
    }
}

/// How many follow-up reconciles a step may take when its plans wait on
/// the node (see [`reconcile_step`]).
const MAX_FOLLOW_UPS: usize = 3;

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
/// final node and every FRR text ([`frr_texts`]) against the recording.
fn replay_inner(
    sc: &Scenario,
    deviations: &Deviations,
    reconciler: &mut dyn Reconcile,
) -> anyhow::Result<Verdict> {
    let config = config_of(sc)?;
    let mut db = fixture_db(sc)?;
    let initial: Actual =
        serde_json::from_value(sc.initial_node.clone()).context("initial_node")?;
    let recorded_frr = frr_texts::recorded(sc)?;
    let mut node = ReplayNode::new(initial);
    let mut verdict = Verdict::default();
    // The FRR texts the rewrite applied, per step.
    let mut produced_frr: Vec<Vec<String>> = Vec::with_capacity(sc.steps.len());

    for (i, step) in sc.steps.iter().enumerate() {
        if let Some(ops) = &step.ovn_transaction {
            db.apply(db_of(ops), ops)
                .map_err(|e| anyhow!("step {i}: ovn_transaction: {e}"))?;
        }
        let reconcile = !step.action.contains("events disabled");
        let texts = if reconcile {
            let snapshot = snapshot_of(&db);
            reconcile_step(i, &snapshot, &config, reconciler, &mut node, &mut verdict)?
        } else {
            Vec::new()
        };
        produced_frr.push(texts);
        let last = i + 1 == sc.steps.len();
        if step.action.starts_with("sync") && !step.node_after.is_null() && !last {
            let want: Actual = serde_json::from_value(step.node_after.clone())
                .with_context(|| format!("step {i}: node_after"))?;
            let diffs = node_differences(&want, &node.sim.actual);
            verdict.judge(&sc.name, &i.to_string(), diffs, deviations);
        }
    }
    // The final node is the last step's node_after: deviations name that step.
    let final_label = sc.steps.len().saturating_sub(1).to_string();
    let want: Actual = serde_json::from_value(sc.final_node.clone()).context("final_node")?;
    let diffs = node_differences(&want, &node.sim.actual);
    verdict.judge(&sc.name, &final_label, diffs, deviations);

    let actions: Vec<&str> = sc.steps.iter().map(|s| s.action.as_str()).collect();
    let recorded = frr_texts::without_reapplications(&recorded_frr);
    for (label, diff) in
        frr_texts::differences(&frr_texts::phases(&actions), &recorded, &produced_frr)
    {
        verdict.judge(&sc.name, &label, vec![diff], deviations);
    }
    Ok(verdict)
}

/// One reconcile of step `i`, as the daemon's: the desired state of
/// `snapshot`, its plan applied to the simulated node and settled, then the
/// follow-up reconciles a plan that waited on the node gets (at most
/// [`MAX_FOLLOW_UPS`]). Plans out of order, ops the simulated node rejected
/// and a non-empty last plan (not idempotent) fail the replay. Returns
/// every FRR text these plans gave vtysh, in order (EVPN removals
/// included).
fn reconcile_step(
    i: usize,
    snapshot: &Snapshot,
    config: &obgp_config::Config,
    reconciler: &mut dyn Reconcile,
    node: &mut ReplayNode,
    verdict: &mut Verdict,
) -> anyhow::Result<Vec<String>> {
    let label = i.to_string();
    let (_, p) = reconciler
        .run(snapshot, config, node)
        .with_context(|| format!("step {i}"))?;
    for v in order_violations(&p.steps) {
        verdict.fail(format!("step {label}: order: {v}"));
    }
    let start = node.sim.log.len();
    let mut texts = node.apply(&p);
    // Applied: the next plans are made after it, as the daemon's.
    reconciler.settle();
    // A plan that waited on the node (a device, a port, FRR holding
    // its text) is followed by another reconcile, as the daemon's
    // CommandsSettled one; then the node must have converged.
    let mut again = reconciler
        .replan(node)
        .with_context(|| format!("step {i}: second plan"))?;
    let mut waited = !p.skipped.is_empty();
    for _ in 0..MAX_FOLLOW_UPS {
        if again.is_empty() || !waited {
            break;
        }
        for v in order_violations(&again.steps) {
            verdict.fail(format!("step {label}: order (follow-up): {v}"));
        }
        texts.extend(node.apply(&again));
        waited = !again.skipped.is_empty();
        again = reconciler
            .replan(node)
            .with_context(|| format!("step {i}: follow-up plan"))?;
    }
    for (op, r) in &node.sim.log[start..] {
        if let Err(e) = r {
            verdict.fail(format!("step {label}: model node rejected '{op}': {e}"));
        }
    }
    for s in &again.steps {
        verdict.fail(format!(
            "step {label}: not idempotent: second plan has '{}'",
            s.op
        ));
    }
    Ok(texts)
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
