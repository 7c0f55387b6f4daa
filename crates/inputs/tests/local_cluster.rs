//! The local-NB monitor and writer of `exposing_method = ovn`
//! (`obgp_inputs::LocalClusterSource`) against a real ovsdb-server serving the
//! OVN NB schema: the first write creates every desired row (marked), a
//! second writes nothing and every uuid stays, a removed segment's rows go,
//! a foreign row stays, and a transaction the server refuses is an error
//! naming the database, not a panic.

use std::time::Duration;

use obgp_config::Config;
use obgp_desired::{desired_ovn_method, GoldenConfig, LocalFacts, NodeFacts};
use obgp_inputs::{LocalClusterError, LocalClusterSource};
use obgp_local_cluster::{LocalClusterRows, NbTable, Observed};
use obgp_ovn::Snapshot;
use obgp_ovsdb_data::Uuid;
use obgp_testbed::ovsdb::OvsdbServer;
use serde_json::{json, Value};

const SYNC: Duration = Duration::from_secs(10);

fn fixture() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/ovn-local/basic.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn config(doc: &Value, local_nb: &str) -> Config {
    let mut c = serde_json::from_value::<GoldenConfig>(doc["config"].clone())
        .expect("the fixture's config")
        .config();
    c.local_ovn_cluster.ovn_nb_connection = local_nb.to_string();
    c
}

fn compute(doc: &Value, config: &Config) -> LocalClusterRows {
    let facts =
        serde_json::from_value::<LocalFacts>(doc["facts"].clone()).expect("the fixture's facts");
    let snap = Snapshot::from_wire(&doc["ovn"]).unwrap();
    desired_ovn_method(&snap, config, &NodeFacts::default(), &facts)
        .unwrap()
        .local_nb
}

fn uuids(db: &Observed) -> Vec<Uuid> {
    db.values().flat_map(|t| t.keys().copied()).collect()
}

#[tokio::test]
async fn the_writer_creates_keeps_and_removes_rows_on_a_real_local_nb() {
    let server = OvsdbServer::start("ovn-nb.ovsschema").expect("ovsdb-server");
    server
        .transact(&[json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "ops-net"}})])
        .unwrap();
    let mut doc = fixture();
    let cfg = config(&doc, &server.unix_remote());
    let local = LocalClusterSource::start(&cfg).expect("client");
    local.wait_synced(SYNC).await.expect("local NB synced");
    assert_eq!(
        local.observed()["Logical_Switch"].len(),
        1,
        "the foreign switch"
    );

    let desired = compute(&doc, &cfg);
    let first = local.write(&desired).await.expect("first write");
    assert!(!first.is_empty() && first.problems.is_empty(), "{first}");
    // The monitor shows the rows as soon as write returns.
    let seen = local.observed();
    for t in NbTable::ALL {
        let foreign = usize::from(t == NbTable::LogicalSwitch);
        assert_eq!(
            seen[t.name()].len(),
            desired.rows_of(t).count() + foreign,
            "{t}"
        );
    }
    let router = seen["Logical_Router"].values().next().unwrap();
    assert_eq!(
        router.map_str("external_ids", "ovn-bgp-agent"),
        Some("managed"),
        "the agent's mark"
    );

    // A second reconcile, and a restarted agent (a new connection, the
    // computation from scratch): nothing written, every uuid kept.
    assert!(local.write(&desired).await.unwrap().is_empty());
    drop(local);
    let local = LocalClusterSource::start(&cfg).unwrap();
    local.wait_synced(SYNC).await.unwrap();
    let again = local.write(&compute(&doc, &cfg)).await.unwrap();
    assert!(again.is_empty(), "no churn after a restart:\n{again}");
    assert_eq!(uuids(&local.observed()), uuids(&seen));

    // Segment fabric2 leaves the bgp mappings: its rows go, the rest and
    // the foreign switch stay.
    let ext = doc["ovn"]["Open_vSwitch"]["Open_vSwitch"]["ffffffff-0000-4000-8000-000000000001"]
        ["external_ids"][1]
        .as_array_mut()
        .unwrap();
    for p in ext.iter_mut() {
        if p[0] == "ovn-bridge-mappings-bgp" {
            p[1] = json!("fabric1:br-ex,local:br-osp");
        }
    }
    let fewer = compute(&doc, &cfg);
    assert!(!local.write(&fewer).await.unwrap().is_empty());
    // ovsdb-server's garbage collection reaches the monitor after the reply.
    let deadline = tokio::time::Instant::now() + SYNC;
    loop {
        let after = local.observed();
        let matches = NbTable::ALL.iter().all(|t| {
            let foreign = usize::from(*t == NbTable::LogicalSwitch);
            after[t.name()].len() == fewer.rows_of(*t).count() + foreign
        });
        if matches {
            assert!(
                uuids(&after).iter().all(|u| uuids(&seen).contains(u)),
                "nothing recreated"
            );
            let switches: Vec<_> = after["Logical_Switch"]
                .values()
                .filter_map(|r| r.str("name").map(str::to_string))
                .collect();
            assert!(switches.contains(&"ops-net".to_string()), "{switches:?}");
            assert!(!switches.contains(&"fabric2".to_string()), "{switches:?}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "fabric2's rows did not go: {after:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(local.write(&fewer).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_failed_transaction_is_an_error_naming_the_local_nb() {
    let mut server = OvsdbServer::start("ovn-nb.ovsschema").expect("ovsdb-server");
    let doc = fixture();
    let cfg = config(&doc, &server.unix_remote());
    let local = LocalClusterSource::start(&cfg).unwrap();
    local.wait_synced(SYNC).await.unwrap();
    // The local NB goes away: the write fails, returns, and names it.
    server.kill();
    let err = local.write(&compute(&doc, &cfg)).await.unwrap_err();
    assert!(matches!(err, LocalClusterError::Transact { .. }), "{err}");
    assert!(err.to_string().contains(&server.unix_remote()), "{err}");
}
