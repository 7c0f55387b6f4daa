//! Why a reconcile runs ([`Trigger`], so the logs can say it); the triggers
//! merged into one reconcile ([`TriggerBatch`]).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::Serialize;

/// One cause of a reconcile.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Trigger {
    /// The agent started.
    Startup,
    /// An OVSDB update matched an event filter (upstream's event class name).
    Event { class: &'static str, table: String },
    /// `reconcile_interval` elapsed.
    Periodic,
    /// `frr_reconcile_interval` elapsed: check FRR still has our config.
    FrrCheck,
    /// A database connection was (re)established and its cache resynced.
    Resync { database: String },
    /// The netlink monitor lost messages: the node mirror must be re-read.
    NetlinkOverrun,
    /// Something asked by hand (`reconcile --once`, a signal).
    Manual,
    /// The previous reconcile failed or left ops failed: retried after a backoff.
    Retry,
    /// A background re-read after a timer-driven reconcile found OVS's
    /// ports or agent flows, or FRR's configuration, changed.
    Drift,
    /// A background full computation of the desired state differed from
    /// the patched one (a bug in the patching; logged as an error).
    DesiredMismatch,
    /// The command lane read what the last reconcile could not plan
    /// without (FRR, an OVS bridge), or finished ops a reconcile met in
    /// flight: plan with it. Re-reads nothing, so it cannot loop.
    CommandsSettled,
    /// The previous reconcile's own netlink writes had a side effect the
    /// kernel does not notify (IPv4 routes flushed with their device's last
    /// IPv4 address): the node mirror re-reads what went, and the plan puts
    /// it back. Re-reads nothing else; the run loop never triggers it twice
    /// in a row, so it cannot loop.
    UnnotifiedSideEffects,
}

/// The event class of a change in the local Open_vSwitch database.
pub const LOCAL_OVS_CHANGE: &str = "LocalOvsChange";

/// The event class of a change in the node-local NB (`exposing_method =
/// ovn`), and that database's name in resync reasons (the central NB is
/// `OVN_Northbound`).
pub const LOCAL_CLUSTER_CHANGE: &str = "LocalNbChange";
pub const LOCAL_CLUSTER_NB: &str = "local OVN_Northbound";

impl Trigger {
    /// Whether a trigger with this reason opens the queue's merge window:
    /// only database changes come in bursts worth merging. Timers, retries,
    /// start-up and overruns open none, so an event right after them is not
    /// delayed.
    pub fn opens_merge_window(&self) -> bool {
        matches!(self, Trigger::Event { .. } | Trigger::Resync { .. })
    }

    /// Whether the node must be read afresh (full netlink dumps instead of
    /// the mirror): the mirror lost notifications.
    pub fn rereads_node(&self) -> bool {
        matches!(self, Trigger::NetlinkOverrun)
    }

    /// Whether this reason only asks to look for changes nobody notifies
    /// (timers and retries): such a reconcile plans with the OVS and FRR
    /// state already read, and re-reads them in the background afterwards
    /// (`ovs-ofctl`, `vtysh`: tens of milliseconds an event would otherwise
    /// wait for), reconciling again only if they drifted ([`Trigger::Drift`]).
    pub fn rereads_in_background(&self) -> bool {
        matches!(self, Trigger::Periodic | Trigger::FrrCheck | Trigger::Retry)
    }

    /// Whether the OVS ports and flows must be re-read (`ovs-ofctl`) rather
    /// than reused: the OVS database changed or reconnected, or a full
    /// reconcile is due (periodic, start-up, by hand, a retry, an overrun),
    /// which also catches flows edited by hand (no database row changes then).
    pub fn rereads_flows(&self) -> bool {
        match self {
            Trigger::Event { class, .. } => *class == LOCAL_OVS_CHANGE,
            Trigger::Resync { database } => database == obgp_ovn::OVS_DB,
            Trigger::FrrCheck
            | Trigger::DesiredMismatch
            | Trigger::CommandsSettled
            | Trigger::UnnotifiedSideEffects => false,
            Trigger::Drift
            | Trigger::Startup
            | Trigger::Periodic
            | Trigger::NetlinkOverrun
            | Trigger::Manual
            | Trigger::Retry => true,
        }
    }

    /// Whether the desired state must be computed from every row rather
    /// than patched from the last one: a full reconcile (start-up, periodic,
    /// by hand, a retry, an overrun) rebuilds it as upstream's sync does,
    /// so that nothing the patching missed could outlive `reconcile_interval`.
    /// Timer-driven ones ([`Trigger::rereads_in_background`]) do it in the
    /// background and compare; a difference triggers
    /// [`Trigger::DesiredMismatch`], which recomputes at once.
    pub fn recomputes_desired(&self) -> bool {
        matches!(
            self,
            Trigger::Startup
                | Trigger::Periodic
                | Trigger::NetlinkOverrun
                | Trigger::Manual
                | Trigger::Retry
                | Trigger::DesiredMismatch
        )
    }

    /// Whether a reconcile for this reason alone may plan only the node
    /// objects the patched desired state changed (`obgp_plan::plan_changes`)
    /// instead of the whole node: an OVN change the event filters passed.
    /// Everything else plans in full: the timers, start-up, retries, drift
    /// and resyncs look for what changed on the node itself, and a local
    /// OVS or NB change reaches bridges, ports or flows, which only the
    /// full plan reads.
    pub fn plans_changes_only(&self) -> bool {
        matches!(self, Trigger::Event { class, .. } if *class != LOCAL_OVS_CHANGE && *class != LOCAL_CLUSTER_CHANGE)
    }

    /// Whether this reconcile follows a database's full dump (the initial
    /// sync or a resync): the dump was decoded beside the cache it
    /// replaced and the OVN snapshot rebuilt from it, the largest transient
    /// allocations the agent makes, so freed heap is returned to the kernel
    /// after it (the operations surface's `TrimSchedule`).
    pub fn follows_full_dump(&self) -> bool {
        matches!(self, Trigger::Startup | Trigger::Resync { .. })
    }

    /// Whether this reason needs FRR's running configuration re-checked even
    /// when nothing else changed.
    pub fn checks_frr(&self) -> bool {
        matches!(
            self,
            Trigger::FrrCheck
                | Trigger::Startup
                | Trigger::Periodic
                | Trigger::Manual
                | Trigger::Retry
                | Trigger::Drift
        )
    }
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trigger::Startup => f.write_str("startup"),
            Trigger::Event { class, table } => write!(f, "event {class} on {table}"),
            Trigger::Periodic => f.write_str("periodic reconcile"),
            Trigger::FrrCheck => f.write_str("frr check"),
            Trigger::Resync { database } => write!(f, "resync of {database}"),
            Trigger::NetlinkOverrun => f.write_str("netlink overrun"),
            Trigger::Manual => f.write_str("manual"),
            Trigger::Retry => f.write_str("retry after a failure"),
            Trigger::Drift => f.write_str("OVS or FRR drifted"),
            Trigger::DesiredMismatch => {
                f.write_str("patched desired state differed from a full one")
            }
            Trigger::CommandsSettled => f.write_str("FRR or OVS read by the command lane"),
            Trigger::UnnotifiedSideEffects => {
                f.write_str("our writes had side effects the kernel did not notify")
            }
        }
    }
}

/// The reasons of one reconcile, each with how many triggers carried it,
/// and how long its first trigger was held back, by which rule. The kind
/// of reconcile they ask for is `ReconcileKind::for_batch` (the loop's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TriggerBatch {
    pub reasons: BTreeMap<Trigger, usize>,
    /// Held back because the first trigger came within the merge window of
    /// the previous event-driven reconcile.
    pub window_wait: Duration,
    /// Held back by the rate limit.
    pub rate_wait: Duration,
}

impl TriggerBatch {
    /// Counts one more trigger carrying `reason` (the work queue merging it).
    pub fn add(&mut self, reason: Trigger) {
        *self.reasons.entry(reason).or_default() += 1;
    }

    /// Total triggers merged into this reconcile.
    pub fn triggers(&self) -> usize {
        self.reasons.values().sum()
    }

    /// Whether any reason follows a database's full dump
    /// ([`Trigger::follows_full_dump`]).
    pub fn follows_full_dump(&self) -> bool {
        self.reasons.keys().any(Trigger::follows_full_dump)
    }
}

impl fmt::Display for TriggerBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (reason, count) in &self.reasons {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            if *count > 1 {
                write!(f, "{reason} (x{count})")?;
            } else {
                write!(f, "{reason}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(class: &'static str) -> Trigger {
        Trigger::Event {
            class,
            table: "Interface".into(),
        }
    }

    #[test]
    fn only_database_changes_open_the_merge_window() {
        assert!(event("LogicalSwitchPortProviderCreateEvent").opens_merge_window());
        assert!(Trigger::Resync {
            database: "OVN_Northbound".into()
        }
        .opens_merge_window());
        for timer in [
            Trigger::Periodic,
            Trigger::FrrCheck,
            Trigger::Retry,
            Trigger::Startup,
            Trigger::NetlinkOverrun,
            Trigger::Manual,
        ] {
            assert!(!timer.opens_merge_window(), "{timer}");
        }
    }

    #[test]
    fn flows_are_reread_on_ovs_changes_and_full_reconciles_only() {
        assert!(event(LOCAL_OVS_CHANGE).rereads_flows());
        assert!(Trigger::Resync {
            database: obgp_ovn::OVS_DB.into()
        }
        .rereads_flows());
        assert!(Trigger::Periodic.rereads_flows());
        assert!(Trigger::NetlinkOverrun.rereads_flows());
        assert!(!event("LogicalSwitchPortProviderCreateEvent").rereads_flows());
        assert!(!Trigger::Resync {
            database: obgp_ovn::NB_DB.into()
        }
        .rereads_flows());
        assert!(!Trigger::FrrCheck.rereads_flows());
        assert!(Trigger::NetlinkOverrun.rereads_node());
        assert!(!Trigger::Periodic.rereads_node());
    }

    #[test]
    fn timers_reread_ovs_and_frr_in_the_background_and_drift_reads_them_at_once() {
        for timer in [Trigger::Periodic, Trigger::FrrCheck, Trigger::Retry] {
            assert!(timer.rereads_in_background(), "{timer}");
        }
        for now in [
            Trigger::Drift,
            Trigger::Startup,
            Trigger::Manual,
            Trigger::NetlinkOverrun,
            event(LOCAL_OVS_CHANGE),
        ] {
            assert!(!now.rereads_in_background(), "{now}");
        }
        assert!(Trigger::Drift.rereads_flows() && Trigger::Drift.checks_frr());
        assert!(!Trigger::Drift.opens_merge_window() && !Trigger::Drift.recomputes_desired());
    }

    #[test]
    fn what_the_command_lane_settled_is_planned_with_and_never_read_again() {
        let r = Trigger::CommandsSettled;
        // Re-reading here would ask the lane again, which would signal
        // again: a loop.
        assert!(!r.rereads_flows() && !r.checks_frr() && !r.rereads_node());
        assert!(!r.recomputes_desired() && !r.opens_merge_window());
    }

    #[test]
    fn only_ovn_events_plan_the_changed_objects_alone() {
        assert!(event("LogicalSwitchPortProviderCreateEvent").plans_changes_only());
        assert!(!event(LOCAL_OVS_CHANGE).plans_changes_only());
        assert!(!event(LOCAL_CLUSTER_CHANGE).plans_changes_only());
        for full in [
            Trigger::Startup,
            Trigger::Periodic,
            Trigger::FrrCheck,
            Trigger::Resync {
                database: obgp_ovn::NB_DB.into(),
            },
            Trigger::NetlinkOverrun,
            Trigger::Manual,
            Trigger::Retry,
            Trigger::Drift,
            Trigger::DesiredMismatch,
            Trigger::CommandsSettled,
        ] {
            assert!(!full.plans_changes_only(), "{full}");
        }
    }

    #[test]
    fn full_reconciles_recompute_the_desired_state_and_events_patch_it() {
        for full in [
            Trigger::Startup,
            Trigger::Periodic,
            Trigger::NetlinkOverrun,
            Trigger::Manual,
            Trigger::Retry,
        ] {
            assert!(full.recomputes_desired(), "{full}");
        }
        assert!(!event("LogicalSwitchPortProviderCreateEvent").recomputes_desired());
        assert!(!Trigger::FrrCheck.recomputes_desired());
        assert!(Trigger::DesiredMismatch.recomputes_desired());
        assert!(!Trigger::DesiredMismatch.rereads_in_background());
        // A database resync rebuilds the snapshot, whose changes are then
        // not known: the cache computes in full by itself.
        assert!(!Trigger::Resync {
            database: obgp_ovn::NB_DB.into()
        }
        .recomputes_desired());
    }
}
