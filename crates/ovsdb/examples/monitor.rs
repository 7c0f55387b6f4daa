//! Follows tables of a database and prints every change, like
//! `ovsdb-client monitor-cond`, through the crate's reconnecting client.
//!
//! ```sh
//! cargo run -p obgp-ovsdb --example monitor -- \
//!     tcp:127.0.0.1:6641,tcp:127.0.0.1:6643 OVN_Northbound Logical_Switch_Port,NAT
//! ```
//! Add `--leader-only` to stay on the cluster leader; `RUST_LOG=info` shows
//! connects and resyncs.

use anyhow::{Context, Result};
use obgp_ovsdb::rpc::transport::parse_remotes;
use obgp_ovsdb::{Client, ClientConfig};
use obgp_ovsdb_data::MonitorSpec;

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let remotes = args
        .first()
        .context("usage: monitor REMOTES DB TABLES [--leader-only]")?;
    let db = args.get(1).context("missing DB")?;
    let tables = args.get(2).context("missing TABLES (comma separated)")?;
    let mut config = ClientConfig::new(
        parse_remotes(remotes)?,
        db,
        MonitorSpec::all(tables.split(',')),
    );
    config.leader_only = args.iter().any(|a| a == "--leader-only");
    let client = Client::start(config);
    let mut changes = client.cache().subscribe();
    let mut resynced = client.cache().resynced();
    loop {
        tokio::select! {
            c = changes.recv() => match c {
                Ok(c) => println!("{:?} {} {} new={:?} old={:?}", c.kind, c.table, c.uuid,
                    c.new.map(|r| r.columns.clone()), c.old.map(|r| r.columns.clone())),
                Err(e) => println!("change stream: {e} (take a fresh snapshot)"),
            },
            r = resynced.changed() => {
                r?;
                let snap = client.cache().snapshot();
                let counts: Vec<String> = snap.tables().map(|t| format!("{t}={}", snap.table(t).len())).collect();
                println!("resynced #{} from {:?}: {}", *resynced.borrow(), client.connected_to(), counts.join(" "));
            }
        }
    }
}
