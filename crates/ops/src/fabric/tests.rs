use std::collections::BTreeSet;

use super::*;

fn session(peer: &str, state: &str, family: &str) -> BgpSession {
    BgpSession {
        vrf: "default".into(),
        family: family.into(),
        peer: peer.into(),
        remote_as: Some(65000),
        state: state.into(),
        uptime_s: Some(11_520.0),
        prefixes_received: Some(0),
        prefixes_sent: Some(7),
    }
}

fn prefix(vrf: &str, to: &[&str]) -> BgpPrefix {
    BgpPrefix {
        vrf: vrf.into(),
        paths: 1,
        advertised_to: to.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>(),
    }
}

fn side(
    default: Result<Option<BgpPrefix>, String>,
    vrf: Option<Result<Option<BgpPrefix>, String>>,
    sessions: Result<Vec<BgpSession>, String>,
) -> String {
    let vrf = vrf.map(|v| ("bgp-vrf", v));
    fabric_side(&FabricReads {
        prefix: "172.24.4.10/32".parse().unwrap(),
        default: &default,
        vrf: vrf.as_ref().map(|(n, v)| (*n, v)),
        sessions: &sessions,
    })
    .to_string()
}

#[test]
fn announced_and_held_back_peers_are_told_apart_by_their_sessions() {
    let sessions = Ok(vec![
        session("10.255.0.2", "Established", "ipv4Unicast"),
        session("10.255.1.2", "Active", "ipv4Unicast"),
        session("10.255.2.2", "Established", "ipv4Unicast"),
        session("10.255.3.2", "Established", "ipv6Unicast"),
    ]);
    assert_eq!(
        side(Ok(Some(prefix("default", &["10.255.0.2"]))), None, sessions),
        "FRR: 172.24.4.10/32 is in the default table; announced to 10.255.0.2 (Established 3h12m); \
         not to 10.255.1.2 (session Active), 10.255.2.2 (Established 3h12m) \
         (FRR held it back from an established peer: an outbound policy, or not its best path to send)"
    );
}

#[test]
fn missing_from_frr_missing_leak_and_unknown_say_so() {
    let none = Ok(Vec::new());
    assert_eq!(
        side(Ok(None), Some(Ok(None)), none.clone()),
        "FRR: 172.24.4.10/32 is in none of FRR's tables (looked in default and bgp-vrf): FRR announces nothing for it; `status` shows FRR's last text"
    );
    assert!(side(Ok(None), Some(Ok(Some(prefix("bgp-vrf", &[])))), none.clone())
        .contains("is in bgp-vrf's table but not in the default instance's: the VRF leak (`import vrf bgp-vrf`) is missing"));
    assert_eq!(
        side(Err("vtysh: no answer within 5s: killed".into()), None, none),
        "FRR: 172.24.4.10/32: unknown, FRR could not be read: vtysh: no answer within 5s: killed"
    );
    let text = side(
        Ok(Some(prefix("default", &["10.255.0.2"]))),
        None,
        Err("vtysh failed".into()),
    );
    assert!(
        text.contains("announced to 10.255.0.2 (session unknown)")
            && text.contains("(the sessions could not be read: vtysh failed)"),
        "{text}"
    );
}

#[test]
fn the_json_names_the_state_and_the_peers() {
    let sessions = Ok(vec![session("10.255.0.2", "Established", "ipv4Unicast")]);
    let default = Ok(Some(prefix("default", &[])));
    let s = fabric_side(&FabricReads {
        prefix: "172.24.4.10/32".parse().unwrap(),
        default: &default,
        vrf: None,
        sessions: &sessions,
    });
    let j = serde_json::to_value(&s).unwrap();
    assert_eq!(j["frr"], "in_table");
    assert_eq!(j["not_advertised"][0]["peer"], "10.255.0.2");
    assert_eq!(j["advertised"], serde_json::json!([]));
}

#[test]
fn status_exposures_get_their_table_and_peers_and_unread_ones_stay_unknown() {
    use crate::status::{ComputedBy, Exposure, Health, Status, Wiring};
    use obgp_netmodel::Class;
    let exposure = |p: &str| Exposure {
        prefix: p.parse().unwrap(),
        kind: Class::Vm,
        rows: Vec::new(),
        wiring: Wiring::default(),
        held: true,
        missing: Vec::new(),
        frr: None,
    };
    let mut status = Status {
        origin: ComputedBy::Direct,
        driver: "nb_ovn_bgp_driver".into(),
        exposing_method: "underlay".into(),
        chassis: "demo-node".into(),
        exposed: vec![
            exposure("172.24.4.10/32"),
            exposure("172.24.4.11/32"),
            exposure("2001:db8::10/128"),
        ],
        vnis: Vec::new(),
        notes: Vec::new(),
        health: Health::default(),
        fabric: None,
    };
    let set = |v: &[&str]| {
        v.iter()
            .map(|p| p.parse().unwrap())
            .collect::<BTreeSet<IpNet>>()
    };
    let reads = StatusReads {
        tables: [
            (
                "ipv4Unicast",
                Ok(set(&["172.24.4.10/32", "172.24.4.11/32"])),
            ),
            ("ipv6Unicast", Err("vtysh: no answer within 5s".to_string())),
        ]
        .into(),
        advertised: [
            (
                ("10.255.0.2".to_string(), "ipv4Unicast"),
                Ok(set(&["172.24.4.10/32"])),
            ),
            (
                ("10.255.1.2".to_string(), "ipv4Unicast"),
                Err("refused".to_string()),
            ),
        ]
        .into(),
        evpn_routes: None,
        evpn_advertised: Default::default(),
        took_s: 0.25,
    };
    annotate_status(&mut status, &reads);
    let frr = |i: usize| status.exposed[i].frr.clone();
    assert_eq!(
        frr(0),
        Some(ExposureFrr {
            in_table: true,
            announced_to: vec!["10.255.0.2".into()],
            evpn_route: None,
        })
    );
    assert_eq!(
        frr(1),
        Some(ExposureFrr {
            in_table: true,
            announced_to: Vec::new(),
            evpn_route: None,
        }),
        "held back from the one peer read"
    );
    assert_eq!(frr(2), None, "the IPv6 table was not read: unknown");
    let f = status.fabric.clone().unwrap();
    assert_eq!(f.peers, ["10.255.0.2"]);
    assert_eq!(f.errors.len(), 2, "{f:?}");
    let text = crate::status::render::text(&status);
    for line in [
        "FRR's tables read in 0.25 s; peers: 10.255.0.2; unread: ipv6Unicast table: vtysh: no answer within 5s; unread: 10.255.1.2 ipv4Unicast: refused",
        "      FRR in its table, announced to 10.255.0.2",
        "      FRR in its table, announced to no peer",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} not in:\n{text}");
    }
}
