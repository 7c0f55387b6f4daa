//! `explain` on the golden scenarios (every driver the agent ships) and on
//! the demo topology: every exposed IP is explained as exposed with rows
//! that exist, every VM port that is not exposed gets a reason, and the
//! demo's ports get the reason their rows call for.

use std::net::IpAddr;

use ipnet::IpNet;
use obgp_config::{Config, Driver};
use obgp_desired::provenance::{ExposeRule, Reason};
use obgp_desired::{desired_state, explain, Desired, Explanation, Finding, NodeFacts, Query};
use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::{LspType, PbType, Snapshot, NB_DB, SB_DB};
use obgp_plan::actual::state::NodeState;
use obgp_plan::Actual;
use serde_json::Value;

mod golden;
use golden::{fixtures, read, scenario_config, scenario_paths, snapshot};

/// The node facts `plan --ovn` takes from a scenario: the VXLAN source
/// from the initial node's addresses.
fn facts(sc: &Value, config: &Config) -> NodeFacts {
    let state: NodeState = serde_json::from_value(sc["initial_node"].clone()).unwrap();
    let actual = Actual::try_from(state).unwrap();
    NodeFacts {
        vxlan_source: obgp_desired::vxlan_source(
            config.default.evpn_nic.as_deref(),
            actual.addresses.iter().map(|a| (&a.dev, a.net)),
        ),
        ..NodeFacts::default()
    }
}

/// Every IP the node announces: `exposed` in the underlay modes, the
/// VNIs' host routes and lo addresses in the EVPN ones.
fn announced(d: &Desired) -> Vec<IpAddr> {
    let Some(evpn) = &d.evpn else {
        return d.exposed.keys().copied().collect();
    };
    let mut out = Vec::new();
    for v in evpn.vnis.values() {
        for p in &v.ports {
            for r in &p.routes {
                if r.dst.prefix_len() == r.dst.max_prefix_len() {
                    out.push(r.dst.addr());
                }
            }
        }
        if let Some((_, ips)) = &v.lo {
            out.extend(ips.iter().map(IpNet::addr));
        }
    }
    out
}

fn exposed_findings(e: &Explanation) -> Vec<&Finding> {
    e.findings
        .iter()
        .filter(|f| matches!(f, Finding::Exposed { .. }))
        .collect()
}

/// Checks one OVN state of a scenario; returns how many IPs and VM ports
/// it checked.
fn check_state(name: &str, snap: &Snapshot, config: &Config, facts: &NodeFacts) -> (usize, usize) {
    let desired = desired_state(snap, config, facts).unwrap();
    let ips = announced(&desired);
    for ip in &ips {
        let e = explain(snap, config, facts, &Query::Ip(*ip)).unwrap();
        let found = exposed_findings(&e);
        assert!(!found.is_empty(), "{name}: {ip} is announced:\n{e}");
        for f in found {
            let Finding::Exposed {
                ip: fip,
                source,
                via,
                ..
            } = f
            else {
                unreachable!()
            };
            assert_eq!(fip, ip, "{name}:\n{e}");
            for row in std::iter::once(source).chain(via) {
                assert!(
                    snap.row_facts(row.table, row.row.uuid, config.default.driver.reads_sb())
                        .is_some(),
                    "{name}: {ip}: row {row} is not in the snapshot"
                );
            }
        }
    }
    let sb = matches!(
        config.default.driver,
        Driver::OvnBgpDriver | Driver::OvnEvpnDriver
    );
    let ports: Vec<(String, Vec<IpAddr>)> = if sb {
        snap.sb()
            .all_ports()
            .into_iter()
            .filter(|p| matches!(p.kind, PbType::Vm | PbType::Virtual))
            .map(|p| (p.uuid.to_string(), p.vm_ips()))
            .collect()
    } else {
        snap.all_lsps()
            .into_iter()
            .filter(|p| matches!(p.kind, LspType::Vm | LspType::Virtual))
            .map(|p| (p.uuid.to_string(), p.addresses.ips.clone()))
            .collect()
    };
    for (port, port_ips) in &ports {
        let e = explain(snap, config, facts, &Query::Port(port.clone())).unwrap();
        let exposed_here = port_ips.iter().any(|ip| ips.contains(ip));
        if exposed_here {
            assert!(e.exposed(), "{name}: port {port} has an announced IP:\n{e}");
        }
        if !e.exposed() {
            assert!(
                e.reasons().next().is_some(),
                "{name}: port {port} is not exposed and gets no reason:\n{e}"
            );
        }
    }
    (ips.len(), ports.len())
}

#[test]
fn every_exposure_of_the_golden_scenarios_is_explained_and_every_unexposed_vm_port_has_a_reason() {
    let names = scenario_paths();
    let (mut ips, mut ports, mut drivers) = (0, 0, std::collections::BTreeSet::new());
    for path in names {
        let sc = read(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(config) = scenario_config(&sc) else {
            continue;
        };
        let facts = facts(&sc, &config);
        let mut db = FixtureDb::from_wire(&sc["ovn"]).unwrap();
        if let Err(e) = desired_state(&snapshot(&db), &config, &facts) {
            panic!("{name}: every recorded driver is implemented: {e}");
        }
        drivers.insert(format!(
            "{} {}",
            config.default.driver.as_str(),
            config.default.exposing_method.as_str()
        ));
        let (i, p) = check_state(&name, &snapshot(&db), &config, &facts);
        (ips, ports) = (ips + i, ports + p);
        for step in sc["steps"].as_array().into_iter().flatten() {
            if let Some(ops) = step["ovn_transaction"].as_array() {
                let sb = ops.iter().all(|o| o["table"] == "Port_Binding");
                db.apply(if sb { SB_DB } else { NB_DB }, ops).unwrap();
                let (i, p) = check_state(&name, &snapshot(&db), &config, &facts);
                (ips, ports) = (ips + i, ports + p);
            }
        }
    }
    assert_eq!(
        drivers.into_iter().collect::<Vec<_>>(),
        [
            "nb_ovn_bgp_driver underlay",
            "nb_ovn_bgp_driver vrf",
            "ovn_bgp_driver underlay",
            "ovn_evpn_driver underlay",
            "ovn_stretched_l2_bgp_driver underlay",
        ]
    );
    assert!(ips > 30 && ports > 20, "checked {ips} IPs, {ports} ports");
}

fn demo() -> (Snapshot, Config, Value) {
    let topo = read(&fixtures().join("demo/topology.json"));
    let snap = Snapshot::from_wire(&topo).unwrap();
    let config = obgp_config::Loader::new()
        .sources(vec![obgp_config::ConfigSource::File(
            fixtures().join("demo/bgp-agent.conf"),
        )])
        .load()
        .unwrap()
        .config;
    (snap, config, topo)
}

/// A map column of a wire row, as (key, value) strings.
fn map<'a>(row: &'a Value, col: &str) -> Vec<(&'a str, &'a str)> {
    row[col][1]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|kv| Some((kv[0].as_str()?, kv[1].as_str()?)))
        .collect()
}

fn key<'a>(row: &'a Value, col: &str, k: &str) -> Option<&'a str> {
    map(row, col)
        .into_iter()
        .find(|(key, _)| *key == k)
        .map(|(_, v)| v)
}

fn ip_of(s: &str) -> IpAddr {
    s.split('/').next().unwrap().parse().unwrap()
}

fn exposed_as(e: &Explanation) -> Vec<(IpAddr, ExposeRule)> {
    e.findings
        .iter()
        .filter_map(|f| match f {
            Finding::Exposed { ip, rule, .. } => Some((*ip, *rule)),
            _ => None,
        })
        .collect()
}

#[test]
fn every_port_of_the_demo_topology_gets_the_answer_its_rows_call_for() {
    let (snap, config, topo) = demo();
    let facts = NodeFacts::default();
    let nb = &topo["OVN_Northbound"];
    let ovs_row = topo["Open_vSwitch"]["Open_vSwitch"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    let hostname = key(ovs_row, "external_ids", "hostname").unwrap();
    let system_id = key(ovs_row, "external_ids", "system-id").unwrap();
    let switch_has_localnet = |network: &str| {
        nb["Logical_Switch"]
            .as_object()
            .unwrap()
            .values()
            .any(|ls| {
                ls["name"] == network
                    && ls["ports"][1].as_array().unwrap().iter().any(|p| {
                        let u = p[1].as_str().unwrap();
                        nb["Logical_Switch_Port"][u]["type"] == "localnet"
                    })
            })
    };
    let mut checked = 0;
    for (uuid, lsp) in nb["Logical_Switch_Port"].as_object().unwrap() {
        let name = lsp["name"].as_str().unwrap();
        let e = explain(&snap, &config, &facts, &Query::Port(name.into())).unwrap();
        let ty = lsp["type"].as_str().unwrap_or("");
        let words: Vec<&str> = lsp["addresses"].as_str().unwrap_or("").split(' ').collect();
        let ips: Vec<IpAddr> = words.iter().skip(1).map(|w| ip_of(w)).collect();
        let requested = key(lsp, "options", "requested-chassis");
        let network = key(lsp, "external_ids", "neutron:network_name").unwrap_or("");
        match ty {
            "" if requested != Some(hostname) => {
                // Bound elsewhere: that chassis, from requested-chassis.
                let want = Reason::BoundElsewhere {
                    chassis: vec![requested.unwrap().to_string()],
                    by: "requested-chassis",
                    here: hostname.to_string(),
                };
                assert_eq!(e.reasons().next(), Some(&want), "{e}");
                assert!(!e.exposed(), "{e}");
            }
            "" if key(lsp, "external_ids", "neutron:port_fip").is_some() => {
                // Its FIP: the NAT whose logical_port is this port.
                let nat = nb["NAT"]
                    .as_object()
                    .unwrap()
                    .values()
                    .find(|n| n["logical_port"] == name)
                    .unwrap();
                let fip = ip_of(nat["external_ip"].as_str().unwrap());
                assert_eq!(exposed_as(&e), [(fip, ExposeRule::DistributedFip)], "{e}");
                let text = e.to_string();
                let logical = nat["logical_ip"].as_str().unwrap();
                assert!(
                    text.contains(&format!("FIP of {logical} on router")),
                    "{text}"
                );
                // Its own tenant IP: covered by the announced subnet.
                assert!(
                    e.findings.iter().any(|f| matches!(f,
                        Finding::Covered { ip, announced: true, .. } if ips.contains(ip))),
                    "{e}"
                );
            }
            "" if switch_has_localnet(network) => {
                let want: Vec<_> = ips.iter().map(|ip| (*ip, ExposeRule::ProviderVm)).collect();
                assert_eq!(exposed_as(&e), want, "{e}");
            }
            "localnet" => {
                let want = Reason::NotAVmPort {
                    kind: "localnet".into(),
                };
                assert_eq!(e.reasons().next(), Some(&want), "{e}");
            }
            "router" => {
                let lrp_name = format!("lrp-{name}");
                let lrp = nb["Logical_Router_Port"]
                    .as_object()
                    .unwrap()
                    .values()
                    .find(|l| l["name"] == lrp_name.as_str())
                    .unwrap();
                let nets: Vec<&str> = match &lrp["networks"] {
                    Value::String(s) => vec![s.as_str()],
                    v => v[1]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|n| n.as_str().unwrap())
                        .collect(),
                };
                if key(lrp, "status", "hosting-chassis") == Some(system_id) {
                    let want: Vec<_> = nets
                        .iter()
                        .map(|n| (ip_of(n), ExposeRule::Gateway))
                        .collect();
                    assert_eq!(exposed_as(&e), want, "{e}");
                } else {
                    // A router interface: its subnet routed (and announced
                    // by the subnet method) through the gateway.
                    let router = key(lsp, "external_ids", "neutron:device_id").unwrap();
                    for n in nets {
                        let net: IpNet = n.parse().unwrap();
                        assert!(
                            e.findings.iter().any(|f| matches!(f,
                                Finding::Covered { subnet, router: r, .. }
                                    if *subnet == net.trunc() && r == router)),
                            "{uuid}: {e}"
                        );
                    }
                }
            }
            other => panic!("demo port {uuid} of type {other:?} not covered by this test"),
        }
        checked += 1;
    }
    assert_eq!(
        checked,
        nb["Logical_Switch_Port"].as_object().unwrap().len()
    );
}

#[test]
fn an_ip_bound_elsewhere_and_an_unknown_ip_of_the_demo() {
    let (snap, config, topo) = demo();
    let facts = NodeFacts::default();
    let lsps = topo["OVN_Northbound"]["Logical_Switch_Port"]
        .as_object()
        .unwrap();
    let elsewhere = lsps
        .values()
        .find(|p| key(p, "options", "requested-chassis") == Some("other-node"))
        .unwrap();
    let ip = ip_of(
        elsewhere["addresses"]
            .as_str()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap(),
    );
    let e = explain(&snap, &config, &facts, &Query::Ip(ip)).unwrap();
    assert!(!e.exposed());
    assert!(
        e.to_string()
            .contains("bound to other-node (requested-chassis), this node is demo-node"),
        "{e}"
    );
    let nobody: IpAddr = "198.51.100.7".parse().unwrap();
    let e = explain(&snap, &config, &facts, &Query::Ip(nobody)).unwrap();
    assert!(e.findings.is_empty() && e.rows.is_empty(), "{e}");
    assert!(e.to_string().contains("no OVN row carries it"), "{e}");
    let err = explain(&snap, &config, &facts, &Query::Port("no-such-port".into())).unwrap_err();
    assert!(err.to_string().contains("no-such-port"), "{err}");
}

#[test]
fn a_physical_network_missing_from_the_bridge_mappings_is_named() {
    let (snap, mut config, topo) = demo();
    let _ = &mut config;
    // The same topology on a node that maps another physical network.
    let mut topo = topo;
    let ovs = topo["Open_vSwitch"]["Open_vSwitch"]
        .as_object_mut()
        .unwrap();
    let row = ovs.values_mut().next().unwrap();
    for kv in row["external_ids"][1].as_array_mut().unwrap() {
        if kv[0] == "ovn-bridge-mappings" {
            kv[1] = "physnet2:br-ex".into();
        }
    }
    drop(snap);
    let snap = Snapshot::from_wire(&topo).unwrap();
    let vm = topo["OVN_Northbound"]["Logical_Switch_Port"]
        .as_object()
        .unwrap()
        .values()
        .find(|p| {
            key(p, "options", "requested-chassis") == Some("demo-node")
                && key(p, "external_ids", "neutron:port_fip").is_none()
        })
        .unwrap();
    let name = vm["name"].as_str().unwrap();
    let e = explain(
        &snap,
        &config,
        &NodeFacts::default(),
        &Query::Port(name.into()),
    )
    .unwrap();
    match e.reasons().next() {
        Some(Reason::PhysnetNotMapped {
            physnet, mappings, ..
        }) => {
            assert_eq!(physnet, "physnet1");
            assert_eq!(mappings, &["physnet2:br-ex".to_string()]);
        }
        other => panic!("{other:?}: {e}"),
    }
    assert!(
        e.to_string()
            .contains("network physnet1 (localnet provnet-"),
        "{e}"
    );
}

#[test]
fn the_fixed_ip_of_a_tenant_vm_whose_gateway_is_elsewhere_is_refused_for_that_gateway() {
    // nb-fip: a VM bound here on tenant network 10.0.0.0/24 with a
    // distributed FIP; its router's gateway is hosted on another chassis.
    let sc = read(&fixtures().join("conformance/scenarios/nb-fip.json"));
    let snap = Snapshot::from_wire(&sc["ovn"]).unwrap();
    let config = scenario_config(&sc).unwrap();
    let facts = facts(&sc, &config);
    let lsps = sc["ovn"]["OVN_Northbound"]["Logical_Switch_Port"]
        .as_object()
        .unwrap();
    let vm = lsps
        .values()
        .find(|p| key(p, "external_ids", "neutron:port_fip").is_some())
        .unwrap();
    let fixed = ip_of(vm["addresses"].as_str().unwrap().split(' ').nth(1).unwrap());
    let network = format!(
        "neutron-{}",
        key(vm, "external_ids", "neutron:network_name")
            .unwrap()
            .trim_start_matches("neutron-")
    );

    let by_ip = explain(&snap, &config, &facts, &Query::Ip(fixed)).unwrap();
    assert!(!by_ip.exposed(), "{by_ip}");
    let reasons: Vec<&Reason> = by_ip.reasons().collect();
    assert_eq!(
        reasons,
        vec![&Reason::NoLocalGateway {
            network: network.clone()
        }],
        "{by_ip}"
    );

    // Asked by port: the FIP is exposed on its behalf, the fixed IP is not.
    let name = vm["name"].as_str().unwrap();
    let by_port = explain(&snap, &config, &facts, &Query::Port(name.into())).unwrap();
    let fip = ip_of(key(vm, "external_ids", "neutron:port_fip").unwrap());
    assert_eq!(
        exposed_as(&by_port),
        vec![(fip, ExposeRule::DistributedFip)]
    );
    let refused: Vec<(Option<IpAddr>, &Reason)> = by_port
        .findings
        .iter()
        .filter_map(|f| match f {
            Finding::NotExposed { ip, reason, .. } => Some((*ip, reason)),
            _ => None,
        })
        .collect();
    assert_eq!(
        refused,
        vec![(Some(fixed), &Reason::NoLocalGateway { network })],
        "{by_port}"
    );
}

/// Every prefix the node announces: the subnet method's tenant subnets,
/// the stretched-L2 VRF routes, the EVPN VNIs' routes that are not host
/// routes; with the driver that announces it.
fn announced_prefixes(d: &Desired) -> Vec<IpNet> {
    let mut out: Vec<IpNet> = d
        .tenant_subnets
        .iter()
        .filter(|s| s.vrf_route)
        .map(|s| s.net)
        .collect();
    out.extend(d.vrf_routes.values().map(|r| r.net));
    for v in d.evpn.iter().flat_map(|e| e.vnis.values()) {
        for p in &v.ports {
            out.extend(
                p.routes
                    .iter()
                    .map(|r| r.dst)
                    .filter(|dst| dst.prefix_len() < dst.max_prefix_len()),
            );
        }
    }
    out
}

#[test]
fn every_prefix_a_golden_scenario_announces_is_explained_as_announced() {
    let mut by_driver: std::collections::BTreeMap<&str, usize> = Default::default();
    for path in scenario_paths() {
        let sc = read(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(config) = scenario_config(&sc) else {
            continue;
        };
        let facts = facts(&sc, &config);
        let snap = snapshot(&FixtureDb::from_wire(&sc["ovn"]).unwrap());
        let desired = desired_state(&snap, &config, &facts).unwrap();
        for net in announced_prefixes(&desired) {
            let e = explain(&snap, &config, &facts, &Query::parse(&net.to_string())).unwrap();
            assert!(e.exposed(), "{name}: {net} is announced:\n{e}");
            assert!(
                e.findings
                    .iter()
                    .any(|f| matches!(f, Finding::Prefix { prefix, .. } if *prefix == net)),
                "{name}: {net}:\n{e}"
            );
            assert!(!e.to_string().contains("no port named"), "{name}: {e}");
            *by_driver.entry(config.default.driver.as_str()).or_default() += 1;
        }
    }
    // The stretched-L2 routes and the EVPN routes (SB driver; NB vrf mode)
    // are among them.
    for driver in [
        "ovn_stretched_l2_bgp_driver",
        "ovn_evpn_driver",
        "nb_ovn_bgp_driver",
    ] {
        assert!(
            by_driver.get(driver).is_some_and(|n| *n > 0),
            "{by_driver:?}"
        );
    }
}
