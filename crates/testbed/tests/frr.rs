//! The FRR harness against real FRR in real namespaces (root): the pair's
//! eBGP session comes up, and a /32 and /128 on the node's bgp-nic stand-in
//! reach the peer through `redistribute connected` and are withdrawn again.

use std::time::Duration;

use anyhow::Result;
use obgp_testbed::frr::{FrrPair, FrrPairOptions, FrrRouter, NODE_ADDR, PEER_ADDR};

/// Bound of every wait, far above what an announcement takes on the host or
/// in the VM tier; only a failing test waits this long.
const WAIT: Duration = Duration::from_secs(30);

/// A fresh state directory, removed afterwards unless `OBGP_TESTBED_KEEP=1`
/// (then its path is printed: the daemons' logs and configs are in it).
fn state_dir() -> Result<tempfile::TempDir> {
    let mut dir = tempfile::Builder::new().prefix("obgp-frr-").tempdir()?;
    if std::env::var_os("OBGP_TESTBED_KEEP").is_some_and(|v| v == "1") {
        dir.disable_cleanup(true);
        eprintln!("keeping {}", dir.path().display());
    }
    Ok(dir)
}

#[test]
fn pair_session_is_established_both_ways() -> Result<()> {
    let dir = state_dir()?;
    let started = std::time::Instant::now();
    let mut pair = FrrPair::start(dir.path(), 64999, 65000)?;
    eprintln!("pair up and Established in {:?}", started.elapsed());
    assert_eq!(
        pair.peer.neighbor_state(NODE_ADDR)?.as_deref(),
        Some("Established")
    );
    // the node's side may still be in OpenConfirm for a moment
    pair.node.wait_established(PEER_ADDR, WAIT)?;
    // the direct vty client and vtysh see the same daemon
    let direct = pair
        .peer
        .vty_command("bgpd", "show bgp ipv4 unicast summary json")?;
    let via_vtysh = pair.peer.vtysh("show bgp ipv4 unicast summary json")?;
    let (direct, via_vtysh): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(&direct)?,
        serde_json::from_str(&via_vtysh)?,
    );
    assert_eq!(direct["routerId"], via_vtysh["routerId"]);
    let err = pair
        .peer
        .vty_command("bgpd", "show no-such-thing")
        .unwrap_err();
    assert!(format!("{err:#}").contains("status"), "{err:#}");
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

/// FRR's netns VRF backend as the stand-in for a kernel VRF: an address in
/// namespace NAME is in FRR `vrf NAME`, leaked into the default BGP instance
/// with `import vrf` and announced to the peer.
#[test]
fn netns_vrf_backend_leaks_a_vrf_prefix_to_the_peer() -> Result<()> {
    let dir = state_dir()?;
    let mut pair = FrrPair::start_with(
        dir.path(),
        &FrrPairOptions {
            vrf_netns: true,
            ..FrrPairOptions::default()
        },
    )?;
    let vrf = format!("{}-vrf", pair.node_netns());
    pair.add_netns(&vrf)?;
    let in_vrf = |args: &[&str]| -> Result<()> {
        let status = std::process::Command::new("ip")
            .args(["-n", &vrf])
            .args(args)
            .status()?;
        anyhow::ensure!(status.success(), "ip -n {vrf} {args:?} failed");
        Ok(())
    };
    in_vrf(&["link", "add", "vrf-nic", "type", "ifb"])?;
    in_vrf(&["link", "set", "vrf-nic", "up"])?;
    in_vrf(&["addr", "add", "203.0.113.7/32", "dev", "vrf-nic"])?;
    pair.node.vtysh(&format!(
        "configure terminal\nrouter bgp 64999 vrf {vrf}\n bgp router-id 10.255.0.1\n \
         address-family ipv4 unicast\n  redistribute connected\n exit-address-family\nexit\n\
         router bgp 64999\n address-family ipv4 unicast\n  import vrf {vrf}\n exit-address-family\n"
    ))?;
    let took = pair.wait_peer_has("203.0.113.7/32", WAIT)?;
    eprintln!("VRF prefix leaked and announced in {took:?}");
    in_vrf(&["addr", "del", "203.0.113.7/32", "dev", "vrf-nic"])?;
    pair.wait_peer_lacks("203.0.113.7/32", WAIT)?;
    Ok(())
}

#[test]
fn dropping_the_pair_leaves_no_daemons_or_namespaces() -> Result<()> {
    let dir = state_dir()?;
    let pair = FrrPair::start(dir.path(), 64999, 65000)?;
    let namespaces = [pair.node_netns().to_string(), pair.peer_netns().to_string()];
    let mut pids = pair.node.pids();
    pids.extend(pair.peer.pids());
    assert_eq!(pids.len(), 4);
    drop(pair);
    for ns in &namespaces {
        let path = std::path::Path::new("/run/netns").join(ns);
        assert!(!path.exists(), "namespace {ns} left behind");
    }
    for pid in pids {
        // reaped children have no /proc entry at all (not even a zombie)
        let proc = std::path::PathBuf::from(format!("/proc/{pid}"));
        assert!(!proc.exists(), "daemon {pid} left behind");
    }
    Ok(())
}

#[test]
fn router_in_a_missing_namespace_fails_with_its_logs() -> Result<()> {
    let dir = state_dir()?;
    let started = std::time::Instant::now();
    let err = match FrrRouter::start("obgp-no-such-ns", &dir.path().join("r"), "") {
        Ok(_) => anyhow::bail!("started FRR in a namespace that does not exist"),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        err.contains("zebra in netns obgp-no-such-ns exited"),
        "{err}"
    );
    assert!(
        err.contains("Cannot open network namespace"),
        "the error should carry the daemon's output: {err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "failing took {:?}",
        started.elapsed()
    );
    Ok(())
}

/// The agent's layout on a real kernel (VM tier): `bgp-nic` (dummy) enslaved
/// to `bgp-vrf` (vrf table 10), FRR `router bgp AS vrf bgp-vrf` redistributing
/// connected, leaked into the default instance with `import vrf bgp-vrf`.
#[test]
#[ignore = "vm tier: needs kernel vrf and dummy devices (make test-vm)"]
fn kernel_vrf_prefix_is_leaked_to_the_peer() -> Result<()> {
    let dir = state_dir()?;
    let mut pair = FrrPair::start(dir.path(), 64999, 65000)?;
    pair.node_ip(&["link", "add", "bgp-vrf", "type", "vrf", "table", "10"])
        .map_err(|e| e.context("this kernel has no vrf devices: run through `obgp-vm test`"))?;
    pair.node_ip(&["link", "set", "bgp-vrf", "up"])?;
    pair.node_ip(&["link", "set", "bgp-nic", "master", "bgp-vrf"])?;
    pair.node.vtysh(
        "configure terminal\n\
         router bgp 64999 vrf bgp-vrf\n bgp router-id 10.255.0.1\n \
         address-family ipv4 unicast\n  redistribute connected\n exit-address-family\n \
         address-family ipv6 unicast\n  redistribute connected\n exit-address-family\nexit\n\
         router bgp 64999\n address-family ipv4 unicast\n  import vrf bgp-vrf\n exit-address-family\n \
         address-family ipv6 unicast\n  import vrf bgp-vrf\n exit-address-family\n",
    )?;
    for (addr, prefix) in [
        ("172.24.4.20/32", "172.24.4.20/32"),
        ("2001:db8::20/128", "2001:db8::20/128"),
    ] {
        pair.node_ip(&["addr", "add", addr, "dev", "bgp-nic"])?;
        let took = pair.wait_peer_has(prefix, WAIT)?;
        eprintln!("{prefix} in bgp-vrf leaked and announced in {took:?}");
        pair.node_ip(&["addr", "del", addr, "dev", "bgp-nic"])?;
        pair.wait_peer_lacks(prefix, WAIT)?;
    }
    Ok(())
}
