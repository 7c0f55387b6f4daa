//! The runner's mechanics with desired states built by hand (the
//! production path runs `obgp_desired`; see tests/scenarios.rs).

use std::cell::Cell;

use obgp_netmodel::{
    proto, scope, Address, Class, DevName, Flow, FlowAction, Link, LinkKind, Neighbour,
    ProxyNeighbour, Route, RouteType, Rule, Sysctl, TableRef,
};

use obgp_desired::frr::Redistribute;

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
    let router_id = "192.168.100.11".parse().unwrap();
    let leak = obgp_desired::frr::vrf_leak("bgp-vrf", "64999", router_id, Redistribute::Connected);
    let mut d = DesiredNode {
        announce_dev: Some(nic.clone()),
        vrf_table: 10,
        frr_config: Some(leak),
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

#[test]
fn a_desired_state_without_the_frr_text_fails() {
    // The node objects are right; the VRF leak upstream applies at start
    // is missing: a difference, not a pass.
    let sc = load(&fixture("nb-provider-vm")).unwrap();
    let no_frr = || {
        let mut d = desired(true);
        d.frr_config = None;
        Ok(d)
    };
    let Outcome::Failed(why) = replay(&sc, &Deviations::default(), &mut Injected::new(no_frr))
    else {
        panic!("expected a failure");
    };
    assert_eq!(why.len(), 1, "{why:#?}");
    assert!(
        why[0]
            .starts_with("step frr 0-1: frr text missing: upstream applied [\"router bgp 64999\""),
        "{why:#?}"
    );
}

#[test]
fn a_changed_frr_text_fails_even_when_it_is_the_only_difference() {
    let sc = load(&fixture("nb-provider-vm")).unwrap();
    let kernel = || {
        let mut d = desired(true);
        let rid = "192.168.100.11".parse().unwrap();
        let text =
            obgp_desired::frr::vrf_leak("bgp-vrf", "64999", rid, Redistribute::KernelAndConnected);
        d.frr_config = Some(text);
        Ok(d)
    };
    let Outcome::Failed(why) = replay(&sc, &Deviations::default(), &mut Injected::new(kernel))
    else {
        panic!("expected a failure");
    };
    assert_eq!(why.len(), 1, "{why:#?}");
    assert!(
        why[0].starts_with("step frr 0-1: frr text differs: "),
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
        "on node, not desired: neigh br-ex 172.24.4.10 fa:16:3e:11:11:11",
        "on node, not desired: neigh br-ex 2001:db8::10 fa:16:3e:11:11:11",
        "on node, not desired: proxy br-ex 2001:db8::",
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
fn drivers_and_methods_not_implemented_fail_unless_the_skip_is_listed() {
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
    let Outcome::Failed(why) = out else {
        panic!("an unlisted skip must fail: {out:?}");
    };
    assert!(why[0].contains("exposing_method ovn"), "{why:?}");
    let listed = Deviations::new(vec![Deviation {
        scenario: "nb-provider-vm".into(),
        step: Value::from(crate::verdict::SKIP_STEP),
        difference: "exposing_method ovn is not implemented".into(),
        reason: "a test's stand-in".into(),
    }])
    .unwrap();
    let out = replay(&sc, &listed, &mut Injected::new(|| unreachable!()));
    assert!(matches!(out, Outcome::Skipped(_)), "{out:?}");
    sc.driver = "some_other_driver".into();
    let Outcome::Failed(why) = replay(&sc, &listed, &mut Injected::new(|| unreachable!())) else {
        panic!("a skip listed for another reason must fail");
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
fn a_deviation_naming_no_scenario_file_is_refused_and_the_real_list_loads() {
    let list = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/conformance/deviations-scenarios.json");
    let typo = Deviations::new(vec![Deviation {
        scenario: "nb-provider-vm-typo".into(),
        step: Value::from(1),
        difference: "desired, not on node: addr bgp-nic 172.24.4.10/32".into(),
        reason: "a test's stand-in".into(),
    }])
    .unwrap();
    let err = check_scenarios_exist(&list, &typo).unwrap_err();
    assert!(
        format!("{err:#}").contains("nb-provider-vm-typo"),
        "{err:#}"
    );
    // The committed list is valid: no pattern, every entry's scenario exists.
    let real = Deviations::load(&list).unwrap();
    assert!(!real.0.is_empty());
    check_scenarios_exist(&list, &real).unwrap();
}

#[test]
fn a_desired_frr_text_that_changes_is_applied_again_and_compared() {
    // At the sync step the rewrite's text asks for kernel routes too: a real
    // node lacks those lines and gets the text again, a text upstream never
    // applied. (The simulated node alone took any applied text as held.)
    let sc = load(&fixture("nb-provider-vm")).unwrap();
    let calls = Cell::new(0);
    let changing = || {
        calls.set(calls.get() + 1);
        let mut d = desired(true);
        if calls.get() > 1 {
            let rid = "192.168.100.11".parse().unwrap();
            let kernel = obgp_desired::frr::vrf_leak(
                "bgp-vrf",
                "64999",
                rid,
                Redistribute::KernelAndConnected,
            );
            d.frr_config = Some(kernel);
        }
        Ok(d)
    };
    let Outcome::Failed(why) = replay(&sc, &Deviations::default(), &mut Injected::new(changing))
    else {
        panic!("expected a failure");
    };
    assert_eq!(why.len(), 1, "{why:#?}");
    assert!(
        why[0].starts_with("step frr 0-1: frr text differs: ")
            && why[0].contains("redistribute kernel"),
        "{why:#?}"
    );
}
