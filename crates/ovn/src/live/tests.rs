//! Unit tests of `live`, beside it so that they may use its private items.

use super::*;
use crate::Tables;
use serde_json::json;

const SW: Uuid = Uuid(0x10);
const LOCALNET: Uuid = Uuid(0x20);
const VM: Uuid = Uuid(0x21);
const LRP: Uuid = Uuid(0x30);
const FIP: Uuid = Uuid(0x40);

fn row(v: serde_json::Value) -> Row {
    Row::from_wire(&v).unwrap()
}

fn switch(ports: &[Uuid]) -> Row {
    let ports: Vec<_> = ports
        .iter()
        .map(|u| json!(["uuid", u.to_string()]))
        .collect();
    row(json!({"name": "neutron-net1", "ports": ["set", ports]}))
}

fn localnet() -> Row {
    row(json!({"name": "provnet-1", "type": "localnet",
                   "options": ["map", [["network_name", "physnet1"]]]}))
}

#[test]
fn a_port_arriving_after_its_switch_clears_the_dangling_warning_and_becomes_its_localnet() {
    let mut live = LiveSnapshot::default();
    live.apply_nb([(LogicalSwitch::TABLE, SW, Some(&switch(&[LOCALNET])))]);
    let before = live.snapshot();
    assert!(before.localnet_of_switch("neutron-net1").is_none());
    assert!(before.warnings()[0].reason.contains("missing row"));

    live.apply_nb([(LogicalSwitchPort::TABLE, LOCALNET, Some(&localnet()))]);
    let after = live.snapshot();
    assert_eq!(
        after.localnet_of_switch("neutron-net1").map(|p| p.uuid),
        Some(LOCALNET)
    );
    assert!(after.warnings().is_empty(), "{:?}", after.warnings());
    // The snapshot handed out earlier did not move.
    assert!(before.localnet_of_switch("neutron-net1").is_none());
}

#[test]
fn with_partial_ports_a_port_missing_from_the_cache_is_not_dangling() {
    let mut live = LiveSnapshot::with_partial_ports();
    live.apply_nb([(LogicalSwitch::TABLE, SW, Some(&switch(&[VM, LOCALNET])))]);
    assert!(live.snapshot().warnings().is_empty());
    // The localnet arriving (a condition now selects it) is found as usual.
    live.apply_nb([(LogicalSwitchPort::TABLE, LOCALNET, Some(&localnet()))]);
    let s = live.snapshot();
    assert_eq!(
        s.localnet_of_switch("neutron-net1").map(|p| p.uuid),
        Some(LOCALNET)
    );
    // And leaving it (the condition no longer selects it) warns of nothing.
    live.apply_nb([(LogicalSwitchPort::TABLE, LOCALNET, None)]);
    let s = live.snapshot();
    assert!(s.localnet_of_switch("neutron-net1").is_none());
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
}

#[test]
fn a_garbled_port_is_not_a_dangling_reference() {
    let mut live = LiveSnapshot::default();
    let bad = row(json!({"name": "vm", "addresses": "zz 10.0.0.1"}));
    live.apply_nb([
        (LogicalSwitch::TABLE, SW, Some(&switch(&[VM]))),
        (LogicalSwitchPort::TABLE, VM, Some(&bad)),
    ]);
    let s = live.snapshot();
    assert_eq!(s.warnings().len(), 1);
    assert_eq!(s.warnings()[0].table, LogicalSwitchPort::TABLE);
    // Deleting it turns the parse error into a dangling reference.
    live.apply_nb([(LogicalSwitchPort::TABLE, VM, None)]);
    let s = live.snapshot();
    assert_eq!(s.warnings().len(), 1);
    assert_eq!(s.warnings()[0].table, LogicalSwitch::TABLE);
}

/// A live snapshot holding the gateway LRP `LRP` and the FIP `FIP` of
/// port `vm1` on it; also returns the LRP's row, to apply it again.
fn gateway_lrp_with_a_fip() -> (LiveSnapshot, Row) {
    let mut live = LiveSnapshot::default();
    let lrp = row(json!({"name": "lrp-gw", "mac": "fa:16:3e:00:00:10",
                         "networks": "172.24.4.1/24"}));
    let fip = row(
        json!({"type": "dnat_and_snat", "external_ip": "172.24.4.100",
                         "logical_ip": "10.0.0.5", "logical_port": "vm1",
                         "gateway_port": ["uuid", LRP.to_string()]}),
    );
    live.apply_nb([
        (LogicalRouterPort::TABLE, LRP, Some(&lrp)),
        (Nat::TABLE, FIP, Some(&fip)),
    ]);
    (live, lrp)
}

#[test]
fn deleting_the_gateway_lrp_takes_the_fip_off_the_gateway_index() {
    let (mut live, lrp) = gateway_lrp_with_a_fip();
    assert_eq!(live.snapshot().fips_on_gateway_port(LRP).count(), 1);

    live.apply_nb([(LogicalRouterPort::TABLE, LRP, None)]);
    let s = live.snapshot();
    assert_eq!(s.fips_on_gateway_port(LRP).count(), 0);
    assert_eq!(s.nat_of_logical_port("vm1").unwrap().gateway_port, None);
    assert!(s.warnings()[0].reason.contains("gateway_port"));

    live.apply_nb([(LogicalRouterPort::TABLE, LRP, Some(&lrp))]);
    assert_eq!(live.snapshot().fips_on_gateway_port(LRP).count(), 1);
    assert!(live.snapshot().warnings().is_empty());
}

/// The snapshot serves the parsed NAT itself, not a copy, unless its
/// `gateway_port` had to be cleared; the parsed one keeps the reference,
/// so the FIP returns to the gateway with its LRP.
#[test]
fn a_nat_is_held_once_unless_its_gateway_port_is_cleared() {
    let (mut live, lrp) = gateway_lrp_with_a_fip();
    assert!(Arc::ptr_eq(&live.nats_parsed[&FIP], &live.nb.nats[&FIP]));

    live.apply_nb([(LogicalRouterPort::TABLE, LRP, None)]);
    assert!(!Arc::ptr_eq(&live.nats_parsed[&FIP], &live.nb.nats[&FIP]));
    assert_eq!(live.nb.nats[&FIP].gateway_port, None);
    assert_eq!(live.nats_parsed[&FIP].gateway_port, Some(LRP));

    live.apply_nb([(LogicalRouterPort::TABLE, LRP, Some(&lrp))]);
    assert!(Arc::ptr_eq(&live.nats_parsed[&FIP], &live.nb.nats[&FIP]));
}

#[test]
fn renaming_a_port_moves_it_and_the_first_by_uuid_keeps_the_name() {
    let mut live = LiveSnapshot::default();
    let named = |n: &str| row(json!({"name": n, "type": "localnet"}));
    live.apply_nb([
        (LogicalSwitchPort::TABLE, VM, Some(&named("dup"))),
        (LogicalSwitchPort::TABLE, LOCALNET, Some(&named("dup"))),
    ]);
    // LOCALNET (0x20) sorts before VM (0x21).
    assert_eq!(live.snapshot().lsp("dup").unwrap().uuid, LOCALNET);
    live.apply_nb([(LogicalSwitchPort::TABLE, LOCALNET, Some(&named("other")))]);
    let s = live.snapshot();
    assert_eq!(s.lsp("dup").unwrap().uuid, VM);
    assert_eq!(s.lsp("other").unwrap().uuid, LOCALNET);
}

#[test]
fn a_changed_row_whose_index_keys_stay_is_served_fresh_through_every_index() {
    let mut live = LiveSnapshot::default();
    let vm = |ip: &str| {
        row(json!({"name": "vm1", "up": true,
                       "addresses": format!("fa:16:3e:00:00:01 {ip}"),
                       "options": ["map", [["requested-chassis", "c1"]]],
                       "external_ids": ["map", [["neutron:network_name", "neutron-net1"]]]}))
    };
    let provnet = |tag: u16| {
        row(json!({"name": "provnet-1", "type": "localnet", "tag": tag,
                       "options": ["map", [["network_name", "physnet1"]]]}))
    };
    let (old_vm, old_provnet) = (vm("10.0.0.5"), provnet(100));
    live.apply_nb([
        (LogicalSwitch::TABLE, SW, Some(&switch(&[LOCALNET, VM]))),
        (LogicalSwitchPort::TABLE, LOCALNET, Some(&old_provnet)),
        (LogicalSwitchPort::TABLE, VM, Some(&old_vm)),
    ]);
    let before = live.snapshot();

    // Same name, chassis, network and physnet: no index key moves.
    let (new_vm, new_provnet) = (vm("10.0.0.6"), provnet(200));
    live.apply_nb([
        (LogicalSwitchPort::TABLE, VM, Some(&new_vm)),
        (LogicalSwitchPort::TABLE, LOCALNET, Some(&new_provnet)),
    ]);
    let s = live.snapshot();
    let ips = |p: &LogicalSwitchPort| {
        p.addresses
            .ips
            .iter()
            .map(|ip| ip.to_string())
            .collect::<Vec<_>>()
    };
    let on_chassis: Vec<_> = s.active_vifs_on_chassis("c1").map(ips).collect();
    assert_eq!(on_chassis, [["10.0.0.6"]]);
    let on_network: Vec<_> = s.active_vifs_on_network("neutron-net1").map(ips).collect();
    assert_eq!(on_network, [["10.0.0.6"]]);
    assert_eq!(ips(s.lsp("vm1").unwrap()), ["10.0.0.6"]);
    assert_eq!(s.localnet_of_switch("neutron-net1").unwrap().tag, Some(200));
    assert_eq!(
        s.localnets_on_physnet("physnet1").next().unwrap().tag,
        Some(200)
    );
    assert_eq!(s.lsp("provnet-1").unwrap().tag, Some(200));
    // Exactly what a fresh build of the new rows serves.
    let mut fresh = LiveSnapshot::default();
    fresh.apply_nb([
        (LogicalSwitch::TABLE, SW, Some(&switch(&[LOCALNET, VM]))),
        (LogicalSwitchPort::TABLE, LOCALNET, Some(&new_provnet)),
        (LogicalSwitchPort::TABLE, VM, Some(&new_vm)),
    ]);
    assert_eq!(s, fresh.snapshot());
    // The snapshot handed out before the change still serves the old rows.
    let old_on_chassis: Vec<_> = before.active_vifs_on_chassis("c1").map(ips).collect();
    assert_eq!(old_on_chassis, [["10.0.0.5"]]);
    assert_eq!(
        before.localnet_of_switch("neutron-net1").unwrap().tag,
        Some(100)
    );
}

#[test]
fn a_big_switch_gaining_and_losing_ports_keeps_its_localnet_and_dangling_refs() {
    let mut live = LiveSnapshot::default();
    let vm = |i: u128| (LogicalSwitchPort::TABLE, Uuid(0x1000 + i));
    let vm_row = row(json!({"name": "vm", "up": true}));
    let mut ports: Vec<Uuid> = (0..200).map(|i| vm(i).1).collect();
    ports.push(LOCALNET);
    let mut rows: Vec<(&str, Uuid, Option<&Row>)> = (0..200)
        .map(|i| (vm(i).0, vm(i).1, Some(&vm_row)))
        .collect();
    let (localnet_row, sw) = (localnet(), switch(&ports));
    rows.push((LogicalSwitchPort::TABLE, LOCALNET, Some(&localnet_row)));
    rows.push((LogicalSwitch::TABLE, SW, Some(&sw)));
    live.apply_nb(rows);
    // One more port, listed before its row exists: a dangling reference.
    ports.push(VM);
    let sw = switch(&ports);
    live.apply_nb([(LogicalSwitch::TABLE, SW, Some(&sw))]);
    let s = live.snapshot();
    assert_eq!(s.localnet_of_switch("neutron-net1").unwrap().uuid, LOCALNET);
    assert_eq!(s.warnings().len(), 1, "{:?}", s.warnings());
    // The row arrives; then the localnet leaves the switch.
    live.apply_nb([(LogicalSwitchPort::TABLE, VM, Some(&vm_row))]);
    assert!(live.snapshot().warnings().is_empty());
    ports.retain(|p| *p != LOCALNET);
    let sw = switch(&ports);
    live.apply_nb([(LogicalSwitch::TABLE, SW, Some(&sw))]);
    let s = live.snapshot();
    assert!(s.localnet_of_switch("neutron-net1").is_none());
    assert!(s.warnings().is_empty());
    // Each step equals a fresh build of the same rows.
    let mut fresh = LiveSnapshot::default();
    let mut all: Vec<(&str, Uuid, Option<&Row>)> = (0..200)
        .map(|i| (vm(i).0, vm(i).1, Some(&vm_row)))
        .collect();
    all.push((LogicalSwitchPort::TABLE, LOCALNET, Some(&localnet_row)));
    all.push((LogicalSwitchPort::TABLE, VM, Some(&vm_row)));
    all.push((LogicalSwitch::TABLE, SW, Some(&sw)));
    fresh.apply_nb(all);
    assert_eq!(s, fresh.snapshot());
    assert_eq!(live.notable_ports, fresh.notable_ports);
}

#[test]
fn a_chassis_listed_twice_binds_the_port_once() {
    let mut live = LiveSnapshot::default();
    let vm = row(json!({"name": "vm", "up": true,
                            "options": ["map", [["requested-chassis", "c1,c1"]]]}));
    live.apply_nb([(LogicalSwitchPort::TABLE, VM, Some(&vm))]);
    assert_eq!(live.snapshot().active_vifs_on_chassis("c1").count(), 1);
    live.apply_nb([(LogicalSwitchPort::TABLE, VM, None)]);
    assert_eq!(live.snapshot(), Snapshot::default());
}

fn vm(up: bool) -> Row {
    row(
        json!({"name": "vm1", "up": up, "addresses": "fa:16:3e:00:00:21 10.0.0.21",
                   "options": ["map", [["requested-chassis", "host-1"]]]}),
    )
}

/// A live snapshot reset to a switch with its localnet and a VM port.
fn started() -> LiveSnapshot {
    let mut nb: crate::Tables = Default::default();
    nb.entry(LogicalSwitch::TABLE.into())
        .or_default()
        .insert(SW, switch(&[LOCALNET, VM]));
    let ports = nb.entry(LogicalSwitchPort::TABLE.into()).or_default();
    ports.insert(LOCALNET, localnet());
    ports.insert(VM, vm(false));
    let mut live = LiveSnapshot::default();
    live.reset_nb(&nb);
    live
}

/// The ports `changes` names between `earlier` and `later`, or `None`.
fn ports_between(changes: &NbChanges, earlier: &Snapshot, later: &Snapshot) -> Option<Vec<Uuid>> {
    changes
        .ports_between(earlier, later)
        .map(|p| p.iter().map(|c| c.uuid).collect())
}

#[test]
fn an_update_returns_the_ports_it_changed_and_updates_accumulate() {
    let mut live = started();
    let s0 = live.snapshot();
    assert_eq!(
        ports_between(&NbChanges::none_since(&s0), &s0, &s0),
        Some(vec![])
    );
    let first = live.apply_nb([(LogicalSwitchPort::TABLE, VM, Some(&vm(true)))]);
    let s1 = live.snapshot();
    assert_eq!(ports_between(&first, &s0, &s1), Some(vec![VM]));
    let second = live.apply_nb([(LogicalSwitch::TABLE, SW, Some(&switch(&[LOCALNET])))]);
    let s2 = live.snapshot();
    assert_eq!(ports_between(&second, &s1, &s2), Some(vec![]));
    let mut both = first.clone();
    both.then(second.clone());
    assert_eq!(ports_between(&both, &s0, &s2), Some(vec![VM]));
    // An accumulation started from nothing takes the first changes as they are.
    let mut from_nothing = NbChanges::none();
    from_nothing.then(first.clone());
    assert_eq!(ports_between(&from_nothing, &s0, &s1), Some(vec![VM]));
    // Only between the two states they lie between.
    assert_eq!(ports_between(&both, &s1, &s2), None);
    assert_eq!(ports_between(&first, &s0, &s2), None);
    assert_eq!(ports_between(&first, &Snapshot::default(), &s1), None);
    assert_eq!(
        ports_between(
            &NbChanges::none_since(&Snapshot::default()),
            &Snapshot::default(),
            &Snapshot::default()
        ),
        None,
        "a snapshot of unknown history"
    );
    // Out of order, or with a batch left out: not known.
    let mut reversed = second;
    reversed.then(first.clone());
    assert!(reversed.is_full());
    let third = live.apply_nb([(LogicalSwitchPort::TABLE, VM, Some(&vm(false)))]);
    let mut skipping = first;
    skipping.then(third);
    assert!(skipping.is_full());
    // A reset: not known either, and history is not content.
    assert!(live.reset_nb(&Tables::new()).is_full());
    assert_eq!(s0, started().snapshot());
}

#[test]
fn a_port_changed_in_several_updates_keeps_its_first_old_row_and_last_new_row() {
    let mut live = started();
    let s0 = live.snapshot();
    let mut changes = NbChanges::none_since(&s0);
    for up in [true, false, true] {
        changes.then(live.apply_nb([(LogicalSwitchPort::TABLE, VM, Some(&vm(up)))]));
    }
    let s1 = live.snapshot();
    let ports = changes.ports_between(&s0, &s1).expect("ports only");
    let change = ports.iter().next().expect("the VM port");
    assert_eq!(ports.len(), 1);
    assert!(!change.old.as_ref().expect("was there").up);
    assert!(change.new.as_ref().expect("is there").up);
    // Deleted at the end: no new row.
    changes.then(live.apply_nb([(LogicalSwitchPort::TABLE, VM, None)]));
    let s2 = live.snapshot();
    let change = changes.ports_between(&s0, &s2).expect("ports only");
    let change = change.iter().next().expect("the VM port");
    assert!(change.old.is_some() && change.new.is_none());
}

#[test]
fn port_changes_are_reported_only_when_nothing_else_changed() {
    let mut live = started();
    let s0 = live.snapshot();
    // A VM port comes up and its switch lists it again: ports only.
    let changes = live.apply_nb([
        (LogicalSwitchPort::TABLE, VM, Some(&vm(true))),
        (LogicalSwitch::TABLE, SW, Some(&switch(&[LOCALNET, VM]))),
    ]);
    let s1 = live.snapshot();
    let changes: Vec<_> = changes
        .ports_between(&s0, &s1)
        .expect("ports only")
        .iter()
        .cloned()
        .collect();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].uuid, VM);
    assert!(!changes[0].old.as_ref().unwrap().up);
    assert!(changes[0].new.as_ref().unwrap().up);
    assert!(s1.is_active_vif_on("host-1", VM));
    assert!(!s0.is_active_vif_on("host-1", VM));

    // NB_Global's liveness bumps change nothing the agent reads; its
    // FIP mode does.
    let global = |fip: &str| {
        row(json!({"external_ids": ["map", [
                ["neutron:liveness_check_at", "now"], [crate::neutron::key::FIP_DISTRIBUTED, fip]]]}))
    };
    const GLOBAL: Uuid = Uuid(0x50);
    let bumped = live.apply_nb([(NbGlobal::TABLE, GLOBAL, Some(&global("True")))]);
    assert_eq!(ports_between(&bumped, &s1, &live.snapshot()), Some(vec![]));
    assert!(live
        .apply_nb([(NbGlobal::TABLE, GLOBAL, Some(&global("False")))])
        .is_full());
    live.apply_nb([(NbGlobal::TABLE, GLOBAL, None)]);

    // A localnet change moves provider wiring: not ports only.
    let mut tagged = localnet();
    tagged.columns.insert(
        "tag",
        obgp_ovsdb_data::Datum::from_wire(&json!(100)).unwrap(),
    );
    assert!(live
        .apply_nb([(LogicalSwitchPort::TABLE, LOCALNET, Some(&tagged))])
        .is_full());

    // Nor is a renamed switch, a switch losing its localnet, or a row of
    // another table.
    let renamed = row(json!({"name": "neutron-net2",
            "ports": ["set", [["uuid", LOCALNET.to_string()], ["uuid", VM.to_string()]]]}));
    assert!(live
        .apply_nb([(LogicalSwitch::TABLE, SW, Some(&renamed))])
        .is_full());
    assert!(live
        .apply_nb([(LogicalSwitch::TABLE, SW, Some(&switch(&[VM])))])
        .is_full());
    let lrp = row(json!({"name": "lrp-gw", "mac": "fa:16:3e:00:00:10",
                             "networks": "172.24.4.1/24"}));
    assert!(live
        .apply_nb([(LogicalRouterPort::TABLE, LRP, Some(&lrp))])
        .is_full());
}

#[test]
fn the_local_ovs_view_changing_is_more_than_ports() {
    let mut live = started();
    let before = live.snapshot();
    let unchanged = live.reset_ovs(&Tables::new());
    assert_eq!(
        ports_between(&unchanged, &before, &live.snapshot()),
        Some(vec![])
    );
    let mut ovs = Tables::new();
    ovs.entry("Open_vSwitch".into()).or_default().insert(
        Uuid(0x60),
        row(json!({"external_ids": ["map", [["system-id", "chassis-1"], ["hostname", "host-1"]]]})),
    );
    assert!(live.reset_ovs(&ovs).is_full());
}

#[test]
fn dhcp_options_rows_are_patched_like_a_fresh_build() {
    const DHCP: Uuid = Uuid(0x50);
    let dhcp = |router: &str| {
        row(json!({"cidr": "10.0.0.0/24",
                   "options": ["map", [["router", router], ["lease_time", "43200"]]]}))
    };
    let port = row(json!({"name": "vm1", "dhcpv4_options": ["uuid", DHCP.to_string()]}));
    let mut live = LiveSnapshot::default();
    live.apply_nb([
        (LogicalSwitchPort::TABLE, VM, Some(&port)),
        (DhcpOptions::TABLE, DHCP, Some(&dhcp("10.0.0.1"))),
    ]);
    let before = live.snapshot();
    let router = |s: &Snapshot| {
        let at = s.lsp("vm1").unwrap().dhcpv4_options.unwrap();
        s.dhcp_options(at).map(|d| d.options["router"].clone())
    };
    assert_eq!(router(&before).as_deref(), Some("10.0.0.1"));

    let changes = live.apply_nb([(DhcpOptions::TABLE, DHCP, Some(&dhcp("10.0.0.254")))]);
    let s = live.snapshot();
    assert_eq!(router(&s).as_deref(), Some("10.0.0.254"));
    let mut fresh = LiveSnapshot::default();
    fresh.apply_nb([
        (LogicalSwitchPort::TABLE, VM, Some(&port)),
        (DhcpOptions::TABLE, DHCP, Some(&dhcp("10.0.0.254"))),
    ]);
    assert_eq!(s, fresh.snapshot());
    // A DHCP change is not a port-only change.
    assert!(changes.is_full());
    assert_eq!(router(&before).as_deref(), Some("10.0.0.1"));

    // Garbled, then deleted: a warning, then nothing.
    live.apply_nb([(DhcpOptions::TABLE, DHCP, Some(&row(json!({"cidr": "x"}))))]);
    assert_eq!(router(&live.snapshot()), None);
    assert_eq!(live.snapshot().warnings()[0].table, DhcpOptions::TABLE);
    live.apply_nb([(DhcpOptions::TABLE, DHCP, None)]);
    let s = live.snapshot();
    assert_eq!(router(&s), None);
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
    let mut fresh = LiveSnapshot::default();
    fresh.apply_nb([(LogicalSwitchPort::TABLE, VM, Some(&port))]);
    assert_eq!(s, fresh.snapshot());
}

#[test]
fn gateway_rows_stay_shared_until_a_gateway_port_or_router_interface_changes() {
    const IFACE: Uuid = Uuid(0x31);
    let gateway = |chassis: &str| {
        row(
            json!({"name": "lrp-gw", "mac": "fa:16:3e:00:00:10", "networks": "172.24.4.1/24",
                   "external_ids": ["map", [["neutron:router_name", "r1"]]],
                   "status": ["map", [["hosting-chassis", chassis]]]}),
        )
    };
    let interface = |network: &str| {
        row(json!({"name": "rif", "type": "router", "up": true,
                   "external_ids": ["map", [["neutron:device_owner", "network:router_interface"],
                                           ["neutron:device_id", "r1"],
                                           ["neutron:network_name", network]]]}))
    };
    let mut live = started();
    live.apply_nb([
        (LogicalRouterPort::TABLE, LRP, Some(&gateway("chassis-1"))),
        (
            LogicalSwitchPort::TABLE,
            IFACE,
            Some(&interface("neutron-net1")),
        ),
    ]);
    let before = live.snapshot();
    assert_eq!(before.lrps_hosted_on("chassis-1").count(), 1);
    assert_eq!(before.router_interfaces("r1").count(), 1);

    // A VM port coming up touches neither map.
    live.apply_nb([(LogicalSwitchPort::TABLE, VM, Some(&vm(true)))]);
    assert!(live.snapshot().shares_gateway_rows(&before));

    // The gateway moving, or an interface changing network, does.
    live.apply_nb([(LogicalRouterPort::TABLE, LRP, Some(&gateway("chassis-2")))]);
    let moved = live.snapshot();
    assert!(!moved.shares_gateway_rows(&before));
    assert_eq!(moved.lrps_hosted_on("chassis-1").count(), 0);
    live.apply_nb([(
        LogicalSwitchPort::TABLE,
        IFACE,
        Some(&interface("neutron-net2")),
    )]);
    assert!(!live.snapshot().shares_gateway_rows(&moved));
}

/// A switch's port list changes with every port, so a switch change is a
/// port change; its BGPVPN annotations are not: the EVPN modes and the
/// port conditions (every port while an annotated switch exists) read them.
#[test]
fn a_switch_annotated_for_bgpvpn_is_more_than_a_port_change() {
    let mut live = LiveSnapshot::default();
    live.apply_nb([(LogicalSwitch::TABLE, SW, Some(&switch(&[VM])))]);
    let ports_only = live.apply_nb([(LogicalSwitch::TABLE, SW, Some(&switch(&[])))]);
    assert!(!ports_only.is_full(), "a port leaving the switch");
    let annotated = row(json!({"name": "neutron-net1", "ports": ["set", []],
        "external_ids": ["map", [["neutron_bgpvpn:type", "l3"], ["neutron_bgpvpn:vni", "1001"]]]}));
    let changes = live.apply_nb([(LogicalSwitch::TABLE, SW, Some(&annotated))]);
    assert!(changes.is_full(), "the annotation changed");
    assert_eq!(live.snapshot().bgpvpn_switches().len(), 1);
}
