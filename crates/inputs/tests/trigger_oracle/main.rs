//! Trigger completeness, judged by the daemon's own code.
//!
//! For every driver and exposing method (NB underlay, vrf, dynamic, ovn, each with
//! both NB monitor modes; SB underlay, EVPN, stretched L2), a seeded
//! topogen topology sits in real ovsdb-servers (the SB one compiled by a
//! real ovn-northd, `sb.rs`) and a seeded random sequence of changes is
//! committed to it (`nb.rs`, `sb.rs`: binds, unbinds, migrations, gateway
//! moves, FIP, LB and NAT changes, annotations, port types, deletes).
//! Two agents' inputs follow the servers:
//! - the *truth*: an [`OvnSources`] monitoring everything, whose snapshot
//!   goes through `obgp-pipeline` after every change;
//! - the *agent*: the daemon's input path in the mode under test: its
//!   [`OvnSources`] (conditions included), its event filters
//!   ([`obgp_inputs::event_filter`] with [`Filters::for_config`]) judging
//!   the real monitor's changes against its [`FilterView`], which is
//!   rebuilt, as the run loop does, only after a reconcile (when a trigger
//!   fired, or after a miss, as the periodic reconcile would); and, as the
//!   run loop, a `LocalOvsChange` trigger for every change of the local
//!   OVS ([`obgp_inputs::every_change`]: a VIF plugged here).
//!
//! After each change: if the truth's desired state differs from the one
//! before, the agent must have queued a trigger for it (a *miss* fails the
//! test); a trigger for a change that left the desired state alone is a
//! *wasted* reconcile, counted and reported. A failure prints the seed,
//! the change and the difference. The test's only own piece on the path
//! is a pass-through of the monitor's change stream (so that it knows when
//! the filters have judged everything up to a change).
//!
//! `TRIGGER_ORACLE_STEPS` (changes per run, default 60) and
//! `TRIGGER_ORACLE_SEEDS` (runs per combination, default 4 for the NB
//! driver, 1 for the SB ones) make a longer run; `TRIGGER_ORACLE_SEED`
//! sets the first seed (default 1); `TRIGGER_ORACLE_TRACE` prints every
//! change with its triggers. Figures in docs/reliability.md ("Trigger
//! completeness").

mod nb;
mod sb;

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use obgp_config::Config;
use obgp_events::Filters;
use obgp_inputs::{
    FilterView, OvnSources, ReconcileInputs, Trigger, TriggerSink, LOCAL_OVS_CHANGE,
};
use obgp_ovn::NbChanges;
use obgp_ovsdb_data::{Change, ChangeKind, DbSnapshot, Row, Uuid};
use obgp_pipeline::{node_facts, NodeReadings, Pipeline};
use obgp_topogen::Rng;
use tokio::sync::{broadcast, watch};

pub const HOSTS: usize = 3;
/// This node: `host-000` / `chassis-000`.
pub const HOSTNAME: &str = "host-000";

pub fn host(i: usize) -> String {
    format!("host-{i:03}")
}

pub fn chassis(i: usize) -> String {
    format!("chassis-{i:03}")
}

/// The fabric bridge of `exposing_method = ovn` as the node's kernel
/// would report it (the other modes do not read it).
fn fabric_bridge() -> obgp_desired::LocalFacts {
    let br_fab = obgp_desired::BridgeFacts {
        mac: Some("fa:16:3e:ff:00:01".parse().expect("a MAC")),
        addrs: vec!["100.64.1.9/30".parse().expect("a prefix")],
    };
    obgp_desired::LocalFacts {
        bridges: [("br-fab".to_string(), br_fab)].into(),
    }
}

/// The triggers the agent's filters queued.
#[derive(Clone, Default)]
struct Recorded(Arc<Mutex<Vec<Trigger>>>);

impl TriggerSink for Recorded {
    fn trigger(&self, reason: Trigger) -> bool {
        self.0.lock().unwrap().push(reason);
        true
    }
}

impl Recorded {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
            .iter()
            .map(|t| match t {
                Trigger::Event { class, table } => format!("{class} ({table})"),
                other => format!("{other:?}"),
            })
            .collect()
    }
}

/// One agent's inputs and the desired state its last computation gave.
struct Agent {
    sources: OvnSources,
    config: Config,
    pipeline: Pipeline,
    changes: NbChanges,
}

impl Agent {
    async fn start(config: &Config) -> Agent {
        let sources = OvnSources::start(config, Duration::from_secs(20))
            .await
            .expect("sources");
        sources
            .wait_synced(Duration::from_secs(20))
            .await
            .expect("synced");
        Agent {
            sources,
            config: config.clone(),
            pipeline: Pipeline::default(),
            changes: NbChanges::Full,
        }
    }

    /// What the daemon's reconcile reads and computes: the converged
    /// inputs through the pipeline. Returns the inputs.
    async fn reconcile(&mut self) -> ReconcileInputs {
        let mut inputs = self
            .sources
            .converged_inputs()
            .await
            .expect("converged inputs");
        self.changes.then(std::mem::take(&mut inputs.changes));
        let facts = node_facts(
            &self.config,
            &inputs.snapshot,
            NodeReadings {
                system_hostname: Some(HOSTNAME),
                bridge_facts: Some(&fabric_bridge()),
                ..NodeReadings::default()
            },
        );
        self.pipeline
            .compute(&inputs.snapshot, &mut self.changes, &self.config, &facts)
            .expect("desired state");
        self.pipeline.settle();
        inputs
    }

    /// The desired state (without its notes, which are diagnostics and
    /// ask for no reconcile) and its node objects, as text for a diff.
    fn desired(&self) -> String {
        let mut desired = self.pipeline.desired().expect("computed").clone();
        desired.notes.clear();
        format!(
            "{desired:#?}\n{:#?}",
            self.pipeline.node().expect("computed")
        )
    }
}

/// The agent under test: its inputs, its filters' view and what they queued.
struct Daemon {
    agent: Agent,
    view: watch::Sender<Arc<FilterView>>,
    recorded: Recorded,
    /// The filters' input: the monitor's changes, passed through.
    feed: broadcast::Sender<Change>,
    /// The monitor's changes, drained into `feed` by [`Daemon::judged`].
    monitor: broadcast::Receiver<Change>,
    /// The changes of the last step, for a miss's report.
    last: Vec<String>,
    /// The local OVS monitor's changes, passed through to `ovs_feed`, which
    /// the daemon's `every_change` watcher reads.
    ovs_monitor: broadcast::Receiver<Change>,
    ovs_feed: broadcast::Sender<Change>,
}

/// A table no filter knows: its change, sent after a step's, tells when
/// the filter task has judged the step's changes.
const SENTINEL: &str = "Oracle_Sentinel";

impl Daemon {
    async fn start(config: &Config) -> Daemon {
        let mut agent = Agent::start(config).await;
        // What the start-up reconcile's condition changes bring is judged
        // (and dropped) with step 0.
        let monitor = agent.sources.ovn.changes();
        let ovs_monitor = agent.sources.ovs.changes();
        let inputs = agent.reconcile().await;
        let view0 = Self::view_of(&agent, inputs, None);
        let (view, view_rx) = watch::channel(Arc::new(view0));
        let recorded = Recorded::default();
        let (feed, feed_rx) = broadcast::channel(1 << 16);
        obgp_inputs::event_filter(
            feed_rx,
            Filters::for_config(&config.default),
            view_rx,
            recorded.clone(),
        );
        let (ovs_feed, ovs_feed_rx) = broadcast::channel(1 << 12);
        obgp_inputs::every_change(
            ovs_feed_rx,
            LOCAL_OVS_CHANGE,
            obgp_ovn::OVS_DB,
            recorded.clone(),
        );
        Daemon {
            agent,
            view,
            recorded,
            feed,
            monitor,
            last: Vec::new(),
            ovs_monitor,
            ovs_feed,
        }
    }

    fn view_of(
        agent: &Agent,
        inputs: ReconcileInputs,
        previous: Option<&FilterView>,
    ) -> FilterView {
        let chassis = obgp_desired::chassis_name(&agent.config, &inputs.snapshot, Some(HOSTNAME))
            .unwrap_or_default()
            .to_string();
        let exposed = agent.pipeline.exposed_ips();
        let snap = Arc::new(inputs.snapshot);
        match previous {
            Some(p) => FilterView::after(p, inputs.raw_ovn, snap, chassis, exposed),
            None => FilterView::new(inputs.raw_ovn, snap, chassis, exposed),
        }
    }

    /// Hands the filters every change the monitor delivered up to step
    /// `step` (drained with the cache that holds it), and waits until they
    /// judged them all: a sentinel sent after them was received.
    async fn judged(&mut self, world: &dyn World, step: usize) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let cache = self.agent.sources.ovn.client.cache();
        self.last.clear();
        loop {
            let (feed, last) = (&self.feed, &mut self.last);
            let db = cache.drain_then_snapshot(&mut self.monitor, |c| match c {
                Ok(c) => {
                    last.push(format!(
                        "{:?} {} {} new={:?} old={:?}",
                        c.kind, c.table, c.uuid, c.new, c.old
                    ));
                    feed.send(c).expect("the filters listen");
                }
                Err(lost) => panic!("the pass-through lagged by {lost} changes"),
            });
            if world.landed(&db, step) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "step {step} never reached the agent's cache"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let sentinel = Change {
            table: Arc::from(SENTINEL),
            uuid: Uuid(0),
            kind: ChangeKind::Insert,
            new: Some(Arc::new(Row::default())),
            old: None,
        };
        self.feed.send(sentinel).expect("the filters listen");
        while !self.feed.is_empty() {
            assert!(Instant::now() < deadline, "the filters are stuck");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // The filter task judges a change whole before receiving the next,
        // so every change before the sentinel was judged.
        self.ovs_judged(world, step, deadline).await;
    }

    /// Hands the local OVS watcher every change its monitor delivered up
    /// to step `step`, and waits until it queued a trigger for each (it
    /// queues exactly one a change).
    async fn ovs_judged(&mut self, world: &dyn World, step: usize, deadline: Instant) {
        let cache = self.agent.sources.ovs.client.cache();
        let mut sent = 0;
        loop {
            let (feed, last) = (&self.ovs_feed, &mut self.last);
            let db = cache.drain_then_snapshot(&mut self.ovs_monitor, |c| match c {
                Ok(c) => {
                    last.push(format!("local OVS: {:?} {} {}", c.kind, c.table, c.uuid));
                    feed.send(c).expect("the OVS watcher listens");
                    sent += 1;
                }
                Err(lost) => panic!("the OVS pass-through lagged by {lost} changes"),
            });
            if world.ovs_landed(&db) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "step {step} never reached the agent's local OVS cache"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let queued = |r: &Recorded| {
            r.0.lock()
                .unwrap()
                .iter()
                .filter(|t| matches!(t, Trigger::Event { class, .. } if *class == LOCAL_OVS_CHANGE))
                .count()
        };
        while queued(&self.recorded) < sent {
            assert!(Instant::now() < deadline, "the OVS watcher is stuck");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// A reconcile: new inputs, new desired state, the filters' next view.
    async fn reconcile(&mut self) {
        let inputs = self.agent.reconcile().await;
        let previous = self.view.borrow().clone();
        let view = Self::view_of(&self.agent, inputs, Some(&previous));
        self.view.send_replace(Arc::new(view));
    }
}

/// One driver/mode combination.
pub struct Combo {
    pub name: &'static str,
    pub config: Config,
    /// Conditional NB monitoring for the agent under test.
    pub conditional: bool,
    /// Whether the topology's changes move this combination's desired
    /// state at all (checked, so that a run proving nothing fails).
    pub moves: bool,
    /// Runs (seeds) without `TRIGGER_ORACLE_SEEDS`: the SB worlds, with
    /// northd and a process per transaction, cost ten times more a change.
    pub seeds: usize,
}

/// What a world (the servers with a topology) offers the runner.
pub trait World {
    /// The config with the servers' remotes filled in.
    fn config(&self, base: &Config) -> Config;
    /// Commits one random change and returns its description, or `None`
    /// when the topology has nothing to change for that draw. `db` is the
    /// truth's cache.
    fn change(&mut self, rng: &mut Rng, db: &DbSnapshot, step: usize) -> Option<String>;
    /// Whether `db` (a cache of the driver's database) holds step `step`.
    fn landed(&self, db: &DbSnapshot, step: usize) -> bool;
    /// Whether `ovs` (a cache of the local OVS) holds every step so far;
    /// for worlds whose changes touch only the OVN database, always.
    fn ovs_landed(&self, _ovs: &DbSnapshot) -> bool {
        true
    }
}

#[derive(Default, Debug, Clone, Copy)]
pub struct Figures {
    pub changes: usize,
    pub desired_changes: usize,
    pub missed: usize,
    pub wasted: usize,
}

impl fmt::Display for Figures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "changes {}, desired changes {}, missed triggers {}, wasted triggers {}",
            self.changes, self.desired_changes, self.missed, self.wasted
        )
    }
}

async fn landed(agent: &Agent, world: &dyn World, step: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !world.landed(&agent.sources.ovn.client.cache().snapshot(), step)
        || !world.ovs_landed(&agent.sources.ovs.client.cache().snapshot())
    {
        assert!(
            Instant::now() < deadline,
            "step {step} never reached the cache"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A line-by-line difference of two texts, the changed lines only.
fn diff(before: &str, after: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
    let gone: Vec<String> = a
        .iter()
        .filter(|l| !b.contains(l))
        .map(|l| format!("- {l}"))
        .collect();
    let came: Vec<String> = b
        .iter()
        .filter(|l| !a.contains(l))
        .map(|l| format!("+ {l}"))
        .collect();
    gone.into_iter()
        .chain(came)
        .take(40)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `steps` random changes on `world` for `combo`; returns the figures
/// and the misses (seed, step, change, triggers, diff).
pub async fn run(
    combo: &Combo,
    world: &mut dyn World,
    seed: u64,
    steps: usize,
) -> (Figures, Vec<String>) {
    let config = world.config(&combo.config);
    let mut truth_config = config.clone();
    truth_config.default.ovn_nb_monitor_all = true;
    let mut agent_config = config;
    agent_config.default.ovn_nb_monitor_all = !combo.conditional;
    let mut truth = Agent::start(&truth_config).await;
    let mut daemon = Daemon::start(&agent_config).await;
    assert_eq!(
        daemon.agent.sources.conditions_sent_to_server(),
        combo.conditional
    );
    landed(&truth, world, 0).await;
    truth.reconcile().await;
    let mut before = truth.desired();
    daemon.judged(world, 0).await;
    daemon.recorded.take();
    let mut rng = Rng(seed);
    let mut figures = Figures::default();
    let mut misses = Vec::new();
    let mut step = 0;
    let mut draws = 0;
    while step < steps && draws < steps * 4 {
        draws += 1;
        let db = truth.sources.ovn.client.cache().snapshot();
        let Some(what) = world.change(&mut rng, &db, step + 1) else {
            continue;
        };
        step += 1;
        landed(&truth, world, step).await;
        truth.reconcile().await;
        let after = truth.desired();
        daemon.judged(world, step).await;
        let triggers = daemon.recorded.take();
        figures.changes += 1;
        let changed = after != before;
        if std::env::var_os("TRIGGER_ORACLE_TRACE").is_some() {
            eprintln!("{} seed {seed} step {step}: {what}: desired changed {changed}, triggers {triggers:?}", combo.name);
        }
        if changed {
            figures.desired_changes += 1;
        }
        match (changed, triggers.is_empty()) {
            (true, true) => {
                figures.missed += 1;
                misses.push(format!(
                    "{} seed {seed} step {step}: {what}\n  the agent's monitor delivered: {:?}\n  no trigger; the desired state changed:\n{}",
                    combo.name,
                    daemon.last,
                    diff(&before, &after)
                ));
            }
            (false, false) => figures.wasted += 1,
            _ => {}
        }
        // The daemon reconciles on a trigger; after a miss the periodic
        // reconcile would, and the run goes on from there.
        if changed || !triggers.is_empty() {
            daemon.reconcile().await;
            let got = daemon.agent.desired();
            assert!(
                got == after,
                "{} seed {seed} step {step}: {what}\n  the agent's reconcile computed another desired state:\n{}",
                combo.name,
                diff(&after, &got)
            );
        }
        before = after;
    }
    (figures, misses)
}

/// Every row of `server`'s tables as a cache snapshot (the same wire
/// decoding as the agent's caches).
pub fn wire_snapshot(server: &obgp_testbed::ovsdb::OvsdbServer, schema_file: &str) -> DbSnapshot {
    let schema = std::sync::Arc::new(
        obgp_ovsdb_data::DatabaseSchema::from_file(obgp_testbed::ovsdb::schema_path(schema_file))
            .expect("schema"),
    );
    let tables: Vec<String> = schema.tables.keys().cloned().collect();
    let mut updates = serde_json::Map::new();
    for table in &tables {
        let mut rows = serde_json::Map::new();
        for mut row in server.select_all(table).expect("select") {
            let uuid = row["_uuid"][1].as_str().unwrap_or_default().to_string();
            let obj = row.as_object_mut().expect("a row");
            obj.remove("_uuid");
            obj.remove("_version");
            rows.insert(uuid, serde_json::json!({"initial": obj}));
        }
        updates.insert(table.clone(), serde_json::Value::Object(rows));
    }
    let updates: obgp_ovsdb_data::wire::TableUpdates =
        serde_json::from_value(serde_json::Value::Object(updates)).expect("wire updates");
    let empty = DbSnapshot::empty(schema, tables.iter().map(String::as_str));
    empty.apply(updates).expect("rows apply").0
}

/// The run's size from the environment.
pub struct Size {
    pub steps: usize,
    pub seeds: usize,
    pub first_seed: u64,
}

impl Size {
    /// `TRIGGER_ORACLE_SEEDS` or `seeds`.
    pub fn from_env(seeds: usize) -> Size {
        let var = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
        Size {
            steps: var("TRIGGER_ORACLE_STEPS").unwrap_or(60) as usize,
            seeds: var("TRIGGER_ORACLE_SEEDS").map_or(seeds, |s| s as usize),
            first_seed: var("TRIGGER_ORACLE_SEED").unwrap_or(1),
        }
    }
}

/// Runs every seed of `size` for `combo` on worlds from `make`; panics with
/// every miss.
pub fn check(combo: Combo, make: impl Fn(u64) -> Box<dyn World>) {
    let size = Size::from_env(combo.seeds);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut total = Figures::default();
    let mut misses = Vec::new();
    for i in 0..size.seeds {
        let seed = size.first_seed + i as u64;
        let mut world = make(seed);
        let (f, m) = rt.block_on(run(&combo, world.as_mut(), seed, size.steps));
        total.changes += f.changes;
        total.desired_changes += f.desired_changes;
        total.missed += f.missed;
        total.wasted += f.wasted;
        misses.extend(m);
    }
    println!("trigger oracle {}: {total}", combo.name);
    assert!(
        !combo.moves || total.desired_changes > 0,
        "{}: no change moved the desired state",
        combo.name
    );
    assert!(
        misses.is_empty(),
        "{} missed triggers:\n{}\n(one seed again: TRIGGER_ORACLE_SEED=<seed> TRIGGER_ORACLE_SEEDS=1 \
         TRIGGER_ORACLE_STEPS={} TRIGGER_ORACLE_TRACE=1 cargo test -p obgp-inputs --test trigger_oracle)",
        combo.name,
        misses.join("\n"),
        size.steps
    );
}
