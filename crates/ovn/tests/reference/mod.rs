//! The snapshot as it was built before it became incremental: every row
//! parsed into vectors, every index rebuilt, on every call. Kept verbatim
//! (SB and fixture entry points removed) as the oracle the live snapshot is
//! checked against: the new code must answer every query exactly as this did.
#![allow(dead_code)]

pub mod sb;

use std::collections::HashMap;

use obgp_ovsdb_data::{Row, Uuid};

use obgp_ovn::hash::FastHash;
use obgp_ovn::nb::{
    LoadBalancer, LogicalRouter, LogicalRouterPort, LogicalSwitch, LogicalSwitchPort, LspType, Nat,
    NatType, NbGlobal, RowError,
};
use obgp_ovn::neutron::{self, ROUTER_INTERFACE_OWNER};
use obgp_ovn::ovs::LocalOvs;
use obgp_ovn::sb::SbIndex;
use obgp_ovn::RowSource;

/// The indexed snapshot. Build it with [`Snapshot::build`] (from OVSDB
/// caches) or [`Snapshot::from_wire`] (from a fixture in wire notation).
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub nb_global: NbGlobal,
    pub ovs: LocalOvs,

    switches: Vec<LogicalSwitch>,
    lsps: Vec<LogicalSwitchPort>,
    routers: Vec<LogicalRouter>,
    lrps: Vec<LogicalRouterPort>,
    nats: Vec<Nat>,
    lbs: Vec<LoadBalancer>,

    lsp_by_name: HashMap<String, u32, FastHash>,
    lrp_by_uuid: HashMap<Uuid, u32, FastHash>,
    nat_by_uuid: HashMap<Uuid, u32, FastHash>,
    router_by_name: HashMap<String, u32, FastHash>,
    /// Localnet LSPs of each switch (by switch name), in the switch's port order.
    localnets_by_switch: HashMap<String, Vec<u32>, FastHash>,
    /// Localnet LSPs by `options:network_name` (the physical network).
    localnets_by_physnet: HashMap<String, Vec<u32>, FastHash>,
    /// Up VM/virtual LSPs by every chassis they can be bound to.
    active_vifs_by_chassis: HashMap<String, Vec<u32>, FastHash>,
    /// Up VM/virtual LSPs by `neutron:network_name`.
    active_vifs_by_network: HashMap<String, Vec<u32>, FastHash>,
    /// Up router-interface LSPs by `neutron:device_id` (the router id).
    router_ifaces_by_router: HashMap<String, Vec<u32>, FastHash>,
    /// LRPs by `status:hosting-chassis` (system-id).
    lrps_by_hosting_chassis: HashMap<String, Vec<u32>, FastHash>,
    /// NATs by `logical_port` (first by uuid order wins).
    nat_by_logical_port: HashMap<String, u32, FastHash>,
    /// dnat_and_snat NATs by their `gateway_port`.
    fips_by_gateway_port: HashMap<Uuid, Vec<u32>, FastHash>,
    /// LBs with VIPs by the router id of `lr_ref` and of `neutron:router_name`.
    lbs_by_router: HashMap<String, Vec<u32>, FastHash>,

    /// OVN_Southbound rows (SB driver); empty unless built with
    /// [`Snapshot::build_with_sb`].
    sb: SbIndex,

    warnings: Vec<RowError>,
}

/// Rows of `table` in uuid order, so that "first match" is deterministic.
fn sorted_rows<'a, S: RowSource>(source: &'a S, table: &str) -> Vec<(Uuid, &'a Row)> {
    let mut rows = source.rows(table);
    rows.sort_unstable_by_key(|(u, _)| *u);
    rows
}

fn push<K: std::hash::Hash + Eq>(map: &mut HashMap<K, Vec<u32>, FastHash>, k: K, v: u32) {
    map.entry(k).or_default().push(v);
}

impl Snapshot {
    /// Builds the snapshot from the NB and local OVS databases. Rows that do
    /// not parse, and references to rows that do not exist, are skipped with
    /// a `tracing::warn!` naming the table and uuid and kept in
    /// [`Snapshot::warnings`].
    pub fn build(nb: &impl RowSource, ovs: &impl RowSource) -> Snapshot {
        let mut s = Snapshot::default();
        let mut warnings = Vec::new();

        macro_rules! parse_table {
            ($ty:ty, $into:expr) => {{
                let mut index: HashMap<Uuid, u32, FastHash> = HashMap::default();
                for (uuid, row) in sorted_rows(nb, <$ty>::TABLE) {
                    match <$ty>::parse(uuid, row) {
                        Ok(v) => {
                            index.insert(uuid, $into.len() as u32);
                            $into.push(v);
                        }
                        Err(e) => warnings.push(e),
                    }
                }
                index
            }};
        }

        let lsp_idx = parse_table!(LogicalSwitchPort, s.lsps);
        let _switch_idx = parse_table!(LogicalSwitch, s.switches);
        let _router_idx = parse_table!(LogicalRouter, s.routers);
        s.lrp_by_uuid = parse_table!(LogicalRouterPort, s.lrps);
        s.nat_by_uuid = parse_table!(Nat, s.nats);
        let _lb_idx = parse_table!(LoadBalancer, s.lbs);

        if let Some((uuid, row)) = sorted_rows(nb, NbGlobal::TABLE).into_iter().next() {
            s.nb_global = NbGlobal::parse(uuid, row);
        }

        for (i, lsp) in s.lsps.iter().enumerate() {
            let i = i as u32;
            s.lsp_by_name.entry(lsp.name.to_string()).or_insert(i);
            match lsp.kind {
                LspType::Vm | LspType::Virtual if lsp.up => {
                    for c in lsp.binding_candidates() {
                        push(&mut s.active_vifs_by_chassis, c.to_string(), i);
                    }
                    if let Some(net) = &lsp.network {
                        push(&mut s.active_vifs_by_network, net.to_string(), i);
                    }
                }
                LspType::Router
                    if lsp.up && lsp.device_owner.as_deref() == Some(ROUTER_INTERFACE_OWNER) =>
                {
                    if let Some(router) = &lsp.device_id {
                        push(&mut s.router_ifaces_by_router, router.to_string(), i);
                    }
                }
                LspType::Localnet => {
                    if let Some(net) = &lsp.localnet_network {
                        push(&mut s.localnets_by_physnet, net.to_string(), i);
                    }
                }
                _ => {}
            }
        }

        for sw in &s.switches {
            for port in &sw.ports {
                match lsp_idx.get(port) {
                    Some(&i) if s.lsps[i as usize].kind == LspType::Localnet => {
                        push(&mut s.localnets_by_switch, sw.name.clone(), i);
                    }
                    Some(_) => {}
                    None => {
                        if !nb.contains(LogicalSwitchPort::TABLE, *port) {
                            warnings.push(RowError {
                                table: LogicalSwitch::TABLE,
                                uuid: sw.uuid,
                                reason: format!("ports references missing row {port}"),
                            });
                        }
                    }
                }
            }
        }

        for (i, r) in s.routers.iter().enumerate() {
            s.router_by_name.entry(r.name.clone()).or_insert(i as u32);
            for n in &r.nat {
                if !s.nat_by_uuid.contains_key(n) && !nb.contains(Nat::TABLE, *n) {
                    warnings.push(RowError {
                        table: LogicalRouter::TABLE,
                        uuid: r.uuid,
                        reason: format!("nat references missing row {n}"),
                    });
                }
            }
        }

        for (i, lrp) in s.lrps.iter().enumerate() {
            if let Some(c) = &lrp.hosting_chassis {
                push(&mut s.lrps_by_hosting_chassis, c.clone(), i as u32);
            }
        }

        for (i, nat) in s.nats.iter_mut().enumerate() {
            let i = i as u32;
            if let Some(gw) = nat.gateway_port {
                if !s.lrp_by_uuid.contains_key(&gw) {
                    warnings.push(RowError {
                        table: Nat::TABLE,
                        uuid: nat.uuid,
                        reason: format!("gateway_port references missing or unusable row {gw}"),
                    });
                    nat.gateway_port = None;
                }
            }
            if let Some(lp) = &nat.logical_port {
                s.nat_by_logical_port.entry(lp.clone()).or_insert(i);
            }
            if let (NatType::DnatAndSnat, Some(gw)) = (&nat.kind, nat.gateway_port) {
                push(&mut s.fips_by_gateway_port, gw, i);
            }
        }

        for (i, lb) in s.lbs.iter().enumerate() {
            if lb.vip_ips.is_empty() {
                continue;
            }
            let mut routers: Vec<&String> = lb.lr_ref.iter().chain(lb.router_name.iter()).collect();
            routers.dedup();
            for r in routers {
                push(&mut s.lbs_by_router, r.clone(), i as u32);
            }
        }

        let ovs_root = sorted_rows(ovs, "Open_vSwitch").into_iter().next();
        s.ovs = LocalOvs::parse(
            ovs_root,
            &ovs.rows("Bridge"),
            &ovs.rows("Port").into_iter().collect(),
            &ovs.rows("Interface"),
            &mut warnings,
        );

        for w in &warnings {
            tracing::warn!(table = w.table, uuid = %w.uuid, "skipping OVN data: {}", w.reason);
        }
        s.warnings = warnings;
        s
    }

    /// The Southbound rows (empty when built without them).
    pub fn sb(&self) -> &SbIndex {
        &self.sb
    }

    /// Rows and references that were skipped, with the reason.
    pub fn warnings(&self) -> &[RowError] {
        &self.warnings
    }

    fn lsps_at<'a>(
        &'a self,
        idx: Option<&'a Vec<u32>>,
    ) -> impl Iterator<Item = &'a LogicalSwitchPort> {
        idx.into_iter().flatten().map(|&i| &self.lsps[i as usize])
    }

    /// Up VM and virtual ports bound to `chassis` (a hostname), per
    /// upstream's `get_active_lsp_on_chassis`.
    pub fn active_vifs_on_chassis<'a>(
        &'a self,
        chassis: &str,
    ) -> impl Iterator<Item = &'a LogicalSwitchPort> {
        self.lsps_at(self.active_vifs_by_chassis.get(chassis))
    }

    /// Up VM and virtual ports of network `network` (`neutron-<id>`).
    pub fn active_vifs_on_network<'a>(
        &'a self,
        network: &str,
    ) -> impl Iterator<Item = &'a LogicalSwitchPort> {
        self.lsps_at(self.active_vifs_by_network.get(network))
    }

    /// Up router-interface LSPs of router `router` (bare id).
    pub fn router_interfaces<'a>(
        &'a self,
        router: &str,
    ) -> impl Iterator<Item = &'a LogicalSwitchPort> {
        self.lsps_at(self.router_ifaces_by_router.get(router))
    }

    /// The first localnet port of switch `switch` (upstream assumes one).
    pub fn localnet_of_switch(&self, switch: &str) -> Option<&LogicalSwitchPort> {
        self.lsps_at(self.localnets_by_switch.get(switch)).next()
    }

    /// Localnet ports whose `options:network_name` is `physnet`.
    pub fn localnets_on_physnet<'a>(
        &'a self,
        physnet: &str,
    ) -> impl Iterator<Item = &'a LogicalSwitchPort> {
        self.lsps_at(self.localnets_by_physnet.get(physnet))
    }

    /// The LSP named `name`.
    pub fn lsp(&self, name: &str) -> Option<&LogicalSwitchPort> {
        self.lsp_by_name.get(name).map(|&i| &self.lsps[i as usize])
    }

    /// LRPs whose `status:hosting-chassis` is `system_id`.
    pub fn lrps_hosted_on<'a>(
        &'a self,
        system_id: &str,
    ) -> impl Iterator<Item = &'a LogicalRouterPort> {
        self.lrps_by_hosting_chassis
            .get(system_id)
            .into_iter()
            .flatten()
            .map(|&i| &self.lrps[i as usize])
    }

    pub fn lrp_by_uuid(&self, uuid: Uuid) -> Option<&LogicalRouterPort> {
        self.lrp_by_uuid.get(&uuid).map(|&i| &self.lrps[i as usize])
    }

    /// The router `neutron-<id>` for bare id `router`.
    pub fn router(&self, router: &str) -> Option<&LogicalRouter> {
        self.router_by_name
            .get(&neutron::ovn_name(router))
            .map(|&i| &self.routers[i as usize])
    }

    /// The NATs of a router, skipping dangling references.
    pub fn router_nats<'a>(&'a self, router: &'a LogicalRouter) -> impl Iterator<Item = &'a Nat> {
        router
            .nat
            .iter()
            .filter_map(|u| self.nat_by_uuid.get(u))
            .map(|&i| &self.nats[i as usize])
    }

    /// The NAT entry whose `logical_port` is `port` (upstream
    /// `get_nat_by_logical_port`).
    pub fn nat_of_logical_port(&self, port: &str) -> Option<&Nat> {
        self.nat_by_logical_port
            .get(port)
            .map(|&i| &self.nats[i as usize])
    }

    /// dnat_and_snat NATs whose `gateway_port` is the LRP `lrp`.
    pub fn fips_on_gateway_port(&self, lrp: Uuid) -> impl Iterator<Item = &Nat> {
        self.fips_by_gateway_port
            .get(&lrp)
            .into_iter()
            .flatten()
            .map(|&i| &self.nats[i as usize])
    }

    /// LBs with VIPs that reference router `router` (bare id) through
    /// `lr_ref` or `neutron:router_name` (upstream `get_active_local_lbs`).
    pub fn lbs_of_router<'a>(&'a self, router: &str) -> impl Iterator<Item = &'a LoadBalancer> {
        self.lbs_by_router
            .get(router)
            .into_iter()
            .flatten()
            .map(|&i| &self.lbs[i as usize])
    }

    /// Counts of parsed rows per NB table, for logs and benchmarks.
    pub fn counts(&self) -> [(&'static str, usize); 6] {
        [
            (LogicalSwitch::TABLE, self.switches.len()),
            (LogicalSwitchPort::TABLE, self.lsps.len()),
            (LogicalRouter::TABLE, self.routers.len()),
            (LogicalRouterPort::TABLE, self.lrps.len()),
            (Nat::TABLE, self.nats.len()),
            (LoadBalancer::TABLE, self.lbs.len()),
        ]
    }
}
