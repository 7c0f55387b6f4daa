//! Unit tests of `lib`, beside it so that they may use its private items.

use super::*;

#[test]
fn same_seed_same_transactions_other_seed_other_names() {
    let a = Topology::generate(Params {
        vms: 300,
        ..Params::default()
    })
    .nb_transactions();
    let b = Topology::generate(Params {
        vms: 300,
        ..Params::default()
    })
    .nb_transactions();
    let c = Topology::generate(Params {
        vms: 300,
        seed: 2,
        ..Params::default()
    })
    .nb_transactions();
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
    assert_ne!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&c).unwrap()
    );
}

#[test]
fn shape_follows_the_parameters() {
    let t = Topology::generate(Params {
        vms: 1000,
        ..Params::default()
    });
    let s = t.summary();
    assert_eq!(s.vms, 1000);
    assert_eq!(s.provider_vms, 100);
    assert_eq!(s.tenant_networks, 18);
    assert_eq!(s.routers, 9);
    assert_eq!(s.lbs, 10);
    // ~10 % local, deterministic for the seed.
    assert!((50..150).contains(&s.local_vms), "{s:?}");
    let all_local = Topology::generate(Params {
        vms: 200,
        local_fraction: 1.0,
        ..Params::default()
    });
    assert_eq!(all_local.summary().local_vms, 200);
}

#[test]
fn local_share_goes_to_the_chosen_host() {
    let t = Topology::generate(Params {
        vms: 1000,
        local_host: 3,
        local_fraction: 0.5,
        ..Params::default()
    });
    let s = t.summary();
    assert!((400..600).contains(&s.local_vms), "{s:?}");
    let txns = t.nb_transactions();
    let vms_on = |host: &str| {
        txns.iter()
            .flatten()
            .filter(|op| op["table"] == "Logical_Switch_Port")
            .filter(|op| {
                op["row"]["external_ids"][1]
                    .as_array()
                    .is_some_and(|pairs| {
                        pairs
                            .iter()
                            .any(|kv| kv[0] == "neutron:host_id" && kv[1] == host)
                    })
            })
            .count()
    };
    assert_eq!(vms_on("host-003"), s.local_vms);
    // The rest is spread over the other nine hosts.
    let others: usize = (0..10)
        .filter(|h| *h != 3)
        .map(|h| vms_on(&format!("host-{h:03}")))
        .sum();
    assert_eq!(others, 1000 - s.local_vms);
    assert!(vms_on("host-000") > 0);
}

#[test]
fn inserted_port_count_matches_the_summary() {
    let t = Topology::generate(Params {
        vms: 500,
        ..Params::default()
    });
    let inserted = t
        .nb_transactions()
        .iter()
        .flatten()
        .filter(|op| op["op"] == "insert" && op["table"] == "Logical_Switch_Port")
        .count();
    assert_eq!(inserted, t.summary().logical_switch_ports);
}
