use serde_json::Value;

use super::*;

#[test]
fn type5_routes_are_read_from_frr_json() {
    // FRR 8.4's `show bgp l2vpn evpn route detail type prefix json`
    // in the VM tier (trimmed)
    let v: Value = serde_json::from_str(
        r#"{"64999:1001":{"rd":"64999:1001","[5]:[0]:[32]:[172.24.4.10]":{"prefix":"[5]:[0]:[32]:[172.24.4.10]","prefixLen":352,"rd":"64999:1001","routeType":5,"ethTag":0,"ipLen":32,"ip":"172.24.4.10","paths":[[{"VNI":"1001","vni":"1001","origin":"incomplete","valid":true,"extendedCommunity":{"string":"RT:64999:3001 ET:8 RT:64999:1001 Rmac:7e:75:e9:94:6f:85"},"nexthops":[{"ip":"10.1.1.1","hostname":"(none)","afi":"ipv4","accessible":true,"used":true}],"peer":{"peerId":"10.1.1.1","routerId":"10.1.1.1","type":"internal"}}]]}},"numPrefix":1,"numPaths":1}"#,
    )
    .unwrap();
    assert_eq!(
        type5_routes(&v),
        vec![Type5Route {
            rd: "64999:1001".into(),
            prefix: "172.24.4.10/32".into(),
            next_hop: "10.1.1.1".into(),
            route_targets: vec!["64999:1001".into(), "64999:3001".into()],
            vni: Some(1001),
            rmac: Some("7e:75:e9:94:6f:85".into()),
        }]
    );
}

#[test]
fn non_route_members_and_garbage_give_no_routes() {
    let v: Value =
        serde_json::from_str(r#"{"numPrefix":0,"numPaths":0,"x":{"[2]:[0]":{}}}"#).unwrap();
    assert!(type5_routes(&v).is_empty());
    assert!(type5_routes(&Value::Null).is_empty());
}

#[test]
fn unicast_paths_are_matched_by_prefix_and_next_hop() {
    // the shape of FRR 8.4's `show bgp ipv4 unicast json` (trimmed)
    let v: Value = serde_json::from_str(
        r#"{"vrfId":0,"vrfName":"default","routerId":"10.1.1.2","defaultLocPrf":100,"localAS":64999,"routes":{"172.24.4.10/32":[{"valid":true,"bestpath":true,"pathFrom":"internal","prefix":"172.24.4.10","prefixLen":32,"network":"172.24.4.10/32","nexthops":[{"ip":"10.1.1.1","hostname":"node","afi":"ipv4","used":true}]}]}}"#,
    )
    .unwrap();
    assert!(unicast_has_path_via(&v, "172.24.4.10/32", "10.1.1.1"));
    assert!(!unicast_has_path_via(&v, "172.24.4.10/32", "10.1.1.9"));
    assert!(!unicast_has_path_via(&v, "172.24.5.10/32", "10.1.1.1"));
    assert!(!unicast_has_path_via(
        &Value::Null,
        "172.24.4.10/32",
        "10.1.1.1"
    ));
}
