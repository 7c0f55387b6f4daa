//! Unit tests of `nb`, beside it so that they may use its private items.

//! The NB classes upstream never unit-tests (no recorded vectors):
//! FipOnCRLRPBaseEvent, CrLrpChassisChange*, OVNPFBaseEvent.
use super::*;
use crate::fake::{reference, row, uuid, FakeAgent};
use crate::Event;
use obgp_ovsdb_data::datum::Row;
use serde_json::json;

const HERE: &str = "f3b1a6c2-7d4e-4c1a-9b8e-2d5f6a7b8c90";
const ELSEWHERE: &str = "0a0a0a0a-7d4e-4c1a-9b8e-2d5f6a7b8c90";
const ROUTER: &str = "c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f";

fn agent_with_gateway(hosting: Option<&str>, lsp_type: &str) -> FakeAgent {
    let mut agent = FakeAgent {
        chassis_id: HERE.to_string(),
        ..FakeAgent::default()
    };
    let status = match hosting {
        Some(h) => json!(["map", [["hosting-chassis", h]]]),
        None => json!(["map", []]),
    };
    agent.rows.insert(
        uuid(1),
        row(json!({"name": "lrp-gw", "networks": "172.24.4.10/24", "status": status})),
    );
    agent.lsps.insert(
        "vm-port".to_string(),
        row(json!({"name": "vm-port", "type": lsp_type})),
    );
    agent
}

fn fip_nat(gateway: bool, with_fip_net: bool) -> Row {
    let ids = if with_fip_net {
        json!(["map", [["neutron:fip_network_id", "net-1"]]])
    } else {
        json!(["map", []])
    };
    let gw = if gateway {
        reference(uuid(1))
    } else {
        json!(["set", []])
    };
    row(json!({
        "type": "dnat_and_snat", "external_ip": "172.24.4.50", "logical_ip": "10.0.0.12",
        "logical_port": "vm-port", "external_ids": ids, "gateway_port": gw,
    }))
}

fn fip_on_cr_lrp_of(nat: &Row, agent: &FakeAgent) -> Result<bool, Raised> {
    fip_on_cr_lrp(
        Event::Is(EventKind::Create),
        RowView::complete(nat),
        RowView::none(),
        agent,
    )
}

#[test]
fn centralized_fip_of_vm_port_matches_when_gateway_is_hosted_here() {
    let agent = agent_with_gateway(Some(HERE), "");
    assert_eq!(fip_on_cr_lrp_of(&fip_nat(true, true), &agent), Ok(true));
}

#[test]
fn centralized_fip_of_virtual_port_matches_too() {
    let agent = agent_with_gateway(Some(HERE), "virtual");
    assert_eq!(fip_on_cr_lrp_of(&fip_nat(true, true), &agent), Ok(true));
}

#[test]
fn centralized_fip_is_ignored_when_gateway_is_hosted_elsewhere() {
    let agent = agent_with_gateway(Some(ELSEWHERE), "");
    assert_eq!(fip_on_cr_lrp_of(&fip_nat(true, true), &agent), Ok(false));
}

#[test]
fn centralized_fip_of_a_router_port_is_ignored() {
    let agent = agent_with_gateway(Some(HERE), "router");
    assert_eq!(fip_on_cr_lrp_of(&fip_nat(true, true), &agent), Ok(false));
}

#[test]
fn centralized_fip_without_fip_network_is_ignored() {
    let agent = agent_with_gateway(Some(HERE), "");
    assert_eq!(fip_on_cr_lrp_of(&fip_nat(true, false), &agent), Ok(false));
}

#[test]
fn centralized_fip_whose_port_is_unknown_is_ignored() {
    let mut agent = agent_with_gateway(Some(HERE), "");
    agent.lsps.clear();
    assert_eq!(fip_on_cr_lrp_of(&fip_nat(true, true), &agent), Ok(false));
}

#[test]
fn nat_without_logical_port_is_ignored() {
    let agent = agent_with_gateway(Some(HERE), "");
    let mut nat = fip_nat(true, true);
    nat.columns.remove("logical_port");
    assert_eq!(fip_on_cr_lrp_of(&nat, &agent), Ok(false));
}

#[test]
fn nat_without_gateway_port_raises_nat_not_found_as_upstream() {
    let agent = agent_with_gateway(Some(HERE), "");
    assert_eq!(
        fip_on_cr_lrp_of(&fip_nat(false, true), &agent),
        Err(Raised::NatNotFound)
    );
}

#[test]
fn gateway_without_hosting_chassis_raises_chassis_not_found_as_upstream() {
    let agent = agent_with_gateway(None, "");
    assert_eq!(
        fip_on_cr_lrp_of(&fip_nat(true, true), &agent),
        Err(Raised::ChassisNotFound)
    );
}

fn gateway_port(hosting: Option<&str>) -> Row {
    let status = match hosting {
        Some(h) => json!(["map", [["hosting-chassis", h]]]),
        None => json!(["map", []]),
    };
    row(json!({"name": "lrp-gw", "networks": "172.24.4.10/24", "status": status}))
}

/// (expose, withdraw) for a gateway port update.
fn chassis_change(row: &Row, old: RowView<'_>) -> (bool, bool) {
    let agent = FakeAgent {
        chassis_id: HERE.to_string(),
        ..FakeAgent::default()
    };
    let ev = Event::Is(EventKind::Update);
    let expose = cr_lrp_chassis_change_expose(ev, RowView::complete(row), old, &agent);
    let withdraw = cr_lrp_chassis_change_withdraw(ev, RowView::complete(row), old, &agent);
    (expose.unwrap(), withdraw.unwrap())
}

#[test]
fn gateway_moving_here_exposes_and_does_not_withdraw() {
    let old = row(json!({"status": ["map", [["hosting-chassis", ELSEWHERE]]]}));
    assert_eq!(
        chassis_change(&gateway_port(Some(HERE)), RowView::listed(&old)),
        (true, false)
    );
}

#[test]
fn gateway_moving_away_withdraws_and_does_not_expose() {
    let old = row(json!({"status": ["map", [["hosting-chassis", HERE]]]}));
    assert_eq!(
        chassis_change(&gateway_port(Some(ELSEWHERE)), RowView::listed(&old)),
        (false, true)
    );
}

#[test]
fn gateway_losing_its_chassis_here_withdraws() {
    let old = row(json!({"status": ["map", [["hosting-chassis", HERE]]]}));
    assert_eq!(
        chassis_change(&gateway_port(None), RowView::listed(&old)),
        (false, true)
    );
}

#[test]
fn gateway_getting_its_first_chassis_here_exposes() {
    let old = row(json!({"status": ["map", []]}));
    assert_eq!(
        chassis_change(&gateway_port(Some(HERE)), RowView::listed(&old)),
        (true, false)
    );
}

#[test]
fn gateway_move_between_two_other_chassis_is_ignored() {
    let old = row(json!({"status": ["map", [["hosting-chassis", "third"]]]}));
    assert_eq!(
        chassis_change(&gateway_port(Some(ELSEWHERE)), RowView::listed(&old)),
        (false, false)
    );
}

#[test]
fn router_port_update_without_status_change_is_ignored() {
    let old = row(json!({"networks": "172.24.4.11/24"}));
    assert_eq!(
        chassis_change(&gateway_port(Some(HERE)), RowView::listed(&old)),
        (false, false)
    );
}

fn pf_lb(name: &str, vips: Value, router: &str) -> Row {
    row(json!({
        "name": name, "vips": vips, "protocol": "tcp",
        "external_ids": ["map", [["neutron:router_name", format!("neutron-{router}")]]],
    }))
}

fn ovn_pf_of(lb: &Row) -> Result<bool, Raised> {
    let agent = FakeAgent {
        cr_lrp_routers: vec![ROUTER.to_string()],
        ..FakeAgent::default()
    };
    ovn_pf(
        Event::Is(EventKind::Create),
        RowView::complete(lb),
        RowView::none(),
        &agent,
    )
}

use serde_json::Value;

#[test]
fn port_forwarding_on_a_router_with_local_gateway_matches() {
    let vips = json!(["map", [["172.24.4.50:2222", "10.0.0.12:22"]]]);
    assert_eq!(
        ovn_pf_of(&pf_lb("pf-floatingip-fip1-tcp", vips, ROUTER)),
        Ok(true)
    );
}

#[test]
fn port_forwarding_on_a_remote_router_is_ignored() {
    let vips = json!(["map", [["172.24.4.50:2222", "10.0.0.12:22"]]]);
    assert_eq!(
        ovn_pf_of(&pf_lb("pf-floatingip-fip1-tcp", vips, "other-router")),
        Ok(false)
    );
}

#[test]
fn load_balancer_not_named_pf_floatingip_is_ignored() {
    let vips = json!(["map", [["172.24.4.50:80", "10.0.0.12:80"]]]);
    assert_eq!(ovn_pf_of(&pf_lb("lb-octavia", vips, ROUTER)), Ok(false));
}

#[test]
fn port_forwarding_without_vips_is_ignored() {
    assert_eq!(
        ovn_pf_of(&pf_lb("pf-floatingip-fip1-tcp", json!(["map", []]), ROUTER)),
        Ok(false)
    );
}

#[test]
fn port_forwarding_value_without_vips_column_raises_as_upstream() {
    let lb = row(json!({"name": "pf-floatingip-x"}));
    let agent = FakeAgent::default();
    let got = ovn_pf(
        Event::Is(EventKind::Delete),
        RowView::listed(&lb),
        RowView::none(),
        &agent,
    );
    assert_eq!(got, Err(Raised::Attribute("vips")));
}

#[test]
fn complete_row_reads_absent_columns_as_defaults() {
    // An update2 row omits default-valued columns: no `up` means down.
    let agent = FakeAgent {
        chassis: "host-1".to_string(),
        provider_switches: vec!["neutron-net".to_string()],
        ..FakeAgent::default()
    };
    let port = |extra: Value| {
        let mut v = json!({
            "type": "", "addresses": "fa:16:3e:00:00:01 10.0.0.5",
            "options": ["map", [["requested-chassis", "host-1"]]],
            "external_ids": ["map", [["neutron:network_name", "neutron-net"]]],
        });
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        row(v)
    };
    let decide = |lsp: &Row| {
        lsp_provider_create(
            Event::Is(EventKind::Update),
            RowView::complete(lsp),
            RowView::none(),
            &agent,
        )
    };
    assert_eq!(decide(&port(json!({}))), Ok(false));
    assert_eq!(decide(&port(json!({"up": true}))), Ok(true));
}
