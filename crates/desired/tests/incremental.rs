//! `DesiredCache` against the full computation: random histories of port
//! changes (and some other changes) on a topogen topology, each result
//! compared with `desired_state` on the same snapshot.

use obgp_config::{AdvertisementMethod, AnnounceWith};
use obgp_desired::{desired_state, Computed, Desired, DesiredCache, NodeFacts};
use obgp_ovn::{NbChanges, Snapshot};
use obgp_ovsdb_data::Uuid;
use serde_json::json;
use world::{config, map_get, World, LSP};

mod world;

/// `got == want`, with only the differences in the failure message.
fn assert_same(got: &Desired, want: &Desired, what: &str) {
    if got == want {
        return;
    }
    let ips: std::collections::BTreeSet<_> =
        got.exposed.keys().chain(want.exposed.keys()).collect();
    let diff: Vec<String> = ips
        .into_iter()
        .filter(|ip| got.exposed.get(ip) != want.exposed.get(ip))
        .map(|ip| {
            format!(
                "{ip}: patched {:?}, full {:?}",
                got.exposed.get(ip),
                want.exposed.get(ip)
            )
        })
        .collect();
    let rest_equal = Desired {
        exposed: Default::default(),
        ..got.clone()
    } == Desired {
        exposed: Default::default(),
        ..want.clone()
    };
    panic!("{what}: exposures differ: {diff:#?}; the rest is equal: {rest_equal}");
}

/// Runs `steps` random changes, computing through the cache now and then,
/// and checks each result against a full computation. Returns (patched,
/// port-only computations).
fn history(
    seed: u64,
    distributed: bool,
    (method, announce): (AdvertisementMethod, AnnounceWith),
    steps: usize,
) -> (usize, usize) {
    let config = config(method, announce);
    let facts = NodeFacts::default();
    let mut w = World::new(seed, distributed);
    let mut cache = DesiredCache::default();
    let first = w.live.snapshot();
    let how = cache
        .compute(&first, &mut w.changes, &config, &facts)
        .expect("supported");
    assert_eq!(how, Computed::Full);
    cache.settle();
    let mut settled = cache.node().cloned();
    let (mut patched, mut port_only_runs) = (0, 0);
    let mut port_only = true;
    for step in 0..steps {
        port_only &= w.step();
        // Sometimes several changes lie between two computations.
        if w.rng.below(3) == 0 {
            continue;
        }
        let snap: Snapshot = w.live.snapshot();
        // What changed travels as a value: a non-port change makes it full.
        assert!(
            port_only || w.changes.is_full(),
            "step {step}: a non-port change accumulated as port changes"
        );
        let how = cache
            .compute(&snap, &mut w.changes, &config, &facts)
            .expect("supported");
        assert!(!w.changes.is_full(), "step {step}: changes not consumed");
        let want = desired_state(&snap, &config, &facts).expect("supported");
        let what = format!("step {step} ({how:?}), seed {seed}");
        assert_same(cache.desired().unwrap(), &want, &what);
        assert!(
            cache.node() == Some(&want.to_node()),
            "{what}: node objects differ"
        );
        // The settled node objects are those of the last settled result,
        // whether or not results were settled in between (a reconcile
        // that failed before applying does not settle).
        assert!(
            cache.settled() == settled.as_ref(),
            "{what}: settled objects differ"
        );
        if w.rng.below(4) != 0 {
            cache.settle();
            settled = cache.node().cloned();
        }
        if port_only {
            port_only_runs += 1;
        }
        if matches!(how, Computed::Patched { .. }) {
            assert!(port_only, "step {step}: patched after a non-port change");
            patched += 1;
        }
        port_only = true;
    }
    (patched, port_only_runs)
}

#[test]
fn patched_results_equal_full_computations() {
    let mut total = (0, 0);
    let (host, subnet) = (AdvertisementMethod::Host, AdvertisementMethod::Subnet);
    let (address, route) = (AnnounceWith::Address, AnnounceWith::Route);
    for (seed, distributed, how) in [
        (1, false, (host, address)),
        (2, true, (host, address)),
        (3, false, (subnet, address)),
        (4, true, (subnet, address)),
        (5, true, (host, route)),
        (6, false, (subnet, route)),
    ] {
        let (patched, port_only) = history(seed, distributed, how, 300);
        total.0 += patched;
        total.1 += port_only;
    }
    // Not vacuous: most port-only changes are patched, not recomputed.
    assert!(
        total.0 * 2 > total.1,
        "only {} of {} port-only computations were patched",
        total.0,
        total.1
    );
}

#[test]
fn a_fresh_cache_or_another_config_computes_in_full() {
    let mut w = World::new(7, false);
    let snap = w.live.snapshot();
    let facts = NodeFacts::default();
    let mut cache = DesiredCache::default();
    let host = config(AdvertisementMethod::Host, AnnounceWith::Address);
    let changes = &mut w.changes;
    assert_eq!(
        cache.compute(&snap, changes, &host, &facts).unwrap(),
        Computed::Full
    );
    assert_eq!(
        cache.compute(&snap, changes, &host, &facts).unwrap(),
        Computed::Patched { ports: 0 }
    );
    // Unknown changes: in full, however little changed.
    assert_eq!(
        cache
            .compute(&snap, &mut NbChanges::Full, &host, &facts)
            .unwrap(),
        Computed::Full
    );
    cache.clear();
    assert_eq!(
        cache.compute(&snap, changes, &host, &facts).unwrap(),
        Computed::Full
    );
    let subnet = config(AdvertisementMethod::Subnet, AnnounceWith::Address);
    assert_eq!(
        cache.compute(&snap, changes, &subnet, &facts).unwrap(),
        Computed::Full
    );
    let want = desired_state(&snap, &subnet, &facts).unwrap();
    assert_same(cache.desired().unwrap(), &want, "other config");
}

#[test]
fn two_ports_with_the_same_ip_and_mac_are_recomputed_in_full() {
    let config = config(AdvertisementMethod::Host, AnnounceWith::Address);
    let facts = NodeFacts::default();
    let mut w = World::new(11, false);
    // Two ports bound here on the provider network, in uuid order.
    let on_provider: Vec<Uuid> = w
        .local_vm_ports()
        .into_iter()
        .filter(|u| {
            map_get(&w.wire(LSP, *u), "external_ids", "neutron:network_name").as_deref()
                == Some(w.provider.as_str())
                && w.wire(LSP, *u)["up"] == json!(true)
        })
        .collect();
    assert!(on_provider.len() >= 2, "topology has {on_provider:?}");
    let (first, second) = (on_provider[0], on_provider[1]);
    let mut cache = DesiredCache::default();
    let mut check = |w: &mut World, what: &str| {
        let snap = w.live.snapshot();
        let how = cache
            .compute(&snap, &mut w.changes, &config, &facts)
            .expect("supported");
        let want = desired_state(&snap, &config, &facts).unwrap();
        assert_same(
            cache.desired().unwrap(),
            &want,
            &format!("{what} ({how:?})"),
        );
        assert!(
            cache.node() == Some(&want.to_node()),
            "{what}: node objects differ"
        );
        how
    };
    check(&mut w, "start");
    // The second port takes the first one's addresses: the same exposure,
    // asked for twice.
    let mut row = w.wire(LSP, second);
    row["addresses"] = w.wire(LSP, first)["addresses"].clone();
    w.commit(vec![(LSP, second, Some(row))]);
    assert_eq!(check(&mut w, "shared"), Computed::Full);
    // The first one goes down: the second still asks for the IP.
    let mut row = w.wire(LSP, first);
    row["up"] = json!(false);
    w.commit(vec![(LSP, first, Some(row))]);
    assert_eq!(check(&mut w, "first down"), Computed::Full);
}
