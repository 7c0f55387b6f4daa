//! Generates the Neutron-shaped topology and loads it into an
//! OVN_Northbound ovsdb-server, or writes its transactions as JSON.

use anyhow::{Context, Result};
use clap::Parser;
use obgp_topogen::{Params, Topology};

/// Neutron-shaped OVN_Northbound topology generator.
#[derive(Parser)]
struct Args {
    /// Number of VM ports.
    #[arg(long)]
    vms: usize,
    /// Load into this OVN_Northbound remote (unix:PATH, tcp:HOST:PORT).
    #[arg(long)]
    nb: Option<String>,
    /// Write the transactions (one JSON array of operation arrays) here.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, default_value_t = 10)]
    hosts: usize,
    /// Fraction of VMs and router gateways on the local host.
    #[arg(long, default_value_t = 0.1)]
    local_fraction: f64,
    /// Index of the local host (host-NNN / chassis-NNN).
    #[arg(long, default_value_t = 0)]
    local_host: usize,
    #[arg(long, default_value_t = 50)]
    vms_per_net: usize,
    #[arg(long, default_value_t = 2)]
    nets_per_router: usize,
    #[arg(long, default_value_t = 0.1)]
    provider_vm_ratio: f64,
    #[arg(long, default_value_t = 0.2)]
    fip_ratio: f64,
    #[arg(long, default_value_t = 0.01)]
    lb_ratio: f64,
    #[arg(long)]
    distributed: bool,
    #[arg(long, default_value_t = 5000)]
    batch_ops: usize,
}

#[tokio::main]
async fn main() -> Result<()> {
    let a = Args::parse();
    let topo = Topology::generate(Params {
        vms: a.vms,
        seed: a.seed,
        hosts: a.hosts,
        local_fraction: a.local_fraction,
        local_host: a.local_host,
        vms_per_net: a.vms_per_net,
        nets_per_router: a.nets_per_router,
        provider_vm_ratio: a.provider_vm_ratio,
        fip_ratio: a.fip_ratio,
        lb_ratio: a.lb_ratio,
        distributed: a.distributed,
        batch_ops: a.batch_ops,
    });
    if let Some(out) = &a.out {
        let txns = topo.nb_transactions();
        std::fs::write(out, serde_json::to_vec(&txns)?)
            .with_context(|| format!("writing {}", out.display()))?;
    }
    if let Some(nb) = &a.nb {
        let remote: obgp_ovsdb::Remote = nb.parse()?;
        let (session, _notes) = obgp_ovsdb::Session::connect(
            &remote,
            None,
            obgp_ovsdb::SessionConfig {
                // Large commits keep the server silent: no probe.
                probe_interval: None,
                ..Default::default()
            },
        )
        .await?;
        let t0 = std::time::Instant::now();
        let n = topo.load(&session).await?;
        eprintln!(
            "NB filled in {:.1}s ({n} transactions)",
            t0.elapsed().as_secs_f64()
        );
    }
    println!("{:?}", topo.summary());
    Ok(())
}
