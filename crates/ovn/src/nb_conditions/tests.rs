use serde_json::{json, Value};

use super::*;
use obgp_ovsdb_data::Row;

const ME: &str = "host-a";
const ROUTER: &str = "44444444-4444-4444-8444-444444444444";
const TENANT_NET: &str = "neutron-33333333-3333-4333-8333-333333333333";
const GW_LRP: &str = "9489e4c4-cdbf-4a76-8b9a-2bb683ce2788";

fn map(pairs: &[(&str, &str)]) -> Value {
    json!([
        "map",
        pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()
    ])
}

/// A VM port with the given `requested-chassis`/`activation-strategy`
/// options and `neutron:host_id`.
fn vm(name: &str, net: &str, options: &[(&str, &str)], host_id: Option<&str>) -> Value {
    let mut ids = vec![("neutron:network_name", net)];
    ids.extend(host_id.map(|h| ("neutron:host_id", h)));
    json!({"name": name, "type": "", "up": true, "addresses": "fa:16:3e:00:00:01 10.0.0.5",
           "options": map(options), "external_ids": map(&ids)})
}

/// One gateway router: its gateway LRP hosted on `gw_chassis`, one tenant
/// network behind it, a centralized FIP on `fip-port`, an LB with VIP port
/// `vip-port`; plus the ports in `ports`.
fn nb(gw_chassis: &str, ports: &[(&str, Value)]) -> Snapshot {
    nb_with_vifs(gw_chassis, ports, &[])
}

/// [`nb`] with VIFs of the logical ports `vifs` plugged in the local OVS.
fn nb_with_vifs(gw_chassis: &str, ports: &[(&str, Value)], vifs: &[&str]) -> Snapshot {
    Snapshot::from_wire(&nb_wire(gw_chassis, ports, vifs)).unwrap()
}

/// The rows of [`nb_with_vifs`], in wire notation.
fn nb_wire(gw_chassis: &str, ports: &[(&str, Value)], vifs: &[&str]) -> Value {
    let interfaces: serde_json::Map<String, Value> = vifs
        .iter()
        .enumerate()
        .map(|(i, port)| {
            (
                format!("e0000000-0000-4000-8000-{i:012}"),
                json!({"name": format!("tap{i}"), "external_ids": map(&[("iface-id", port)])}),
            )
        })
        .collect();
    let mut lsps = serde_json::Map::new();
    lsps.insert(
        "3b4a769e-8cde-4ce5-8f21-08a955795a9e".into(),
        json!({"name": "iface", "type": "router", "up": true, "addresses": "router",
               "external_ids": map(&[("neutron:device_id", ROUTER),
                                     ("neutron:device_owner", "network:router_interface"),
                                     ("neutron:network_name", TENANT_NET)])}),
    );
    for (u, p) in ports {
        lsps.insert(u.to_string(), p.clone());
    }
    json!({
        "OVN_Northbound": {
            "Logical_Switch_Port": lsps,
            "Logical_Router_Port": {GW_LRP: {
                "name": "lrp-gw", "mac": "fa:16:3e:bb:bb:02", "networks": "172.24.4.100/24",
                "external_ids": map(&[("neutron:router_name", ROUTER),
                                      ("neutron:network_name", "neutron-provider")]),
                "status": map(&[("hosting-chassis", gw_chassis)])}},
            "NAT": {"d0000002-0000-4000-8000-0000000000f1": {
                "type": "dnat_and_snat", "external_ip": "172.24.4.50", "logical_ip": "10.0.0.5",
                "logical_port": "fip-port", "gateway_port": ["uuid", GW_LRP]}},
            "Load_Balancer": {"d0000003-0000-4000-8000-0000000000f1": {
                "name": "lb1", "vips": map(&[("10.0.0.9:80", "10.0.0.5:80")]),
                "external_ids": map(&[("lr_ref", &format!("neutron-{ROUTER}")),
                                      ("neutron:vip", "10.0.0.9"),
                                      ("neutron:vip_port_id", "vip-port")])}}
        },
        "Open_vSwitch": {"Open_vSwitch": {"515fd575-b134-4a3d-abf0-0f9638e3918d": {
            "external_ids": map(&[("hostname", ME), ("system-id", "chassis-a")])}},
            "Interface": interfaces}
    })
}

/// Whether `row` (uuid `uuid`) matches one of `conds`, as ovsdb-server
/// evaluates them.
fn matches(conds: &[Condition], uuid: Uuid, row: &Row) -> bool {
    conds.iter().any(|c| c.matches(uuid, row))
}

fn port_row(v: Value) -> Row {
    Row::from_wire(&v).unwrap()
}

#[test]
fn a_gateway_hosted_here_brings_its_networks_fip_ports_and_vip_ports() {
    let here = LspInterest::of(&nb("chassis-a", &[]), Some(ME), None);
    assert_eq!(here.chassis.as_deref(), Some(ME));
    assert_eq!(here.networks, BTreeSet::from([TENANT_NET.to_string()]));
    assert_eq!(
        here.names,
        BTreeSet::from(["fip-port".to_string(), "vip-port".to_string()])
    );

    // The gateway moves elsewhere: only this node's own bindings remain.
    let moved = LspInterest::of(&nb("chassis-b", &[]), Some(ME), None);
    assert_eq!(
        moved,
        LspInterest {
            chassis: Some(ME.into()),
            ..LspInterest::default()
        }
    );
    assert!(moved.conditions().len() < here.conditions().len());
}

#[test]
fn a_named_port_held_through_its_network_gets_no_clause_of_its_own() {
    let on_tenant_net = vm("fip-port", TENANT_NET, &[], Some("host-b"));
    let elsewhere = json!({"name": "vip-port", "type": "", "up": false,
                           "external_ids": map(&[("neutron:network_name", "neutron-z")])});
    let snap = nb(
        "chassis-a",
        &[
            ("d0000001-0000-4000-8000-000000000002", on_tenant_net),
            ("d0000001-0000-4000-8000-000000000003", elsewhere),
        ],
    );
    let here = LspInterest::of(&snap, Some(ME), None);
    assert_eq!(here.names, BTreeSet::from(["vip-port".to_string()]));
    // The port leaves the network: named again.
    let moved = vm("fip-port", "neutron-q", &[], Some("host-b"));
    let snap = nb(
        "chassis-a",
        &[("d0000001-0000-4000-8000-000000000002", moved)],
    );
    assert!(LspInterest::of(&snap, Some(ME), None)
        .names
        .contains("fip-port"));
}

#[test]
fn names_wait_while_the_networks_change_and_are_asked_for_once_they_settled() {
    // The gateway just arrived: its network is new to the cache, which
    // does not hold the FIP and VIP ports yet. They may be on it: not named.
    let snap = nb("chassis-a", &[]);
    let before = LspInterest {
        chassis: Some(ME.into()),
        ..LspInterest::default()
    };
    let first = LspInterest::of(&snap, Some(ME), Some(&before));
    assert_eq!(first.networks, BTreeSet::from([TENANT_NET.to_string()]));
    assert!(first.names.is_empty(), "{:?}", first.names);
    // Filled with the networks, the FIP port arrived on it; the VIP port
    // (on another network) did not, and is now named.
    let fip_port = vm("fip-port", TENANT_NET, &[], Some("host-b"));
    let snap = nb(
        "chassis-a",
        &[("d0000001-0000-4000-8000-000000000002", fip_port)],
    );
    let second = LspInterest::of(&snap, Some(ME), Some(&first));
    assert_eq!(second.names, BTreeSet::from(["vip-port".to_string()]));
    // The fixpoint: computed from a cache filled with itself, unchanged.
    assert_eq!(LspInterest::of(&snap, Some(ME), Some(&second)), second);
}

#[test]
fn nats_of_local_gateways_and_of_ports_bound_here_are_selected() {
    let mut with_fip = vm("p-fip", "neutron-x", &[("requested-chassis", ME)], Some(ME));
    with_fip["external_ids"] = map(&[
        ("neutron:network_name", "neutron-x"),
        ("neutron:port_fip", "172.24.4.9"),
    ]);
    with_fip["options"] = map(&[("requested-chassis", ME)]);
    let ports = [("d0000001-0000-4000-8000-000000000009", with_fip)];
    let here = LspInterest::of(&nb("chassis-a", &ports), Some(ME), None);
    let gw = Uuid::parse(GW_LRP).unwrap();
    assert_eq!(here.gateway_ports, BTreeSet::from([gw]));
    assert_eq!(here.fip_ports, BTreeSet::from(["p-fip".to_string()]));
    let wire: Vec<Value> = here
        .nat_conditions()
        .iter()
        .map(Condition::to_wire)
        .collect();
    assert!(wire.contains(&json!(["gateway_port", "==", ["uuid", GW_LRP]])));
    assert!(wire.contains(&json!(["logical_port", "==", "p-fip"])));
    // The gateway elsewhere and no FIP bound here: the SNATs only.
    let none = LspInterest::of(&nb("chassis-b", &[]), Some(ME), None);
    assert_eq!(
        none.nat_conditions(),
        vec![Condition::eq(
            "type",
            Datum::scalar(Atom::String("snat".into()))
        )]
    );
}

#[test]
fn ports_bound_here_match_and_ports_bound_elsewhere_do_not() {
    let conds = LspInterest::of(&nb("chassis-b", &[]), Some(ME), None).conditions();
    let u = Uuid(1);
    let bound = port_row(vm(
        "p1",
        "neutron-x",
        &[("requested-chassis", ME)],
        Some(ME),
    ));
    let by_host_id = port_row(vm("p2", "neutron-x", &[], Some(ME)));
    let elsewhere = port_row(vm(
        "p3",
        "neutron-x",
        &[("requested-chassis", "host-b")],
        Some("host-b"),
    ));
    assert!(matches(&conds, u, &bound));
    assert!(matches(&conds, u, &by_host_id));
    assert!(!matches(&conds, u, &elsewhere));
}

#[test]
fn a_live_migration_matches_on_both_chassis() {
    // Neutron during a migration from host-b to here, and from here to host-b.
    let to_here = port_row(vm(
        "p1",
        "neutron-x",
        &[
            ("requested-chassis", &format!("host-b,{ME}")),
            (ACTIVATION_STRATEGY, RARP),
        ],
        Some("host-b"),
    ));
    let from_here = port_row(vm(
        "p2",
        "neutron-x",
        &[
            ("requested-chassis", &format!("{ME},host-b")),
            (ACTIVATION_STRATEGY, RARP),
        ],
        Some(ME),
    ));
    for gw in ["chassis-a", "chassis-b"] {
        let snap = nb(gw, &[]);
        let conds = LspInterest::of(&snap, Some(ME), None).conditions();
        assert!(matches(&conds, Uuid(1), &to_here), "destination, gw {gw}");
        assert!(matches(&conds, Uuid(2), &from_here), "source, gw {gw}");
    }
    // Two chassis without the strategy, host_id still on the source: no
    // value clause matches; the VIF plugged here names the port (see the
    // module documentation).
    let unmarked = vm(
        "p3",
        "neutron-x",
        &[("requested-chassis", &format!("host-b,{ME}"))],
        Some("host-b"),
    );
    let filled = LspInterest {
        chassis: Some(ME.into()),
        ..LspInterest::default()
    };
    let conds = LspInterest::of(&nb("chassis-b", &[]), Some(ME), Some(&filled)).conditions();
    assert!(!matches(&conds, Uuid(3), &port_row(unmarked.clone())));
    for ports in [
        vec![],
        vec![("d0000001-0000-4000-8000-000000000003", unmarked.clone())],
    ] {
        let snap = nb_with_vifs("chassis-b", &ports, &["p3"]);
        let conds = LspInterest::of(&snap, Some(ME), Some(&filled)).conditions();
        assert!(
            matches(&conds, Uuid(3), &port_row(unmarked.clone())),
            "VIF plugged here, {} port(s) cached",
            ports.len()
        );
    }
}

#[test]
fn a_vif_plugged_here_is_named_unless_a_binding_clause_holds_its_port() {
    let bound_here = vm(
        "p-here",
        "neutron-x",
        &[("requested-chassis", ME)],
        Some(ME),
    );
    let arriving = vm(
        "p-in",
        "neutron-x",
        &[("requested-chassis", &format!("host-b,{ME}"))],
        Some("host-b"),
    );
    let ports = [
        ("d0000001-0000-4000-8000-000000000001", bound_here),
        ("d0000001-0000-4000-8000-000000000002", arriving),
    ];
    let vifs = ["p-here", "p-in", "p-not-cached"];
    // The first request: the cache holds no port yet; none is named.
    let first = LspInterest::of(&nb_with_vifs("chassis-b", &[], &vifs), Some(ME), None);
    assert!(first.local_ifaces.is_empty(), "{:?}", first.local_ifaces);
    let snap = nb_with_vifs("chassis-b", &ports, &vifs);
    // Filled with this node's binding clauses: the port held by
    // `neutron:host_id` needs no name; the others are named.
    let settled = LspInterest::of(&snap, Some(ME), Some(&first));
    assert_eq!(
        settled.local_ifaces,
        BTreeSet::from(["p-in".to_string(), "p-not-cached".to_string()])
    );
    let wire: Vec<Value> = settled
        .conditions()
        .iter()
        .map(Condition::to_wire)
        .collect();
    assert!(wire.contains(&json!(["name", "==", "p-in"])));
    assert!(!wire.contains(&json!(["name", "==", "p-here"])));
    assert_eq!(LspInterest::of(&snap, Some(ME), Some(&settled)), settled);
    // Without a chassis name nothing can be bound here: no name.
    assert!(LspInterest::of(&snap, None, Some(&settled))
        .local_ifaces
        .is_empty());
}

#[test]
fn every_port_the_driver_reads_here_matches() {
    let tenant_vm = vm("t1", TENANT_NET, &[("requested-chassis", "host-b")], None);
    let fip_port = vm("fip-port", "neutron-y", &[], Some("host-c"));
    let vip_port = json!({"name": "vip-port", "type": "", "up": false,
                          "external_ids": map(&[("neutron:network_name", "neutron-z")])});
    let localnet = json!({"name": "provnet-1", "type": "localnet",
                          "options": map(&[("network_name", "physnet1")])});
    let ports = [
        ("d0000001-0000-4000-8000-000000000001", tenant_vm),
        ("d0000001-0000-4000-8000-000000000002", fip_port),
        ("d0000001-0000-4000-8000-000000000003", vip_port),
        ("d0000001-0000-4000-8000-000000000004", localnet),
    ];
    let snap = nb("chassis-a", &ports);
    let conds = LspInterest::of(&snap, Some(ME), None).conditions();
    for (u, p) in &ports {
        let u = Uuid::parse(u).unwrap();
        assert!(matches(&conds, u, &port_row(p.clone())), "{p}");
    }
    // The router interface itself, whatever the gateway.
    let iface = snap.router_interfaces(ROUTER).next().unwrap();
    let other = LspInterest::of(&nb("chassis-b", &[]), Some(ME), None).conditions();
    let iface_row = port_row(json!({"name": iface.name, "type": "router"}));
    assert!(matches(&other, iface.uuid, &iface_row));
}

#[test]
fn without_a_chassis_name_no_binding_clause_is_sent() {
    let conds = LspInterest::of(&nb("chassis-b", &[]), None, None).conditions();
    let bound = port_row(vm(
        "p1",
        "neutron-x",
        &[("requested-chassis", "")],
        Some(""),
    ));
    assert!(!matches(&conds, Uuid(1), &bound));
    assert_eq!(
        LspInterest::of(&Snapshot::default(), Some(""), None).chassis,
        None
    );
}

#[test]
fn a_bgpvpn_switch_makes_the_vrf_mode_monitor_every_port() {
    let port = "d0000001-0000-4000-8000-0000000000aa";
    let snap = Snapshot::from_wire(&json!({"OVN_Northbound": {
        "Logical_Switch": {"d0000004-0000-4000-8000-000000000001": {
            "name": "neutron-vpn", "ports": ["uuid", port],
            "external_ids": map(&[("neutron_bgpvpn:type", "l3"), ("neutron_bgpvpn:vni", "100")])}}
    }}))
    .unwrap();
    let plain = LspInterest::of(&snap, Some(ME), None);
    assert!(!plain.all_ports);
    let vrf = plain.with_bgpvpn_ports(&snap);
    assert_eq!(vrf.conditions(), vec![Condition::True]);
    // Without such a switch the vrf mode selects like the others.
    let none = LspInterest::of(&nb("chassis-b", &[]), Some(ME), None);
    assert_eq!(none.clone().with_bgpvpn_ports(&nb("chassis-b", &[])), none);
}

#[test]
fn conditions_go_on_the_wire_as_ovsdb_clauses() {
    let interest = LspInterest::of(&nb("chassis-a", &[]), Some(ME), None);
    let wire: Vec<Value> = interest
        .conditions()
        .iter()
        .map(Condition::to_wire)
        .collect();
    assert!(wire.contains(&json!(["type", "==", "localnet"])));
    assert!(wire.contains(&json!([
        "options",
        "includes",
        ["map", [["requested-chassis", ME]]]
    ])));
    assert!(wire.contains(&json!([
        "external_ids",
        "includes",
        ["map", [["neutron:host_id", ME]]]
    ])));
    assert!(wire.contains(&json!([
        "external_ids",
        "includes",
        ["map", [["neutron:network_name", TENANT_NET]]]
    ])));
    assert!(wire.contains(&json!(["name", "==", "vip-port"])));
    assert!(
        wire.iter().all(|c| c[0] != "_uuid"),
        "no _uuid clause: {wire:?}"
    );
}

/// The full monitor evaluates the conditions in-process on the cached
/// rows, which hold only the monitored columns and kept map keys: a clause
/// naming anything else would see a default and drop a row the server
/// would have sent.
#[test]
fn every_column_and_key_a_condition_names_is_monitored() {
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    let interest = LspInterest {
        chassis: Some(ME.into()),
        networks: set(&[TENANT_NET]),
        names: set(&["fip-port"]),
        all_ports: false,
        gateway_ports: BTreeSet::from([Uuid::parse(GW_LRP).unwrap()]),
        fip_ports: set(&["vm-port"]),
        local_ifaces: set(&["plugged-port"]),
    };
    let tables = [
        (LogicalSwitchPort::TABLE, interest.conditions()),
        (crate::nb::Nat::TABLE, interest.nat_conditions()),
    ];
    let mut named = 0;
    for (table, conditions) in tables {
        for c in conditions {
            let Condition::Clause { column, value, .. } = c else {
                continue;
            };
            named += 1;
            assert!(
                column == "_uuid" || crate::nb::monitored_columns(table).contains(&column.as_str()),
                "{table}.{column} is named by a condition but not monitored"
            );
            let Some(kept) = crate::nb::monitored_keys(table, &column) else {
                continue;
            };
            for (k, _) in value.pairs() {
                let k = k.as_str().unwrap_or_default();
                assert!(
                    kept.contains(&k),
                    "{table}.{column}:{k} is named by a condition but its key is not kept"
                );
            }
        }
    }
    // Every kind of clause was looked at.
    assert!(named >= 10, "{named} clauses");
}

/// A port as the live snapshot parses it, from wire-notation columns.
fn typed(uuid: u128, row: Value) -> std::sync::Arc<LogicalSwitchPort> {
    let row = Row::from_wire(&row).unwrap();
    std::sync::Arc::new(LogicalSwitchPort::parse(Uuid(uuid), &row).unwrap())
}

/// One port's change, old to new, as the live snapshot reports it.
fn one_change(
    old: Option<std::sync::Arc<LogicalSwitchPort>>,
    new: Option<std::sync::Arc<LogicalSwitchPort>>,
) -> crate::changes::PortChanges {
    use crate::rows_version::RowsVersion;
    let uuid = old.as_ref().or(new.as_ref()).unwrap().uuid;
    let change = crate::changes::PortChange { uuid, old, new };
    match crate::NbChanges::ports(
        RowsVersion::fresh(),
        RowsVersion::fresh(),
        [(uuid, change)].into(),
    ) {
        crate::NbChanges::Ports(p) => p,
        crate::NbChanges::Full => unreachable!(),
    }
}

#[test]
fn a_vm_port_that_nothing_names_leaves_the_interest_as_it_is() {
    let interest = LspInterest {
        chassis: Some(ME.into()),
        networks: [TENANT_NET.to_string()].into(),
        names: ["fip-port".to_string()].into(),
        fip_ports: ["vm-with-fip".to_string()].into(),
        local_ifaces: ["plugged".to_string()].into(),
        ..LspInterest::default()
    };
    let plain = |up: bool, net: &str| {
        let mut row = vm("vm1", net, &[("requested-chassis", ME)], Some(ME));
        row["up"] = json!(up);
        typed(1, row)
    };
    // Its `up` flips, it appears, it goes: the interest stands.
    let up = one_change(
        Some(plain(false, TENANT_NET)),
        Some(plain(true, TENANT_NET)),
    );
    assert!(interest.unchanged_by(&up));
    let elsewhere = || typed(5, vm("vm5", "other", &[], Some("host-b")));
    assert!(interest.unchanged_by(&one_change(None, Some(elsewhere()))));
    assert!(interest.unchanged_by(&one_change(Some(elsewhere()), None)));

    // Each of these may change it.
    let named = |name: &str| typed(2, vm(name, "other", &[], None));
    for name in ["fip-port", "vm-with-fip", "plugged"] {
        assert!(
            !interest.unchanged_by(&one_change(None, Some(named(name)))),
            "{name}"
        );
    }
    let mut with_fip = vm("vm3", "other", &[], None);
    with_fip["external_ids"] = map(&[("neutron:port_fip", "172.24.4.10")]);
    assert!(!interest.unchanged_by(&one_change(None, Some(typed(3, with_fip)))));
    let mut router = vm("rp", TENANT_NET, &[], None);
    router["type"] = json!("router");
    assert!(!interest.unchanged_by(&one_change(None, Some(typed(4, router)))));
    // Leaving the network clause: a FIP port it held would need its name.
    let moved = typed(1, vm("vm1", "other", &[], Some("host-b")));
    let left = one_change(Some(plain(true, TENANT_NET)), Some(moved));
    assert!(!interest.unchanged_by(&left));
}

/// A port of the property below: its name, network, `neutron:host_id`,
/// FIP and `up`.
fn arb_port() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    (
        prop::sample::select(vec!["vm0", "vm1", "vm2", "fip-port", "vip-port", "plugged"]),
        prop::sample::select(vec![TENANT_NET, "neutron-other"]),
        prop::sample::select(vec![Some(ME), Some("host-b"), None]),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(name, net, host, fip, up)| {
            let mut ids = vec![("neutron:network_name", net)];
            ids.extend(host.map(|h| ("neutron:host_id", h)));
            if fip {
                ids.push(("neutron:port_fip", "172.24.4.77"));
            }
            let options: Vec<(&str, &str)> =
                host.map(|h| ("requested-chassis", h)).into_iter().collect();
            json!({"name": name, "type": "", "up": up, "addresses": "fa:16:3e:00:00:01 10.0.0.5",
                   "options": map(&options), "external_ids": map(&ids)})
        })
}

/// The fixpoint the daemon reaches on `rows` (every row, or with
/// `filtered` only those the interest's conditions select, as the full
/// monitor's snapshot): the live snapshot and its interest.
fn settled(rows: &crate::fixture::FixtureDb, filtered: bool) -> (crate::LiveSnapshot, LspInterest) {
    let nb = &rows.dbs[crate::NB_DB];
    let mut interest: Option<LspInterest> = None;
    for _ in 0..6 {
        let mut live = crate::LiveSnapshot::with_partial_ports();
        live.reset_ovs(&rows.dbs[crate::OVS_DB]);
        match (&interest, filtered) {
            (Some(i), true) => {
                let filter = crate::NbRowFilter::of(i);
                live.reset_nb(&crate::nb_filter::FilteredRows {
                    rows: nb,
                    filter: &filter,
                })
            }
            _ => live.reset_nb(nb),
        };
        let next = LspInterest::of(&live.snapshot(), Some(ME), interest.as_ref());
        if interest.as_ref() == Some(&next) {
            return (live, next);
        }
        interest = Some(next);
    }
    panic!("no fixpoint in 6 rounds");
}

proptest::proptest! {
    /// `unchanged_by` never says "unchanged" of a port change that changes
    /// the interest: a reconcile that skips recomputing it reads what a
    /// recomputation would.
    #[test]
    fn an_interest_said_unchanged_by_a_port_change_is_what_it_recomputes_to(
        ports in proptest::collection::vec(arb_port(), 0..5),
        vifs in proptest::sample::subsequence(vec!["vm0", "vm1", "plugged", "fip-port"], 0..3),
        changed in 0usize..6,
        new_port in proptest::option::of(arb_port()),
        filtered in proptest::prelude::any::<bool>(),
    ) {
        let uuid = |i: usize| format!("c0000000-0000-4000-8000-{i:012}");
        let named: Vec<(String, Value)> =
            ports.iter().enumerate().map(|(i, p)| (uuid(i), p.clone())).collect();
        let as_refs: Vec<(&str, Value)> =
            named.iter().map(|(u, p)| (u.as_str(), p.clone())).collect();
        let rows = crate::fixture::FixtureDb::from_wire(&nb_wire(ME, &as_refs, &vifs)).unwrap();
        let (mut live, acked) = settled(&rows, filtered);
        let before = live.snapshot();
        // One port changed, added or deleted, through the filter the
        // snapshot is kept with.
        let target = Uuid::parse(&uuid(changed)).unwrap();
        let new_row = new_port.map(|p| Row::from_wire(&p).unwrap());
        let filter = crate::NbRowFilter::of(&acked);
        let kept = new_row
            .as_ref()
            .filter(|r| !filtered || filter.keeps(LogicalSwitchPort::TABLE, target, r));
        let changes = live.apply_nb([(LogicalSwitchPort::TABLE, target, kept)]);
        let after = live.snapshot();
        if let Some(ports) = changes.ports_between(&before, &after) {
            if acked.unchanged_by(ports) {
                proptest::prop_assert_eq!(LspInterest::of(&after, Some(ME), Some(&acked)), acked);
            }
        }
    }
}
