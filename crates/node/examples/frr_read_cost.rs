//! What FRR's reads for `status` and `explain` cost as the node's table
//! grows (docs/performance.md, "FRR reads"): a real FRR pair (the
//! testbed's), N /32 addresses on the node's `bgp-nic` that its FRR
//! redistributes and announces to the peer, then each read the agent makes,
//! through the agent's own functions (`obgp_node::read_*`), timed.
//!
//! ```sh
//! cargo run -p obgp-node --example frr_read_cost -- 50000
//! ```
//! Root (namespaces, FRR from `make deps`).

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use obgp_node::{
    read_advertised, read_bgp_prefix, read_bgp_sessions, read_bgp_table, KernelConfig,
};
use obgp_testbed::frr::{FrrPair, PEER_ADDR};

fn main() -> Result<()> {
    let n: u32 = std::env::args().nth(1).map_or(Ok(50_000), |a| a.parse())?;
    let dir = tempfile::tempdir()?;
    let pair = FrrPair::start(dir.path(), 64999, 65000)?;
    // 10.128.0.0/9 holds them all.
    let addr = |i: u32| Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 128, 0, 1)) + i);
    let batch = dir.path().join("addrs.batch");
    let lines: String = (0..n)
        .map(|i| format!("addr add {}/32 dev bgp-nic\n", addr(i)))
        .collect();
    std::fs::write(&batch, lines)?;
    let t = Instant::now();
    pair.node_ip(&["-batch", batch.to_str().context("path")?])?;
    eprintln!(
        "{n} addresses on bgp-nic in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let kernel = KernelConfig {
        vty_socket: Some(pair.node.vty_dir().to_path_buf()),
        vtysh_timeout: Duration::from_secs(300),
        ..KernelConfig::default()
    };
    // Until the peer was sent every one.
    let t = Instant::now();
    loop {
        let sent = read_bgp_sessions(&kernel)?
            .into_iter()
            .find(|s| s.peer == PEER_ADDR && s.family == "ipv4Unicast")
            .and_then(|s| s.prefixes_sent)
            .unwrap_or(0);
        if sent >= u64::from(n) {
            break;
        }
        anyhow::ensure!(
            t.elapsed() < Duration::from_secs(900),
            "only {sent} of {n} sent"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    eprintln!(
        "all sent to the peer after {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let time = |what: &str, f: &dyn Fn() -> Result<usize>| -> Result<()> {
        let t = Instant::now();
        let count = f()?;
        println!(
            "{what:<44} {:>8.3} s  ({count} entries)",
            t.elapsed().as_secs_f64()
        );
        Ok(())
    };
    println!("FRR reads with {n} announced /32s:");
    time("sessions (status, metrics; background)", &|| {
        Ok(read_bgp_sessions(&kernel)?.len())
    })?;
    let one = format!("{}/32", addr(n / 2)).parse()?;
    time("one prefix (explain, per prefix)", &|| {
        Ok(read_bgp_prefix(&kernel, None, one)?.map_or(0, |p| p.advertised_to.len()))
    })?;
    time("the IPv4 table (status)", &|| {
        Ok(read_bgp_table(&kernel, "ipv4")?.len())
    })?;
    time("advertised to the peer (status, per peer)", &|| {
        Ok(read_advertised(&kernel, "ipv4", PEER_ADDR)?.len())
    })?;
    Ok(())
}
