//! The probes' state changes on the daemon loop (`run`), against real NB
//! and local OVS ovsdb-servers and a namespace node (root; the bench node
//! of the latency and soak benchmarks): not ready while the NB cannot
//! deliver its initial dump (its ovsdb-server SIGSTOPped) but alive; the
//! reconcile's outcome once synced; not healthy while a reconcile is held
//! (the `hold_reconciles` hook standing in for a reconcile that hangs),
//! with `/metrics` still served; healthy again once it finishes.

#[path = "../benches/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use obgp_controller::ops::ProbeBounds;
use obgp_controller::{run, QueueConfig, RunOptions};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(30);

/// GET `path`: status and body without its line end.
async fn get(addr: std::net::SocketAddr, path: &str) -> Result<(u16, String)> {
    let (status, body) = common::http_get(addr, path, Duration::from_secs(2)).await?;
    Ok((status, body.trim_end().to_string()))
}

async fn wait_for<T>(
    what: &str,
    mut f: impl FnMut() -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Option<T>>>>>,
) -> Result<T> {
    let t = Instant::now();
    loop {
        if let Ok(Some(v)) = f().await {
            return Ok(v);
        }
        ensure!(t.elapsed() < WAIT, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn signal(pid: u32, sig: &str) -> Result<()> {
    let ok = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()?
        .success();
    ensure!(ok, "kill {sig} {pid}");
    Ok(())
}

fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_follow_the_initial_sync_the_outcome_and_a_stuck_reconcile() -> Result<()> {
    let node = common::start_node(20, 7, "prb").await?;
    let port = obgp_testbed::ovsdb::free_port()?;
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse()?;
    let mut config = node.config(2);
    config.default.metrics_listen = Some(addr);
    let (hold, held) = tokio::sync::watch::channel(true);
    let opts = RunOptions {
        probes: Some(ProbeBounds {
            stuck_after: Duration::from_secs(1),
            idle_after: Duration::from_secs(60),
        }),
        hold_reconciles: Some(held),
        ..node.options(QueueConfig::default())?
    };
    let nb_pid = node.nb.pid().context("the NB ovsdb-server's pid")?;
    signal(nb_pid, "-STOP")?;
    let shutdown = CancellationToken::new();
    let agent = tokio::spawn(run(config, opts, shutdown.clone()));

    // 1. The NB cannot answer: alive, not ready.
    let (code, body) = wait_for("the listener", || {
        Box::pin(async move { Ok(Some(get(addr, "/readyz").await?)) })
    })
    .await?;
    ensure!(
        code == 503 && body.starts_with("not ready: waiting for the initial sync"),
        "{code} {body}"
    );
    let (code, body) = get(addr, "/healthz").await?;
    ensure!(
        code == 200 && body.starts_with("ok: waiting for the initial sync"),
        "{code} {body}"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (code, _) = get(addr, "/readyz").await?;
    ensure!(code == 503, "still not ready while the NB is stopped");

    // 2. The NB answers: synced, and readiness follows the reconcile's outcome.
    signal(nb_pid, "-CONT")?;
    let (code, body) = wait_for("the first reconcile", || {
        Box::pin(async move {
            let (code, body) = get(addr, "/readyz").await?;
            Ok(
                (!body.contains("initial sync") && !body.contains("no reconcile"))
                    .then_some((code, body)),
            )
        })
    })
    .await?;
    println!("probes: after the sync /readyz {code}: {body}");
    let (_, metrics) = get(addr, "/metrics").await?;
    let failed: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("ovn_bgp_agent_ops_total{") && l.contains("outcome=\"failed\""))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum();
    if code == 200 {
        ensure!(body == "ready: the last reconcile converged", "{body}");
    } else {
        // This kernel has no VRF: the three VRF ops are refused.
        ensure!(
            code == 503 && body.contains("did not converge") && body.contains("op(s) failed"),
            "{code} {body}"
        );
        ensure!(
            failed >= 1.0,
            "a failure in /readyz is a failed op in /metrics:\n{metrics}"
        );
    }
    let startup = sample(
        &metrics,
        "ovn_bgp_agent_reconciles_total{reason=\"startup\",outcome=\"converged\"}",
    )
    .or_else(|| {
        sample(
            &metrics,
            "ovn_bgp_agent_reconciles_total{reason=\"startup\",outcome=\"incomplete\"}",
        )
    });
    ensure!(startup == Some(1.0), "one start-up reconcile:\n{metrics}");
    let (code, body) = get(addr, "/healthz").await?;
    ensure!(code == 200, "{code} {body}");

    // 3. A reconcile that does not finish: not healthy past the bound, and
    //    the listener still answers at once.
    hold.send_replace(false);
    let body = wait_for("/healthz to fail", || {
        Box::pin(async move {
            let (code, body) = get(addr, "/healthz").await?;
            Ok((code == 503).then_some(body))
        })
    })
    .await?;
    ensure!(
        body.starts_with("stuck: a reconcile (") && body.ends_with("(bound 1 s)"),
        "{body}"
    );
    println!("probes: reconcile held, /healthz 503: {body}");
    let t = Instant::now();
    let (code, _) = get(addr, "/metrics").await?;
    ensure!(
        code == 200 && t.elapsed() < Duration::from_secs(1),
        "scrape while stuck"
    );

    // 4. It finishes: healthy again.
    hold.send_replace(true);
    wait_for("/healthz to recover", || {
        Box::pin(async move {
            let (code, _) = get(addr, "/healthz").await?;
            Ok((code == 200).then_some(()))
        })
    })
    .await?;
    shutdown.cancel();
    agent.await??;
    Ok(())
}
