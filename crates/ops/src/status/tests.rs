//! The status model on plain values: the JSON the daemon serves reads
//! back into the same model (what the CLI does with it), and the text
//! rendering says what an operator looks for.

use std::collections::BTreeMap;

use super::*;

fn sample() -> Status {
    Status {
        origin: ComputedBy::Daemon,
        driver: "nb_ovn_bgp_driver".into(),
        exposing_method: "underlay".into(),
        chassis: "demo-node".into(),
        exposed: vec![Exposure {
            prefix: "172.24.4.10/32".parse().unwrap(),
            kind: Class::Vm,
            rows: vec![RowInfo {
                table: "Logical_Switch_Port".into(),
                uuid: "d0000001-0000-4000-8000-000000000001".into(),
                found: true,
                name: Some("77777777-7777-4777-8777-777777777701".into()),
                neutron: BTreeMap::from([("host_id".into(), "demo-node".into())]),
            }],
            wiring: Wiring {
                bridge: Some("br-ex".into()),
                dev: Some("br-ex".into()),
                table: Some("br-ex".into()),
                table_id: Some(1),
                vrf: Some("bgp-vrf".into()),
                ..Wiring::default()
            },
            held: false,
            missing: vec!["address 172.24.4.10/32 on bgp-nic".into()],
            frr: None,
        }],
        vnis: Vec::new(),
        notes: vec!["NAT 1234: no existing logical_port".into()],
        health: Health {
            databases: vec![DbHealth {
                database: "OVN_Northbound".into(),
                connected_to: None,
                syncs: 2,
                last_update_unix: Some(1.0e9),
            }],
            last_reconcile: Some(LastReconcile {
                finished_unix: 1.0e9,
                ago_s: 2.5,
                reasons: "periodic reconcile".into(),
                converged: false,
                why: Some("1 op(s) failed".into()),
            }),
            pending_ops: Some(1),
            ready: Some(Probe {
                ok: false,
                reason: "not ready: the last reconcile did not converge: 1 op(s) failed".into(),
            }),
            ..Health::default()
        },
        fabric: None,
    }
}

#[test]
fn the_served_json_reads_back_into_the_same_status() {
    let s = sample();
    let json = serde_json::to_string_pretty(&s).unwrap();
    let back: Status = serde_json::from_str(&json).unwrap();
    assert_eq!(back, s);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["origin"], "daemon");
    assert_eq!(v["exposed"][0]["kind"], "vm");
    assert_eq!(v["exposed"][0]["prefix"], "172.24.4.10/32");
}

#[test]
fn the_text_names_the_unheld_ip_its_row_the_missing_object_and_the_health() {
    let text = render::text(&sample());
    for line in [
        "ovn-bgp-agent status (from the running daemon): driver nb_ovn_bgp_driver, exposing_method underlay, chassis demo-node",
        "  database OVN_Northbound  DISCONNECTED, 2 sync(s), last update at 1000000000 (Unix time)",
        "  last reconcile   2.5 s ago (periodic reconcile): did not converge: 1 op(s) failed",
        "  pending plan     1 op(s)",
        "  /readyz          503 not ready: the last reconcile did not converge: 1 op(s) failed",
        "exposed: 1 IP(s) and prefix(es), 0 held by the node",
        "  172.24.4.10/32           vm        NOT HELD bridge br-ex, dev br-ex, table br-ex (1), vrf bgp-vrf",
        "      row Logical_Switch_Port d0000001-0000-4000-8000-000000000001 77777777-7777-4777-8777-777777777701 host_id=demo-node",
        "      missing address 172.24.4.10/32 on bgp-nic",
        "  NAT 1234: no existing logical_port",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} not in:\n{text}");
    }
}

#[test]
fn the_last_frr_text_shows_frrs_message_and_when_frr_last_took_one() {
    let mut s = sample();
    s.health.frr_last_text = Some(FrrLastText {
        finished_unix: 1.0e9,
        ago_s: 1.5,
        removal: false,
        outcome: "rejected".into(),
        error: Some("FRR's parser rejected the text, not applied: line 3: % Unknown command[39]: advertise-all-vnix".into()),
        last_applied_ago_s: Some(40.0),
    });
    let text = render::text(&s);
    let line = "  FRR last text    rejected 1.5 s ago: FRR's parser rejected the text, not applied: line 3: % Unknown command[39]: advertise-all-vnix (FRR last took a text 40.0 s ago)";
    assert!(text.lines().any(|l| l == line), "{line:?} not in:\n{text}");
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["health"]["frr_last_text"]["outcome"], "rejected");
    assert_eq!(serde_json::from_value::<Status>(json).unwrap(), s);

    s.health.frr_last_text = Some(FrrLastText {
        outcome: "applied".into(),
        error: None,
        last_applied_ago_s: Some(1.5),
        ..s.health.frr_last_text.clone().unwrap()
    });
    let text = render::text(&s);
    assert!(
        text.lines()
            .any(|l| l == "  FRR last text    applied 1.5 s ago"),
        "{text}"
    );
}

#[test]
fn the_sessions_show_state_uptime_and_counts_or_say_they_are_unknown() {
    use obgp_netmodel::frr::BgpSession;
    let mut s = sample();
    let session = |peer: &str, state: &str, up: f64| BgpSession {
        vrf: "default".into(),
        family: "ipv4Unicast".into(),
        peer: peer.into(),
        remote_as: Some(65000),
        state: state.into(),
        uptime_s: Some(up),
        prefixes_received: Some(3),
        prefixes_sent: Some(7),
    };
    s.health.bgp_sessions = Some(BgpSessions {
        read_ago_s: 2.0,
        sessions: Some(vec![
            session("10.255.0.2", "Established", 11_520.0),
            session("10.255.1.2", "Active", 65.0),
        ]),
        error: None,
    });
    let text = render::text(&s);
    for line in [
        "  BGP sessions     2 (read 2.0 s ago)",
        "    10.255.0.2               default    ipv4Unicast  Established 3h12m, sent 7, received 3",
        "    10.255.1.2               default    ipv4Unicast  Active 1m05s",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} not in:\n{text}");
    }
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(
        json["health"]["bgp_sessions"]["sessions"][0]["state"],
        "Established"
    );
    assert_eq!(serde_json::from_value::<Status>(json).unwrap(), s);

    s.health.bgp_sessions = Some(BgpSessions {
        read_ago_s: 1.0,
        sessions: None,
        error: Some("vtysh -c show bgp vrf all summary json: no answer within 5s: killed".into()),
    });
    let text = render::text(&s);
    let line = "  BGP sessions     unknown: the read 1.0 s ago failed: vtysh -c show bgp vrf all summary json: no answer within 5s: killed";
    assert!(text.lines().any(|l| l == line), "{text}");
}
