//! The inputs' watchers feeding the loop's work queue: a trigger they hand
//! over becomes a batch whose kind asks for what the trigger needs.

use std::time::Duration;

use obgp_controller::{QueueConfig, ReconcileKind, WorkQueue};
use obgp_inputs::{netlink_overrun, Trigger};
use tokio::sync::watch;
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn a_netlink_overrun_schedules_a_reconcile_that_rereads_the_node() {
    let (sched, mut queue) = WorkQueue::new(QueueConfig::default());
    let (overruns, rx) = watch::channel(0u64);
    let watcher = netlink_overrun(rx, sched.clone());
    tokio::task::yield_now().await;
    overruns.send_replace(1);
    let t0 = Instant::now();
    let batch = queue.next().await.unwrap();
    assert_eq!(t0.elapsed(), Duration::ZERO);
    assert_eq!(
        batch.reasons.keys().collect::<Vec<_>>(),
        [&Trigger::NetlinkOverrun]
    );
    let kind = ReconcileKind::for_batch(&batch);
    assert!(kind.reread.node_dumps && kind.reread.ovs_flows, "{kind:?}");
    // One reconcile per overrun seen, none without.
    overruns.send_replace(2);
    assert!(queue.next().await.is_some());
    drop(overruns);
    watcher.await.unwrap();
    drop(sched);
    assert!(
        queue.next().await.is_none(),
        "no trigger without an overrun"
    );
}
