//! Every option of the registry at its limits: the configuration accepts
//! exactly the documented range, and every value it accepts runs in the
//! daemon's own timers, deadlines, probe bounds and guard without a panic.
//!
//! The walk iterates `obgp_config::options::OPTIONS`, so an option added to
//! the registry is covered without touching this file. The timers are the
//! daemon's ([`LoopTimers::for_config`], [`LoopTimers::spawn`]) on the
//! daemon's work queue, in tokio's paused time.

use std::time::Duration;

use obgp_config::options::{Kind, OptSpec, OPTIONS};
use obgp_config::{Config, ConfigError, Loader};
use obgp_controller::guard::{Sample, Verdict, WithdrawalGuard};
use obgp_controller::{LoopTimers, QueueConfig, Trigger, WorkQueue};

/// The values tried for an option: its bounds, one past each, zero,
/// negative, the integer limits and beyond.
fn extremes(kind: Kind) -> Vec<String> {
    let around = |min: i128, max: i128| {
        let mut v: Vec<i128> = vec![
            min,
            max,
            0,
            -1,
            min - 1,
            max + 1,
            i64::MAX.into(),
            i64::MIN.into(),
            i128::from(u64::MAX),
        ];
        v.sort_unstable();
        v.dedup();
        let mut v: Vec<String> = v.into_iter().map(|i| i.to_string()).collect();
        v.push("99999999999999999999999999999".into());
        v
    };
    match kind {
        Kind::Int { min, max } => around(min.into(), max.into()),
        Kind::TableId => {
            let mut v = around(1, u32::MAX.into());
            v.extend(["252", "253", "254", "255", "256"].map(String::from));
            v
        }
        // Not numbers: the empty value and a long one.
        _ => vec![String::new(), "x".repeat(65536)],
    }
}

/// Whether the registry documents `raw` as a valid value of a numeric
/// option (`None`: not a numeric option, any answer is fine as long as
/// nothing panics).
fn documented(kind: Kind, raw: &str) -> Option<bool> {
    let n: Option<i128> = raw.parse().ok();
    match kind {
        Kind::Int { min, max } => {
            Some(n.is_some_and(|n| (i128::from(min)..=i128::from(max)).contains(&n)))
        }
        Kind::TableId => {
            Some(n.is_some_and(|n| {
                (1..=i128::from(u32::MAX)).contains(&n) && !(253..=255).contains(&n)
            }))
        }
        _ => None,
    }
}

fn load(settings: &[(&OptSpec, String)]) -> Result<Config, ConfigError> {
    let mut loader = Loader::new();
    for (spec, value) in settings {
        loader = loader.cli_override(spec.section, spec.name, value);
    }
    loader.load().map(|l| l.config)
}

/// The daemon's timers for `config`, run for two periods of the longer
/// one in paused time: both fire, no task panics. The probe bounds, the
/// one-shot sync timeout, the command deadlines and the withdrawal
/// guard are exercised with the same values.
async fn run_timers(config: &Config, what: &str) {
    let timers = LoopTimers::for_config(config);
    let d = &config.default;
    // An accepted value is used as written, never silently changed.
    assert_eq!(
        timers.periodic,
        Duration::from_secs(d.reconcile_interval),
        "{what}"
    );
    assert_eq!(
        timers.frr_check,
        Duration::from_secs(d.frr_reconcile_interval),
        "{what}"
    );
    assert_eq!(
        timers.sync_timeout,
        Duration::from_secs(d.ovsdb_connection_timeout),
        "{what}"
    );
    assert_eq!(
        timers.vtysh_deadline,
        Duration::from_secs(d.vtysh_timeout),
        "{what}"
    );
    assert_eq!(
        timers.ovs_deadline,
        Duration::from_secs(d.ovs_ofctl_timeout),
        "{what}"
    );
    assert!(
        timers.probes.idle_after >= timers.periodic.min(timers.frr_check).saturating_mul(3),
        "{what}: the liveness bound allows three timer periods: {:?}",
        timers.probes
    );

    let (sched, mut queue) = WorkQueue::new(QueueConfig::default());
    let handles = timers.spawn(&sched);
    // The timer tasks start counting when first polled.
    tokio::task::yield_now().await;
    let (mut periodic, mut frr) = (0, 0);
    // Each step a little past a period (timers round up to the next
    // millisecond); the timers delay missed ticks, so a long step fires a
    // short timer once, not once per period.
    let past = Duration::from_millis(10);
    for _ in 0..2 {
        for step in [timers.periodic, timers.frr_check] {
            tokio::time::advance(step + past).await;
            // Let the timer tasks run and take what they queued.
            while let Ok(Some(batch)) = tokio::time::timeout(past, queue.next()).await {
                periodic += batch.reasons.get(&Trigger::Periodic).copied().unwrap_or(0);
                frr += batch.reasons.get(&Trigger::FrrCheck).copied().unwrap_or(0);
            }
        }
    }
    for h in handles {
        assert!(!h.is_finished(), "{what}: a timer task ended (panicked)");
        h.abort();
    }
    assert!(
        periodic >= 2 && frr >= 2,
        "{what}: periodic fired {periodic}, FRR check {frr} times"
    );

    let waited = tokio::time::Instant::now();
    let never = tokio::time::timeout(timers.sync_timeout, std::future::pending::<()>()).await;
    assert!(never.is_err(), "{what}");
    assert_eq!(waited.elapsed(), timers.sync_timeout, "{what}");

    for deadline in [timers.vtysh_deadline, timers.ovs_deadline] {
        obgp_node::deadline::run(std::process::Command::new("true"), "true", deadline)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
    }

    // A mass withdrawal held at start, judged again once the grace is over.
    let mut guard = WithdrawalGuard::new(timers.guard);
    let emptied = Sample {
        announced: 100,
        withdrawals: 100,
        rows: 0,
    };
    let t0 = std::time::Instant::now();
    let first = guard.judge(emptied, t0);
    let later = guard.judge(emptied, t0 + timers.guard.grace);
    if timers.guard.grace.is_zero() {
        assert_eq!((first, later), (Verdict::Apply, Verdict::Apply), "{what}");
    } else {
        assert!(
            matches!(first, Verdict::Hold { first: true, .. }),
            "{what}: {first:?}"
        );
        assert!(
            matches!(later, Verdict::Release { .. }),
            "{what}: {later:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn every_option_at_its_limits_is_refused_or_runs_in_the_daemons_timers() {
    let mut accepted = 0;
    for spec in OPTIONS {
        for raw in extremes(spec.kind) {
            let shown = if raw.len() > 40 {
                format!("{}... ({} bytes)", &raw[..20], raw.len())
            } else {
                raw.clone()
            };
            let what = format!("[{}] {} = {shown}", spec.section, spec.name);
            match (load(&[(spec, raw.clone())]), documented(spec.kind, &raw)) {
                (Ok(config), Some(true) | None) => {
                    accepted += 1;
                    run_timers(&config, &what).await;
                }
                (Ok(_), Some(false)) => panic!("{what}: accepted, outside the documented range"),
                (Err(ConfigError::Invalid(v)), Some(false) | None) => {
                    assert!(
                        v.iter().any(|v| v.section == spec.section
                            && v.option == spec.name
                            && v.value == raw),
                        "{what}: refused without naming the option and value: {v:?}"
                    );
                }
                (Err(e), Some(true)) => panic!("{what}: refused inside the documented range: {e}"),
                (Err(e), _) => panic!("{what}: {e}"),
            }
        }
    }
    assert!(accepted > OPTIONS.len(), "{accepted} accepted cases");
}

/// Every numeric option at once at its largest accepted value, then at
/// its smallest: the timers run with both.
#[tokio::test(start_paused = true)]
async fn every_numeric_option_at_once_at_its_largest_and_smallest_value_runs() {
    for largest in [false, true] {
        let pick = |min: i64, max: i64| if largest { max } else { min };
        let settings: Vec<(&OptSpec, String)> = OPTIONS
            .iter()
            .filter_map(|spec| match spec.kind {
                Kind::Int { min, max } => Some((spec, pick(min, max).to_string())),
                Kind::TableId => Some((spec, pick(1, u32::MAX.into()).to_string())),
                _ => None,
            })
            .collect();
        let what: Vec<String> = settings
            .iter()
            .map(|(spec, v)| format!("[{}] {} = {v}", spec.section, spec.name))
            .collect();
        let what = what.join(", ");
        let config = load(&settings).unwrap_or_else(|e| panic!("{what}: {e}"));
        run_timers(&config, &what).await;
    }
}
