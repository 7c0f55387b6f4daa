//! What the last reconciles planned, for telling drift repairs from ops
//! planned again (a retry of a failure, a held withdrawal).

use obgp_plan::Op;

/// The ops a full plan made just before the next reconcile would have
/// planned, as far as the reconciles since know them.
#[derive(Debug, Default)]
pub(super) struct LastPlan {
    /// The last plan's ops; after a plan of the changed objects alone,
    /// also the ops the plans before it left undone.
    ops: Vec<Op>,
    /// Those of `ops` not known to be done (failed, held back, not
    /// started, or handed to the command lane, whose outcome comes later).
    undone: Vec<Op>,
}

impl LastPlan {
    /// The ops a reconcile planned now is compared with.
    pub(super) fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// Keeps a reconcile's plan: its `ops` and those of them `undone`. A
    /// plan of the changed objects alone (`incremental`) did not look at
    /// what earlier plans left undone, which a full plan would have planned
    /// again: those stay.
    pub(super) fn remember(&mut self, mut ops: Vec<Op>, mut undone: Vec<Op>, incremental: bool) {
        if incremental {
            let carried: Vec<Op> = std::mem::take(&mut self.undone)
                .into_iter()
                .filter(|op| !ops.contains(op))
                .collect();
            undone.extend(carried.iter().cloned());
            ops.extend(carried);
        }
        self.ops = ops;
        self.undone = undone;
    }
}

#[cfg(test)]
mod tests {
    use obgp_netmodel::{Address, DevName};

    use super::*;

    fn add(ip: &str) -> Op {
        Op::AddAddress(Address {
            dev: DevName::new("bgp-nic").unwrap(),
            net: format!("{ip}/32").parse().unwrap(),
        })
    }

    #[test]
    fn plans_of_the_changes_alone_keep_what_earlier_plans_left_undone() {
        let mut last = LastPlan::default();
        // A full plan: one op done, one failed.
        let (done, failed) = (add("172.24.4.1"), add("172.24.4.2"));
        last.remember(
            vec![done.clone(), failed.clone()],
            vec![failed.clone()],
            false,
        );
        assert_eq!(last.ops(), [done.clone(), failed.clone()]);

        // An event's plan: the failed op stays (a full plan would have
        // planned it again), the done one does not.
        let event = add("172.24.4.3");
        last.remember(vec![event.clone()], Vec::new(), true);
        assert_eq!(last.ops(), [event.clone(), failed.clone()]);

        // Another event's plan retries the failed op itself, and it works.
        let other = add("172.24.4.4");
        last.remember(vec![failed.clone(), other.clone()], Vec::new(), true);
        assert_eq!(last.ops(), [failed.clone(), other.clone()]);
        last.remember(Vec::new(), Vec::new(), true);
        assert!(last.ops().is_empty(), "nothing left undone");

        // A full plan replaces everything.
        last.remember(vec![event.clone()], vec![event.clone()], true);
        last.remember(vec![done.clone()], Vec::new(), false);
        assert_eq!(last.ops(), [done]);
    }
}
