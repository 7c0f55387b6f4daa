//! The agent's own wake-ups for `ovn_stretched_l2_bgp_driver`, beside
//! upstream's classes (which it registers too, see the registry).
//!
//! Upstream's set was written for per-node events: its
//! PortBindingChassis* classes only see gateways bound *here*, and no class
//! sees a scope change. The stretched-L2 routes are the same on every node
//! and depend on every gateway, so upstream waits for its next sync when a
//! router gets a gateway, loses it or changes its IPs on another chassis.
//! These predicates wake a reconcile for such changes; a spurious wake-up
//! costs one reconcile that plans nothing.

use obgp_ovn::neutron::{key, port_type};
use obgp_ovsdb_data::{Change, ChangeKind, Row};

/// Reason: a gateway port (`chassisredirect` binding) was created,
/// deleted, or its `mac` (the gateway's MAC and IPs) changed, on any chassis.
pub const GATEWAY_CHANGE: &str = "StretchedL2GatewayChange";
/// Reason: the address scope of a patch port (a gateway's provider-side
/// port or a router interface's switch-side port) changed.
pub const SCOPE_CHANGE: &str = "StretchedL2AddressScopeChange";

fn scopes(row: &Row) -> (Option<&str>, Option<&str>) {
    (
        row.map_str("external_ids", key::ADDR_SCOPE4),
        row.map_str("external_ids", key::ADDR_SCOPE6),
    )
}

/// The agent's own reasons for `change` of the SB database (none for
/// other tables). `old` of an update holds the changed columns only.
pub fn reasons(change: &Change) -> Vec<&'static str> {
    if &*change.table != "Port_Binding" {
        return Vec::new();
    }
    let row = match change.kind {
        ChangeKind::Delete => change.old.as_deref(),
        _ => change.new.as_deref(),
    };
    let Some(row) = row else {
        return Vec::new();
    };
    let kind = row.str("type").unwrap_or("");
    let mut out = Vec::new();
    match change.kind {
        ChangeKind::Insert | ChangeKind::Delete => {
            if kind == port_type::CHASSISREDIRECT {
                out.push(GATEWAY_CHANGE);
            }
        }
        ChangeKind::Update => {
            let Some(old) = change.old.as_deref() else {
                return out;
            };
            if kind == port_type::CHASSISREDIRECT && old.get("mac").is_some() {
                out.push(GATEWAY_CHANGE);
            }
            if kind == port_type::PATCH
                && old.get("external_ids").is_some()
                && scopes(old) != scopes(row)
            {
                out.push(SCOPE_CHANGE);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use obgp_ovsdb_data::Uuid;
    use serde_json::json;

    use super::*;

    fn row(v: serde_json::Value) -> Arc<Row> {
        Arc::new(Row::from_wire(&v).unwrap())
    }

    fn change(kind: ChangeKind, new: Option<Arc<Row>>, old: Option<Arc<Row>>) -> Change {
        Change {
            table: Arc::from("Port_Binding"),
            uuid: Uuid(1),
            kind,
            new,
            old,
        }
    }

    fn cr(mac: &str) -> Arc<Row> {
        row(json!({"logical_port": "cr-lrp-gw", "type": "chassisredirect", "mac": mac}))
    }

    #[test]
    fn a_gateway_created_deleted_or_readdressed_anywhere_wakes_a_reconcile() {
        let gw = cr("fa:16:3e:aa:aa:01 172.24.4.100/24");
        let c = change(ChangeKind::Insert, Some(gw.clone()), None);
        assert_eq!(reasons(&c), [GATEWAY_CHANGE]);
        let c = change(ChangeKind::Delete, None, Some(gw.clone()));
        assert_eq!(reasons(&c), [GATEWAY_CHANGE]);
        let old = row(json!({"mac": "fa:16:3e:aa:aa:01 172.24.4.99/24"}));
        let c = change(ChangeKind::Update, Some(gw.clone()), Some(old));
        assert_eq!(reasons(&c), [GATEWAY_CHANGE]);
    }

    #[test]
    fn a_gateway_move_or_an_unrelated_column_wakes_nothing() {
        // The routes are the same whichever chassis hosts the gateway.
        let gw = cr("fa:16:3e:aa:aa:01 172.24.4.100/24");
        let old = row(json!({"chassis": ["set", []]}));
        let c = change(ChangeKind::Update, Some(gw), Some(old));
        assert!(reasons(&c).is_empty());
        let vm =
            row(json!({"logical_port": "vm", "type": "", "mac": "fa:16:3e:00:00:01 10.0.0.5"}));
        let c = change(ChangeKind::Insert, Some(vm), None);
        assert!(reasons(&c).is_empty());
    }

    #[test]
    fn an_address_scope_change_of_a_patch_port_wakes_a_reconcile() {
        let new = row(json!({"logical_port": "ri1", "type": "patch",
            "external_ids": ["map", [["neutron:subnet_pool_addr_scope4", "s2"]]]}));
        let old =
            row(json!({"external_ids": ["map", [["neutron:subnet_pool_addr_scope4", "s1"]]]}));
        let c = change(ChangeKind::Update, Some(new.clone()), Some(old));
        assert_eq!(reasons(&c), [SCOPE_CHANGE]);
        // Another external_ids key changed, the scopes did not.
        let old = row(json!({"external_ids": ["map", [
            ["neutron:subnet_pool_addr_scope4", "s2"], ["neutron:cidrs", "10.0.0.1/24"]]]}));
        let c = change(ChangeKind::Update, Some(new), Some(old));
        assert!(reasons(&c).is_empty());
    }
}
