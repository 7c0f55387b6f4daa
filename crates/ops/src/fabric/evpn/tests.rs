use std::collections::BTreeSet;

use obgp_netmodel::frr::{BgpPrefix, BgpSession, EvpnRoute, EvpnRouteKey};

use super::*;
use crate::status::{ComputedBy, Exposure, Health, Status, Wiring};

const VM4: &str = "172.24.4.10/32";
const MAC: &str = "fa:16:3e:11:11:11";

fn session(peer: &str, state: &str) -> BgpSession {
    BgpSession {
        vrf: "default".into(),
        family: EVPN_FAMILY.into(),
        peer: peer.into(),
        remote_as: Some(64999),
        state: state.into(),
        uptime_s: Some(75.0),
        prefixes_received: Some(1),
        prefixes_sent: Some(3),
    }
}

fn type5() -> Announced {
    Announced::Type5 {
        vni: 1001,
        vrf: DevName::new("vrf-1001").unwrap(),
    }
}

fn type2() -> Announced {
    Announced::Type2 {
        vni: 1001,
        mac: MAC.parse().unwrap(),
    }
}

fn route(announced: &Announced, local: bool, to: &[&str]) -> EvpnRoute {
    EvpnRoute {
        rd: "64999:1001".into(),
        key: announced.evpn_key(VM4.parse().unwrap()).unwrap(),
        local,
        vni: Some(1001),
        advertised_to: to.iter().map(|s| s.to_string()).collect(),
    }
}

fn side(
    announced: &Announced,
    vrf_table: Option<Result<Option<BgpPrefix>, String>>,
    evpn: Result<Vec<EvpnRoute>, String>,
    sessions: Result<Vec<BgpSession>, String>,
) -> String {
    evpn_fabric_side(&EvpnReads {
        prefix: VM4.parse().unwrap(),
        announced,
        vrf_table: vrf_table.as_ref(),
        evpn: &evpn,
        sessions: &sessions,
    })
    .to_string()
}

#[test]
fn a_type5_route_sent_to_one_evpn_peer_and_not_to_another() {
    let sessions = Ok(vec![
        session("10.1.1.2", "Established"),
        session("10.1.2.2", "Active"),
        // a unicast session of the same peer is not an EVPN one
        BgpSession {
            family: "ipv4Unicast".into(),
            ..session("10.1.3.2", "Established")
        },
    ]);
    let t5 = type5();
    assert_eq!(
        side(
            &t5,
            None,
            Ok(vec![route(&t5, true, &["10.1.1.2"])]),
            sessions
        ),
        "FRR: 172.24.4.10/32: its type-5 route 172.24.4.10/32 is in the l2vpn evpn table \
         (rd 64999:1001, VNI 1001); announced to 10.1.1.2 (Established 1m15s); \
         not to 10.1.2.2 (session Active)"
    );
}

#[test]
fn a_type2_route_held_back_from_an_established_peer_says_so() {
    let t2 = type2();
    let text = side(
        &t2,
        None,
        Ok(vec![route(&t2, true, &[])]),
        Ok(vec![session("10.1.1.2", "Established")]),
    );
    assert!(
        text.starts_with("FRR: 172.24.4.10/32: its type-2 route fa:16:3e:11:11:11 172.24.4.10 is in the l2vpn evpn table (rd 64999:1001, VNI 1001); announced to no peer; not to 10.1.1.2 (Established 1m15s) (FRR held it back"),
        "{text}"
    );
}

#[test]
fn another_vteps_route_for_the_same_prefix_is_not_this_nodes() {
    let t5 = type5();
    let in_vrf = Some(Ok(Some(BgpPrefix {
        vrf: "vrf-1001".into(),
        paths: 1,
        advertised_to: BTreeSet::new(),
    })));
    let text = side(
        &t5,
        in_vrf,
        Ok(vec![route(&t5, false, &[])]),
        Ok(Vec::new()),
    );
    assert!(
        text.contains("is in vrf-1001's table but this node's type-5 route 172.24.4.10/32 is not in the l2vpn evpn table: FRR does not export vrf-1001 to EVPN"),
        "{text}"
    );
    let text = side(&t5, Some(Ok(None)), Ok(Vec::new()), Ok(Vec::new()));
    assert!(
        text.contains("is in none of FRR's tables (looked in vrf-1001's table and l2vpn evpn)"),
        "{text}"
    );
    let text = side(&type2(), None, Ok(Vec::new()), Ok(Vec::new()));
    assert!(
        text.contains(
            "looked in l2vpn evpn (VNI 1001)): zebra announces it from the static FDB entry"
        ),
        "{text}"
    );
}

#[test]
fn an_unread_evpn_table_or_vrf_table_is_unknown_never_absent() {
    let wedged = "vtysh: no answer within 3s".to_string();
    for text in [
        side(&type2(), None, Err(wedged.clone()), Ok(Vec::new())),
        side(
            &type5(),
            Some(Err(wedged.clone())),
            Ok(Vec::new()),
            Ok(Vec::new()),
        ),
        side(&type5(), None, Err(wedged.clone()), Err(wedged.clone())),
    ] {
        assert_eq!(
            text,
            format!("FRR: 172.24.4.10/32: unknown, FRR could not be read: {wedged}")
        );
    }
}

fn exposure(prefix: &str, vni: Option<u32>, mac: Option<&str>) -> Exposure {
    Exposure {
        prefix: prefix.parse().unwrap(),
        kind: obgp_netmodel::Class::Vm,
        rows: Vec::new(),
        wiring: Wiring {
            vrf: vni.filter(|_| mac.is_none()).map(|n| format!("vrf-{n}")),
            vni,
            mac: mac.map(|m| m.parse().unwrap()),
            ..Wiring::default()
        },
        held: true,
        missing: Vec::new(),
        frr: None,
    }
}

#[test]
fn exposures_are_looked_up_by_how_they_are_announced() {
    assert_eq!(
        announced_of_exposure(&exposure(VM4, Some(1001), None)),
        type5()
    );
    assert_eq!(
        announced_of_exposure(&exposure(VM4, Some(1001), Some(MAC))),
        type2()
    );
    assert_eq!(
        announced_of_exposure(&exposure(VM4, None, None)),
        Announced::Leaked
    );
}

#[test]
fn status_evpn_exposures_get_their_route_and_peers_and_unread_ones_stay_unknown() {
    let mut status = Status {
        origin: ComputedBy::Direct,
        driver: "nb_ovn_bgp_driver".into(),
        exposing_method: "dynamic".into(),
        chassis: "node".into(),
        exposed: vec![
            exposure(VM4, Some(1001), Some(MAC)),
            exposure("172.24.5.10/32", Some(1002), None),
            exposure("172.24.6.10/32", None, None),
        ],
        vnis: Vec::new(),
        notes: Vec::new(),
        health: Health::default(),
        fabric: None,
    };
    let t2 = type2().evpn_key(VM4.parse().unwrap()).unwrap();
    let t5 = EvpnRouteKey::Prefix("172.24.5.10/32".parse().unwrap());
    let mut reads = StatusReads {
        tables: [(
            "ipv4Unicast",
            Ok(BTreeSet::from(["172.24.6.10/32".parse().unwrap()])),
        )]
        .into(),
        advertised: Default::default(),
        evpn_routes: Some(Ok(BTreeSet::from([t2]))),
        evpn_advertised: [
            ("10.1.1.2".to_string(), Ok(BTreeSet::from([t2, t5]))),
            ("10.1.2.2".to_string(), Err("refused".to_string())),
        ]
        .into(),
        took_s: 0.1,
    };
    crate::fabric::annotate_status(&mut status, &reads);
    let frr = |s: &Status, i: usize| s.exposed[i].frr.clone();
    assert_eq!(
        frr(&status, 0),
        Some(ExposureFrr {
            in_table: true,
            announced_to: vec!["10.1.1.2".into()],
            evpn_route: Some("type-2 route fa:16:3e:11:11:11 172.24.4.10".into()),
        })
    );
    assert_eq!(
        frr(&status, 1).map(|f| (f.in_table, f.announced_to)),
        Some((false, vec!["10.1.1.2".to_string()])),
        "not this node's route, yet in the peer's advertised list"
    );
    assert_eq!(
        frr(&status, 2).map(|f| (f.in_table, f.evpn_route)),
        Some((true, None)),
        "dynamic's underlay exposure is looked up in the unicast table"
    );
    let f = status.fabric.clone().unwrap();
    assert_eq!(f.peers, ["10.1.1.2"]);
    assert_eq!(f.errors, ["10.1.2.2 l2vpn evpn: refused"]);
    let text = crate::status::render::text(&status);
    assert!(
        text.lines().any(|l| l
            == "      FRR has its type-2 route fa:16:3e:11:11:11 172.24.4.10 in l2vpn evpn, announced to 10.1.1.2"),
        "{text}"
    );

    reads.evpn_routes = Some(Err("vtysh: no answer within 3s".into()));
    crate::fabric::annotate_status(&mut status, &reads);
    assert_eq!(
        (frr(&status, 0), frr(&status, 1)),
        (None, None),
        "unknown, not absent"
    );
    assert!(status.fabric.unwrap().errors[0].starts_with("l2vpn evpn table: vtysh"));
}

/// `fixtures/dynamic/basic.json`: one provider network per method on this
/// node (VNI 1001 `vrf`, VNI 2002 `l2vni`, `br-u` underlay), each with a VM
/// bound here.
fn dynamic_scenario() -> (obgp_config::Config, obgp_ovn::Snapshot) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/dynamic/basic.json"
    );
    let sc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let config = obgp_config::Loader::new()
        .json_overrides(sc["config"].as_object().unwrap())
        .unwrap()
        .load()
        .unwrap()
        .config;
    (config, obgp_ovn::Snapshot::from_wire(&sc["ovn"]).unwrap())
}

#[test]
fn dynamic_looks_each_exposure_up_by_its_networks_method_in_explain_and_status_alike() {
    let (config, snap) = dynamic_scenario();
    let desired =
        obgp_desired::desired_state(&snap, &config, &obgp_desired::NodeFacts::default()).unwrap();
    let l2_mac =
        desired.evpn.as_ref().unwrap().l2[&2002].hosts[&"10.100.0.10".parse().unwrap()].mac;
    let want = [
        ("172.24.4.10/32", type5()),
        ("2001:db8::10/128", type5()),
        (
            "10.100.0.10/32",
            Announced::Type2 {
                vni: 2002,
                mac: l2_mac,
            },
        ),
        ("192.168.50.10/32", Announced::Leaked),
    ];
    for (prefix, announced) in &want {
        assert_eq!(
            &announced_in(&desired, prefix.parse().unwrap()),
            announced,
            "explain's lookup of {prefix}"
        );
    }
    // `status` reaches the same answer from its exposures' wiring
    let node = desired.to_node();
    let actual = obgp_plan::Actual::default();
    let (exposed, _) = crate::status::exposures(&crate::status::StatusInputs {
        config: &config,
        snapshot: &snap,
        desired: &desired,
        node: &node,
        actual: &actual,
    });
    for (prefix, announced) in &want {
        let e = exposed
            .iter()
            .find(|e| e.prefix.to_string() == *prefix)
            .unwrap_or_else(|| panic!("status lists no {prefix}: {exposed:?}"));
        assert_eq!(
            &announced_of_exposure(e),
            announced,
            "status's lookup of {prefix}"
        );
    }
}
