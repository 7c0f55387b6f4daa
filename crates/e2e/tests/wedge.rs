//! A wedged bgpd against the real agent binary, real FRR and real OVN
//! databases (VM tier: the full agent needs vrf/dummy). A SIGSTOPped bgpd
//! accepts vtysh's connection and never answers, as a bgpd stuck in a
//! long table walk or a livelock does: the agent's netlink exposure goes
//! on, SIGTERM still stops it at once, `reconcile --once` returns naming
//! FRR, and once bgpd runs again the node converges with nothing lost. A
//! SIGSTOPped ovs-vswitchd (ovs-ofctl hangs on its management socket)
//! holds up no withdrawal either.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use obgp_e2e::{demo_topology, Bench, BenchOptions};
use serde_json::json;

/// Generous bounds: TCG makes every process spawn much slower.
const LEARN: Duration = Duration::from_secs(90);
/// The bench's vtysh deadline (`vtysh_timeout = 60` in its config): an
/// exposure or a stop that took this long waited for vtysh.
const VTYSH_DEADLINE: Duration = Duration::from_secs(60);
/// vm3 of the demo topology, bound to another chassis until moved here.
const VM3_LSP: &str = "77777777-7777-4777-8777-777777777703";
const VM3_IP: &str = "172.24.4.12/32";

/// SIGSTOPs a process; SIGCONTs it when dropped (also when the test fails).
struct Stopped(u32);

impl Stopped {
    fn new(pid: u32) -> Result<Stopped> {
        signal(pid, "-STOP")?;
        Ok(Stopped(pid))
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = signal(self.0, "-CONT");
    }
}

fn signal(pid: u32, sig: &str) -> Result<()> {
    let ok = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()?
        .success();
    ensure!(ok, "kill {sig} {pid} failed");
    Ok(())
}

fn move_vm3_here(b: &Bench) -> Result<()> {
    bind_vm3(b, "demo-node")
}

fn bind_vm3(b: &Bench, chassis: &str) -> Result<()> {
    let lsp = json!([["name", "==", VM3_LSP]]);
    b.nb.transact(&[
        json!({"op": "mutate", "table": "Logical_Switch_Port", "where": lsp,
            "mutations": [["options", "delete", ["set", ["requested-chassis"]]],
                          ["external_ids", "delete", ["set", ["neutron:host_id"]]]]}),
        json!({"op": "mutate", "table": "Logical_Switch_Port", "where": lsp,
            "mutations": [["options", "insert", ["map", [["requested-chassis", chassis]]]],
                          ["external_ids", "insert", ["map", [["neutron:host_id", chassis]]]]]}),
    ])?;
    Ok(())
}

fn step(t0: Instant, what: &str) {
    println!("wedge [{:6.1} s] {what}", t0.elapsed().as_secs_f64());
}

#[test]
#[ignore = "vm tier: full agent needs vrf/dummy"]
fn a_wedged_bgpd_or_vswitchd_stalls_neither_exposure_nor_shutdown_and_once_names_it() -> Result<()>
{
    let t0 = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("obgp-e2e-wedge-")
        .tempdir_in("/tmp")?;
    let mut b = Bench::start(
        dir.path(),
        &demo_topology()?,
        &BenchOptions {
            extra_default: "reconcile_interval = 3\nfrr_reconcile_interval = 3".into(),
            ..BenchOptions::default()
        },
    )?;
    b.agent_ok(&["reconcile", "--once"])?;
    let before = b.bgp_nic_addrs()?;
    ensure!(!before.contains(&VM3_IP.to_string()), "{before:?}");
    step(t0, "bench up, node converged with a healthy FRR");

    let bgpd = b.pair.node.pid_of("bgpd").context("the node's bgpd")?;
    let wedge = Stopped::new(bgpd)?;
    step(t0, "bgpd SIGSTOPped: vtysh connects and never hears back");

    // 1. Started while FRR is wedged: a VM moved here is exposed on the
    //    node long before one vtysh deadline has passed.
    b.start_daemon()?;
    let t = Instant::now();
    move_vm3_here(&b)?;
    obgp_e2e::wait_for("vm3 on bgp-nic", LEARN, || {
        Ok(b.bgp_nic_addrs()?
            .contains(&VM3_IP.to_string())
            .then_some(()))
    })
    .with_context(|| b.agent_log())?;
    let took = t.elapsed();
    ensure!(
        took < VTYSH_DEADLINE / 2,
        "vm3 exposed after {took:?}: the netlink side waited for vtysh\n{}",
        b.agent_log()
    );
    for kept in &before {
        ensure!(
            b.bgp_nic_addrs()?.contains(kept),
            "{kept} was withdrawn while FRR was wedged"
        );
    }
    step(
        t0,
        &format!("daemon started on a wedged FRR: vm3 exposed after {took:?}, nothing withdrawn"),
    );

    // 2. SIGTERM while vtysh is wedged: the agent exits without waiting
    //    for the command (the command lane kills it).
    let stopped_in = b.stop_daemon()?;
    ensure!(
        stopped_in < Duration::from_secs(10),
        "SIGTERM took {stopped_in:?} while vtysh was wedged\n{}",
        b.agent_log()
    );
    step(
        t0,
        &format!("SIGTERM with vtysh wedged: exited in {stopped_in:?}"),
    );

    // 3. `reconcile --once` returns, non-zero, naming what it could not read.
    let out = b
        .agent_command(&["reconcile", "--once"])
        .env("OVN_BGP_AGENT_DEFAULT__VTYSH_TIMEOUT", "10")
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(!out.status.success(), "exit 0 on a wedged FRR:\n{stderr}");
    ensure!(
        stderr.contains("FRR's running configuration could not be read"),
        "{stderr}"
    );
    step(t0, "reconcile --once on a wedged FRR: non-zero, names FRR");

    // 4. bgpd runs again: the daemon converges and the peer learns vm3.
    drop(wedge);
    b.start_daemon()?;
    let took = b
        .wait_peer(&[VM3_IP], true, LEARN)
        .with_context(|| b.agent_log())?;
    obgp_e2e::wait_for("an empty plan", LEARN, || {
        Ok((b.plan_op_count()? == 0).then_some(()))
    })
    .with_context(|| b.plan().unwrap_or_default())?;
    step(
        t0,
        &format!("bgpd continued: peer learned vm3 after {took:?}, plan empty"),
    );

    // 5. ovs-vswitchd stopped, then a local OVS change (the flows must be
    //    read again) and vm3 moving away: withdrawn on the node at once.
    let vswitchd = b.vswitchd_pid().context("the bench's ovs-vswitchd")?;
    let frozen = Stopped::new(vswitchd)?;
    b.ovs.transact(
        &[json!({"op": "mutate", "table": "Open_vSwitch", "where": [],
        "mutations": [["external_ids", "insert", ["map", [["obgp-wedge-test", "1"]]]]]})],
    )?;
    let t = Instant::now();
    bind_vm3(&b, "other-node")?;
    obgp_e2e::wait_for("vm3 off bgp-nic", LEARN, || {
        Ok((!b.bgp_nic_addrs()?.contains(&VM3_IP.to_string())).then_some(()))
    })
    .with_context(|| b.agent_log())?;
    let took = t.elapsed();
    ensure!(
        took < VTYSH_DEADLINE / 2,
        "vm3 withdrawn after {took:?} with ovs-vswitchd stopped: the netlink side waited for ovs-ofctl\n{}",
        b.agent_log()
    );
    let stopped_in = b.stop_daemon()?;
    ensure!(
        stopped_in < Duration::from_secs(10),
        "SIGTERM took {stopped_in:?} with ovs-vswitchd stopped"
    );
    drop(frozen);
    step(
        t0,
        &format!("ovs-vswitchd SIGSTOPped: vm3 withdrawn after {took:?}, SIGTERM exited in {stopped_in:?}"),
    );
    Ok(())
}
