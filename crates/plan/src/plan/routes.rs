//! Routes: desired routes the kernel lacks (never over one of FRR's), and
//! the kernel's routes in the VRF and bridge tables that nothing wants.

use std::collections::BTreeSet;

use obgp_netmodel::{Class, IpNet, RouteType};

use super::order::rank;
use super::Group;
use super::{flag_present, Planner};
use crate::actual::{Actual, KernelRoute};
use crate::op::Op;

impl Planner<'_> {
    pub(super) fn desired_routes(&self) -> Vec<(KernelRoute, Class)> {
        self.desired
            .routes
            .iter()
            .map(|(r, c)| {
                let k = crate::holds::kernel_route(r, self.resolve(&r.table));
                (k, *c)
            })
            .collect()
    }

    /// Whether the kernel holds each desired route, in desired order.
    fn routes_present(&self) -> Vec<bool> {
        let have = &self.actual.routes;
        let want = &self.want_routes;
        if want.is_sorted_by(|a, b| a.0 <= b.0) {
            flag_present(want, have, |(w, _), h| w.cmp(h))
                .map(|(_, present)| present)
                .collect()
        } else {
            want.iter().map(|(w, _)| have.contains(w)).collect()
        }
    }

    pub(super) fn routes(&mut self) {
        let present = self.routes_present();
        let evpn_tables = self.evpn_tables();
        let want_routes = std::mem::take(&mut self.want_routes);
        for ((want, class), present) in want_routes.iter().zip(present) {
            if !present {
                self.route_add(want.clone(), *class, &evpn_tables);
            }
        }
        self.want_routes = want_routes;
    }

    /// Plans the desired route `want` the kernel lacks: never over a route
    /// of FRR's with the same key, skipped while its device is missing; an
    /// announcement in the VRF (or an EVPN VRF's) table, wiring elsewhere.
    pub(super) fn route_add(
        &mut self,
        want: KernelRoute,
        class: Class,
        evpn_tables: &BTreeSet<u32>,
    ) {
        let same_key = routes_with_key(&self.actual.routes, want.key()).next();
        if same_key.is_some_and(|a| a.proto == obgp_netmodel::proto::FRR) {
            self.skip(
                format!("route {}", crate::op::route_text(&want)),
                "a route with this destination is FRR's (proto 186), never touched",
            );
            return;
        }
        if let Some(dev) = &want.dev {
            if !self.will_exist(dev) {
                self.skip(
                    format!(
                        "route {} table {}",
                        crate::op::route_text(&want),
                        want.table
                    ),
                    format!("device {dev} does not exist"),
                );
                return;
            }
        }
        let group = if want.table == self.desired.vrf_table || evpn_tables.contains(&want.table) {
            Group::Announce
        } else {
            Self::wiring_group(class)
        };
        let op = Op::ReplaceRoute {
            table_name: self.table_name(want.table),
            route: want,
        };
        self.push(group, rank::ROUTE, Some(class), op);
    }

    /// Withdrawals (VRF-table routes) and unwiring (bridge-table routes):
    /// the kernel's routes in ascending key order, against the desired keys
    /// in the same order (sorted here only if the desired order differs).
    pub(super) fn route_leftovers(&mut self, owned_tables: &BTreeSet<u32>) {
        let a = self.actual;
        let mut want_keys: Vec<_> = self.want_routes.iter().map(|(r, _)| r.key()).collect();
        if !want_keys.is_sorted() {
            want_keys.sort_unstable();
        }
        let evpn_tables = self.evpn_tables();
        let routes = flag_present(&a.routes, &want_keys, |h, w| h.key().cmp(w));
        for (r, wanted) in routes {
            if !wanted {
                self.route_leftover(r, owned_tables, &evpn_tables);
            }
        }
    }

    /// Deletes the kernel's route `r`, which no desired route has the key
    /// of, if it is the agent's: a route in the VRF table (a withdrawal) or
    /// a destination route in a bridge table (unwiring), never FRR's or the
    /// kernel's own.
    pub(super) fn route_leftover(
        &mut self,
        r: &KernelRoute,
        owned_tables: &BTreeSet<u32>,
        evpn_tables: &BTreeSet<u32>,
    ) {
        if Actual::route_is_foreign(r) {
            return;
        }
        let in_vrf = r.table == self.desired.vrf_table || evpn_tables.contains(&r.table);
        let in_bridge = owned_tables.contains(&r.table) && r.dst.is_some();
        if !(in_vrf || in_bridge) || r.kind == RouteType::Local {
            return;
        }
        // A host route whose prefix a desired address announces instead
        // (`announce_with` switched back to address) is replaced, not
        // withdrawn: see `address_leftover`.
        let replaced = r.table == self.desired.vrf_table
            && r.dst.is_some_and(|dst| self.announced_by_address(&dst));
        if replaced && !self.frr_redistributes_as_desired() {
            self.skip(
                format!("route {} table {}", crate::op::route_text(r), r.table),
                super::addresses::REPLACED_WAITS_FOR_FRR,
            );
            return;
        }
        let op = Op::DelRoute {
            table_name: self.table_name(r.table),
            route: r.clone(),
        };
        if in_vrf && !replaced {
            self.leftover(Group::Withdraw, rank::ROUTE, op);
        } else {
            self.leftover(Group::Unwire, rank::ROUTE, op);
        }
    }
}

/// The routes of `routes` with the kernel key `key` (table, family,
/// destination, metric), in order: those the key leads their order.
pub(super) fn routes_with_key(
    routes: &BTreeSet<KernelRoute>,
    key: (u32, bool, Option<IpNet>, Option<u32>),
) -> impl Iterator<Item = &KernelRoute> {
    let (table, v6, dst, metric) = key;
    let from = KernelRoute {
        table,
        v6,
        dst,
        metric,
        dev: None,
        via: None,
        proto: 0,
        scope: 0,
        kind: RouteType::Unicast,
    };
    routes.range(from..).take_while(move |r| r.key() == key)
}
