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
