//! Unit tests of `snapshot`, beside it so that they may use its private items.

use super::*;
use serde_json::json;

const LS: &str = "11111111-0000-4000-8000-000000000001";
const VM: &str = "11111111-0000-4000-8000-000000000002";
const LOCALNET: &str = "11111111-0000-4000-8000-000000000003";
const VIRT: &str = "11111111-0000-4000-8000-000000000004";
const BAD: &str = "11111111-0000-4000-8000-000000000005";

fn snap(extra_lsps: serde_json::Value, mappings: &str) -> Snapshot {
    let mut lsps = json!({
        VM: {"name": "vm1", "up": true, "addresses": "fa:16:3e:00:00:01 172.24.4.10",
             "options": ["map", [["requested-chassis", "compute-2,compute-1"]]],
             "external_ids": ["map", [["neutron:network_name", "neutron-net1"],
                                      ["neutron:host_id", "compute-9"]]]},
        LOCALNET: {"name": "provnet-1", "type": "localnet", "addresses": "unknown", "tag": 100,
                   "options": ["map", [["network_name", "physnet1"]]]},
        VIRT: {"name": "virt1", "type": "virtual", "up": true,
               "addresses": "fa:16:3e:00:00:02 172.24.4.11",
               "options": ["map", [["requested-chassis", "compute-1"]]],
               "external_ids": ["map", [["neutron:host_id", "compute-3"],
                                        ["neutron:network_name", "neutron-net1"]]]}
    });
    for (k, v) in extra_lsps.as_object().unwrap() {
        lsps[k] = v.clone();
    }
    let ports: Vec<_> = lsps
        .as_object()
        .unwrap()
        .keys()
        .map(|k| json!(["uuid", k]))
        .collect();
    Snapshot::from_wire(&json!({
        "OVN_Northbound": {
            "Logical_Switch": {LS: {"name": "neutron-net1", "ports": ["set", ports]}},
            "Logical_Switch_Port": lsps,
        },
        "Open_vSwitch": {"Open_vSwitch": {"22222222-0000-4000-8000-000000000001": {
            "external_ids": ["map", [["ovn-bridge-mappings", mappings], ["system-id", "sys-1"],
                                     ["hostname", "compute-1"]]]}}}
    }))
    .unwrap()
}

#[test]
fn row_sets_stay_ordered_and_equal_across_the_small_large_boundary() {
    use std::collections::BTreeMap;
    let mut set = RowSet::default();
    let mut model = BTreeMap::new();
    let (mut large, mut small_after_large) = (false, false);
    // A fixed pseudo-random walk of inserts and removes over 48 uuids
    // that crosses SMALL_SET in both directions many times.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for step in 0..4000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let u = Uuid(u128::from(x % 48));
        // Phases of mostly inserts, then mostly removes.
        let growing = (step / 500) % 2 == 0;
        let insert = growing != (x >> 32).is_multiple_of(3);
        // Re-inserting a present uuid replaces its row.
        if insert {
            set.insert(u, Arc::new(step));
            model.insert(u, step);
        } else {
            set.remove(u);
            model.remove(&u);
        }
        assert!(
            set.iter().map(|(u, r)| (*u, **r)).eq(model.clone()),
            "step {step}"
        );
        assert_eq!(set.first(), model.values().next());
        assert_eq!(set.is_empty(), model.is_empty());
        // Same content, same representation: built afresh it is equal.
        let mut fresh = RowSet::default();
        for (u, r) in &model {
            fresh.insert(*u, Arc::new(*r));
        }
        assert_eq!(set, fresh, "step {step}");
        match set {
            RowSet::Large(_) => large = true,
            RowSet::Small(_) => small_after_large |= large,
            RowSet::One(_) => {}
        }
        // One row is held inline, never in an array.
        assert!(
            !matches!(&set, RowSet::Small(a) if a.len() == 1),
            "step {step}"
        );
    }
    assert!(
        large && small_after_large,
        "the walk crossed the boundary both ways"
    );
}

#[test]
fn requested_chassis_lists_bind_the_port_to_every_listed_host() {
    let s = snap(json!({}), "physnet1:br-ex");
    let on = |c: &str| {
        s.active_vifs_on_chassis(c)
            .map(|p| p.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(on("compute-1"), ["vm1"]);
    assert_eq!(on("compute-2"), ["vm1"]);
    // requested-chassis wins over host_id for VM ports...
    assert!(on("compute-9").is_empty());
    // ...but is ignored for virtual ports, which follow neutron:host_id.
    assert_eq!(on("compute-3"), ["virt1"]);
}

#[test]
fn localnet_is_indexed_by_switch_and_physical_network() {
    let s = snap(json!({}), "physnet1:br-ex");
    assert_eq!(s.localnet_of_switch("neutron-net1").unwrap().tag, Some(100));
    assert_eq!(s.localnets_on_physnet("physnet1").count(), 1);
    assert_eq!(
        s.ovs
            .bridge_for_network("physnet1")
            .unwrap()
            .bridge
            .as_str(),
        "br-ex"
    );
    assert_eq!(s.ovs.system_id.as_deref(), Some("sys-1"));
}

#[test]
fn garbled_addresses_skip_the_row_with_a_warning_naming_it() {
    let s = snap(
        json!({BAD: {"name": "bad", "up": true, "addresses": "zz:16:3e:00:00:01 10.0.0.1",
                         "options": ["map", [["requested-chassis", "compute-1"]]]}}),
        "physnet1:br-ex",
    );
    assert!(s.lsp("bad").is_none());
    assert!(s.lsp("vm1").is_some());
    let w = &s.warnings()[0];
    assert_eq!(w.table, "Logical_Switch_Port");
    assert_eq!(w.uuid.to_string(), BAD);
    assert!(w.reason.contains("zz:16:3e"), "{}", w.reason);
}

#[test]
fn unknown_addresses_fall_back_to_neutron_cidrs_without_a_mac() {
    let s = snap(
        json!({BAD: {"name": "cfgdrive", "up": true, "addresses": "unknown",
                         "external_ids": ["map", [["neutron:cidrs", "172.24.4.12/24 2001:db8::12/64"]]]}}),
        "physnet1:br-ex",
    );
    let p = s.lsp("cfgdrive").unwrap();
    assert_eq!(p.addresses.mac, None);
    assert_eq!(p.addresses.ips.len(), 2);
}

#[test]
fn bridge_mapping_without_colon_is_skipped_but_keeps_the_index_of_the_next() {
    let s = snap(json!({}), "garbage,physnet2:br-two,physnet1:br-ex");
    let m: Vec<_> = s
        .ovs
        .bridge_mappings
        .iter()
        .map(|m| (m.index, m.network.as_str()))
        .collect();
    assert_eq!(m, [(2, "physnet2"), (3, "physnet1")]);
    assert!(s
        .warnings()
        .iter()
        .any(|w| w.table == "Open_vSwitch" && w.reason.contains("garbage")));
}

#[test]
fn vlan_tag_zero_is_untagged_and_out_of_range_tags_skip_the_localnet() {
    let s = snap(
        json!({BAD: {"name": "provnet-2", "type": "localnet", "tag": 0,
                         "options": ["map", [["network_name", "physnet2"]]]},
                   VIRT: {"name": "provnet-3", "type": "localnet", "tag": 4095,
                          "options": ["map", [["network_name", "physnet3"]]]}}),
        "physnet1:br-ex",
    );
    assert_eq!(s.localnets_on_physnet("physnet2").next().unwrap().tag, None);
    assert_eq!(s.localnets_on_physnet("physnet3").count(), 0);
    assert!(s
        .warnings()
        .iter()
        .any(|w| w.uuid.to_string() == VIRT && w.reason.contains("VLAN tag")));
}

#[test]
fn dangling_switch_port_reference_is_reported() {
    let s = Snapshot::from_wire(&json!({"OVN_Northbound": {"Logical_Switch": {LS: {
            "name": "sw", "ports": ["uuid", "99999999-0000-4000-8000-000000000009"]}}}}))
    .unwrap();
    assert_eq!(s.warnings().len(), 1);
    assert!(s.warnings()[0].reason.contains("99999999"));
}

#[test]
fn fip_distributed_is_true_when_absent_and_only_for_exact_true() {
    let g = |v: serde_json::Value| {
        Snapshot::from_wire(&json!({"OVN_Northbound": {"NB_Global": {LS: v}}}))
            .unwrap()
            .nb_global
            .fip_distributed
    };
    assert!(g(json!({})));
    assert!(g(
        json!({"external_ids": ["map", [["neutron:fip-distributed", "True"]]]})
    ));
    assert!(!g(
        json!({"external_ids": ["map", [["neutron:fip-distributed", "False"]]]})
    ));
    assert!(!g(
        json!({"external_ids": ["map", [["neutron:fip-distributed", "true"]]]})
    ));
}

fn scenario_ovn(name: &str) -> serde_json::Value {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/conformance/scenarios")
        .join(format!("{name}.json"));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    v["ovn"].clone()
}

#[test]
fn a_bgpvpn_switch_carries_its_annotations_and_its_vm_port_its_dhcp_options() {
    use crate::neutron::{BgpVpn, BgpVpnType};
    let s = Snapshot::from_wire(&scenario_ovn("evpn-nb-vrf")).unwrap();
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
    let net = "neutron-11111111-1111-4111-8111-111111111111";
    let rd = |v: &str| vec![v.parse().unwrap()];
    let want = BgpVpn {
        kind: Some(BgpVpnType::L3),
        vni: 1001,
        asn: Some(64999),
        rd: rd("64999:1001"),
        route_targets: rd("64999:1001"),
        import_targets: rd("64999:2001"),
        export_targets: rd("64999:3001"),
    };
    assert_eq!(s.switch(net).unwrap().bgpvpn, Some(Ok(want)));
    let names: Vec<&str> = s
        .bgpvpn_switches()
        .iter()
        .map(|w| w.name.as_str())
        .collect();
    assert_eq!(names, [net]);
    let vm = s.lsp("77777777-7777-4777-8777-777777777777").unwrap();
    let v4 = s.dhcp_options(vm.dhcpv4_options.unwrap()).unwrap();
    assert_eq!(v4.cidr.to_string(), "172.24.4.0/24");
    // Only the options read are kept (lease_time, server_id... are not).
    let opts = |d: &crate::DhcpOptions| {
        d.options
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(opts(v4), ["dns_server={8.8.8.8}", "router=172.24.4.1"]);
    let v6 = s.dhcp_options(vm.dhcpv6_options.unwrap()).unwrap();
    assert_eq!(v6.cidr.to_string(), "2001:db8::/64");
    assert_eq!(
        opts(v6),
        ["dhcpv6_stateless=true", "dns_server={2001:db8::53}"]
    );
    let sw = s.switch(net).unwrap();
    assert!(sw.ports.iter().any(|p| s.lsp_by_uuid(*p) == Some(vm)));
    // The localnet port has no DHCP options.
    let ln = s
        .lsp("provnet-22222222-2222-4222-8222-222222222222")
        .unwrap();
    assert_eq!((ln.dhcpv4_options, ln.dhcpv6_options), (None, None));
}

#[test]
fn evpn_port_bindings_carry_their_vni_and_as() {
    let s = Snapshot::from_wire(&scenario_ovn("evpn-sb-basic")).unwrap();
    for port in [
        "55555555-5555-4555-8555-555555555555",
        "66666666-6666-4666-8666-666666666666",
    ] {
        let pb = s.sb().port(port).unwrap();
        let vpn = pb.bgpvpn.clone().unwrap().unwrap();
        assert_eq!(
            (vpn.kind, vpn.vni, vpn.asn),
            (None, 1001, Some(64999)),
            "{port}"
        );
    }
    let plain = s.sb().port("88888888-8888-4888-8888-888888888888").unwrap();
    assert_eq!(plain.bgpvpn, None);
}

#[test]
fn a_bad_annotation_keeps_the_switch_and_port_with_the_error() {
    let s = Snapshot::from_wire(&json!({
        "OVN_Northbound": {"Logical_Switch": {LS: {"name": "neutron-net1",
            "external_ids": ["map", [["neutron_bgpvpn:type", "l3"],
                                     ["neutron_bgpvpn:vni", "1001"],
                                     ["neutron_bgpvpn:rt", "['64999:1\nexit']"]]]}}},
        "OVN_Southbound": {"Port_Binding": {VM: {"logical_port": "p1",
            "external_ids": ["map", [["neutron_bgpvpn:vni", "99999999"],
                                     ["neutron_bgpvpn:as", "64999"]]]}}}
    }))
    .unwrap();
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
    let err = s
        .switch("neutron-net1")
        .unwrap()
        .bgpvpn
        .clone()
        .unwrap()
        .unwrap_err();
    assert_eq!(err.key, "neutron_bgpvpn:rt");
    let err = s
        .sb()
        .port("p1")
        .unwrap()
        .bgpvpn
        .clone()
        .unwrap()
        .unwrap_err();
    assert_eq!(err.key, "neutron_bgpvpn:vni");
    assert!(err.to_string().contains("99999999"), "{err}");
}

#[test]
fn a_dhcp_options_row_without_a_valid_cidr_is_skipped_with_a_warning() {
    let s = Snapshot::from_wire(&json!({
        "OVN_Northbound": {"DHCP_Options": {
            BAD: {"cidr": "10.0.0.0/33", "options": ["map", [["router", "10.0.0.1"]]]},
            VM: {"cidr": "10.0.0.0/24"}}}
    }))
    .unwrap();
    assert_eq!(s.warnings().len(), 1);
    assert_eq!(s.warnings()[0].table, "DHCP_Options");
    assert!(s.warnings()[0].reason.contains("10.0.0.0/33"));
    let bad = Uuid::parse(BAD).unwrap();
    let good = Uuid::parse(VM).unwrap();
    assert!(s.dhcp_options(bad).is_none());
    assert!(s.dhcp_options(good).unwrap().options.is_empty());
}

#[test]
fn suffixed_bridge_mappings_are_kept_per_suffix_and_bad_entries_skipped() {
    let s = Snapshot::from_wire(&json!({
        "OVN_Northbound": {},
        "Open_vSwitch": {"Open_vSwitch": {"22222222-0000-4000-8000-000000000001": {
            "external_ids": ["map", [
                ["ovn-bridge-mappings", "physnet1:br-osp"],
                ["ovn-bridge-mappings-bgp", "fabric1:br-ex,garbage,local:br-osp"],
                ["ovn-bridge-mappings-", "ignored:br-x"],
                ["ovn-bridge-mappings-other", ""]]]}}}
    }))
    .unwrap();
    let ovs = &s.ovs;
    assert_eq!(ovs.bridge_mappings.len(), 1);
    let bgp: Vec<_> = ovs.suffixed_bridge_mappings["bgp"]
        .iter()
        .map(|m| (m.index, m.network.as_str(), m.bridge.as_str()))
        .collect();
    assert_eq!(bgp, [(1, "fabric1", "br-ex"), (3, "local", "br-osp")]);
    assert_eq!(
        ovs.suffixed_bridge_mappings.keys().collect::<Vec<_>>(),
        ["bgp"],
        "an empty suffix or value is not a mapping"
    );
    assert!(s.warnings().iter().any(|w| w.reason.contains("garbage")));
}
