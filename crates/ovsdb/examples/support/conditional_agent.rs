//! An agent's conditional NB sync (`ovn_nb_monitor_all = false`) as the
//! benches run it: the first request asks for the ports the local OVS
//! identity `host-NNN`/`chassis-NNN` names (topogen's hosts), then the
//! conditions follow the synced snapshot until they stop changing, as the
//! agent does before its first reconcile (`LspInterest`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use obgp_ovn::{LiveSnapshot, LogicalSwitchPort, LspInterest};
use obgp_ovsdb::{Client, ClientConfig, Remote};
use obgp_ovsdb_data::{DatabaseSchema, DbSnapshot};

/// The local OVS identity of agent `host` (`host-NNN`, `chassis-NNN`, as
/// topogen names them), as a snapshot source.
pub fn local_ovs(host: usize) -> Result<obgp_ovn::Tables> {
    let ovs = serde_json::json!({"Open_vSwitch": {"Open_vSwitch": {
        "00000000-0000-4000-8000-000000000001": {"external_ids": ["map", [
            ["hostname", format!("host-{host:03}")],
            ["system-id", format!("chassis-{host:03}")],
            ["ovn-bridge-mappings", "physnet1:br-ex"]]]}}}});
    let mut db = obgp_ovn::fixture::FixtureDb::from_wire(&ovs)?;
    db.dbs
        .remove(obgp_ovn::OVS_DB)
        .context("the OVS identity fixture")
}

/// The ports agent `host` calls for in `nb` (a conditional cache filled
/// with `filled_with`).
fn wanted(
    nb: &DbSnapshot,
    ovs: &obgp_ovn::Tables,
    host: usize,
    filled_with: Option<&LspInterest>,
) -> LspInterest {
    let mut live = LiveSnapshot::with_partial_ports();
    live.reset_ovs(ovs);
    live.reset_nb(nb);
    LspInterest::of(
        &live.snapshot(),
        Some(&format!("host-{host:03}")),
        filled_with,
    )
}

/// Starts agent `host`'s conditional client on `remotes` and returns it
/// once its conditions stopped changing (every round synced).
pub async fn sync(remotes: Vec<Remote>, host: usize) -> Result<Client> {
    let ovs = local_ovs(host)?;
    let empty = DbSnapshot::empty(Arc::new(DatabaseSchema::empty(obgp_ovn::NB_DB)), []);
    let mut current = wanted(&empty, &ovs, host, None);
    let mut spec = obgp_ovn::nb::monitor_spec();
    if let Some(t) = spec.tables.get_mut(LogicalSwitchPort::TABLE) {
        t.conditions = Some(current.conditions());
    }
    if let Some(t) = spec.tables.get_mut("NAT") {
        t.conditions = Some(current.nat_conditions());
    }
    let client = Client::start(ClientConfig::new(remotes, obgp_ovn::NB_DB, spec));
    tokio::time::timeout(Duration::from_secs(600), client.cache().wait_resynced(1))
        .await
        .with_context(|| format!("agent host-{host:03}: no sync within 600 s"))??;
    for round in 0.. {
        let want = wanted(&client.cache().snapshot(), &ovs, host, Some(&current));
        if want == current {
            break;
        }
        if round >= 5 {
            bail!("agent host-{host:03}: conditions still changing after {round} rounds");
        }
        client
            .set_conditions_of(vec![
                (LogicalSwitchPort::TABLE.into(), Some(want.conditions())),
                ("NAT".into(), Some(want.nat_conditions())),
            ])
            .await?;
        current = want;
    }
    Ok(client)
}
