//! Maps each registered option to its field of [`Config`], both ways: the
//! loader writes converted values in, the renderer reads them out.

use crate::options::OptSpec;
use crate::values::Typed;
use crate::{AdvertisementMethod, AnnounceWith, Config, Driver, ExposingMethod};

macro_rules! names {
    ($t:ty { $($v:ident => $s:literal),+ $(,)? }) => {
        impl $t {
            /// The name upstream's configuration uses for this value.
            pub fn as_str(&self) -> &'static str {
                match self { $(<$t>::$v => $s),+ }
            }
            /// The value named `s` (one of upstream's choices).
            pub fn from_name(s: &str) -> Option<Self> {
                match s { $($s => Some(<$t>::$v),)+ _ => None }
            }
        }
    };
}

names!(Driver {
    OvnBgpDriver => "ovn_bgp_driver",
    OvnEvpnDriver => "ovn_evpn_driver",
    OvnStretchedL2BgpDriver => "ovn_stretched_l2_bgp_driver",
    NbOvnBgpDriver => "nb_ovn_bgp_driver",
});
names!(ExposingMethod {
    Underlay => "underlay",
    L2vni => "l2vni",
    Vrf => "vrf",
    Dynamic => "dynamic",
    Ovn => "ovn",
});
names!(AnnounceWith {
    Address => "address",
    Route => "route",
});
names!(AdvertisementMethod {
    Host => "host",
    Subnet => "subnet",
});

impl OptSpec {
    /// Upstream's default for this option (`None`: unset by default).
    pub fn default_value(&self) -> Option<Typed> {
        get(&Config::default(), self)
    }
}

/// The current value of `spec` in `c`; `None` when the option is unset.
pub fn get(c: &Config, spec: &OptSpec) -> Option<Typed> {
    let (d, l, o, lc) = (&c.default, &c.log, &c.ovn, &c.local_ovn_cluster);
    let s = |v: &String| Some(Typed::Str(v.clone()));
    let os = |v: &Option<String>| v.clone().map(Typed::Str);
    let b = |v: bool| Some(Typed::Bool(v));
    let i = |v: i64| Some(Typed::Int(v));
    let list = |v: &Vec<String>| Some(Typed::List(v.clone()));
    // Values above i64::MAX cannot come from a file (the loader refuses
    // them); saturate rather than wrap if a caller built such a Config.
    let u = |v: u64| i(i64::try_from(v).unwrap_or(i64::MAX));
    match (spec.section, spec.name) {
        ("DEFAULT", "debug") => b(l.debug),
        ("DEFAULT", "log_file") => os(&l.log_file),
        ("DEFAULT", "log_dir") => os(&l.log_dir),
        ("DEFAULT", "use_json") => b(l.use_json),
        ("DEFAULT", "use_stderr") => b(l.use_stderr),
        ("DEFAULT", "reconcile_interval") => u(d.reconcile_interval),
        ("DEFAULT", "vtysh_timeout") => u(d.vtysh_timeout),
        ("DEFAULT", "ovs_ofctl_timeout") => u(d.ovs_ofctl_timeout),
        ("DEFAULT", "ovsdb_max_update_mib") => u(d.ovsdb_max_update_mib),
        ("DEFAULT", "mass_withdrawal_grace") => u(d.mass_withdrawal_grace),
        ("DEFAULT", "mass_withdrawal_percent") => u(d.mass_withdrawal_percent.into()),
        ("DEFAULT", "metrics_listen") => d.metrics_listen.map(|a| Typed::Str(a.to_string())),
        ("DEFAULT", "ovn_nb_monitor_all") => b(d.ovn_nb_monitor_all),
        ("DEFAULT", "state_dir") => os(&d.state_dir),
        ("DEFAULT", "frr_reconcile_interval") => u(d.frr_reconcile_interval),
        ("DEFAULT", "expose_tenant_networks") => b(d.expose_tenant_networks),
        ("DEFAULT", "advertisement_method_tenant_networks") => Some(Typed::Str(
            d.advertisement_method_tenant_networks.as_str().into(),
        )),
        ("DEFAULT", "require_snat_disabled_for_tenant_networks") => {
            b(d.require_snat_disabled_for_tenant_networks)
        }
        ("DEFAULT", "expose_ipv6_gua_tenant_networks") => b(d.expose_ipv6_gua_tenant_networks),
        ("DEFAULT", "driver") => Some(Typed::Str(d.driver.as_str().into())),
        ("DEFAULT", "ovsdb_connection") => s(&d.ovsdb_connection),
        ("DEFAULT", "ovsdb_connection_timeout") => u(d.ovsdb_connection_timeout),
        ("DEFAULT", "bgp_AS") => s(&d.bgp_as),
        ("DEFAULT", "bgp_router_id") => os(&d.bgp_router_id),
        ("DEFAULT", "evpn_local_ip") => d.evpn_local_ip.map(Typed::Ip),
        ("DEFAULT", "evpn_nic") => os(&d.evpn_nic),
        ("DEFAULT", "evpn_udp_dstport") => i(d.evpn_udp_dstport.into()),
        ("DEFAULT", "clear_vrf_routes_on_startup") => b(d.clear_vrf_routes_on_startup),
        ("DEFAULT", "delete_vrf_on_disconnect") => b(d.delete_vrf_on_disconnect),
        ("DEFAULT", "bgp_nic") => s(&d.bgp_nic),
        ("DEFAULT", "bgp_vrf") => s(&d.bgp_vrf),
        ("DEFAULT", "bgp_vrf_table_id") => i(d.bgp_vrf_table_id.into()),
        ("DEFAULT", "address_scopes") => d.address_scopes.clone().map(Typed::List),
        ("DEFAULT", "exposing_method") => Some(Typed::Str(d.exposing_method.as_str().into())),
        ("DEFAULT", "announce_with") => Some(Typed::Str(d.announce_with.as_str().into())),
        ("agent", "root_helper") => s(&c.agent.root_helper),
        ("ovn", "ovn_sb_private_key") => s(&o.ovn_sb_private_key),
        ("ovn", "ovn_sb_certificate") => s(&o.ovn_sb_certificate),
        ("ovn", "ovn_sb_ca_cert") => s(&o.ovn_sb_ca_cert),
        ("ovn", "ovn_sb_connection") => os(&o.ovn_sb_connection),
        ("ovn", "ovn_nb_private_key") => s(&o.ovn_nb_private_key),
        ("ovn", "ovn_nb_certificate") => s(&o.ovn_nb_certificate),
        ("ovn", "ovn_nb_ca_cert") => s(&o.ovn_nb_ca_cert),
        ("ovn", "ovn_nb_connection") => os(&o.ovn_nb_connection),
        ("local_ovn_cluster", "ovn_nb_connection") => s(&lc.ovn_nb_connection),
        ("local_ovn_cluster", "external_nics") => list(&lc.external_nics),
        ("local_ovn_cluster", "peer_ips") => list(&lc.peer_ips),
        ("local_ovn_cluster", "provider_networks_pool_prefixes") => {
            list(&lc.provider_networks_pool_prefixes)
        }
        ("local_ovn_cluster", "bgp_chassis_id") => s(&lc.bgp_chassis_id),
        _ => None,
    }
}

/// Stores `v` (already converted and checked for `spec`'s kind) in `c`.
/// The error is a mismatch between the registry and this table, which the
/// unit tests rule out for every registered option.
pub fn set(c: &mut Config, spec: &OptSpec, v: Typed) -> Result<(), String> {
    let (d, l, o, lc) = (
        &mut c.default,
        &mut c.log,
        &mut c.ovn,
        &mut c.local_ovn_cluster,
    );
    let mismatch = || format!("internal: no field takes {v:?}");
    let text = |v: &Typed| match v {
        Typed::Str(s) => Ok(s.clone()),
        _ => Err(mismatch()),
    };
    // Upstream tests these options for truth, so empty is the same as unset.
    let opt_text = |v: &Typed| text(v).map(|s| if s.is_empty() { None } else { Some(s) });
    let flag = |v: &Typed| match v {
        Typed::Bool(b) => Ok(*b),
        _ => Err(mismatch()),
    };
    let int = |v: &Typed| match v {
        Typed::Int(i) => Ok(*i),
        _ => Err(mismatch()),
    };
    let unsigned = |v: &Typed| int(v).and_then(|i| u64::try_from(i).map_err(|_| mismatch()));
    let list = |v: &Typed| match v {
        Typed::List(l) => Ok(l.clone()),
        _ => Err(mismatch()),
    };
    let choice = |v: &Typed| text(v);
    match (spec.section, spec.name) {
        ("DEFAULT", "debug") => l.debug = flag(&v)?,
        ("DEFAULT", "log_file") => l.log_file = opt_text(&v)?,
        ("DEFAULT", "log_dir") => l.log_dir = opt_text(&v)?,
        ("DEFAULT", "use_json") => l.use_json = flag(&v)?,
        ("DEFAULT", "use_stderr") => l.use_stderr = flag(&v)?,
        ("DEFAULT", "reconcile_interval") => d.reconcile_interval = unsigned(&v)?,
        ("DEFAULT", "vtysh_timeout") => d.vtysh_timeout = unsigned(&v)?,
        ("DEFAULT", "ovs_ofctl_timeout") => d.ovs_ofctl_timeout = unsigned(&v)?,
        ("DEFAULT", "ovsdb_max_update_mib") => d.ovsdb_max_update_mib = unsigned(&v)?,
        ("DEFAULT", "mass_withdrawal_grace") => d.mass_withdrawal_grace = unsigned(&v)?,
        ("DEFAULT", "mass_withdrawal_percent") => {
            d.mass_withdrawal_percent = u8::try_from(int(&v)?).map_err(|_| mismatch())?
        }
        ("DEFAULT", "metrics_listen") => {
            d.metrics_listen = match opt_text(&v)? {
                None => None,
                Some(a) => Some(a.parse().map_err(|_| mismatch())?),
            }
        }
        ("DEFAULT", "ovn_nb_monitor_all") => d.ovn_nb_monitor_all = flag(&v)?,
        ("DEFAULT", "state_dir") => d.state_dir = opt_text(&v)?,
        ("DEFAULT", "frr_reconcile_interval") => d.frr_reconcile_interval = unsigned(&v)?,
        ("DEFAULT", "expose_tenant_networks") => d.expose_tenant_networks = flag(&v)?,
        ("DEFAULT", "advertisement_method_tenant_networks") => {
            d.advertisement_method_tenant_networks =
                AdvertisementMethod::from_name(&choice(&v)?).ok_or_else(mismatch)?
        }
        ("DEFAULT", "require_snat_disabled_for_tenant_networks") => {
            d.require_snat_disabled_for_tenant_networks = flag(&v)?
        }
        ("DEFAULT", "expose_ipv6_gua_tenant_networks") => {
            d.expose_ipv6_gua_tenant_networks = flag(&v)?
        }
        ("DEFAULT", "driver") => d.driver = Driver::from_name(&choice(&v)?).ok_or_else(mismatch)?,
        ("DEFAULT", "ovsdb_connection") => d.ovsdb_connection = text(&v)?,
        ("DEFAULT", "ovsdb_connection_timeout") => d.ovsdb_connection_timeout = unsigned(&v)?,
        ("DEFAULT", "bgp_AS") => d.bgp_as = text(&v)?,
        ("DEFAULT", "bgp_router_id") => d.bgp_router_id = opt_text(&v)?,
        ("DEFAULT", "evpn_local_ip") => {
            d.evpn_local_ip = match v {
                Typed::Ip(ip) => Some(ip),
                _ => return Err(mismatch()),
            }
        }
        ("DEFAULT", "evpn_nic") => d.evpn_nic = opt_text(&v)?,
        ("DEFAULT", "evpn_udp_dstport") => {
            d.evpn_udp_dstport = u16::try_from(int(&v)?).map_err(|_| mismatch())?
        }
        ("DEFAULT", "clear_vrf_routes_on_startup") => d.clear_vrf_routes_on_startup = flag(&v)?,
        ("DEFAULT", "delete_vrf_on_disconnect") => d.delete_vrf_on_disconnect = flag(&v)?,
        ("DEFAULT", "bgp_nic") => d.bgp_nic = text(&v)?,
        ("DEFAULT", "bgp_vrf") => d.bgp_vrf = text(&v)?,
        ("DEFAULT", "bgp_vrf_table_id") => {
            d.bgp_vrf_table_id = u32::try_from(int(&v)?).map_err(|_| mismatch())?
        }
        ("DEFAULT", "address_scopes") => d.address_scopes = Some(list(&v)?),
        ("DEFAULT", "exposing_method") => {
            d.exposing_method = ExposingMethod::from_name(&choice(&v)?).ok_or_else(mismatch)?
        }
        ("DEFAULT", "announce_with") => {
            d.announce_with = AnnounceWith::from_name(&choice(&v)?).ok_or_else(mismatch)?
        }
        ("agent", "root_helper") => c.agent.root_helper = text(&v)?,
        ("ovn", "ovn_sb_private_key") => o.ovn_sb_private_key = text(&v)?,
        ("ovn", "ovn_sb_certificate") => o.ovn_sb_certificate = text(&v)?,
        ("ovn", "ovn_sb_ca_cert") => o.ovn_sb_ca_cert = text(&v)?,
        // Connection options keep "" as set: the regex already refused it.
        ("ovn", "ovn_sb_connection") => o.ovn_sb_connection = Some(text(&v)?),
        ("ovn", "ovn_nb_private_key") => o.ovn_nb_private_key = text(&v)?,
        ("ovn", "ovn_nb_certificate") => o.ovn_nb_certificate = text(&v)?,
        ("ovn", "ovn_nb_ca_cert") => o.ovn_nb_ca_cert = text(&v)?,
        ("ovn", "ovn_nb_connection") => o.ovn_nb_connection = Some(text(&v)?),
        ("local_ovn_cluster", "ovn_nb_connection") => lc.ovn_nb_connection = text(&v)?,
        ("local_ovn_cluster", "external_nics") => lc.external_nics = list(&v)?,
        ("local_ovn_cluster", "peer_ips") => lc.peer_ips = list(&v)?,
        ("local_ovn_cluster", "provider_networks_pool_prefixes") => {
            lc.provider_networks_pool_prefixes = list(&v)?
        }
        ("local_ovn_cluster", "bgp_chassis_id") => lc.bgp_chassis_id = text(&v)?,
        _ => {
            return Err(format!(
                "internal: [{}] {} has no field",
                spec.section, spec.name
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::OPTIONS;

    #[test]
    fn every_registered_option_round_trips_through_its_field() {
        let defaults = Config::default();
        for spec in OPTIONS {
            let mut c = Config::default();
            // Unset defaults have no value to write back; use a valid one.
            let value = get(&defaults, spec).unwrap_or_else(|| match spec.name {
                "evpn_local_ip" => Typed::Ip("192.0.2.1".parse().unwrap()),
                "metrics_listen" => Typed::Str("127.0.0.1:9476".into()),
                "address_scopes" => Typed::List(vec!["scope".into()]),
                "ovn_sb_connection" | "ovn_nb_connection" => {
                    Typed::Str("tcp:192.0.2.1:6642".into())
                }
                _ => Typed::Str("x".into()),
            });
            set(&mut c, spec, value.clone())
                .unwrap_or_else(|e| panic!("[{}] {}: {e}", spec.section, spec.name));
            assert_eq!(
                get(&c, spec),
                Some(value),
                "[{}] {}",
                spec.section,
                spec.name
            );
        }
    }

    #[test]
    fn choice_names_round_trip() {
        for d in [
            Driver::OvnBgpDriver,
            Driver::OvnEvpnDriver,
            Driver::OvnStretchedL2BgpDriver,
            Driver::NbOvnBgpDriver,
        ] {
            assert_eq!(Driver::from_name(d.as_str()), Some(d));
        }
        assert_eq!(ExposingMethod::from_name("ovn"), Some(ExposingMethod::Ovn));
        assert_eq!(
            AdvertisementMethod::from_name("subnet"),
            Some(AdvertisementMethod::Subnet)
        );
        assert_eq!(Driver::from_name("bogus"), None);
    }
}
