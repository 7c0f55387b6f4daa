//! Unit tests of `registry`, beside it so that they may use its private items.

use super::*;
use crate::fake::{row, FakeAgent};
use obgp_config::{Config, DefaultSection, Driver, ExposingMethod};
use obgp_ovsdb_data::{Change, ChangeKind};
use serde_json::json;

fn config(driver: Driver, tenant: bool, method: ExposingMethod) -> DefaultSection {
    let mut c = Config::default().default;
    c.driver = driver;
    c.expose_tenant_networks = tenant;
    c.exposing_method = method;
    c
}

fn classes(f: &Filters) -> Vec<&'static str> {
    let mut v: Vec<_> = f.all().map(|f| f.class).collect();
    v.sort_unstable();
    v
}

#[test]
fn every_catalog_class_is_reachable_by_module_and_name() {
    for f in catalog() {
        assert!(std::ptr::eq(
            filter(f.watcher.module(), f.class).unwrap(),
            f
        ));
    }
    assert_eq!(catalog().len(), 46);
}

#[test]
fn sb_driver_watches_tenant_classes_only_when_tenant_networks_are_exposed() {
    let plain = Filters::for_config(&config(
        Driver::OvnBgpDriver,
        false,
        ExposingMethod::Underlay,
    ));
    let tenant = Filters::for_config(&config(
        Driver::OvnBgpDriver,
        true,
        ExposingMethod::Underlay,
    ));
    assert_eq!(plain.all().count(), 9);
    assert_eq!(tenant.all().count(), 14);
    assert!(!classes(&plain).contains(&"TenantPortCreatedEvent"));
    assert!(classes(&tenant).contains(&"OVNLBVIPPortEvent"));
    assert_eq!(
        plain.tables(),
        vec![
            "Chassis",
            "Chassis_Private",
            "Load_Balancer",
            "Port_Binding"
        ]
    );
}

#[test]
fn stretched_l2_and_evpn_drivers_watch_their_upstream_sets() {
    let l2 = Filters::for_config(&config(
        Driver::OvnStretchedL2BgpDriver,
        false,
        ExposingMethod::Underlay,
    ));
    assert_eq!(
        classes(&l2),
        vec![
            "PortBindingChassisCreatedEvent",
            "PortBindingChassisDeletedEvent",
            "SubnetRouterAttachedEvent",
            "SubnetRouterDetachedEvent",
            "SubnetRouterUpdateEvent",
        ]
    );
    let evpn = Filters::for_config(&config(
        Driver::OvnEvpnDriver,
        false,
        ExposingMethod::Underlay,
    ));
    assert_eq!(evpn.all().count(), 9);
    assert!(evpn.all().all(|f| f.watcher == Watcher::Evpn));
}

#[test]
fn nb_driver_watches_switch_updates_for_vrf_and_localnets_otherwise() {
    let vrf = classes(&Filters::for_config(&config(
        Driver::NbOvnBgpDriver,
        false,
        ExposingMethod::Vrf,
    )));
    let underlay = classes(&Filters::for_config(&config(
        Driver::NbOvnBgpDriver,
        true,
        ExposingMethod::Underlay,
    )));
    assert!(
        vrf.contains(&"LogicalSwitchUpdateEvent") && !vrf.contains(&"LocalnetCreateDeleteEvent")
    );
    assert!(
        underlay.contains(&"LocalnetCreateDeleteEvent")
            && !underlay.contains(&"LogicalSwitchUpdateEvent")
    );
    assert!(underlay.contains(&"LogicalSwitchPortTenantCreateEvent"));
    assert!(!vrf.contains(&"LogicalSwitchPortSubnetAttachEvent"));
}

#[test]
fn nb_driver_in_l2vni_mode_watches_switch_updates_and_localnets() {
    let l2 = classes(&Filters::for_config(&config(
        Driver::NbOvnBgpDriver,
        false,
        ExposingMethod::L2vni,
    )));
    assert!(
        l2.contains(&"LogicalSwitchUpdateEvent") && l2.contains(&"LocalnetCreateDeleteEvent"),
        "{l2:?}"
    );
    assert!(l2.contains(&"LogicalSwitchPortProviderCreateEvent"));
}

#[test]
fn nb_driver_in_dynamic_mode_watches_the_union_of_the_three_methods() {
    for tenant in [false, true] {
        let of = |method| {
            classes(&Filters::for_config(&config(
                Driver::NbOvnBgpDriver,
                tenant,
                method,
            )))
        };
        let dynamic = of(ExposingMethod::Dynamic);
        let mut union: Vec<&str> = [
            ExposingMethod::Underlay,
            ExposingMethod::Vrf,
            ExposingMethod::L2vni,
        ]
        .into_iter()
        .flat_map(of)
        .collect();
        union.sort_unstable();
        union.dedup();
        assert_eq!(dynamic, union, "tenant {tenant}");
    }
}

/// A Logical_Switch update as the monitor gives it: the new row and the
/// old values of the changed columns.
fn switch_update(
    filters: &Filters,
    new: &[(&str, &str)],
    old: Option<&[(&str, &str)]>,
) -> Vec<&'static str> {
    let ids = |pairs: &[(&str, &str)]| {
        json!([
            "map",
            pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()
        ])
    };
    let row = row_of(json!({"name": "neutron-net-1", "external_ids": ids(new)}));
    let old = match old {
        Some(o) => row_of(json!({"external_ids": ids(o)})),
        None => row_of(json!({"name": "neutron-old-name"})),
    };
    filters.matching(
        "Logical_Switch",
        EventKind::Update,
        RowView::complete(&row),
        RowView::listed(&old),
        &FakeAgent::default(),
    )
}

#[test]
fn in_dynamic_mode_an_annotation_added_changed_or_removed_triggers() {
    let filters = Filters::for_config(&config(
        Driver::NbOvnBgpDriver,
        true,
        ExposingMethod::Dynamic,
    ));
    let l3 = [
        ("neutron_bgpvpn:type", "l3"),
        ("neutron_bgpvpn:vni", "1001"),
    ];
    let l2 = [
        ("neutron_bgpvpn:type", "l2"),
        ("neutron_bgpvpn:vni", "1001"),
    ];
    let other = [("neutron:network_name", "public")];
    let upd = ["LogicalSwitchUpdateEvent"];
    assert_eq!(
        switch_update(&filters, &l3, Some(&other)),
        upd,
        "underlay -> l3"
    );
    assert_eq!(switch_update(&filters, &l2, Some(&l3)), upd, "l3 -> l2");
    assert_eq!(
        switch_update(&filters, &other, Some(&l2)),
        upd,
        "l2 -> none"
    );
    assert!(
        switch_update(&filters, &l3, None).is_empty(),
        "external_ids unchanged"
    );
    assert!(
        switch_update(&filters, &l3, Some(&l3)).is_empty(),
        "same settings"
    );
}

fn nat_update_view() -> FakeAgent {
    let mut agent = FakeAgent {
        chassis: "host-1".to_string(),
        chassis_id: "sys-1".to_string(),
        ..FakeAgent::default()
    };
    agent.lsps.insert(
        "vm-port".to_string(),
        row(json!({"type": "", "options": ["map", [["requested-chassis", "host-1"]]]})),
    );
    agent
}

fn nat(kind: &str) -> obgp_ovsdb_data::datum::Row {
    row(json!({
        "type": kind, "logical_port": "vm-port", "external_ip": "172.24.4.50",
        "external_mac": "fa:16:3e:00:00:09",
        "external_ids": ["map", [["neutron:fip_network_id", "net-1"]]],
    }))
}

#[test]
fn nat_mac_update_is_a_reason_only_in_distributed_mode() {
    let filters = Filters::for_config(&config(
        Driver::NbOvnBgpDriver,
        false,
        ExposingMethod::Underlay,
    ));
    let row = nat("dnat_and_snat");
    let old = row_of(json!({"external_mac": ["set", []]}));
    let mut view = nat_update_view();
    view.distributed = true;
    let got = filters.matching(
        "NAT",
        EventKind::Update,
        RowView::complete(&row),
        RowView::listed(&old),
        &view,
    );
    assert_eq!(got, vec!["NATMACAddedEvent"]);
    view.distributed = false;
    let got = filters.matching(
        "NAT",
        EventKind::Update,
        RowView::complete(&row),
        RowView::listed(&old),
        &view,
    );
    assert!(got.is_empty());
}

fn row_of(v: serde_json::Value) -> obgp_ovsdb_data::datum::Row {
    row(v)
}

#[test]
fn class_condition_and_event_kind_are_checked_before_the_predicate() {
    let filters = Filters::for_config(&config(
        Driver::NbOvnBgpDriver,
        false,
        ExposingMethod::Underlay,
    ));
    let mut view = nat_update_view();
    view.distributed = true;
    let old = row_of(json!({"external_mac": ["set", []]}));
    let snat = nat("snat");
    let got = filters.matching(
        "NAT",
        EventKind::Update,
        RowView::complete(&snat),
        RowView::listed(&old),
        &view,
    );
    assert!(got.is_empty(), "snat rows fail the dnat_and_snat condition");
    let row = nat("dnat_and_snat");
    let got = filters.matching(
        "NAT",
        EventKind::Create,
        RowView::complete(&row),
        RowView::none(),
        &view,
    );
    assert!(got.is_empty(), "NATMACAddedEvent listens to updates only");
    let got = filters.matching(
        "Logical_Switch_Port",
        EventKind::Update,
        RowView::complete(&row),
        RowView::listed(&old),
        &view,
    );
    assert!(got.is_empty(), "wrong table");
}

#[test]
fn own_chassis_create_is_a_reason_for_sb_drivers() {
    let filters = Filters::for_config(&config(
        Driver::OvnBgpDriver,
        false,
        ExposingMethod::Underlay,
    ));
    let view = FakeAgent {
        chassis: "sys-1".to_string(),
        ..FakeAgent::default()
    };
    let ours = row_of(json!({"name": "sys-1"}));
    let other = row_of(json!({"name": "sys-2"}));
    let got = filters.matching(
        "Chassis_Private",
        EventKind::Create,
        RowView::complete(&ours),
        RowView::none(),
        &view,
    );
    assert_eq!(got, vec!["ChassisPrivateCreateEvent"]);
    let got = filters.matching(
        "Chassis",
        EventKind::Create,
        RowView::complete(&other),
        RowView::none(),
        &view,
    );
    assert!(got.is_empty());
}

#[test]
fn a_raising_predicate_is_no_match() {
    // ExposeFIPOnCRLRP on a NAT without gateway_port raises NATNotFound
    // upstream; the registry logs it and declines instead of aborting.
    let filters = Filters::for_config(&config(
        Driver::NbOvnBgpDriver,
        false,
        ExposingMethod::Underlay,
    ));
    let mut view = nat_update_view();
    view.distributed = false;
    let row = nat("dnat_and_snat");
    let got = filters.matching(
        "NAT",
        EventKind::Create,
        RowView::complete(&row),
        RowView::none(),
        &view,
    );
    assert!(got.is_empty(), "no gateway_port: NATNotFound upstream");
}

#[test]
fn cache_changes_map_to_ovsdbapp_arguments() {
    use std::sync::Arc;
    let filters = Filters::for_config(&config(
        Driver::OvnBgpDriver,
        false,
        ExposingMethod::Underlay,
    ));
    let view = FakeAgent::default();
    let localnet = Arc::new(row_of(
        json!({"type": "localnet", "logical_port": "provnet-1"}),
    ));
    let change = |kind,
                  new: Option<&Arc<obgp_ovsdb_data::Row>>,
                  old: Option<&Arc<obgp_ovsdb_data::Row>>| Change {
        table: Arc::from("Port_Binding"),
        uuid: crate::fake::uuid(7),
        kind,
        new: new.cloned(),
        old: old.cloned(),
    };
    let created = change(ChangeKind::Insert, Some(&localnet), None);
    assert_eq!(
        filters.matching_change(&created, &view),
        vec!["LocalnetCreateDeleteEvent"]
    );
    // A delete carries the deleted row in `old`; ovsdbapp passes it as `row`.
    let deleted = change(ChangeKind::Delete, None, Some(&localnet));
    assert_eq!(
        filters.matching_change(&deleted, &view),
        vec!["LocalnetCreateDeleteEvent"]
    );
    let previous = Arc::new(row_of(json!({"logical_port": "provnet-0"})));
    let updated = change(ChangeKind::Update, Some(&localnet), Some(&previous));
    assert!(
        filters.matching_change(&updated, &view).is_empty(),
        "localnet events ignore updates"
    );
}

#[test]
fn annotation_edits_wake_the_nb_evpn_methods_only() {
    let ids = |rd: &str| {
        json!({"external_ids": ["map", [
            ["neutron_bgpvpn:type", "l2"], ["neutron_bgpvpn:vni", "2001"], ["neutron_bgpvpn:rd", rd]
        ]]})
    };
    let change = Change {
        table: std::sync::Arc::from("Logical_Switch"),
        uuid: crate::fake::uuid(1),
        kind: ChangeKind::Update,
        new: Some(std::sync::Arc::new(row(ids("64512:2")))),
        old: Some(std::sync::Arc::new(row(ids("64512:1")))),
    };
    let view = FakeAgent::default();
    for (method, wakes) in [
        (ExposingMethod::Underlay, false),
        (ExposingMethod::Ovn, false),
        (ExposingMethod::Vrf, true),
        (ExposingMethod::L2vni, true),
        (ExposingMethod::Dynamic, true),
    ] {
        let f = Filters::for_config(&config(Driver::NbOvnBgpDriver, false, method));
        assert_eq!(
            f.own_reasons(&change, &view)
                .contains(&crate::bgpvpn_own::BGPVPN_ANNOTATION_CHANGE),
            wakes,
            "{method:?}"
        );
    }
}
