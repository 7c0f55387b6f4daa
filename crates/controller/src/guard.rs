//! The mass-withdrawal guard: a database that comes back with most of its
//! rows gone (a wrong backup restored, a fresh cluster answering first)
//! must not make the agent withdraw most of the node's prefixes at once.
//!
//! Pure: a reconcile gives it what it is about to do and when; it answers
//! whether to apply the withdrawals, hold them for the grace period, or
//! release them once the database stayed that way for the whole period.

use std::time::{Duration, Instant};

/// Below this many announced prefixes a node is never guarded: a node with
/// one or two VMs losing them is ordinary.
pub const MIN_ANNOUNCED: usize = 4;

/// `mass_withdrawal_grace` and `mass_withdrawal_percent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuardConfig {
    /// How long to hold; zero turns the guard off.
    pub grace: Duration,
    /// "Most": the share (in percent) of the announced prefixes a plan
    /// withdraws, and of the database rows lost since the last reconcile,
    /// from which the withdrawals are held.
    pub percent: u8,
}

impl GuardConfig {
    pub fn from_config(config: &obgp_config::Config) -> GuardConfig {
        GuardConfig {
            grace: Duration::from_secs(config.default.mass_withdrawal_grace),
            percent: config.default.mass_withdrawal_percent,
        }
    }
}

/// What a reconcile is about to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Prefixes the node announces now (addresses on the announce device,
    /// routes of the VRF table).
    pub announced: usize,
    /// How many of them the plan withdraws.
    pub withdrawals: usize,
    /// Rows of the driver's database now.
    pub rows: usize,
}

/// The guard's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Ordinary: apply the plan.
    Apply,
    /// Hold the plan's withdrawals (and the unwiring after them); the rest
    /// is applied. `left` is what remains of the grace period.
    Hold { left: Duration, first: bool },
    /// The database stayed that way for the grace period: apply them now.
    Release { held_for: Duration },
}

/// Remembers the database's size at the last ordinary reconcile and the
/// hold in progress.
#[derive(Debug)]
pub struct WithdrawalGuard {
    config: GuardConfig,
    /// Rows at the last reconcile that was not held; `None` before one.
    rows_before: Option<usize>,
    holding_since: Option<Instant>,
    /// How many holds started (a metric to export).
    pub holds: u64,
}

impl WithdrawalGuard {
    pub fn new(config: GuardConfig) -> WithdrawalGuard {
        WithdrawalGuard {
            config,
            rows_before: None,
            holding_since: None,
            holds: 0,
        }
    }

    fn most(&self, part: usize, whole: usize) -> bool {
        whole > 0 && part * 100 >= whole * usize::from(self.config.percent)
    }

    /// Whether `s` withdraws most of the node while the database lost most
    /// of its rows. Before any reconcile (the agent just started) the
    /// database's earlier size is unknown: the withdrawals alone decide.
    fn mass_withdrawal(&self, s: &Sample) -> bool {
        let withdraws_most = s.announced >= MIN_ANNOUNCED && self.most(s.withdrawals, s.announced);
        let lost_rows = match self.rows_before {
            Some(before) => self.most(before.saturating_sub(s.rows), before),
            None => true,
        };
        withdraws_most && lost_rows
    }

    /// Judges one reconcile at `now`.
    pub fn judge(&mut self, s: Sample, now: Instant) -> Verdict {
        if self.config.grace.is_zero() {
            self.rows_before = Some(s.rows);
            return Verdict::Apply;
        }
        if let Some(since) = self.holding_since {
            let held_for = now.saturating_duration_since(since);
            if !self.mass_withdrawal(&s) {
                // The database came back (or the plan no longer withdraws
                // most): an ordinary reconcile again.
                self.holding_since = None;
                self.rows_before = Some(s.rows);
                return Verdict::Apply;
            }
            if held_for >= self.config.grace {
                self.holding_since = None;
                self.rows_before = Some(s.rows);
                return Verdict::Release { held_for };
            }
            return Verdict::Hold {
                left: self.config.grace - held_for,
                first: false,
            };
        }
        if self.mass_withdrawal(&s) {
            self.holding_since = Some(now);
            self.holds += 1;
            return Verdict::Hold {
                left: self.config.grace,
                first: true,
            };
        }
        self.rows_before = Some(s.rows);
        Verdict::Apply
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_secs(120);

    fn guard() -> WithdrawalGuard {
        WithdrawalGuard::new(GuardConfig {
            grace: GRACE,
            percent: 50,
        })
    }

    fn sample(announced: usize, withdrawals: usize, rows: usize) -> Sample {
        Sample {
            announced,
            withdrawals,
            rows,
        }
    }

    #[test]
    fn an_emptied_database_holds_the_withdrawals_for_the_grace_period_then_releases_them() {
        let mut g = guard();
        let t0 = Instant::now();
        assert_eq!(g.judge(sample(100, 0, 5000), t0), Verdict::Apply);
        // The NB comes back nearly empty: every prefix would go.
        let v = g.judge(sample(100, 100, 3), t0 + Duration::from_secs(1));
        assert_eq!(
            v,
            Verdict::Hold {
                left: GRACE,
                first: true
            }
        );
        assert_eq!(g.holds, 1);
        let v = g.judge(sample(100, 100, 3), t0 + Duration::from_secs(61));
        assert_eq!(
            v,
            Verdict::Hold {
                left: Duration::from_secs(60),
                first: false
            }
        );
        // It stayed that way: the withdrawals go.
        let v = g.judge(sample(100, 100, 3), t0 + Duration::from_secs(121));
        assert_eq!(
            v,
            Verdict::Release {
                held_for: Duration::from_secs(120)
            }
        );
        // And the emptied database is the new normal.
        assert_eq!(
            g.judge(sample(0, 0, 3), t0 + Duration::from_secs(122)),
            Verdict::Apply
        );
        assert_eq!(g.holds, 1);
    }

    #[test]
    fn a_database_that_comes_back_within_the_grace_period_ends_the_hold() {
        let mut g = guard();
        let t0 = Instant::now();
        g.judge(sample(100, 0, 5000), t0);
        assert!(matches!(
            g.judge(sample(100, 100, 0), t0),
            Verdict::Hold { .. }
        ));
        // The right cluster member answers again: nothing to withdraw.
        assert_eq!(
            g.judge(sample(100, 0, 5000), t0 + Duration::from_secs(5)),
            Verdict::Apply
        );
    }

    #[test]
    fn ordinary_withdrawals_are_never_held() {
        let mut g = guard();
        let t0 = Instant::now();
        g.judge(sample(100, 0, 5000), t0);
        // A tenant deletes a big network with most of this node's VMs: the
        // database keeps most of its rows.
        assert_eq!(g.judge(sample(100, 80, 4700), t0), Verdict::Apply);
        // A few ports go at a time, however few rows the database has.
        assert_eq!(g.judge(sample(20, 3, 100), t0), Verdict::Apply);
        // A small node losing everything.
        assert_eq!(
            g.judge(sample(MIN_ANNOUNCED - 1, MIN_ANNOUNCED - 1, 0), t0),
            Verdict::Apply
        );
    }

    #[test]
    fn at_start_up_the_withdrawals_alone_decide() {
        // The agent restarts against an empty fresh cluster: no earlier
        // database size to compare with.
        let mut g = guard();
        assert!(matches!(
            g.judge(sample(50, 50, 2), Instant::now()),
            Verdict::Hold { first: true, .. }
        ));
        let mut g = guard();
        assert_eq!(g.judge(sample(50, 10, 2), Instant::now()), Verdict::Apply);
    }

    #[test]
    fn a_zero_grace_period_turns_the_guard_off() {
        let mut g = WithdrawalGuard::new(GuardConfig {
            grace: Duration::ZERO,
            percent: 50,
        });
        assert_eq!(g.judge(sample(100, 100, 0), Instant::now()), Verdict::Apply);
        assert_eq!(g.holds, 0);
    }
}
