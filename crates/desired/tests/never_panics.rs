//! Property: whatever the OVN databases hold (random rows, garbled columns,
//! dangling references, wrong types), building the snapshot and computing
//! the desired state never panics, and what comes out is self-consistent.

use obgp_config::{AdvertisementMethod, Config, Driver, ExposingMethod};
use obgp_desired::{desired_state, NodeFacts};
use obgp_ovn::{Snapshot, Tables};
use obgp_ovsdb_data::{Atom, Datum, Row, Uuid};
use proptest::prelude::*;

/// A small uuid pool so that random references often hit real rows.
fn uuid_strategy() -> impl Strategy<Value = Uuid> {
    (0u128..24).prop_map(|n| Uuid(0x1000 + n))
}

fn text_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("compute-1".to_string()),
        Just("sys-1".to_string()),
        Just("physnet1".to_string()),
        Just("neutron-net1".to_string()),
        Just("neutron-r1".to_string()),
        Just("r1".to_string()),
        Just("provnet-1".to_string()),
        Just("localnet".to_string()),
        Just("router".to_string()),
        Just("virtual".to_string()),
        Just("unknown".to_string()),
        Just("snat".to_string()),
        Just("dnat_and_snat".to_string()),
        Just("network:router_interface".to_string()),
        Just("pf-floatingip-x-tcp".to_string()),
        Just("fa:16:3e:11:11:11 172.24.4.10 2001:db8::10".to_string()),
        Just("fa:16:3e:11:11 10.0.0.1".to_string()),
        Just("zz:zz 999.1.1.1".to_string()),
        Just("172.24.4.10/24 2001:db8::10/64".to_string()),
        Just("10.0.0.1/24".to_string()),
        Just("2620:52:0:10::1/64".to_string()),
        Just("172.24.4.70:2222".to_string()),
        Just("[2001:db8::7]:80".to_string()),
        Just("2001:db8::7:80".to_string()),
        Just("fa:16:3e:aa:aa:01".to_string()),
        Just("True".to_string()),
        Just("compute-2,compute-1".to_string()),
        "[ -~]{0,24}",
    ]
}

fn atom_strategy() -> impl Strategy<Value = Atom> {
    prop_oneof![
        6 => text_strategy().prop_map(|s| Atom::String(s.into())),
        2 => uuid_strategy().prop_map(Atom::Uuid),
        1 => any::<i64>().prop_map(Atom::Integer),
        1 => (0i64..5000).prop_map(Atom::Integer),
        1 => any::<bool>().prop_map(Atom::Boolean),
        1 => any::<f64>().prop_map(Atom::Real),
    ]
}

const MAP_KEYS: &[&str] = &[
    "neutron:cidrs",
    "neutron:network_name",
    "neutron:router_name",
    "neutron:device_id",
    "neutron:device_owner",
    "neutron:host_id",
    "neutron:port_fip",
    "neutron:fip_network_id",
    "neutron:vip",
    "neutron:vip_fip",
    "neutron:vip_port_id",
    "lr_ref",
    "neutron:fip-distributed",
    "neutron:subnet_pool_addr_scope4",
    "requested-chassis",
    "network_name",
    "hosting-chassis",
    "hostname",
    "system-id",
    "ovn-bridge-mappings",
];

fn datum_strategy() -> impl Strategy<Value = Datum> {
    prop_oneof![
        3 => prop::collection::vec(atom_strategy(), 0..4).prop_map(Datum::Set),
        2 => prop::collection::vec(
            (prop::sample::select(MAP_KEYS).prop_map(|k| Atom::String(k.into())), atom_strategy()),
            0..5
        )
        .prop_map(Datum::Map),
    ]
}

const COLUMNS: &[&str] = &[
    "name",
    "type",
    "up",
    "addresses",
    "external_ids",
    "options",
    "status",
    "tag",
    "ports",
    "nat",
    "mac",
    "networks",
    "external_ip",
    "external_mac",
    "logical_ip",
    "logical_port",
    "gateway_port",
    "vips",
    "bridges",
    "interfaces",
];

fn row_strategy() -> impl Strategy<Value = Row> {
    prop::collection::btree_map(
        prop::sample::select(COLUMNS).prop_map(str::to_string),
        datum_strategy(),
        0..8,
    )
    .prop_map(|columns| Row {
        columns: columns.into(),
    })
}

fn tables_strategy(names: &'static [&'static str]) -> impl Strategy<Value = Tables> {
    prop::collection::vec(
        (prop::sample::select(names), uuid_strategy(), row_strategy()),
        0..40,
    )
    .prop_map(|rows| {
        let mut t = Tables::new();
        for (table, uuid, row) in rows {
            t.entry(table.to_string()).or_default().insert(uuid, row);
        }
        t
    })
}

const NB_TABLES: &[&str] = &[
    "Logical_Switch",
    "Logical_Switch_Port",
    "Logical_Router",
    "Logical_Router_Port",
    "NAT",
    "Load_Balancer",
    "NB_Global",
];
const OVS_TABLES: &[&str] = &["Open_vSwitch", "Bridge", "Port"];

fn config_strategy() -> impl Strategy<Value = Config> {
    (
        any::<[bool; 5]>(),
        prop::option::of(Just(vec!["scope-a".to_string()])),
    )
        .prop_map(|(b, scopes)| {
            let mut c = Config::default();
            c.default.driver = Driver::NbOvnBgpDriver;
            c.default.exposing_method = ExposingMethod::Underlay;
            c.default.expose_tenant_networks = b[0];
            c.default.expose_ipv6_gua_tenant_networks = b[1];
            c.default.require_snat_disabled_for_tenant_networks = b[2];
            c.default.advertisement_method_tenant_networks = if b[3] {
                AdvertisementMethod::Subnet
            } else {
                AdvertisementMethod::Host
            };
            c.default.bgp_router_id = b[4].then(|| "192.0.2.1".to_string());
            c.default.address_scopes = scopes;
            c
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn desired_state_never_panics_on_arbitrary_ovn_contents(
        nb in tables_strategy(NB_TABLES),
        ovs in tables_strategy(OVS_TABLES),
        config in config_strategy(),
        hostname in prop::option::of(text_strategy()),
    ) {
        let snap = Snapshot::build(&nb, &ovs);
        let facts = NodeFacts { system_hostname: hostname, frr_router_id: Some("198.51.100.1".into()) };
        let desired = desired_state(&snap, &config, &facts).expect("supported driver, valid config");
        let node = desired.to_node();
        // Everything wired points at a bridge the base wiring declares.
        for e in desired.exposed.values() {
            if let Some(w) = &e.wiring {
                prop_assert!(node.bridge_tables.contains(&w.target.bridge), "{:?}", e);
            }
        }
        // Every announced IP is an address on bgp-nic.
        let on_nic = node.addresses.keys().filter(|a| a.dev.as_str() == "bgp-nic").count();
        prop_assert_eq!(on_nic, desired.exposed.len());
    }
}

/// The golden scenarios' OVN contents, to garble one column at a time.
fn scenario_dbs() -> &'static [obgp_ovn::fixture::FixtureDb] {
    static DBS: std::sync::OnceLock<Vec<obgp_ovn::fixture::FixtureDb>> = std::sync::OnceLock::new();
    DBS.get_or_init(load_scenario_dbs)
}

fn load_scenario_dbs() -> Vec<obgp_ovn::fixture::FixtureDb> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/conformance/scenarios");
    let mut out = Vec::new();
    for name in [
        "nb-tenant-host-method.json",
        "nb-fip.json",
        "nb-pf-fip.json",
        "nb-vlan-provider-vm.json",
    ] {
        let text = std::fs::read_to_string(dir.join(name)).expect("scenario fixture");
        let v: serde_json::Value = serde_json::from_str(&text).expect("scenario json");
        out.push(obgp_ovn::fixture::FixtureDb::from_wire(&v["ovn"]).expect("scenario ovn"));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn garbling_columns_of_real_scenarios_never_panics(
        which in 0usize..4,
        edits in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(COLUMNS), datum_strategy()), 1..6),
        config in config_strategy(),
    ) {
        let mut db = scenario_dbs()[which].clone();
        for (idx, column, datum) in edits {
            let nb = db.dbs.get_mut(obgp_ovn::NB_DB).expect("nb");
            let mut rows: Vec<(String, Uuid)> = nb
                .iter()
                .flat_map(|(t, rows)| rows.keys().map(move |u| (t.clone(), *u)))
                .collect();
            rows.sort();
            let (table, uuid) = idx.get(&rows).clone();
            nb.get_mut(&table).and_then(|t| t.get_mut(&uuid)).map(|r| r.columns.insert(column.to_string(), datum));
        }
        let snap = db.snapshot();
        let facts = NodeFacts::default();
        let desired = desired_state(&snap, &config, &facts).expect("supported driver, valid config");
        let _ = desired.to_node();
    }
}
