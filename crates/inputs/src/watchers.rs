//! The tasks that turn what happens outside the loop into work-queue
//! triggers: OVSDB changes through the driver's event filters, local OVS
//! changes, a reconnect's resync, a netlink overrun. Each runs until its
//! source closes.

use std::sync::Arc;

use obgp_events::Filters;
use tokio::sync::{broadcast, watch};

use super::event_match;
use super::trigger::Trigger;
use super::view::FilterView;

/// Where the watchers hand their triggers: the loop's work queue
/// (`obgp_controller::Scheduler`) implements it, so the inputs do not
/// depend on the loop.
pub trait TriggerSink: Send + 'static {
    /// Asks for a reconcile for `reason`. Returns false once the receiving
    /// side is gone (shutdown), which ends the watcher.
    fn trigger(&self, reason: Trigger) -> bool;
}

/// Feeds every change of the driver's OVN database through the driver's event filters; a match
/// schedules a reconcile carrying the class name as its reason.
pub fn event_filter(
    mut changes: broadcast::Receiver<obgp_ovsdb_data::Change>,
    filters: Filters,
    view: watch::Receiver<Arc<FilterView>>,
    sched: impl TriggerSink,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match changes.recv().await {
                Ok(change) => {
                    let current = view.borrow().clone();
                    for class in event_match::reasons(&filters, &change, current.as_ref()) {
                        tracing::debug!(class, table = %change.table, uuid = %change.uuid, "event matched");
                        sched.trigger(Trigger::Event {
                            class,
                            table: change.table.to_string(),
                        });
                    }
                }
                // Lost changes: a full reconcile sees everything anyway.
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(lost = n, "event stream lagged; reconciling in full");
                    sched.trigger(Trigger::Resync {
                        database: obgp_ovn::NB_DB.into(),
                    });
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    })
}

/// A full reconcile whenever the node's netlink mirror lost notifications
/// (it re-dumps everything at that reconcile's observe).
pub fn netlink_overrun(
    mut overruns: watch::Receiver<u64>,
    sched: impl TriggerSink,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        overruns.borrow_and_update();
        while overruns.changed().await.is_ok() {
            let n = *overruns.borrow_and_update();
            tracing::warn!(overruns = n, "netlink overrun; reconciling in full");
            if !sched.trigger(Trigger::NetlinkOverrun) {
                return;
            }
        }
    })
}

/// A database whose every change of the monitored columns schedules a
/// reconcile under event class `class`: the local OVS (bridge mappings, a
/// patch port appearing change the wiring) and the node-local NB of
/// `exposing_method = ovn` (the agent's rows edited or removed).
pub fn every_change(
    mut changes: broadcast::Receiver<obgp_ovsdb_data::Change>,
    class: &'static str,
    database: &'static str,
    sched: impl TriggerSink,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match changes.recv().await {
                Ok(change) => {
                    sched.trigger(Trigger::Event {
                        class,
                        table: change.table.to_string(),
                    });
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    sched.trigger(Trigger::Resync {
                        database: database.into(),
                    });
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    })
}

/// A full reconcile after every reconnect's resync (generation > 1).
pub fn resync(
    mut generation: watch::Receiver<u64>,
    database: &'static str,
    sched: impl TriggerSink,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut seen = *generation.borrow_and_update();
        while generation.changed().await.is_ok() {
            let now = *generation.borrow_and_update();
            if now > seen && now > 1 {
                sched.trigger(Trigger::Resync {
                    database: database.into(),
                });
            }
            seen = now;
        }
    })
}
