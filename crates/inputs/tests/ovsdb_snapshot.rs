//! The snapshot the agent builds from real ovsdb-servers equals the one built
//! from the same fixture in memory: every golden NB scenario's OVN rows are
//! loaded into an OVN_Northbound and an Open_vSwitch server, read through
//! `OvnSources` (monitor_cond, cache), and must give the same desired node
//! state as the fixture read directly: the NB ones with both NB monitors,
//! the default conditional one and the full one (`ovn_nb_monitor_all`).

use std::time::Duration;

use obgp_config::{Config, Driver};
use obgp_desired::{desired_state, NodeFacts};
use obgp_inputs::OvnSources;
use obgp_testbed::fixture::insert_ops;
use obgp_testbed::ovsdb::OvsdbServer;
use serde_json::Value;

fn scenario(name: &str) -> Value {
    let path = obgp_testbed::fixtures_dir()
        .join("conformance/scenarios")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn config_for(s: &Value) -> Config {
    let mut c = Config::default();
    let cfg = &s["config"];
    c.default.driver = if cfg["driver"] == "ovn_bgp_driver" {
        Driver::OvnBgpDriver
    } else {
        Driver::NbOvnBgpDriver
    };
    c.default.bgp_router_id = cfg["bgp_router_id"].as_str().map(String::from);
    c.default.expose_tenant_networks = cfg["expose_tenant_networks"].as_bool().unwrap_or(false);
    c.default.expose_ipv6_gua_tenant_networks = cfg["expose_ipv6_gua_tenant_networks"]
        .as_bool()
        .unwrap_or(false);
    if cfg["advertisement_method_tenant_networks"] == "subnet" {
        c.default.advertisement_method_tenant_networks = obgp_config::AdvertisementMethod::Subnet;
    }
    c.default.require_snat_disabled_for_tenant_networks = cfg
        ["require_snat_disabled_for_tenant_networks"]
        .as_bool()
        .unwrap_or(false);
    c.default.address_scopes = cfg["address_scopes"].as_array().map(|a| {
        a.iter()
            .filter_map(|v| v.as_str().map(String::from))
            .collect()
    });
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_from_live_ovsdb_matches_the_fixture_for_every_nb_scenario() {
    let names = [
        "nb-provider-vm.json",
        "nb-vlan-provider-vm.json",
        "nb-gateway-subnet-advertisement.json",
        "nb-fip.json",
        "nb-fip-centralized.json",
        "nb-tenant-host-method.json",
        "nb-address-scopes.json",
        "nb-pf-fip.json",
        "nb-ipv6-gua-only.json",
    ];
    for (name, monitor_all) in names.into_iter().flat_map(|n| [(n, false), (n, true)]) {
        let s = scenario(name);
        let nb = OvsdbServer::start("ovn-nb.ovsschema").unwrap();
        let ovs = OvsdbServer::start("vswitch.ovsschema").unwrap();
        nb.transact(&insert_ops(&s["ovn"]["OVN_Northbound"]))
            .unwrap();
        ovs.transact(&insert_ops(&s["ovn"]["Open_vSwitch"]))
            .unwrap();

        let mut config = config_for(&s);
        config.ovn.ovn_nb_connection = Some(nb.unix_remote());
        config.default.ovsdb_connection = ovs.unix_remote();
        config.default.ovn_nb_monitor_all = monitor_all;
        let sources = OvnSources::start(&config, Duration::from_secs(20))
            .await
            .unwrap();
        sources.wait_synced(Duration::from_secs(20)).await.unwrap();
        assert!(sources.port_conditions.is_some(), "{name}");
        assert_eq!(sources.conditions_sent_to_server(), !monitor_all, "{name}");
        let live = sources.converged_inputs().await.unwrap().snapshot;

        let fixture = obgp_ovn::Snapshot::from_wire(&s["ovn"]).unwrap();
        let facts = NodeFacts::default();
        let want = desired_state(&fixture, &config, &facts).unwrap().to_node();
        let got = desired_state(&live, &config, &facts).unwrap().to_node();
        assert!(
            !want.addresses.is_empty(),
            "{name}: the fixture exposes something"
        );
        assert_eq!(
            got, want,
            "{name}, ovn_nb_monitor_all = {monitor_all}: live snapshot and fixture disagree"
        );
    }
}

/// The SB driver reads OVN_Southbound: from `[ovn] ovn_sb_connection`, or,
/// when unset, from the Open_vSwitch row's `external_ids:ovn-remote` as
/// upstream does (exercised on every other scenario).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sb_snapshot_from_live_ovsdb_matches_the_fixture_for_every_sb_scenario() {
    let names = [
        "sb-sync-provider-vm.json",
        "sb-withdraw-provider-vm.json",
        "sb-gateway-and-tenant-subnet.json",
        "sb-tenant-host.json",
    ];
    for (i, name) in names.into_iter().enumerate() {
        let s = scenario(name);
        let sb = OvsdbServer::start("ovn-sb.ovsschema").unwrap();
        let ovs = OvsdbServer::start("vswitch.ovsschema").unwrap();
        sb.transact(&insert_ops(&s["ovn"]["OVN_Southbound"]))
            .unwrap();
        ovs.transact(&insert_ops(&s["ovn"]["Open_vSwitch"]))
            .unwrap();

        let mut config = config_for(&s);
        config.default.ovsdb_connection = ovs.unix_remote();
        let from_ovs_row = i % 2 == 1;
        if from_ovs_row {
            let point_at_sb = serde_json::json!({
                "op": "mutate", "table": "Open_vSwitch", "where": [],
                "mutations": [
                    ["external_ids", "delete", ["set", ["ovn-remote"]]],
                    ["external_ids", "insert", ["map", [["ovn-remote", sb.unix_remote()]]]]
                ]
            });
            ovs.transact(&[point_at_sb]).unwrap();
        } else {
            config.ovn.ovn_sb_connection = Some(sb.unix_remote());
        }
        let sources = OvnSources::start(&config, Duration::from_secs(20))
            .await
            .unwrap();
        sources.wait_synced(Duration::from_secs(20)).await.unwrap();
        let live = sources.inputs().snapshot;

        let fixture = obgp_ovn::Snapshot::from_wire(&s["ovn"]).unwrap();
        let facts = NodeFacts::default();
        let want = desired_state(&fixture, &config, &facts).unwrap().to_node();
        let got = desired_state(&live, &config, &facts).unwrap().to_node();
        assert!(
            !want.links.is_empty(),
            "{name}: the fixture wires something"
        );
        assert_eq!(
            got, want,
            "{name} (SB from the OVS row: {from_ovs_row}): live snapshot and fixture disagree"
        );
    }
}
