//! The Neutron/OVN helpers the predicates share: port types, address
//! lists, port binding, router names, read through [`RowView`].
//!
//! The key and port-type strings themselves live in `obgp_ovn::neutron`
//! (one home for the parsers and the predicates). Each helper keeps the error behaviour of the upstream helper it stands
//! for (which exceptions it swallows, which it lets through), because the
//! predicates' decisions depend on it.

use std::borrow::Cow;

use obgp_ovn::addresses::Entry;
use obgp_ovn::neutron::{key, port_type, requested_chassis, requested_chassis_binds};

use crate::agent::AgentView;
use crate::view::{Raised, RowView, Val};

/// `row.type in ["", "virtual"]`: a VM or virtual (VIP) port.
pub fn is_vm_or_virtual(port_type: &Val<'_>) -> bool {
    port_type.is(port_type::VM) || port_type.is(port_type::VIRTUAL)
}

/// `port_utils.has_ip_address_defined(address)`: `"<mac> <ip>..."` holds at
/// least one IP (a word after the MAC, [`Entry::has_ip`]).
pub fn has_ip_address_defined(address: &Val<'_>) -> Result<bool, Raised> {
    Ok(Entry::read(address.string_method("strip")?).has_ip())
}

/// `bool(row.up[0])`.
pub fn is_up(row: &RowView<'_>) -> Result<bool, Raised> {
    Ok(row.col("up")?.first()?.truthy())
}

/// `port_utils.get_ips_from_lsp(lsp)`: the IPs after the MAC of
/// `addresses[0]` ([`Entry::ip_words`]); `IpAddressNotFound` when there is
/// none, or the port has no addresses (or no such column).
pub fn ips_from_lsp<'a>(lsp: &RowView<'a>) -> Result<Vec<&'a str>, Raised> {
    let first = match lsp.col("addresses").and_then(|a| a.first()) {
        Ok(v) => v,
        Err(Raised::Attribute(_) | Raised::Index) => return Err(Raised::IpAddressNotFound),
        Err(e) => return Err(e),
    };
    let entry = match first.string_method("strip") {
        Ok(s) => s,
        Err(Raised::Attribute(_)) => return Err(Raised::IpAddressNotFound),
        Err(e) => return Err(e),
    };
    let ips: Vec<&str> = Entry::read(entry).ip_words().collect();
    if ips.is_empty() {
        return Err(Raised::IpAddressNotFound);
    }
    Ok(ips)
}

/// `common.get_from_external_ids(row, key)`: the value, or `None` when the
/// row has no external_ids or no such key.
pub fn external_id<'a>(row: &RowView<'a>, key: &'static str) -> Result<Val<'a>, Raised> {
    match row.col("external_ids").and_then(|ids| ids.item(key)) {
        Ok(v) => Ok(v),
        Err(Raised::Attribute(_) | Raised::Key(_)) => Ok(Val::None),
        Err(e) => Err(e),
    }
}

/// `port_utils.get_fip(lsp)`: `neutron:port_fip`.
pub fn fip<'a>(lsp: &RowView<'a>) -> Result<Val<'a>, Raised> {
    external_id(lsp, key::PORT_FIP)
}

/// `driver_utils.get_port_chassis(port, chassis, default_port_type)`: the
/// chassis a logical switch port is bound to. `options:requested-chassis`
/// wins (our chassis if listed, else the first), except for virtual ports;
/// then `external_ids:neutron:host_id`; else `None`. The names are read by
/// [`requested_chassis`] (trimmed), as the snapshot reads them.
pub fn port_chassis<'a>(
    port: &RowView<'a>,
    chassis: &'a str,
    default_type: &'static str,
) -> Result<Val<'a>, Raised> {
    let port_type = if port.has("type") {
        port.text("type")?
    } else {
        Val::Str(default_type)
    };
    // A non-string type (a mock upstream) equals no type: not `virtual`.
    if port_type.as_str().is_none_or(requested_chassis_binds)
        && port.has("options")
        && port.col("options")?.get(key::REQUESTED_CHASSIS)?.truthy()
    {
        let requested = port.col("options")?.item(key::REQUESTED_CHASSIS)?;
        let mut names = requested_chassis(requested.string_method("split")?);
        if names.clone().any(|c| c == chassis) {
            return Ok(Val::Str(chassis));
        }
        return Ok(Val::Str(names.next().unwrap_or("")));
    }
    if port.has("external_ids") && port.col("external_ids")?.get(key::HOST_ID)?.truthy() {
        return port.col("external_ids")?.item(key::HOST_ID);
    }
    Ok(Val::None)
}

/// `port_utils.has_additional_binding(row)`: `requested-chassis` lists more
/// than one chassis (a live migration in progress).
pub fn has_additional_binding(row: &RowView<'_>) -> Result<bool, Raised> {
    if !row.has("options") {
        return Ok(false);
    }
    match row.col("options")?.get(key::REQUESTED_CHASSIS)? {
        Val::None => Ok(false),
        Val::Str(names) => Ok(requested_chassis(names).nth(1).is_some()),
        // Upstream's `',' in value` on a value that is no string.
        v => v.contains(","),
    }
}

/// `router_utils.get_name_from_external_ids(row, key)`: the router UUID
/// (the value without its first `neutron-`), `None` when absent.
pub fn router_name<'a>(
    row: &RowView<'a>,
    key: &'static str,
) -> Result<Option<Cow<'a, str>>, Raised> {
    Ok(match external_id(row, key)? {
        Val::Str(s) => Some(if s.contains("neutron-") {
            Cow::Owned(s.replacen("neutron-", "", 1))
        } else {
            Cow::Borrowed(s)
        }),
        _ => None,
    })
}

/// `driver_utils.get_port_vrf_settings(port)`: `"<type>::<vni>"` from the
/// bgpvpn external_ids, `""` when either is missing, `None` when the value
/// has no external_ids column at all.
pub fn vrf_settings(port: &RowView<'_>) -> Result<Option<String>, Raised> {
    if !port.has("external_ids") {
        return Ok(None);
    }
    let ids = port.col("external_ids")?;
    let pair = ids
        .item(key::EVPN_TYPE)
        .and_then(|t| Ok((t, ids.item(key::EVPN_VNI)?)));
    match pair {
        Ok((t, vni)) => Ok(Some(format!("{}::{}", t.py_str(), vni.py_str()))),
        Err(Raised::Attribute(_) | Raised::Key(_)) => Ok(Some(String::new())),
        Err(e) => Err(e),
    }
}

/// `driver_utils.check_name_prefix(entity, prefix)`.
pub fn name_has_prefix(entity: &RowView<'_>, prefix: &str) -> bool {
    // Upstream swallows only AttributeError; nothing else can arise here.
    entity
        .text("name")
        .and_then(|n| n.starts_with(prefix))
        .unwrap_or(false)
}

/// The row an element of a reference column points at. A reference the
/// snapshot cannot resolve behaves like a value without that attribute.
pub fn deref<'v>(view: &'v dyn AgentView, reference: Val<'_>) -> Result<RowView<'v>, Raised> {
    match reference {
        Val::Ref(uuid) => view.row(uuid).ok_or(Raised::Attribute("referenced row")),
        Val::Opaque => Ok(RowView::opaque()),
        _ => Err(Raised::Attribute("referenced row")),
    }
}

/// `row.chassis[0].name` (SB Port_Binding).
pub fn first_chassis_name<'v>(
    view: &'v dyn AgentView,
    row: &RowView<'_>,
) -> Result<Val<'v>, Raised> {
    deref(view, row.col("chassis")?.first()?)?.text("name")
}

/// `nat_utils.get_chassis_hosting_crlrp(nat)`: the `hosting-chassis` of the
/// NAT's gateway port.
pub fn chassis_hosting_gateway<'v>(
    view: &'v dyn AgentView,
    nat: &RowView<'_>,
) -> Result<Val<'v>, Raised> {
    let gateway = match nat.col("gateway_port")?.first() {
        // A reference to a row the IDL does not hold is dropped from the
        // list upstream: the same as no gateway port.
        Ok(Val::Ref(uuid)) => view.row(uuid).ok_or(Raised::NatNotFound)?,
        Ok(r) => deref(view, r)?,
        Err(Raised::Index) => return Err(Raised::NatNotFound),
        Err(e) => return Err(e),
    };
    match gateway.col("status")?.item(key::HOSTING_CHASSIS) {
        Err(Raised::Key(_)) => Err(Raised::ChassisNotFound),
        other => other,
    }
}
