//! What one batch of triggers asks of the loop: the kind of reconcile it
//! runs ([`ReconcileKind`]: what to re-read, whether to recompute the
//! desired state, whether the plan may be event-scoped) and the background
//! checks after it ([`BackgroundChecks`]). Both are built from the batch's
//! reasons by pure functions; the rule of each reason lives on
//! [`Trigger`], how a batch merges them lives here.

use crate::queue::TriggerBatch;
use crate::Trigger;

/// What of the node a reconcile reads afresh before it observes, instead
/// of trusting what the netlink mirror and the command lane already hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reread {
    /// Full netlink dumps instead of the mirror: it lost notifications.
    /// Implies [`Reread::ovs_flows`].
    pub node_dumps: bool,
    /// The OVS bridges' ports and agent flows (`ovs-ofctl`).
    pub ovs_flows: bool,
    /// FRR's running configuration (`vtysh`); otherwise FRR counts as
    /// holding our text when it is the one last applied.
    pub frr: bool,
}

/// The kind of one reconcile, the argument of
/// [`Reconciler::reconcile`](crate::Reconciler::reconcile) and
/// [`Reconciler::compute_observe_and_plan`](crate::Reconciler::compute_observe_and_plan): the daemon builds it from
/// the batch the work queue merged ([`ReconcileKind::for_batch`]), the
/// one-shot commands pass [`ReconcileKind::one_shot`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReconcileKind {
    /// What to read afresh.
    pub reread: Reread,
    /// Compute the desired state from every row instead of patching the
    /// last one.
    pub recompute_desired: bool,
    /// Plan only the node objects the desired state's patches changed
    /// (`obgp_plan::plan_changes`), when it was patched; the whole node
    /// otherwise. Drift on the node is left to the other kinds.
    pub plan_changes_only: bool,
}

impl ReconcileKind {
    /// What `reconcile --once`, `plan`, `status` and `explain` run: FRR is
    /// read; the node and the OVS bridges are read fresh anyway by a
    /// reconciler just connected, and its desired state is computed from
    /// every row the first time. The whole node is planned.
    pub fn one_shot() -> ReconcileKind {
        ReconcileKind {
            reread: Reread {
                frr: true,
                ..Reread::default()
            },
            ..ReconcileKind::default()
        }
    }

    /// The kind of reconcile `batch` asks for. Any reason that asks for a
    /// re-read or a full computation gets it, except that a batch of
    /// timers alone ([`Trigger::rereads_in_background`]) leaves the OVS/FRR
    /// re-read and the full computation to the background checks after it
    /// ([`BackgroundChecks::for_batch`]); a netlink overrun's dumps are
    /// never put off. The plan is event-scoped only when every reason
    /// allows it.
    pub fn for_batch(batch: &TriggerBatch) -> ReconcileKind {
        let reasons = || batch.reasons.keys();
        let in_background = rereads_in_background(batch);
        let node_dumps = reasons().any(Trigger::rereads_node);
        ReconcileKind {
            reread: Reread {
                node_dumps,
                ovs_flows: node_dumps || (!in_background && reasons().any(Trigger::rereads_flows)),
                frr: !in_background && reasons().any(Trigger::checks_frr),
            },
            recompute_desired: !in_background && reasons().any(Trigger::recomputes_desired),
            plan_changes_only: !batch.reasons.is_empty()
                && reasons().all(Trigger::plans_changes_only),
        }
    }
}

/// The checks the loop starts in the background after a reconcile, at the
/// lowest CPU priority: what a timer-driven batch put off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackgroundChecks {
    /// Re-read the OVS bridges and FRR (`obgp_node::DriftProbe`); drift
    /// triggers [`Trigger::Drift`].
    pub drift: bool,
    /// Compute the desired state in full and compare it with the patched
    /// one; a difference triggers [`Trigger::DesiredMismatch`].
    pub desired: bool,
}

impl BackgroundChecks {
    /// The background checks after a reconcile of `batch`: only a batch
    /// of timers alone has any, the full desired-state check only when one
    /// of them would have recomputed it.
    pub fn for_batch(batch: &TriggerBatch) -> BackgroundChecks {
        let in_background = rereads_in_background(batch);
        BackgroundChecks {
            drift: in_background,
            desired: in_background && batch.reasons.keys().any(Trigger::recomputes_desired),
        }
    }
}

/// Whether every reason of `batch` lets OVS and FRR be re-read in the
/// background after the reconcile ([`Trigger::rereads_in_background`]).
fn rereads_in_background(batch: &TriggerBatch) -> bool {
    batch.reasons.keys().all(Trigger::rereads_in_background)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::{LOCAL_CLUSTER_CHANGE, LOCAL_OVS_CHANGE};
    use crate::test_support::lsp_event as event;

    fn batch(reasons: impl IntoIterator<Item = Trigger>) -> TriggerBatch {
        TriggerBatch {
            reasons: reasons.into_iter().map(|r| (r, 1)).collect(),
            ..TriggerBatch::default()
        }
    }

    fn kind(reasons: impl IntoIterator<Item = Trigger>) -> ReconcileKind {
        ReconcileKind::for_batch(&batch(reasons))
    }

    fn checks(reasons: impl IntoIterator<Item = Trigger>) -> BackgroundChecks {
        BackgroundChecks::for_batch(&batch(reasons))
    }

    const NOTHING: Reread = Reread {
        node_dumps: false,
        ovs_flows: false,
        frr: false,
    };
    const FLOWS: Reread = Reread {
        ovs_flows: true,
        ..NOTHING
    };
    const FLOWS_AND_FRR: Reread = Reread {
        ovs_flows: true,
        frr: true,
        ..NOTHING
    };

    #[test]
    fn an_ovn_event_patches_and_plans_only_what_changed() {
        assert_eq!(
            kind([event("LogicalSwitchPortProviderCreateEvent")]),
            ReconcileKind {
                reread: NOTHING,
                recompute_desired: false,
                plan_changes_only: true,
            }
        );
        assert_eq!(
            checks([event("LogicalSwitchPortProviderCreateEvent")]),
            BackgroundChecks::default()
        );
    }

    #[test]
    fn a_local_ovs_change_rereads_the_flows_and_plans_the_whole_node() {
        assert_eq!(
            kind([event(LOCAL_OVS_CHANGE)]),
            ReconcileKind {
                reread: FLOWS,
                recompute_desired: false,
                plan_changes_only: false,
            }
        );
        assert_eq!(
            kind([event(LOCAL_CLUSTER_CHANGE)]),
            ReconcileKind::default(),
            "the local NB's rows are planned whole, nothing re-read"
        );
    }

    #[test]
    fn a_resync_of_the_ovs_database_rereads_the_flows_and_of_the_nb_nothing() {
        let ovs = Trigger::Resync {
            database: obgp_ovn::OVS_DB.into(),
        };
        let nb = Trigger::Resync {
            database: obgp_ovn::NB_DB.into(),
        };
        assert_eq!(
            kind([ovs]),
            ReconcileKind {
                reread: FLOWS,
                ..ReconcileKind::default()
            }
        );
        // A rebuilt snapshot, whose changes are not known: the desired
        // cache computes in full by itself.
        assert_eq!(kind([nb]), ReconcileKind::default());
    }

    #[test]
    fn startup_and_by_hand_read_everything_but_the_dumps_and_recompute() {
        for full in [Trigger::Startup, Trigger::Manual] {
            assert_eq!(
                kind([full.clone()]),
                ReconcileKind {
                    reread: FLOWS_AND_FRR,
                    recompute_desired: true,
                    plan_changes_only: false,
                },
                "{full}"
            );
            assert_eq!(checks([full]), BackgroundChecks::default());
        }
    }

    #[test]
    fn a_netlink_overrun_rereads_the_dumps_and_the_flows_and_recomputes() {
        assert_eq!(
            kind([Trigger::NetlinkOverrun]),
            ReconcileKind {
                reread: Reread {
                    node_dumps: true,
                    ovs_flows: true,
                    frr: false,
                },
                recompute_desired: true,
                plan_changes_only: false,
            }
        );
    }

    #[test]
    fn timers_alone_read_nothing_now_and_check_in_the_background() {
        for timer in [Trigger::Periodic, Trigger::Retry] {
            assert_eq!(kind([timer.clone()]), ReconcileKind::default(), "{timer}");
            assert_eq!(
                checks([timer.clone()]),
                BackgroundChecks {
                    drift: true,
                    desired: true
                },
                "{timer}"
            );
        }
        assert_eq!(kind([Trigger::FrrCheck]), ReconcileKind::default());
        assert_eq!(
            checks([Trigger::FrrCheck]),
            BackgroundChecks {
                drift: true,
                desired: false
            },
            "an FRR check would not have recomputed"
        );
        assert_eq!(
            kind([Trigger::Periodic, Trigger::FrrCheck, Trigger::Retry]),
            ReconcileKind::default()
        );
    }

    #[test]
    fn drift_and_a_desired_mismatch_are_handled_at_once() {
        assert_eq!(
            kind([Trigger::Drift]),
            ReconcileKind {
                reread: FLOWS_AND_FRR,
                ..ReconcileKind::default()
            }
        );
        assert_eq!(
            kind([Trigger::DesiredMismatch]),
            ReconcileKind {
                recompute_desired: true,
                ..ReconcileKind::default()
            }
        );
        for now in [Trigger::Drift, Trigger::DesiredMismatch] {
            assert_eq!(checks([now]), BackgroundChecks::default());
        }
    }

    #[test]
    fn what_the_command_lane_settled_and_unnotified_side_effects_reread_nothing() {
        for follow_up in [Trigger::CommandsSettled, Trigger::UnnotifiedSideEffects] {
            assert_eq!(
                kind([follow_up.clone()]),
                ReconcileKind::default(),
                "{follow_up}"
            );
            assert_eq!(checks([follow_up]), BackgroundChecks::default());
        }
    }

    #[test]
    fn a_timer_merged_with_anything_else_is_handled_at_once() {
        let ovn = event("LogicalSwitchPortFIPCreateEvent");
        assert_eq!(
            kind([Trigger::Periodic, ovn.clone()]),
            ReconcileKind {
                reread: FLOWS_AND_FRR,
                recompute_desired: true,
                plan_changes_only: false,
            },
            "the event brings the timer's reads forward and loses its scoped plan"
        );
        assert_eq!(
            checks([Trigger::Periodic, ovn]),
            BackgroundChecks::default()
        );
        assert_eq!(
            kind([Trigger::FrrCheck, Trigger::CommandsSettled]),
            ReconcileKind {
                reread: Reread {
                    frr: true,
                    ..NOTHING
                },
                ..ReconcileKind::default()
            }
        );
    }

    #[test]
    fn a_netlink_overrun_is_never_put_off_by_a_timer() {
        let k = kind([Trigger::Periodic, Trigger::NetlinkOverrun]);
        assert!(k.reread.node_dumps && k.reread.ovs_flows, "{k:?}");
        assert!(k.recompute_desired);
    }

    #[test]
    fn the_plan_is_event_scoped_only_when_every_reason_is_an_ovn_event() {
        assert!(!kind([]).plan_changes_only, "an empty batch");
        let a = event("LogicalSwitchPortProviderCreateEvent");
        let b = event("LogicalSwitchPortFIPCreateEvent");
        assert!(kind([a.clone(), b.clone()]).plan_changes_only);
        assert!(!kind([a.clone(), event(LOCAL_OVS_CHANGE)]).plan_changes_only);
        assert!(!kind([a, b, Trigger::CommandsSettled]).plan_changes_only);
    }

    #[test]
    fn the_one_shot_commands_read_frr_and_plan_the_whole_node() {
        let k = ReconcileKind::one_shot();
        assert!(k.reread.frr);
        assert!(!k.reread.node_dumps && !k.reread.ovs_flows);
        assert!(!k.recompute_desired && !k.plan_changes_only);
    }
}
