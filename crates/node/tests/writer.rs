//! The single writer's door to the node on a real kernel, in a network
//! namespace the test creates (root, iproute2): a netlink op is made before
//! `apply_op` returns, a command op is queued to the command lane, whose
//! outcome comes back through the lane.

use obgp_netmodel::{Address, DevName};
use obgp_node::{CommandLane, KernelConfig, KernelNode, NodeWriter};
use obgp_plan::{Applied, NodeIo, OfFlow, Op};
use obgp_testbed::netns::Netns;

fn dev(s: &str) -> DevName {
    DevName::new(s).unwrap()
}

#[tokio::test]
async fn netlink_ops_are_made_at_once_and_command_ops_go_to_the_lane() {
    let ns = Netns::new("writer").expect("creating a netns (run the tests as root)");
    let dir = tempfile::tempdir().unwrap();
    let config = KernelConfig {
        netns: Some(ns.path()),
        rt_tables: dir.path().join("rt_tables"),
        ovs_ofctl: "/nonexistent/ovs-ofctl".into(),
        ..KernelConfig::default()
    };
    let mut node = KernelNode::connect(config.clone()).await.unwrap();
    let lane = CommandLane::start(config).unwrap();
    let mut writer = NodeWriter::new(&mut node, &lane);

    let address = Op::AddAddress(Address {
        dev: dev("lo"),
        net: "10.255.0.1/32".parse().unwrap(),
    });
    assert_eq!(writer.apply_op(&address).await, Ok(Applied::Done));
    let on_lo = ns.ip(&["-o", "addr", "show", "dev", "lo"]).unwrap();
    assert!(on_lo.contains("10.255.0.1/32"), "{on_lo}");

    let flow = Op::AddFlow {
        bridge: dev("br-ex"),
        flow: OfFlow {
            cookie: 999,
            table: 0,
            priority: 900,
            matches: ["ip".to_string(), "in_port=1".to_string()].into(),
            actions: "NORMAL".into(),
        },
    };
    assert_eq!(writer.apply_op(&flow).await, Ok(Applied::Queued));
    lane.settled().await;
    let outcomes = lane.take_outcomes();
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert_eq!(outcomes[0].op, flow);
    assert!(
        outcomes[0].result.is_err(),
        "the lane ran it, and it has no ovs-ofctl: {:?}",
        outcomes[0].result
    );
}
