//! Watching a bench while it changes: an observation (several reads of
//! the node and the peer) taken again and again, each one that differs
//! from the one before kept with when it was made, and order claims
//! checked on that record.
//!
//! One observation is several reads (each `ip` and `vtysh` call takes a
//! while under TCG), so a claim "A goes no earlier than B comes" is only
//! checked soundly when the observation reads A's fact before B's: a
//! violation seen (A gone, B not yet) is then a real one.

use std::fmt::Debug;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};

/// Each observation `look` made that differed from the one before, with
/// when it was made (from the call), printed with `tag`; polls every
/// 100 ms until `done` holds, up to `timeout`. The error names `what` and
/// shows the record.
pub fn watch<S: Copy + PartialEq + Debug>(
    tag: &str,
    what: &str,
    timeout: Duration,
    mut look: impl FnMut() -> Result<S>,
    done: impl Fn(&S) -> bool,
) -> Result<Vec<(Duration, S)>> {
    let t = Instant::now();
    let mut changes: Vec<(Duration, S)> = Vec::new();
    loop {
        let seen = look()?;
        let at = t.elapsed();
        if changes.last().map(|(_, s)| *s) != Some(seen) {
            println!("{tag}:   +{:5.2} s {seen:?}", at.as_secs_f64());
            changes.push((at, seen));
        }
        if done(&seen) {
            return Ok(changes);
        }
        ensure!(
            at < timeout,
            "{what}: not reached after {timeout:?}; seen: {changes:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The first time `f` held in `changes` (a change holds until the next).
pub fn first<S>(changes: &[(Duration, S)], f: impl Fn(&S) -> bool) -> Option<Duration> {
    changes.iter().find(|(_, s)| f(s)).map(|(t, _)| *t)
}

/// Whether `f` held at every observation up to and including `until`.
pub fn held_until<S>(changes: &[(Duration, S)], until: Duration, f: impl Fn(&S) -> bool) -> bool {
    changes
        .iter()
        .filter(|(t, _)| *t <= until)
        .all(|(_, s)| f(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_keeps_changes_only_and_the_claims_read_them() {
        let mut n = 0;
        let seen = watch(
            "test",
            "n reaches 4",
            Duration::from_secs(5),
            || {
                n += 1;
                Ok(n / 2)
            },
            |s| *s == 2,
        )
        .unwrap();
        let values: Vec<i32> = seen.iter().map(|(_, s)| *s).collect();
        assert_eq!(values, [0, 1, 2]);
        let at1 = first(&seen, |s| *s == 1).unwrap();
        assert!(held_until(&seen, at1, |s| *s <= 1));
        assert!(!held_until(&seen, at1, |s| *s == 0));
        assert_eq!(first(&seen, |s| *s == 7), None);
    }

    #[test]
    fn watch_gives_up_with_the_record() {
        let e = watch("test", "never", Duration::ZERO, || Ok(1), |_| false).unwrap_err();
        assert!(format!("{e}").contains("never: not reached"), "{e}");
    }
}
