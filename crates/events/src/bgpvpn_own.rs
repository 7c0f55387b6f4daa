//! The agent's own wake-up for the NB EVPN methods (`vrf`, `l2vni`,
//! `dynamic`): a Logical_Switch whose networking-bgpvpn annotations changed.
//!
//! Upstream's `LogicalSwitchUpdateEvent` compares only `type` and `vni`,
//! but the RD and the route targets (`:rd`, `:rt`, `:it`, `:et`) shape the
//! FRR text of the VNI too: an edit of them alone woke nothing and waited
//! for the periodic reconcile (`reconcile_interval`, 300 s).

use obgp_ovsdb_data::{Change, ChangeKind, Row};

/// Reason: a switch's `neutron_bgpvpn:*` annotations changed.
pub const BGPVPN_ANNOTATION_CHANGE: &str = "BgpvpnAnnotationChange";

/// The key prefix of every networking-bgpvpn annotation.
const PREFIX: &str = "neutron_bgpvpn:";

/// The reason for `change` of a Logical_Switch, if its annotations
/// changed. An update's `old` holds `external_ids` only when that column
/// changed; insertions and deletions are upstream's classes' (a new
/// switch matters once its localnet port exists, a deleted annotated one
/// is `LogicalSwitchUpdateEvent`'s).
pub fn reasons(change: &Change) -> Vec<&'static str> {
    if &*change.table != "Logical_Switch" || change.kind != ChangeKind::Update {
        return Vec::new();
    }
    let (Some(new), Some(old)) = (&change.new, &change.old) else {
        return Vec::new();
    };
    if old.get("external_ids").is_none() {
        return Vec::new();
    }
    if annotations(new) != annotations(old) {
        vec![BGPVPN_ANNOTATION_CHANGE]
    } else {
        Vec::new()
    }
}

/// The `neutron_bgpvpn:*` pairs of a row's `external_ids`.
fn annotations(row: &Row) -> Vec<(&str, &str)> {
    row.get("external_ids")
        .map(|d| d.pairs())
        .unwrap_or(&[])
        .iter()
        .filter_map(|(k, v)| Some((k.as_str()?, v.as_str()?)))
        .filter(|(k, _)| k.starts_with(PREFIX))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::fake::{row, uuid};

    fn update(table: &str, new: serde_json::Value, old: serde_json::Value) -> Change {
        Change {
            table: Arc::from(table),
            uuid: uuid(1),
            kind: ChangeKind::Update,
            new: Some(Arc::new(row(new))),
            old: Some(Arc::new(row(old))),
        }
    }

    fn ids(pairs: &[(&str, &str)]) -> serde_json::Value {
        json!({"external_ids": ["map", pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()]})
    }

    #[test]
    fn an_rd_or_route_target_edit_alone_wakes_a_reconcile() {
        let base = [
            ("neutron_bgpvpn:type", "l2"),
            ("neutron_bgpvpn:vni", "2001"),
        ];
        let with = |extra: (&str, &str)| {
            let mut v = base.to_vec();
            v.push(extra);
            ids(&v)
        };
        for (before, after) in [
            (
                with(("neutron_bgpvpn:rd", "64512:1")),
                with(("neutron_bgpvpn:rd", "64512:2")),
            ),
            (ids(&base), with(("neutron_bgpvpn:rt", "64512:1"))),
            (with(("neutron_bgpvpn:et", "64512:3")), ids(&base)),
        ] {
            let c = update("Logical_Switch", after, before);
            assert_eq!(reasons(&c), [BGPVPN_ANNOTATION_CHANGE], "{c:?}");
        }
    }

    #[test]
    fn other_changes_and_other_tables_wake_nothing() {
        let annotated = [
            ("neutron_bgpvpn:type", "l3"),
            ("neutron_bgpvpn:vni", "1001"),
        ];
        let mut other = annotated.to_vec();
        other.push(("neutron:network_name", "public"));
        // external_ids changed, but not the annotations.
        let c = update("Logical_Switch", ids(&other), ids(&annotated));
        assert!(reasons(&c).is_empty());
        // external_ids unchanged (not in `old`).
        let c = update("Logical_Switch", ids(&annotated), json!({"name": "old"}));
        assert!(reasons(&c).is_empty());
        let c = update("Logical_Switch_Port", ids(&annotated), ids(&[]));
        assert!(reasons(&c).is_empty());
    }
}
