//! Which event classes each driver watches: the classes its `_get_events`
//! / `_get_base_events` register for a configuration, picked from the
//! catalog by name, and the match of a change against them in registry
//! order.

use obgp_config::{AdvertisementMethod, DefaultSection, Driver, ExposingMethod};
use obgp_ovsdb_data::{Change, ChangeKind};

use super::Watcher::{Bgp, Evpn, NbBgp};
use super::{Filter, Watcher, CATALOG};
use crate::agent::AgentView;
use crate::view::RowView;
use crate::EventKind;

fn named(watcher: Watcher, classes: &[&str]) -> Vec<&'static Filter> {
    classes
        .iter()
        .map(|c| {
            CATALOG
                .iter()
                .find(|f| f.watcher == watcher && f.class == *c)
                .unwrap_or_else(|| panic!("registry names unknown class {c}"))
        })
        .collect()
}

/// NB classes watched only in distributed (true) or centralized (false) FIP
/// mode; upstream swaps them when the flag changes.
const NB_DISTRIBUTED: &[&str] = &[
    "NATMACAddedEvent",
    "LogicalSwitchPortFIPCreateEvent",
    "LogicalSwitchPortFIPDeleteEvent",
];
const NB_CENTRALIZED: &[&str] = &[
    "ExposeFIPOnCRLRP",
    "WithdrawFIPOnCRLRP",
    "CrLrpChassisChangeExposeEvent",
    "CrLrpChassisChangeWithdrawEvent",
];

/// The event classes one driver watches, as its `_get_events` /
/// `_get_base_events` register them for a given configuration.
#[derive(Clone, Debug)]
pub struct Filters {
    always: Vec<&'static Filter>,
    /// NB only: watched while FIPs are distributed / centralized.
    distributed: Vec<&'static Filter>,
    centralized: Vec<&'static Filter>,
    /// Whose own wake-ups come on top of upstream's classes (`own.rs`).
    pub(super) driver: Driver,
    /// The NB EVPN methods (`vrf`, `l2vni`, `dynamic`): switches' bgpvpn
    /// annotations are watched whole ([`crate::bgpvpn_own`]).
    pub(super) bgpvpn_annotations: bool,
}

impl Filters {
    /// The classes the configured driver registers.
    pub fn for_config(config: &DefaultSection) -> Filters {
        let tenant = config.expose_tenant_networks || config.expose_ipv6_gua_tenant_networks;
        let mut always;
        let (mut distributed, mut centralized) = (Vec::new(), Vec::new());
        match config.driver {
            Driver::OvnBgpDriver => {
                always = named(
                    Bgp,
                    &[
                        "PortBindingChassisCreatedEvent",
                        "PortBindingChassisDeletedEvent",
                        "FIPSetEvent",
                        "FIPUnsetEvent",
                        "OVNLBMemberCreateEvent",
                        "OVNLBMemberDeleteEvent",
                        "ChassisCreateEvent",
                        "ChassisPrivateCreateEvent",
                        "LocalnetCreateDeleteEvent",
                    ],
                );
                if tenant {
                    always.extend(named(
                        Bgp,
                        &[
                            "SubnetRouterAttachedEvent",
                            "SubnetRouterDetachedEvent",
                            "TenantPortCreatedEvent",
                            "TenantPortDeletedEvent",
                            "OVNLBVIPPortEvent",
                        ],
                    ));
                }
            }
            Driver::OvnStretchedL2BgpDriver => {
                always = named(
                    Bgp,
                    &[
                        "SubnetRouterAttachedEvent",
                        "SubnetRouterUpdateEvent",
                        "SubnetRouterDetachedEvent",
                        "PortBindingChassisCreatedEvent",
                        "PortBindingChassisDeletedEvent",
                    ],
                );
            }
            Driver::OvnEvpnDriver => {
                always = named(
                    Evpn,
                    &[
                        "PortBindingChassisCreatedEvent",
                        "PortBindingChassisDeletedEvent",
                        "SubnetRouterAttachedEvent",
                        "SubnetRouterDetachedEvent",
                        "TenantPortCreatedEvent",
                        "TenantPortDeletedEvent",
                        "ChassisCreateEvent",
                        "ChassisPrivateCreateEvent",
                        "LocalnetCreateDeleteEvent",
                    ],
                );
            }
            Driver::NbOvnBgpDriver => {
                always = named(
                    NbBgp,
                    &[
                        "LogicalSwitchPortProviderCreateEvent",
                        "LogicalSwitchPortProviderDeleteEvent",
                        "OVNLBCreateEvent",
                        "OVNLBDeleteEvent",
                        "OVNPFCreateEvent",
                        "OVNPFDeleteEvent",
                        "ChassisRedirectCreateEvent",
                        "ChassisRedirectDeleteEvent",
                        "DistributedFlagChangedEvent",
                    ],
                );
                match config.exposing_method {
                    ExposingMethod::Vrf => {
                        always.extend(named(NbBgp, &["LogicalSwitchUpdateEvent"]));
                    }
                    // The rewrite's own choice (upstream never registers
                    // l2vni or dynamic): annotation changes and localnets
                    // both shape the L2 VNIs; dynamic is the union of the
                    // three methods' registrations (an annotation added,
                    // changed or removed moves a network between them).
                    ExposingMethod::L2vni | ExposingMethod::Dynamic => {
                        always.extend(named(
                            NbBgp,
                            &["LogicalSwitchUpdateEvent", "LocalnetCreateDeleteEvent"],
                        ));
                    }
                    _ => always.extend(named(NbBgp, &["LocalnetCreateDeleteEvent"])),
                }
                if tenant {
                    always.extend(named(
                        NbBgp,
                        &[
                            "LogicalSwitchPortSubnetAttachEvent",
                            "LogicalSwitchPortSubnetDetachEvent",
                        ],
                    ));
                    if config.advertisement_method_tenant_networks == AdvertisementMethod::Host {
                        always.extend(named(
                            NbBgp,
                            &[
                                "LogicalSwitchPortTenantCreateEvent",
                                "LogicalSwitchPortTenantDeleteEvent",
                            ],
                        ));
                    }
                }
                distributed = named(NbBgp, NB_DISTRIBUTED);
                centralized = named(NbBgp, NB_CENTRALIZED);
            }
        }
        Filters {
            always,
            distributed,
            centralized,
            driver: config.driver,
            bgpvpn_annotations: config.driver == Driver::NbOvnBgpDriver
                && matches!(
                    config.exposing_method,
                    ExposingMethod::Vrf | ExposingMethod::L2vni | ExposingMethod::Dynamic
                ),
        }
    }

    /// Every class this driver may watch (both FIP modes for NB).
    pub fn all(&self) -> impl Iterator<Item = &'static Filter> + '_ {
        self.always
            .iter()
            .chain(&self.distributed)
            .chain(&self.centralized)
            .copied()
    }

    /// The tables whose changes can match (what the monitor must cover).
    pub fn tables(&self) -> Vec<&'static str> {
        let mut t: Vec<&'static str> = self.all().map(|f| f.table).collect();
        t.sort_unstable();
        t.dedup();
        t
    }

    /// [`Filters::matching`] for one change of the OVSDB cache, mapped to
    /// ovsdbapp's arguments: insert → (create, new row, no old); update →
    /// (update, new row, the changed columns); delete → (delete, the deleted
    /// row, no old).
    pub fn matching_change(&self, change: &Change, view: &dyn AgentView) -> Vec<&'static str> {
        let (kind, row, old) = match change.kind {
            ChangeKind::Insert => (EventKind::Create, change.new.as_deref(), None),
            ChangeKind::Update => (
                EventKind::Update,
                change.new.as_deref(),
                change.old.as_deref(),
            ),
            ChangeKind::Delete => (EventKind::Delete, change.old.as_deref(), None),
        };
        let Some(row) = row else {
            tracing::warn!(table = %change.table, uuid = %change.uuid, "change without a row; ignored by the event filters");
            return Vec::new();
        };
        let old = old.map_or_else(RowView::none, RowView::listed);
        self.matching(&change.table, kind, RowView::complete(row), old, view)
    }

    /// The classes (reconcile reasons) an update matches, in registry order.
    /// The NB FIP classes follow `view.distributed()` at match time, as
    /// upstream re-registers them when the flag flips.
    pub fn matching(
        &self,
        table: &str,
        kind: EventKind,
        row: RowView<'_>,
        old: RowView<'_>,
        view: &dyn AgentView,
    ) -> Vec<&'static str> {
        let mode: &[&'static Filter] = if self.distributed.is_empty() && self.centralized.is_empty()
        {
            &[]
        } else if view.distributed() {
            &self.distributed
        } else {
            &self.centralized
        };
        self.always
            .iter()
            .chain(mode)
            .filter(|f| f.matches(table, kind, row, old, view))
            .map(|f| f.class)
            .collect()
    }
}
