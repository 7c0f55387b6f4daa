//! Event filters: whether an OVSDB update deserves a reconcile.
//!
//! One pure predicate per upstream watcher event class (`bgp_watcher` →
//! [`sb`], `nb_bgp_watcher` → [`nb`], `evpn_watcher` → [`evpn`]), deciding
//! exactly as upstream's `match_fn`, plus the per-driver registry
//! ([`registry`]) that applies ovsdbapp's pre-checks (table, event type,
//! class condition) before the predicate. A match never touches the node: the
//! run loop schedules a reconcile and logs the class names as its reasons.
//!
//! Inputs follow ovsdbapp: the updated row ([`RowView::complete`]), `old`
//! holding only the changed columns ([`RowView::listed`], or
//! [`RowView::none`] for creates and deletes), and the agent state the
//! predicates read ([`AgentView`]).

pub mod agent;
pub mod bgpvpn_own;
pub mod evpn;
pub mod evpn_own;
pub mod nb;
pub mod nb_own;
pub mod neutron;
pub mod registry;
pub mod sb;
pub mod stretched;
pub mod view;

#[cfg(any(test, feature = "test-support"))]
pub mod fake;

pub use agent::AgentView;
pub use registry::{catalog, filter, ClassCondition, Filter, Filters, Watcher};
pub use view::{Raised, RowView, Val};

/// The kind of change ovsdbapp reports for a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    Create,
    Update,
    Delete,
}

impl EventKind {
    /// ovsdbapp's name (`"create"`, `"update"`, `"delete"`).
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Create => "create",
            EventKind::Update => "update",
            EventKind::Delete => "delete",
        }
    }
}

/// The event argument a predicate receives. In production it is always one
/// [`EventKind`]. Upstream's unit tests call `match_fn` directly with other
/// values too, which the predicates handle with ordinary `==` semantics: a
/// bare mock or `None` equals no kind, `mock.ANY` equals every kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Is(EventKind),
    /// Equal to none of create/update/delete.
    Neither,
    /// Equal to all of them.
    Any,
}

impl Event {
    /// Python's `event == <kind>`.
    pub fn is(self, kind: EventKind) -> bool {
        match self {
            Event::Is(k) => k == kind,
            Event::Neither => false,
            Event::Any => true,
        }
    }
}

impl From<EventKind> for Event {
    fn from(k: EventKind) -> Event {
        Event::Is(k)
    }
}

/// A predicate: upstream's `match_fn(event, row, old)` against the agent
/// state. `Ok(b)` is `bool(result)`; `Err` is the exception upstream's
/// `match_fn` let escape (the registry treats it as no match).
pub type Predicate =
    for<'a> fn(Event, RowView<'a>, RowView<'a>, &'a dyn AgentView) -> Result<bool, Raised>;
