use super::*;

/// FRR 8.4.4's answer on a node with one eBGP peer (captured from the
/// testbed's FrrPair), plus a VRF with a peer that is down and an
/// unnumbered one.
const SUMMARY: &str = r#"{ "default":{ "ipv4Unicast":{ "routerId":"10.255.0.1", "as":64999, "peers":{ "10.255.0.2":{ "hostname":"vm", "remoteAs":65000, "localAs":64999, "peerUptime":"00:00:03", "peerUptimeMsec":3000, "pfxRcd":0, "pfxSnt":2, "state":"Established", "peerState":"OK" } }, "failedPeers":0 }, "ipv6Unicast":{ "peers":{ "10.255.0.2":{ "remoteAs":65000, "peerUptimeMsec":3000, "pfxRcd":1, "pfxSnt":1, "state":"Established" } } } },
  "vrf-1001":{ "l2VpnEvpn":{ "peers":{ "192.0.2.2":{ "remoteAs":64999, "peerUptimeMsec":120000, "pfxRcd":0, "pfxSnt":0, "state":"Active" }, "eth1":{ "remoteAs":64999, "state":"Connect" }, "x y\nz":{ "state":"Established" } } } } }"#;

#[test]
fn every_vrf_family_and_peer_is_a_session() {
    let got = parse_sessions(SUMMARY.as_bytes()).unwrap();
    let keys: Vec<(&str, &str, &str, &str)> = got
        .iter()
        .map(|s| {
            (
                s.vrf.as_str(),
                s.family.as_str(),
                s.peer.as_str(),
                s.state.as_str(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            ("default", "ipv4Unicast", "10.255.0.2", "Established"),
            ("default", "ipv6Unicast", "10.255.0.2", "Established"),
            ("vrf-1001", "l2VpnEvpn", "192.0.2.2", "Active"),
            ("vrf-1001", "l2VpnEvpn", "eth1", "Connect"),
        ],
        "the peer with an unusable name is left out"
    );
    let v4 = &got[0];
    assert_eq!(
        (
            v4.remote_as,
            v4.uptime_s,
            v4.prefixes_received,
            v4.prefixes_sent
        ),
        (Some(65000), Some(3.0), Some(0), Some(2))
    );
    assert!(v4.established() && !got[2].established());
    assert_eq!(got[3].prefixes_sent, None);
}

#[test]
fn an_answer_that_is_not_json_is_an_error_and_an_empty_one_has_no_sessions() {
    assert!(parse_sessions(b"% Unknown command").is_err());
    assert!(parse_sessions(b"{}").unwrap().is_empty());
    assert!(parse_sessions(b"[]").unwrap().is_empty());
}

#[test]
fn a_prefix_in_the_table_with_the_peers_it_was_sent_to() {
    // FRR 8.4.4 (testbed FrrPair, an address on bgp-nic redistributed).
    let answer = r#"{ "prefix":"172.24.4.10/32", "version":2, "advertisedTo":{ "10.255.0.2":{ "hostname":"vm" } }, "paths":[ { "aspath":{ "string":"Local", "segments":[ ], "length":0 }, "origin":"incomplete", "valid":true, "sourced":true, "bestpath":{ "overall":true } } ] }"#;
    let got = parse_prefix("default", answer.as_bytes()).unwrap().unwrap();
    assert_eq!(got.vrf, "default");
    assert_eq!(got.paths, 1);
    assert_eq!(got.advertised_to.iter().collect::<Vec<_>>(), ["10.255.0.2"]);
    let held_back = r#"{ "prefix":"172.24.4.10/32", "paths":[ { "valid":true } ] }"#;
    assert!(parse_prefix("default", held_back.as_bytes())
        .unwrap()
        .unwrap()
        .advertised_to
        .is_empty());
    assert_eq!(
        parse_prefix("default", b"{}").unwrap(),
        None,
        "FRR holds no path"
    );
    assert!(parse_prefix("default", b"% Unknown command").is_err());
}

#[test]
fn a_table_and_an_advertised_list_give_their_prefixes() {
    let table = r#"{ "vrfId": 0, "vrfName": "default", "routes": { "10.255.0.0/30": [ { "valid": true } ], "172.24.4.10/32": [ { "valid": true } ], "bogus": [] } }"#;
    let got = prefixes_under(table.as_bytes(), "routes").unwrap();
    assert_eq!(
        got,
        [
            "10.255.0.0/30".parse::<IpNet>().unwrap(),
            "172.24.4.10/32".parse().unwrap()
        ]
    );
    // FRR 8.4.4's advertised-routes answer (testbed FrrPair).
    let adv = r#"{ "bgpTableVersion":2, "advertisedRoutes":{ "172.24.4.10/32":{ "network":"172.24.4.10/32" } }, "totalPrefixCounter":1 }"#;
    assert_eq!(
        prefixes_under(adv.as_bytes(), "advertisedRoutes").unwrap(),
        ["172.24.4.10/32".parse::<IpNet>().unwrap()]
    );
    assert!(prefixes_under(b"{}", "routes").unwrap().is_empty());
    assert!(prefixes_under(b"not json", "routes").is_err());
    assert!(read_advertised(&KernelConfig::default(), "ipv4", "10.0.0.1; rm").is_err());
    assert!(read_bgp_table(&KernelConfig::default(), "ipv4 unicast; x").is_err());
}
