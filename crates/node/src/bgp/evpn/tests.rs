use super::*;

/// FRR 8.4.4's `show bgp l2vpn evpn route detail type macip json` on the
/// node side of the testbed's L2 EVPN fabric (`EvpnFabricOptions::l2`,
/// netns tier: a static FDB entry and a permanent neighbour for the VM,
/// captured by hand with `FrrRouter::vtysh` after the peer held the
/// route; `lastUpdate` and `aspath` trimmed). A second RD holds the
/// peer's route as the node receives it (the path shape of the peer's
/// `show bgp l2vpn evpn route rd ... mac ... ip ... json`, same capture).
const MACIP_DETAIL: &str = r#"{"64999:1001":{"rd":"64999:1001","[2]:[0]:[48]:[fa:16:3e:11:11:11]":{"prefix":"[2]:[0]:[48]:[fa:16:3e:11:11:11]","prefixLen":352,"rd":"64999:1001","routeType":2,"ethTag":0,"macLen":48,"mac":"fa:16:3e:11:11:11","advertisedTo":{"10.1.1.2":{"hostname":"vm"}},"paths":[[{"VNI":"1001","vni":"1001","origin":"IGP","weight":32768,"valid":true,"version":2,"sourced":true,"local":true,"bestpath":{"overall":true,"selectionReason":"First path received"},"extendedCommunity":{"string":"ET:8 RT:64512:1001"},"nexthops":[{"ip":"10.1.1.1","hostname":"vm","afi":"ipv4","metric":0,"accessible":true,"used":true}],"peer":{"peerId":"0.0.0.0","routerId":"10.1.1.1"}}]]},"[2]:[0]:[48]:[fa:16:3e:11:11:11]:[32]:[172.24.4.10]":{"prefix":"[2]:[0]:[48]:[fa:16:3e:11:11:11]:[32]:[172.24.4.10]","prefixLen":352,"rd":"64999:1001","routeType":2,"ethTag":0,"macLen":48,"mac":"fa:16:3e:11:11:11","ipLen":32,"ip":"172.24.4.10","advertisedTo":{"10.1.1.2":{"hostname":"vm"}},"paths":[[{"VNI":"1001","vni":"1001","origin":"IGP","weight":32768,"valid":true,"version":3,"sourced":true,"local":true,"bestpath":{"overall":true,"selectionReason":"First path received"},"extendedCommunity":{"string":"ET:8 RT:64512:1001"},"nexthops":[{"ip":"10.1.1.1","hostname":"vm","afi":"ipv4","metric":0,"accessible":true,"used":true}],"peer":{"peerId":"0.0.0.0","routerId":"10.1.1.1"}}]]}},
  "10.1.1.2:2":{"rd":"10.1.1.2:2","[2]:[0]:[48]:[fa:16:3e:22:22:22]:[32]:[172.24.4.20]":{"prefix":"[2]:[0]:[48]:[fa:16:3e:22:22:22]:[32]:[172.24.4.20]","prefixLen":352,"rd":"10.1.1.2:2","routeType":2,"ethTag":0,"macLen":48,"mac":"fa:16:3e:22:22:22","ipLen":32,"ip":"172.24.4.20","paths":[[{"VNI":"1001","vni":"1001","origin":"IGP","locPrf":100,"valid":true,"version":2,"bestpath":{"overall":true,"selectionReason":"First path received"},"extendedCommunity":{"string":"RT:64512:1001 ET:8"},"nexthops":[{"ip":"10.1.1.2","hostname":"vm","afi":"ipv4","metric":0,"accessible":true,"used":true}],"peer":{"peerId":"10.1.1.2","routerId":"10.1.1.2","hostname":"vm","type":"internal"}}]]}},"numPrefix":3,"numPaths":3}"#;

/// FRR 8.4.4's `show bgp l2vpn evpn neighbors 10.1.1.2 advertised-routes
/// json` on the node, same capture (status codes trimmed).
const ADVERTISED: &str = r#"{"bgpTableVersion":0,"bgpLocalRouterId":"10.1.1.1","defaultLocPrf":100,"localAS":64999,"advertisedRoutes":{"64999:1001":{"rd":"64999:1001","[2]:[0]:[48]:[fa:16:3e:11:11:11]":{"routeType":2,"ethTag":0,"macLen":48,"mac":"fa:16:3e:11:11:11","nextHop":"10.1.1.1","locPrf":100,"weight":32768,"path":"","bgpOriginCode":"i","appliedStatusSymbols":{"*":true,">":true}},"[2]:[0]:[48]:[fa:16:3e:11:11:11]:[32]:[172.24.4.10]":{"routeType":2,"ethTag":0,"macLen":48,"mac":"fa:16:3e:11:11:11","ipLen":32,"ip":"172.24.4.10","nextHop":"10.1.1.1","locPrf":100,"weight":32768,"path":"","bgpOriginCode":"i","appliedStatusSymbols":{"*":true,">":true}},"[3]:[0]:[32]:[10.1.1.1]":{"routeType":3,"ethTag":0,"ipLen":32,"ip":"10.1.1.1","nextHop":"10.1.1.1","locPrf":100,"weight":32768,"path":"","bgpOriginCode":"i","appliedStatusSymbols":{"*":true,">":true}}}},"totalPrefixCounter":3}"#;

/// FRR 8.4's `show bgp l2vpn evpn route detail type prefix json` as the
/// fabric VTEP holds the node's type-5 route (the VM tier's
/// `crates/testbed/src/evpn.rs` capture): a route another VTEP sent.
const PREFIX_DETAIL_REMOTE: &str = r#"{"64999:1001":{"rd":"64999:1001","[5]:[0]:[32]:[172.24.4.10]":{"prefix":"[5]:[0]:[32]:[172.24.4.10]","prefixLen":352,"rd":"64999:1001","routeType":5,"ethTag":0,"ipLen":32,"ip":"172.24.4.10","paths":[[{"VNI":"1001","vni":"1001","origin":"incomplete","valid":true,"extendedCommunity":{"string":"RT:64999:3001 ET:8 RT:64999:1001 Rmac:7e:75:e9:94:6f:85"},"nexthops":[{"ip":"10.1.1.1","hostname":"(none)","afi":"ipv4","accessible":true,"used":true}],"peer":{"peerId":"10.1.1.1","routerId":"10.1.1.1","type":"internal"}}]]}},"numPrefix":1,"numPaths":1}"#;

fn mac_ip(mac: &str, ip: &str) -> EvpnRouteKey {
    EvpnRouteKey::MacIp {
        mac: mac.parse().unwrap(),
        ip: ip.parse().unwrap(),
    }
}

#[test]
fn the_nodes_own_type2_route_with_its_peers_and_a_received_one_are_told_apart() {
    let got = parse_evpn_routes(MACIP_DETAIL.as_bytes()).unwrap();
    assert_eq!(
        got.len(),
        2,
        "the MAC-only route is no MAC/IP route: {got:?}"
    );
    let by_key = |k: EvpnRouteKey| got.iter().find(|r| r.key == k).unwrap();
    let own = by_key(mac_ip("fa:16:3e:11:11:11", "172.24.4.10"));
    assert_eq!(
        (own.rd.as_str(), own.local, own.vni),
        ("64999:1001", true, Some(1001))
    );
    assert_eq!(own.advertised_to, BTreeSet::from(["10.1.1.2".to_string()]));
    let received = by_key(mac_ip("fa:16:3e:22:22:22", "172.24.4.20"));
    assert_eq!(received.rd, "10.1.1.2:2");
    assert!(!received.local && received.advertised_to.is_empty());
}

#[test]
fn a_type5_route_another_vtep_sent_is_not_local() {
    let got = parse_evpn_routes(PREFIX_DETAIL_REMOTE.as_bytes()).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].key,
        EvpnRouteKey::Prefix("172.24.4.10/32".parse().unwrap())
    );
    assert!(!got[0].local);
    assert_eq!(got[0].vni, Some(1001));
}

#[test]
fn the_routes_sent_to_a_peer_are_its_type2_with_ip_and_type5_routes() {
    let got = parse_evpn_advertised(ADVERTISED.as_bytes()).unwrap();
    assert_eq!(
        got,
        BTreeSet::from([mac_ip("fa:16:3e:11:11:11", "172.24.4.10")]),
        "the MAC-only and type-3 routes are not exposures"
    );
}

#[test]
fn an_answer_that_is_not_json_is_an_error_and_an_empty_one_has_no_routes() {
    assert!(parse_evpn_routes(b"% Unknown command: show bgp").is_err());
    assert!(parse_evpn_advertised(b"% No such neighbor").is_err());
    assert!(parse_evpn_routes(b"{}").unwrap().is_empty());
    assert!(parse_evpn_advertised(b"{}").unwrap().is_empty());
    // a route with no path is not held
    assert!(
        parse_evpn_routes(br#"{"1:1":{"[5]:[0]:[32]:[10.0.0.1]":{"paths":[]}}}"#)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_peer_that_is_neither_an_address_nor_an_interface_never_reaches_vtysh() {
    let config = KernelConfig {
        vtysh: "/nonexistent/vtysh-must-not-run".into(),
        ..KernelConfig::default()
    };
    let e = read_evpn_advertised(&config, "10.1.1.2 json\nshow run").unwrap_err();
    assert!(matches!(e, IoError::Invalid(_)), "{e}");
}
