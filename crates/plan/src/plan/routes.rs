//! Routes: desired routes the kernel lacks (never over one of FRR's), and
//! the kernel's routes in the VRF and bridge tables that nothing wants.

use std::collections::BTreeSet;

use obgp_netmodel::{Class, RouteType};

use super::order::{rank, Group};
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
            if present {
                continue;
            }
            let (want, class) = (want.clone(), *class);
            let same_key = self.actual.routes.iter().find(|a| a.key() == want.key());
            if same_key.is_some_and(|a| a.proto == obgp_netmodel::proto::FRR) {
                self.skip(
                    format!("route {}", crate::op::route_text(&want)),
                    "a route with this destination is FRR's (proto 186), never touched",
                );
                continue;
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
                    continue;
                }
            }
            let group = if want.table == self.desired.vrf_table || evpn_tables.contains(&want.table)
            {
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
        self.want_routes = want_routes;
    }

    /// Withdrawals (VRF-table routes) and unwiring (bridge-table routes):
    /// the kernel's routes in ascending key order, against the desired keys
    /// in the same order (sorted here only if the desired order differs).
    pub(super) fn route_leftovers(&mut self, owned_tables: &BTreeSet<u32>) {
        let (d, a) = (self.desired, self.actual);
        let mut want_keys: Vec<_> = self.want_routes.iter().map(|(r, _)| r.key()).collect();
        if !want_keys.is_sorted() {
            want_keys.sort_unstable();
        }
        let evpn_tables = self.evpn_tables();
        let routes = flag_present(&a.routes, &want_keys, |h, w| h.key().cmp(w));
        for (r, wanted) in routes {
            if Actual::route_is_foreign(r) || wanted {
                continue;
            }
            let in_vrf = r.table == d.vrf_table || evpn_tables.contains(&r.table);
            let in_bridge = owned_tables.contains(&r.table) && r.dst.is_some();
            if !(in_vrf || in_bridge) || r.kind == RouteType::Local {
                continue;
            }
            let op = Op::DelRoute {
                table_name: self.table_name(r.table),
                route: r.clone(),
            };
            // A host route whose prefix a desired address announces
            // instead (`announce_with` switched back to address) is
            // replaced, not withdrawn: see `address_leftovers`.
            let replaced =
                r.table == d.vrf_table && r.dst.is_some_and(|dst| self.announced_by_address(&dst));
            if replaced && !self.frr_redistributes_as_desired() {
                self.skip(
                    format!("route {} table {}", crate::op::route_text(r), r.table),
                    super::addresses::REPLACED_WAITS_FOR_FRR,
                );
                continue;
            }
            if in_vrf && !replaced {
                self.leftover(Group::Withdraw, rank::ROUTE, op);
            } else {
                self.leftover(Group::Unwire, rank::ROUTE, op);
            }
        }
    }
}
