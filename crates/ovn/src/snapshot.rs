//! The immutable, indexed view of OVN and the local OVS database that
//! `desired_state` reads.
//!
//! Rows are parsed once into typed values; every question the NB driver asks
//! ("which ports are bound to chassis C", "which gateway ports does C host",
//! "the localnet of switch S", "the NAT of logical port P", "the LBs of
//! router R") is one hash lookup returning the few rows that answer it, so
//! the cost of a reconcile follows what is local to the chassis, not the size
//! of the database.
//!
//! Rows and indexes live in persistent maps (`imbl`): a [`Snapshot`] clone
//! costs a few reference counts, and [`LiveSnapshot`](crate::LiveSnapshot)
//! patches them row by row instead of rebuilding them on every change.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use obgp_ovsdb_data::{Row, Str, Uuid};

use crate::index::{first_at, rows_at, Index, PMap, RowSet, Rows};
use crate::nb::{
    DhcpOptions, LoadBalancer, LogicalRouter, LogicalRouterPort, LogicalSwitch, LogicalSwitchPort,
    Nat, NbGlobal, RowError,
};
use crate::neutron;
use crate::ovs::LocalOvs;
use crate::rows_version::RowsVersion;
use crate::sb::SbIndex;

/// One table's rows, keyed by uuid: what an OVSDB cache holds.
pub type Table = HashMap<Uuid, Row>;

/// One database's tables, keyed by table name.
pub type Tables = BTreeMap<String, Table>;

/// Database names as the scenarios and the OVSDB servers spell them.
pub const NB_DB: &str = "OVN_Northbound";
pub const SB_DB: &str = "OVN_Southbound";
pub const OVS_DB: &str = "Open_vSwitch";

/// The parsed NB rows and every NB index. Kept equal, field by field, to
/// what a from-scratch load of the same rows gives: empty index entries are
/// removed, never left behind.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct NbIndex {
    pub lsps: Rows<LogicalSwitchPort>,
    pub switches: Rows<LogicalSwitch>,
    pub routers: Rows<LogicalRouter>,
    pub lrps: Rows<LogicalRouterPort>,
    /// NATs as served: `gateway_port` cleared when it names no usable LRP.
    pub nats: Rows<Nat>,
    pub lbs: Rows<LoadBalancer>,
    pub dhcp_options: Rows<DhcpOptions>,

    pub lsp_by_name: Index<Str, LogicalSwitchPort>,
    pub router_by_name: Index<String, LogicalRouter>,
    pub switches_by_name: Index<String, LogicalSwitch>,
    /// Localnet LSPs of each switch (by switch uuid), in the switch's port
    /// order, each with its row; switches without one are absent.
    pub localnets_of_switch: PMap<Uuid, Arc<[Arc<LogicalSwitchPort>]>>,
    /// Localnet LSPs by `options:network_name` (the physical network).
    pub localnets_by_physnet: Index<Str, LogicalSwitchPort>,
    /// Up VM/virtual LSPs by every chassis they can be bound to.
    pub active_vifs_by_chassis: Index<Str, LogicalSwitchPort>,
    /// Up VM/virtual LSPs by `neutron:network_name`.
    pub active_vifs_by_network: Index<Str, LogicalSwitchPort>,
    /// Up router-interface LSPs by `neutron:device_id` (the router id).
    pub router_ifaces_by_router: Index<Str, LogicalSwitchPort>,
    /// LRPs by `status:hosting-chassis` (system-id).
    pub lrps_by_hosting_chassis: Index<String, LogicalRouterPort>,
    /// NATs by `logical_port`.
    pub nat_by_logical_port: Index<String, Nat>,
    /// dnat_and_snat NATs by their (usable) `gateway_port`.
    pub fips_by_gateway_port: Index<Uuid, Nat>,
    /// LBs with VIPs by the router id of `lr_ref` and of `neutron:router_name`.
    pub lbs_by_router: Index<String, LoadBalancer>,
}

/// The indexed snapshot. Build it with [`Snapshot::build`] (from OVSDB
/// caches), [`Snapshot::from_wire`] (from a fixture in wire notation), or
/// keep one up to date with [`LiveSnapshot`](crate::live::LiveSnapshot). Cloning is cheap (shared
/// persistent maps), and two snapshots of the same rows compare equal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub nb_global: NbGlobal,
    pub ovs: LocalOvs,
    pub(crate) nb: NbIndex,
    /// OVN_Southbound rows (SB driver); empty unless built with
    /// [`Snapshot::build_with_sb`].
    pub(crate) sb: SbIndex,
    pub(crate) warnings: Arc<[RowError]>,
    /// Which state of the NB and OVS rows this is (history, not content:
    /// ignored by `==`), what [`NbChanges`](crate::NbChanges) are checked against.
    pub(crate) version: RowsVersion,
}

/// Where a snapshot reads one database's rows from: plain [`Tables`] (tests,
/// fixtures) or the OVSDB client's cache snapshot, without copying rows.
pub trait RowSource {
    /// Every row of `table`, in any order (empty if the table is unknown).
    fn rows(&self, table: &str) -> Vec<(Uuid, &Row)>;
    /// Whether `table` holds a row `uuid` (parsed or not).
    fn contains(&self, table: &str, uuid: Uuid) -> bool;
}

impl RowSource for Tables {
    fn rows(&self, table: &str) -> Vec<(Uuid, &Row)> {
        self.get(table)
            .map(|t| t.iter().map(|(u, r)| (*u, r)).collect())
            .unwrap_or_default()
    }
    fn contains(&self, table: &str, uuid: Uuid) -> bool {
        self.get(table).is_some_and(|t| t.contains_key(&uuid))
    }
}

impl RowSource for obgp_ovsdb_data::DbSnapshot {
    fn rows(&self, table: &str) -> Vec<(Uuid, &Row)> {
        self.table(table).iter().map(|(u, r)| (*u, &**r)).collect()
    }
    fn contains(&self, table: &str, uuid: Uuid) -> bool {
        self.get(table, uuid).is_some()
    }
}

impl Snapshot {
    /// The Southbound rows (empty when built without them).
    pub fn sb(&self) -> &SbIndex {
        &self.sb
    }

    /// Rows and references that were skipped, with the reason: NB rows that
    /// do not parse (by table, then uuid), NB dangling references, then the
    /// OVS and SB ones.
    pub fn warnings(&self) -> &[RowError] {
        &self.warnings
    }

    fn lsps_at<'a>(
        &'a self,
        idx: Option<&'a RowSet<LogicalSwitchPort>>,
    ) -> impl Iterator<Item = &'a LogicalSwitchPort> {
        rows_at(idx)
    }

    /// Up VM and virtual ports bound to `chassis` (a hostname), per
    /// upstream's `get_active_lsp_on_chassis`, in uuid order.
    pub fn active_vifs_on_chassis<'a>(
        &'a self,
        chassis: &str,
    ) -> impl Iterator<Item = &'a LogicalSwitchPort> {
        self.lsps_at(self.nb.active_vifs_by_chassis.get(chassis))
    }

    /// Whether port `port` is among [`Snapshot::active_vifs_on_chassis`]`(chassis)`.
    pub fn is_active_vif_on(&self, chassis: &str, port: Uuid) -> bool {
        self.nb
            .active_vifs_by_chassis
            .get(chassis)
            .is_some_and(|set| set.contains(port))
    }

    /// Up VM and virtual ports of network `network` (`neutron-<id>`).
    pub fn active_vifs_on_network<'a>(
        &'a self,
        network: &str,
    ) -> impl Iterator<Item = &'a LogicalSwitchPort> {
        self.lsps_at(self.nb.active_vifs_by_network.get(network))
    }

    /// Whether [`Snapshot::lrps_hosted_on`] and
    /// [`Snapshot::router_interfaces`] read the very rows `other` does, for
    /// the same OVS `system-id`: shared maps, compared by pointer in O(1).
    /// `false` may still mean the same content (a map edited back).
    pub fn shares_gateway_rows(&self, other: &Snapshot) -> bool {
        self.nb
            .lrps_by_hosting_chassis
            .ptr_eq(&other.nb.lrps_by_hosting_chassis)
            && self
                .nb
                .router_ifaces_by_router
                .ptr_eq(&other.nb.router_ifaces_by_router)
            && self.ovs.system_id == other.ovs.system_id
    }

    /// Up router-interface LSPs of router `router` (bare id).
    pub fn router_interfaces<'a>(
        &'a self,
        router: &str,
    ) -> impl Iterator<Item = &'a LogicalSwitchPort> {
        self.lsps_at(self.nb.router_ifaces_by_router.get(router))
    }

    /// The first localnet port of switch `switch` (upstream assumes one):
    /// of the switches with that name in uuid order, the first one with a
    /// localnet, its first localnet in port order.
    pub fn localnet_of_switch(&self, switch: &str) -> Option<&LogicalSwitchPort> {
        self.nb
            .switches_by_name
            .get(switch)?
            .iter()
            .find_map(|(sw, _)| self.nb.localnets_of_switch.get(sw))
            .and_then(|ports| ports.first())
            .map(|p| &**p)
    }

    /// The switches that have localnet ports, each with its localnets in
    /// the switch's port order (the provider networks, wherever mapped).
    pub fn switches_with_localnets(
        &self,
    ) -> impl Iterator<Item = (&LogicalSwitch, Vec<&LogicalSwitchPort>)> {
        self.nb.localnets_of_switch.iter().filter_map(|(sw, lns)| {
            let ls = self.nb.switches.get(sw)?;
            Some((&**ls, lns.iter().map(|p| &**p).collect()))
        })
    }

    /// Localnet ports whose `options:network_name` is `physnet`.
    pub fn localnets_on_physnet<'a>(
        &'a self,
        physnet: &str,
    ) -> impl Iterator<Item = &'a LogicalSwitchPort> {
        self.lsps_at(self.nb.localnets_by_physnet.get(physnet))
    }

    /// The LSP named `name` (the first by uuid if several are).
    pub fn lsp(&self, name: &str) -> Option<&LogicalSwitchPort> {
        first_at(self.nb.lsp_by_name.get(name))
    }

    /// LRPs whose `status:hosting-chassis` is `system_id`.
    pub fn lrps_hosted_on<'a>(
        &'a self,
        system_id: &str,
    ) -> impl Iterator<Item = &'a LogicalRouterPort> {
        rows_at(self.nb.lrps_by_hosting_chassis.get(system_id))
    }

    pub fn lrp_by_uuid(&self, uuid: Uuid) -> Option<&LogicalRouterPort> {
        self.nb.lrps.get(&uuid).map(|r| &**r)
    }

    /// The router `neutron-<id>` for bare id `router` (the first by uuid if
    /// several are).
    pub fn router(&self, router: &str) -> Option<&LogicalRouter> {
        first_at(
            self.nb
                .router_by_name
                .get(neutron::ovn_name(router).as_str()),
        )
    }

    /// The NATs of a router, skipping dangling references.
    pub fn router_nats<'a>(&'a self, router: &'a LogicalRouter) -> impl Iterator<Item = &'a Nat> {
        router
            .nat
            .iter()
            .filter_map(|u| self.nb.nats.get(u))
            .map(|n| &**n)
    }

    /// The NAT entry whose `logical_port` is `port` (upstream
    /// `get_nat_by_logical_port`; the first by uuid if several are).
    pub fn nat_of_logical_port(&self, port: &str) -> Option<&Nat> {
        first_at(self.nb.nat_by_logical_port.get(port))
    }

    /// dnat_and_snat NATs whose `gateway_port` is the LRP `lrp`.
    pub fn fips_on_gateway_port(&self, lrp: Uuid) -> impl Iterator<Item = &Nat> {
        rows_at(self.nb.fips_by_gateway_port.get(&lrp))
    }

    /// LBs with VIPs that reference router `router` (bare id) through
    /// `lr_ref` or `neutron:router_name` (upstream `get_active_local_lbs`).
    pub fn lbs_of_router<'a>(&'a self, router: &str) -> impl Iterator<Item = &'a LoadBalancer> {
        rows_at(self.nb.lbs_by_router.get(router))
    }

    /// The LSP with uuid `uuid` (a switch's `ports` entry), if it parsed.
    pub fn lsp_by_uuid(&self, uuid: Uuid) -> Option<&LogicalSwitchPort> {
        self.nb.lsps.get(&uuid).map(|p| &**p)
    }

    /// The router with uuid `uuid`, if it parsed.
    pub fn router_by_uuid(&self, uuid: Uuid) -> Option<&LogicalRouter> {
        self.nb.routers.get(&uuid).map(|r| &**r)
    }

    /// The NAT with uuid `uuid`, as served (see the NAT index), if it parsed.
    pub fn nat_by_uuid(&self, uuid: Uuid) -> Option<&Nat> {
        self.nb.nats.get(&uuid).map(|n| &**n)
    }

    /// The NB load balancer with uuid `uuid`, if it parsed.
    pub fn lb_by_uuid(&self, uuid: Uuid) -> Option<&LoadBalancer> {
        self.nb.lbs.get(&uuid).map(|l| &**l)
    }

    /// The switch with uuid `uuid`, if it parsed.
    pub fn switch_by_uuid(&self, uuid: Uuid) -> Option<&LogicalSwitch> {
        self.nb.switches.get(&uuid).map(|s| &**s)
    }

    /// The switch named `name` (the first by uuid if several are).
    pub fn switch(&self, name: &str) -> Option<&LogicalSwitch> {
        first_at(self.nb.switches_by_name.get(name))
    }

    /// The switches with networking-bgpvpn annotations (good or bad), in
    /// uuid order. A walk over the switches: there are few, next to ports.
    pub fn bgpvpn_switches(&self) -> Vec<&LogicalSwitch> {
        let mut out: Vec<&LogicalSwitch> = self
            .nb
            .switches
            .values()
            .filter(|s| s.bgpvpn.is_some())
            .map(|s| &**s)
            .collect();
        out.sort_unstable_by_key(|s| s.uuid);
        out
    }

    /// The DHCP_Options row `uuid` (a port's `dhcpv4_options` or
    /// `dhcpv6_options`), if it exists and parsed.
    pub fn dhcp_options(&self, uuid: Uuid) -> Option<&DhcpOptions> {
        self.nb.dhcp_options.get(&uuid).map(|d| &**d)
    }

    /// Counts of parsed rows per NB table, for logs and benchmarks.
    pub fn counts(&self) -> [(&'static str, usize); 6] {
        [
            (LogicalSwitch::TABLE, self.nb.switches.len()),
            (LogicalSwitchPort::TABLE, self.nb.lsps.len()),
            (LogicalRouter::TABLE, self.nb.routers.len()),
            (LogicalRouterPort::TABLE, self.nb.lrps.len()),
            (Nat::TABLE, self.nb.nats.len()),
            (LoadBalancer::TABLE, self.nb.lbs.len()),
        ]
    }
}

mod scan;
pub use scan::RowFacts;

#[cfg(test)]
mod tests;
