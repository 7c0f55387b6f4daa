//! The FRR harness against real FRR in real namespaces (root): the pair's
//! eBGP session comes up, and a /32 and /128 on the node's bgp-nic stand-in
//! reach the peer through `redistribute connected` and are withdrawn again.

use std::time::Duration;

use anyhow::Result;
use obgp_testbed::frr::{FrrPair, FrrPairOptions, NODE_ADDR, PEER_ADDR};

const WAIT: Duration = Duration::from_secs(20);

fn state_dir() -> Result<tempfile::TempDir> {
    Ok(tempfile::Builder::new().prefix("obgp-frr-").tempdir()?)
}

#[test]
fn pair_session_is_established_both_ways() -> Result<()> {
    let dir = state_dir()?;
    let pair = FrrPair::start(dir.path(), 64999, 65000)?;
    assert_eq!(
        pair.peer.neighbor_state(NODE_ADDR)?.as_deref(),
        Some("Established")
    );
    assert_eq!(
        pair.node.neighbor_state(PEER_ADDR)?.as_deref(),
        Some("Established")
    );
    let summary = pair.peer.show_json("show bgp ipv4 unicast summary json")?;
    assert_eq!(summary["as"], 65000, "{summary}");
    assert_eq!(summary["peers"][NODE_ADDR]["remoteAs"], 64999, "{summary}");
    Ok(())
}

#[test]
fn address_on_bgp_nic_is_announced_and_withdrawn() -> Result<()> {
    let dir = state_dir()?;
    let mut pair = FrrPair::start(dir.path(), 64999, 65000)?;
    for (afi, addr, prefix) in [
        ("ipv4", "172.24.4.10/32", "172.24.4.10/32"),
        ("ipv6", "2001:db8::10/128", "2001:db8::10/128"),
    ] {
        pair.node_ip(&["addr", "add", addr, "dev", "bgp-nic"])?;
        let took = pair.wait_peer_has(prefix, WAIT)?;
        eprintln!("{prefix} announced to the peer in {took:?}");
        let route = &pair
            .peer
            .show_json(&format!("show bgp {afi} unicast {prefix} json"))?;
        let path = &route["paths"][0];
        assert_eq!(path["aspath"]["string"], "64999", "{route}");

        pair.node_ip(&["addr", "del", addr, "dev", "bgp-nic"])?;
        let took = pair.wait_peer_lacks(prefix, WAIT)?;
        eprintln!("{prefix} withdrawn from the peer in {took:?}");
    }
    Ok(())
}

#[test]
fn bare_node_takes_its_config_from_vtysh_file() -> Result<()> {
    let dir = state_dir()?;
    let mut pair = FrrPair::start_with(
        dir.path(),
        &FrrPairOptions {
            configure_node: false,
            ..FrrPairOptions::default()
        },
    )?;
    assert_ne!(
        pair.peer.neighbor_state(NODE_ADDR)?.as_deref(),
        Some("Established"),
        "an unconfigured node must not have a session"
    );
    // what the agent does: write a config file and apply it with vtysh -f
    let conf = dir.path().join("agent-frr.conf");
    std::fs::write(
        &conf,
        format!(
            "router bgp 64999\n bgp router-id {NODE_ADDR}\n no bgp ebgp-requires-policy\n \
             neighbor {PEER_ADDR} remote-as 65000\n neighbor {PEER_ADDR} timers 1 3\n \
             neighbor {PEER_ADDR} timers connect 1\n address-family ipv4 unicast\n  \
             redistribute connected\n exit-address-family\n"
        ),
    )?;
    pair.node.vtysh_file(&conf)?;
    pair.peer.wait_established(NODE_ADDR, WAIT)?;
    pair.node_ip(&["addr", "add", "192.0.2.77/32", "dev", "bgp-nic"])?;
    pair.wait_peer_has("192.0.2.77/32", WAIT)?;
    let running = pair.node.vtysh("show running-config")?;
    assert!(running.contains("router bgp 64999"), "{running}");
    Ok(())
}

#[test]
fn restarted_node_router_forgets_its_config_and_withdraws() -> Result<()> {
    let dir = state_dir()?;
    let mut pair = FrrPair::start(dir.path(), 64999, 65000)?;
    pair.node_ip(&["addr", "add", "198.51.100.5/32", "dev", "bgp-nic"])?;
    pair.wait_peer_has("198.51.100.5/32", WAIT)?;
    pair.node.restart()?;
    pair.wait_peer_lacks("198.51.100.5/32", WAIT)?;
    let running = pair.node.vtysh("show running-config")?;
    assert!(!running.contains("router bgp"), "{running}");
    Ok(())
}
