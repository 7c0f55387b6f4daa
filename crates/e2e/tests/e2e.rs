//! End to end: the real `ovn-bgp-agent` binary in a node namespace, real
//! OVN_Northbound and Open_vSwitch ovsdb-servers (ovs-vswitchd owning br-ex),
//! and a real FRR peer over eBGP. Needs root and the packages of `make deps`,
//! and the agent binary built (`cargo test --workspace` builds it).
//!
//! The full agent creates a vrf and a dummy device, which this CI kernel
//! lacks: those scenarios are `#[ignore = "vm tier: ..."]` and run in
//! `make test-vm` (one boot of a Debian kernel under QEMU). The plain tests
//! cover what this kernel can do: `plan`, which only reads.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use obgp_e2e::{demo_topology, Bench, BenchOptions, VRF_TABLE};
use serde_json::json;

/// Generous bounds: TCG makes every process spawn much slower
/// (docs/testbed.md, "VM tier").
const LEARN: Duration = Duration::from_secs(90);

const VM1: [&str; 2] = ["172.24.4.10/32", "2001:db8::10/128"];
const VM2: [&str; 2] = ["172.24.4.11/32", "2001:db8::11/128"];
const SUBNET: &str = "10.0.0.0/24";
const FIP: &str = "172.24.4.50/32";
/// The node router's base BGP config (the operator's frr.conf): the session to
/// the peer. The agent adds its VRF leaking on top.
const NODE_BASE_CONFIG: &str = "router bgp 64999
 bgp router-id 10.255.0.1
 no bgp ebgp-requires-policy
 neighbor 10.255.0.2 remote-as 65000
 neighbor 10.255.0.2 timers 1 3
 neighbor 10.255.0.2 timers connect 1
 address-family ipv4 unicast
  redistribute connected
 exit-address-family
 address-family ipv6 unicast
  neighbor 10.255.0.2 activate
  redistribute connected
 exit-address-family
";
const VM1_LSP: &str = "77777777-7777-4777-8777-777777777701";

fn where_we_run() -> String {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let tier = if obgp_testbed::vm::in_vm() {
        "the VM tier"
    } else {
        "the host (netns tier)"
    };
    format!("{tier}, kernel {}", kernel.trim())
}

fn step(t0: Instant, what: &str) {
    println!("e2e [{:6.1} s] {what}", t0.elapsed().as_secs_f64());
}

fn bench(tag: &str, extra_default: &str) -> Result<(tempfile::TempDir, Bench)> {
    obgp_e2e::demo_bench(tag, extra_default)
}

/// Whether `ip FAM rule` has a rule to `dst` (`ADDR` for a host, else `ADDR/LEN`).
fn has_rule_to(b: &Bench, fam: &str, dst: &str) -> Result<bool> {
    let host_len = if fam == "-6" { 128 } else { 32 };
    Ok(b.node_json(&[fam, "rule"])?.iter().any(|r| {
        let addr = r["dst"].as_str().unwrap_or("");
        let shown = match r["dstlen"].as_u64() {
            Some(len) if len < host_len => format!("{addr}/{len}"),
            _ => addr.to_string(),
        };
        shown == dst
    }))
}

fn table_routes(b: &Bench, fam: &str, table: u32) -> Result<Vec<String>> {
    Ok(
        b.node_json(&[fam, "route", "show", "table", &table.to_string()])?
            .iter()
            .filter_map(|r| r["dst"].as_str().map(str::to_string))
            .collect(),
    )
}

fn wait_node(what: &str, mut ok: impl FnMut() -> Result<bool>) -> Result<Duration> {
    let t = Instant::now();
    obgp_e2e::wait_for(what, LEARN, || Ok(ok()?.then_some(())))?;
    Ok(t.elapsed())
}

/// The daemon's per-reconcile log lines so far.
fn reconcile_lines(b: &obgp_e2e::Bench) -> Vec<String> {
    b.agent_log()
        .lines()
        .filter(|l| l.contains("reconciled reasons="))
        .map(str::to_string)
        .collect()
}

/// Waits for the daemon's first reconcile and returns its log line.
fn first_reconcile(b: &obgp_e2e::Bench) -> Result<String> {
    obgp_e2e::wait_for("the daemon's first reconcile", LEARN, || {
        Ok(reconcile_lines(b).into_iter().next())
    })
    .with_context(|| b.agent_log())
}

/// Watches the peer for `how_long`: every prefix of `before` must stay.
fn nothing_withdrawn_for(
    b: &obgp_e2e::Bench,
    before: &[String],
    how_long: Duration,
    during: &str,
) -> Result<()> {
    let watch = Instant::now();
    while watch.elapsed() < how_long {
        let now = b.peer_prefixes()?;
        let lost: Vec<_> = before.iter().filter(|p| !now.contains(p)).collect();
        ensure!(lost.is_empty(), "{during} withdrew {lost:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

#[test]
#[ignore = "vm tier: full agent needs vrf/dummy"]
fn agent_exposes_withdraws_repairs_and_survives_restarts_end_to_end() -> Result<()> {
    let t0 = Instant::now();
    println!("e2e: running in {}", where_we_run());
    let (_dir, mut b) = bench(
        "daemon",
        "reconcile_interval = 3\nfrr_reconcile_interval = 3",
    )?;
    step(
        t0,
        "bench up: NB + OVS ovsdb-servers, vswitchd br-ex, FRR node + peer Established",
    );

    // 0. an operator's `reconcile --once`: converges, the peer learns it all
    let t = Instant::now();
    b.agent_ok(&["reconcile", "--once"])?;
    ensure!(b.plan_op_count()? == 0, "second plan: {}", b.plan()?);
    let once: Vec<&str> = VM1
        .iter()
        .chain(VM2.iter())
        .copied()
        .chain([SUBNET, FIP, "172.24.4.100/32", "2001:db8::100/128"])
        .collect();
    b.wait_peer(&once, true, LEARN)?;
    step(
        t0,
        &format!(
            "reconcile --once exited 0, second plan empty, peer learned {once:?} ({:.1} s)",
            t.elapsed().as_secs_f64()
        ),
    );
    // The MAC-tweak flows (cookie 999, ip and ipv6) on the localnet's patch
    // port, whose long Neutron name only the OVS database has whole.
    let flows = b.flows("br-ex", 999)?;
    let mac_tweak = flows.lines().filter(|l| l.contains("cookie=0x3e7")).count();
    anyhow::ensure!(
        mac_tweak == 2,
        "expected the ip and ipv6 MAC-tweak flows on br-ex, got:\n{flows}"
    );
    step(t0, "cookie-999 MAC-tweak flows on br-ex: ip and ipv6");

    // 1. the daemon adopts that node state and keeps it exposed
    b.start_daemon()?;
    let first = first_reconcile(&b)?;
    ensure!(
        first.contains(" ops=0 "),
        "the daemon changed a node that reconcile --once had converged: {first}"
    );
    step(
        t0,
        "daemon started on the converged node: first reconcile applied 0 ops",
    );
    let addrs = b.bgp_nic_addrs()?;
    ensure!(
        addrs.contains(&"172.24.4.10/32".to_string()),
        "bgp-nic: {addrs:?}"
    );
    ensure!(
        addrs.contains(&"2001:db8::10/128".to_string()),
        "bgp-nic: {addrs:?}"
    );
    ensure!(
        !b.peer_prefixes()?.contains(&"172.24.4.12/32".to_string()),
        "vm3 is bound elsewhere"
    );
    let br_ex = b
        .table_of("br-ex")?
        .context("the agent wrote no br-ex entry to rt_tables")?;
    ensure!(has_rule_to(&b, "-4", "172.24.4.10")?, "no ip rule to vm1");
    ensure!(
        table_routes(&b, "-4", br_ex)?.contains(&"172.24.4.10".to_string()),
        "no vm1 route in br-ex's table"
    );
    ensure!(
        table_routes(&b, "-4", VRF_TABLE)?
            .iter()
            .any(|r| r == SUBNET),
        "no subnet route in the VRF table"
    );

    // 2. the port is deleted in OVN while the daemon runs: both withdrawn
    obgp_e2e::delete_provider_port(&b.nb, VM1_LSP)?;
    let took = b
        .wait_peer(&VM1, false, LEARN)
        .with_context(|| b.agent_log())?;
    step(
        t0,
        &format!(
            "vm1's LSP deleted in NB: peer withdrew {VM1:?} after {:.1} s",
            took.as_secs_f64()
        ),
    );
    let addrs = b.bgp_nic_addrs()?;
    ensure!(
        !addrs.iter().any(|a| a.starts_with("172.24.4.10/")),
        "bgp-nic still has vm1: {addrs:?}"
    );
    wait_node("vm1's rule to go", || {
        Ok(!has_rule_to(&b, "-4", "172.24.4.10")?)
    })?;
    ensure!(
        b.peer_prefixes()?.contains(&VM2[0].to_string()),
        "vm2 must stay"
    );

    // 3. unrelated rule, route and neighbour: never touched
    b.node_ip(&[
        "rule",
        "add",
        "to",
        "192.0.2.0/24",
        "lookup",
        "200",
        "pref",
        "1234",
    ])?;
    b.node_ip(&[
        "route",
        "add",
        "198.51.100.0/24",
        "via",
        "10.255.0.2",
        "table",
        "200",
    ])?;
    b.node_ip(&["route", "add", "203.0.113.0/24", "via", "10.255.0.2"])?;
    let veth = b.pair.node_if.clone();
    b.node_ip(&[
        "neigh",
        "add",
        "10.255.0.3",
        "lladdr",
        "02:00:00:00:00:03",
        "dev",
        &veth,
        "nud",
        "permanent",
    ])?;

    // 4. someone deletes the agent's rule and route for vm2: repaired
    b.node_ip(&[
        "rule",
        "del",
        "to",
        "172.24.4.11",
        "table",
        &br_ex.to_string(),
    ])?;
    b.node_ip(&["route", "del", "172.24.4.11", "table", &br_ex.to_string()])?;
    let took = wait_node("vm2's rule and route to be repaired", || {
        Ok(has_rule_to(&b, "-4", "172.24.4.11")?
            && table_routes(&b, "-4", br_ex)?.contains(&"172.24.4.11".to_string()))
    })
    .with_context(|| b.agent_log())?;
    step(
        t0,
        &format!(
            "vm2's rule and br-ex route deleted by hand: repaired after {:.1} s",
            took.as_secs_f64()
        ),
    );
    // 4b. someone deletes the agent's MAC-tweak flows: nothing notifies
    // that, so a periodic reconcile's background re-read of OVS finds the
    // drift and the reconcile it triggers puts them back
    b.del_flows("br-ex", 999)?;
    let took = wait_node("the cookie-999 flows to be repaired", || {
        Ok(b.flows("br-ex", 999)?
            .lines()
            .filter(|l| l.contains("cookie=0x3e7"))
            .count()
            == 2)
    })
    .with_context(|| b.agent_log())?;
    let drift = reconcile_lines(&b)
        .into_iter()
        .filter(|l| l.contains("OVS or FRR drifted"))
        .count();
    ensure!(
        drift > 0,
        "flows came back without a drift reconcile:\n{}",
        b.agent_log()
    );
    step(
        t0,
        &format!(
            "MAC-tweak flows deleted by hand: repaired after {:.1} s by a drift reconcile",
            took.as_secs_f64()
        ),
    );
    let mut touched = Vec::new();
    if !has_rule_to(&b, "-4", "192.0.2.0/24")? {
        touched.push("rule to 192.0.2.0/24 lookup 200");
    }
    if !table_routes(&b, "-4", 200)?.contains(&"198.51.100.0/24".to_string()) {
        touched.push("route 198.51.100.0/24 table 200");
    }
    if !b
        .node_ip(&["route", "show", "203.0.113.0/24"])?
        .contains("203.0.113.0/24")
    {
        touched.push("route 203.0.113.0/24 (main)");
    }
    if !b
        .node_ip(&["neigh", "show", "10.255.0.3", "dev", &veth])?
        .contains("02:00:00:00:00:03")
    {
        touched.push("neighbour 10.255.0.3");
    }
    ensure!(
        touched.is_empty(),
        "the agent removed unrelated objects: {touched:?}\nip rule:\n{}\nagent log (rules):\n{}",
        b.node_ip(&["rule"])?,
        b.agent_log()
            .lines()
            .filter(|l| l.contains("rule") || l.contains("192.0.2"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    step(
        t0,
        "unrelated rule, routes and neighbour untouched after the repair",
    );

    // 5. the agent is killed and restarted: no withdraw storm, empty plan
    let before = b.peer_prefixes()?;
    b.kill_daemon();
    b.start_daemon()?;
    nothing_withdrawn_for(&b, &before, Duration::from_secs(10), "the restart")?;
    let ops = b.plan_op_count()?;
    ensure!(ops == 0, "plan after restart: {}", b.plan()?);
    step(
        t0,
        "agent SIGKILLed and restarted: nothing withdrawn for 10 s, plan empty",
    );

    // 6. OVN_Northbound restarted, then a change: the agent resyncs
    b.nb.restart()?;
    b.nb.transact(&[json!({"op": "mutate", "table": "Logical_Switch_Port", "where": [["name", "==", "77777777-7777-4777-8777-777777777703"]],
        "mutations": [["options", "delete", ["set", ["requested-chassis"]]], ["external_ids", "delete", ["set", ["neutron:host_id"]]]]}),
        json!({"op": "mutate", "table": "Logical_Switch_Port", "where": [["name", "==", "77777777-7777-4777-8777-777777777703"]],
        "mutations": [["options", "insert", ["map", [["requested-chassis", "demo-node"]]]], ["external_ids", "insert", ["map", [["neutron:host_id", "demo-node"]]]]]})])?;
    let took = b
        .wait_peer(&["172.24.4.12/32"], true, LEARN)
        .with_context(|| b.agent_log())?;
    step(
        t0,
        &format!(
            "NB ovsdb-server restarted, vm3 moved here: peer learned it after {:.1} s",
            took.as_secs_f64()
        ),
    );

    // 7. FRR restarted without saved config: the agent's part is back within
    // frr_reconcile_interval (3 s here); the operator's base config (what
    // frr.conf would restore) is re-applied by hand, then the prefixes return
    b.pair.node.restart()?;
    let t = Instant::now();
    let base = b.dir().join("frr-base.conf");
    std::fs::write(&base, NODE_BASE_CONFIG)?;
    b.pair.node.vtysh_file(&base)?;
    wait_node("the agent's FRR config after the FRR restart", || {
        Ok(b.pair
            .node
            .vtysh("show running-config")?
            .contains("router bgp 64999 vrf bgp-vrf"))
    })
    .with_context(|| b.agent_log())?;
    let back = t.elapsed();
    let took = b.wait_peer(&VM2, true, LEARN)?;
    step(
        t0,
        &format!(
            "FRR restarted: the agent's vrf config back after {:.1} s, peer relearned vm2 {:.1} s later",
            back.as_secs_f64(),
            took.as_secs_f64()
        ),
    );

    b.stop_daemon()?;
    ensure!(
        b.peer_prefixes()?.contains(&VM2[0].to_string()),
        "SIGTERM must leave routes in place"
    );
    step(t0, "daemon stopped with SIGTERM; routes left in place");
    Ok(())
}

/// A node the Python agent wired is taken over without churn: its
/// artefacts (written by the command-line tools as upstream writes them,
/// rules with kernel-chosen priorities, an rt_tables line appended by hand)
/// are adopted as they are: the daemon's first reconcile writes nothing, the
/// peer withdraws nothing, the rules keep their priorities.
#[test]
#[ignore = "vm tier: full agent needs vrf/dummy"]
fn node_prepared_by_the_python_agent_is_adopted_without_churn() -> Result<()> {
    let t0 = Instant::now();
    println!("e2e: running in {}", where_we_run());
    let (_dir, mut b) = bench(
        "python",
        "reconcile_interval = 3\nfrr_reconcile_interval = 3",
    )?;
    step(
        t0,
        "bench up: NB + OVS ovsdb-servers, vswitchd br-ex, FRR pair",
    );

    let writes = b.prepare_like_python_agent()?;
    let exposed: Vec<&str> = VM1
        .iter()
        .chain(VM2.iter())
        .copied()
        .chain([SUBNET, FIP])
        .collect();
    b.wait_peer(&exposed, true, LEARN)?;
    let rules = |b: &obgp_e2e::Bench| -> Result<String> {
        Ok(format!(
            "{}{}",
            b.node_ip(&["rule"])?,
            b.node_ip(&["-6", "rule"])?
        ))
    };
    let rules_before = rules(&b)?;
    let peer_before = b.peer_prefixes()?;
    step(
        t0,
        &format!("node wired the Python agent's way ({writes} writes), peer learned {exposed:?}"),
    );

    b.start_daemon()?;
    let first = first_reconcile(&b)?;
    ensure!(
        first.contains(" ops=0 "),
        "the daemon rewrote a node the Python agent had wired: {first}\n{}",
        b.agent_log()
    );
    nothing_withdrawn_for(&b, &peer_before, Duration::from_secs(8), "taking over")?;
    let lines = reconcile_lines(&b);
    let busy: Vec<&String> = lines.iter().filter(|l| !l.contains(" ops=0 ")).collect();
    ensure!(busy.is_empty(), "reconciles that wrote: {busy:?}");
    let reconciles = lines.len();
    ensure!(
        reconciles >= 2,
        "expected the first and at least one periodic reconcile in 8 s, got {reconciles}"
    );
    ensure!(
        b.plan_op_count()? == 0,
        "plan after takeover: {}",
        b.plan()?
    );
    let rules_after = rules(&b)?;
    ensure!(
        rules_after == rules_before,
        "rules changed:\nbefore:\n{rules_before}\nafter:\n{rules_after}"
    );
    step(
        t0,
        &format!("daemon took over: {reconciles} reconciles, each 0 ops, nothing withdrawn for 8 s, rules and priorities unchanged, plan empty"),
    );
    b.stop_daemon()?;
    Ok(())
}

/// On any kernel: `plan` live against real ovsdb-servers and the node
/// namespace lists the full wiring and changes nothing.
#[test]
fn live_plan_reads_real_databases_and_changes_nothing() -> Result<()> {
    let t0 = Instant::now();
    println!("e2e: running in {}", where_we_run());
    let (_dir, b) = bench("plan", "")?;
    let links_before = b.node_ip(&["-br", "link"])?;
    let rules_before = b.node_ip(&["rule"])?;
    let plan = b.plan()?;
    step(t0, "live plan done");
    for needle in [
        "bgp-vrf",
        "bgp-nic",
        "172.24.4.10",
        "2001:db8::10",
        "172.24.4.11",
        "172.24.4.50",
        "10.0.0.0/24",
    ] {
        ensure!(plan.contains(needle), "plan lacks {needle}:\n{plan}");
    }
    ensure!(
        !plan.contains("172.24.4.12"),
        "vm3 is bound elsewhere:\n{plan}"
    );
    ensure!(b.plan_op_count()? > 0, "the JSON plan is empty");

    // explain, live: the same databases, the answers their rows call for.
    let vm1 = b.agent_ok(&["explain", "172.24.4.10"])?;
    ensure!(
        vm1.starts_with("172.24.4.10: exposed on this node")
            && vm1.contains("as provider-network VM port bound here")
            && vm1.contains("hostname demo-node"),
        "explain vm1:\n{vm1}"
    );
    let vm3 = b.agent_ok(&["explain", "--format", "json", "172.24.4.12"])?;
    let vm3: serde_json::Value = serde_json::from_str(&vm3).context("explain JSON")?;
    let finding = &vm3["findings"][0];
    ensure!(
        finding["verdict"] == "not_exposed"
            && finding["reason"] == "bound_elsewhere"
            && finding["chassis"][0] == "other-node",
        "explain vm3: {vm3:#}"
    );
    let fip = b.agent_ok(&["explain", "172.24.4.50"])?;
    ensure!(
        fip.contains("as floating IP (distributed) of a port bound here, FIP of 10.0.0.5"),
        "explain FIP:\n{fip}"
    );
    step(t0, "live explain done");
    ensure!(
        b.node_ip(&["-br", "link"])? == links_before,
        "plan changed the links"
    );
    ensure!(
        b.node_ip(&["rule"])? == rules_before,
        "plan changed the rules"
    );
    Ok(())
}

#[test]
#[ignore = "vm tier: full agent needs vrf/dummy"]
fn clustered_nb_losing_its_leader_resyncs_without_loss_or_duplicates() -> Result<()> {
    let t0 = Instant::now();
    println!("e2e: running in {}", where_we_run());
    let dir = tempfile::Builder::new()
        .prefix("obgp-e2e-raft-")
        .tempdir_in("/tmp")?;
    let mut b = Bench::start(
        dir.path(),
        &demo_topology()?,
        &BenchOptions {
            extra_default: "reconcile_interval = 3".into(),
            nb_cluster: true,
            ..BenchOptions::default()
        },
    )?;
    step(
        t0,
        &format!(
            "bench up, NB a 3-member RAFT cluster: {}",
            b.nb.connection()
        ),
    );
    b.start_daemon()?;
    let both: Vec<&str> = VM1.iter().chain(VM2.iter()).copied().collect();
    b.wait_peer(&both, true, LEARN)
        .with_context(|| b.agent_log())?;
    step(t0, "daemon exposed vm1 and vm2");

    let cluster = b.nb.cluster().context("clustered")?;
    let leader = cluster.leader()?;
    cluster.kill(leader);
    let new_leader = cluster.wait_leader(LEARN)?;
    step(
        t0,
        &format!("NB leader {leader} killed, member {new_leader} leads"),
    );

    obgp_e2e::delete_provider_port(&b.nb, VM1_LSP)?;
    let took = b
        .wait_peer(&VM1, false, LEARN)
        .with_context(|| b.agent_log())?;
    step(
        t0,
        &format!(
            "vm1 deleted through the new leader: withdrawn after {:.1} s",
            took.as_secs_f64()
        ),
    );
    ensure!(b.peer_prefixes()?.contains(&VM2[0].to_string()), "vm2 lost");
    let rules = b.node_ip(&["-4", "rule"])?;
    let vm2_rules = rules
        .lines()
        .filter(|l| l.contains("to 172.24.4.11 "))
        .count();
    ensure!(vm2_rules == 1, "vm2 has {vm2_rules} rules:\n{rules}");
    let addrs = b.bgp_nic_addrs()?;
    let mut dedup = addrs.clone();
    dedup.sort();
    dedup.dedup();
    ensure!(
        dedup.len() == addrs.len(),
        "duplicate bgp-nic addresses: {addrs:?}"
    );

    b.nb.cluster().context("clustered")?.revive(leader)?;
    ensure!(
        b.plan_op_count()? == 0,
        "plan after the leader came back: {}",
        b.plan()?
    );
    step(
        t0,
        "old leader revived: one rule per IP, no duplicate address, plan empty",
    );
    Ok(())
}

/// Any kernel, no root: the demo fixture stays what the demo promises.
/// `plan --ovn` reads the topology file (no database, an empty node) and
/// must expose exactly the IPs bound to `demo-node`.
#[test]
fn offline_plan_of_the_demo_topology_exposes_what_is_bound_here() -> Result<()> {
    let out = std::process::Command::new(obgp_e2e::agent_binary()?)
        .arg("--config-file")
        .arg(obgp_e2e::demo_dir().join("bgp-agent.conf"))
        .arg("plan")
        .arg("--ovn")
        .arg(obgp_e2e::demo_dir().join("topology.json"))
        .output()?;
    let plan = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success(),
        "plan --ovn failed: {plan}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "+ link bgp-vrf type vrf table 10",
        "+ address 172.24.4.10/32 dev bgp-nic",
        "+ address 2001:db8::10/128 dev bgp-nic",
        "+ address 172.24.4.11/32 dev bgp-nic",
        "+ address 2001:db8::11/128 dev bgp-nic",
        "+ address 172.24.4.100/32 dev bgp-nic",
        "+ address 172.24.4.50/32 dev bgp-nic",
        "+ route 10.0.0.0/24 via 172.24.4.100 dev bgp-nic",
    ] {
        ensure!(plan.contains(line), "plan lacks {line:?}:\n{plan}");
    }
    ensure!(
        !plan.contains("172.24.4.12") && !plan.contains("10.0.0.5"),
        "vm3 is bound elsewhere and the tenant VM is exposed by subnet:\n{plan}"
    );
    Ok(())
}
