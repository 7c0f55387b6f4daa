//! The event filter and the desired state agree on a port's host when
//! `requested-chassis` has spaces around its names, and for a virtual port
//! (bound by `neutron:host_id`): both read the option through
//! `obgp_ovn::neutron::requested_chassis` and decide which column binds
//! through `requested_chassis_binds`. The port is the golden
//! `nb-provider-vm` scenario's VM on a provider network, this node is
//! `compute-1`.

use obgp_desired::{desired_state, NodeFacts};
use obgp_events::fake::FakeAgent;
use obgp_events::nb::lsp_provider_create;
use obgp_events::neutron::port_chassis;
use obgp_events::{Event, EventKind, RowView};
use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::neutron::{key, port_type};
use obgp_ovsdb_data::Row;
use serde_json::{json, Value};

mod golden;
use golden::{fixtures, read, scenario_config, snapshot};

const HERE: &str = "compute-1";
const VM: &str = "77777777-7777-4777-8777-777777777777";
const VM_IP: &str = "172.24.4.10";
const SWITCH: &str = "neutron-11111111-1111-4111-8111-111111111111";

/// What the NB driver knows when the port's create event arrives: its
/// provider switch is wired here, nothing is exposed yet.
fn agent() -> FakeAgent {
    FakeAgent {
        chassis: HERE.into(),
        chassis_id: "a1b2c3d4-0000-4000-8000-00000000c001".into(),
        provider_switches: vec![SWITCH.into()],
        distributed: true,
        ..FakeAgent::default()
    }
}

/// The scenario's OVN rows with the VM's `requested-chassis` set to
/// `value` and its `type` to `kind`.
fn with_requested_chassis(value: &str, kind: &str) -> (FixtureDb, Row) {
    let scenario = read(&fixtures().join("conformance/scenarios/nb-provider-vm.json"));
    let mut ovn = scenario["ovn"].clone();
    let ports = ovn["OVN_Northbound"]["Logical_Switch_Port"]
        .as_object_mut()
        .unwrap();
    let vm: &mut Value = ports
        .values_mut()
        .find(|p| p["name"] == VM)
        .expect("the scenario's VM port");
    vm["options"] = json!(["map", [[key::REQUESTED_CHASSIS, value]]]);
    vm["type"] = json!(kind);
    let row = Row::from_wire(vm).unwrap();
    (FixtureDb::from_wire(&ovn).unwrap(), row)
}

/// (whether the desired state exposes the VM here, whether the create
/// event's filter matches, the chassis the filter binds the port to).
fn decisions(requested: &str, kind: &str) -> (bool, bool, String) {
    let scenario = read(&fixtures().join("conformance/scenarios/nb-provider-vm.json"));
    let config = scenario_config(&scenario).unwrap();
    let (db, row) = with_requested_chassis(requested, kind);
    let snap = snapshot(&db);
    let desired = desired_state(&snap, &config, &NodeFacts::default()).unwrap();
    let exposed = desired.exposed.values().any(|e| e.ip.to_string() == VM_IP);
    let view = RowView::complete(&row);
    let matched = lsp_provider_create(
        Event::Is(EventKind::Create),
        view,
        RowView::none(),
        &agent(),
    )
    .unwrap();
    let bound = port_chassis(&view, HERE, port_type::VM).unwrap().py_str();
    (exposed, matched, bound)
}

#[test]
fn spaces_around_requested_chassis_names_bind_the_port_here_for_both() {
    for requested in [
        "compute-1",
        " compute-1",
        "compute-1 ",
        "other-node, compute-1",
        "compute-1 ,other-node",
    ] {
        assert_eq!(
            decisions(requested, port_type::VM),
            (true, true, HERE.to_string()),
            "requested-chassis = {requested:?}"
        );
    }
}

#[test]
fn another_host_listed_with_spaces_binds_the_port_elsewhere_for_both() {
    for (requested, first) in [
        (" other-node", "other-node"),
        ("other-node , compute-2", "other-node"),
        ("compute-10, compute-2", "compute-10"),
    ] {
        assert_eq!(
            decisions(requested, port_type::VM),
            (false, false, first.to_string()),
            "requested-chassis = {requested:?}"
        );
    }
}

#[test]
fn a_virtual_port_is_bound_by_its_host_id_for_both() {
    // The scenario's VM says `neutron:host_id = compute-1`.
    assert_eq!(
        decisions("other-node", port_type::VIRTUAL),
        (true, true, HERE.to_string())
    );
}
