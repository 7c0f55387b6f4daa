//! Delays, coalesces and rate-limits reconcile triggers.
//!
//! The first trigger after a quiet period reconciles at once, so an isolated
//! OVSDB event reaches the node in milliseconds. Triggers arriving within
//! `window` of the previous event-driven reconcile are merged into one, and a
//! token bucket (governor) bounds reconciles per second under churn. A
//! reconcile started only by timers (periodic, FRR check, retry) or start-up
//! opens no window: an event after it runs at once. Nothing is ever dropped:
//! a trigger either starts a reconcile or joins the next one.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use tokio::sync::mpsc;
use tokio::time::Instant;

pub use crate::inputs::TriggerBatch;
use crate::inputs::{Trigger, TriggerSink};

/// How triggers are turned into reconciles.
#[derive(Clone, Debug)]
pub struct QueueConfig {
    /// Triggers within this window after an event-driven reconcile started
    /// are merged into the next one.
    pub window: Duration,
    /// At most this many reconciles per second, sustained.
    pub max_per_second: NonZeroU32,
    /// How many reconciles may run back to back before the rate applies.
    pub burst: NonZeroU32,
}

impl QueueConfig {
    /// The merge window when none is given (`--merge-window-ms`).
    pub const DEFAULT_WINDOW: Duration = Duration::from_millis(100);
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            window: Self::DEFAULT_WINDOW,
            max_per_second: NonZeroU32::new(10).expect("non-zero"),
            burst: NonZeroU32::new(5).expect("non-zero"),
        }
    }
}

/// The sending side: cheap to clone, handed to event filters and timers.
#[derive(Clone, Debug)]
pub struct Scheduler {
    tx: mpsc::UnboundedSender<Trigger>,
}

impl TriggerSink for Scheduler {
    fn trigger(&self, reason: Trigger) -> bool {
        Scheduler::trigger(self, reason)
    }
}

impl Scheduler {
    /// The shortest period [`Scheduler::every`] runs at.
    pub const MIN_PERIOD: Duration = Duration::from_millis(1);
    /// The longest period [`Scheduler::every`] runs at: the configuration's
    /// longest interval (`obgp_config::options::MAX_DURATION_S`).
    pub const MAX_PERIOD: Duration =
        Duration::from_secs(obgp_config::options::MAX_DURATION_S as u64);

    /// Asks for a reconcile. Returns false once the queue is gone (shutdown).
    pub fn trigger(&self, reason: Trigger) -> bool {
        self.tx.send(reason).is_ok()
    }

    /// Triggers `reason` once, after `delay`.
    pub fn after(&self, delay: Duration, reason: Trigger) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            this.trigger(reason);
        })
    }

    /// Triggers `reason` every `period`, first after one period, until the
    /// queue is gone. Used for `reconcile_interval` and `frr_reconcile_interval`.
    /// The period is kept within [`Self::MIN_PERIOD`]..=[`Self::MAX_PERIOD`]:
    /// tokio's interval panics on a zero period and on an instant past the
    /// clock's range, and this task must not die while the daemon goes on
    /// without its timer.
    pub fn every(&self, period: Duration, reason: Trigger) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        let period = period.clamp(Self::MIN_PERIOD, Self::MAX_PERIOD);
        tokio::spawn(async move {
            let first = Instant::now()
                .checked_add(period)
                .unwrap_or_else(Instant::now);
            let mut ticker = tokio::time::interval_at(first, period);
            // A reconcile slower than the period must not cause a burst of catch-up ticks.
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                if !this.trigger(reason.clone()) {
                    return;
                }
            }
        })
    }
}

/// Tokio's clock for governor, so the rate limit follows tokio's (pausable) time.
#[derive(Clone, Debug)]
struct TokioClock {
    start: Instant,
}

impl Clock for TokioClock {
    type Instant = Duration;
    fn now(&self) -> Duration {
        Instant::now().duration_since(self.start)
    }
}

type Limiter = RateLimiter<NotKeyed, InMemoryState, TokioClock, NoOpMiddleware<Duration>>;

/// A batch the queue holds back.
struct Pending {
    batch: TriggerBatch,
    /// When its first trigger arrived.
    arrived: Instant,
    /// When the rate limit first held it, if it did.
    rate_limited: Option<Instant>,
}

/// The receiving side, owned by the reconcile loop.
pub struct WorkQueue {
    rx: mpsc::UnboundedReceiver<Trigger>,
    window: Duration,
    /// When the last reconcile with a window-opening reason started.
    last_start: Option<Instant>,
    /// The batch being held back. Kept here, not in [`WorkQueue::next`]'s
    /// future, so that a `select!` that drops the future while it waits
    /// loses nothing.
    pending: Option<Pending>,
    clock: TokioClock,
    limiter: Limiter,
}

impl WorkQueue {
    pub fn new(config: QueueConfig) -> (Scheduler, WorkQueue) {
        let (tx, rx) = mpsc::unbounded_channel();
        let clock = TokioClock {
            start: Instant::now(),
        };
        let quota = Quota::per_second(config.max_per_second).allow_burst(config.burst);
        let limiter = RateLimiter::direct_with_clock(quota, clock.clone());
        let queue = WorkQueue {
            rx,
            window: config.window,
            last_start: None,
            pending: None,
            clock,
            limiter,
        };
        (Scheduler { tx }, queue)
    }

    /// Waits until the next reconcile is due and returns its reasons. `None`
    /// once every [`Scheduler`] is dropped and nothing is pending.
    ///
    /// Cancel-safe: the run loop polls it in a `select!` beside other
    /// branches, and a trigger already received stays pending in the queue
    /// when the future is dropped.
    pub async fn next(&mut self) -> Option<TriggerBatch> {
        if self.pending.is_none() {
            let mut batch = TriggerBatch::default();
            batch.add(self.rx.recv().await?);
            self.pending = Some(Pending {
                batch,
                arrived: Instant::now(),
                rate_limited: None,
            });
        }
        let arrived = self
            .pending
            .as_ref()
            .map_or_else(Instant::now, |p| p.arrived);
        let window_end = match self.last_start {
            Some(last) => arrived.max(last + self.window),
            None => arrived,
        };
        if Instant::now() < window_end {
            tokio::time::sleep_until(window_end).await;
        }
        while let Err(not_until) = self.limiter.check() {
            if let Some(p) = &mut self.pending {
                p.rate_limited.get_or_insert_with(Instant::now);
            }
            let wait = not_until.wait_time_from(self.clock.now());
            tokio::time::sleep(wait.max(Duration::from_millis(1))).await;
        }
        let Pending {
            mut batch,
            rate_limited,
            ..
        } = self.pending.take()?;
        batch.window_wait = window_end - arrived;
        batch.rate_wait = rate_limited.map_or(Duration::ZERO, |since| since.elapsed());
        while let Ok(reason) = self.rx.try_recv() {
            batch.add(reason);
        }
        if batch.reasons.keys().any(Trigger::opens_merge_window) {
            self.last_start = Some(Instant::now());
        }
        Some(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::lsp_event as event;

    #[tokio::test(start_paused = true)]
    async fn first_trigger_after_quiet_period_reconciles_at_once() {
        let (sched, mut queue) = WorkQueue::new(QueueConfig::default());
        let t0 = Instant::now();
        sched.trigger(event("LogicalSwitchPortProviderCreateEvent"));
        let batch = queue.next().await.unwrap();
        assert_eq!(t0.elapsed(), Duration::ZERO);
        assert_eq!(batch.triggers(), 1);
        assert_eq!((batch.window_wait, batch.rate_wait), Default::default());
    }

    #[tokio::test(start_paused = true)]
    async fn triggers_within_the_window_merge_into_one_reconcile() {
        let (sched, mut queue) = WorkQueue::new(QueueConfig::default());
        sched.trigger(event("First"));
        queue.next().await.unwrap();
        let t0 = Instant::now();

        let s = sched.clone();
        tokio::spawn(async move {
            for class in ["A", "B", "B"] {
                tokio::time::sleep(Duration::from_millis(20)).await;
                s.trigger(event(class));
            }
        });
        let batch = queue.next().await.unwrap();
        assert_eq!(
            t0.elapsed(),
            Duration::from_millis(100),
            "waits for the end of the window"
        );
        assert_eq!(batch.triggers(), 3);
        assert_eq!(
            batch.window_wait,
            Duration::from_millis(80),
            "held from A on"
        );
        assert_eq!(batch.rate_wait, Duration::ZERO);
        assert_eq!(
            batch.reasons.len(),
            2,
            "same reason counted, not repeated: {batch}"
        );
    }

    /// The run loop polls `next` in a `select!` whose other branches (the
    /// command lane, `/status`, the OVN cache's changes) drop the future
    /// while it waits out the window: the trigger it already took stays.
    #[tokio::test(start_paused = true)]
    async fn a_trigger_survives_the_wait_being_cancelled() {
        let (sched, mut queue) = WorkQueue::new(QueueConfig::default());
        sched.trigger(event("First"));
        queue.next().await.unwrap();
        let t0 = Instant::now();
        tokio::time::sleep(Duration::from_millis(20)).await;
        sched.trigger(event("A"));
        for _ in 0..3 {
            tokio::select! {
                _ = queue.next() => panic!("due only at the end of the window"),
                _ = tokio::time::sleep(Duration::from_millis(10)) => {}
            }
        }
        sched.trigger(event("B"));
        let batch = queue.next().await.unwrap();
        assert_eq!(t0.elapsed(), Duration::from_millis(100));
        assert_eq!(batch.triggers(), 2, "{batch}");
        assert!(batch.reasons.contains_key(&event("A")));
        assert_eq!(
            batch.window_wait,
            Duration::from_millis(80),
            "held from A on"
        );
        assert_eq!(batch.rate_wait, Duration::ZERO);

        // Resumed only after the window (the loop was busy elsewhere): the
        // delay is the loop's, not the rate limit's.
        tokio::time::sleep(Duration::from_millis(20)).await;
        sched.trigger(event("C"));
        tokio::select! {
            _ = queue.next() => panic!("due only at the end of the window"),
            _ = tokio::time::sleep(Duration::from_millis(10)) => {}
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let batch = queue.next().await.unwrap();
        assert_eq!(batch.window_wait, Duration::from_millis(80));
        assert_eq!(batch.rate_wait, Duration::ZERO, "no rate limit held it");
    }

    #[tokio::test(start_paused = true)]
    async fn an_event_during_or_right_after_a_timer_reconcile_runs_at_once() {
        for timer in [
            Trigger::Periodic,
            Trigger::FrrCheck,
            Trigger::Retry,
            Trigger::Startup,
        ] {
            let (sched, mut queue) = WorkQueue::new(QueueConfig::default());
            // An event-driven reconcile long ago, so only the timer counts.
            sched.trigger(event("Old"));
            queue.next().await.unwrap();
            tokio::time::sleep(Duration::from_secs(1)).await;

            sched.trigger(timer.clone());
            let batch = queue.next().await.unwrap();
            assert_eq!(batch.triggers(), 1);
            // The event arrives while the timer's reconcile runs (10 ms).
            tokio::time::sleep(Duration::from_millis(10)).await;
            let t0 = Instant::now();
            sched.trigger(event("A"));
            let batch = queue.next().await.unwrap();
            assert_eq!(t0.elapsed(), Duration::ZERO, "after {timer}: not delayed");
            assert!(batch.reasons.contains_key(&event("A")));

            // That event opened a window: the next one within it is merged.
            tokio::time::sleep(Duration::from_millis(10)).await;
            let t1 = Instant::now();
            sched.trigger(event("B"));
            queue.next().await.unwrap();
            assert_eq!(t1.elapsed(), Duration::from_millis(90), "after {timer}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn trigger_after_the_window_is_not_delayed() {
        let (sched, mut queue) = WorkQueue::new(QueueConfig::default());
        sched.trigger(Trigger::Startup);
        queue.next().await.unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let t0 = Instant::now();
        sched.trigger(event("A"));
        queue.next().await.unwrap();
        assert_eq!(t0.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limit_bounds_reconciles_under_churn() {
        let config = QueueConfig {
            window: Duration::ZERO,
            max_per_second: NonZeroU32::new(4).unwrap(),
            burst: NonZeroU32::new(1).unwrap(),
        };
        let (sched, mut queue) = WorkQueue::new(config);
        let t0 = Instant::now();
        let mut reconciles = 0;
        let mut rate_waits = Vec::new();
        for _ in 0..9 {
            sched.trigger(Trigger::Periodic);
            let batch = queue.next().await.unwrap();
            assert_eq!(batch.window_wait, Duration::ZERO);
            rate_waits.push(batch.rate_wait);
            reconciles += 1;
        }
        // 1 immediately, then one every 250 ms.
        assert_eq!(reconciles, 9);
        assert_eq!(rate_waits[0], Duration::ZERO);
        assert!(
            rate_waits[1..]
                .iter()
                .all(|w| (Duration::from_millis(249)..=Duration::from_millis(251)).contains(w)),
            "{rate_waits:?}"
        );
        assert!(
            t0.elapsed() >= Duration::from_millis(2000),
            "{:?}",
            t0.elapsed()
        );
        assert!(
            t0.elapsed() < Duration::from_millis(2100),
            "{:?}",
            t0.elapsed()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn queue_ends_when_every_scheduler_is_gone() {
        let (sched, mut queue) = WorkQueue::new(QueueConfig::default());
        sched.trigger(Trigger::Manual);
        drop(sched);
        assert!(
            queue.next().await.is_some(),
            "pending trigger still delivered"
        );
        assert!(queue.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_delayed_trigger_fires_once_after_its_delay() {
        let (sched, mut queue) = WorkQueue::new(QueueConfig::default());
        let t0 = Instant::now();
        sched.after(Duration::from_secs(2), Trigger::Retry);
        let batch = queue.next().await.unwrap();
        assert_eq!(t0.elapsed(), Duration::from_secs(2));
        assert!(batch.reasons.contains_key(&Trigger::Retry));
        drop(sched);
        assert!(queue.next().await.is_none(), "no second trigger");
    }

    #[tokio::test(start_paused = true)]
    async fn periodic_timer_triggers_every_period() {
        let (sched, mut queue) = WorkQueue::new(QueueConfig::default());
        let timer = sched.every(Duration::from_secs(300), Trigger::Periodic);
        let t0 = Instant::now();
        let batch = queue.next().await.unwrap();
        assert_eq!(t0.elapsed(), Duration::from_secs(300));
        assert!(batch.reasons.contains_key(&Trigger::Periodic));
        queue.next().await.unwrap();
        assert_eq!(t0.elapsed(), Duration::from_secs(600));
        timer.abort();
    }
}
