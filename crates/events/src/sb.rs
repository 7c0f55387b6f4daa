//! The SB drivers' predicates (upstream `bgp_watcher`, used by
//! `ovn_bgp_driver` and `ovn_stretched_l2_bgp_driver`).
//!
//! Tables: Port_Binding and Load_Balancer of the Southbound database.
//! "Chassis" is the OVS system-id, compared with `Port_Binding.chassis[0].name`.

use obgp_ovn::addresses;
use obgp_ovn::neutron::{key, port_type, LRP_PREFIX};

use crate::agent::AgentView;
use crate::nb::{unless_attribute, unless_index_or_attribute};
use crate::neutron::*;
use crate::view::{Raised, RowView, Val};
use crate::{Event, EventKind};

/// `has_ip_address_defined(row.mac[0])`: the binding's `"<mac> <ip>..."`
/// carries an IP.
fn mac_has_ip(row: &RowView<'_>) -> Result<bool, Raised> {
    has_ip_address_defined(&row.col("mac")?.first()?)
}

/// `row.mac == ['unknown']` (ports created with config drive instead of DHCP).
fn mac_is_unknown(row: &RowView<'_>) -> Result<bool, Raised> {
    Ok(match row.col("mac")? {
        Val::List([only]) => only.as_str() == Some(addresses::UNKNOWN),
        _ => false,
    })
}

/// The tenant-port prelude: the port has IPs, in `mac[0]` or, for
/// `['unknown']`, in `neutron:cidrs`.
fn tenant_port_has_ips(row: &RowView<'_>) -> Result<bool, Raised> {
    if mac_is_unknown(row)? {
        let cidrs = match row.col("external_ids")?.get(key::CIDRS)? {
            Val::None => "",
            v => v.string_method("split")?,
        };
        return Ok(cidrs.split_whitespace().next().is_some());
    }
    mac_has_ip(row)
}

/// `PortBindingChassisCreatedEvent`: a port with IPs, up and bound here, that
/// just got bound (or rebound) or just came up.
pub fn port_binding_chassis_created<'a>(
    _event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    unless_index_or_attribute((|| {
        if !mac_has_ip(&row)? || !is_up(&row)? {
            return Ok(false);
        }
        if !first_chassis_name(view, &row)?.is(view.chassis()) {
            return Ok(false);
        }
        if old.has("chassis") {
            let old_chassis = old.col("chassis")?;
            if !old_chassis.truthy() || !row.col("chassis")?.py_eq(&old_chassis) {
                return Ok(true);
            }
        }
        if old.has("up") && !is_up(&old)? {
            return Ok(true);
        }
        Ok(false)
    })())
}

/// `PortBindingChassisDeletedEvent`: a port with IPs bound here was deleted,
/// unbound or rebound elsewhere, or went down.
pub fn port_binding_chassis_deleted<'a>(
    event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    unless_index_or_attribute((|| {
        if !mac_has_ip(&row)? {
            return Ok(false);
        }
        if event.is(EventKind::Delete) {
            return Ok(first_chassis_name(view, &row)?.is(view.chassis()));
        }
        if old.has("chassis") && first_chassis_name(view, &old)?.is(view.chassis()) {
            let chassis = row.col("chassis")?;
            if !chassis.truthy() || !chassis.py_eq(&old.col("chassis")?) {
                return Ok(true);
            }
        }
        if old.has("up")
            && first_chassis_name(view, &row)?.is(view.chassis())
            && is_up(&old)?
            && !is_up(&row)?
        {
            return Ok(true);
        }
        Ok(false)
    })())
}

/// `FIPSetEvent` and `FIPUnsetEvent` (same predicate upstream): the
/// `nat_addresses` of an unbound, non-`lrp-` port changed.
pub fn fip_set_unset<'a>(
    _event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    _view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    unless_attribute((|| {
        Ok(!row.col("chassis")?.truthy()
            && !row.col("nat_addresses")?.py_eq(&old.col("nat_addresses")?)
            && !row.text("logical_port")?.starts_with(LRP_PREFIX)?)
    })())
}

/// The router-interface binding test of the subnet events: unbound, an
/// `lrp-` port, and not a chassis-redirect port.
fn is_router_interface_binding(row: &RowView<'_>) -> Result<bool, Raised> {
    Ok(!row.col("chassis")?.truthy()
        && row.text("logical_port")?.starts_with(LRP_PREFIX)?
        && !row
            .col("options")?
            .keys_contain(key::CHASSIS_REDIRECT_PORT)?)
}

/// `SubnetRouterAttachedEvent` (SB): a router interface binding with an IP
/// was created.
pub fn subnet_router_attached<'a>(
    _event: Event,
    row: RowView<'a>,
    _old: RowView<'a>,
    _view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    unless_index_or_attribute((|| {
        Ok(mac_has_ip(&row)? && is_router_interface_binding(&row)?)
    })())
}

/// `SubnetRouterDetachedEvent` (SB): a router interface binding with an IP
/// was deleted.
pub fn subnet_router_detached<'a>(
    event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    subnet_router_attached(event, row, old, view)
}

/// `SubnetRouterUpdateEvent`: the `mac` (subnet list) of a router interface
/// binding changed, and one side of the change carries an IP.
pub fn subnet_router_update<'a>(
    _event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    _view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    unless_index_or_attribute((|| {
        if !mac_has_ip(&row)? && !mac_has_ip(&old)? {
            return Ok(false);
        }
        Ok(is_router_interface_binding(&row)? && !old.col("mac")?.py_eq(&row.col("mac")?))
    })())
}

/// `TenantPortCreatedEvent` (SB): a port with IPs just got bound to a
/// chassis. Upstream also requires `agent.ovn_local_lrps != []`, which is
/// always true in production (the cache is a dict, deviation D12).
pub fn tenant_port_created<'a>(
    _event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    _view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    unless_index_or_attribute((|| {
        if !tenant_port_has_ips(&row)? {
            return Ok(false);
        }
        Ok(!old.col("chassis")?.truthy() && row.col("chassis")?.truthy())
    })())
}

/// `TenantPortDeletedEvent` (SB): a port with IPs was deleted or lost its
/// chassis (D12 as in [`tenant_port_created`]).
pub fn tenant_port_deleted<'a>(
    event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    _view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    unless_index_or_attribute((|| {
        if !tenant_port_has_ips(&row)? {
            return Ok(false);
        }
        if event.is(EventKind::Update) {
            return Ok(old.col("chassis")?.truthy() && !row.col("chassis")?.truthy());
        }
        Ok(event.is(EventKind::Delete))
    })())
}

/// `OVNLBVIPPortEvent`: a load balancer VIP port (no MAC, unbound, down)
/// appeared or vanished while this chassis hosts a gateway.
pub fn ovn_lb_vip_port<'a>(
    _event: Event,
    row: RowView<'a>,
    _old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    unless_index_or_attribute((|| {
        if !row.col("mac")?.truthy()
            && !row.col("chassis")?.truthy()
            && !row.col("up")?.first()?.truthy()
        {
            return Ok(view.has_local_cr_lrps());
        }
        Ok(false)
    })())
}

/// `OVNLBMemberCreateEvent`: any new load balancer while this chassis hosts
/// a gateway (the action sorts out the rest).
pub fn ovn_lb_member_create<'a>(
    _event: Event,
    _row: RowView<'a>,
    _old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    Ok(view.has_local_cr_lrps())
}

/// `OVNLBMemberDeleteEvent`: a load balancer this agent exposes on a
/// provider network was deleted.
pub fn ovn_lb_member_delete<'a>(
    _event: Event,
    row: RowView<'a>,
    _old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    Ok(view.is_provider_ovn_lb(row.text("name")?.key()))
}

/// `LocalnetCreateDeleteEvent` (SB and EVPN): a localnet binding appeared or
/// vanished.
pub fn localnet_create_delete<'a>(
    _event: Event,
    row: RowView<'a>,
    _old: RowView<'a>,
    _view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    Ok(row.text("type")?.is(port_type::LOCALNET))
}

/// `ChassisCreateEvent` / `ChassisPrivateCreateEvent`: ovsdbapp's default
/// `match_fn` (always true); only the class condition (`name == chassis`)
/// filters. Upstream resyncs on every such create after the first (an OVSDB
/// reconnection).
pub fn always<'a>(
    _event: Event,
    _row: RowView<'a>,
    _old: RowView<'a>,
    _view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    Ok(true)
}
