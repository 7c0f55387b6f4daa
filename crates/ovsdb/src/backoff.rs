//! When the client reconnects: exponential, jittered delays, and when a
//! session counts as a recovery that starts them over.

use std::time::Duration;

/// How long a synced session must stay up before its end starts the delays
/// over from the first one. Several times the default largest delay (8 s):
/// a failure that comes right after every sync (a server that sends a bad
/// update after each dump) then climbs to the largest delay instead of
/// looping into a full resync every initial delay, while a session that
/// lived this long was a real recovery, and its failure a new event worth a
/// quick reconnect.
pub const HEALTHY_SESSION: Duration = Duration::from_secs(30);

/// What kind of failure ended a synced session, as far as the backoff is
/// concerned: the same kind again right after a sync is a repeat, another
/// kind is news.
pub type FailureKind = std::mem::Discriminant<crate::Error>;

/// Exponential backoff with jitter. Starts over after a synced session that
/// stayed up for [`HEALTHY_SESSION`], or that ended with another kind of
/// failure than the one before it; not merely because a session synced.
#[derive(Clone, Debug)]
pub struct Backoff {
    /// First delay.
    pub initial: Duration,
    /// Largest delay.
    pub max: Duration,
    /// A synced session up this long starts the delays over
    /// ([`HEALTHY_SESSION`] by default).
    pub healthy_after: Duration,
    current: Duration,
    last_failure: Option<FailureKind>,
    rng: u64,
}

impl Backoff {
    /// Delays start at `initial` and double up to `max`; each is randomised
    /// to between 50 % and 100 % of the nominal value so that many agents
    /// losing the same server do not come back in lockstep.
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        Backoff::with_seed(initial, max, seed)
    }

    /// As [`Backoff::new`] with a fixed random seed (for tests).
    pub fn with_seed(initial: Duration, max: Duration, seed: u64) -> Backoff {
        Backoff {
            initial,
            max,
            healthy_after: HEALTHY_SESSION,
            current: initial,
            last_failure: None,
            rng: seed | 1,
        }
    }

    /// The next delay.
    pub fn next_delay(&mut self) -> Duration {
        // xorshift64: plenty for jitter, no dependency.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let fraction = 0.5 + (self.rng % 1000) as f64 / 2000.0;
        let delay = self.current.mul_f64(fraction);
        self.current = (self.current * 2).min(self.max);
        delay
    }

    /// A session that got as far as a synced cache ended `up_for` after the
    /// sync, with `failure`: starts the delays over if it was healthy long
    /// enough or failed differently from the last synced session.
    pub fn synced_session_ended(&mut self, up_for: Duration, failure: FailureKind) {
        let repeat = self.last_failure == Some(failure);
        if up_for >= self.healthy_after || !repeat {
            self.reset();
        }
        self.last_failure = Some(failure);
    }

    /// Back to the initial delay.
    pub fn reset(&mut self) {
        self.current = self.initial;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    fn nominal(b: &mut Backoff) -> Duration {
        // The nominal delay is the upper bound of the jittered one.
        let before = b.current;
        let d = b.next_delay();
        assert!(d >= before / 2 && d <= before, "{d:?} vs {before:?}");
        before
    }

    #[test]
    fn backoff_doubles_with_jitter_up_to_the_cap() {
        let mut b = Backoff::with_seed(Duration::from_millis(100), Duration::from_millis(800), 42);
        let delays: Vec<Duration> = (0..6).map(|_| nominal(&mut b)).collect();
        let ms = |v: &[u64]| {
            v.iter()
                .map(|m| Duration::from_millis(*m))
                .collect::<Vec<_>>()
        };
        assert_eq!(delays, ms(&[100, 200, 400, 800, 800, 800]));
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(100));
    }

    #[test]
    fn the_same_failure_right_after_each_sync_keeps_backing_off() {
        let mut b = Backoff::with_seed(Duration::from_millis(100), Duration::from_secs(8), 7);
        let bad_update = std::mem::discriminant(&Error::Protocol("bad update".into()));
        let mut delays = Vec::new();
        for _ in 0..8 {
            b.synced_session_ended(Duration::from_millis(5), bad_update);
            delays.push(nominal(&mut b).as_millis());
        }
        assert_eq!(delays, [100, 200, 400, 800, 1600, 3200, 6400, 8000]);
    }

    #[test]
    fn a_long_healthy_session_or_another_failure_starts_the_delays_over() {
        let mut b = Backoff::with_seed(Duration::from_millis(100), Duration::from_secs(8), 7);
        let closed = std::mem::discriminant(&Error::Closed);
        let bad_update = std::mem::discriminant(&Error::Protocol("x".into()));
        b.synced_session_ended(Duration::ZERO, bad_update);
        for _ in 0..4 {
            nominal(&mut b);
        }
        // Up for HEALTHY_SESSION: a recovery, even with the same failure.
        b.synced_session_ended(HEALTHY_SESSION, bad_update);
        assert_eq!(nominal(&mut b), Duration::from_millis(100));
        nominal(&mut b);
        nominal(&mut b);
        // A short session that failed differently: news, start over.
        b.synced_session_ended(Duration::from_millis(5), closed);
        assert_eq!(nominal(&mut b), Duration::from_millis(100));
        // The same again shortly after: a repeat, keep climbing.
        b.synced_session_ended(Duration::from_millis(5), closed);
        assert_eq!(nominal(&mut b), Duration::from_millis(200));
    }
}
