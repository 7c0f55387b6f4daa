//! Neighbours and proxy NDP entries: desired ones the kernel lacks, and the
//! provider devices' entries that evidence shows are the agent's leftovers.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use obgp_netmodel::{Class, MacAddr, Neighbour, ProxyNeighbour};

use super::order::rank;
use super::Group;
use super::{flag_present, host_prefix, Planner};
use crate::op::Op;

impl Planner<'_> {
    pub(super) fn neighbours(&mut self) {
        let (desired, actual) = (self.desired, self.actual);
        let wanted = flag_present(&desired.neighbours, &actual.neighbours, |(w, _), h| {
            (*w).cmp(h)
        });
        for ((n, class), present) in wanted {
            if !present {
                self.neighbour_add(n, *class);
            }
        }
        let wanted = flag_present(
            &desired.proxy_neighbours,
            &actual.proxy_neighbours,
            |(w, _), h| (*w).cmp(h),
        );
        for ((p, class), present) in wanted {
            if present {
                continue;
            }
            if !self.will_exist(&p.dev) {
                self.skip(
                    format!("neighbour proxy {} dev {}", p.dst, p.dev),
                    "the device does not exist",
                );
                continue;
            }
            self.push(
                Self::wiring_group(*class),
                rank::PROXY,
                Some(*class),
                Op::AddProxyNeighbour(p.clone()),
            );
        }
    }

    /// Plans the desired neighbour `n` the kernel lacks; skipped while its
    /// device is missing.
    pub(super) fn neighbour_add(&mut self, n: &Neighbour, class: Class) {
        if !self.will_exist(&n.dev) {
            self.skip(
                format!("neighbour {} dev {}", n.dst, n.dev),
                "the device does not exist",
            );
            return;
        }
        self.push(
            Self::wiring_group(class),
            rank::NEIGHBOUR,
            Some(class),
            Op::ReplaceNeighbour(n.clone()),
        );
    }

    /// Neighbours and proxy NDP entries (docs/ownership.md): on a provider
    /// device, and evidenced as the agent's by a host rule or route into a
    /// bridge table, or by the previous desired state.
    pub(super) fn neighbour_leftovers(&mut self, owned_tables: &BTreeSet<u32>) {
        let (d, a) = (self.desired, self.actual);
        let provider = self.provider_devices();
        // Neighbours are keyed (dev, dst): the MAC does not make another one.
        let by_dev_dst = |x: &&Neighbour, y: &Neighbour| (&x.dev, x.dst).cmp(&(&y.dev, y.dst));
        let unwanted_neigh: Vec<&Neighbour> =
            flag_present(&a.neighbours, d.neighbours.keys(), by_dev_dst)
                .filter(|(n, wanted)| !wanted && provider.contains(&n.dev))
                .map(|(n, _)| n)
                .collect();
        let unwanted_proxy: Vec<&ProxyNeighbour> =
            flag_present(&a.proxy_neighbours, d.proxy_neighbours.keys(), |h, w| {
                (*h).cmp(w)
            })
            .filter(|(p, wanted)| !wanted && provider.contains(&p.dev))
            .map(|(p, _)| p)
            .collect();
        // Read only when something is unwanted: the host destinations of the
        // kernel's rules and routes in the bridge tables, sorted.
        let evidence: Vec<IpAddr> = if unwanted_neigh.is_empty() && unwanted_proxy.is_empty() {
            Vec::new()
        } else {
            let rules = a.rules.iter().filter(|k| owned_tables.contains(&k.table));
            let routes = a.routes.iter().filter(|r| owned_tables.contains(&r.table));
            let mut ips: Vec<IpAddr> = rules
                .filter_map(|k| k.dst)
                .chain(routes.filter_map(|r| r.dst))
                .filter(host_prefix)
                .map(|n| n.addr())
                .collect();
            ips.sort_unstable();
            ips.dedup();
            ips
        };
        let stale_neigh: Vec<Neighbour> = unwanted_neigh
            .into_iter()
            .filter(|n| self.neighbour_stale(n, |ip| evidence.binary_search(&ip).is_ok()))
            .cloned()
            .collect();
        for n in stale_neigh {
            self.neighbour_leftover(n);
        }
        let prev = self.previous;
        let in_prev_proxy =
            |p: &ProxyNeighbour| prev.is_some_and(|prev| prev.proxy_neighbours.contains_key(p));
        let stale_proxy: Vec<ProxyNeighbour> = unwanted_proxy
            .into_iter()
            .filter(|p| in_prev_proxy(p) || Self::slash64_has_any(&evidence, p.dst))
            .cloned()
            .collect();
        for p in stale_proxy {
            self.leftover(Group::Unwire, rank::PROXY, Op::DelProxyNeighbour(p));
        }
    }

    /// Deletes the kernel's neighbour `n` ([`Self::neighbour_stale`]).
    pub(super) fn neighbour_leftover(&mut self, n: Neighbour) {
        self.leftover(Group::Unwire, rank::NEIGHBOUR, Op::DelNeighbour(n));
    }

    /// Whether the kernel's neighbour `n`, on a provider device and wanted
    /// by no desired neighbour on its device and destination, is the
    /// agent's to delete: `evidence` says a host rule or route into a
    /// bridge table has its destination, or the previous desired state had
    /// a neighbour there.
    pub(super) fn neighbour_stale(&self, n: &Neighbour, evidence: impl Fn(IpAddr) -> bool) -> bool {
        evidence(n.dst)
            || self
                .previous
                .is_some_and(|p| has_neighbour_at(&p.neighbours, n))
    }

    /// Whether `ip` is in the /64 whose network address is `net_addr`.
    fn in_slash64(ip: IpAddr, net_addr: IpAddr) -> bool {
        match (ip, net_addr) {
            (IpAddr::V6(ip), IpAddr::V6(n)) => {
                let mask = !0u128 << 64;
                (u128::from(ip) & mask) == u128::from(n)
            }
            _ => false,
        }
    }

    /// Whether the ascending `ips` hold one in the /64 whose network address
    /// is `net_addr`. The addresses of a /64 that starts at its network
    /// address are contiguous in `ips`, from the first one not below it.
    fn slash64_has_any(ips: &[IpAddr], net_addr: IpAddr) -> bool {
        let from = ips.partition_point(|ip| *ip < net_addr);
        ips.get(from)
            .is_some_and(|ip| Self::in_slash64(*ip, net_addr))
    }
}

/// Whether `neighbours` has one on `n`'s device and destination, whatever
/// its MAC (neighbours are keyed by device and destination).
pub(super) fn has_neighbour_at<V>(neighbours: &BTreeMap<Neighbour, V>, n: &Neighbour) -> bool {
    let from = Neighbour {
        dev: n.dev.clone(),
        dst: n.dst,
        lladdr: MacAddr([0; 6]),
    };
    neighbours
        .range(from..)
        .next()
        .is_some_and(|(m, _)| m.dev == n.dev && m.dst == n.dst)
}
