//! Unit tests, beside the module so that they may use its private items.
use std::path::PathBuf;

use super::*;

/// An executable shell script in `dir` printing `output` (whatever
/// arguments it gets), standing in for ovs-ofctl or vtysh.
fn stand_in(dir: &std::path::Path, name: &str, output: &str) -> PathBuf {
    let path = dir.join(name);
    let text = format!("#!/bin/sh\ncat <<'EOF'\n{output}EOF\n");
    obgp_testbed::script::write_executable(&path, &text).unwrap();
    path
}

#[test]
fn a_drift_probe_reports_changed_flows_and_missing_frr_lines_only() {
    let dir = tempfile::tempdir().unwrap();
    let show = " 5(patch-provnet-2222-to-br-int): addr:aa:aa:aa:aa:aa:03\n";
    let flow =
        " cookie=0x3e7, priority=900,ip,in_port=5 actions=mod_dl_dst:aa:aa:aa:aa:aa:01,NORMAL\n";
    let frr = "router bgp 64999 vrf bgp-vrf\n  bgp router-id 192.0.2.1\n  address-family ipv4 unicast\n    redistribute connected\n  exit-address-family\n";
    // The same script answers `show` and `dump-flows`: both parsers
    // skip what is not theirs.
    let config = |ofctl: &str, vtysh: &str| KernelConfig {
        ovs_ofctl: stand_in(dir.path(), "ofctl", ofctl),
        vtysh: stand_in(dir.path(), "vtysh", vtysh),
        vty_socket: None,
        ..KernelConfig::default()
    };
    let br = DevName::new("br-ex").unwrap();
    let seen = read_ovs_bridge(&config(&format!("{show}{flow}"), frr), &br)
        .unwrap()
        .expect("the stand-in answers show");
    assert_eq!(seen.flows.len(), 1, "{seen:?}");
    let probe = |c: KernelConfig| DriftProbe {
        config: c,
        bridges: vec![(br.clone(), Some(seen.clone()))],
        frr_lines: frr_check_lines(frr),
        frr_evpn: None,
    };
    assert_eq!(probe(config(&format!("{show}{flow}"), frr)).drift(), None);
    // A flow deleted by hand.
    let why = probe(config(show, frr)).drift().expect("drift");
    assert!(why.contains("br-ex"), "{why}");
    // FRR restarted without our configuration.
    let why = probe(config(&format!("{show}{flow}"), "router bgp 64999\n"))
        .drift()
        .expect("drift");
    assert!(why.contains("FRR"), "{why}");
    // The redistribution is checked where it is asked for: the same
    // line under the default instance does not count.
    let elsewhere = "router bgp 64999\n  address-family ipv4 unicast\n    redistribute connected\n  exit-address-family\nexit\nrouter bgp 64999 vrf bgp-vrf\nexit\n";
    let why = probe(config(&format!("{show}{flow}"), elsewhere))
        .drift()
        .expect("drift");
    assert!(why.contains("FRR"), "{why}");
}

#[test]
fn frr_check_lines_name_their_blocks_and_match_frrs_own_rendering() {
    let ours = "\nrouter bgp 64999\n  address-family ipv4 unicast\n    import vrf bgp-vrf\n  exit-address-family\n\nrouter bgp 64999 vrf bgp-vrf\n  bgp router-id 192.0.2.1\n  address-family ipv6 unicast\n\n    redistribute kernel\n\n  exit-address-family\n";
    let lines = frr_check_lines(ours);
    assert_eq!(
        lines,
        [
            "router bgp 64999",
            "router bgp 64999 > address-family ipv4 unicast > import vrf bgp-vrf",
            "router bgp 64999 vrf bgp-vrf",
            "router bgp 64999 vrf bgp-vrf > address-family ipv6 unicast > redistribute kernel",
        ]
    );
    // FRR 8's `show running-config`: one-space indents, `!` and `exit`.
    let running = "frr version 8.4.4\n!\nrouter bgp 64999\n bgp router-id 192.0.2.1\n !\n address-family ipv4 unicast\n  import vrf bgp-vrf\n exit-address-family\nexit\n!\nrouter bgp 64999 vrf bgp-vrf\n bgp router-id 192.0.2.1\n !\n address-family ipv4 unicast\n  redistribute connected\n exit-address-family\n !\n address-family ipv6 unicast\n  redistribute kernel\n exit-address-family\nexit\n!\nend\n";
    let have: BTreeSet<String> = frr_paths(running).collect();
    assert!(lines.iter().all(|l| have.contains(l)), "{have:#?}");
    assert!(!have.contains(
        "router bgp 64999 vrf bgp-vrf > address-family ipv4 unicast > redistribute kernel"
    ));
}

#[test]
fn a_drift_probe_in_an_evpn_scope_reports_changed_evpn_vrfs() {
    let dir = tempfile::tempdir().unwrap();
    let with_1001 = "vrf vrf-1001\n vni 1001\nexit-vrf\nrouter bgp 64999 vrf vrf-1001\nexit\n";
    let config = |vtysh: &str| KernelConfig {
        vtysh: stand_in(dir.path(), "vtysh", vtysh),
        vty_socket: None,
        ..KernelConfig::default()
    };
    let seen = read_frr_state(&config(with_1001), &[]);
    assert_eq!(seen.evpn_vrfs.len(), 1, "{seen:?}");
    let probe = |c: KernelConfig, evpn: Option<EvpnSeen>| DriftProbe {
        config: c,
        bridges: Vec::new(),
        frr_lines: Vec::new(),
        frr_evpn: evpn,
    };
    let last = Some(EvpnSeen::of(&seen));
    assert_eq!(probe(config(with_1001), last.clone()).drift(), None);
    // Removed by hand: drift.
    let why = probe(config("router bgp 64999\n"), last)
        .drift()
        .expect("drift");
    assert!(why.contains("EVPN"), "{why}");
    // Outside an EVPN scope, and without lines, FRR is not compared.
    assert_eq!(probe(config("router bgp 64999\n"), None).drift(), None);
}

/// A stand-in that never answers (a wedged FRR or ovs-vswitchd).
fn wedged(dir: &std::path::Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    obgp_testbed::script::write_executable(&path, "#!/bin/sh\nsleep 600\n").unwrap();
    path
}

#[test]
fn wedged_vtysh_and_ovs_ofctl_give_unknown_within_their_deadlines() {
    let dir = tempfile::tempdir().unwrap();
    let deadline = std::time::Duration::from_millis(300);
    let config = KernelConfig {
        ovs_ofctl: wedged(dir.path(), "ofctl"),
        vtysh: wedged(dir.path(), "vtysh"),
        vty_socket: None,
        vtysh_timeout: deadline,
        ovs_ofctl_timeout: deadline,
        ..KernelConfig::default()
    };
    let br = DevName::new("br-ex").unwrap();
    let started = std::time::Instant::now();

    let frr = read_frr_state(&config, &["bgp router-id 192.0.2.1".into()]);
    assert!(frr.unknown && !frr.has_our_config, "{frr:?}");
    let ovs = read_ovs_bridge(&config, &br).unwrap_err();
    assert!(matches!(ovs, IoError::TimedOut { .. }), "{ovs}");
    assert!(ovs.to_string().contains("ovs-ofctl show br-ex"), "{ovs}");
    let file = dir.path().join("frr.conf");
    std::fs::write(&file, "router bgp 64999\n").unwrap();
    let apply = apply_frr_file(&config, &file).unwrap_err();
    assert!(matches!(apply, IoError::TimedOut { .. }), "{apply}");
    assert_eq!(read_frr_router_id(&config), None);
    // Unreadable is not drift: no reconcile is triggered to wait again.
    let probe = DriftProbe {
        config: config.clone(),
        bridges: vec![(br.clone(), None)],
        frr_lines: vec!["bgp router-id 192.0.2.1".into()],
        frr_evpn: None,
    };
    assert_eq!(probe.drift(), None);
    // Six runs, each killed at its deadline.
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(10), "took {took:?}");
}

#[test]
fn ofctl_show_gives_ports_by_name() {
    let text = "OFPT_FEATURES_REPLY (xid=0x2): dpid:0000\n n_tables:254\n 1(eth1): addr:aa:aa:aa:aa:aa:02\n     config:     0\n 5(patch-provnet-2222-to-br-int): addr:aa:aa:aa:aa:aa:03\n LOCAL(br-ex): addr:aa:aa:aa:aa:aa:01\n";
    let ports = parse_ofctl_show(text);
    assert_eq!(ports.get("eth1"), Some(&1));
    assert_eq!(ports.get("patch-provnet-2222-to-br-int"), Some(&5));
    assert_eq!(ports.len(), 2);
}

#[test]
fn dump_flows_parses_with_and_without_stats() {
    let text = "NXST_FLOW reply (xid=0x4):\n cookie=0x3e7, duration=2.1s, table=0, n_packets=0, n_bytes=0, idle_age=2, priority=900,ip,in_port=5 actions=mod_dl_dst:aa:aa:aa:aa:aa:01,NORMAL\n cookie=0x3e7, priority=900,ipv6,in_port=5 actions=set_field:aa:aa:aa:aa:aa:01->eth_dst,NORMAL\n";
    let flows = parse_dump_flows(text);
    assert_eq!(flows.len(), 2);
    assert_eq!(flows[0].cookie, 999);
    assert_eq!(flows[0].priority, 900);
    assert_eq!(
        flows[0].add_flow_arg(),
        "cookie=999,priority=900,ip,in_port=5,actions=mod_dl_dst:aa:aa:aa:aa:aa:01,NORMAL"
    );
    assert_eq!(flows[1].actions, "mod_dl_dst:aa:aa:aa:aa:aa:01,NORMAL");
}

#[test]
fn port_ops_become_one_vsctl_transaction_and_odd_names_are_refused() {
    let add = |name: &str, tag, internal| {
        Op::AddOvsPort(obgp_netmodel::OvsPort {
            bridge: DevName::new("br-ex").unwrap(),
            name: DevName::new(name).unwrap(),
            tag,
            internal,
        })
    };
    let args = |op: &Op| ovs_port_args(op).expect("a port op").map(|a| a.join(" "));
    assert_eq!(
        args(&add("veth-ovs-1001", None, false)).unwrap(),
        "--may-exist add-port br-ex veth-ovs-1001"
    );
    assert_eq!(
        args(&add("vlan-1001", Some(0), false)).unwrap(),
        "--may-exist add-port br-ex vlan-1001 -- set Port vlan-1001 tag=0"
    );
    assert_eq!(
        args(&add("vlan-1001", Some(4095), true)).unwrap(),
        "--may-exist add-port br-ex vlan-1001 -- set Port vlan-1001 tag=4095 \
         -- set Interface vlan-1001 type=internal"
    );
    let del = Op::DelOvsPort {
        bridge: DevName::new("br-ex").unwrap(),
        name: DevName::new("vlan-1001").unwrap(),
    };
    assert_eq!(args(&del).unwrap(), "--if-exists del-port br-ex vlan-1001");
    assert!(matches!(
        args(&add("vlan-1001", Some(4096), false)),
        Err(IoError::Invalid(v)) if v.contains("4096")
    ));
    // Valid device names that a command could read as an option or as
    // more than a name.
    for odd in ["-evil", "--", "a=b", "x\"y", "p[1]", "a,b"] {
        assert!(
            matches!(args(&add(odd, None, false)), Err(IoError::Invalid(v)) if v == odd),
            "{odd}"
        );
    }
    assert!(ovs_port_args(&Op::ApplyFrr {
        config: String::new()
    })
    .is_none());
}

#[test]
fn flow_tokens_with_spaces_or_quotes_are_refused() {
    let f = OfFlow {
        cookie: 999,
        table: 0,
        priority: 900,
        matches: ["ip in_port=5".to_string()].into(),
        actions: "NORMAL".into(),
    };
    assert!(matches!(check_flow(&f), Err(IoError::Invalid(_))));
}
