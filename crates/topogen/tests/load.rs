//! The generated topology loads into a real ovsdb-server and reads back
//! through the client with the shape the summary promises.

use std::time::Duration;

use anyhow::Result;
use obgp_ovsdb::{Client, ClientConfig};
use obgp_ovsdb_data::MonitorSpec;
use obgp_testbed::ovsdb::OvsdbServer;
use obgp_topogen::{Params, Topology};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_topology_loads_and_reads_back() -> Result<()> {
    let server = OvsdbServer::start("ovn-nb.ovsschema")?;
    let topo = Topology::generate(Params {
        vms: 1000,
        batch_ops: 700,
        ..Params::default()
    });
    let remote = server.unix_remote().parse()?;
    let (session, _notes) = obgp_ovsdb::Session::connect(&remote, None, Default::default()).await?;
    let txns = topo.load(&session).await?;
    assert!(txns > 2, "batched into several transactions");

    let client = Client::start(ClientConfig::new(
        vec![remote],
        "OVN_Northbound",
        MonitorSpec::all([
            "Logical_Switch",
            "Logical_Switch_Port",
            "Logical_Router",
            "Logical_Router_Port",
            "NAT",
            "Load_Balancer",
            "NB_Global",
        ]),
    ));
    tokio::time::timeout(Duration::from_secs(20), client.cache().wait_resynced(1)).await??;
    let snap = client.cache().snapshot();
    let s = topo.summary();
    assert_eq!(
        snap.table("Logical_Switch_Port").len(),
        s.logical_switch_ports
    );
    assert_eq!(snap.table("Logical_Router").len(), s.routers);
    assert_eq!(snap.table("Logical_Switch").len(), s.tenant_networks + 1);
    assert_eq!(snap.table("Load_Balancer").len(), s.lbs);
    // One SNAT per network, one NAT per VM FIP and per LB FIP.
    assert_eq!(
        snap.table("NAT").len(),
        s.tenant_networks + s.fips + s.lbs.div_ceil(2)
    );
    // Gateways carry their hosting chassis; the provider switch its localnet port.
    let gateways = snap
        .table("Logical_Router_Port")
        .values()
        .filter(|r| r.map_str("status", "hosting-chassis").is_some())
        .count();
    assert_eq!(gateways, s.routers);
    let local_vm_ports = snap
        .table("Logical_Switch_Port")
        .values()
        .filter(|r| r.map_str("external_ids", "neutron:host_id") == Some("host-000"))
        .count();
    assert_eq!(local_vm_ports, s.local_vms);
    let provider = snap
        .table("Logical_Switch")
        .values()
        .find(|r| r.str("name") == Some(topo.provider_switch().as_str()))
        .expect("provider switch")
        .clone();
    let ports = snap.resolve("Logical_Switch", &provider, "ports");
    assert!(ports.iter().any(|(_, p)| p.str("type") == Some("localnet")
        && p.map_str("options", "network_name") == Some("physnet1")));
    // Provider VMs + one gateway port per router + localnet.
    assert_eq!(ports.len(), s.provider_vms + s.routers + 1);
    Ok(())
}
