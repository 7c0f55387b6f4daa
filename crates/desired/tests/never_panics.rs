//! Property: whatever the OVN databases hold (random rows, garbled columns,
//! dangling references, wrong types, arbitrary Unicode in names, map keys,
//! values and bridge mappings), building the snapshot and computing the
//! desired state never panics, and what comes out is self-consistent.

mod strategies;

use obgp_config::{AdvertisementMethod, Config, Driver, ExposingMethod};
use obgp_desired::{desired_state, NodeFacts};
use obgp_ovn::{Snapshot, Tables};
use obgp_ovsdb_data::{Atom, Datum, Row, Uuid};
use proptest::prelude::*;
use strategies::{unicode_list, unicode_text};

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
        Just("physnet1:br-éééééé".to_string()),
        unicode_text().prop_map(|b| format!("physnet1:{b}")),
        unicode_text().prop_map(|ip| format!("fa:16:3e:11:11:11 {ip}")),
        unicode_text(),
        unicode_text(),
        unicode_list(),
        unicode_list(),
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
            0..5
        )
        .prop_map(Datum::map),
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
        let facts = NodeFacts { system_hostname: hostname, frr_router_id: Some("198.51.100.1".into()), vxlan_source: None, local_bridges: Default::default() };
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

/// Sets `key` of the map column `column` of the row at `idx` among the rows
/// of database `db_name` (adding the map or the key if absent), keeping
/// the row's other keys: a scenario with one odd name in an otherwise sane
/// row (a non-ASCII bridge in `ovn-bridge-mappings`, say).
fn set_map_entry(
    db: &mut obgp_ovn::fixture::FixtureDb,
    db_name: &str,
    (idx, column, key, value): (prop::sample::Index, &str, String, String),
) {
    let Some(tables) = db.dbs.get_mut(db_name) else {
        return;
    };
    let mut rows: Vec<(String, Uuid)> = tables
        .iter()
        .flat_map(|(t, rows)| rows.keys().map(move |u| (t.clone(), *u)))
        .collect();
    if rows.is_empty() {
        return;
    }
    rows.sort();
    let (table, uuid) = idx.get(&rows).clone();
    if let Some(row) = tables.get_mut(&table).and_then(|t| t.get_mut(&uuid)) {
        set_key(row, column, &key, value);
    }
}

/// Sets `key` of the map column `column` of `row`, keeping its other keys.
fn set_key(row: &mut Row, column: &str, key: &str, value: String) {
    let mut pairs = row
        .get(column)
        .map(|d| d.pairs().to_vec())
        .unwrap_or_default();
    pairs.retain(|(k, _)| k.as_str() != Some(key));
    pairs.push((Atom::String(key.into()), Atom::String(value.into())));
    row.columns.insert(column.to_string(), Datum::map(pairs));
}

type MapEntryEdit = (prop::sample::Index, &'static str, String, String);

fn map_entry_edit() -> impl Strategy<Value = MapEntryEdit> {
    (
        any::<prop::sample::Index>(),
        prop::sample::select(&["external_ids", "options", "status"][..]),
        map_key_strategy(),
        text_strategy(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn odd_map_entries_in_real_scenarios_never_panic(
        which in 0usize..4,
        nb_edits in prop::collection::vec(map_entry_edit(), 0..4),
        ovs_edits in prop::collection::vec(map_entry_edit(), 0..3),
        config in config_strategy(),
    ) {
        let mut db = scenario_dbs()[which].clone();
        for edit in nb_edits {
            set_map_entry(&mut db, obgp_ovn::NB_DB, edit);
        }
        for edit in ovs_edits {
            set_map_entry(&mut db, obgp_ovn::OVS_DB, edit);
        }
        let snap = db.snapshot();
        let desired = desired_state(&snap, &config, &NodeFacts::default()).expect("supported driver, valid config");
        let node = desired.to_node();
        for e in desired.exposed.values() {
            if let Some(w) = &e.wiring {
                prop_assert!(node.bridge_tables.contains(&w.target.bridge), "{:?}", e);
            }
        }
        // A VLAN device, whatever its bridge is called, has the one name
        // the naming rule gives it.
        for link in &node.links {
            if let obgp_netmodel::LinkKind::Vlan { parent, vlan_id } = &link.kind {
                prop_assert_eq!(&link.name, &obgp_netmodel::names::vlan_device(parent, *vlan_id));
            }
        }
    }

    #[test]
    fn any_provider_bridge_name_never_panics_and_names_its_vlan_device_by_the_rule(
        bridge in unicode_text().prop_map(|b| b.replace([',', ':'], "").trim().to_string()),
        config in config_strategy(),
    ) {
        // (Without the mapping syntax's separators, so that the bridge the
        // mapping names is `bridge` itself.)
        // The VLAN provider scenario with its bridge renamed everywhere:
        // the mapping, the Bridge row and the bridge's own Port.
        let mut db = scenario_dbs()[3].clone();
        let ovs = db.dbs.get_mut(obgp_ovn::OVS_DB).expect("ovs");
        for table in ["Bridge", "Port", "Interface"] {
            for row in ovs.get_mut(table).into_iter().flat_map(|t| t.values_mut()) {
                if row.str("name") == Some("br-ex") {
                    row.columns.insert("name", Datum::scalar(Atom::String(bridge.as_str().into())));
                }
            }
        }
        for root in ovs.get_mut("Open_vSwitch").into_iter().flat_map(|t| t.values_mut()) {
            set_key(root, "external_ids", "ovn-bridge-mappings", format!("physnet1:{bridge}"));
        }
        let snap = db.snapshot();
        let desired = desired_state(&snap, &config, &NodeFacts::default()).expect("supported driver, valid config");
        let node = desired.to_node();
        let vlans: Vec<_> = node
            .links
            .iter()
            .filter_map(|l| match &l.kind {
                obgp_netmodel::LinkKind::Vlan { parent, vlan_id } => Some((l, parent, *vlan_id)),
                _ => None,
            })
            .collect();
        for (link, parent, vlan_id) in &vlans {
            prop_assert_eq!(parent.as_str(), bridge.as_str());
            prop_assert_eq!(&link.name, &obgp_netmodel::names::vlan_device(parent, *vlan_id));
        }
        // A bridge the kernel could name is wired (the rule is exercised);
        // one it could not is skipped.
        let valid = obgp_netmodel::DevName::new(&bridge).is_ok();
        prop_assert_eq!(!vlans.is_empty(), valid, "bridge {:?}", bridge);
    }

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
        // explain never panics either, and explains every exposure as one.
        for ip in desired.exposed.keys().take(8) {
            let e = obgp_desired::explain(&snap, &config, &facts, &obgp_desired::Query::Ip(*ip))
                .expect("supported driver, valid config");
            prop_assert!(e.exposed(), "{}", e);
        }
        for p in snap.all_lsps().into_iter().take(8) {
            let q = obgp_desired::Query::Port(p.uuid.to_string());
            prop_assert!(obgp_desired::explain(&snap, &config, &facts, &q).is_ok());
        }
    }
}
