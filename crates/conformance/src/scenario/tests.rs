//! The runner's mechanics with desired states built by hand (the
//! production path runs `obgp_desired`; see tests/scenarios.rs).

use std::cell::Cell;

use obgp_netmodel::{
    proto, scope, Address, Class, DevName, Flow, FlowAction, Link, LinkKind, Neighbour,
    ProxyNeighbour, Route, RouteType, Rule, Sysctl, TableRef,
};

use super::*;
use crate::scenario_file::load;
use crate::verdict::Deviation;

fn dev(s: &str) -> DevName {
    DevName::new(s).unwrap()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/conformance/scenarios")
        .join(format!("{name}.json"))
}

/// The NB underlay driver's desired node for br-ex, with or without the
/// provider VM 172.24.4.10 / 2001:db8::10.
fn desired(with_vm: bool) -> DesiredNode {
    let br = dev("br-ex");
    let nic = dev("bgp-nic");
    let mut d = DesiredNode {
        announce_dev: Some(nic.clone()),
        vrf_table: 10,
        ..DesiredNode::default()
    };
    for (name, kind, master) in [
        ("bgp-vrf", LinkKind::Vrf { table: 10 }, None),
        ("bgp-nic", LinkKind::Dummy, Some(dev("bgp-vrf"))),
        ("br-ex", LinkKind::Existing, None),
    ] {
        d.links.insert(Link {
            name: dev(name),
            kind,
            master,
            mac: None,
            up: true,
        });
    }
    d.bridge_tables.insert(br.clone());
    d.sysctls.insert(Sysctl::conf(false, &br, "proxy_arp", "1"));
    d.sysctls.insert(Sysctl::conf(true, &br, "proxy_ndp", "1"));
    for net in ["169.254.1.1/32", "fd53:d91e:400:7f17::1:1/128"] {
        let a = Address {
            dev: br.clone(),
            net: net.parse().unwrap(),
        };
        d.addresses.insert(a, Class::Base);
    }
    for v6 in [false, true] {
        let route = Route {
            table: TableRef::Bridge(br.clone()),
            v6,
            dst: None,
            dev: Some(br.clone()),
            via: None,
            proto: proto::BOOT,
            scope: scope::LINK,
            kind: RouteType::Unicast,
            metric: None,
        };
        d.routes.insert(route, Class::Base);
        d.flows.insert(Flow {
            bridge: br.clone(),
            cookie: 999,
            table: 0,
            priority: 900,
            protocol: if v6 { "ipv6" } else { "ip" }.into(),
            in_port: "patch-provnet-22222222-2222-4222-8222-222222222222-to-br-int".into(),
            matches: Vec::new(),
            actions: vec![FlowAction::ModDlDstBridgeMac, FlowAction::Normal],
        });
    }
    if !with_vm {
        return d;
    }
    for ip in ["172.24.4.10/32", "2001:db8::10/128"] {
        let net: obgp_netmodel::IpNet = ip.parse().unwrap();
        d.addresses.insert(
            Address {
                dev: nic.clone(),
                net,
            },
            Class::Vm,
        );
        let rule = Rule {
            dst: net,
            table: TableRef::Bridge(br.clone()),
            priority: None,
        };
        d.rules.insert(rule, Class::Vm);
        let route = Route {
            table: TableRef::Bridge(br.clone()),
            v6: ip.contains(':'),
            dst: Some(net),
            dev: Some(br.clone()),
            via: None,
            proto: proto::BOOT,
            scope: scope::LINK,
            kind: RouteType::Unicast,
            metric: None,
        };
        d.routes.insert(route, Class::Vm);
        let n = Neighbour {
            dev: br.clone(),
            dst: net.addr(),
            lladdr: "fa:16:3e:11:11:11".parse().unwrap(),
        };
        d.neighbours.insert(n, Class::Vm);
    }
    let p = ProxyNeighbour {
        dev: br,
        dst: "2001:db8::".parse().unwrap(),
    };
    d.proxy_neighbours.insert(p, Class::Vm);
    d
}

#[test]
fn provider_vm_scenario_passes_with_the_right_desired_state() {
    let sc = load(&fixture("nb-provider-vm")).unwrap();
    let out = replay(
        &sc,
        &Deviations::default(),
        &mut Injected::new(|| Ok(desired(true))),
    );
    assert_eq!(out, Outcome::Passed);
}

#[test]
fn a_wrong_desired_state_fails_with_the_differences() {
    let sc = load(&fixture("nb-provider-vm")).unwrap();
    let Outcome::Failed(why) = replay(
        &sc,
        &Deviations::default(),
        &mut Injected::new(|| Ok(desired(false))),
    ) else {
        panic!("expected a failure");
    };
    assert!(
        why.iter()
            .any(|w| w == "step 1: on node, not desired: addr bgp-nic 172.24.4.10/32"),
        "{why:#?}"
    );
}

fn withdraw_by_sync(deviations: &Deviations) -> Outcome {
    let sc = load(&fixture("nb-provider-vm-withdraw-by-sync")).unwrap();
    let calls = Cell::new(0);
    // start and the first sync see the VM; the missed update does not
    // reconcile; the cleanup sync no longer sees it.
    replay(
        &sc,
        deviations,
        &mut Injected::new(|| {
            calls.set(calls.get() + 1);
            Ok(desired(calls.get() <= 2))
        }),
    )
}

#[test]
fn our_neighbour_cleanup_differs_from_upstream_and_fails_unless_listed() {
    let Outcome::Failed(why) = withdraw_by_sync(&Deviations::default()) else {
        panic!("expected a failure");
    };
    assert!(
        why.iter()
            .all(|w| w.starts_with("step 3: on node, not desired: ")),
        "{why:#?}"
    );
    // Two neighbours and the proxy entry upstream leaves behind.
    assert_eq!(why.len(), 3, "{why:#?}");
}

#[test]
fn listed_deviations_pass_and_are_reported_with_their_reason() {
    let mut list = Vec::new();
    for difference in [
        "on node, not desired: neigh *",
        "on node, not desired: proxy *",
    ] {
        list.push(Deviation {
            scenario: "nb-provider-vm-withdraw-by-sync".into(),
            step: Value::from(3),
            difference: difference.into(),
            reason: "we remove leftover neighbours".into(),
        });
    }
    let Outcome::PassedWithDeviations(why) = withdraw_by_sync(&Deviations(list)) else {
        panic!("expected a pass with deviations");
    };
    assert_eq!(why[0], "3 listed deviation(s)");
    assert!(why[1].ends_with("(deviation: we remove leftover neighbours)"));
}

#[test]
fn drivers_and_methods_not_implemented_are_skipped_with_the_reason() {
    // Every recorded driver is implemented now: a recorded scenario with
    // its exposing method changed to one that is not stands in.
    let mut sc = load(&fixture("nb-provider-vm")).unwrap();
    sc.config
        .insert("exposing_method".into(), Value::from("ovn"));
    let out = replay(
        &sc,
        &Deviations::default(),
        &mut Injected::new(|| unreachable!()),
    );
    let Outcome::Skipped(why) = out else {
        panic!("{out:?}");
    };
    assert!(why[0].contains("exposing_method ovn"), "{why:?}");
    sc.driver = "some_other_driver".into();
    let Outcome::Skipped(why) = replay(
        &sc,
        &Deviations::default(),
        &mut Injected::new(|| unreachable!()),
    ) else {
        panic!("expected a skip");
    };
    assert!(why[0].contains("not implemented"), "{why:?}");
}

#[test]
fn scenario_config_goes_through_the_real_loader() {
    let sc = load(&fixture("nb-gateway-subnet-advertisement")).unwrap();
    let c = config_of(&sc).unwrap();
    assert!(c.default.expose_tenant_networks);
    assert_eq!(c.default.bgp_vrf_table_id, 10);
    assert_eq!(
        c.default.advertisement_method_tenant_networks,
        obgp_config::AdvertisementMethod::Subnet
    );
}

#[test]
fn frr_texts_compare_without_blank_lines_and_redistribute_order() {
    let a = "\nrouter bgp 1\n\n  redistribute kernel\n  redistribute connected\n exit\n";
    let b = "router bgp 1\n  redistribute connected\n  redistribute kernel\n exit";
    assert_eq!(frr_canonical(a), frr_canonical(b));
    assert_ne!(frr_canonical(a), frr_canonical("router bgp 2\n"));
}
