//! The desired state kept between reconciles and patched when only ports
//! changed.
//!
//! Most OVN changes an agent sees are one VM port: it comes up, goes down,
//! moves to another chassis, is deleted. Recomputing everything for each of
//! them costs O(what is local), ~7k exposures at 50k ports. [`DesiredCache`]
//! keeps the last result with the snapshot it came from and, when the
//! snapshot says only ports changed ([`Snapshot::port_changes_since`]),
//! removes the changed ports' old exposures and adds their new ones.
//!
//! The patch is taken only when it provably equals a full computation, and
//! the full computation is the fallback for everything else:
//! - the NB driver, same configuration and node facts;
//! - no other exposure depends on a changed port: the full run records the
//!   port names it looked up (FIP logical ports, LB VIP ports) and the tenant
//!   networks whose ports it read; a changed port named there, or on such a
//!   network (before or after the change), means a full run;
//! - order does not matter: none of the IPs involved is exposed twice (the
//!   full run records those: which exposure wins depends on pass order), and
//!   a new IP is not already exposed by another row;
//! - asking for the provider's MAC-tweak flow changes nothing, because the
//!   bridge's base wiring lists the patch port anyway.
//!
//! Tests compare every patched result with a full computation.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Arc;

use obgp_config::{Config, Driver, ExposingMethod};
use obgp_ovn::{LogicalSwitchPort, PortChange, Snapshot};

use crate::nb_underlay::{NbUnderlay, PortExposures, Reads};
use crate::{chassis_hostname, compute, Desired, DesiredError, ExposedIp, NodeFacts};

/// How [`DesiredCache::compute`] got its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Computed {
    /// From every row.
    Full,
    /// The previous result with the exposures of `ports` changed ports redone
    /// (0: nothing the driver reads changed).
    Patched { ports: usize },
}

/// The last desired state, the snapshot and inputs it came from, and what
/// computing it read.
struct Last {
    snap: Snapshot,
    config: Config,
    facts: NodeFacts,
    desired: Arc<Desired>,
    /// `None` for the SB driver (never patched).
    reads: Option<Reads>,
}

/// Computes the desired state like [`crate::desired_state`], reusing the
/// previous result when only ports changed (see the module doc).
#[derive(Default)]
pub struct DesiredCache {
    last: Option<Last>,
}

impl DesiredCache {
    /// The desired state for `snap`. The result is shared with the cache:
    /// drop it before the next call, or that call copies it to patch it.
    pub fn compute(
        &mut self,
        snap: &Snapshot,
        config: &Config,
        facts: &NodeFacts,
    ) -> Result<(Arc<Desired>, Computed), DesiredError> {
        if let Some(last) = &mut self.last {
            if let Some(ports) = patch(last, snap, config, facts) {
                return Ok((last.desired.clone(), Computed::Patched { ports }));
            }
        }
        self.last = None;
        let (desired, reads) = compute(snap, config, facts)?;
        let desired = Arc::new(desired);
        self.last = Some(Last {
            snap: snap.clone(),
            config: config.clone(),
            facts: facts.clone(),
            desired: desired.clone(),
            reads,
        });
        Ok((desired, Computed::Full))
    }

    /// The last result, if any.
    pub fn last(&self) -> Option<&Desired> {
        self.last.as_ref().map(|l| &*l.desired)
    }

    /// Forgets the last result: the next computation is a full one.
    pub fn clear(&mut self) {
        self.last = None;
    }
}

/// Patches `last` to `snap` and returns how many ports changed, or `None`
/// (leaving `last` as it was) when only a full computation is right.
fn patch(last: &mut Last, snap: &Snapshot, config: &Config, facts: &NodeFacts) -> Option<usize> {
    let d = &config.default;
    if d.driver != Driver::NbOvnBgpDriver
        || d.exposing_method != ExposingMethod::Underlay
        || last.config != *config
        || last.facts != *facts
    {
        return None;
    }
    let reads = last.reads.as_ref()?;
    let changes = snap.port_changes_since(&last.snap)?;
    // Equal OVS views (checked by `port_changes_since`), equal facts: the
    // same chassis in both snapshots.
    let hostname = chassis_hostname(snap, facts)?;

    let mut removed: Vec<ExposedIp> = Vec::new();
    let mut added: Vec<ExposedIp> = Vec::new();
    let mut contested: Vec<IpAddr> = Vec::new();
    for PortChange { uuid, old, new } in &changes {
        for port in [old, new].into_iter().flatten() {
            if depends_on(reads, port) {
                return None;
            }
        }
        for (port, in_snap, out) in [(old, &last.snap, &mut removed), (new, snap, &mut added)] {
            let Some(port) = port else { continue };
            if !in_snap.is_active_vif_on(hostname, *uuid) {
                continue;
            }
            let mine = exposures_of(&last.desired, in_snap, config, port);
            if !mine.mac_tweak_in_base {
                return None;
            }
            out.extend(mine.exposed);
            contested.extend(mine.contested);
        }
    }

    // Check everything before changing anything.
    let current = &last.desired.exposed;
    let mut gone: HashSet<IpAddr> = HashSet::with_capacity(removed.len());
    for e in &removed {
        if reads.contested.contains(&e.ip) || current.get(&e.ip) != Some(e) || !gone.insert(e.ip) {
            return None;
        }
    }
    let mut new_ips: HashSet<IpAddr> = HashSet::with_capacity(added.len());
    for e in &added {
        let taken = current.contains_key(&e.ip) && !gone.contains(&e.ip);
        if taken || !new_ips.insert(e.ip) {
            return None;
        }
    }

    let desired = Arc::make_mut(&mut last.desired);
    for e in &removed {
        desired.exposed.remove(&e.ip);
    }
    for e in added {
        desired.exposed.insert(e.ip, e);
    }
    if let Some(reads) = &mut last.reads {
        reads.contested.extend(contested);
    }
    last.snap = snap.clone();
    Some(changes.len())
}

/// Whether an exposure other than the port's own may depend on `port`.
fn depends_on(reads: &Reads, port: &LogicalSwitchPort) -> bool {
    reads.lsp_names.contains(&port.name)
        || port
            .network
            .as_ref()
            .is_some_and(|n| reads.networks.contains(n))
}

/// What `port` alone exposes when bound here, computed on `snap`.
fn exposures_of(
    like: &Desired,
    snap: &Snapshot,
    config: &Config,
    port: &LogicalSwitchPort,
) -> PortExposures {
    let base = Desired {
        vrf: like.vrf.clone(),
        vrf_table: like.vrf_table,
        bgp_nic: like.bgp_nic.clone(),
        bridges: Vec::new(),
        exposed: Default::default(),
        tenant_subnets: Vec::new(),
        frr_config: None,
        notes: Vec::new(),
    };
    NbUnderlay::new(snap, config, base).port_exposures(port)
}
