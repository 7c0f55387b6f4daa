//! The event filters' [`AgentView`] answered from the current OVN snapshot
//! and the last desired state: what upstream read from its driver caches
//! (`ovn_local_cr_lrps`, `ovn_local_lrps`, `_exposed_ips`...), derived here
//! from the same data the next reconcile uses, so a filter and the
//! reconcile it schedules never disagree.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Arc;

use obgp_desired::ExposedIps;
use obgp_events::view::RowView;
use obgp_events::AgentView;
use obgp_ovn::Snapshot;
use obgp_ovsdb_data::Uuid;

/// `neutron:port_name` of an OVN LB's VIP port: this prefix, then the
/// load balancer's name.
const LB_VIP_PORT_PREFIX: &str = "ovn-lb-vip-";

/// An immutable view, rebuilt after every reconcile: O(1) but for the
/// gateways hosted here, which are derived again only when their rows
/// changed.
pub struct FilterView {
    raw: obgp_ovsdb_data::DbSnapshot,
    snap: Arc<Snapshot>,
    chassis: String,
    chassis_id: String,
    gateways: Arc<LocalGateways>,
    /// Every announced IP (shared with the reconciler's desired state, not copied).
    exposed: ExposedIps,
}

impl FilterView {
    /// `raw` is the cache of the OVN database the driver reads (NB or SB);
    /// `chassis` this node's name in its rows (see
    /// `Reconciler::chassis_name`); `exposed` the IPs of the last desired
    /// state.
    pub fn new(
        raw: obgp_ovsdb_data::DbSnapshot,
        snap: Arc<Snapshot>,
        chassis: String,
        exposed: ExposedIps,
    ) -> FilterView {
        let chassis_id = snap.ovs.system_id.clone().unwrap_or_default();
        FilterView {
            raw,
            gateways: Arc::new(LocalGateways::derive(&snap, &chassis_id)),
            snap,
            chassis,
            chassis_id,
            exposed,
        }
    }

    /// [`FilterView::new`], reusing `previous`'s gateways when their rows
    /// are the same: with many gateway routers hosted here, deriving them
    /// after every reconcile cost about half the CPU of an event's
    /// reconcile (docs/latency.md, "Announcing with routes").
    pub fn after(
        previous: &FilterView,
        raw: obgp_ovsdb_data::DbSnapshot,
        snap: Arc<Snapshot>,
        chassis: String,
        exposed: ExposedIps,
    ) -> FilterView {
        if !snap.shares_gateway_rows(&previous.snap) {
            return FilterView::new(raw, snap, chassis, exposed);
        }
        FilterView {
            raw,
            gateways: previous.gateways.clone(),
            chassis_id: previous.chassis_id.clone(),
            snap,
            chassis,
            exposed,
        }
    }

    /// A provider network whose physical network is mapped to a bridge here.
    fn switch_is_provider(&self, switch: &str) -> bool {
        self.snap
            .localnet_of_switch(switch)
            .and_then(|lnet| lnet.localnet_network.as_deref())
            .is_some_and(|net| self.snap.ovs.bridge_for_network(net).is_some())
    }
}

/// The gateway routers hosted on this chassis and the networks behind them.
#[derive(Debug, Default, PartialEq)]
struct LocalGateways {
    /// Routers (bare ids) with a gateway port hosted here.
    cr_lrps: HashSet<String>,
    /// Logical switches (`neutron-<id>`) behind those gateways.
    networks: HashSet<String>,
}

impl LocalGateways {
    fn derive(snap: &Snapshot, chassis_id: &str) -> LocalGateways {
        let mut cr_lrps = HashSet::new();
        let mut networks = HashSet::new();
        for lrp in snap.lrps_hosted_on(chassis_id) {
            if let Some(router) = &lrp.router {
                cr_lrps.insert(router.clone());
            }
        }
        for router in &cr_lrps {
            for iface in snap.router_interfaces(router) {
                if let Some(net) = &iface.network {
                    networks.insert(net.to_string());
                }
            }
        }
        LocalGateways { cr_lrps, networks }
    }
}

impl AgentView for FilterView {
    fn chassis(&self) -> &str {
        &self.chassis
    }

    fn chassis_id(&self) -> &str {
        &self.chassis_id
    }

    fn has_local_cr_lrps(&self) -> bool {
        !self.gateways.cr_lrps.is_empty()
    }

    fn is_local_cr_lrp(&self, router: Option<&str>) -> bool {
        router.is_some_and(|r| {
            self.gateways
                .cr_lrps
                .contains(obgp_ovn::neutron::strip_prefix(r))
        })
    }

    fn is_local_lrp_network(&self, logical_switch: Option<&str>) -> bool {
        logical_switch.is_some_and(|ls| self.gateways.networks.contains(ls))
    }

    /// Upstream keys its exposed IPs by switch; an IP is announced at most
    /// once per node, so the IP alone answers the same question.
    fn is_ip_exposed(&self, _logical_switch: Option<&str>, ips: &[&str]) -> bool {
        ips.iter()
            .filter_map(|ip| ip.split('/').next()?.parse::<IpAddr>().ok())
            .any(|ip| self.exposed.contains(&ip))
    }

    fn is_ls_provider(&self, logical_switch: Option<&str>) -> bool {
        logical_switch.is_some_and(|ls| self.switch_is_provider(ls))
    }

    fn distributed(&self) -> bool {
        self.snap.nb_global.fip_distributed
    }

    /// Upstream's `provider_ovn_lbs`: the load balancers whose VIP the SB
    /// driver exposed on a provider network through a gateway hosted here
    /// (`_expose_ovn_lb_on_provider`). Here: the LB's VIP port
    /// (`neutron:port_name = ovn-lb-vip-<name>`) has its VIP among the IPs
    /// the last desired state announces. The NB driver's snapshot has no SB
    /// rows, so it answers false, as upstream's NB driver has no such map.
    fn is_provider_ovn_lb(&self, name: Option<&str>) -> bool {
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return false;
        };
        self.snap.sb().lb_vip_ports().any(|port| {
            port.port_name
                .as_deref()
                .and_then(|n| n.strip_prefix(LB_VIP_PORT_PREFIX))
                == Some(name)
                && port
                    .cidrs
                    .first()
                    .is_some_and(|vip| self.exposed.contains(&vip.addr()))
        })
    }

    fn lsp(&self, name_or_uuid: &str) -> Option<RowView<'_>> {
        const LSP: &str = "Logical_Switch_Port";
        let uuid = match Uuid::parse(name_or_uuid) {
            Ok(u) if self.raw.get(LSP, u).is_some() => u,
            _ => self.snap.lsp(name_or_uuid)?.uuid,
        };
        self.raw.get(LSP, uuid).map(|row| RowView::complete(row))
    }

    fn row(&self, uuid: Uuid) -> Option<RowView<'_>> {
        self.raw
            .tables()
            .find_map(|t| self.raw.get(t, uuid))
            .map(|row| RowView::complete(row))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exposed(ips: &[&str]) -> ExposedIps {
        ips.iter().map(|ip| ip.parse::<IpAddr>().unwrap()).collect()
    }

    fn view(exposed: ExposedIps) -> FilterView {
        let raw = obgp_ovsdb_data::DbSnapshot::empty(
            Arc::new(
                obgp_ovsdb_data::DatabaseSchema::from_file(format!(
                    "{}/../../fixtures/schemas/ovn-nb.ovsschema",
                    env!("CARGO_MANIFEST_DIR")
                ))
                .unwrap(),
            ),
            ["Logical_Switch_Port"],
        );
        FilterView::new(raw, Arc::default(), "host-000".into(), exposed)
    }

    /// `after` reuses the gateways only while their rows are shared, and
    /// answers as a fresh view does either way.
    #[test]
    fn a_view_after_another_answers_as_a_fresh_one_when_a_gateway_moves() {
        use obgp_ovn::{LiveSnapshot, Tables};
        use obgp_ovsdb_data::Row;
        use serde_json::json;
        let row = |v: serde_json::Value| Row::from_wire(&v).unwrap();
        let gateway = |chassis: &str| {
            row(
                json!({"name": "lrp-gw", "mac": "fa:16:3e:00:00:10", "networks": "172.24.4.1/24",
                       "external_ids": ["map", [["neutron:router_name", "r1"]]],
                       "status": ["map", [["hosting-chassis", chassis]]]}),
            )
        };
        let interface = row(json!({"name": "rif", "type": "router", "up": true,
            "external_ids": ["map", [["neutron:device_owner", "network:router_interface"],
                                    ["neutron:device_id", "r1"],
                                    ["neutron:network_name", "neutron-net1"]]]}));
        let vm = |up: bool| row(json!({"name": "vm1", "up": up}));
        let (lrp, rif, vm_port) = (Uuid(1), Uuid(2), Uuid(3));
        let mut ovs = Tables::new();
        ovs.entry("Open_vSwitch".into()).or_default().insert(
            Uuid(9),
            row(json!({"external_ids": ["map", [["system-id", "chassis-1"]]]})),
        );
        let mut live = LiveSnapshot::default();
        live.reset_ovs(&ovs);
        live.apply_nb([
            ("Logical_Router_Port", lrp, Some(&gateway("chassis-1"))),
            ("Logical_Switch_Port", rif, Some(&interface)),
            ("Logical_Switch_Port", vm_port, Some(&vm(false))),
        ]);
        let raw = view(ExposedIps::default()).raw;
        let at = |live: &LiveSnapshot| Arc::new(live.snapshot());
        let first = FilterView::new(raw.clone(), at(&live), "h".into(), Default::default());
        assert!(first.is_local_cr_lrp(Some("r1")));
        assert!(first.is_local_lrp_network(Some("neutron-net1")));

        live.apply_nb([("Logical_Switch_Port", vm_port, Some(&vm(true)))]);
        let second = FilterView::after(
            &first,
            raw.clone(),
            at(&live),
            "h".into(),
            Default::default(),
        );
        assert!(Arc::ptr_eq(&second.gateways, &first.gateways), "reused");

        live.apply_nb([("Logical_Router_Port", lrp, Some(&gateway("chassis-2")))]);
        let third = FilterView::after(
            &second,
            raw.clone(),
            at(&live),
            "h".into(),
            Default::default(),
        );
        let fresh = FilterView::new(raw, at(&live), "h".into(), Default::default());
        assert_eq!(third.gateways, fresh.gateways);
        assert!(!third.is_local_cr_lrp(Some("r1")));
        assert!(!third.is_local_lrp_network(Some("neutron-net1")));
    }

    /// A load balancer's delete wakes the SB driver when its VIP is
    /// announced here (upstream's `OVNLBMemberDeleteEvent` on
    /// `provider_ovn_lbs`); the view used to answer false for every name,
    /// so a deleted LB stayed announced until the periodic reconcile.
    #[test]
    fn a_deleted_load_balancer_whose_vip_is_announced_here_triggers_the_sb_driver() {
        use obgp_config::{Config, Driver};
        use obgp_ovn::LiveSnapshot;
        use obgp_ovsdb_data::{Change, ChangeKind, Row};
        use serde_json::json;
        let row = |v: serde_json::Value| Row::from_wire(&v).unwrap();
        let vip_port = row(json!({
            "logical_port": "3f1c0de4-vip", "type": "", "up": false,
            "datapath": ["uuid", Uuid(7).to_string()],
            "external_ids": ["map", [["neutron:port_name", "ovn-lb-vip-lb1"],
                                     ["neutron:cidrs", "172.24.4.50/24"]]]}));
        let mut live = LiveSnapshot::default();
        live.apply_sb([("Port_Binding", Uuid(1), Some(&vip_port))]);
        let raw = view(ExposedIps::default()).raw;
        let snap = Arc::new(live.snapshot());
        let at = |ips: &[&str]| {
            FilterView::new(raw.clone(), snap.clone(), "chassis-1".into(), exposed(ips))
        };
        let announced = at(&["172.24.4.50"]);
        assert!(announced.is_provider_ovn_lb(Some("lb1")));
        assert!(!announced.is_provider_ovn_lb(Some("lb2")));
        assert!(!announced.is_provider_ovn_lb(None));
        assert!(!at(&["172.24.4.51"]).is_provider_ovn_lb(Some("lb1")));

        let mut config = Config::default();
        config.default.driver = Driver::OvnBgpDriver;
        let filters = obgp_events::Filters::for_config(&config.default);
        let delete = Change {
            table: Arc::from("Load_Balancer"),
            uuid: Uuid(2),
            kind: ChangeKind::Delete,
            new: None,
            old: Some(Arc::new(row(json!({"name": "lb1"})))),
        };
        assert_eq!(
            crate::reasons(&filters, &delete, &announced),
            ["OVNLBMemberDeleteEvent"]
        );
    }

    #[test]
    fn an_ip_is_exposed_exactly_when_the_last_desired_state_announces_it() {
        let v = view(exposed(&["10.0.0.5", "2001:db8::5"]));
        assert!(v.is_ip_exposed(None, &["10.0.0.5"]));
        assert!(v.is_ip_exposed(Some("neutron-x"), &["10.0.0.9/24", "2001:db8::5/64"]));
        assert!(!v.is_ip_exposed(None, &["10.0.0.6", "not-an-ip"]));
        // Before the first reconcile nothing is exposed.
        assert!(!view(ExposedIps::default()).is_ip_exposed(None, &["10.0.0.5"]));
    }
}
