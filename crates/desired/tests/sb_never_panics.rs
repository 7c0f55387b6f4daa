//! Property: whatever the OVN_Southbound rows hold (garbled `mac`,
//! `nat_addresses`, `options`, `tag`, dangling `chassis`/`datapath`
//! references, wrong types, arbitrary Unicode in names, map keys and
//! values), the SB driver's desired state never panics and stays
//! self-consistent.

mod strategies;

use obgp_config::{AdvertisementMethod, Config, Driver, ExposingMethod};
use obgp_desired::{desired_state, NodeFacts};
use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::{Snapshot, Tables, NB_DB, OVS_DB, SB_DB};
use obgp_ovsdb_data::{Atom, Datum, Uuid};
use proptest::prelude::*;
use strategies::{unicode_list, unicode_text};

fn text_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("a1b2c3d4-0000-4000-8000-00000000c001".to_string()),
        Just("physnet1".to_string()),
        Just("localnet".to_string()),
        Just("patch".to_string()),
        Just("chassisredirect".to_string()),
        Just("virtual".to_string()),
        Just("unknown".to_string()),
        Just("router".to_string()),
        Just("cr-lrp-".to_string()),
        Just("cr-lrp-55555555-5555-4555-8555-555555555555".to_string()),
        Just("lrp-66666666-6666-4666-8666-666666666666".to_string()),
        Just("66666666-6666-4666-8666-666666666666".to_string()),
        Just("fa:16:3e:11:11:11 172.24.4.10 2001:db8::10".to_string()),
        Just("fa:16:3e:aa:aa:01 172.24.4.100/24 2001:db8::100/64".to_string()),
        Just("fa:16:3e:aa:aa:01 10.0.0.1/33".to_string()),
        Just("fa:16:3e:aa:aa:01".to_string()),
        Just("fa:16:3e:aa:aa:01 172.24.4.50 is_chassis_resident(\"x\")".to_string()),
        Just("fa:16:3e:aa:aa:01 is_chassis_resident(\"\")".to_string()),
        Just("is_chassis_resident(".to_string()),
        Just("10.0.0.1/24 2620:52:0:10::1/64".to_string()),
        unicode_text().prop_map(|ip| format!("fa:16:3e:aa:aa:01 {ip}")),
        unicode_text().prop_map(|p| format!("cr-lrp-{p}")),
        unicode_text(),
        unicode_text(),
        unicode_list(),
        unicode_list(),
    ]
}

fn atom_strategy() -> impl Strategy<Value = Atom> {
    prop_oneof![
        6 => text_strategy().prop_map(|s| Atom::String(s.into())),
        2 => (0u128..8).prop_map(|n| Atom::Uuid(Uuid(0x1000 + n))),
        1 => any::<i64>().prop_map(Atom::Integer),
        1 => any::<bool>().prop_map(Atom::Boolean),
    ]
}

const MAP_KEYS: &[&str] = &[
    "peer",
    "network_name",
    "chassis-redirect-port",
    "distributed-port",
    "neutron:cidrs",
    "neutron:subnet_pool_addr_scope4",
    "neutron:subnet_pool_addr_scope6",
];

/// A map key: one the agent reads, or any text.
fn map_key_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(MAP_KEYS).prop_map(str::to_string),
        1 => unicode_text(),
    ]
}

fn datum_strategy() -> impl Strategy<Value = Datum> {
    prop_oneof![
        3 => prop::collection::vec(atom_strategy(), 0..4).prop_map(Datum::set),
        2 => prop::collection::vec(
            (map_key_strategy().prop_map(|k| Atom::String(k.into())), atom_strategy()),
            0..4
        )
        .prop_map(Datum::map),
    ]
}

const COLUMNS: &[&str] = &[
    "logical_port",
    "type",
    "mac",
    "chassis",
    "datapath",
    "up",
    "options",
    "external_ids",
    "tag",
    "nat_addresses",
    "name",
];

fn scenario_dbs() -> &'static [FixtureDb] {
    static DBS: std::sync::OnceLock<Vec<FixtureDb>> = std::sync::OnceLock::new();
    DBS.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/conformance/scenarios");
        ["sb-tenant-host.json", "sb-gateway-and-tenant-subnet.json"]
            .iter()
            .map(|name| {
                let text = std::fs::read_to_string(dir.join(name)).expect("scenario fixture");
                let v: serde_json::Value = serde_json::from_str(&text).expect("scenario json");
                FixtureDb::from_wire(&v["ovn"]).expect("scenario ovn")
            })
            .collect()
    })
}

fn config_strategy() -> impl Strategy<Value = Config> {
    (
        any::<[bool; 3]>(),
        prop::option::of(Just(vec!["scope-a".to_string()])),
    )
        .prop_map(|(b, scopes)| {
            let mut c = Config::default();
            c.default.driver = Driver::OvnBgpDriver;
            c.default.exposing_method = ExposingMethod::Underlay;
            c.default.bgp_router_id = Some("192.0.2.1".into());
            c.default.expose_tenant_networks = b[0];
            c.default.expose_ipv6_gua_tenant_networks = b[1];
            c.default.advertisement_method_tenant_networks = if b[2] {
                AdvertisementMethod::Subnet
            } else {
                AdvertisementMethod::Host
            };
            c.default.address_scopes = scopes;
            c
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn garbling_southbound_columns_of_real_scenarios_never_panics(
        which in 0usize..2,
        edits in prop::collection::vec(
            (any::<prop::sample::Index>(), prop::sample::select(COLUMNS), datum_strategy()),
            1..6,
        ),
        config in config_strategy(),
    ) {
        let mut db = scenario_dbs()[which].clone();
        for (idx, column, datum) in edits {
            let sb = db.dbs.get_mut(SB_DB).expect("sb");
            let mut rows: Vec<(String, Uuid)> = sb
                .iter()
                .flat_map(|(t, rows)| rows.keys().map(move |u| (t.clone(), *u)))
                .collect();
            rows.sort();
            let (table, uuid) = idx.get(&rows).clone();
            if let Some(r) = sb.get_mut(&table).and_then(|t| t.get_mut(&uuid)) {
                r.columns.insert(column.to_string(), datum);
            }
        }
        let empty = Tables::new();
        let get = |name: &str| db.dbs.get(name).unwrap_or(&empty);
        let snap = Snapshot::build_with_sb(get(NB_DB), get(SB_DB), get(OVS_DB));
        let desired = desired_state(&snap, &config, &NodeFacts::default())
            .expect("supported driver, valid config");
        let node = desired.to_node();
        for e in desired.exposed.values() {
            if let Some(w) = &e.wiring {
                prop_assert!(node.bridge_tables.contains(&w.target.bridge), "{:?}", e);
            }
        }
        let on_nic = node.addresses.keys().filter(|a| a.dev.as_str() == "bgp-nic").count();
        prop_assert_eq!(on_nic, desired.exposed.len());
    }
}
