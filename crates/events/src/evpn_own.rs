//! The agent's own wake-up for `ovn_evpn_driver`, beside upstream's
//! classes.
//!
//! Upstream's `PortBindingChassisCreatedEvent` / `...DeletedEvent` of the
//! EVPN watcher see a gateway port (`chassisredirect` binding) bound here
//! only when it had no chassis before, and unbound only when it has none
//! after. OVN moves a gateway by the new chassis claiming it: one update
//! from the old chassis to the new one, which neither class matches, so a
//! gateway failing over to or away from this node built or tore down its
//! VNI only at the next sync (trigger oracle, SB EVPN, seed 1 steps 3, 31
//! and 37).
//!
//! [`GATEWAY_MOVE`]: a `chassisredirect` binding whose `chassis` changed,
//! here before or after.

use obgp_ovsdb_data::{Change, ChangeKind, Row, Uuid};

use crate::agent::AgentView;

/// Reason: a gateway port moved to or from this chassis.
pub const GATEWAY_MOVE: &str = "EvpnGatewayMove";

/// The agent's own reasons for `change` of the SB database.
pub fn reasons(change: &Change, view: &dyn AgentView) -> Vec<&'static str> {
    if &*change.table != "Port_Binding" || change.kind != ChangeKind::Update {
        return Vec::new();
    }
    let (Some(new), Some(old)) = (change.new.as_deref(), change.old.as_deref()) else {
        return Vec::new();
    };
    // `old` lists the changed columns only: no `chassis`, no move.
    if new.str("type") != Some("chassisredirect") || old.columns.get("chassis").is_none() {
        return Vec::new();
    }
    let here = |row: &Row| {
        row.uuid("chassis")
            .is_some_and(|u| is_this_chassis(u, view))
    };
    if here(new) != here(old) {
        vec![GATEWAY_MOVE]
    } else {
        Vec::new()
    }
}

fn is_this_chassis(chassis: Uuid, view: &dyn AgentView) -> bool {
    view.row(chassis)
        .and_then(|c| c.text("name").ok())
        .is_some_and(|name| name.is(view.chassis()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::fake::{reference, row, uuid, FakeAgent};

    #[test]
    fn a_gateway_claimed_from_another_chassis_or_by_one_wakes_a_reconcile() {
        let (here, there, elsewhere) = (uuid(10), uuid(11), uuid(12));
        let mut agent = FakeAgent {
            chassis: "chassis-0".into(),
            ..FakeAgent::default()
        };
        for (u, name) in [
            (here, "chassis-0"),
            (there, "chassis-1"),
            (elsewhere, "chassis-2"),
        ] {
            agent.rows.insert(u, row(json!({"name": name})));
        }
        let moved = |from: Uuid, to: Uuid| Change {
            table: Arc::from("Port_Binding"),
            uuid: uuid(1),
            kind: ChangeKind::Update,
            new: Some(Arc::new(row(json!({"logical_port": "cr-lrp-1",
                "type": "chassisredirect", "chassis": reference(to),
                "mac": "fa:16:3e:00:00:01 172.24.4.1/24"})))),
            old: Some(Arc::new(row(json!({"chassis": reference(from)})))),
        };
        assert_eq!(reasons(&moved(there, here), &agent), [GATEWAY_MOVE]);
        assert_eq!(reasons(&moved(here, there), &agent), [GATEWAY_MOVE]);
        assert!(reasons(&moved(there, elsewhere), &agent).is_empty());
    }
}
