//! `announce_with = route` against `address` on every golden scenario of
//! the drivers that announce on `bgp_nic` (NB and SB underlay): the same
//! exposures, each announced by a host route in the VRF table instead of
//! its address, every other node object the same, and FRR redistributing
//! kernel routes as well as connected ones.

use std::collections::BTreeMap;

use obgp_config::{AnnounceWith, Config, Driver, ExposingMethod};
use obgp_desired::{desired_state, Desired, NodeFacts};
use obgp_netmodel::{proto, scope, Address, Class, IpNet, Route, RouteType};
use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::{Snapshot, NB_DB, SB_DB};

mod golden;
use golden::{fixtures, read, scenario_config, scenario_paths, snapshot};

fn with(config: &Config, how: AnnounceWith) -> Config {
    let mut c = config.clone();
    c.default.announce_with = how;
    c
}

/// Checks one OVN state; returns how many exposures it compared.
fn compare(name: &str, snap: &Snapshot, config: &Config) -> usize {
    let facts = NodeFacts::default();
    let by_address = desired_state(snap, &with(config, AnnounceWith::Address), &facts).unwrap();
    let by_route = desired_state(snap, &with(config, AnnounceWith::Route), &facts).unwrap();
    assert_eq!(by_address.exposed, by_route.exposed, "{name}");
    let (a, r) = (by_address.to_node(), by_route.to_node());
    let nic = &by_address.bgp_nic;

    let announced: BTreeMap<Address, Class> = by_address
        .exposed
        .values()
        .map(|e| {
            let address = Address {
                dev: nic.clone(),
                net: IpNet::from(e.ip),
            };
            let class = *a
                .addresses
                .get(&address)
                .unwrap_or_else(|| panic!("{name}: no address {address:?} on bgp_nic"));
            (address, class)
        })
        .collect();
    let mut addresses = a.addresses.clone();
    addresses.retain(|k, _| !announced.contains_key(k));
    assert_eq!(r.addresses, addresses, "{name}: only the announcements go");

    let mut routes = a.routes.clone();
    for (address, class) in &announced {
        let route = Route::announcement(address.net, by_address.vrf_table, nic);
        assert_eq!(
            (route.proto, route.scope, route.kind),
            (
                proto::ANNOUNCE,
                if address.net.addr().is_ipv6() {
                    scope::UNIVERSE
                } else {
                    scope::LINK
                },
                RouteType::Unicast
            )
        );
        assert!(
            routes.insert(route, *class).is_none(),
            "{name}: {address:?} was already routed"
        );
    }
    assert_eq!(r.routes, routes, "{name}: one route per announcement");
    assert_eq!(
        (&r.rules, &r.neighbours, &r.proxy_neighbours, &r.links),
        (&a.rules, &a.neighbours, &a.proxy_neighbours, &a.links),
        "{name}: the wiring does not change"
    );
    if let Some(frr) = &by_route.frr_config {
        assert!(
            frr.contains("redistribute kernel") && frr.contains("redistribute connected"),
            "{name}: {frr}"
        );
    }
    announced.len()
}

#[test]
fn announcing_with_routes_replaces_each_address_by_a_vrf_route_and_changes_nothing_else() {
    let paths = scenario_paths();
    let (mut states, mut exposures) = (0, 0);
    for path in paths {
        let sc = read(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(config) = scenario_config(&sc) else {
            continue;
        };
        let d = &config.default;
        let underlay = matches!(d.driver, Driver::NbOvnBgpDriver | Driver::OvnBgpDriver)
            && d.exposing_method == ExposingMethod::Underlay;
        if !underlay {
            continue;
        }
        let mut db = FixtureDb::from_wire(&sc["ovn"]).unwrap();
        exposures += compare(&name, &snapshot(&db), &config);
        states += 1;
        for step in sc["steps"].as_array().into_iter().flatten() {
            if let Some(ops) = step["ovn_transaction"].as_array() {
                let sb = ops.iter().all(|o| o["table"] == "Port_Binding");
                db.apply(if sb { SB_DB } else { NB_DB }, ops).unwrap();
                exposures += compare(&name, &snapshot(&db), &config);
                states += 1;
            }
        }
    }
    assert!(
        states > 15 && exposures > 30,
        "compared {exposures} exposures in {states} states"
    );
}

#[test]
fn the_route_way_redistributes_kernel_and_connected_routes_in_either_tenant_method() {
    let topo = read(&fixtures().join("demo/topology.json"));
    let snap = Snapshot::from_wire(&topo).unwrap();
    let mut config = obgp_config::Loader::new()
        .sources(vec![obgp_config::ConfigSource::File(
            fixtures().join("demo/bgp-agent.conf"),
        )])
        .load()
        .unwrap()
        .config;
    let redistributes = |c: &Config| -> Vec<String> {
        let d: Desired = desired_state(&snap, c, &NodeFacts::default()).unwrap();
        let text = d.frr_config.expect("the demo configures a router-id");
        let lines: Vec<String> = text
            .lines()
            .filter(|l| l.contains("redistribute"))
            .map(|l| l.trim().to_string())
            .collect();
        // The IPv4 and IPv6 address families redistribute alike.
        let (v4, v6) = lines.split_at(lines.len() / 2);
        assert_eq!(v4, v6, "{text}");
        v4.to_vec()
    };
    for method in ["host", "subnet"] {
        config.default.advertisement_method_tenant_networks =
            obgp_config::AdvertisementMethod::from_name(method).unwrap();
        assert_eq!(
            redistributes(&with(&config, AnnounceWith::Route)),
            ["redistribute kernel", "redistribute connected"],
            "{method}"
        );
    }
    // Upstream's text where the route way is not asked for (host method).
    config.default.advertisement_method_tenant_networks = obgp_config::AdvertisementMethod::Host;
    assert_eq!(
        redistributes(&with(&config, AnnounceWith::Address)),
        ["redistribute connected"]
    );
}
