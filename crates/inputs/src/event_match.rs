//! Which reconcile reasons an OVSDB row change carries.
//!
//! First upstream's decision tables, exactly ([`Filters::matching_change`]).
//! Then one addition of the agent's own: ovsdb-server coalesces the changes a
//! slow client has not read yet, so a row inserted with `up=false` and set
//! up 50 ms later can arrive as a single insert that is already up. The
//! update-only classes (e.g. `LogicalSwitchPortProviderCreateEvent`) never
//! see it, and upstream waits for its next sync. An insert that matches no
//! class is therefore also judged as an update from an empty row, whose
//! boolean columns (`up`) hold `false`: the port was created down, as
//! Neutron creates it. An empty `up` would read as upstream's `old.up[0]`
//! raising IndexError, which `LogicalSwitchPortFIPCreateEvent` swallows as
//! "no match": a port with a distributed FIP entering a conditional
//! monitor (moved or migrated here: the server sends it as an insert)
//! woke nothing. A spurious
//! match costs one reconcile that plans nothing; a missed one costs up to
//! `reconcile_interval` of latency. Last, the driver's own wake-ups
//! ([`Filters::own_reasons`]: the stretched-L2 driver's gateway and
//! address-scope changes on any chassis, the NB driver's FIP NAT changes
//! that concern this node).

use obgp_events::{AgentView, EventKind, Filters, RowView};
use obgp_ovsdb_data::{Atom, Change, ChangeKind, Datum, DatumKind, Row};

/// The classes `change` matches, as reconcile reasons.
pub fn reasons(filters: &Filters, change: &Change, view: &dyn AgentView) -> Vec<&'static str> {
    let mut out = upstream_reasons(filters, change, view);
    for r in filters.own_reasons(change, view) {
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

fn upstream_reasons(filters: &Filters, change: &Change, view: &dyn AgentView) -> Vec<&'static str> {
    let matched = filters.matching_change(change, view);
    if !matched.is_empty() || change.kind != ChangeKind::Insert {
        return matched;
    }
    let Some(new) = change.new.as_deref() else {
        return matched;
    };
    let old = empty_like(new);
    filters.matching(
        &change.table,
        EventKind::Update,
        RowView::complete(new),
        RowView::listed(&old),
        view,
    )
}

/// `row`'s columns, each at its type's empty value, booleans `false`: what
/// `old` holds for an update from "nothing set yet, down".
fn empty_like(row: &Row) -> Row {
    Row {
        columns: row
            .columns
            .iter()
            .map(|(name, value)| {
                let empty = match value.kind() {
                    DatumKind::Map(_) => Datum::empty_map(),
                    DatumKind::Set([Atom::Boolean(_), ..]) => Datum::scalar(Atom::Boolean(false)),
                    DatumKind::Set(_) => Datum::empty_set(),
                };
                (name.clone(), empty)
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use obgp_config::{Config, Driver};
    use obgp_events::fake::FakeAgent;
    use obgp_ovsdb_data::Uuid;

    use super::*;

    /// An agent view of a chassis `host-1` whose only provider switch is
    /// `neutron-prov`, with nothing exposed yet.
    fn view() -> FakeAgent {
        FakeAgent {
            chassis: "host-1".into(),
            chassis_id: "chassis-1".into(),
            provider_switches: vec!["neutron-prov".into()],
            distributed: true,
            ..FakeAgent::default()
        }
    }

    fn vm_port(up: bool) -> Row {
        Row::from_wire(&serde_json::json!({
            "name": "vm-1",
            "type": "",
            "up": up,
            "addresses": "fa:16:3e:00:00:01 172.24.4.10",
            "options": ["map", [["requested-chassis", "host-1"]]],
            "external_ids": ["map", [
                ["neutron:network_name", "neutron-prov"],
                ["neutron:cidrs", "172.24.4.10/24"]
            ]]
        }))
        .unwrap()
    }

    fn nb_filters() -> Filters {
        let mut config = Config::default();
        config.default.driver = Driver::NbOvnBgpDriver;
        Filters::for_config(&config.default)
    }

    fn change(kind: ChangeKind, new: Row, old: Option<Row>) -> Change {
        Change {
            table: Arc::from("Logical_Switch_Port"),
            uuid: Uuid(1),
            kind,
            new: Some(Arc::new(new)),
            old: old.map(Arc::new),
        }
    }

    #[test]
    fn a_port_set_up_after_its_insert_triggers_as_upstream() {
        let old = Row::from_wire(&serde_json::json!({"up": false})).unwrap();
        let c = change(ChangeKind::Update, vm_port(true), Some(old));
        // Upstream's class, then the agent's own (the port became
        // exposable here).
        assert_eq!(
            reasons(&nb_filters(), &c, &view()),
            vec!["LogicalSwitchPortProviderCreateEvent", "PortExposureChange"]
        );
    }

    #[test]
    fn an_insert_coalesced_with_its_up_update_still_triggers() {
        let c = change(ChangeKind::Insert, vm_port(true), None);
        assert!(
            nb_filters().matching_change(&c, &view()).is_empty(),
            "upstream's table alone misses it"
        );
        // Upstream's class, then the agent's own (the port became
        // exposable here).
        assert_eq!(
            reasons(&nb_filters(), &c, &view()),
            vec!["LogicalSwitchPortProviderCreateEvent", "PortExposureChange"]
        );
    }

    #[test]
    fn the_stretched_l2_driver_wakes_on_a_gateway_created_on_another_chassis() {
        let mut config = Config::default();
        config.default.driver = Driver::OvnStretchedL2BgpDriver;
        let filters = Filters::for_config(&config.default);
        let cr = Row::from_wire(&serde_json::json!({
            "logical_port": "cr-lrp-gw", "type": "chassisredirect",
            "mac": "fa:16:3e:aa:aa:01 172.24.4.100/24"
        }))
        .unwrap();
        let c = Change {
            table: Arc::from("Port_Binding"),
            uuid: Uuid(2),
            kind: ChangeKind::Insert,
            new: Some(Arc::new(cr)),
            old: None,
        };
        assert!(
            filters.matching_change(&c, &view()).is_empty(),
            "upstream misses it"
        );
        assert_eq!(reasons(&filters, &c, &view()), ["StretchedL2GatewayChange"]);
        // The NB driver has no such wake-up.
        assert!(nb_filters().own_reasons(&c, &view()).is_empty());
    }

    /// A tenant port with a distributed FIP bound to this node, as a
    /// conditional NB monitor delivers it when it moves here: an insert.
    /// Found by the trigger oracle (tests/trigger_oracle, NB underlay
    /// conditional, seed 1 step 54); with an empty `up` in the judged
    /// `old` it matched nothing.
    #[test]
    fn a_port_with_a_distributed_fip_entering_the_monitor_triggers() {
        let port = Row::from_wire(&serde_json::json!({
            "name": "vm-2",
            "type": "",
            "up": true,
            "addresses": "fa:16:3e:00:00:12 10.0.1.12",
            "options": ["map", [["requested-chassis", "host-1"]]],
            "external_ids": ["map", [
                ["neutron:network_name", "neutron-tenant"],
                ["neutron:cidrs", "10.0.1.12/24"],
                ["neutron:host_id", "host-1"],
                ["neutron:port_fip", "172.24.4.15"]
            ]]
        }))
        .unwrap();
        let c = change(ChangeKind::Insert, port, None);
        assert_eq!(
            reasons(&nb_filters(), &c, &view()),
            vec!["LogicalSwitchPortFIPCreateEvent", "PortExposureChange"]
        );
    }

    #[test]
    fn an_insert_that_is_not_up_triggers_nothing() {
        let c = change(ChangeKind::Insert, vm_port(false), None);
        assert!(reasons(&nb_filters(), &c, &view()).is_empty());
    }
}
