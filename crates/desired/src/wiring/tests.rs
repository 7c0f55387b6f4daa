//! Unit tests of `wiring`, beside it so that they may use its private items.

use std::collections::HashMap;

use obgp_netmodel::DevName;
use obgp_ovn::BridgeMapping;
use obgp_ovsdb_data::Uuid;

use obgp_netmodel::Class;

use super::*;
use crate::provenance::ExposeRule;

fn dev(name: &str) -> DevName {
    DevName::new(name).expect("valid device name")
}

/// physnet1 on br-ex (with the patch ports of `provnet-1` and `other`),
/// then physnet2 on br-a and again on br-b.
fn ovs() -> LocalOvs {
    let mapping = |index, network: &str, bridge| BridgeMapping {
        index,
        network: network.into(),
        bridge: dev(bridge),
    };
    LocalOvs {
        bridge_mappings: vec![
            mapping(1, "physnet1", "br-ex"),
            mapping(2, "physnet2", "br-a"),
            mapping(3, "physnet2", "br-b"),
        ],
        bridge_ports: HashMap::from([(
            "br-ex".to_string(),
            ["patch-provnet-1-to-br-int", "patch-other-to-br-int", "eth1"]
                .map(String::from)
                .to_vec(),
        )]),
        ..LocalOvs::default()
    }
}

fn base() -> Desired {
    Desired {
        vrf: dev("bgp-vrf"),
        vrf_table: 10,
        bgp_nic: dev("bgp-nic"),
        announce_with: obgp_config::AnnounceWith::Address,
        bridges: Vec::new(),
        exposed: BTreeMap::new(),
        tenant_subnets: Vec::new(),
        vrf_routes: Default::default(),
        frr_config: None,
        notes: Vec::new(),
        evpn: None,
        local_cluster: None,
        dynamic: None,
    }
}

fn row(n: u128) -> RowRef {
    RowRef {
        table: "Logical_Switch_Port",
        uuid: Uuid(n),
    }
}

fn origin(rule: ExposeRule, n: u128) -> Origin {
    Origin::new(rule, row(n))
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("IP literal")
}

const NB_LIKE: DriverPolicy = DriverPolicy {
    same_ip: SameIp::LaterWiringWins,
    mac_tweak_once: MacTweakOnce::PerProvider,
};
const SB_LIKE: DriverPolicy = DriverPolicy {
    same_ip: SameIp::FirstWins,
    mac_tweak_once: MacTweakOnce::PerLocalnet,
};

#[test]
fn a_tagged_localnet_is_wired_on_the_vlan_device_of_the_last_mapping_of_its_network() {
    let ovs = ovs();
    let t = wire_target(&ovs, "physnet2", Some(100)).expect("mapped");
    assert_eq!(
        (t.bridge.as_str(), t.vlan, t.dev.as_str()),
        ("br-b", Some(100), "br-b.100")
    );
    let t = wire_target(&ovs, "physnet1", None).expect("mapped");
    assert_eq!(
        (t.bridge.as_str(), t.vlan, t.dev.as_str()),
        ("br-ex", None, "br-ex")
    );
    assert_eq!(wire_target(&ovs, "physnet9", Some(7)), None);
}

#[test]
fn base_wiring_has_a_vlan_device_per_tag_and_the_provnet_patch_ports() {
    let (ovs, cfg) = (ovs(), Config::default());
    let mut w = Wiring::new(&ovs, &cfg, NB_LIKE, base(), Trace::default());
    w.wire_bridges(|net| match net {
        "physnet1" => BTreeSet::from([200, 100]),
        _ => BTreeSet::new(),
    });
    let (d, _, _) = w.finish();
    let br_ex = &d.bridges[0];
    assert_eq!((br_ex.bridge.as_str(), br_ex.index), ("br-ex", 1));
    let vlans: Vec<_> = br_ex
        .vlans
        .iter()
        .map(|v| (v.dev.as_str(), v.vlan))
        .collect();
    assert_eq!(vlans, [("br-ex.100", 100), ("br-ex.200", 200)]);
    assert_eq!(
        br_ex.mac_tweak_ports.iter().collect::<Vec<_>>(),
        ["patch-provnet-1-to-br-int"]
    );
    let bridges: Vec<_> = d.bridges.iter().map(|b| b.bridge.as_str()).collect();
    assert_eq!(bridges, ["br-ex", "br-a", "br-b"]);
}

#[test]
fn only_a_provnet_patch_port_on_the_bridge_is_in_the_base_wiring() {
    let (ovs, cfg) = (ovs(), Config::default());
    let w = Wiring::new(&ovs, &cfg, NB_LIKE, base(), Trace::default());
    let on = |localnet, network| {
        let p = ProviderNetwork::new(localnet, wire_target(&ovs, network, None).unwrap());
        w.mac_tweak_in_base(&p)
    };
    assert!(on("provnet-1", "physnet1"));
    assert!(!on("provnet-1", "physnet2"), "not on that bridge");
    assert!(!on("other", "physnet1"), "not a provnet localnet");
}

#[test]
fn a_later_wiring_of_the_same_ip_wins_only_under_later_wiring_wins() {
    let (ovs, cfg) = (ovs(), Config::default());
    let first = ProviderNetwork::new("provnet-1", wire_target(&ovs, "physnet1", None).unwrap());
    let second = ProviderNetwork::new("provnet-2", wire_target(&ovs, "physnet2", Some(5)).unwrap());
    for (policy, kept) in [(NB_LIKE, "br-b.5"), (SB_LIKE, "br-ex")] {
        let mut w = Wiring::new(&ovs, &cfg, policy, base(), Trace::default());
        let a = ip("192.0.2.10");
        w.expose_provider(&[a], None, &first, &[], origin(ExposeRule::Gateway, 1));
        w.announce(a, origin(ExposeRule::TenantVm, 2));
        w.expose_provider(
            &[a],
            None,
            &second,
            &[],
            origin(ExposeRule::CentralizedFip, 3),
        );
        let (d, contested, _) = w.finish();
        let e = &d.exposed[&a];
        assert_eq!((e.class, e.source), (Class::Gateway, row(1)), "{policy:?}");
        let target = &e.wiring.as_ref().expect("wired").target;
        assert_eq!(target.dev.as_str(), kept, "{policy:?}");
        assert!(contested.contains(&a), "{policy:?}");
    }
}

#[test]
fn the_mac_tweak_flow_is_asked_once_per_provider_or_per_localnet_name() {
    let (ovs, cfg) = (ovs(), Config::default());
    let target = || wire_target(&ovs, "physnet2", None).unwrap();
    // Two provider networks sharing a localnet whose patch port is missing.
    let (p1, p2) = (
        ProviderNetwork::new("dup", target()),
        ProviderNetwork::new("dup", target()),
    );
    for (policy, notes) in [(NB_LIKE, 2), (SB_LIKE, 1)] {
        let mut w = Wiring::new(&ovs, &cfg, policy, base(), Trace::default());
        for (n, p) in [(1, &p1), (2, &p1), (3, &p2)] {
            let a = IpAddr::from([192, 0, 2, n]);
            w.expose_provider(&[a], None, p, &[], origin(ExposeRule::ProviderVm, n.into()));
        }
        let (d, _, _) = w.finish();
        assert_eq!(d.notes.len(), notes, "{policy:?}: {:?}", d.notes);
        p1.mac_tweak_asked.set(false);
        p2.mac_tweak_asked.set(false);
    }
}

#[test]
fn a_provider_exposure_wires_the_neighbour_and_proxy_ndp_of_its_ipv6_subnets() {
    let (ovs, cfg) = (ovs(), Config::default());
    let p = ProviderNetwork::new("provnet-1", wire_target(&ovs, "physnet1", None).unwrap());
    let mut w = Wiring::new(&ovs, &cfg, NB_LIKE, base(), Trace::default());
    let mac = "fa:16:3e:00:00:01".parse().expect("MAC literal");
    let cidrs: Vec<IpNet> = ["2001:db8::5/64", "172.24.4.5/24"]
        .iter()
        .map(|c| c.parse().unwrap())
        .collect();
    w.expose_provider(
        &[ip("2001:db8::5")],
        Some(mac),
        &p,
        &cidrs,
        origin(ExposeRule::ProviderVm, 1),
    );
    let (d, _, _) = w.finish();
    let wiring = d.exposed[&ip("2001:db8::5")].wiring.clone().expect("wired");
    assert_eq!(wiring.lladdr, Some(mac));
    let net: std::net::Ipv6Addr = "2001:db8::".parse().unwrap();
    assert_eq!(wiring.proxy_ndp, [net], "IPv6 subnets only");
    // The patch port is on br-ex: no deferred note.
    assert!(d.notes.is_empty(), "{:?}", d.notes);
}

#[test]
fn tenant_addresses_are_exposed_by_the_options_and_address_scopes() {
    let mut cfg = Config::default();
    cfg.default.expose_ipv6_gua_tenant_networks = true;
    let t = TenantRules::new(&cfg);
    assert!(t.any());
    assert!(t.exposes(ip("2620:52:0:10::1")), "a GUA");
    assert!(
        !t.exposes(ip("2001:db8::1")),
        "the documentation prefix is not global"
    );
    assert!(!t.exposes(ip("10.0.0.1")));
    assert!(t.allows_scope(None), "no address_scopes: every scope");
    cfg.default.expose_tenant_networks = true;
    cfg.default.address_scopes = Some(vec!["scope-a".into()]);
    let t = TenantRules::new(&cfg);
    assert!(t.exposes(ip("10.0.0.1")));
    assert!(t.allows_scope(Some("scope-a")));
    assert!(!t.allows_scope(Some("scope-b")));
    assert!(!t.allows_scope(None));
}

#[test]
fn a_tenant_subnet_is_routed_via_the_gateway_ip_of_its_family() {
    let mut cfg = Config::default();
    cfg.default.advertisement_method_tenant_networks = AdvertisementMethod::Subnet;
    let ovs = ovs();
    let gw = Gateway {
        provider: Rc::new(ProviderNetwork::new(
            "provnet-1",
            wire_target(&ovs, "physnet1", Some(30)).unwrap(),
        )),
        ips: vec![ip("172.24.4.1"), ip("2001:db8::1"), ip("172.24.4.2")],
        row: row(9),
    };
    let mut w = Wiring::new(&ovs, &cfg, NB_LIKE, base(), Trace::default());
    w.route_tenant_subnet(&gw, "10.0.0.1/24".parse().unwrap(), "r1".into());
    let (d, _, _) = w.finish();
    let s = &d.tenant_subnets[0];
    assert_eq!(s.net.to_string(), "10.0.0.0/24");
    assert_eq!(s.rule_dst.to_string(), "10.0.0.1/24");
    assert_eq!(s.via, Some(ip("172.24.4.1")));
    assert_eq!((s.bridge.as_str(), s.dev.as_str()), ("br-ex", "br-ex.30"));
    assert!(s.vrf_route, "subnet method: also routed in the VRF");
}
