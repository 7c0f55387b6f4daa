//! The pipeline harness (structure-aware): a golden scenario's OVN
//! databases, one of its node states and its configuration, each edited a
//! few times (typed row edits, [`crate::rows`], through a live snapshot of
//! the scenario built for the input; or JSON edits, [`crate::mutate`],
//! through a fresh build), go through the snapshot builder and the
//! daemon's [`Pipeline`] (node facts by [`node_facts`], one run: desired
//! state, the edited node state given through the pipeline's port, whole
//! plan; with no previous result, the unedited scenario's, or its own).
//! Each input builds its own state: what was parsed once per scenario and
//! shared is never changed.
//!
//! Checked: nothing panics; (one input in sixteen) the live snapshot
//! patched to the edited rows equals a fresh build, and patched back equals
//! the scenario's; every plan keeps the ordering rules O1–O4
//! (`order_violations` is empty).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use arbitrary::{Result, Unstructured};
use obgp_config::Config;
use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::{LiveSnapshot, NbChanges, Snapshot, Tables};
use obgp_ovsdb_data::{Row, Uuid};
use obgp_pipeline::{
    node_facts, NodeReadings, ObserveFor, ObserveNode, Pipeline, PipelineError, PipelineInputs,
    PlanScope,
};
use obgp_plan::{order_violations, Actual};
use serde_json::Value;

use crate::mutate::{self, Pools};
use crate::rows::{self, DatumPool, Edits};
use crate::seeds;

/// Options an edit of the configuration may set, besides the scenario's own.
const OPTIONS: &[&str] = &[
    "driver",
    "exposing_method",
    "bgp_AS",
    "bgp_router_id",
    "bgp_nic",
    "bgp_vrf",
    "bgp_vrf_table_id",
    "expose_tenant_networks",
    "expose_ipv6_gua_tenant_networks",
    "advertisement_method_tenant_networks",
    "require_snat_disabled_for_tenant_networks",
    "address_scopes",
    "ovsdb_connection",
];

/// Values an edit of the configuration tries first.
const OPTION_VALUES: &[&str] = &[
    "nb_ovn_bgp_driver",
    "ovn_bgp_driver",
    "underlay",
    "vrf",
    "subnet",
    "host",
    "True",
    "False",
    "64999",
    "4294967295",
    "192.168.100.11",
    "0.0.0.0",
    "lo",
    "eth0",
    "br-ex",
    "bgp-nic",
    "bgp-vrf",
    "10",
    "0",
    "253",
    "254",
    "255",
];

/// One scenario, parsed and prepared once.
struct Base {
    ovn: Value,
    tables: FixtureDb,
    config_map: BTreeMap<String, Value>,
    config: Option<Config>,
    /// Node states: `initial_node`, every step's `node_after`, `final_node`.
    nodes: Vec<(Value, Option<Actual>)>,
    /// What the node facts are read from: the initial node's links and
    /// addresses, and the router-id its FRR reported.
    initial: Option<Actual>,
    router_id: Option<String>,
    /// The unedited scenario's snapshot.
    snapshot: Snapshot,
    pools: Pools,
}

/// The scenario's `config` (oslo names, dotted = group.option) through
/// the real loader, as the conformance runner reads it.
fn config_of(map: &BTreeMap<String, Value>) -> Option<Config> {
    let loader = obgp_config::Loader::new().json_overrides(map).ok()?;
    loader.load().ok().map(|l| l.config)
}

fn snapshot_of(db: &FixtureDb) -> Snapshot {
    let empty = Tables::new();
    let get = |name: &str| db.dbs.get(name).unwrap_or(&empty);
    Snapshot::build_with_sb(
        get(obgp_ovn::NB_DB),
        get(obgp_ovn::SB_DB),
        get(obgp_ovn::OVS_DB),
    )
}

fn bases() -> &'static [Base] {
    static BASES: OnceLock<Vec<Base>> = OnceLock::new();
    BASES.get_or_init(|| {
        seeds::scenarios()
            .iter()
            .filter_map(|(_, sc)| {
                let tables = FixtureDb::from_wire(&sc["ovn"]).ok()?;
                let config_map: BTreeMap<String, Value> =
                    serde_json::from_value(sc["config"].clone()).unwrap_or_default();
                let config = config_of(&config_map);
                let mut nodes = vec![sc["initial_node"].clone()];
                if let Some(steps) = sc["steps"].as_array() {
                    nodes.extend(steps.iter().map(|s| s["node_after"].clone()));
                }
                nodes.push(sc["final_node"].clone());
                let nodes: Vec<(Value, Option<Actual>)> = nodes
                    .into_iter()
                    .filter(Value::is_object)
                    .map(|v| {
                        let actual = serde_json::from_value(v.clone()).ok();
                        (v, actual)
                    })
                    .collect();
                let initial = serde_json::from_value(sc["initial_node"].clone()).ok();
                let router_id = sc["initial_node"]["frr"]["router_id_reported"]
                    .as_str()
                    .map(String::from);
                let snapshot = snapshot_of(&tables);
                let pools = Pools::harvest(
                    std::iter::once(&sc["ovn"])
                        .chain(nodes.iter().map(|(v, _)| v))
                        .chain(std::iter::once(&sc["config"])),
                );
                Some(Base {
                    ovn: sc["ovn"].clone(),
                    tables,
                    config_map,
                    config,
                    nodes,
                    initial,
                    router_id,
                    snapshot,
                    pools,
                })
            })
            .collect()
    })
}

impl Base {
    /// What the node facts are built from, as the conformance runner
    /// reads them.
    fn readings(&self) -> NodeReadings<'_> {
        NodeReadings {
            frr_router_id: self.router_id.as_deref(),
            ..self
                .initial
                .as_ref()
                .map(NodeReadings::of_node)
                .unwrap_or_default()
        }
    }

    /// The scenario's NB, SB and OVS tables.
    fn db_tables(&self) -> [&Tables; 3] {
        static EMPTY: OnceLock<Tables> = OnceLock::new();
        let empty = EMPTY.get_or_init(Tables::new);
        rows::DBS.map(|name| self.tables.dbs.get(name).unwrap_or(empty))
    }

    /// A live snapshot of the scenario's rows.
    fn live(&self) -> LiveSnapshot {
        let [nb, sb, ovs] = self.db_tables();
        let mut live = LiveSnapshot::default();
        live.reset_nb(nb);
        live.reset_sb(sb);
        live.reset_ovs(ovs);
        live
    }
}

/// The rows of `db` in `after` that differ from `before`, as the live
/// snapshot takes them (`None`: deleted).
fn changed_rows<'a>(
    before: &FixtureDb,
    after: &'a FixtureDb,
    db: &str,
) -> Vec<(&'a str, Uuid, Option<&'a Row>)> {
    let empty = Tables::new();
    let b = before.dbs.get(db).unwrap_or(&empty);
    // A database gone whole is covered by a reset (see the caller).
    let Some(a) = after.dbs.get(db) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (table, rows) in a {
        let old = b.get(table);
        for (uuid, row) in rows {
            if old.and_then(|t| t.get(uuid)) != Some(row) {
                out.push((table.as_str(), *uuid, Some(row)));
            }
        }
    }
    for (table, rows) in b {
        // Borrowed from `after` so every item lives as long as it.
        // A table gone whole is covered by a reset (see the caller).
        let Some((name, now)) = a.get_key_value(table.as_str()) else {
            continue;
        };
        for uuid in rows.keys() {
            if !now.contains_key(uuid) {
                out.push((name.as_str(), *uuid, None));
            }
        }
    }
    out
}

/// `ovn` (`{db: {table: {uuid: row}}}`) as databases, leaving out what
/// does not parse (a row with a bad datum, a bad uuid): the rest of an
/// edited database still reaches the snapshot builder.
fn lenient_db(ovn: &Value) -> FixtureDb {
    let mut out = FixtureDb::default();
    for (db, tables) in ovn.as_object().into_iter().flatten() {
        let mut parsed = Tables::new();
        for (table, rows) in tables.as_object().into_iter().flatten() {
            let rows = rows.as_object().into_iter().flatten();
            let t = rows
                .filter_map(|(u, r)| Some((Uuid::parse(u).ok()?, Row::from_wire(r).ok()?)))
                .collect();
            parsed.insert(table.clone(), t);
        }
        out.dbs.insert(db.clone(), parsed);
    }
    out
}

fn mutate_n(u: &mut Unstructured, doc: &mut Value, pools: &Pools, n: u8) -> Result<()> {
    for _ in 0..n {
        mutate::mutate(u, doc, pools)?;
    }
    Ok(())
}

/// How far an input went (the seeds must reach the planner).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// The bytes ran out, or the edited rows do not parse.
    Rejected,
    /// A snapshot was built; the config or `desired_state` refused.
    Snapshot,
    /// A desired state was computed; no node state to plan against.
    Desired,
    /// The planner ran (a plan, or a refusal such as a foreign device).
    Planned,
}

/// What one input led to: how far it went, the snapshot it built and the
/// plan it got (rendered; or the planner's refusal). Each input builds its
/// own state, so one input always leads to the same outcome, whatever ran
/// before it.
#[derive(Debug, PartialEq)]
pub struct Outcome {
    pub stage: Stage,
    pub snapshot: Option<Snapshot>,
    pub plan: Option<String>,
}

/// The harness: `data` chooses a scenario and a node state, then edits.
pub fn run(data: &[u8]) {
    run_observed(data);
}

/// [`run`], saying how far the input went.
pub fn run_to(data: &[u8]) -> Stage {
    run_observed(data).stage
}

/// [`run`], saying what the input led to.
pub fn run_observed(data: &[u8]) -> Outcome {
    let mut outcome = Outcome {
        stage: Stage::Rejected,
        snapshot: None,
        plan: None,
    };
    let _ = run_unstructured(&mut Unstructured::new(data), &mut outcome);
    outcome
}

/// Which scenario `data` chooses (its first choice), if any.
pub fn scenario_of(data: &[u8]) -> Option<usize> {
    Unstructured::new(data).choose_index(bases().len()).ok()
}

/// The scenario's snapshot with `n` typed row edits: a live snapshot of
/// the scenario's rows, built for this input alone, patched with them.
/// With `check`, it is also patched back, and both must equal fresh builds.
///
/// Built per input, never kept: a snapshot kept between inputs and patched
/// back after each would hand the next input whatever an input that
/// panicked half-way left in it, so a crash would depend on the inputs
/// before it and not reproduce alone.
fn row_edited_snapshot(u: &mut Unstructured, base: &Base, n: u8, check: bool) -> Result<Snapshot> {
    let tables = base.db_tables();
    let mut edits = Edits::new();
    for _ in 0..n {
        rows::edit(u, &tables, &mut edits, datum_pool(), &base.pools)?;
    }
    if edits.is_empty() {
        return Ok(base.snapshot.clone());
    }
    let row_of =
        |db: usize, table: &str, uuid: &Uuid| tables[db].get(table).and_then(|t| t.get(uuid));
    let of_db = |db: usize| {
        edits
            .iter()
            .filter(move |((d, _, _), _)| *d == db)
            .map(|((_, t, u), r)| (t.as_str(), *u, r.as_ref()))
    };
    let ovs_edited = edits.keys().any(|(d, _, _)| *d == 2);
    let mut live = base.live();
    live.apply_nb(of_db(0));
    live.apply_sb(of_db(1));
    if ovs_edited {
        live.reset_ovs(&rows::apply(&tables, &edits)[2]);
    }
    let snapshot = live.snapshot();
    if check {
        // Back to the scenario's rows.
        let back = |db: usize| {
            edits
                .keys()
                .filter(move |(d, _, _)| *d == db)
                .map(move |(d, t, u)| (t.as_str(), *u, row_of(*d, t, u)))
        };
        live.apply_nb(back(0));
        live.apply_sb(back(1));
        if ovs_edited {
            live.reset_ovs(tables[2]);
        }
        assert!(
            live.snapshot() == base.snapshot,
            "the live snapshot patched back to the scenario's rows differs from its build"
        );
        let [nb, sb, ovs] = rows::apply(&tables, &edits);
        assert!(
            Snapshot::build_with_sb(&nb, &sb, &ovs) == snapshot,
            "the live snapshot patched with the edited rows differs from a fresh build"
        );
    }
    Ok(snapshot)
}

/// The scenario's snapshot with `n` edits of its JSON (rows that no
/// longer parse are left out), built from scratch; with `check`, also
/// reached by patching the scenario's snapshot.
fn json_edited_snapshot(u: &mut Unstructured, base: &Base, n: u8, check: bool) -> Result<Snapshot> {
    let mut ovn = base.ovn.clone();
    mutate_n(u, &mut ovn, &base.pools, n)?;
    let db = &lenient_db(&ovn);
    let snapshot = snapshot_of(db);
    if check {
        let mut live = LiveSnapshot::default();
        let empty = Tables::new();
        let get = |d: &FixtureDb, name: &str| d.dbs.get(name).cloned().unwrap_or_default();
        let gone_table = |name: &str| {
            base.tables
                .dbs
                .get(name)
                .unwrap_or(&empty)
                .keys()
                .any(|t| !db.dbs.get(name).is_some_and(|now| now.contains_key(t)))
        };
        let nb_gone = gone_table(obgp_ovn::NB_DB);
        let sb_gone = gone_table(obgp_ovn::SB_DB);
        live.reset_nb(&get(
            if nb_gone { db } else { &base.tables },
            obgp_ovn::NB_DB,
        ));
        live.reset_sb(&get(
            if sb_gone { db } else { &base.tables },
            obgp_ovn::SB_DB,
        ));
        live.reset_ovs(&get(db, obgp_ovn::OVS_DB));
        if !nb_gone {
            live.apply_nb(changed_rows(&base.tables, db, obgp_ovn::NB_DB));
        }
        if !sb_gone {
            live.apply_sb(changed_rows(&base.tables, db, obgp_ovn::SB_DB));
        }
        assert!(
            live.snapshot() == snapshot,
            "the live snapshot patched with the edited rows differs from a fresh build"
        );
    }
    Ok(snapshot)
}

fn datum_pool() -> &'static DatumPool {
    static POOL: OnceLock<DatumPool> = OnceLock::new();
    POOL.get_or_init(|| DatumPool::harvest(bases().iter().flat_map(|b| b.tables.dbs.values())))
}

fn run_unstructured(u: &mut Unstructured, outcome: &mut Outcome) -> Result<()> {
    let bases = bases();
    let base = &bases[u.choose_index(bases.len())?];
    let node_index = u.choose_index(base.nodes.len().max(1))?;
    // Mostly typed row edits through a live snapshot (the agent's own
    // path); one input in eight edits the JSON instead, which
    // can break what typed edits cannot (tags, uuids, whole tables).
    let json_path = u.ratio(1, 8)?;
    let ovn_edits = u.int_in_range(0..=10)?;
    let node_edits = if u.ratio(1, 2)? {
        u.int_in_range(1..=6)?
    } else {
        0
    };
    let config_edits = if u.ratio(1, 8)? {
        u.int_in_range(1..=2)?
    } else {
        0
    };
    let previous_kind = u.int_in_range(0..=2)?;
    let check_live = u.ratio(1, 16)?;

    let snapshot = if json_path {
        json_edited_snapshot(u, base, ovn_edits, check_live)?
    } else {
        row_edited_snapshot(u, base, ovn_edits, check_live)?
    };
    outcome.stage = Stage::Snapshot;
    outcome.snapshot = Some(snapshot.clone());

    // The configuration, edited.
    let edited_config;
    let config = if config_edits == 0 {
        base.config.as_ref()
    } else {
        let mut map = base.config_map.clone();
        for _ in 0..config_edits {
            let key = if u.ratio(1, 2)? && !map.is_empty() {
                let i = u.choose_index(map.len())?;
                map.keys().nth(i).cloned().unwrap_or_default()
            } else {
                (*u.choose(OPTIONS)?).to_string()
            };
            let value = match u.int_in_range(0..=3)? {
                0 => Value::Null,
                1 => Value::String(mutate::string(u, &base.pools)?),
                _ => Value::String((*u.choose(OPTION_VALUES)?).to_string()),
            };
            map.insert(key, value);
        }
        edited_config = config_of(&map);
        edited_config.as_ref()
    };
    let Some(config) = config else {
        return Ok(());
    };

    let mut pipeline = Pipeline::default();
    // Not known at first; after the unedited computation, "nothing since
    // its snapshot", which the edited snapshot is only when nothing was
    // edited (another one is computed in full).
    let mut changes = NbChanges::Full;
    if let (1, Some(unedited)) = (previous_kind, &base.config) {
        // The unedited scenario's result, planned with and applied before.
        let facts = node_facts(unedited, &base.snapshot, base.readings());
        if pipeline
            .compute(&base.snapshot, &mut changes, unedited, &facts)
            .is_ok()
        {
            pipeline.settle();
        }
    }
    let facts = node_facts(config, &snapshot, base.readings());
    if previous_kind == 2 {
        // Its own result, applied before: the run is a second reconcile
        // of it (nothing changed since, patched from no port).
        if pipeline
            .compute(&snapshot, &mut changes, config, &facts)
            .is_err()
        {
            return Ok(());
        }
        pipeline.settle();
    }
    let inputs = PipelineInputs {
        snapshot: &snapshot,
        changes: &mut changes,
        config,
        facts: &facts,
    };
    let mut observer = EditedNode {
        u,
        base,
        node_index,
        node_edits,
        stage: &mut outcome.stage,
    };
    let run = pipeline.run_now(inputs, PlanScope::Whole, &mut observer);
    let plan = match run {
        Err(PipelineError::Desired(_) | PipelineError::Observe(_)) => return Ok(()),
        Err(PipelineError::Plan(refused)) => format!("refused: {refused}"),
        Ok(run) => {
            let violations = order_violations(&run.planned.plan.steps);
            assert!(
                violations.is_empty(),
                "a plan breaks the ordering rules: {violations:?}"
            );
            run.planned.plan.to_string()
        }
    };
    outcome.stage = Stage::Planned;
    outcome.plan = Some(plan);
    Ok(())
}

/// The harness's node observation, the pipeline's port: the scenario's
/// node state, edited by the input's bytes. Asked once the desired state
/// is computed, as the daemon's observer is; fails when the bytes run out
/// or the scenario has no node state to plan against.
struct EditedNode<'i, 'u, 'b> {
    u: &'i mut Unstructured<'u>,
    base: &'b Base,
    node_index: usize,
    node_edits: u8,
    stage: &'i mut Stage,
}

impl<'b> ObserveNode for EditedNode<'_, '_, 'b> {
    type Observed = Cow<'b, Actual>;
    type Error = ();

    async fn observe(&mut self, _: ObserveFor<'_>) -> Result<Cow<'b, Actual>, ()> {
        *self.stage = Stage::Desired;
        let base: &'b Base = self.base;
        let Some((node_value, node_actual)) = base.nodes.get(self.node_index) else {
            return Err(());
        };
        if self.node_edits == 0 {
            return node_actual.as_ref().map(Cow::Borrowed).ok_or(());
        }
        let mut node = node_value.clone();
        mutate_n(self.u, &mut node, &base.pools, self.node_edits).map_err(|_| ())?;
        match serde_json::from_value::<Actual>(node) {
            Ok(edited) => Ok(Cow::Owned(edited)),
            Err(_) => node_actual.as_ref().map(Cow::Borrowed).ok_or(()),
        }
    }
}

/// One input per (scenario, node state): the unedited scenario, then the
/// same with a fixed tail of edit bytes.
pub fn seed_inputs() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (b, base) in bases().iter().enumerate() {
        for n in 0..base.nodes.len() {
            out.push(vec![b as u8, n as u8, 0, 0, 0, 0]);
            let mut edited = vec![b as u8, n as u8, 5, 2, 1, 1];
            edited.extend((0u8..96).map(|i| i.wrapping_mul(37).wrapping_add(b as u8)));
            out.push(edited);
        }
    }
    out
}
