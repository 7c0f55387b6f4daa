//! Switching a node from address to route announcements, against real NB
//! and local OVS ovsdb-servers and a namespace node (root; the bench node
//! of the latency benchmark). The switch removes the last IPv4 address of
//! `bgp-nic`, and the kernel then flushes every IPv4 route through the
//! device, the announcement routes just added included, without a netlink
//! message. The reconcile that removed it must say so, and the next one
//! must put the routes back.

#[path = "../benches/common/mod.rs"]
mod common;

use std::time::Duration;

use anyhow::{ensure, Result};
use obgp_config::AnnounceWith;
use obgp_controller::inputs::OvnSources;
use obgp_controller::{QueueConfig, ReconcileKind, Reconciler};

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_silent_flush_of_the_last_ipv4_address_is_reported_and_repaired() -> Result<()> {
    let node = common::start_node(40, 11, "switch").await?;
    let opts = node.options(QueueConfig::default())?;
    let on_nic = |how| common::kernel_events::announcements_on(&node.ns, "bgp-nic", how);

    let mut config = node.config(3600);
    let sources = OvnSources::start(&config, WAIT).await?;
    sources.wait_synced(WAIT).await?;
    let inputs = sources.converged_inputs().await?;
    let mut r = Reconciler::connect(config.clone(), opts.kernel.clone()).await?;
    r.wait_for_commands();
    r.reconcile(&inputs.snapshot, &inputs.ofports, ReconcileKind::one_shot())
        .await?;
    let addresses = on_nic(AnnounceWith::Address);
    ensure!(addresses > 0, "no IPv4 address announced on bgp-nic");

    config.default.announce_with = AnnounceWith::Route;
    let mut r = Reconciler::connect(config, opts.kernel.clone()).await?;
    r.wait_for_commands();
    // The routes go in first; the addresses go once FRR is known to hold
    // `redistribute kernel`, a reconcile or two later.
    let mut flushed = None;
    for _ in 0..4 {
        let report = r
            .reconcile(&inputs.snapshot, &inputs.ofports, ReconcileKind::one_shot())
            .await?;
        if report.applied.contains_key("DelAddress") {
            flushed = Some(report);
            break;
        }
        ensure!(
            on_nic(AnnounceWith::Route) == addresses,
            "the routes before the addresses go: {report:?}"
        );
    }
    let Some(report) = flushed else {
        anyhow::bail!("the addresses were never removed");
    };
    ensure!(on_nic(AnnounceWith::Address) == 0, "{report:?}");
    ensure!(
        on_nic(AnnounceWith::Route) == 0,
        "the kernel no longer flushes the routes with the last IPv4 address: \
         the follow-up reconcile is not needed"
    );
    ensure!(report.unnotified_side_effects, "not reported: {report:?}");

    let repair = r
        .reconcile(&inputs.snapshot, &inputs.ofports, ReconcileKind::default())
        .await?;
    ensure!(
        on_nic(AnnounceWith::Route) == addresses,
        "not put back: {repair:?}"
    );
    ensure!(
        !repair.unnotified_side_effects,
        "adding routes flushes nothing: {repair:?}"
    );
    Ok(())
}
