//! What changed in the NB and local OVS rows, as a value: [`NbChanges`].
//!
//! [`LiveSnapshot`](crate::LiveSnapshot) returns one from every update it
//! applies, deciding while it patches whether only ports changed (it knows
//! which rows and indexes it touched). The caller accumulates them between
//! computations ([`NbChanges::then`]) and hands them to the incremental
//! desired state, which patches only the changed ports when nothing else
//! changed.
//!
//! Each value names the two snapshot states it lies between (their
//! [`RowsVersion`]), so that changes paired with the wrong snapshots (a
//! batch dropped on the way, an earlier snapshot not the one computed from)
//! are not taken for the changes in between: [`NbChanges::ports_between`]
//! answers only for the exact pair, and a merge of non-adjacent values is
//! [`NbChanges::Full`].

use std::collections::BTreeMap;
use std::sync::Arc;

use obgp_ovsdb_data::Uuid;

use crate::nb::LogicalSwitchPort;
use crate::rows_version::RowsVersion;
use crate::snapshot::Snapshot;

/// A Logical_Switch_Port as an earlier snapshot had it and as a later one
/// has it (`None`: absent, or not parsed).
#[derive(Clone, Debug)]
pub struct PortChange {
    pub uuid: Uuid,
    pub old: Option<Arc<LogicalSwitchPort>>,
    pub new: Option<Arc<LogicalSwitchPort>>,
}

/// The Logical_Switch_Port rows that changed between two snapshot states,
/// when nothing else the NB driver reads did (see [`NbChanges::Ports`]).
#[derive(Clone, Debug)]
pub struct PortChanges {
    since: RowsVersion,
    until: RowsVersion,
    ports: BTreeMap<Uuid, PortChange>,
}

impl PortChanges {
    /// The changed ports, in uuid order: each one's first old row and last
    /// new row.
    pub fn iter(&self) -> impl Iterator<Item = &PortChange> {
        self.ports.values()
    }

    pub fn len(&self) -> usize {
        self.ports.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }
}

/// What changed in the NB and local OVS rows between two snapshots.
#[derive(Clone, Debug, Default)]
pub enum NbChanges {
    /// Only these ports changed: the NB rows changed are
    /// Logical_Switch_Port rows that are neither localnets nor up router
    /// interfaces before or after, switches whose name stayed (a switch's
    /// `ports` changes with every port) without their localnets changing,
    /// and NB_Global rows while the NB_Global the agent reads stayed; the
    /// local OVS view stayed. Every NB query but those about ports (`lsp`,
    /// `active_vifs_*`) answers as before.
    Ports(PortChanges),
    /// More than ports changed (a switch renamed, created or deleted; a
    /// localnet or router-interface port; a router, router port, NAT, load
    /// balancer, DHCP_Options row; the NB_Global read; the local OVS view; a
    /// reset), or what changed is not known: compute from every row.
    #[default]
    Full,
}

impl NbChanges {
    /// No changes yet: where an accumulation starts when the state it
    /// starts from is not at hand; the first changes appended are taken as
    /// they are.
    pub fn none() -> NbChanges {
        NbChanges::ports(
            RowsVersion::default(),
            RowsVersion::default(),
            BTreeMap::new(),
        )
    }

    /// Nothing changed since `snap`: what a computation from `snap` leaves
    /// to accumulate on.
    pub fn none_since(snap: &Snapshot) -> NbChanges {
        NbChanges::Ports(PortChanges {
            since: snap.version,
            until: snap.version,
            ports: BTreeMap::new(),
        })
    }

    /// The port changes from `since` to `until` (a [`crate::LiveSnapshot`]'s
    /// states before and after an update).
    pub(crate) fn ports(
        since: RowsVersion,
        until: RowsVersion,
        ports: BTreeMap<Uuid, PortChange>,
    ) -> NbChanges {
        NbChanges::Ports(PortChanges {
            since,
            until,
            ports,
        })
    }

    /// Whether more than ports changed, or what changed is not known.
    pub fn is_full(&self) -> bool {
        matches!(self, NbChanges::Full)
    }

    /// Appends `later`, the changes that followed these: a port keeps its
    /// first old row and takes the last new one. [`NbChanges::Full`] when
    /// either is, or when `later` does not start where these end (a batch
    /// in between was lost).
    pub fn then(&mut self, later: NbChanges) {
        let merged = match (std::mem::take(self), later) {
            (NbChanges::Ports(none), later) if none.since.is_unknown() && none.is_empty() => later,
            (NbChanges::Ports(mut first), NbChanges::Ports(next)) if first.until.is(next.since) => {
                for (uuid, change) in next.ports {
                    first
                        .ports
                        .entry(uuid)
                        .and_modify(|c| c.new = change.new.clone())
                        .or_insert(change);
                }
                first.until = next.until;
                NbChanges::Ports(first)
            }
            _ => NbChanges::Full,
        };
        *self = merged;
    }

    /// The changed ports when these are exactly the changes from `earlier`
    /// to `later` and only ports changed; `None` otherwise (compute from
    /// every row).
    pub fn ports_between(&self, earlier: &Snapshot, later: &Snapshot) -> Option<&PortChanges> {
        match self {
            NbChanges::Ports(p) if p.since.is(earlier.version) && p.until.is(later.version) => {
                Some(p)
            }
            _ => None,
        }
    }
}
