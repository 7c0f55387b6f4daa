//! Which event classes each driver watches, and ovsdbapp's matching order:
//! table, event type, class condition, then the predicate.
//!
//! Over 700 lines because it is a table: one entry per event class and
//! driver, kept in one place so that the matching order reads top to bottom.

use obgp_config::{AdvertisementMethod, DefaultSection, Driver, ExposingMethod};
use obgp_ovn::neutron::nat_type;
use obgp_ovsdb_data::{Change, ChangeKind};

use crate::agent::AgentView;
use crate::view::{RowView, Val};
use crate::{evpn, nb, sb, Event, EventKind, Predicate};

use EventKind::{Create, Delete, Update};

/// The upstream watcher module a class comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Watcher {
    /// `bgp_watcher` (SB drivers), including `base_watcher`'s chassis events.
    Bgp,
    /// `nb_bgp_watcher` (NB driver), including `base_watcher.FipOnCRLRPBaseEvent`.
    NbBgp,
    /// `evpn_watcher` (EVPN driver).
    Evpn,
}

impl Watcher {
    /// Upstream's module name.
    pub fn module(self) -> &'static str {
        match self {
            Watcher::Bgp => "bgp_watcher",
            Watcher::NbBgp => "nb_bgp_watcher",
            Watcher::Evpn => "evpn_watcher",
        }
    }
}

/// A class condition ovsdbapp checks on the row before the predicate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassCondition {
    None,
    /// `('type', '=', 'dnat_and_snat')` (the NAT events).
    NatDnatAndSnat,
    /// `('name', '=', agent.chassis)` (Chassis / Chassis_Private creates).
    NameIsOurChassis,
}

impl ClassCondition {
    fn holds(self, row: &RowView<'_>, view: &dyn AgentView) -> bool {
        let text = |c| row.text(c).unwrap_or(Val::None);
        match self {
            ClassCondition::None => true,
            ClassCondition::NatDnatAndSnat => text("type").is(nat_type::DNAT_AND_SNAT),
            ClassCondition::NameIsOurChassis => text("name").is(view.chassis()),
        }
    }
}

/// One upstream event class: where it listens and how it decides.
#[derive(Clone, Copy)]
pub struct Filter {
    /// Upstream's class name, used as the reconcile reason.
    pub class: &'static str,
    pub watcher: Watcher,
    pub table: &'static str,
    pub events: &'static [EventKind],
    pub condition: ClassCondition,
    pub predicate: Predicate,
}

impl std::fmt::Debug for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.watcher.module(), self.class)
    }
}

impl Filter {
    /// ovsdbapp's `RowEvent.matches`: the table and event type are this
    /// class's, the condition holds, then the predicate. A predicate that
    /// raises (upstream would abort the notification) is logged and counts
    /// as no match: the next periodic reconcile covers whatever it missed.
    pub fn matches(
        &self,
        table: &str,
        kind: EventKind,
        row: RowView<'_>,
        old: RowView<'_>,
        view: &dyn AgentView,
    ) -> bool {
        if table != self.table || !self.events.contains(&kind) || !self.condition.holds(&row, view)
        {
            return false;
        }
        match (self.predicate)(Event::Is(kind), row, old, view) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(class = self.class, table, event = kind.as_str(), error = %e, "event predicate raised; treating as no match");
                false
            }
        }
    }
}

const fn f(
    watcher: Watcher,
    class: &'static str,
    table: &'static str,
    events: &'static [EventKind],
    condition: ClassCondition,
    predicate: Predicate,
) -> Filter {
    Filter {
        class,
        watcher,
        table,
        events,
        condition,
        predicate,
    }
}

const PB: &str = "Port_Binding";
const LSP: &str = "Logical_Switch_Port";
const LRP: &str = "Logical_Router_Port";
const LB: &str = "Load_Balancer";
use ClassCondition::{NameIsOurChassis, NatDnatAndSnat};
const NO: ClassCondition = ClassCondition::None;
use Watcher::{Bgp, Evpn, NbBgp};

static CATALOG: &[Filter] = &[
    // bgp_watcher (+ base_watcher chassis events)
    f(
        Bgp,
        "PortBindingChassisCreatedEvent",
        PB,
        &[Update],
        NO,
        sb::port_binding_chassis_created,
    ),
    f(
        Bgp,
        "PortBindingChassisDeletedEvent",
        PB,
        &[Update, Delete],
        NO,
        sb::port_binding_chassis_deleted,
    ),
    f(Bgp, "FIPSetEvent", PB, &[Update], NO, sb::fip_set_unset),
    f(Bgp, "FIPUnsetEvent", PB, &[Update], NO, sb::fip_set_unset),
    f(
        Bgp,
        "SubnetRouterAttachedEvent",
        PB,
        &[Create],
        NO,
        sb::subnet_router_attached,
    ),
    f(
        Bgp,
        "SubnetRouterUpdateEvent",
        PB,
        &[Update],
        NO,
        sb::subnet_router_update,
    ),
    f(
        Bgp,
        "SubnetRouterDetachedEvent",
        PB,
        &[Delete],
        NO,
        sb::subnet_router_detached,
    ),
    f(
        Bgp,
        "TenantPortCreatedEvent",
        PB,
        &[Update],
        NO,
        sb::tenant_port_created,
    ),
    f(
        Bgp,
        "TenantPortDeletedEvent",
        PB,
        &[Update, Delete],
        NO,
        sb::tenant_port_deleted,
    ),
    f(
        Bgp,
        "OVNLBVIPPortEvent",
        PB,
        &[Create, Delete],
        NO,
        sb::ovn_lb_vip_port,
    ),
    f(
        Bgp,
        "OVNLBMemberCreateEvent",
        LB,
        &[Create],
        NO,
        sb::ovn_lb_member_create,
    ),
    f(
        Bgp,
        "OVNLBMemberDeleteEvent",
        LB,
        &[Delete],
        NO,
        sb::ovn_lb_member_delete,
    ),
    f(
        Bgp,
        "LocalnetCreateDeleteEvent",
        PB,
        &[Create, Delete],
        NO,
        sb::localnet_create_delete,
    ),
    f(
        Bgp,
        "ChassisCreateEvent",
        "Chassis",
        &[Create],
        NameIsOurChassis,
        sb::always,
    ),
    f(
        Bgp,
        "ChassisPrivateCreateEvent",
        "Chassis_Private",
        &[Create],
        NameIsOurChassis,
        sb::always,
    ),
    // nb_bgp_watcher (+ base_watcher.FipOnCRLRPBaseEvent)
    f(
        NbBgp,
        "LogicalSwitchPortProviderCreateEvent",
        LSP,
        &[Update],
        NO,
        nb::lsp_provider_create,
    ),
    f(
        NbBgp,
        "LogicalSwitchPortProviderDeleteEvent",
        LSP,
        &[Update, Delete],
        NO,
        nb::lsp_provider_delete,
    ),
    f(
        NbBgp,
        "LogicalSwitchPortFIPCreateEvent",
        LSP,
        &[Update],
        NO,
        nb::lsp_fip_create,
    ),
    f(
        NbBgp,
        "LogicalSwitchPortFIPDeleteEvent",
        LSP,
        &[Update, Delete],
        NO,
        nb::lsp_fip_delete,
    ),
    f(
        NbBgp,
        "LogicalSwitchUpdateEvent",
        "Logical_Switch",
        &[Update, Delete],
        NO,
        nb::logical_switch_update,
    ),
    f(
        NbBgp,
        "LocalnetCreateDeleteEvent",
        LSP,
        &[Create, Delete],
        NO,
        nb::localnet_create_delete,
    ),
    f(
        NbBgp,
        "ChassisRedirectCreateEvent",
        LRP,
        &[Update],
        NO,
        nb::chassis_redirect_create,
    ),
    f(
        NbBgp,
        "ChassisRedirectDeleteEvent",
        LRP,
        &[Update, Delete],
        NO,
        nb::chassis_redirect_delete,
    ),
    f(
        NbBgp,
        "LogicalSwitchPortSubnetAttachEvent",
        LSP,
        &[Update],
        NO,
        nb::lsp_subnet_attach,
    ),
    f(
        NbBgp,
        "LogicalSwitchPortSubnetDetachEvent",
        LSP,
        &[Update, Delete],
        NO,
        nb::lsp_subnet_detach,
    ),
    f(
        NbBgp,
        "LogicalSwitchPortTenantCreateEvent",
        LSP,
        &[Update],
        NO,
        nb::lsp_tenant_create,
    ),
    f(
        NbBgp,
        "LogicalSwitchPortTenantDeleteEvent",
        LSP,
        &[Update, Delete],
        NO,
        nb::lsp_tenant_delete,
    ),
    f(
        NbBgp,
        "OVNLBCreateEvent",
        LB,
        &[Update],
        NO,
        nb::ovn_lb_create,
    ),
    f(
        NbBgp,
        "OVNLBDeleteEvent",
        LB,
        &[Delete, Update],
        NO,
        nb::ovn_lb_delete,
    ),
    f(NbBgp, "OVNPFCreateEvent", LB, &[Create], NO, nb::ovn_pf),
    f(NbBgp, "OVNPFDeleteEvent", LB, &[Delete], NO, nb::ovn_pf),
    f(
        NbBgp,
        "NATMACAddedEvent",
        "NAT",
        &[Update],
        NatDnatAndSnat,
        nb::nat_mac_added,
    ),
    f(
        NbBgp,
        "ExposeFIPOnCRLRP",
        "NAT",
        &[Create],
        NatDnatAndSnat,
        nb::fip_on_cr_lrp,
    ),
    f(
        NbBgp,
        "WithdrawFIPOnCRLRP",
        "NAT",
        &[Delete],
        NatDnatAndSnat,
        nb::fip_on_cr_lrp,
    ),
    f(
        NbBgp,
        "CrLrpChassisChangeExposeEvent",
        LRP,
        &[Update],
        NO,
        nb::cr_lrp_chassis_change_expose,
    ),
    f(
        NbBgp,
        "CrLrpChassisChangeWithdrawEvent",
        LRP,
        &[Update],
        NO,
        nb::cr_lrp_chassis_change_withdraw,
    ),
    f(
        NbBgp,
        "DistributedFlagChangedEvent",
        "NB_Global",
        &[Update],
        NO,
        nb::distributed_flag_changed,
    ),
    // evpn_watcher (+ base_watcher chassis events)
    f(
        Evpn,
        "PortBindingChassisCreatedEvent",
        PB,
        &[Update],
        NO,
        evpn::port_binding_chassis_created,
    ),
    f(
        Evpn,
        "PortBindingChassisDeletedEvent",
        PB,
        &[Update, Delete],
        NO,
        evpn::port_binding_chassis_deleted,
    ),
    f(
        Evpn,
        "SubnetRouterAttachedEvent",
        PB,
        &[Update, Create],
        NO,
        evpn::subnet_router_attached,
    ),
    f(
        Evpn,
        "SubnetRouterDetachedEvent",
        PB,
        &[Update, Delete],
        NO,
        evpn::subnet_router_detached,
    ),
    f(
        Evpn,
        "TenantPortCreatedEvent",
        PB,
        &[Update],
        NO,
        evpn::tenant_port_created,
    ),
    f(
        Evpn,
        "TenantPortDeletedEvent",
        PB,
        &[Delete, Update],
        NO,
        evpn::tenant_port_deleted,
    ),
    f(
        Evpn,
        "LocalnetCreateDeleteEvent",
        PB,
        &[Create, Delete],
        NO,
        sb::localnet_create_delete,
    ),
    f(
        Evpn,
        "ChassisCreateEvent",
        "Chassis",
        &[Create],
        NameIsOurChassis,
        sb::always,
    ),
    f(
        Evpn,
        "ChassisPrivateCreateEvent",
        "Chassis_Private",
        &[Create],
        NameIsOurChassis,
        sb::always,
    ),
];

/// Every upstream event class with a predicate, across the three watchers.
pub fn catalog() -> &'static [Filter] {
    CATALOG
}

/// The class `class` of watcher `module` (`"nb_bgp_watcher"`...). Chassis
/// events (upstream `base_watcher`) are found under `bgp_watcher` and
/// `evpn_watcher`, FIP-on-gateway events under `nb_bgp_watcher`.
pub fn filter(module: &str, class: &str) -> Option<&'static Filter> {
    CATALOG
        .iter()
        .find(|f| f.watcher.module() == module && f.class == class)
}

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
    /// The stretched-L2 driver: the agent's own wake-ups
    /// ([`crate::stretched`]) come on top of upstream's classes.
    stretched_l2: bool,
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
                    // l2vni): annotation changes and localnets both shape
                    // its L2 VNIs.
                    ExposingMethod::L2vni => {
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
            stretched_l2: config.driver == Driver::OvnStretchedL2BgpDriver,
        }
    }

    /// The agent's own reasons for `change`, beyond upstream's classes
    /// (the stretched-L2 driver's, [`crate::stretched::reasons`]).
    pub fn own_reasons(&self, change: &Change) -> Vec<&'static str> {
        if self.stretched_l2 {
            crate::stretched::reasons(change)
        } else {
            Vec::new()
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

#[cfg(test)]
mod tests;
