//! `explain`'s fabric side against real FRR (netns tier): the demo bench's
//! daemon announces through the node's FRR to its eBGP peer, and `explain
//! IP` ends with what FRR on this node holds and sent. Each case is one a
//! "the node holds it, why does the fabric not see it?" question lands on
//! (docs/troubleshooting.md):
//! - announced: in the default table, sent to the peer (Established);
//! - the peer's inbound policy drops one: FRR still sent it, and the
//!   answer says what it reports (FRR's own record); the peer lacks it;
//! - an outbound prefix-list on the node: FRR holds it but did not send it
//!   to that established peer;
//! - a wedged bgpd: the answer comes within its deadlines, "unknown", and
//!   the daemon's `status` says the sessions are unknown, with why.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use obgp_e2e::Bench;

const WAIT: Duration = Duration::from_secs(60);
const VM1: &str = "172.24.4.10";
const VM2: &str = "172.24.4.11";
const AGENT_PORT: u16 = 19477;

/// The daemon's `/status` as JSON.
fn status(b: &Bench) -> Result<serde_json::Value> {
    let (code, body) = b.http_get(&format!("http://127.0.0.1:{AGENT_PORT}/status"))?;
    ensure!(code == 200, "/status {code}: {body}");
    Ok(serde_json::from_str(&body)?)
}

fn explain(b: &Bench, ip: &str) -> Result<String> {
    b.agent_ok(&["explain", ip])
}

fn fabric_line(answer: &str) -> Result<&str> {
    answer
        .lines()
        .find(|l| l.starts_with("FRR: "))
        .with_context(|| format!("no FRR line in:\n{answer}"))
}

/// SIGSTOPs a process; SIGCONTs it when dropped (also when the test fails).
struct Stopped(u32);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-CONT", &self.0.to_string()])
            .status();
    }
}

#[test]
fn explain_ends_with_what_frr_holds_and_which_peers_it_was_sent_to() -> Result<()> {
    let t0 = Instant::now();
    let (_dir, mut b) = obgp_e2e::demo_bench(
        "fabric",
        &format!("vtysh_timeout = 3\nfrr_reconcile_interval = 2\nmetrics_listen = 127.0.0.1:{AGENT_PORT}"),
    )?;
    b.start_daemon()?;
    b.wait_peer(&["172.24.4.10/32", "172.24.4.11/32"], true, WAIT)
        .with_context(|| b.agent_log())?;

    let answer = explain(&b, VM1)?;
    let line = fabric_line(&answer)?;
    ensure!(
        line.starts_with(
            "FRR: 172.24.4.10/32 is in the default table; announced to 10.255.0.2 (Established"
        ) && !line.contains("not to"),
        "{answer}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&b.agent_ok(&["explain", "--format", "json", VM1])?)?;
    ensure!(
        json["fabric"][0]["frr"] == "in_table"
            && json["fabric"][0]["advertised"][0]["peer"] == "10.255.0.2"
            && json["findings"][0]["verdict"] == "exposed",
        "{json:#}"
    );
    println!(
        "fabric [{:5.1} s] announced: {line}",
        t0.elapsed().as_secs_f64()
    );
    // status, live, gives each exposure the same: in FRR's table, sent
    // to the peer.
    let frr_of = |b: &Bench, prefix: &str| -> Result<serde_json::Value> {
        let s: serde_json::Value =
            serde_json::from_str(&b.agent_ok(&["status", "--format", "json"])?)?;
        let e = s["exposed"]
            .as_array()
            .and_then(|all| all.iter().find(|e| e["prefix"] == prefix))
            .with_context(|| format!("{prefix} not in status: {s:#}"))?;
        Ok(e["frr"].clone())
    };
    let frr = frr_of(&b, "172.24.4.10/32")?;
    ensure!(
        frr["in_table"] == true && frr["announced_to"] == serde_json::json!(["10.255.0.2"]),
        "{frr:#}"
    );

    // The peer drops VM2 on the way in: FRR here still sent it. The
    // answer is FRR's record on this node; the peer's table shows the rest.
    b.pair.peer.vtysh(
        "conf t\nip prefix-list obgp-in seq 5 deny 172.24.4.11/32\nip prefix-list obgp-in seq 10 permit 0.0.0.0/0 le 32\nrouter bgp 65000\naddress-family ipv4 unicast\nneighbor 10.255.0.1 prefix-list obgp-in in",
    )?;
    b.pair
        .peer
        .vtysh("clear bgp ipv4 unicast 10.255.0.1 soft in")?;
    b.wait_peer(&["172.24.4.11/32"], false, WAIT)?;
    let answer = explain(&b, VM2)?;
    ensure!(
        fabric_line(&answer)?.contains("announced to 10.255.0.2 (Established"),
        "sent, whatever the peer did with it:\n{answer}"
    );
    println!("fabric [{:5.1} s] the peer's inbound filter: FRR's record still says sent, the peer lacks it", t0.elapsed().as_secs_f64());

    // An outbound prefix-list on the node holds VM1 back from the peer.
    b.pair.node.vtysh(
        "conf t\nip prefix-list obgp-out seq 5 deny 172.24.4.10/32\nip prefix-list obgp-out seq 10 permit 0.0.0.0/0 le 32\nrouter bgp 64999\naddress-family ipv4 unicast\nneighbor 10.255.0.2 prefix-list obgp-out out",
    )?;
    b.pair
        .node
        .vtysh("clear bgp ipv4 unicast 10.255.0.2 soft out")?;
    b.wait_peer(&["172.24.4.10/32"], false, WAIT)?;
    let answer = explain(&b, VM1)?;
    let line = fabric_line(&answer)?;
    ensure!(
        line.contains("announced to no peer")
            && line.contains("not to 10.255.0.2 (Established")
            && line.contains("held it back from an established peer"),
        "{answer}"
    );
    let frr = frr_of(&b, "172.24.4.10/32")?;
    ensure!(
        frr["in_table"] == true && frr["announced_to"] == serde_json::json!([]),
        "status: held back from the peer: {frr:#}"
    );
    let status_text = b.agent_ok(&["status"])?;
    ensure!(
        status_text.contains("FRR's tables read in")
            && status_text.contains("FRR in its table, announced to no peer"),
        "{status_text}"
    );
    println!(
        "fabric [{:5.1} s] the node's outbound filter: {line}",
        t0.elapsed().as_secs_f64()
    );

    // A wedged bgpd: the answer still comes, within the deadline, unknown.
    let bgpd = b.pair.node.pid_of("bgpd").context("the node's bgpd")?;
    ensure!(std::process::Command::new("kill")
        .args(["-STOP", &bgpd.to_string()])
        .status()?
        .success());
    let stopped = Stopped(bgpd);
    let asked = Instant::now();
    let answer = explain(&b, VM1)?;
    let took = asked.elapsed();
    // The daemon's next read of the sessions passes its deadline too:
    // `status` says unknown, with why, rather than "down".
    let wedged = obgp_e2e::wait_for("status: the sessions unknown", WAIT, || {
        let s = status(&b)?;
        let sessions = &s["health"]["bgp_sessions"];
        Ok((sessions["sessions"].is_null()
            && sessions["error"]
                .as_str()
                .is_some_and(|e| e.contains("no answer within 3s")))
        .then_some(s))
    })?;
    drop(stopped);
    let line = fabric_line(&answer)?;
    ensure!(
        line.starts_with("FRR: 172.24.4.10/32: unknown, FRR could not be read:")
            && line.contains("no answer within 3s"),
        "{answer}"
    );
    ensure!(
        answer.starts_with("172.24.4.10: exposed on this node"),
        "the OVN side is answered whatever FRR does:\n{answer}"
    );
    println!(
        "fabric [{:5.1} s] a wedged bgpd: answered in {:.1} s (vtysh_timeout 3 s): {line}; status: {}",
        t0.elapsed().as_secs_f64(),
        took.as_secs_f64(),
        wedged["health"]["bgp_sessions"]["error"]
    );
    b.stop_daemon()?;
    Ok(())
}

/// A text FRR's parser refuses through the daemon: `bgp_AS = 1.10` is
/// asdot, which the agent's configuration accepts and FRR 8.4 does not
/// (asdot came with FRR 9.1). The dry run refuses the VRF-leak text; FRR
/// gets none of it, the metric counts it, and `status` shows FRR's
/// message.
#[test]
fn a_text_frr_refuses_is_not_applied_is_counted_and_status_says_why() -> Result<()> {
    const PORT: u16 = 19478;
    let (_dir, mut b) = obgp_e2e::demo_bench(
        "reject",
        &format!("bgp_AS = 1.10\nmetrics_listen = 127.0.0.1:{PORT}"),
    )?;
    b.start_daemon()?;
    let get = |path: &str| b.http_get(&format!("http://127.0.0.1:{PORT}{path}"));
    let series = "ovn_bgp_agent_frr_texts_total{text=\"ours\",outcome=\"rejected\"}";
    obgp_e2e::wait_for("the rejection counted", WAIT, || {
        let (_, body) = get("/metrics")?;
        Ok(body
            .lines()
            .find_map(|l| l.strip_prefix(series))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|n| *n >= 1.0))
    })
    .with_context(|| b.agent_log())?;
    let (_, s) = get("/status")?;
    let s: serde_json::Value = serde_json::from_str(&s)?;
    let last = &s["health"]["frr_last_text"];
    ensure!(
        last["outcome"] == "rejected"
            && last["error"]
                .as_str()
                .is_some_and(|e| e.contains("router bgp 1.10") && e.contains("Unknown command")),
        "{s:#}"
    );
    let running = b.pair.node.vtysh("show running-config")?;
    ensure!(
        !running.contains("import vrf") && !running.contains("1.10"),
        "nothing of the refused text in FRR:\n{running}"
    );
    // explain of a prefix FRR lacks (the tenant subnet: a bridge-table
    // route here, in none of FRR's tables) quotes the daemon's last text.
    let answer = b.agent_ok(&["explain", "10.0.0.0/24"])?;
    ensure!(
        answer.contains("FRR: 10.0.0.0/24 is in none of FRR's tables")
            && answer.contains("FRR: the daemon's last text was rejected")
            && answer.contains("router bgp 1.10"),
        "{answer}"
    );
    println!("reject: refused, counted, status says {}", last["error"]);
    b.stop_daemon()?;
    Ok(())
}
