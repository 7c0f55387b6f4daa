//! The desired state kept between reconciles and patched when only ports
//! changed.
//!
//! Most OVN changes an agent sees are one VM port: it comes up, goes down,
//! moves to another chassis, is deleted. Recomputing everything for each of
//! them costs O(what is local), ~7k exposures at 50k ports. [`DesiredCache`]
//! keeps the last result with the snapshot it came from and, when the
//! changes the caller accumulated since then say only ports changed
//! ([`NbChanges::Ports`], as the live snapshot returned them), removes the
//! changed ports' old exposures and adds their new ones.
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
//! The node objects ([`DesiredNode`]) are patched the same way: the changed
//! exposures' address, rule, route and neighbour are unique to their IP
//! (checked: no base or tenant-subnet object has the same key), and the
//! proxy NDP entries, which exposures share, are recomputed from the
//! exposures when a changed one has any. The cache also keeps the node
//! objects of the last result the caller *settled* (the planner's
//! "previous desired state"), brought forward by replaying the same
//! patches, so that no reconcile copies the whole node.
//!
//! Tests compare every patched result with a full computation.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::net::IpAddr;

use obgp_config::{Config, Driver, ExposingMethod};
use obgp_netmodel::{Class, DesiredNode, NodeChanges, ProxyNeighbour};
use obgp_ovn::{LogicalSwitchPort, NbChanges, PortChange, Snapshot};

use crate::nb_underlay::{NbUnderlay, PortExposures, Reads};
use crate::{chassis_hostname, compute, Desired, DesiredError, ExposedIp, NodeFacts};

/// Every exposed IP, as a persistent set: a copy costs a reference count,
/// so the event filters can hold the last one while the cache patches its
/// own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExposedIps(imbl::OrdSet<IpAddr>);

impl ExposedIps {
    pub fn contains(&self, ip: &IpAddr) -> bool {
        self.0.contains(ip)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<IpAddr> for ExposedIps {
    fn from_iter<I: IntoIterator<Item = IpAddr>>(iter: I) -> Self {
        ExposedIps(iter.into_iter().collect())
    }
}

/// How [`DesiredCache::compute`] got its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Computed {
    /// From every row.
    Full,
    /// The previous result with the exposures of `ports` changed ports redone
    /// (0: nothing the driver reads changed).
    Patched { ports: usize },
}

/// One patch of the node objects: objects set (`Some(class)`) or removed
/// (`None`), in order; the proxy NDP entries replaced whole when touched.
#[derive(Debug, Default)]
struct NodeDelta {
    addresses: Vec<(obgp_netmodel::Address, Option<Class>)>,
    rules: Vec<(obgp_netmodel::Rule, Option<Class>)>,
    routes: Vec<(obgp_netmodel::Route, Option<Class>)>,
    neighbours: Vec<(obgp_netmodel::Neighbour, Option<Class>)>,
    proxy_neighbours: Option<BTreeMap<ProxyNeighbour, Class>>,
}

fn set<K: Ord + Clone>(map: &mut BTreeMap<K, Class>, changes: &[(K, Option<Class>)]) {
    for (k, class) in changes {
        match class {
            Some(c) => {
                map.insert(k.clone(), *c);
            }
            None => {
                map.remove(k);
            }
        }
    }
}

impl NodeDelta {
    fn apply(&self, node: &mut DesiredNode) {
        set(&mut node.addresses, &self.addresses);
        set(&mut node.rules, &self.rules);
        set(&mut node.routes, &self.routes);
        set(&mut node.neighbours, &self.neighbours);
        if let Some(p) = &self.proxy_neighbours {
            node.proxy_neighbours = p.clone();
        }
    }

    /// Adds the keys this patch set or removed to `changes`.
    fn list_keys(&self, changes: &mut NodeChanges) {
        fn keys<K: Ord + Clone>(to: &mut BTreeSet<K>, from: &[(K, Option<Class>)]) {
            to.extend(from.iter().map(|(k, _)| k.clone()));
        }
        keys(&mut changes.addresses, &self.addresses);
        keys(&mut changes.rules, &self.rules);
        keys(&mut changes.routes, &self.routes);
        keys(&mut changes.neighbours, &self.neighbours);
        changes.proxy_neighbours |= self.proxy_neighbours.is_some();
    }
}

/// What the settled node objects lack to be the current ones.
#[derive(Debug)]
enum Pending {
    /// Nothing: they are the current ones.
    Nothing,
    /// These patches, in order.
    Deltas(Vec<NodeDelta>),
    /// Everything: a full computation happened since.
    Full,
}

/// The last desired state, its node objects, the snapshot and inputs it
/// came from, and what computing it read.
struct Last {
    snap: Snapshot,
    config: Config,
    facts: NodeFacts,
    desired: Desired,
    /// The keys of `desired.exposed` (and of `dynamic`'s EVPN decisions).
    exposed_ips: ExposedIps,
    node: DesiredNode,
    /// The node objects of the base wiring and tenant subnets alone: keys
    /// an exposure's objects must not share to be patched.
    fixed: DesiredNode,
    /// `None` for the SB driver (never patched).
    reads: Option<Reads>,
    settled: Option<DesiredNode>,
    pending: Pending,
}

/// Computes the desired state like [`crate::desired_state`] and its node
/// objects like [`Desired::to_node`], reusing the previous results when
/// only ports changed (see the module doc).
#[derive(Default)]
pub struct DesiredCache {
    last: Option<Last>,
}

impl DesiredCache {
    /// Brings the desired state and node objects to `snap`; read them with
    /// [`DesiredCache::desired`] and [`DesiredCache::node`]. `changes`:
    /// what changed since the snapshot of the last computation, as the
    /// caller accumulated it ([`NbChanges::Full`] when not known). They are
    /// consumed when the computation succeeds (left as "nothing since
    /// `snap`", to accumulate on), and left as they were when it fails.
    pub fn compute(
        &mut self,
        snap: &Snapshot,
        changes: &mut NbChanges,
        config: &Config,
        facts: &NodeFacts,
    ) -> Result<Computed, DesiredError> {
        let computed = self.bring_to(snap, changes, config, facts)?;
        *changes = NbChanges::none_since(snap);
        Ok(computed)
    }

    fn bring_to(
        &mut self,
        snap: &Snapshot,
        changes: &NbChanges,
        config: &Config,
        facts: &NodeFacts,
    ) -> Result<Computed, DesiredError> {
        if let Some(last) = &mut self.last {
            if let Some(ports) = patch(last, snap, changes, config, facts) {
                return Ok(Computed::Patched { ports });
            }
        }
        let settled = self.last.take().and_then(|l| l.settled);
        let (mut desired, reads) = compute(snap, config, facts)?;
        let node = desired.to_node();
        let exposed = std::mem::take(&mut desired.exposed);
        let fixed = desired.to_node();
        desired.exposed = exposed;
        // Every decision of the NB driver: under `dynamic` those handed to
        // the EVPN methods too (the event filters ask whether an IP is
        // exposed, whichever method carries it).
        let evpn_decisions = desired.dynamic.iter().flat_map(|d| d.evpn_exposed.keys());
        let exposed_ips = desired
            .exposed
            .keys()
            .chain(evpn_decisions)
            .copied()
            .collect();
        self.last = Some(Last {
            snap: snap.clone(),
            config: config.clone(),
            facts: facts.clone(),
            desired,
            exposed_ips,
            node,
            fixed,
            reads,
            settled,
            pending: Pending::Full,
        });
        Ok(Computed::Full)
    }

    /// The last result, if any.
    pub fn desired(&self) -> Option<&Desired> {
        self.last.as_ref().map(|l| &l.desired)
    }

    /// The IPs the last result exposes (a cheap copy).
    pub fn exposed_ips(&self) -> ExposedIps {
        self.last
            .as_ref()
            .map(|l| l.exposed_ips.clone())
            .unwrap_or_default()
    }

    /// The node objects of the last result (`to_node` of it).
    pub fn node(&self) -> Option<&DesiredNode> {
        self.last.as_ref().map(|l| &l.node)
    }

    /// The last result and its node objects, taken out of the cache.
    pub fn into_result(self) -> Option<(Desired, DesiredNode)> {
        self.last.map(|l| (l.desired, l.node))
    }

    /// The node objects of the last settled result: what the previous
    /// reconcile planned with.
    pub fn settled(&self) -> Option<&DesiredNode> {
        self.last.as_ref().and_then(|l| l.settled.as_ref())
    }

    /// The node objects in which the last result differs from the settled
    /// ones, by key (those the patches since the last [`settle`] set or
    /// removed), so that a planner can judge only them. `None` when that is
    /// not known: nothing settled yet, or a full computation (or a rebuild
    /// of the node objects) since.
    ///
    /// [`settle`]: DesiredCache::settle
    pub fn changes(&self) -> Option<NodeChanges> {
        let last = self.last.as_ref()?;
        last.settled.as_ref()?;
        match &last.pending {
            Pending::Nothing => Some(NodeChanges::default()),
            Pending::Deltas(deltas) => {
                let mut changes = NodeChanges::default();
                for d in deltas {
                    d.list_keys(&mut changes);
                }
                Some(changes)
            }
            Pending::Full => None,
        }
    }

    /// Marks the last result as the one a reconcile planned with: it
    /// becomes [`DesiredCache::settled`].
    pub fn settle(&mut self) {
        let Some(last) = &mut self.last else { return };
        match std::mem::replace(&mut last.pending, Pending::Nothing) {
            Pending::Nothing => {}
            Pending::Deltas(deltas) => {
                let settled = last
                    .settled
                    .as_mut()
                    .expect("patches apply to a settled node");
                for d in &deltas {
                    d.apply(settled);
                }
            }
            Pending::Full => last.settled = Some(last.node.clone()),
        }
    }

    /// The next computation is a full one (the settled node objects stay).
    pub fn clear(&mut self) {
        if let Some(last) = &mut self.last {
            // Without what the last run read, `patch` declines.
            last.reads = None;
        }
    }
}

/// A full computation to compare with the cached (patched) result, off the
/// caller's thread: a safety net for the patching, run at periodic
/// reconciles without making them as slow as a full computation. It holds
/// a fingerprint of the cached result, not a copy: copying ~7k exposures
/// (and their shared `Arc`s) for a thread that then drops them slowed the
/// reconcile loop measurably.
pub struct DesiredCheck {
    snap: Snapshot,
    config: Config,
    facts: NodeFacts,
    fingerprint: u64,
}

/// A 64-bit digest of a desired state (equal states, equal digests).
fn fingerprint(d: &Desired) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    d.hash(&mut h);
    h.finish()
}

impl DesiredCheck {
    /// Whether a full computation gives the cached result (`None` when it
    /// could not be computed: the cache could not have been either). A
    /// digest collision would pass a wrong result with probability 2^-64.
    pub fn agrees(&self) -> Option<bool> {
        let (full, _) = compute(&self.snap, &self.config, &self.facts).ok()?;
        Some(fingerprint(&full) == self.fingerprint)
    }
}

impl DesiredCache {
    /// A check of the last result against a full computation; `None`
    /// before the first computation.
    pub fn check(&self) -> Option<DesiredCheck> {
        let last = self.last.as_ref()?;
        Some(DesiredCheck {
            snap: last.snap.clone(),
            config: last.config.clone(),
            facts: last.facts.clone(),
            fingerprint: fingerprint(&last.desired),
        })
    }
}

/// Patches `last` to `snap` with `changes` and returns how many ports
/// changed, or `None` (leaving `last` as it was) when only a full
/// computation is right.
fn patch(
    last: &mut Last,
    snap: &Snapshot,
    changes: &NbChanges,
    config: &Config,
    facts: &NodeFacts,
) -> Option<usize> {
    let d = &config.default;
    if d.driver != Driver::NbOvnBgpDriver
        || d.exposing_method != ExposingMethod::Underlay
        || last.config != *config
        || last.facts != *facts
    {
        return None;
    }
    let reads = last.reads.as_ref()?;
    let changes = changes.ports_between(&last.snap, snap)?;
    // Equal OVS views (only ports changed), equal facts: the same chassis
    // in both snapshots.
    let hostname = chassis_hostname(snap, facts)?;

    let mut removed: Vec<ExposedIp> = Vec::new();
    let mut added: Vec<ExposedIp> = Vec::new();
    let mut contested: Vec<IpAddr> = Vec::new();
    for PortChange { uuid, old, new } in changes.iter() {
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
            if !mine.mac_tweak_in_base || mine.noted {
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

    let delta = node_delta(last, &removed, &added);
    for e in &removed {
        last.desired.exposed.remove(&e.ip);
        last.exposed_ips.0.remove(&e.ip);
    }
    for e in added {
        last.exposed_ips.0.insert(e.ip);
        last.desired.exposed.insert(e.ip, e);
    }
    if let Some(reads) = &mut last.reads {
        reads.contested.extend(contested);
    }
    match delta {
        Some(mut delta) => {
            if delta.proxy_neighbours.is_some() {
                delta.proxy_neighbours = Some(proxy_neighbours(&last.desired));
            }
            delta.apply(&mut last.node);
            match &mut last.pending {
                Pending::Deltas(ds) => ds.push(delta),
                Pending::Nothing if last.settled.is_some() => {
                    last.pending = Pending::Deltas(vec![delta])
                }
                p => *p = Pending::Full,
            }
        }
        None => {
            last.node = last.desired.to_node();
            last.pending = Pending::Full;
        }
    }
    last.snap = snap.clone();
    Some(changes.len())
}

/// The node-object patch for exposures `removed` then `added` (IPs already
/// checked unique), or `None` when one of their objects shares its key with
/// another object (then the objects are rebuilt from the desired state).
/// A touched proxy NDP entry is marked with an empty replacement map.
fn node_delta(last: &Last, removed: &[ExposedIp], added: &[ExposedIp]) -> Option<NodeDelta> {
    let (node, fixed) = (&last.node, &last.fixed);
    let mut delta = NodeDelta::default();
    let mut proxies = false;
    for (e, class) in removed
        .iter()
        .map(|e| (e, None))
        .chain(added.iter().map(|e| (e, Some(e.class))))
    {
        let o = last.desired.exposure_objects(e);
        proxies |= !o.proxy_neighbours.is_empty();
        let ok = push_checked(
            &mut delta.addresses,
            &node.addresses,
            &fixed.addresses,
            o.address,
            e.class,
            class,
        ) && push_checked(
            &mut delta.rules,
            &node.rules,
            &fixed.rules,
            o.rule,
            e.class,
            class,
        ) && [o.announce_route, o.route].into_iter().all(|route| {
            push_checked(
                &mut delta.routes,
                &node.routes,
                &fixed.routes,
                route,
                e.class,
                class,
            )
        }) && push_checked(
            &mut delta.neighbours,
            &node.neighbours,
            &fixed.neighbours,
            o.neighbour,
            e.class,
            class,
        );
        if !ok {
            return None;
        }
    }
    if proxies {
        delta.proxy_neighbours = Some(BTreeMap::new());
    }
    Some(delta)
}

/// Adds to `changes` the removal (`set: None`) or addition (`set:
/// Some(class)`) of `key`, an object of one exposure whose class is `own`,
/// if that is a patch of `held` (the node's objects of that kind): a removed
/// object must be held with the exposure's class, an added one by nothing
/// else (unless this patch removed it); neither may be a base or
/// tenant-subnet object (`fixed`). `false` when it is not.
fn push_checked<K: Ord + Clone>(
    changes: &mut Vec<(K, Option<Class>)>,
    held: &BTreeMap<K, Class>,
    fixed: &BTreeMap<K, Class>,
    key: Option<K>,
    own: Class,
    set: Option<Class>,
) -> bool {
    let Some(key) = key else { return true };
    let removed_here = || changes.iter().any(|(k, c)| k == &key && c.is_none());
    let ok = !fixed.contains_key(&key)
        && match set {
            None => held.get(&key) == Some(&own),
            Some(_) => !held.contains_key(&key) || removed_here(),
        };
    if ok {
        changes.push((key, set));
    }
    ok
}

/// The proxy NDP entries of all exposures, with the class of the first (by
/// IP) asking for each, as [`Desired::to_node`] gives them.
fn proxy_neighbours(d: &Desired) -> BTreeMap<ProxyNeighbour, Class> {
    let mut map = BTreeMap::new();
    for e in d.exposed.values() {
        if e.wiring.as_ref().is_some_and(|w| !w.proxy_ndp.is_empty()) {
            for p in d.exposure_objects(e).proxy_neighbours {
                map.entry(p).or_insert(e.class);
            }
        }
    }
    map
}

/// Whether an exposure other than the port's own may depend on `port`.
fn depends_on(reads: &Reads, port: &LogicalSwitchPort) -> bool {
    reads.lsp_names.contains(port.name.as_str())
        || port
            .network
            .as_ref()
            .is_some_and(|n| reads.networks.contains(n.as_str()))
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
        announce_with: like.announce_with,
        bridges: Vec::new(),
        exposed: Default::default(),
        tenant_subnets: Vec::new(),
        vrf_routes: Default::default(),
        frr_config: None,
        notes: Vec::new(),
        evpn: None,
        local_cluster: None,
        dynamic: None,
    };
    NbUnderlay::new(snap, config, base, crate::Trace::default()).port_exposures(port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_disagrees_exactly_when_the_cached_result_is_not_the_full_one() {
        let mut config = Config::default();
        config.default.driver = Driver::NbOvnBgpDriver;
        config.default.exposing_method = ExposingMethod::Underlay;
        config.default.bgp_router_id = Some("192.0.2.1".into());
        let facts = NodeFacts::default();
        let mut cache = DesiredCache::default();
        assert!(cache.check().is_none());
        cache
            .compute(&Snapshot::default(), &mut NbChanges::Full, &config, &facts)
            .expect("supported");
        let check = cache.check().expect("computed");
        assert_eq!(check.agrees(), Some(true));
        let mut wrong = check;
        let mut other = cache.desired().expect("computed").clone();
        other.notes.push("a patch gone wrong".into());
        wrong.fingerprint = fingerprint(&other);
        assert_eq!(wrong.agrees(), Some(false));
    }
}
