//! The NB driver's predicates (upstream `nb_bgp_watcher`, plus the
//! centralized-FIP base class `FipOnCRLRPBaseEvent` of `base_watcher`).
//!
//! Tables: Logical_Switch_Port, Logical_Router_Port, Logical_Switch,
//! Load_Balancer, NAT, NB_Global. "Chassis" is the host name (LSP bindings),
//! "chassis id" the OVS system-id (LRP `status:hosting-chassis`).

use obgp_ovn::neutron::{key, port_type, PF_LB_PREFIX, ROUTER_INTERFACE_OWNER, TRUE};

use crate::agent::AgentView;
use crate::neutron::*;
use crate::view::{Raised, RowView, Val};
use crate::{Event, EventKind};

/// Upstream's `except (IndexError, AttributeError): return False`.
pub(crate) fn unless_index_or_attribute(r: Result<bool, Raised>) -> Result<bool, Raised> {
    match r {
        Err(Raised::Index | Raised::Attribute(_)) => Ok(false),
        other => other,
    }
}

/// Upstream's `except AttributeError: return False`.
pub(crate) fn unless_attribute(r: Result<bool, Raised>) -> Result<bool, Raised> {
    match r {
        Err(Raised::Attribute(_)) => Ok(false),
        other => other,
    }
}

/// `LogicalSwitchPortProviderCreateEvent`: a VM/virtual port with IPs, up,
/// bound here, on a provider switch (not a tenant network behind a local
/// gateway), whose IPs are not exposed yet.
pub fn lsp_provider_create<'a>(
    _event: Event,
    row: RowView<'a>,
    _old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    if !is_vm_or_virtual(&row.text("type")?) {
        return Ok(false);
    }
    unless_index_or_attribute((|| {
        if !has_ip_address_defined(&row.col("addresses")?.first()?)? {
            return Ok(false);
        }
        let current_chassis = port_chassis(&row, view.chassis(), port_type::VM)?;
        let switch = external_id(&row, key::NETWORK_NAME)?;
        if view.is_local_lrp_network(switch.key()) {
            return Ok(false);
        }
        if !current_chassis.is(view.chassis())
            || !is_up(&row)?
            || !view.is_ls_provider(switch.key())
        {
            return Ok(false);
        }
        let ips = match ips_from_lsp(&row) {
            Err(Raised::IpAddressNotFound) => return Ok(false),
            other => other?,
        };
        Ok(!view.is_ip_exposed(switch.key(), &ips))
    })())
}

/// `LogicalSwitchPortProviderDeleteEvent`: an exposed provider port was
/// deleted, went down (not mid-migration), or is no longer bound here.
pub fn lsp_provider_delete<'a>(
    event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    if !is_vm_or_virtual(&row.text("type")?) {
        return Ok(false);
    }
    unless_index_or_attribute((|| {
        if !has_ip_address_defined(&row.col("addresses")?.first()?)? {
            return Ok(false);
        }
        let ips = match ips_from_lsp(&row) {
            Err(Raised::IpAddressNotFound) => return Ok(false),
            other => other?,
        };
        let switch = external_id(&row, key::NETWORK_NAME)?;
        if view.is_local_lrp_network(switch.key()) {
            return Ok(false);
        }
        if !view.is_ip_exposed(switch.key(), &ips) {
            return Ok(false);
        }
        if event.is(EventKind::Delete) {
            return Ok(true);
        }
        let current_chassis = port_chassis(&row, view.chassis(), port_type::VM)?;
        if old.has("up") && is_up(&old)? && !is_up(&row)? && !has_additional_binding(&row)? {
            return Ok(true);
        }
        Ok(!current_chassis.is(view.chassis()))
    })())
}

/// `LogicalSwitchPortFIPCreateEvent` (distributed FIPs): a port bound here,
/// up, with `neutron:port_fip`, that just came up, or whose FIP appeared or
/// changed and is not exposed, or whose binding moved here.
pub fn lsp_fip_create<'a>(
    _event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    if !is_vm_or_virtual(&row.text("type")?) {
        return Ok(false);
    }
    unless_index_or_attribute((|| {
        if !has_ip_address_defined(&row.col("addresses")?.first()?)? {
            return Ok(false);
        }
        let current_chassis = port_chassis(&row, view.chassis(), port_type::VM)?;
        let current_fip = row.col("external_ids")?.get(key::PORT_FIP)?;
        if !current_chassis.is(view.chassis()) || !is_up(&row)? || !current_fip.truthy() {
            return Ok(false);
        }
        if old.has("up") && !is_up(&old)? {
            return Ok(true);
        }
        let old_fip = if old.has("external_ids") {
            old.col("external_ids")?.get(key::PORT_FIP)?
        } else {
            Val::None
        };
        if old_fip.py_eq(&current_fip) {
            let old_chassis = port_chassis(&old, view.chassis(), port_type::VM)?;
            return Ok(!old_chassis.py_eq(&current_chassis));
        }
        let switch = external_id(&row, key::NETWORK_NAME)?;
        let fip = current_fip.as_str().unwrap_or_default();
        Ok(!view.is_ip_exposed(switch.key(), &[fip]))
    })())
}

/// `LogicalSwitchPortFIPDeleteEvent` (distributed FIPs): an exposed FIP (old
/// or current) whose port was deleted, went down, lost or changed its FIP, or
/// is no longer bound here.
pub fn lsp_fip_delete<'a>(
    event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    if !is_vm_or_virtual(&row.text("type")?) {
        return Ok(false);
    }
    unless_index_or_attribute((|| {
        if !has_ip_address_defined(&row.col("addresses")?.first()?)? {
            return Ok(false);
        }
        let current_fip = fip(&row)?;
        let old_fip = fip(&old)?;
        if !current_fip.truthy() && !old_fip.truthy() {
            return Ok(false);
        }
        let switch = external_id(&row, key::NETWORK_NAME)?;
        let checked = if old_fip.truthy() {
            old_fip
        } else {
            current_fip
        };
        let checked = checked.as_str().unwrap_or_default();
        if !view.is_ip_exposed(switch.key(), &[checked]) {
            return Ok(false);
        }
        if event.is(EventKind::Delete) {
            return Ok(true);
        }
        if old.has("up") && is_up(&old)? && !is_up(&row)? {
            return Ok(true);
        }
        if !matches!(old_fip, Val::None) && !current_fip.py_eq(&old_fip) {
            return Ok(true);
        }
        let current_chassis = port_chassis(&row, view.chassis(), port_type::VM)?;
        Ok(!current_chassis.is(view.chassis()))
    })())
}

/// `LogicalSwitchUpdateEvent` (exposing_method = vrf): a switch with bgpvpn
/// settings was deleted, or its `type::vni` settings changed.
pub fn logical_switch_update<'a>(
    event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    _view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    let settings = vrf_settings(&row)?;
    if settings.as_deref().is_some_and(|s| !s.is_empty()) && event.is(EventKind::Delete) {
        return Ok(true);
    }
    let Some(old_settings) = vrf_settings(&old)? else {
        return Ok(false);
    };
    Ok(settings.as_deref() != Some(old_settings.as_str()))
}

/// `LocalnetCreateDeleteEvent` (NB): a localnet port appeared or vanished.
pub fn localnet_create_delete<'a>(
    _event: Event,
    row: RowView<'a>,
    _old: RowView<'a>,
    _view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    Ok(row.text("type")?.is(port_type::LOCALNET))
}

/// `ChassisRedirectCreateEvent`: a router port with networks whose
/// `hosting-chassis` just became this chassis.
pub fn chassis_redirect_create<'a>(
    _event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    unless_index_or_attribute((|| {
        if !row.col("networks")?.truthy() {
            return Ok(false);
        }
        let hosting = row.col("status")?.get(key::HOSTING_CHASSIS)?;
        if !hosting.is(view.chassis_id()) {
            return Ok(false);
        }
        if old.has("status") {
            let old_hosting = old.col("status")?.get(key::HOSTING_CHASSIS)?;
            if !old_hosting.py_eq(&hosting) {
                return Ok(true);
            }
        }
        Ok(false)
    })())
}

/// `ChassisRedirectDeleteEvent`: a router port with networks hosted here was
/// deleted, or its `hosting-chassis` moved away from this chassis.
pub fn chassis_redirect_delete<'a>(
    event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    unless_index_or_attribute((|| {
        if !row.col("networks")?.truthy() {
            return Ok(false);
        }
        if event.is(EventKind::Delete) {
            return Ok(row
                .col("status")?
                .get(key::HOSTING_CHASSIS)?
                .is(view.chassis_id()));
        }
        if old.has("status") {
            let hosting = row.col("status")?.get(key::HOSTING_CHASSIS)?;
            let old_hosting = old.col("status")?.get(key::HOSTING_CHASSIS)?;
            if !hosting.py_eq(&old_hosting) && old_hosting.is(view.chassis_id()) {
                return Ok(true);
            }
        }
        Ok(false)
    })())
}

/// The router-interface prelude shared by the subnet events: `type ==
/// "router"` and `device_owner == network:router_interface`.
fn is_router_interface(row: &RowView<'_>) -> Result<bool, Raised> {
    Ok(row.text("type")?.is(port_type::ROUTER)
        && row
            .col("external_ids")?
            .get(key::DEVICE_OWNER)?
            .is(ROUTER_INTERFACE_OWNER))
}

/// `LogicalSwitchPortSubnetAttachEvent`: an up router interface of a router
/// whose gateway is hosted here, that just came up or just moved to such a
/// router from a non-local one.
pub fn lsp_subnet_attach<'a>(
    _event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    unless_index_or_attribute((|| {
        if !is_router_interface(&row)? || !is_up(&row)? {
            return Ok(false);
        }
        let router = row.col("external_ids")?.get(key::DEVICE_ID)?;
        if !view.is_local_cr_lrp(router.key()) {
            return Ok(false);
        }
        if old.has("up") && !is_up(&old)? {
            return Ok(true);
        }
        if old.has("external_ids") {
            let previous = old.col("external_ids")?.get(key::DEVICE_ID)?;
            if !router.py_eq(&previous) && !view.is_local_cr_lrp(previous.key()) {
                return Ok(true);
            }
        }
        Ok(false)
    })())
}

/// `LogicalSwitchPortSubnetDetachEvent`: a router interface exposed through
/// a local gateway was deleted while up, went down, or moved to another
/// router.
pub fn lsp_subnet_detach<'a>(
    event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    unless_index_or_attribute((|| {
        if !is_router_interface(&row)? {
            return Ok(false);
        }
        let router = row.col("external_ids")?.get(key::DEVICE_ID)?;
        if event.is(EventKind::Delete) {
            return Ok(is_up(&row)? && view.is_local_cr_lrp(router.key()));
        }
        if old.has("up") {
            if !is_up(&old)? {
                return Ok(false);
            }
            if old.has("external_ids") {
                let previous = old.col("external_ids")?.get(key::DEVICE_ID)?;
                if view.is_local_cr_lrp(previous.key()) {
                    return Ok(true);
                }
            } else if view.is_local_cr_lrp(router.key()) {
                return Ok(true);
            }
        } else {
            if !is_up(&row)? {
                return Ok(false);
            }
            if old.has("external_ids") {
                let previous = old.col("external_ids")?.get(key::DEVICE_ID)?;
                if previous.truthy()
                    && !router.py_eq(&previous)
                    && view.is_local_cr_lrp(previous.key())
                {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    })())
}

/// `LogicalSwitchPortTenantCreateEvent` (advertisement method host): an up
/// port with IPs on a tenant network behind a local gateway, that just came
/// up or just moved to that network.
pub fn lsp_tenant_create<'a>(
    _event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    unless_index_or_attribute((|| {
        match ips_from_lsp(&row) {
            Err(Raised::IpAddressNotFound) => return Ok(false),
            other => other?,
        };
        if !is_up(&row)? {
            return Ok(false);
        }
        let network = external_id(&row, key::NETWORK_NAME)?;
        if !view.is_local_lrp_network(network.key()) {
            return Ok(false);
        }
        if old.has("up") && !is_up(&old)? {
            return Ok(true);
        }
        if old.has("external_ids") && !external_id(&old, key::NETWORK_NAME)?.py_eq(&network) {
            return Ok(true);
        }
        Ok(false)
    })())
}

/// `LogicalSwitchPortTenantDeleteEvent` (advertisement method host): a port
/// with IPs on a tenant network behind a local gateway, deleted while up or
/// that was up before this update.
pub fn lsp_tenant_delete<'a>(
    event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    unless_index_or_attribute((|| {
        if !has_ip_address_defined(&row.col("addresses")?.first()?)? {
            return Ok(false);
        }
        let network = external_id(&row, key::NETWORK_NAME)?;
        if !view.is_local_lrp_network(network.key()) {
            return Ok(false);
        }
        if event.is(EventKind::Delete) {
            return is_up(&row);
        }
        if old.has("up") {
            return is_up(&old);
        }
        Ok(false)
    })())
}

/// `OVNLBCreateEvent`: a load balancer with VIPs on a router whose gateway
/// is hosted here gained VIPs or was just attached to that router.
pub fn ovn_lb_create<'a>(
    _event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    unless_attribute((|| {
        let vips = row.col("vips")?;
        if !vips.truthy() {
            return Ok(false);
        }
        let router = router_name(&row, key::LB_LR_REF)?;
        if !view.is_local_cr_lrp(router.as_deref()) {
            return Ok(false);
        }
        if old.has("vips") {
            let old_vips = old.col("vips")?;
            if (!old_vips.truthy() && vips.truthy())
                || (!old_vips.py_eq(&vips) && old_vips.keys_subset_of(&vips)?)
            {
                return Ok(true);
            }
        }
        if old.has("external_ids") && router_name(&old, key::LB_LR_REF)? != router {
            return Ok(true);
        }
        Ok(false)
    })())
}

/// `OVNLBDeleteEvent`: a load balancer on a router whose gateway is hosted
/// here was deleted (with VIPs), detached from that router, or lost VIPs.
pub fn ovn_lb_delete<'a>(
    event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    unless_attribute((|| {
        if event.is(EventKind::Delete) {
            if !row.col("vips")?.truthy() {
                return Ok(false);
            }
            let router = router_name(&row, key::LB_LR_REF)?;
            return Ok(view.is_local_cr_lrp(router.as_deref()));
        }
        let router = router_name(&row, key::LB_LR_REF)?;
        if old.has("external_ids") {
            let old_router = router_name(&old, key::LB_LR_REF)?;
            if old_router.as_deref().is_none_or(str::is_empty) {
                return Ok(false);
            }
            if !view.is_local_cr_lrp(old_router.as_deref()) {
                return Ok(false);
            }
            if old_router != router {
                return Ok(true);
            }
        }
        if old.has("vips") {
            let (old_vips, vips) = (old.col("vips")?, row.col("vips")?);
            if !old_vips.py_eq(&vips) && vips.keys_subset_of(&old_vips)? {
                return Ok(true);
            }
        }
        Ok(false)
    })())
}

/// `OVNPFCreateEvent` / `OVNPFDeleteEvent` (`OVNPFBaseEvent`): a
/// port-forwarding load balancer (`pf-floatingip-*`) with VIPs on a router
/// whose gateway is hosted here.
pub fn ovn_pf<'a>(
    _event: Event,
    row: RowView<'a>,
    _old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    if !name_has_prefix(&row, PF_LB_PREFIX) {
        return Ok(false);
    }
    if !row.col("vips")?.truthy() {
        return Ok(false);
    }
    let router = router_name(&row, key::ROUTER_NAME)?;
    Ok(view.is_local_cr_lrp(router.as_deref()))
}

/// `NATMACAddedEvent` (distributed FIPs): a FIP's NAT row got its
/// `external_mac` (set or changed) while its port is bound here, and it has
/// the FIP network and external IP needed to expose it.
pub fn nat_mac_added<'a>(
    _event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    let port_id = match row.col("logical_port")?.first() {
        Err(Raised::Index) => return Ok(false),
        other => other?,
    };
    let Some(lsp) = view.lsp(port_id.as_str().unwrap_or_default()) else {
        return Ok(false);
    };
    let lsp_type = lsp.text("type")?;
    if lsp_type.is(port_type::VIRTUAL) {
        if !lsp
            .col("external_ids")?
            .get(key::HOST_ID)?
            .is(view.chassis())
        {
            return Ok(false);
        }
    } else if !lsp_type.is(port_type::VM) {
        return Ok(false);
    } else {
        match lsp.col("options")?.item(key::REQUESTED_CHASSIS) {
            Err(Raised::Key(_)) => return Ok(false),
            Ok(requested) if !requested.is(view.chassis()) => return Ok(false),
            other => {
                other?;
            }
        }
    }
    let same_mac = (|| {
        let old_mac = old.col("external_mac")?;
        Ok(old_mac.truthy() && old_mac.first()?.py_eq(&row.col("external_mac")?.first()?))
    })();
    if !unless_index_or_attribute(same_mac.map(|same| !same))? {
        return Ok(false);
    }
    if !row.col("external_ids")?.contains(key::FIP_NETWORK_ID)? {
        return Ok(false);
    }
    Ok(row.text("external_ip")?.truthy())
}

/// `ExposeFIPOnCRLRP` / `WithdrawFIPOnCRLRP` (`FipOnCRLRPBaseEvent`,
/// centralized FIPs): the NAT's port is a VM or virtual port, the NAT names
/// its FIP network, and its gateway port is hosted on this chassis.
pub fn fip_on_cr_lrp<'a>(
    _event: Event,
    row: RowView<'a>,
    _old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    let port_id = match row.col("logical_port")?.first() {
        Err(Raised::Index) => return Ok(false),
        other => other?,
    };
    let Some(lsp) = view.lsp(port_id.as_str().unwrap_or_default()) else {
        return Ok(false);
    };
    if !is_vm_or_virtual(&lsp.text("type")?) {
        return Ok(false);
    }
    if !row.col("external_ids")?.contains(key::FIP_NETWORK_ID)? {
        return Ok(false);
    }
    let gateway_chassis = chassis_hosting_gateway(view, &row)?;
    Ok(gateway_chassis.is(view.chassis_id()))
}

/// `CrLrpChassisChangeBaseEvent`: the port's `hosting-chassis` changed. An
/// `old` without `status` did not change it.
fn hosting_chassis_changed(row: &RowView<'_>, old: &RowView<'_>) -> Result<bool, Raised> {
    let new = row.col("status")?.get(key::HOSTING_CHASSIS)?;
    let previous = match old.col("status").and_then(|s| s.get(key::HOSTING_CHASSIS)) {
        Err(Raised::Attribute(_)) => return Ok(false),
        other => other?,
    };
    Ok(!new.py_eq(&previous))
}

/// `CrLrpChassisChangeExposeEvent` (centralized FIPs): a gateway port moved
/// to this chassis.
pub fn cr_lrp_chassis_change_expose<'a>(
    _event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    if !hosting_chassis_changed(&row, &old)? {
        return Ok(false);
    }
    let status = row.col("status")?;
    if !status.contains(key::HOSTING_CHASSIS)? {
        return Ok(false);
    }
    Ok(status.item(key::HOSTING_CHASSIS)?.is(view.chassis_id()))
}

/// `CrLrpChassisChangeWithdrawEvent` (centralized FIPs): a gateway port moved
/// away from this chassis.
pub fn cr_lrp_chassis_change_withdraw<'a>(
    _event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    if !hosting_chassis_changed(&row, &old)? {
        return Ok(false);
    }
    let status = old.col("status")?;
    if !status.contains(key::HOSTING_CHASSIS)? {
        return Ok(false);
    }
    Ok(status.item(key::HOSTING_CHASSIS)?.is(view.chassis_id()))
}

/// `DistributedFlagChangedEvent`: NB_Global's `neutron:fip-distributed`
/// changed to a mode other than the agent's (a missing flag means
/// distributed). An `old` without `external_ids` is not this event.
pub fn distributed_flag_changed<'a>(
    _event: Event,
    row: RowView<'a>,
    old: RowView<'a>,
    view: &'a dyn AgentView,
) -> Result<bool, Raised> {
    let mode = (|| {
        let previous = old.col("external_ids")?.get(key::FIP_DISTRIBUTED)?;
        let current = row.col("external_ids")?.item(key::FIP_DISTRIBUTED)?;
        if previous.py_eq(&current) {
            return Ok(None);
        }
        Ok(Some(current.is(TRUE)))
    })();
    let distributed = match mode {
        Ok(None) => return Ok(false),
        Ok(Some(d)) => d,
        Err(Raised::Key(_)) => true,
        Err(Raised::Attribute(_)) => return Ok(false),
        Err(e) => return Err(e),
    };
    Ok(view.distributed() != distributed)
}

#[cfg(test)]
mod tests;
