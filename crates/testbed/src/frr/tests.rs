//! Unit tests of `frr`, beside it so that they may use its private items.

use super::*;

#[test]
fn route_keys_are_the_prefixes() {
    let v: Value =
        serde_json::from_str(r#"{"vrfId":0,"routes":{"192.0.2.10/32":[{}],"10.255.0.0/30":[{}]}}"#)
            .unwrap();
    let keys: Vec<String> = route_keys(&v).into_iter().collect();
    assert_eq!(keys, ["10.255.0.0/30", "192.0.2.10/32"]);
    assert!(route_keys(&serde_json::json!({})).is_empty());
}

#[test]
fn vty_answer_ends_with_three_nuls_and_a_status() {
    assert_eq!(split_vty_answer(b"{}\n\0\0\0\0"), Some((&b"{}\n"[..], 0)));
    assert_eq!(
        split_vty_answer(b"% Unknown\n\0\0\0\x02"),
        Some((&b"% Unknown\n"[..], 2))
    );
    // incomplete: keep reading
    assert_eq!(split_vty_answer(b"{\"a\":"), None);
    assert_eq!(split_vty_answer(b"x\0\0\0"), None);
}

#[test]
fn interface_names_fit_ifnamsiz() {
    let tag = short_hash("/tmp/.tmpAbCdEf");
    assert_eq!(tag.len(), 6);
    assert!(format!("obgp{tag}n").len() <= 15);
    assert_ne!(tag, short_hash("/tmp/.tmpAbCdEg"));
}

#[test]
fn configs_name_both_ends_and_ases() {
    let opts = FrrPairOptions::default();
    let peer = peer_config(&opts);
    assert!(peer.starts_with("router bgp 65000\n"), "{peer}");
    assert!(
        peer.contains("neighbor 10.255.0.1 remote-as 64999\n"),
        "{peer}"
    );
    let node = node_config(&opts);
    assert!(node.starts_with("router bgp 64999\n"), "{node}");
    assert!(
        node.contains("neighbor 10.255.0.2 remote-as 65000\n"),
        "{node}"
    );
    assert_eq!(node.matches("redistribute connected").count(), 2);
}
