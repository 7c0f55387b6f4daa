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
//! The desired state also exposes a port's distributed FIP whenever its NAT
//! carries a MAC, while upstream's LSP FIP classes are registered only
//! while NB_Global says FIPs are distributed. Neutron writes the flag and
//! the NATs in separate transactions; in between, a port with a FIP bound
//! here, unbound, or going up or down woke nothing (trigger oracle, NB
//! underlay, seed 1 steps 13 and 37).
//!
//! Two predicates, each waking a reconcile for a change that concerns
//! this node:
//! - [`FIP_NAT_CHANGE`]: any change of a `dnat_and_snat` NAT whose external
//!   IP (before or after) is announced here, whose logical port (before or
//!   after) is bound here, or whose gateway port is hosted here;
//! - [`PORT_EXPOSURE_CHANGE`]: a VM or virtual port with addresses whose
//!   way of being *exposable here* changed: up, and bound here or on a
//!   tenant network behind a gateway hosted here, and its type (created,
//!   deleted, rebound, unbound, up or down, retyped), whatever the FIP
//!   mode; or a port whose IPs or FIP are announced here deleted or
//!   re-addressed or retyped (an LB VIP port, which is down, included). Upstream's LSP classes key on `up` flipping or on the binding
//!   moving between named chassis; a port unbound (no chassis at all),
//!   deleted while down in the same transaction, or turned into a
//!   `localport` woke nothing (trigger oracle, NB underlay and vrf, long
//!   run seeds 101-130).
//!
//! A spurious wake-up costs one reconcile that plans nothing.

use obgp_ovn::neutron::{key, nat_type, port_type};
use obgp_ovsdb_data::{Change, ChangeKind, Row};

use crate::agent::AgentView;
use crate::neutron::port_chassis;
use crate::view::RowView;

/// Reason: a FIP's NAT row that concerns this node changed.
pub const FIP_NAT_CHANGE: &str = "FipNatChange";
/// Reason: a VM or virtual port became, or stopped being, exposable here.
pub const PORT_EXPOSURE_CHANGE: &str = "PortExposureChange";

/// The agent's own reasons for `change` of the NB database.
pub fn reasons(change: &Change, view: &dyn AgentView) -> Vec<&'static str> {
    match &*change.table {
        "NAT" => nat_reasons(change, view),
        "Logical_Switch_Port" => port_reasons(change, view),
        _ => Vec::new(),
    }
}

fn port_reasons(change: &Change, view: &dyn AgentView) -> Vec<&'static str> {
    let (before, after) = match change.kind {
        ChangeKind::Insert => (None, change.new.as_deref().cloned()),
        ChangeKind::Delete => (change.old.as_deref().cloned(), None),
        ChangeKind::Update => {
            // `old` lists the changed columns; the others are the new row's.
            let before = change.new.as_deref().map(|new| {
                let mut row = new.clone();
                for (name, value) in change.old.iter().flat_map(|o| o.columns.iter()) {
                    row.columns.insert(name.clone(), value.clone());
                }
                row
            });
            (before, change.new.as_deref().cloned())
        }
    };
    fn state<'r>(row: &'r Option<Row>, view: &dyn AgentView) -> Option<(&'r str, bool, bool)> {
        row.as_ref().and_then(|r| exposable_here(r, view))
    }
    let gone = change.kind == ChangeKind::Delete
        || change.old.as_deref().is_some_and(|o| {
            o.columns.get("type").is_some() || o.columns.get("addresses").is_some()
        });
    let was_announced = gone && before.as_ref().is_some_and(|r| announced(r, view));
    if state(&before, view) != state(&after, view) || was_announced {
        vec![PORT_EXPOSURE_CHANGE]
    } else {
        Vec::new()
    }
}

/// How a VM or virtual port with addresses and up is exposable here: its
/// type, bound here, on a tenant network behind a gateway hosted here;
/// `None` when it is neither (or down, or no such port).
fn exposable_here<'r>(port: &'r Row, view: &dyn AgentView) -> Option<(&'r str, bool, bool)> {
    let kind = port.str("type").unwrap_or("");
    let vm = matches!(kind, port_type::VM | port_type::VIRTUAL);
    let addressed = port
        .strs("addresses")
        .any(|a| a.split_whitespace().nth(1).is_some())
        || port
            .map_str("external_ids", key::CIDRS)
            .is_some_and(|c| !c.is_empty());
    if !vm || !addressed || port.bool("up") != Some(true) {
        return None;
    }
    let bound_here = port_chassis(&RowView::complete(port), view.chassis(), port_type::VM)
        .is_ok_and(|c| c.is(view.chassis()));
    let behind_local_gateway =
        view.is_local_lrp_network(port.map_str("external_ids", key::NETWORK_NAME));
    (bound_here || behind_local_gateway).then_some((kind, bound_here, behind_local_gateway))
}

/// Whether one of the port's IPs or its FIP is announced here (an LB VIP
/// port, down, is announced through its load balancer).
fn announced(port: &Row, view: &dyn AgentView) -> bool {
    let ips = port
        .strs("addresses")
        .flat_map(|a| a.split_whitespace().skip(1))
        .chain(port.map_str("external_ids", key::PORT_FIP));
    let ips: Vec<&str> = ips.collect();
    view.is_ip_exposed(port.map_str("external_ids", key::NETWORK_NAME), &ips)
}

fn nat_reasons(change: &Change, view: &dyn AgentView) -> Vec<&'static str> {
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

    fn port(chassis: &str, up: bool) -> serde_json::Value {
        json!({"name": "vm-1", "type": "", "up": up,
               "addresses": "fa:16:3e:00:00:12 10.0.1.12",
               "options": ["map", [["requested-chassis", chassis]]],
               "external_ids": ["map", [["neutron:port_fip", "172.24.4.15"],
                                        ["neutron:host_id", chassis]]]})
    }

    /// Found by the trigger oracle (NB underlay, seed 1 step 13): with
    /// NB_Global saying centralized and the NAT still carrying its MAC,
    /// a port with a FIP bound here woke nothing.
    #[test]
    fn a_port_with_a_fip_bound_here_or_away_wakes_a_reconcile() {
        let agent = FakeAgent {
            chassis: "host-1".into(),
            ..FakeAgent::default()
        };
        let lsp = |new: serde_json::Value, old: Option<serde_json::Value>, kind| Change {
            table: Arc::from("Logical_Switch_Port"),
            uuid: uuid(2),
            kind,
            new: Some(Arc::new(row(new))),
            old: old.map(|o| Arc::new(row(o))),
        };
        let moved_here = lsp(
            port("host-1", true),
            Some(
                json!({"options": ["map", [["requested-chassis", "host-2"]]],
                        "external_ids": ["map", [["neutron:port_fip", "172.24.4.15"],
                                                 ["neutron:host_id", "host-2"]]]}),
            ),
            ChangeKind::Update,
        );
        assert_eq!(reasons(&moved_here, &agent), [PORT_EXPOSURE_CHANGE]);
        let went_down = lsp(
            port("host-1", false),
            Some(json!({"up": true})),
            ChangeKind::Update,
        );
        assert_eq!(reasons(&went_down, &agent), [PORT_EXPOSURE_CHANGE]);
        let mut deleted = lsp(port("host-1", true), None, ChangeKind::Delete);
        deleted.old = deleted.new.take();
        assert_eq!(reasons(&deleted, &agent), [PORT_EXPOSURE_CHANGE]);
        // Elsewhere before and after, or a change of another column: nothing.
        let elsewhere = lsp(
            port("host-2", true),
            Some(json!({"up": false})),
            ChangeKind::Update,
        );
        assert!(reasons(&elsewhere, &agent).is_empty());
        let relabelled = lsp(
            port("host-1", true),
            Some(json!({"name": "vm-0"})),
            ChangeKind::Update,
        );
        assert!(reasons(&relabelled, &agent).is_empty());
    }

    /// Found by the trigger oracle's long run (NB underlay, seeds 101-130):
    /// a port unbound without going down, turned into a `localport`, or a
    /// tenant port behind a local gateway deleted, woke nothing.
    #[test]
    fn a_port_unbound_retyped_or_deleted_behind_a_local_gateway_wakes_a_reconcile() {
        let agent = FakeAgent {
            chassis: "host-1".into(),
            lrp_networks: vec!["neutron-tenant".into()],
            ..FakeAgent::default()
        };
        let change =
            |new: Option<serde_json::Value>, old: Option<serde_json::Value>, kind| Change {
                table: Arc::from("Logical_Switch_Port"),
                uuid: uuid(3),
                kind,
                new: new.map(|n| Arc::new(row(n))),
                old: old.map(|o| Arc::new(row(o))),
            };
        let unbound = change(
            Some(json!({"name": "vm-1", "type": "", "up": true,
                        "addresses": "fa:16:3e:00:00:12 172.24.4.12"})),
            Some(json!({"options": ["map", [["requested-chassis", "host-1"]]]})),
            ChangeKind::Update,
        );
        assert_eq!(reasons(&unbound, &agent), [PORT_EXPOSURE_CHANGE]);
        let retyped = change(
            Some(json!({"name": "vm-1", "type": "localport", "up": true,
                        "addresses": "fa:16:3e:00:00:12 172.24.4.12",
                        "options": ["map", [["requested-chassis", "host-1"]]]})),
            Some(json!({"type": ""})),
            ChangeKind::Update,
        );
        assert_eq!(reasons(&retyped, &agent), [PORT_EXPOSURE_CHANGE]);
        let tenant = json!({"name": "vm-2", "type": "", "up": true,
            "addresses": "fa:16:3e:00:00:13 10.0.0.13",
            "options": ["map", [["requested-chassis", "host-2"]]],
            "external_ids": ["map", [["neutron:network_name", "neutron-tenant"]]]});
        let deleted = change(None, Some(tenant), ChangeKind::Delete);
        assert_eq!(reasons(&deleted, &agent), [PORT_EXPOSURE_CHANGE]);
    }

    /// Found by the trigger oracle's long run (NB underlay, seeds 101,
    /// 102, 105): an LB VIP port (down) whose VIP is announced deleted, and
    /// a tenant port behind a local gateway bound here (its FIP's MAC
    /// changes), woke nothing.
    #[test]
    fn an_announced_vip_port_deleted_or_a_tenant_port_bound_here_wakes_a_reconcile() {
        let agent = FakeAgent {
            chassis: "host-1".into(),
            lrp_networks: vec!["neutron-tenant".into()],
            exposed: vec![("neutron-tenant".into(), "10.0.0.200".into())],
            ..FakeAgent::default()
        };
        let vip = json!({"name": "vip-1", "type": "", "up": false,
            "addresses": "fa:16:3e:00:00:99 10.0.0.200",
            "external_ids": ["map", [["neutron:network_name", "neutron-tenant"]]]});
        let deleted = Change {
            table: Arc::from("Logical_Switch_Port"),
            uuid: uuid(4),
            kind: ChangeKind::Delete,
            new: None,
            old: Some(Arc::new(row(vip))),
        };
        assert_eq!(reasons(&deleted, &agent), [PORT_EXPOSURE_CHANGE]);
        let tenant = |chassis: &str| {
            json!({"name": "vm-3", "type": "", "up": true,
                "addresses": "fa:16:3e:00:00:14 10.0.0.14",
                "options": ["map", [["requested-chassis", chassis]]],
                "external_ids": ["map", [["neutron:network_name", "neutron-tenant"]]]})
        };
        let bound_here = Change {
            table: Arc::from("Logical_Switch_Port"),
            uuid: uuid(5),
            kind: ChangeKind::Update,
            new: Some(Arc::new(row(tenant("host-1")))),
            old: Some(Arc::new(row(
                json!({"options": ["map", [["requested-chassis", "host-2"]]]}),
            ))),
        };
        assert_eq!(reasons(&bound_here, &agent), [PORT_EXPOSURE_CHANGE]);
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
