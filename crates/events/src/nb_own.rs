//! The agent's own wake-up for `nb_ovn_bgp_driver`, beside upstream's
//! classes.
//!
//! The desired state reads a FIP from its NAT row (`external_ip`,
//! `external_mac`, `logical_port`, `gateway_port`), while upstream's
//! classes watch the NAT only for a distributed FIP's MAC being set
//! (`NATMACAddedEvent`) and a centralized FIP's NAT created or deleted
//! (`ExposeFIPOnCRLRP` / `WithdrawFIPOnCRLRP`). A NAT whose MAC is cleared
//! (Neutron does it when the port goes down or FIPs stop being
//! distributed), that is deleted or moved to another port without its
//! port's `neutron:port_fip` changing, or whose MAC is set while the flag
//! says centralized, wakes nothing upstream until its next sync. Found by
//! the trigger oracle (obgp-inputs, tests/trigger_oracle).
//!
//! This predicate wakes a reconcile for any change of a `dnat_and_snat`
//! NAT that concerns this node: its external IP (before or after) is
//! announced here, its logical port (before or after) is bound here, or
//! its gateway port is hosted here. A spurious wake-up costs one
//! reconcile that plans nothing.

use obgp_ovn::neutron::{key, nat_type, port_type};
use obgp_ovsdb_data::{Change, Row};

use crate::agent::AgentView;
use crate::neutron::port_chassis;

/// Reason: a FIP's NAT row that concerns this node changed.
pub const FIP_NAT_CHANGE: &str = "FipNatChange";

/// The agent's own reasons for `change` of the NB database.
pub fn reasons(change: &Change, view: &dyn AgentView) -> Vec<&'static str> {
    if &*change.table != "NAT" {
        return Vec::new();
    }
    // `old` of an update lists the changed columns only; the unchanged
    // ones are the new row's.
    let rows: Vec<&Row> = change.new.iter().chain(&change.old).map(|r| &**r).collect();
    let is_fip = rows
        .iter()
        .any(|r| r.str("type") == Some(nat_type::DNAT_AND_SNAT));
    if is_fip && rows.iter().any(|r| concerns_here(r, view)) {
        vec![FIP_NAT_CHANGE]
    } else {
        Vec::new()
    }
}

fn concerns_here(nat: &Row, view: &dyn AgentView) -> bool {
    let announced = nat
        .str("external_ip")
        .is_some_and(|ip| view.is_ip_exposed(None, &[ip]));
    let port_here = nat.str("logical_port").is_some_and(|name| {
        view.lsp(name).is_some_and(|lsp| {
            port_chassis(&lsp, view.chassis(), port_type::VM).is_ok_and(|c| c.is(view.chassis()))
        })
    });
    let gateway_here = nat.uuid("gateway_port").is_some_and(|u| {
        view.row(u).is_some_and(|lrp| {
            lrp.col("status")
                .and_then(|s| s.get(key::HOSTING_CHASSIS))
                .is_ok_and(|c| c.is(view.chassis_id()))
        })
    });
    announced || port_here || gateway_here
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use obgp_ovsdb_data::ChangeKind;
    use serde_json::json;

    use super::*;
    use crate::fake::{row, uuid, FakeAgent};

    fn nat_update(new: serde_json::Value, old: serde_json::Value) -> Change {
        Change {
            table: Arc::from("NAT"),
            uuid: uuid(1),
            kind: ChangeKind::Update,
            new: Some(Arc::new(row(new))),
            old: Some(Arc::new(row(old))),
        }
    }

    /// Found by the trigger oracle (NB underlay, seed 1): Neutron clears
    /// an announced distributed FIP's MAC; no upstream class matches, the
    /// desired state withdraws it.
    #[test]
    fn an_announced_fip_losing_its_mac_wakes_a_reconcile() {
        let agent = FakeAgent {
            chassis: "host-1".into(),
            // The fake keys exposed IPs by switch; the predicate asks without one,
            // as the production view ignores it.
            exposed: vec![(String::new(), "172.24.4.15".into())],
            ..FakeAgent::default()
        };
        let nat = json!({"type": "dnat_and_snat", "external_ip": "172.24.4.15",
                         "logical_ip": "10.0.0.5", "logical_port": "vm-1"});
        let c = nat_update(nat.clone(), json!({"external_mac": "fa:16:3e:00:00:01"}));
        assert_eq!(reasons(&c, &agent), [FIP_NAT_CHANGE]);
        // Not announced here, its port not bound here: nothing.
        let elsewhere = FakeAgent {
            chassis: "host-1".into(),
            ..FakeAgent::default()
        };
        assert!(reasons(&c, &elsewhere).is_empty());
        // A SNAT is no FIP.
        let snat = nat_update(
            json!({"type": "snat", "external_ip": "172.24.4.15", "logical_ip": "10.0.0.0/24"}),
            json!({"external_ip": "172.24.4.16"}),
        );
        assert!(reasons(&snat, &agent).is_empty());
    }

    /// A FIP's NAT gaining its MAC for a port bound here wakes a reconcile
    /// whatever the FIP mode upstream's classes follow.
    #[test]
    fn a_fip_of_a_port_bound_here_wakes_a_reconcile() {
        let mut agent = FakeAgent {
            chassis: "host-1".into(),
            ..FakeAgent::default()
        };
        agent.lsps.insert(
            "vm-1".into(),
            row(json!({"name": "vm-1", "type": "",
                       "options": ["map", [["requested-chassis", "host-1"]]]})),
        );
        let c = nat_update(
            json!({"type": "dnat_and_snat", "external_ip": "172.24.4.15",
                   "external_mac": "fa:16:3e:00:00:01", "logical_port": "vm-1"}),
            json!({"external_mac": ["set", []]}),
        );
        assert_eq!(reasons(&c, &agent), [FIP_NAT_CHANGE]);
    }
}
