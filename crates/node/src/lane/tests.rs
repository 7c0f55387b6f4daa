//! The lane against stand-in `ovs-ofctl` and `vtysh` scripts: views never
//! wait, ops run in order and are read back, wedged commands are unknown
//! and signalled as failures, and stopping kills the command in flight.

use std::path::{Path, PathBuf};
use std::time::Duration;

use obgp_plan::actual::OfFlow;

use super::*;

/// A bound far below the stand-ins' hang (60 s) and far above any
/// scheduling noise: passing it shows the call did not wait for a command.
const AT_ONCE: Duration = Duration::from_secs(2);

/// An executable shell script `name` in `dir` running `body`; every run
/// appends its arguments to `<dir>/<name>.log`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    let log = dir.join(format!("{name}.log"));
    let text = format!("#!/bin/sh\necho \"$*\" >> {}\n{body}\n", log.display());
    obgp_testbed::script::write_executable(&path, &text).unwrap();
    path
}

fn log(dir: &Path, name: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join(format!("{name}.log")))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

/// `ovs-ofctl` answering `show` with one port and `dump-flows` with one
/// agent flow; `vtysh` printing a running configuration with our line and
/// a router-id.
const OFCTL: &str = r#"case "$*" in
  show*) echo ' 5(patch-provnet-1-to-br-int): addr:aa:aa:aa:aa:aa:03' ;;
  *dump-flows*cookie=0x3e7*) echo ' cookie=0x3e7, priority=900,ip,in_port=5 actions=NORMAL' ;;
esac"#;
const VTYSH: &str = r#"case "$*" in
  *running-config*) echo 'router bgp 64999 vrf bgp-vrf' ;;
  *summary*) echo '{"ipv4Unicast":{"routerId":"192.0.2.7"}}' ;;
esac"#;
/// Hangs like a vtysh facing a stopped bgpd, after recording its pid.
const WEDGED: &str = "echo $$ > \"$0.pid\"; sleep 60";

fn config(dir: &Path, ofctl: &str, vtysh: &str) -> KernelConfig {
    KernelConfig {
        ovs_ofctl: script(dir, "ofctl", ofctl),
        vtysh: script(dir, "vtysh", vtysh),
        vty_socket: None,
        vtysh_timeout: Duration::from_secs(1),
        ovs_ofctl_timeout: Duration::from_secs(1),
        frr_config_dir: dir.to_path_buf(),
        ..KernelConfig::default()
    }
}

fn dev(s: &str) -> DevName {
    DevName::new(s).unwrap()
}

fn scope() -> Scope {
    Scope {
        ovs_bridges: [dev("br-ex")].into(),
        frr_lines: vec!["router bgp 64999 vrf bgp-vrf".into()],
        ..Scope::default()
    }
}

fn flow(port: u32) -> OfFlow {
    OfFlow {
        cookie: 999,
        table: 0,
        priority: 900,
        matches: ["ip".to_string(), format!("in_port={port}")].into(),
        actions: "NORMAL".into(),
    }
}

#[tokio::test]
async fn what_a_view_asks_for_is_read_and_signalled_as_learned() {
    let dir = tempfile::tempdir().unwrap();
    let lane = CommandLane::start(config(dir.path(), OFCTL, VTYSH)).unwrap();
    let mut signals = lane.signals();
    let first = lane.view(&scope());
    assert!(first.frr.unknown, "{first:?}");
    assert_eq!(first.bridges_unknown, [dev("br-ex")].into());
    assert_eq!(lane.router_id(), None, "not read yet");

    signals.changed().await.unwrap();
    lane.settled().await;
    let signal = *signals.borrow();
    assert!(signal.learned && !signal.failed, "{signal:?}");
    let known = lane.view(&scope());
    assert!(known.is_complete(), "{known:?}");
    assert!(known.frr.has_our_config);
    assert_eq!(known.bridges[&dev("br-ex")].flows.len(), 1);
    assert_eq!(lane.router_id().as_deref(), Some("192.0.2.7"));

    // Known state is reused: no command runs for a second view.
    let runs = log(dir.path(), "ofctl").len();
    assert_eq!(lane.view(&scope()), known);
    assert_eq!(log(dir.path(), "ofctl").len(), runs);
    // Until something says the flows may have changed.
    lane.invalidate_flows();
    assert!(
        lane.drift_probe(&scope()).bridges.is_empty(),
        "a bridge not read since is no drift"
    );
    assert_eq!(lane.view(&scope()).bridges_unknown, [dev("br-ex")].into());
}

#[tokio::test]
async fn submitted_ops_run_in_order_and_what_they_touched_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let lane = CommandLane::start(config(dir.path(), OFCTL, VTYSH)).unwrap();
    lane.view(&scope());
    lane.settled().await;
    let before = log(dir.path(), "ofctl").len();

    lane.submit([
        Op::AddFlow {
            bridge: dev("br-ex"),
            flow: flow(5),
        },
        Op::DelFlow {
            bridge: dev("br-ex"),
            flow: flow(6),
        },
        Op::ApplyFrr {
            config: "router bgp 64999 vrf bgp-vrf\n".into(),
        },
    ]);
    // What the ops touch is unknown until they ran and it was read again.
    let during = lane.view(&scope());
    assert!(during.frr.unknown && !during.bridges_unknown.is_empty());
    lane.settled().await;

    let outcomes = lane.take_outcomes();
    assert_eq!(outcomes.len(), 3, "{outcomes:?}");
    assert!(outcomes.iter().all(|o| o.result.is_ok()), "{outcomes:?}");
    let runs = log(dir.path(), "ofctl")[before..].to_vec();
    assert!(runs[0].starts_with("add-flow br-ex"), "{runs:?}");
    assert!(runs[1].starts_with("--strict del-flows br-ex"), "{runs:?}");
    assert!(runs[2].starts_with("show br-ex"), "read again: {runs:?}");
    assert!(
        log(dir.path(), "vtysh")
            .iter()
            .any(|l| l.starts_with("-f ")),
        "{:?}",
        log(dir.path(), "vtysh")
    );
    assert!(lane.view(&scope()).is_complete());
    assert!(lane.take_outcomes().is_empty(), "taken once");
}

#[tokio::test]
async fn a_wedged_vtysh_is_unknown_at_once_and_a_failure_after_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let lane = CommandLane::start(config(dir.path(), OFCTL, WEDGED)).unwrap();
    let mut signals = lane.signals();
    let t = Instant::now();
    let v = lane.view(&scope());
    lane.submit([Op::ApplyFrr {
        config: "router bgp 64999 vrf bgp-vrf\n".into(),
    }]);
    assert!(t.elapsed() < AT_ONCE, "the view waited {:?}", t.elapsed());
    assert!(v.frr.unknown);

    // The apply and the read each meet the 1 s deadline; the lane says so.
    loop {
        signals.changed().await.unwrap();
        if signals.borrow().failed {
            break;
        }
    }
    lane.settled().await;
    let outcomes = lane.take_outcomes();
    assert_eq!(outcomes.len(), 1);
    let err = outcomes[0].result.as_ref().unwrap_err();
    assert!(err.contains("no answer within"), "{err}");
    // Still unknown, never "absent": nothing is planned on FRR from it.
    let v = lane.view(&scope());
    assert!(v.frr.unknown && !v.frr.has_our_config);
    // The bridges, read by a working ovs-ofctl, are known all the same.
    assert!(v.bridges.contains_key(&dev("br-ex")), "{v:?}");
}

#[test]
fn dropping_the_lane_kills_the_command_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), OFCTL, WEDGED);
    cfg.vtysh_timeout = Duration::from_secs(60);
    let lane = CommandLane::start(cfg).unwrap();
    lane.view(&scope());
    let pidfile = dir.path().join("vtysh.pid");
    let until = Instant::now() + Duration::from_secs(20);
    let pid: i32 = loop {
        let written = std::fs::read_to_string(&pidfile).unwrap_or_default();
        if let Ok(pid) = written.trim().parse() {
            break pid;
        }
        assert!(Instant::now() < until, "vtysh never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(lane);
    let until = Instant::now() + AT_ONCE;
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        let alive = stat
            .as_deref()
            .and_then(|s| s.rsplit_once(") "))
            .is_some_and(|(_, rest)| !rest.starts_with('Z'));
        if !alive {
            break;
        }
        assert!(Instant::now() < until, "vtysh {pid} outlived the lane");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `ovs-ofctl` keeping the flows it is given in a file, as OVS would.
fn stateful_ofctl(dir: &Path) -> String {
    let state = dir.join("flows");
    format!(
        r#"case "$1" in
  show) echo ' 5(patch-provnet-1-to-br-int): addr:aa:aa:aa:aa:aa:03' ;;
  add-flow) echo ' cookie=0x3e7, priority=900,ip,in_port=5 actions=NORMAL' >> {s} ;;
  --no-names) case "$*" in *cookie=0x3e7*) cat {s} 2>/dev/null ;; esac ;;
esac"#,
        s = state.display()
    )
}

#[tokio::test]
async fn a_bridge_is_never_read_while_an_op_on_it_is_queued() {
    let dir = tempfile::tempdir().unwrap();
    // A slow `vtysh -f`: the flow op queued behind it must still go first,
    // before the bridge it touches is read again.
    let slow_vtysh = format!("case \"$*\" in *-f*) sleep 1 ;; esac\n{VTYSH}");
    let mut cfg = config(dir.path(), &stateful_ofctl(dir.path()), &slow_vtysh);
    cfg.vtysh_timeout = Duration::from_secs(10);
    let lane = CommandLane::start(cfg).unwrap();
    lane.submit([Op::ApplyFrr {
        config: "router bgp 64999 vrf bgp-vrf\n".into(),
    }]);
    std::thread::sleep(Duration::from_millis(200));
    lane.submit([Op::AddFlow {
        bridge: dev("br-ex"),
        flow: flow(5),
    }]);
    lane.settled().await;
    let v = lane.view(&scope());
    assert!(v.is_complete(), "{v:?}");
    assert_eq!(
        v.bridges[&dev("br-ex")].flows.len(),
        1,
        "the read after the flow op sees it: {v:?}"
    );
}

/// `ovs-vsctl` keeping the ports it is given in a file (one `name ofport`
/// a line) and an `ovs-ofctl show` listing them, as OVS would.
fn stateful_ovs(dir: &Path) -> (String, String) {
    let ports = dir.join("ports");
    let vsctl = format!(
        r#"p={p}
touch $p
case "$*" in
  "--may-exist add-port "*) grep -q "^$4 " $p || echo "$4 $(( $(wc -l < $p) + 7 ))" >> $p ;;
  "--if-exists del-port "*) grep -v "^$4 " $p > $p.new; mv $p.new $p ;;
  *) echo "unexpected: $*" >&2; exit 1 ;;
esac"#,
        p = ports.display()
    );
    let ofctl = format!(
        r#"case "$1" in
  show) cat {p} 2>/dev/null | while read n o; do echo " $o($n): addr:aa:aa:aa:aa:aa:0$o"; done ;;
esac"#,
        p = ports.display()
    );
    (vsctl, ofctl)
}

fn port(name: &str, tag: Option<u16>, internal: bool) -> Op {
    Op::AddOvsPort(obgp_netmodel::OvsPort {
        bridge: dev("br-ex"),
        name: dev(name),
        tag,
        internal,
    })
}

#[tokio::test]
async fn port_ops_run_ovs_vsctl_and_the_bridge_is_read_again_with_the_ofport() {
    let dir = tempfile::tempdir().unwrap();
    let (vsctl, ofctl) = stateful_ovs(dir.path());
    let mut cfg = config(dir.path(), &ofctl, VTYSH);
    cfg.ovs_vsctl = script(dir.path(), "vsctl", &vsctl);
    let lane = CommandLane::start(cfg).unwrap();
    let scope = Scope {
        ovs_bridges: [dev("br-ex")].into(),
        ..Scope::default()
    };
    lane.view(&scope);
    lane.settled().await;
    assert!(lane.view(&scope).bridges[&dev("br-ex")].ports.is_empty());

    lane.submit([
        port("veth-ovs-1001", None, false),
        port("vlan-1002", Some(100), true),
    ]);
    assert_eq!(
        lane.view(&scope).bridges_unknown,
        [dev("br-ex")].into(),
        "unknown while the port ops are queued"
    );
    lane.settled().await;
    let outcomes = lane.take_outcomes();
    assert!(outcomes.iter().all(|o| o.result.is_ok()), "{outcomes:?}");
    assert_eq!(
        log(dir.path(), "vsctl"),
        [
            "--may-exist add-port br-ex veth-ovs-1001",
            "--may-exist add-port br-ex vlan-1002 -- set Port vlan-1002 tag=100 \
             -- set Interface vlan-1002 type=internal",
        ]
    );
    let v = lane.view(&scope);
    assert!(v.is_complete(), "{v:?}");
    let ports = &v.bridges[&dev("br-ex")].ports;
    assert_eq!(ports.get("veth-ovs-1001"), Some(&7), "{ports:?}");
    assert_eq!(ports.get("vlan-1002"), Some(&8), "{ports:?}");

    lane.submit([Op::DelOvsPort {
        bridge: dev("br-ex"),
        name: dev("veth-ovs-1001"),
    }]);
    lane.settled().await;
    assert!(lane.take_outcomes()[0].result.is_ok());
    assert_eq!(
        log(dir.path(), "vsctl").last().map(String::as_str),
        Some("--if-exists del-port br-ex veth-ovs-1001")
    );
    let ports = &lane.view(&scope).bridges[&dev("br-ex")].ports;
    assert!(!ports.contains_key("veth-ovs-1001"), "{ports:?}");
    assert!(ports.contains_key("vlan-1002"), "{ports:?}");
}

#[tokio::test]
async fn a_wedged_ovs_vsctl_is_killed_at_its_deadline_and_the_port_op_fails() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), OFCTL, VTYSH);
    cfg.ovs_vsctl = script(dir.path(), "vsctl", WEDGED);
    cfg.ovs_ofctl_timeout = Duration::from_millis(500);
    let lane = CommandLane::start(cfg).unwrap();
    let mut signals = lane.signals();
    let t = Instant::now();
    lane.submit([port("veth-ovs-1001", None, false)]);
    assert!(t.elapsed() < AT_ONCE, "submit waited {:?}", t.elapsed());
    loop {
        signals.changed().await.unwrap();
        if signals.borrow().failed {
            break;
        }
    }
    lane.settled().await;
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let outcomes = lane.take_outcomes();
    assert_eq!(outcomes.len(), 1);
    let err = outcomes[0].result.as_ref().unwrap_err();
    assert!(
        err.contains("ovs-vsctl --may-exist add-port br-ex veth-ovs-1001")
            && err.contains("no answer within"),
        "{err}"
    );
    // The stand-in was killed with its process group, not left sleeping.
    let pid: i32 = std::fs::read_to_string(dir.path().join("vsctl.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let until = Instant::now() + AT_ONCE;
    while std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, r)| !r.starts_with('Z')))
        .unwrap_or(false)
    {
        assert!(
            Instant::now() < until,
            "ovs-vsctl {pid} outlived its deadline"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `vtysh` whose running configuration is kept in `<dir>/running`: `-f`
/// applies a file by dropping the VRF stanzas its `no vrf` / `no router
/// bgp ... vrf` lines name, as FRR would for a del-vrf text.
fn stateful_vtysh(dir: &Path, running: &str) -> String {
    let state = dir.join("running");
    std::fs::write(&state, running).unwrap();
    format!(
        r#"s={s}
case "$*" in
  *running-config*) cat $s ;;
  *-f*)
    f=$(echo "$*" | sed 's/.*-f //')
    cp $f $s.applied
    for v in $(sed -n 's/^no vrf //p' $f); do
      awk -v v="$v" '$0 == "vrf " v || $0 ~ ("^router bgp [0-9]+ vrf " v "$") {{skip=1; next}} /^[^ ]/ {{skip=0}} !skip' $s > $s.new
      mv $s.new $s
    done ;;
esac"#,
        s = state.display()
    )
}

const EVPN_RUNNING: &str = "frr version 8.4\n!\nvrf vrf-1001\n vni 1001\nexit-vrf\n!\nrouter bgp 64999\n bgp router-id 192.0.2.1\nexit\n!\nrouter bgp 64999 vrf vrf-1001\n address-family l2vpn evpn\n  advertise ipv4 unicast\n exit-address-family\nexit\n!\n";

fn evpn_scope() -> Scope {
    Scope {
        evpn: true,
        ..Scope::default()
    }
}

#[tokio::test]
async fn an_evpn_scope_reads_frr_without_a_text_and_reports_its_evpn_vrfs() {
    let dir = tempfile::tempdir().unwrap();
    let vtysh = stateful_vtysh(dir.path(), EVPN_RUNNING);
    let lane = CommandLane::start(config(dir.path(), OFCTL, &vtysh)).unwrap();

    // Without a text and outside EVPN, FRR is not read at all.
    let v = lane.view(&Scope::default());
    assert!(v.is_complete() && v.frr.evpn_vrfs.is_empty(), "{v:?}");
    lane.settled().await;
    assert!(
        log(dir.path(), "vtysh").is_empty(),
        "{:?}",
        log(dir.path(), "vtysh")
    );

    let first = lane.view(&evpn_scope());
    assert!(first.frr.unknown, "not read yet: {first:?}");
    lane.settled().await;
    let v = lane.view(&evpn_scope());
    assert!(v.is_complete(), "{v:?}");
    assert_eq!(
        v.frr.evpn_vrfs.keys().copied().collect::<Vec<_>>(),
        [1001],
        "{v:?}"
    );
    assert_eq!(v.frr.evpn_vrfs[&1001].asn.as_deref(), Some("64999"));
    assert!(v.frr.has_our_config, "no lines of ours to lack");
    assert_eq!(
        log(dir.path(), "vtysh"),
        ["-c show running-config"],
        "one read"
    );

    // A scope with lines of ours reads them; the EVPN VRFs come with it,
    // and an EVPN scope without lines (our text known applied) takes that
    // read as it is, without running vtysh again.
    let ours = Scope {
        frr_lines: vec!["router bgp 64999 vrf bgp-vrf".into()],
        evpn: true,
        ..Scope::default()
    };
    lane.view(&ours);
    lane.settled().await;
    let v = lane.view(&ours);
    assert!(!v.frr.unknown && !v.frr.has_our_config, "{v:?}");
    assert!(v.frr.evpn_vrfs.contains_key(&1001), "{v:?}");
    let reads = log(dir.path(), "vtysh").len();
    let v = lane.view(&evpn_scope());
    assert!(
        v.is_complete() && v.frr.evpn_vrfs.contains_key(&1001),
        "{v:?}"
    );
    assert_eq!(log(dir.path(), "vtysh").len(), reads, "no read for it");
}

#[tokio::test]
async fn remove_frr_runs_vtysh_f_with_its_text_and_frr_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let vtysh = stateful_vtysh(dir.path(), EVPN_RUNNING);
    let lane = CommandLane::start(config(dir.path(), OFCTL, &vtysh)).unwrap();
    lane.view(&evpn_scope());
    lane.settled().await;
    assert!(lane.view(&evpn_scope()).frr.evpn_vrfs.contains_key(&1001));

    let removal = "\nno vrf vrf-1001\nno router bgp 64999 vrf vrf-1001\n".to_string();
    lane.submit([Op::RemoveFrr {
        config: removal.clone(),
    }]);
    let during = lane.view(&evpn_scope());
    assert!(during.frr.unknown, "unknown while the removal is queued");
    lane.settled().await;

    let outcomes = lane.take_outcomes();
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert!(outcomes[0].result.is_ok(), "{outcomes:?}");
    let runs = log(dir.path(), "vtysh");
    let applied = runs
        .iter()
        .position(|r| r.starts_with("-f "))
        .expect("vtysh -f ran");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("running.applied")).unwrap(),
        removal,
        "the file vtysh -f got holds the removal text"
    );
    assert!(
        runs[applied + 1..]
            .iter()
            .any(|r| r == "-c show running-config"),
        "read again after the removal: {runs:?}"
    );
    // The read after it is the lane's own: the next view knows at once.
    let reads = runs.len();
    let v = lane.view(&evpn_scope());
    assert!(v.is_complete(), "{v:?}");
    assert!(v.frr.evpn_vrfs.is_empty(), "{v:?}");
    assert_eq!(log(dir.path(), "vtysh").len(), reads);
}

/// The real vtysh, with no FRR daemon behind its socket: its dry run
/// (`--dryrun`, which needs no daemon) refuses a text with an unknown
/// command, and the outcome says so with FRR's message; a text it accepts
/// goes on to `vtysh -f`, which fails for want of daemons: a failure, not
/// a rejection.
#[tokio::test]
async fn a_text_frrs_parser_refuses_is_reported_rejected_with_frrs_message() {
    let dir = tempfile::tempdir().unwrap();
    let config = KernelConfig {
        vtysh: "vtysh".into(),
        vty_socket: Some(dir.path().to_path_buf()),
        vtysh_timeout: Duration::from_secs(10),
        frr_config_dir: dir.path().to_path_buf(),
        ..KernelConfig::default()
    };
    let lane = CommandLane::start(config).unwrap();
    let bad = "\nrouter bgp 64999\n  address-family l2vpn evpn\n    advertise-all-vnix\n  exit-address-family\n";
    let good = bad.replace("vnix", "vni");
    lane.submit([
        Op::ApplyFrr {
            config: bad.to_string(),
        },
        Op::ApplyFrr { config: good },
    ]);
    lane.settled().await;
    let outcomes = lane.take_outcomes();
    assert_eq!(outcomes.len(), 2, "{outcomes:?}");
    let err = outcomes[0].result.as_ref().expect_err("refused");
    assert!(outcomes[0].rejected, "{outcomes:?}");
    assert!(
        err.contains("line 4") && err.contains("advertise-all-vnix"),
        "FRR's message names the line: {err}"
    );
    assert!(outcomes[1].result.is_err(), "no daemon: {outcomes:?}");
    assert!(!outcomes[1].rejected, "{outcomes:?}");
}
