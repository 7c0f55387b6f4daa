//! The pipeline's one port: observing the node, the I/O between the desired
//! node objects and the plan.
//!
//! What to read of the node follows the desired node objects (and the
//! settled ones, whose leftovers the plan judges too), so the observation
//! can only happen inside a run, after the desired state is computed. The
//! pipeline asks through [`ObserveNode`]: the daemon answers with its
//! netlink mirror and command lane, the offline callers (`plan --ovn`, the
//! conformance runner, the fuzz harness) with a node state they already
//! hold (`&Actual`, ready at once).

use std::borrow::Borrow;
use std::convert::Infallible;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use obgp_netmodel::DesiredNode;
use obgp_plan::Actual;

/// What a run asks the observer to read: the node objects it computed,
/// and the settled ones (what the previous reconcile planned with) whose
/// leftovers the plan also judges. The observer's scope follows both.
#[derive(Clone, Copy, Debug)]
pub struct ObserveFor<'a> {
    pub node: &'a DesiredNode,
    pub settled: Option<&'a DesiredNode>,
}

/// Observes the node for a run ([`crate::Pipeline::run`]): called once per
/// run, between the desired state and the plan, with what the run wants
/// read. The future is polled by the caller's executor; the pipeline
/// itself waits on nothing else.
pub trait ObserveNode {
    /// The node as observed (owned by the daemon, borrowed offline).
    type Observed: Borrow<Actual>;
    /// Why the node could not be observed.
    type Error;

    fn observe(
        &mut self,
        wanted: ObserveFor<'_>,
    ) -> impl Future<Output = Result<Self::Observed, Self::Error>>;
}

/// A node state already at hand (recorded, simulated, read from a file):
/// the observation whatever the run wants read.
impl<'a> ObserveNode for &'a Actual {
    type Observed = &'a Actual;
    type Error = Infallible;

    fn observe(
        &mut self,
        _: ObserveFor<'_>,
    ) -> impl Future<Output = Result<&'a Actual, Infallible>> {
        std::future::ready(Ok(*self))
    }
}

/// The output of a future that completes on its first poll: a run whose
/// observer waits on nothing (a recorded node state, [`ObserveNode`] for
/// `&Actual`) needs no executor to drive it.
pub(crate) fn ready_now<T>(future: impl Future<Output = T>) -> T {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("a run driven at once has an observer that waits"),
    }
}
