//! Addresses: desired ones the kernel lacks, and the host addresses on the
//! announce device that are withdrawn.

use super::order::rank;
use super::Group;
use super::{host_prefix, Planner};
use crate::op::Op;
use obgp_netmodel::{Address, Class, DevName, IpNet};

/// Why a replaced announcement is not removed yet.
pub(super) const REPLACED_WAITS_FOR_FRR: &str =
    "replaced by a route or address announcing the same prefix; kept until FRR is known to hold the text that redistributes the new one";

impl<'a> Planner<'a> {
    fn is_announce_dev(&self, dev: &DevName) -> bool {
        self.desired.announce_dev.as_ref() == Some(dev)
    }

    /// Desired addresses the kernel lacks; and, in the same walk over both
    /// sorted sets (thousands on `bgp-nic`), the kernel's host addresses on
    /// the announce device that are not desired: withdrawn in
    /// [`Self::address_leftovers`].
    pub(super) fn addresses(&mut self) {
        let (desired, actual) = (self.desired, self.actual);
        let mut want = desired.addresses.iter().peekable();
        let mut have = actual.addresses.iter().peekable();
        let mut missing = Vec::new();
        loop {
            let order = match (want.peek(), have.peek()) {
                (None, None) => break,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some((w, _)), Some(h)) => (*w).cmp(h),
            };
            match order {
                std::cmp::Ordering::Less => missing.extend(want.next()),
                std::cmp::Ordering::Greater => {
                    let h = have.next().expect("peeked");
                    if self.address_withdrawn(h) {
                        self.unwanted_on_nic.push(h);
                    }
                }
                std::cmp::Ordering::Equal => {
                    want.next();
                    have.next();
                }
            }
        }
        for (a, class) in missing {
            self.address_add(a, *class);
        }
    }

    /// Plans the desired address `a` the kernel lacks: an announcement on
    /// the announce device, wiring elsewhere; skipped while its device is
    /// missing.
    pub(super) fn address_add(&mut self, a: &Address, class: Class) {
        if !self.will_exist(&a.dev) {
            self.skip(
                format!("address {} dev {}", a.net, a.dev),
                "the device does not exist",
            );
            return;
        }
        let group = if self.is_announce_dev(&a.dev) {
            Group::Announce
        } else {
            Self::wiring_group(class)
        };
        self.push(group, rank::ADDRESS, Some(class), Op::AddAddress(a.clone()));
    }

    /// Whether the kernel's address `h`, which nothing wants, is withdrawn:
    /// a host address on the announce device (the agent's announcements).
    pub(super) fn address_withdrawn(&self, h: &Address) -> bool {
        self.is_announce_dev(&h.dev) && host_prefix(&h.net)
    }

    /// Withdrawals: the announce device's host addresses found by
    /// [`Self::addresses`].
    pub(super) fn address_leftovers(&mut self) {
        for ad in std::mem::take(&mut self.unwanted_on_nic) {
            self.address_leftover(ad);
        }
    }

    /// Withdraws `ad` (see [`Self::address_withdrawn`]). One whose prefix
    /// a desired announcement route announces (`announce_with = route`) is
    /// not withdrawn but replaced: it goes with the cleanup, after the
    /// route is in (O1 and O4 already put every add first), is no
    /// withdrawal to the mass-withdrawal guard, and waits until FRR is
    /// known to redistribute the route.
    pub(super) fn address_leftover(&mut self, ad: &Address) {
        if !self.announced_by_route(&ad.net) {
            self.leftover(Group::Withdraw, rank::ADDRESS, Op::DelAddress(ad.clone()));
        } else if self.frr_redistributes_as_desired() {
            self.leftover(Group::Unwire, rank::ADDRESS, Op::DelAddress(ad.clone()));
        } else {
            self.skip(
                format!("address {} dev {}", ad.net, ad.dev),
                REPLACED_WAITS_FOR_FRR,
            );
        }
    }

    /// Whether FRR is known to hold the desired text, and so to
    /// redistribute what replaces an announcement (kernel routes for
    /// `announce_with = route`, connected ones for `address`). Until then a
    /// replaced announcement stays: FRR texts go through the command lane,
    /// which this plan does not wait for. Without a desired text the agent
    /// does not manage FRR's redistribution: nothing to wait for.
    pub(super) fn frr_redistributes_as_desired(&self) -> bool {
        self.desired.frr_config.is_none()
            || (!self.actual.frr.unknown && self.actual.frr.has_our_config)
    }

    /// Whether a desired announcement route (`announce_with = route`)
    /// announces `net`: a leftover address for it is replaced, not
    /// withdrawn.
    fn announced_by_route(&self, net: &IpNet) -> bool {
        let Some(dev) = &self.desired.announce_dev else {
            return false;
        };
        let route = obgp_netmodel::Route::announcement(*net, self.desired.vrf_table, dev);
        self.desired.routes.contains_key(&route)
    }

    /// Whether `net` is announced by a desired host address on the
    /// announce device (a leftover VRF-table route for it is replaced,
    /// not withdrawn).
    pub(super) fn announced_by_address(&self, net: &IpNet) -> bool {
        self.desired.announce_dev.as_ref().is_some_and(|dev| {
            self.desired.addresses.contains_key(&Address {
                dev: dev.clone(),
                net: *net,
            })
        })
    }
}
