//! Shutdown: a reconciler told to stop starts no further op (root: it
//! reconciles a namespace node the test creates).

use obgp_config::Config;
use obgp_controller::inputs::OfPorts;
use obgp_controller::{ReconcileKind, Reconciler};
use obgp_node::KernelConfig;
use obgp_ovn::Snapshot;
use obgp_testbed::netns::Netns;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_reconcile_after_shutdown_starts_no_op_and_leaves_the_node_alone() {
    let ns = Netns::new("stop").expect("creating a netns (run the tests as root)");
    let dir = tempfile::tempdir().unwrap();
    let rt_tables = dir.path().join("rt_tables");
    std::fs::write(&rt_tables, "255\tlocal\n254\tmain\n").unwrap();
    let mut config = Config::default();
    config.default.bgp_router_id = Some("192.0.2.1".into());
    let kernel = KernelConfig {
        netns: Some(ns.path()),
        rt_tables: rt_tables.clone(),
        dummy_kind: "ifb".into(),
        ovs_ofctl: "/nonexistent/ovs-ofctl".into(),
        vtysh: "true".into(),
        vty_socket: None,
        frr_config_dir: dir.path().to_path_buf(),
        ..KernelConfig::default()
    };
    let mut reconciler = Reconciler::connect(config, kernel).await.unwrap();
    let shutdown = CancellationToken::new();
    reconciler.stop_on(shutdown.clone());
    // SIGTERM arrived while the reconcile was being planned.
    shutdown.cancel();
    let report = reconciler
        .reconcile(
            &Snapshot::default(),
            &OfPorts::default(),
            ReconcileKind::one_shot(),
        )
        .await
        .unwrap();
    // Even an empty OVN plans the base wiring (bgp-nic, the VRF, FRR).
    assert!(report.not_started > 0, "{report:?}");
    assert_eq!(report.ops_applied(), 0, "{report:?}");
    assert!(report.failed.is_empty(), "{report:?}");
    let links = ns.ip(&["link", "show"]).unwrap();
    assert!(!links.contains("bgp-nic"), "{links}");
    assert_eq!(
        std::fs::read_to_string(&rt_tables).unwrap(),
        "255\tlocal\n254\tmain\n"
    );
}
