//! Every duration the agent takes from its configuration, built in one
//! place ([`LoopTimers::for_config`]): the run loop, the one-shot commands
//! and the binary's command deadlines use it, and so does the test that
//! walks every option of the registry at its limits
//! (`tests/config_limits.rs`), so what it proves holds for the daemon.

use std::time::Duration;

use obgp_config::Config;

use crate::guard::GuardConfig;
use crate::inputs::Trigger;
use crate::ops::ProbeBounds;
use crate::queue::Scheduler;

/// The durations the configuration sets, as the runtime uses them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopTimers {
    /// `reconcile_interval`: the periodic reconcile.
    pub periodic: Duration,
    /// `frr_reconcile_interval`: the FRR check.
    pub frr_check: Duration,
    /// `ovsdb_connection_timeout`: how long the one-shot commands wait for
    /// the databases' initial dumps.
    pub sync_timeout: Duration,
    /// `vtysh_timeout`: the deadline of one `vtysh` run.
    pub vtysh_deadline: Duration,
    /// `ovs_ofctl_timeout`: the deadline of one `ovs-ofctl`/`ovs-vsctl` run.
    pub ovs_deadline: Duration,
    /// The liveness probe's bounds, which follow the two periods.
    pub probes: ProbeBounds,
    /// `mass_withdrawal_grace` and `mass_withdrawal_percent`.
    pub guard: GuardConfig,
}

impl LoopTimers {
    /// The durations `config` asks for.
    pub fn for_config(config: &Config) -> LoopTimers {
        let d = &config.default;
        LoopTimers {
            periodic: seconds(d.reconcile_interval),
            frr_check: seconds(d.frr_reconcile_interval),
            sync_timeout: seconds(d.ovsdb_connection_timeout),
            vtysh_deadline: Duration::from_secs(d.vtysh_timeout),
            ovs_deadline: Duration::from_secs(d.ovs_ofctl_timeout),
            probes: ProbeBounds::for_config(config),
            guard: GuardConfig::from_config(config),
        }
    }

    /// Starts the periodic reconcile and the FRR check on `sched`, each
    /// first after one period, as the daemon runs them.
    pub fn spawn(&self, sched: &Scheduler) -> [tokio::task::JoinHandle<()>; 2] {
        [
            sched.every(self.periodic, Trigger::Periodic),
            sched.every(self.frr_check, Trigger::FrrCheck),
        ]
    }
}

/// An interval or timeout option's value as a duration. The configuration
/// accepts 1 s to `MAX_DURATION_S` (365 days) and this is then the value as
/// written; a `Config` built in code may hold anything, so the value is
/// kept within that range rather than trusted (a zero period would spin, a
/// huge one overflow the clock).
fn seconds(value: u64) -> Duration {
    const MAX: u64 = obgp_config::options::MAX_DURATION_S as u64;
    Duration::from_secs(value.clamp(1, MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{QueueConfig, WorkQueue};

    /// A `Config` built in code skips validation: the timers still build
    /// and run, zero as the shortest period and the integer limit as the
    /// longest, where they used to panic ("overflow when adding
    /// durations" at start, a dead timer task later).
    #[tokio::test(start_paused = true)]
    async fn values_validation_would_refuse_neither_panic_nor_spin() {
        let mut config = Config::default();
        config.default.reconcile_interval = u64::MAX;
        config.default.frr_reconcile_interval = 0;
        config.default.ovsdb_connection_timeout = u64::MAX;
        let timers = LoopTimers::for_config(&config);
        let year = Duration::from_secs(obgp_config::options::MAX_DURATION_S as u64);
        assert_eq!(
            (timers.periodic, timers.frr_check),
            (year, Duration::from_secs(1))
        );
        assert_eq!(timers.sync_timeout, year);

        let (sched, _queue) = WorkQueue::new(QueueConfig::default());
        let mut handles = Vec::from(timers.spawn(&sched));
        // The scheduler itself bounds what it is given.
        handles.push(sched.every(Duration::MAX, Trigger::Periodic));
        handles.push(sched.every(Duration::ZERO, Trigger::FrrCheck));
        tokio::task::yield_now().await;
        for _ in 0..3 {
            tokio::time::advance(year).await;
        }
        for h in handles {
            assert!(!h.is_finished(), "a timer task ended (panicked)");
            h.abort();
        }
    }
}
