//! Where the OVN and OVS data and the reconcile triggers come from: the
//! monitored databases ([`OvnSources`], one [`MonitoredDb`] each) and the
//! indexed snapshot they maintain, a conditional NB monitor's port
//! conditions ([`PortConditions`]), the node-local NB of
//! `exposing_method = ovn` ([`LocalClusterSource`]), the OVS ofports, what the
//! event filters read ([`FilterView`]), and the watchers that turn a change,
//! a resync or a netlink overrun into a [`Trigger`] for a reconcile, handed
//! to a [`TriggerSink`].
//!
//! This room (crate) does not depend on the loop (`obgp-controller`): the
//! loop's work queue implements [`TriggerSink`], and the loop reads what
//! [`OvnSources::converged_inputs`] returns. The loop and the binary use
//! only the names below.

mod database;
mod event_match;
mod follower;
mod host;
mod local_cluster;
mod ofports;
mod port_conditions;
mod sources;
mod trigger;
mod view;
mod watchers;

pub use database::{MonitoredDb, MonitoredDbError};
pub use event_match::reasons;
pub use follower::{Caught, SnapshotFollower};
pub use host::system_hostname;
pub use local_cluster::{observed_of, LocalClusterError, LocalClusterSource};
pub use ofports::{ofports, OfPorts};
pub use port_conditions::{conditional, ConditionTarget, PortConditions};
pub use sources::{OvnSources, ReconcileInputs};
pub use trigger::{
    Trigger, TriggerBatch, LOCAL_CLUSTER_CHANGE, LOCAL_CLUSTER_NB, LOCAL_OVS_CHANGE,
};
pub use view::FilterView;
pub use watchers::{event_filter, every_change, netlink_overrun, resync, TriggerSink};
