//! The agent's Prometheus metrics (docs/operations.md has the table).
//!
//! Updated once per reconcile from its [`ReconcileReport`] and trigger
//! batch, never per IP or per event: the reconcile loop pays a few dozen
//! atomic adds. What changes without a reconcile (a database connection,
//! its last update) is read when scraped. The exposed-IP counts walk the
//! desired state, so they are recounted only when the desired state
//! changed *and* a scrape asked since the last count
//! ([`Metrics::exposed_wanted`]): at most once per scrape interval, not
//! once per event.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use obgp_config::Config;
use obgp_desired::Desired;
use obgp_netmodel::Class;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

use super::report::{FrrOutcome, ReconcileReport};
use obgp_inputs::Trigger;
use obgp_inputs::TriggerBatch;

type Labels1 = [(&'static str, String); 1];
type Labels2 = [(&'static str, String); 2];
type Labels3 = [(&'static str, String); 3];
type F64Gauge = Gauge<f64, AtomicU64>;
type HistFamily = Family<Labels1, Histogram, fn() -> Histogram>;

/// The classes an exposed IP can have (`Base` is wiring, never an IP).
pub const EXPOSED_CLASSES: [Class; 6] = [
    Class::Gateway,
    Class::Subnet,
    Class::Lb,
    Class::Fip,
    Class::Vm,
    Class::TenantVm,
];

/// The reconcile phases the report times, as the `phase` label says them.
pub const PHASES: [&str; 5] = ["snapshot", "desired", "observe", "plan", "apply"];

/// How a reconcile ended, as the `outcome` label says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every planned op applied, nothing held back, FRR and OVS read.
    Converged,
    /// It ran, but ops failed, were held back, or FRR/OVS could not be read.
    Incomplete,
    /// It could not run (desired state, observe or plan failed).
    Error,
}

impl Outcome {
    /// The rule is [`super::probes::not_converged`]'s, which says why.
    pub fn of(report: &ReconcileReport) -> Outcome {
        match super::probes::not_converged(report) {
            None => Outcome::Converged,
            Some(_) => Outcome::Incomplete,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Converged => "converged",
            Outcome::Incomplete => "incomplete",
            Outcome::Error => "error",
        }
    }
}

/// Every metric of the agent, in one registry.
pub struct Metrics {
    registry: Registry,
    reconciles: Family<Labels2, Counter>,
    duration: Histogram,
    phases: HistFamily,
    ops: Family<Labels2, Counter>,
    planned: Gauge,
    withdrawals_held: Gauge,
    exposed: Family<Labels2, Gauge>,
    triggers: Family<Labels1, Counter>,
    queue_wait: HistFamily,
    db_connected: Family<Labels1, Gauge>,
    db_resumed_at_start: Family<Labels1, Gauge>,
    db_reconnects: Family<Labels1, Counter>,
    db_resyncs: Family<Labels2, Counter>,
    db_last_update: Family<Labels1, F64Gauge>,
    frr_applies: Family<Labels1, Counter>,
    frr_results: Family<Labels2, Counter>,
    frr_last_applied: F64Gauge,
    bgp_session_up: Family<Labels3, Gauge>,
    bgp_prefixes_sent: Family<Labels3, Gauge>,
    bgp_prefixes_received: Family<Labels3, Gauge>,
    bgp_sessions_read: F64Gauge,
    drift_repairs: Family<Labels1, Counter>,
    mass_holds: Counter,
    last_success: F64Gauge,
    /// A scrape asked for the exposed counts since they were last counted.
    exposed_wanted: AtomicBool,
    /// The desired state changed since the exposed counts were last counted.
    exposed_dirty: AtomicBool,
}

fn seconds_buckets() -> Histogram {
    // 0.5 ms .. ~33 s: an event's reconcile is milliseconds, a full one
    // at 50k ports about a second, a start-up apply at scale tens of seconds.
    Histogram::new(exponential_buckets(0.0005, 2.0, 17))
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The `reason` label of a trigger: its kind, never its details (an
/// event's class has a counter of its own; a database name is in the
/// `ovsdb_*` series).
pub fn reason_label(reason: &Trigger) -> &'static str {
    match reason {
        Trigger::Startup => "startup",
        Trigger::Event { .. } => "event",
        Trigger::Periodic => "periodic",
        Trigger::FrrCheck => "frr_check",
        Trigger::Resync { .. } => "resync",
        Trigger::NetlinkOverrun => "netlink_overrun",
        Trigger::Manual => "manual",
        Trigger::Retry => "retry",
        Trigger::Drift => "drift",
        Trigger::DesiredMismatch => "desired_mismatch",
        Trigger::CommandsSettled => "commands_settled",
        Trigger::UnnotifiedSideEffects => "unnotified_side_effects",
    }
}

/// `AddAddress` → `add_address`: the `kind` label of an op.
pub fn snake_case(kind: &str) -> String {
    let mut out = String::with_capacity(kind.len() + 4);
    for (i, c) in kind.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn class_label(class: Class) -> &'static str {
    match class {
        Class::Base => "base",
        Class::Gateway => "gateway",
        Class::Subnet => "subnet",
        Class::Lb => "lb",
        Class::Fip => "fip",
        Class::Vm => "vm",
        Class::TenantVm => "tenant_vm",
    }
}

/// The exposed IPs of `desired` by class and address family (`ipv4`,
/// `ipv6`): every announced IP, and the tenant subnets routed behind a
/// local gateway (class `subnet`). Under `exposing_method = dynamic`, the
/// decisions its EVPN networks carry count too, as in the other NB methods.
pub fn count_exposed(desired: &Desired) -> BTreeMap<(Class, &'static str), u64> {
    let family = |v6: bool| if v6 { "ipv6" } else { "ipv4" };
    let mut out = BTreeMap::new();
    let dynamic = desired.dynamic.as_ref();
    let evpn_exposed = dynamic.into_iter().flat_map(|d| d.evpn_exposed.values());
    let evpn_subnets = dynamic.into_iter().flat_map(|d| &d.evpn_subnets);
    for e in desired.exposed.values().chain(evpn_exposed) {
        *out.entry((e.class, family(e.ip.is_ipv6()))).or_default() += 1;
    }
    for s in desired.tenant_subnets.iter().chain(evpn_subnets) {
        *out.entry((Class::Subnet, family(s.net.addr().is_ipv6())))
            .or_default() += 1;
    }
    for r in desired.vrf_routes.values() {
        *out.entry((r.class, family(r.net.addr().is_ipv6())))
            .or_default() += 1;
    }
    out
}

/// Per database, what the scrape reads from its client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbStatus {
    pub database: &'static str,
    pub connected: bool,
    /// Completed syncs: the initial dump and one per reconnect.
    pub syncs: u64,
    /// Reconnects that resumed from the last transaction id.
    pub resumed: u64,
    /// The first sync resumed from the cache file (`state_dir`).
    pub resumed_at_start: bool,
}

impl Metrics {
    pub fn new(config: &Config) -> Metrics {
        let mut registry = Registry::with_prefix("ovn_bgp_agent");
        let build: Family<Labels3, Gauge> = Family::default();
        build
            .get_or_create(&[
                ("version", env!("CARGO_PKG_VERSION").to_string()),
                ("driver", config.default.driver.as_str().to_string()),
                (
                    "exposing_method",
                    config.default.exposing_method.as_str().to_string(),
                ),
            ])
            .set(1);
        registry.register(
            "build_info",
            "The agent's version, driver and exposing method (always 1)",
            build,
        );
        let m = Metrics {
            registry,
            reconciles: Family::default(),
            duration: seconds_buckets(),
            phases: Family::new_with_constructor(seconds_buckets),
            ops: Family::default(),
            planned: Gauge::default(),
            withdrawals_held: Gauge::default(),
            exposed: Family::default(),
            triggers: Family::default(),
            queue_wait: Family::new_with_constructor(seconds_buckets),
            db_connected: Family::default(),
            db_resumed_at_start: Family::default(),
            db_reconnects: Family::default(),
            db_resyncs: Family::default(),
            db_last_update: Family::default(),
            frr_applies: Family::default(),
            frr_results: Family::default(),
            frr_last_applied: F64Gauge::default(),
            bgp_session_up: Family::default(),
            bgp_prefixes_sent: Family::default(),
            bgp_prefixes_received: Family::default(),
            bgp_sessions_read: F64Gauge::default(),
            drift_repairs: Family::default(),
            mass_holds: Counter::default(),
            last_success: F64Gauge::default(),
            exposed_wanted: AtomicBool::new(false),
            exposed_dirty: AtomicBool::new(true),
        };
        // Series that exist from the start, at zero, so that a rate or an
        // absence alert works before the first occurrence.
        for class in EXPOSED_CLASSES {
            for family in ["ipv4", "ipv6"] {
                let _ = m.exposed.get_or_create(&[
                    ("class", class_label(class).into()),
                    ("family", family.into()),
                ]);
            }
        }
        for phase in PHASES {
            let _ = m.phases.get_or_create(&[("phase", phase.into())]);
        }
        for rule in ["merge_window", "rate_limit"] {
            let _ = m.queue_wait.get_or_create(&[("rule", rule.into())]);
        }
        for cause in ["initial", "changed", "missing"] {
            let _ = m.frr_applies.get_or_create(&[("cause", cause.into())]);
        }
        for text in ["ours", "removal"] {
            for outcome in ["applied", "rejected", "failed"] {
                let _ = m
                    .frr_results
                    .get_or_create(&[("text", text.into()), ("outcome", outcome.into())]);
            }
        }
        m.register_all()
    }

    fn register_all(mut self) -> Metrics {
        let r = &mut self.registry;
        r.register(
            "reconciles",
            "Reconciles by reason (each reason of a merged batch counts once) and outcome",
            self.reconciles.clone(),
        );
        r.register_with_unit(
            "reconcile_duration",
            "Wall time of a whole reconcile, from taking the batch to the end of the apply",
            Unit::Seconds,
            self.duration.clone(),
        );
        r.register_with_unit(
            "reconcile_phase_duration",
            "Wall time of each phase of a reconcile (snapshot, desired, observe, plan, apply)",
            Unit::Seconds,
            self.phases.clone(),
        );
        r.register(
            "ops",
            "Node ops by kind (add_address, apply_frr...) and outcome (applied, failed); command ops count when the command lane reports them",
            self.ops.clone(),
        );
        r.register(
            "ops_planned",
            "Ops in the plan of the last reconcile",
            self.planned.clone(),
        );
        r.register(
            "withdrawals_held",
            "Withdrawals the mass-withdrawal guard held back in the last reconcile",
            self.withdrawals_held.clone(),
        );
        r.register(
            "exposed_ips",
            "IPs and tenant subnets the desired state exposes, by class and address family",
            self.exposed.clone(),
        );
        r.register(
            "event_triggers",
            "OVSDB changes that matched an event filter, by event class (LocalOvsChange: the local Open_vSwitch database)",
            self.triggers.clone(),
        );
        r.register_with_unit(
            "queue_wait",
            "How long the work queue held a reconcile's first trigger back, by rule (merge_window, rate_limit)",
            Unit::Seconds,
            self.queue_wait.clone(),
        );
        r.register(
            "ovsdb_connected",
            "1 while the database's session is up and synced, 0 otherwise",
            self.db_connected.clone(),
        );
        r.register(
            "ovsdb_resumed_at_start",
            "1 when the first sync resumed from the cache file in state_dir (monitor_cond_since), 0 when it read the database whole",
            self.db_resumed_at_start.clone(),
        );
        r.register(
            "ovsdb_reconnects",
            "Syncs after a reconnect (the initial one not counted)",
            self.db_reconnects.clone(),
        );
        r.register(
            "ovsdb_resyncs",
            "Syncs after a reconnect by kind: full (a whole dump) or resumed (monitor_cond_since from the last transaction id)",
            self.db_resyncs.clone(),
        );
        r.register_with_unit(
            "ovsdb_last_update_timestamp",
            "Unix time of the last update received from the database",
            Unit::Seconds,
            self.db_last_update.clone(),
        );
        r.register(
            "frr_applies",
            "FRR texts handed to vtysh, by cause (initial, changed, missing: FRR lacked the text)",
            self.frr_applies.clone(),
        );
        r.register(
            "drift_repairs",
            "Ops repairing the node after it drifted from an unchanged desired state, by object (address, route, frr...)",
            self.drift_repairs.clone(),
        );
        r.register(
            "mass_withdrawal_holds",
            "Mass withdrawals the guard started holding (mass_withdrawal_grace)",
            self.mass_holds.clone(),
        );
        r.register(
            "frr_texts",
            "FRR texts the command lane finished, by text (ours, removal) and outcome (applied; rejected: FRR's parser refused it in the dry run and nothing was applied; failed: vtysh failed or timed out)",
            self.frr_results.clone(),
        );
        r.register_with_unit(
            "frr_last_applied_timestamp",
            "Unix time at which FRR last took a text of the agent's (0: none since start)",
            Unit::Seconds,
            self.frr_last_applied.clone(),
        );
        r.register(
            "bgp_session_up",
            "FRR's BGP sessions, by vrf, peer and family: 1 Established, 0 not (read at most once per frr_reconcile_interval; no series while FRR cannot be read)",
            self.bgp_session_up.clone(),
        );
        r.register(
            "bgp_prefixes_sent",
            "Prefixes FRR sent to each established peer, by vrf, peer and family",
            self.bgp_prefixes_sent.clone(),
        );
        r.register(
            "bgp_prefixes_received",
            "Prefixes FRR received from each established peer, by vrf, peer and family",
            self.bgp_prefixes_received.clone(),
        );
        r.register_with_unit(
            "bgp_sessions_read_timestamp",
            "Unix time of the last successful read of FRR's BGP sessions (0: none yet)",
            Unit::Seconds,
            self.bgp_sessions_read.clone(),
        );
        r.register_with_unit(
            "last_success_timestamp",
            "Unix time of the end of the last converged reconcile",
            Unit::Seconds,
            self.last_success.clone(),
        );
        self
    }

    /// Takes one finished reconcile: its batch (reasons, queue waits),
    /// its report (`None` when it failed), how long it took in total, and
    /// the guard's hold count so far.
    pub fn observe_reconcile(
        &self,
        batch: &TriggerBatch,
        report: Option<&ReconcileReport>,
        total: Duration,
        withdrawal_holds: u64,
    ) -> Outcome {
        let outcome = report.map_or(Outcome::Error, Outcome::of);
        let mut reasons: Vec<&'static str> = batch.reasons.keys().map(reason_label).collect();
        reasons.dedup();
        for reason in reasons {
            self.reconciles
                .get_or_create(&[
                    ("reason", reason.into()),
                    ("outcome", outcome.as_str().into()),
                ])
                .inc();
        }
        for (reason, n) in &batch.reasons {
            if let Trigger::Event { class, .. } = reason {
                self.triggers
                    .get_or_create(&[("class", (*class).into())])
                    .inc_by(*n as u64);
            }
        }
        self.queue_wait
            .get_or_create(&[("rule", "merge_window".into())])
            .observe(batch.window_wait.as_secs_f64());
        self.queue_wait
            .get_or_create(&[("rule", "rate_limit".into())])
            .observe(batch.rate_wait.as_secs_f64());
        self.duration.observe(total.as_secs_f64());
        let held = withdrawal_holds.saturating_sub(self.mass_holds.get());
        self.mass_holds.inc_by(held);
        let Some(r) = report else {
            return outcome;
        };
        let phases = [
            r.snapshot_time,
            r.desired_time,
            r.observe_time,
            r.plan_time,
            r.apply_time,
        ];
        for (phase, t) in PHASES.iter().zip(phases) {
            self.phases
                .get_or_create(&[("phase", (*phase).into())])
                .observe(t.as_secs_f64());
        }
        let ops = |kind: &str, outcome: &str, n: usize| {
            self.ops
                .get_or_create(&[("kind", snake_case(kind)), ("outcome", outcome.into())])
                .inc_by(n as u64);
        };
        for (kind, n) in r.applied.iter().chain(&r.commands_applied) {
            ops(kind, "applied", *n);
        }
        for (kind, n) in &r.failed_kinds {
            ops(kind, "failed", *n);
        }
        self.planned.set(r.planned as i64);
        self.withdrawals_held.set(r.withdrawals_held as i64);
        if let Some(cause) = r.frr_apply {
            self.frr_applies
                .get_or_create(&[("cause", cause.as_str().into())])
                .inc();
        }
        for f in &r.frr_results {
            let text = if f.removal { "removal" } else { "ours" };
            self.frr_results
                .get_or_create(&[
                    ("text", text.into()),
                    ("outcome", f.outcome.as_str().into()),
                ])
                .inc();
            if f.outcome == FrrOutcome::Applied {
                self.frr_last_applied.set(unix_now());
            }
        }
        for (object, n) in &r.drift_repairs {
            self.drift_repairs
                .get_or_create(&[("object", (*object).into())])
                .inc_by(*n as u64);
        }
        if r.desired_changed {
            self.exposed_dirty.store(true, Ordering::Relaxed);
        }
        if outcome == Outcome::Converged {
            self.last_success.set(unix_now());
        }
        outcome
    }

    /// Whether the exposed counts should be recounted now: the desired
    /// state changed since the last count and a scrape asked for them.
    pub fn exposed_wanted(&self) -> bool {
        self.exposed_dirty.load(Ordering::Relaxed) && self.exposed_wanted.load(Ordering::Relaxed)
    }

    /// Sets the exposed counts (every class and family; missing ones are 0).
    pub fn set_exposed(&self, counts: &BTreeMap<(Class, &'static str), u64>) {
        self.exposed_dirty.store(false, Ordering::Relaxed);
        self.exposed_wanted.store(false, Ordering::Relaxed);
        for class in EXPOSED_CLASSES {
            for family in ["ipv4", "ipv6"] {
                let n = counts.get(&(class, family)).copied().unwrap_or(0);
                self.exposed
                    .get_or_create(&[
                        ("class", class_label(class).into()),
                        ("family", family.into()),
                    ])
                    .set(n as i64);
            }
        }
    }

    /// A gauge to set to the Unix time of each update of `database`.
    pub fn db_update_clock(&self, database: &'static str) -> F64Gauge {
        self.db_last_update
            .get_or_create(&[("database", database.into())])
            .clone()
    }

    /// Takes the databases' state as read at scrape time.
    pub fn set_databases(&self, dbs: &[DbStatus]) {
        for db in dbs {
            let label = [("database", db.database.to_string())];
            self.db_connected
                .get_or_create(&label)
                .set(i64::from(db.connected));
            self.db_resumed_at_start
                .get_or_create(&label)
                .set(i64::from(db.resumed_at_start));
            let reconnects = db.syncs.saturating_sub(1);
            let resumed = db.resumed.min(reconnects);
            let full = reconnects - resumed;
            advance(&self.db_reconnects.get_or_create(&label), reconnects);
            let kind = |k: &str| [("database", db.database.to_string()), ("kind", k.into())];
            advance(&self.db_resyncs.get_or_create(&kind("full")), full);
            advance(&self.db_resyncs.get_or_create(&kind("resumed")), resumed);
        }
    }

    /// The exposition in Prometheus's text format (version 0.0.4), which
    /// every scraper and `promtool check metrics` read (see [`to_text_format`]).
    /// Replaces the per-peer series with what a read of FRR's sessions
    /// gave; `None` (FRR could not be read) leaves no series: unknown is
    /// not down. Prefix counts only for established sessions, as FRR's
    /// counts of a session that is down are stale.
    pub fn set_bgp_sessions(&self, sessions: Option<&[obgp_netmodel::frr::BgpSession]>) {
        self.bgp_session_up.clear();
        self.bgp_prefixes_sent.clear();
        self.bgp_prefixes_received.clear();
        let Some(sessions) = sessions else {
            return;
        };
        self.bgp_sessions_read.set(unix_now());
        for s in sessions {
            let labels = [
                ("vrf", s.vrf.clone()),
                ("peer", s.peer.clone()),
                ("family", s.family.clone()),
            ];
            self.bgp_session_up
                .get_or_create(&labels)
                .set(i64::from(s.established()));
            if !s.established() {
                continue;
            }
            if let Some(n) = s.prefixes_sent {
                self.bgp_prefixes_sent.get_or_create(&labels).set(n as i64);
            }
            if let Some(n) = s.prefixes_received {
                self.bgp_prefixes_received
                    .get_or_create(&labels)
                    .set(n as i64);
            }
        }
    }

    /// Marks the exposed counts as wanted.
    pub fn render(&self) -> String {
        self.exposed_wanted.store(true, Ordering::Relaxed);
        let mut open = String::new();
        prometheus_client::encoding::text::encode(&mut open, &self.registry)
            .expect("writing to a String cannot fail");
        to_text_format(&open)
    }
}

/// Raises a counter to `total` (a value the client counts itself).
fn advance(counter: &Counter, total: u64) {
    let now = counter.get();
    if total > now {
        counter.inc_by(total - now);
    }
}

/// The content type of [`Metrics::render`].
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// OpenMetrics text (what `prometheus-client` writes) to Prometheus's
/// text format 0.0.4, for the metric types this agent uses (counter,
/// gauge, histogram): a counter family is named with its `_total` suffix
/// in `# HELP`/`# TYPE` (OpenMetrics names the family without it, so
/// `promtool` and 0.0.4 parsers see samples without help or type), and
/// `# UNIT` and `# EOF` lines, which 0.0.4 lacks, are dropped.
pub fn to_text_format(open: &str) -> String {
    let mut counters = std::collections::HashSet::new();
    for line in open.lines() {
        if let Some(name) = line
            .strip_prefix("# TYPE ")
            .and_then(|rest| rest.strip_suffix(" counter"))
        {
            counters.insert(name.to_string());
        }
    }
    let mut out = String::with_capacity(open.len());
    for line in open.lines() {
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .into_iter()
            .find(|p| line.starts_with(p));
        if let Some(prefix) = meta {
            let rest = &line[prefix.len()..];
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            if counters.contains(name) {
                out.push_str(&format!("{prefix}{name}_total {tail}\n"));
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
