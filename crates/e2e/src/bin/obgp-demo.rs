//! `obgp-demo`: the agent's main job on the built-in demo topology
//! (`fixtures/demo`), end to end: throwaway OVN_Northbound and Open_vSwitch
//! ovsdb-servers, ovs-vswitchd owning br-ex in a node namespace, FRR on the
//! node with an eBGP peer, then the real `ovn-bgp-agent` run in the node
//! namespace (`plan`, `reconcile --once`, `plan`), and what the node and the
//! peer show afterwards. Everything is removed at the end.
//!
//! On a kernel without vrf/dummy devices it runs itself inside the VM tier
//! (`obgp-vm`'s Debian kernel under QEMU) and says so.
//!
//! ```text
//! obgp-demo              run here, or in the VM if this kernel cannot
//! obgp-demo --inside-vm  (used by the above) run here, never boot a VM
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use obgp_e2e::{demo_topology, kernel_has_vrf_and_dummy, Bench, BenchOptions, VRF_TABLE};
use obgp_testbed::vm::{self, Vm, VmOptions};
use serde_json::Value;

/// What the peer must learn from the demo topology, and what it must not.
const EXPECTED: &[(&str, &str)] = &[
    ("172.24.4.10/32", "vm1 on the provider network, bound here"),
    ("2001:db8::10/128", "vm1 (IPv6)"),
    ("172.24.4.11/32", "vm2 on the provider network, bound here"),
    ("2001:db8::11/128", "vm2 (IPv6)"),
    ("172.24.4.100/32", "router1's gateway port, hosted here"),
    ("2001:db8::100/128", "router1's gateway port (IPv6)"),
    ("172.24.4.50/32", "the floating IP of tenant VM 10.0.0.5"),
    (
        "10.0.0.0/24",
        "the tenant subnet behind router1 (subnet method)",
    ),
];
const NOT_EXPECTED: &[(&str, &str)] = &[("172.24.4.12/32", "vm3, bound to other-node")];

fn main() -> ExitCode {
    let inside_vm = std::env::args().any(|a| a == "--inside-vm");
    // Ctrl-C stops the demo's waits with an error instead of killing it, so
    // the bench (namespaces, servers, FRR) is dropped and removed.
    obgp_e2e::interrupt::catch_interrupts();
    let result = real_main(inside_vm);
    if let Some(signal) = obgp_e2e::interrupt::interrupted() {
        eprintln!(
            "obgp-demo: interrupted (signal {signal}); everything it started has been removed"
        );
        return ExitCode::from(128 + signal as u8);
    }
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("obgp-demo: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn real_main(inside_vm: bool) -> Result<ExitCode> {
    if !inside_vm && !kernel_has_vrf_and_dummy() {
        return run_in_vm();
    }
    demo(inside_vm)
}

fn run_in_vm() -> Result<ExitCode> {
    println!(
        "obgp-demo: this kernel ({}) has no vrf/dummy devices, which the agent creates\n\
         (bgp-vrf, bgp-nic): running the demo inside the VM tier instead\n\
         (Debian's kernel under QEMU, the host's / shared read-only; boot ~15 s, TCG is slow).",
        kernel_release()
    );
    let started = Instant::now();
    let vm = Vm::build(&vm::default_dir()).context("preparing the VM tier (obgp-vm build)")?;
    let exe = std::env::current_exe()?;
    let exe = exe.to_string_lossy().into_owned();
    let mut opts = VmOptions {
        echo: false,
        timeout: Duration::from_secs(600),
        ..VmOptions::default()
    };
    opts.cwd = std::env::current_dir().ok();
    let run = vm.run_with(&[&exe, "--inside-vm"], &opts)?;
    print!("{}", run.command_output());
    println!(
        "obgp-demo: VM finished with status {} after {:.1} s (kernel {}, guest ready after {:.1} s)",
        run.code,
        started.elapsed().as_secs_f64(),
        vm.kernel_version(),
        run.guest_ready.unwrap_or(0.0)
    );
    if !run.success() && run.command_output().trim().is_empty() {
        eprintln!("--- guest console ---\n{}", run.console);
    }
    Ok(if run.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The agent's log without terminal colour sequences (`ESC [ ... m`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

fn section(title: &str) {
    println!("\n=== {title}");
}

fn indent(text: &str) {
    for l in text.lines() {
        println!("  {l}");
    }
}

fn demo(inside_vm: bool) -> Result<ExitCode> {
    let total = Instant::now();
    let where_ = if inside_vm {
        "in the VM tier"
    } else {
        "on this host"
    };
    println!("obgp-demo: running {where_}, kernel {}", kernel_release());
    let topology = demo_topology()?;
    let dir = tempfile::Builder::new()
        .prefix("obgp-demo-")
        .tempdir_in("/tmp")?;

    section("demo topology (fixtures/demo/topology.json)");
    print_topology(&topology);

    section("starting the bench");
    let t = Instant::now();
    let bench = Bench::start(dir.path(), &topology, &BenchOptions::default())?;
    println!(
        "  OVN_Northbound ovsdb-server  {}\n  Open_vSwitch ovsdb-server    {}  (+ ovs-vswitchd, netdev datapath, owning br-ex)\n  \
         node namespace              {}  (FRR zebra+bgpd, AS 64999, 10.255.0.1)\n  \
         peer namespace              {}  (FRR, AS 65000, 10.255.0.2; eBGP Established)\n  \
         ready in {:.1} s",
        bench.nb.connection(),
        bench.ovs.unix_remote(),
        bench.node_netns(),
        bench.pair.peer_netns(),
        t.elapsed().as_secs_f64()
    );
    println!(
        "  the agent runs as:\n    {}",
        bench.agent_command_line(&["<command>"])
    );

    section("ovn-bgp-agent plan   (what it would do; changes nothing)");
    let t = Instant::now();
    indent(&bench.plan()?);
    println!("  ({:.1} s)", t.elapsed().as_secs_f64());

    reconcile_once(&bench)?;

    section("ovn-bgp-agent plan   (again: must be empty)");
    let again = bench.plan()?;
    indent(&again);
    let left = bench.plan_op_count()?;

    section("what the node shows");
    print_node(&bench)?;

    section("what the peer (the fabric) learned: show bgp ipv4/ipv6 unicast");
    let waited = bench.wait_peer(
        &EXPECTED.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        true,
        Duration::from_secs(60),
    );
    print_peer(&bench)?;
    let have = bench.peer_prefixes()?;
    println!();
    let prefixes_ok = check_prefixes(&have);
    let ok = left == 0 && waited.is_ok() && prefixes_ok;

    drop(bench);
    println!(
        "\nobgp-demo: {} ({where_}, {:.1} s); everything stopped and removed",
        if ok {
            "OK: the fabric learned every prefix bound here and none bound elsewhere; second plan empty"
        } else {
            "FAILED"
        },
        total.elapsed().as_secs_f64()
    );
    if let Err(e) = waited {
        eprintln!("obgp-demo: {e:#}");
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Runs `ovn-bgp-agent reconcile --once` on the bench node and prints its
/// log, less the one line per applied op (they repeat the plan shown).
fn reconcile_once(bench: &Bench) -> Result<()> {
    section("ovn-bgp-agent reconcile --once");
    let t = Instant::now();
    let out = bench.agent(&["reconcile", "--once"])?;
    // Its log (stdout or stderr, per the logging setup) has one INFO line
    // per applied op: the plan above.
    let log = strip_ansi(&format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ));
    let applied = log.lines().filter(|l| l.contains("applied op=")).count();
    indent(
        &log.lines()
            .filter(|l| !l.contains("applied op="))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    println!("  ({applied} log lines `applied op=...` left out: they are the plan above)");
    println!(
        "  (exit {}, {:.1} s)",
        out.status.code().unwrap_or(-1),
        t.elapsed().as_secs_f64()
    );
    if !out.status.success() {
        bail!("reconcile --once failed");
    }
    Ok(())
}

/// Prints, for every prefix the demo expects the fabric to learn and every
/// one it must not, whether the peer has it; true when all are as expected.
fn check_prefixes(have: &[String]) -> bool {
    let mut ok = true;
    for (p, why) in EXPECTED {
        let yes = have.iter().any(|h| h == p);
        ok &= yes;
        println!(
            "  {} {p:<18} {why}",
            if yes { "learned    " } else { "MISSING    " }
        );
    }
    for (p, why) in NOT_EXPECTED {
        let yes = have.iter().any(|h| h == p);
        ok &= !yes;
        println!(
            "  {} {p:<18} {why}",
            if yes { "UNEXPECTED " } else { "not learned" }
        );
    }
    ok
}

fn map(v: &Value, key: &str) -> Option<String> {
    v.get(1)?.as_array()?.iter().find_map(|kv| {
        (kv.get(0)?.as_str()? == key)
            .then(|| kv.get(1)?.as_str().map(str::to_string))
            .flatten()
    })
}

fn print_topology(topology: &Value) {
    let nb = &topology["OVN_Northbound"];
    let ovs = topology["Open_vSwitch"]["Open_vSwitch"]
        .as_object()
        .and_then(|o| o.values().next().cloned())
        .unwrap_or_default();
    println!(
        "  this node: hostname {}, system-id {}, bridge mappings {}",
        map(&ovs["external_ids"], "hostname").unwrap_or_default(),
        map(&ovs["external_ids"], "system-id").unwrap_or_default(),
        map(&ovs["external_ids"], "ovn-bridge-mappings").unwrap_or_default()
    );
    let mut lines = Vec::new();
    if let Some(ports) = nb["Logical_Switch_Port"].as_object() {
        for p in ports.values() {
            let owner = map(&p["external_ids"], "neutron:device_owner").unwrap_or_default();
            let kind = p["type"].as_str().unwrap_or("");
            if kind == "localnet" {
                lines.push(format!(
                    "localnet port of physnet1 ({})",
                    p["name"].as_str().unwrap_or("")
                ));
            } else if owner.starts_with("compute:") {
                let fip = map(&p["external_ids"], "neutron:port_fip")
                    .map(|f| format!(", floating IP {f}"))
                    .unwrap_or_default();
                lines.push(format!(
                    "VM port {:<32} on {}{fip}",
                    p["addresses"].as_str().unwrap_or(""),
                    map(&p["options"], "requested-chassis").unwrap_or_default()
                ));
            } else if owner == "network:router_gateway" {
                lines.push(format!(
                    "router1 gateway {} (hosting-chassis: this node)",
                    map(&p["external_ids"], "neutron:cidrs").unwrap_or_default()
                ));
            } else if owner == "network:router_interface" {
                lines.push(format!(
                    "router1 interface {} (tenant subnet, expose_tenant_networks, subnet method)",
                    map(&p["external_ids"], "neutron:cidrs").unwrap_or_default()
                ));
            }
        }
    }
    lines.sort();
    for l in lines {
        println!("  {l}");
    }
}

fn print_node(bench: &Bench) -> Result<()> {
    let ns = bench.node_netns();
    println!("  $ ip -br addr show dev bgp-nic            (exposed IPs)");
    indent(&bench.node_ip(&["-br", "addr", "show", "dev", "bgp-nic"])?);
    println!("  $ ip -d link show bgp-vrf | grep vrf");
    let vrf = bench.node_ip(&["-d", "link", "show", "bgp-vrf"])?;
    indent(
        &vrf.lines()
            .filter(|l| l.contains("vrf"))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    for fam in ["-4", "-6"] {
        println!("  $ ip {fam} rule");
        indent(&bench.node_ip(&[fam, "rule"])?);
    }
    let br_ex = bench.table_of("br-ex")?;
    match br_ex {
        Some(t) => {
            let t = t.to_string();
            for fam in ["-4", "-6"] {
                println!("  $ ip {fam} route show table {t}      (br-ex's table, from the agent's rt_tables entry)");
                indent(&bench.node_ip(&[fam, "route", "show", "table", &t])?);
            }
        }
        None => println!("  (no br-ex entry in the agent's rt_tables file)"),
    }
    let vrf_table = VRF_TABLE.to_string();
    for fam in ["-4", "-6"] {
        println!("  $ ip {fam} route show table {vrf_table}      (the VRF's table)");
        indent(&bench.node_ip(&[fam, "route", "show", "table", &vrf_table])?);
    }
    println!("  $ ip neigh show dev br-ex nud permanent");
    indent(&bench.node_ip(&["neigh", "show", "dev", "br-ex", "nud", "permanent"])?);
    println!("  $ ovs-ofctl dump-flows br-ex cookie=999/-1   (MAC-tweak flows)");
    let flows = bench.flows("br-ex", 999)?;
    if flows.trim().is_empty() {
        println!("  (none: see the plan's `skipped` lines)");
    }
    indent(&flows);
    println!("  $ vtysh -c 'show running-config'   (node FRR, namespace {ns})");
    let conf = bench.pair.node.vtysh("show running-config")?;
    indent(
        &conf
            .lines()
            .filter(|l| {
                !l.trim().is_empty()
                    && !l.starts_with("Building")
                    && !l.starts_with("Current configuration")
            })
            .collect::<Vec<_>>()
            .join("\n"),
    );
    Ok(())
}

fn print_peer(bench: &Bench) -> Result<()> {
    println!("  {:<20} {:<16} AS path", "prefix", "next hop");
    for v in [
        bench.pair.peer.show_bgp_json()?,
        bench.pair.peer.show_bgp_ipv6_json()?,
    ] {
        let Some(routes) = v.get("routes").and_then(Value::as_object) else {
            continue;
        };
        for (prefix, paths) in routes {
            let best = paths
                .as_array()
                .and_then(|a| {
                    a.iter()
                        .find(|p| p["bestpath"] == true)
                        .or_else(|| a.first())
                })
                .cloned()
                .unwrap_or_default();
            let nh = best["nexthops"]
                .get(0)
                .and_then(|n| n["ip"].as_str())
                .unwrap_or("?");
            let path = best["path"].as_str().unwrap_or("");
            let path = if path.is_empty() { "(local)" } else { path };
            // The node's base config (FrrPair: `redistribute connected` in
            // the default VRF) also announces the veth and br-ex addresses.
            let note = if EXPECTED.iter().any(|(p, _)| p == prefix) {
                ""
            } else {
                "   (node's own redistribute connected, not the agent's VRF)"
            };
            println!("  {prefix:<20} {nh:<16} {path}{note}");
        }
    }
    Ok(())
}
