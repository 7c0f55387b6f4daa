use super::*;

#[test]
fn a_vni_block_only_when_there_is_something_to_say() {
    assert_eq!(vni_block(1001, None, &[]), "");
    assert_eq!(
        vni_block(1001, Some("64999:1001"), &["64512:1001".to_string()]),
        "  vni 1001\n   rd 64999:1001\n   route-target import 64512:1001\n   route-target export 64512:1001\n  exit-vni\n"
    );
}

#[test]
fn garbage_gives_no_routes_and_no_macs() {
    let v: Value =
        serde_json::from_str(r#"{"numPrefix":0,"x":{"[5]:[0]:[32]:[1.2.3.4]":{}}}"#).unwrap();
    assert!(macip_routes(&v).is_empty());
    assert!(imet_routes(&v).is_empty());
    assert!(evpn_macs(&Value::Null).is_empty());
    assert!(evpn_macs(&serde_json::json!({"numMacs": 0})).is_empty());
}

/// FRR 8.4.4's `show bgp l2vpn evpn route detail type macip json` at the
/// peer of the L2 fabric (tests/evpn_l2_fabric.rs; trimmed).
const MACIP: &str = r#"{"64999:1001":{"rd":"64999:1001","[2]:[0]:[48]:[fa:16:3e:11:11:11]":{"prefix":"[2]:[0]:[48]:[fa:16:3e:11:11:11]","prefixLen":352,"rd":"64999:1001","routeType":2,"ethTag":0,"macLen":48,"mac":"fa:16:3e:11:11:11","paths":[[{"VNI":"1001","vni":"1001","origin":"IGP","valid":true,"extendedCommunity":{"string":"RT:64512:1001 ET:8"},"nexthops":[{"ip":"10.1.1.1","hostname":"vm","afi":"ipv4","metric":0,"accessible":true,"used":true}],"peer":{"peerId":"10.1.1.1","routerId":"10.1.1.1","type":"internal"}}]]},"[2]:[0]:[48]:[fa:16:3e:11:11:11]:[32]:[172.24.4.10]":{"prefix":"[2]:[0]:[48]:[fa:16:3e:11:11:11]:[32]:[172.24.4.10]","prefixLen":352,"rd":"64999:1001","routeType":2,"ethTag":0,"macLen":48,"mac":"fa:16:3e:11:11:11","ipLen":32,"ip":"172.24.4.10","paths":[[{"VNI":"1001","vni":"1001","origin":"IGP","valid":true,"extendedCommunity":{"string":"RT:64512:1001 ET:8"},"nexthops":[{"ip":"10.1.1.1","hostname":"vm","afi":"ipv4","metric":0,"accessible":true,"used":true}],"peer":{"peerId":"10.1.1.1","routerId":"10.1.1.1","type":"internal"}}]]}},"numPrefix":2,"numPaths":2}"#;

/// The same router's `... type multicast json` (trimmed).
const IMET: &str = r#"{"64999:1001":{"rd":"64999:1001","[3]:[0]:[32]:[10.1.1.1]":{"prefix":"[3]:[0]:[32]:[10.1.1.1]","prefixLen":352,"rd":"64999:1001","routeType":3,"ethTag":0,"ipLen":32,"ip":"10.1.1.1","paths":[[{"origin":"IGP","valid":true,"extendedCommunity":{"string":"RT:64512:1001 ET:8"},"pmsi":{"tunnelType":"Ingress Replication","label":1001},"nexthops":[{"ip":"10.1.1.1","hostname":"vm","afi":"ipv4","metric":0,"accessible":true,"used":true}]}]]}},"10.1.1.2:2":{"rd":"10.1.1.2:2","[3]:[0]:[32]:[10.1.1.2]":{"prefix":"[3]:[0]:[32]:[10.1.1.2]","prefixLen":352,"rd":"10.1.1.2:2","routeType":3,"ethTag":0,"ipLen":32,"ip":"10.1.1.2","paths":[[{"VNI":"1001","vni":"1001","origin":"IGP","valid":true,"local":true,"extendedCommunity":{"string":"ET:8 RT:64512:1001"},"pmsi":{"tunnelType":"Ingress Replication","label":1001},"nexthops":[{"ip":"10.1.1.2","hostname":"vm","afi":"ipv4","metric":0,"accessible":true,"used":true}]}]]}},"numPrefix":2,"numPaths":2}"#;

/// The same router's `show evpn mac vni 1001 json`.
const MACS: &str = r#"{
  "numMacs":1,
  "macs":{
    "fa:16:3e:11:11:11":{
      "type":"remote",
      "remoteVtep":"10.1.1.1",
      "localSequence":0,
      "remoteSequence":0,
      "detectionCount":0,
      "isDuplicate":false
    }
  }
}"#;

#[test]
fn type2_routes_are_read_from_frr_json() {
    let v: Value = serde_json::from_str(MACIP).unwrap();
    let route = |ip: Option<&str>| MacIpRoute {
        rd: "64999:1001".into(),
        mac: "fa:16:3e:11:11:11".into(),
        ip: ip.map(str::to_string),
        next_hop: "10.1.1.1".into(),
        route_targets: vec!["64512:1001".into()],
        vni: Some(1001),
    };
    let mut routes = macip_routes(&v);
    routes.sort_by(|a, b| a.ip.cmp(&b.ip));
    assert_eq!(routes, vec![route(None), route(Some("172.24.4.10"))]);
}

#[test]
fn type3_routes_are_read_from_frr_json() {
    let v: Value = serde_json::from_str(IMET).unwrap();
    let mut originators: Vec<(String, String, String)> = imet_routes(&v)
        .into_iter()
        .map(|r| (r.rd, r.originator, r.next_hop))
        .collect();
    originators.sort();
    assert_eq!(
        originators,
        [
            ("10.1.1.2:2".into(), "10.1.1.2".into(), "10.1.1.2".into()),
            ("64999:1001".into(), "10.1.1.1".into(), "10.1.1.1".into()),
        ]
    );
    assert!(imet_routes(&v)
        .iter()
        .all(|r| r.route_targets == ["64512:1001"]));
}

#[test]
fn zebra_macs_are_read_from_frr_json() {
    let v: Value = serde_json::from_str(MACS).unwrap();
    assert_eq!(
        evpn_macs(&v),
        vec![EvpnMac {
            mac: "fa:16:3e:11:11:11".into(),
            kind: "remote".into(),
            remote_vtep: Some("10.1.1.1".into()),
            interface: None,
        }]
    );
}
