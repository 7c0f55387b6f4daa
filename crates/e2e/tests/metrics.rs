//! The metrics listener of the real agent daemon, scraped by a real
//! Prometheus (Debian's `prometheus`), against real OVN databases, FRR
//! and a node namespace (netns tier: the daemon runs on this kernel; the
//! VRF ops it cannot make are refused and counted). Needs root and the
//! packages of `make deps` (`prometheus`, `curl`).
//!
//! The listener lives in the node namespace (the agent runs there), so
//! Prometheus runs there too and `curl` reaches both from inside it.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use obgp_e2e::Bench;
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(60);
const AGENT_PORT: u16 = 19476;
const PROMETHEUS_PORT: u16 = 19090;

/// A Prometheus server in the node namespace, killed on drop.
struct Prometheus(Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_prometheus(b: &Bench) -> Result<Prometheus> {
    let dir = b.dir().join("prometheus");
    std::fs::create_dir_all(&dir)?;
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: ovn-bgp-agent\n    static_configs:\n      - targets: ['127.0.0.1:{AGENT_PORT}']\n"
        ),
    )?;
    let log = std::fs::File::create(dir.join("prometheus.log"))?;
    let child = Command::new("ip")
        .args(["netns", "exec", b.node_netns(), "prometheus"])
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{PROMETHEUS_PORT}"))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("starting prometheus (apt-get install prometheus)")?;
    Ok(Prometheus(child))
}

fn agent(b: &Bench, path: &str) -> Result<(u16, String)> {
    b.http_get(&format!("http://127.0.0.1:{AGENT_PORT}{path}"))
}

/// The value of one series of the exposition (labels as written).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The sum of every sample whose series starts with `prefix`.
fn sum(text: &str, prefix: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// One instant query through Prometheus's HTTP API: the value of its
/// single result, `None` while it has none.
fn query(b: &Bench, promql: &str) -> Result<Option<f64>> {
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            b.node_netns(),
            "curl",
            "-s",
            "-m",
            "5",
            "-G",
        ])
        .args(["--data-urlencode", &format!("query={promql}")])
        .arg(format!("http://127.0.0.1:{PROMETHEUS_PORT}/api/v1/query"))
        .output()?;
    let Ok(v) = serde_json::from_slice::<Value>(&out.stdout) else {
        return Ok(None); // not up yet
    };
    ensure!(v["status"] == "success", "{promql}: {v}");
    let result = v["data"]["result"].as_array().cloned().unwrap_or_default();
    match result.as_slice() {
        [] => Ok(None),
        [one] => Ok(one["value"][1].as_str().and_then(|s| s.parse().ok())),
        many => bail!("{promql}: {} results: {v}", many.len()),
    }
}

fn promtool_check(exposition: &str) -> Result<()> {
    use std::io::Write;
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("promtool (apt-get install prometheus)")?;
    child
        .stdin
        .take()
        .context("stdin")?
        .write_all(exposition.as_bytes())?;
    let out = child.wait_with_output()?;
    ensure!(
        out.status.success(),
        "promtool check metrics failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

#[test]
fn a_real_prometheus_scrapes_the_daemon_and_reads_back_its_series() -> Result<()> {
    let t0 = Instant::now();
    let (_dir, mut b) = obgp_e2e::demo_bench(
        "metrics",
        &format!(
            "metrics_listen = 127.0.0.1:{AGENT_PORT}\nreconcile_interval = 2\nfrr_reconcile_interval = 2"
        ),
    )?;
    let _prometheus = start_prometheus(&b)?;
    b.start_daemon()?;
    let has_vrf = obgp_e2e::kernel_has_vrf_and_dummy();

    // The first reconcile's counts, once it finished.
    let text = obgp_e2e::wait_for("the first reconcile in /metrics", WAIT, || {
        let (code, body) = agent(&b, "/metrics")?;
        Ok(
            (code == 200 && sum(&body, "ovn_bgp_agent_reconciles_total{reason=\"startup\"") >= 1.0)
                .then_some(body),
        )
    })
    .with_context(|| b.agent_log())?;
    println!(
        "metrics [{:5.1} s] first reconcile scraped",
        t0.elapsed().as_secs_f64()
    );
    promtool_check(&text)?;

    let v = |series: &str| {
        sample(&text, series).with_context(|| format!("{series} missing in\n{text}"))
    };
    // The demo topology: vm1 and vm2 (IPv4 and IPv6) on the provider
    // network, the router's gateway (IPv4 and IPv6), one FIP, the tenant subnet behind it
    // (docs/e2e.md); vm3 is bound elsewhere.
    for (class, family, n) in [
        ("vm", "ipv4", 2.0),
        ("vm", "ipv6", 2.0),
        ("gateway", "ipv4", 1.0),
        ("gateway", "ipv6", 1.0),
        ("fip", "ipv4", 1.0),
        ("subnet", "ipv4", 1.0),
        ("lb", "ipv4", 0.0),
        ("tenant_vm", "ipv4", 0.0),
    ] {
        let series = format!("ovn_bgp_agent_exposed_ips{{class=\"{class}\",family=\"{family}\"}}");
        // Counted after the first scrape asked: wait for a later reconcile.
        let got = obgp_e2e::wait_for(&series, WAIT, || {
            let (_, body) = agent(&b, "/metrics")?;
            Ok(sample(&body, &series).filter(|got| *got == n))
        });
        ensure!(
            got.is_ok(),
            "{series} never {n}:\n{}",
            agent(&b, "/metrics")?.1
        );
    }
    ensure!(
        v("ovn_bgp_agent_build_info{version=\"0.1.0\",driver=\"nb_ovn_bgp_driver\",exposing_method=\"underlay\"}")? == 1.0
    );
    for db in ["OVN_Northbound", "Open_vSwitch"] {
        ensure!(
            v(&format!(
                "ovn_bgp_agent_ovsdb_connected{{database=\"{db}\"}}"
            ))? == 1.0
        );
        ensure!(
            v(&format!(
                "ovn_bgp_agent_ovsdb_reconnects_total{{database=\"{db}\"}}"
            ))? == 0.0
        );
        let updated = v(&format!(
            "ovn_bgp_agent_ovsdb_last_update_timestamp_seconds{{database=\"{db}\"}}"
        ))?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_secs_f64();
        ensure!(
            updated > now - 120.0 && updated <= now,
            "{db} updated at {updated}"
        );
    }
    // Every announcement the daemon made is on bgp-nic, and counted.
    let on_nic = b
        .bgp_nic_addrs()?
        .into_iter()
        .filter(|a| !a.starts_with("fe80:"))
        .count();
    ensure!(on_nic == 7, "bgp-nic: {:?}", b.bgp_nic_addrs()?);
    let added = sum(
        &text,
        "ovn_bgp_agent_ops_total{kind=\"add_address\",outcome=\"applied\"",
    );
    ensure!(added >= 7.0, "add_address applied {added}");
    ensure!(sum(&text, "ovn_bgp_agent_reconcile_duration_seconds_count") >= 1.0);
    // The FRR text goes through the command lane, off the reconcile: its
    // apply is counted once the lane reported it (a later reconcile).
    let frr = "ovn_bgp_agent_frr_applies_total{cause=\"initial\"}";
    let applied = obgp_e2e::wait_for(frr, WAIT, || {
        let (_, body) = agent(&b, "/metrics")?;
        Ok(sample(&body, frr).filter(|got| *got == 1.0))
    });
    ensure!(
        applied.is_ok(),
        "{frr} never 1:\n{}",
        agent(&b, "/metrics")?.1
    );

    // Readiness: converged where the kernel has VRFs; here the VRF ops are
    // refused at every reconcile, and /readyz says so.
    let (code, body) = agent(&b, "/readyz")?;
    if has_vrf {
        ensure!(code == 200, "{code} {body}");
    } else {
        ensure!(
            code == 503 && body.contains("did not converge") && body.contains("op(s) failed"),
            "{code} {body}"
        );
        let failed = sum(
            &text,
            "ovn_bgp_agent_ops_total{kind=\"add_link\",outcome=\"failed\"",
        );
        ensure!(failed >= 1.0, "the refused VRF is counted: {failed}");
    }
    let (code, body) = agent(&b, "/healthz")?;
    ensure!(code == 200 && body.starts_with("ok:"), "{code} {body}");
    let (code, _) = agent(&b, "/nope")?;
    ensure!(code == 404);

    // A drift: an announcement removed by hand comes back, counted as a
    // repair by the next (periodic) reconcile.
    b.node_ip(&["addr", "del", "172.24.4.50/32", "dev", "bgp-nic"])?;
    obgp_e2e::wait_for("the FIP repaired", WAIT, || {
        let (_, body) = agent(&b, "/metrics")?;
        Ok((sample(
            &body,
            "ovn_bgp_agent_drift_repairs_total{object=\"address\"}",
        ) >= Some(1.0))
        .then_some(()))
    })
    .with_context(|| b.agent_log())?;
    ensure!(b.bgp_nic_addrs()?.contains(&"172.24.4.50/32".to_string()));
    println!(
        "metrics [{:5.1} s] promtool passed, values checked, drift repaired and counted",
        t0.elapsed().as_secs_f64()
    );

    // Prometheus scraped the daemon: the same series through its API.
    obgp_e2e::wait_for("Prometheus scraping the agent", WAIT, || {
        Ok((query(&b, "up{job=\"ovn-bgp-agent\"}")? == Some(1.0)).then_some(()))
    })?;
    for (promql, want) in [
        (
            "ovn_bgp_agent_exposed_ips{class=\"vm\",family=\"ipv6\"}",
            2.0,
        ),
        (
            "ovn_bgp_agent_exposed_ips{class=\"fip\",family=\"ipv4\"}",
            1.0,
        ),
        (
            "sum(ovn_bgp_agent_reconciles_total{reason=\"startup\"})",
            1.0,
        ),
        (
            "ovn_bgp_agent_ovsdb_connected{database=\"OVN_Northbound\"}",
            1.0,
        ),
        (
            "ovn_bgp_agent_drift_repairs_total{object=\"address\"} >= bool 1",
            1.0,
        ),
        (
            "count(ovn_bgp_agent_build_info{driver=\"nb_ovn_bgp_driver\"})",
            1.0,
        ),
    ] {
        let got = obgp_e2e::wait_for(promql, WAIT, || {
            Ok(query(&b, promql)?.filter(|v| *v == want))
        });
        ensure!(
            got.is_ok(),
            "{promql}: {:?}, want {want}",
            query(&b, promql)?
        );
    }
    // Periodic reconciles (every 2 s) keep going: the count grows in Prometheus.
    let reconciles = "sum(ovn_bgp_agent_reconciles_total)";
    let first = query(&b, reconciles)?.context("reconciles")?;
    obgp_e2e::wait_for("more reconciles in Prometheus", WAIT, || {
        Ok(query(&b, reconciles)?.filter(|n| *n > first))
    })?;
    println!(
        "metrics [{:5.1} s] read back through Prometheus's /api/v1/query",
        t0.elapsed().as_secs_f64()
    );
    bgp_sessions(&b, t0)?;
    b.stop_daemon()?;
    Ok(())
}

/// FRR's sessions, read every `frr_reconcile_interval` (2 s here): the
/// node's peer is up with what it was sent, in `/metrics`, Prometheus and
/// `/status`; once the peer shuts the session down, all three say so.
fn bgp_sessions(b: &Bench, t0: Instant) -> Result<()> {
    let labels = "vrf=\"default\",peer=\"10.255.0.2\",family=\"ipv4Unicast\"";
    let up = format!("ovn_bgp_agent_bgp_session_up{{{labels}}}");
    let sent = format!("ovn_bgp_agent_bgp_prefixes_sent{{{labels}}}");
    let text = obgp_e2e::wait_for("the peer's session in /metrics", WAIT, || {
        let (_, body) = agent(b, "/metrics")?;
        Ok((sample(&body, &up) == Some(1.0)).then_some(body))
    })
    .with_context(|| {
        let bgp: Vec<String> = agent(b, "/metrics")
            .map(|(_, body)| {
                body.lines()
                    .filter(|l| l.contains("agent_bgp_"))
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        format!(
            "{bgp:#?}\n{}",
            agent(b, "/status").map(|s| s.1).unwrap_or_default()
        )
    })?;
    promtool_check(&text)?;
    let sent_n = sample(&text, &sent).with_context(|| format!("{sent} missing in\n{text}"))?;
    ensure!(
        sent_n >= 4.0,
        "the node's IPv4 announcements were sent: {sent_n}"
    );
    obgp_e2e::wait_for("the session series in Prometheus", WAIT, || {
        Ok(query(b, &up)?.filter(|v| *v == 1.0))
    })?;
    let (_, status) = agent(b, "/status")?;
    let status: Value = serde_json::from_str(&status)?;
    let peer_state = |status: &Value| -> Option<String> {
        status["health"]["bgp_sessions"]["sessions"]
            .as_array()?
            .iter()
            .find(|s| s["peer"] == "10.255.0.2" && s["family"] == "ipv4Unicast")
            .and_then(|s| s["state"].as_str().map(String::from))
    };
    ensure!(
        peer_state(&status).as_deref() == Some("Established"),
        "{status:#}"
    );

    b.pair
        .peer
        .vtysh("conf t\nrouter bgp 65000\nneighbor 10.255.0.1 shutdown")?;
    let down_at = Instant::now();
    let text = obgp_e2e::wait_for("the session down in /metrics", WAIT, || {
        let (_, body) = agent(b, "/metrics")?;
        Ok((sample(&body, &up) == Some(0.0)).then_some(body))
    })
    .with_context(|| b.agent_log())?;
    ensure!(
        sample(&text, &sent).is_none(),
        "no prefix counts for a session that is down:\n{text}"
    );
    let (_, status) = agent(b, "/status")?;
    let status: Value = serde_json::from_str(&status)?;
    let state = peer_state(&status);
    ensure!(
        state.is_some() && state.as_deref() != Some("Established"),
        "{status:#}"
    );
    println!(
        "metrics [{:5.1} s] the peer's session shown up, then down {:.1} s after its shutdown ({state:?})",
        t0.elapsed().as_secs_f64(),
        down_at.elapsed().as_secs_f64()
    );
    Ok(())
}
