//! [`LiveSnapshot`]: the indexed OVN snapshot, kept up to date row by row.
//!
//! A reconcile after a one-row change should cost O(that row), not
//! O(database). So instead of re-parsing every row on every reconcile, the
//! live snapshot keeps the parsed rows and every index in persistent maps and,
//! for each changed row, removes what the old version contributed and adds
//! what the new one does. [`LiveSnapshot::snapshot`] then hands out a
//! [`Snapshot`] sharing those maps (a few reference counts).
//!
//! Two kinds of state depend on more than one row, and are recomputed per
//! *owner* row after each batch, once, whatever the batch held:
//! - a switch's localnet ports and its dangling `ports` references (depend on
//!   the LSPs it lists),
//! - a router's dangling `nat` references (depend on the NAT rows),
//! - a NAT's usable `gateway_port` (depends on the LRP it names).
//!
//! Reverse references (port → switches listing it, NAT → routers, LRP →
//! NATs) say which owners a changed row touches. Applying a row is
//! idempotent: the live snapshot only ever looks at a row's current content,
//! so applying the same row twice, or a row the snapshot already has, changes
//! nothing. Its result always equals [`Snapshot::build`] over the same rows
//! (tests/live_equals_build.rs checks this on random histories).
//!
//! OVN_Southbound rows are patched the same way (`live_sb.rs`,
//! [`LiveSnapshot::apply_sb`]). Open_vSwitch is rebuilt whole on any change
//! ([`LiveSnapshot::reset_ovs`]): the local OVS database is a handful of rows.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use obgp_ovsdb_data::{Row, Uuid};

use crate::hash::FastHash;
use crate::live_sb::SbLive;
use crate::nb::{
    LoadBalancer, LogicalRouter, LogicalRouterPort, LogicalSwitch, LogicalSwitchPort, LspType, Nat,
    NatType, NbGlobal, RowError,
};
use crate::neutron::ROUTER_INTERFACE_OWNER;
use crate::ovs::LocalOvs;
use crate::snapshot::{Index, NbIndex, NbJournal, RowSource, Snapshot, JOURNAL_LEN};

/// The NB tables the snapshot reads; rows of other tables are ignored.
pub const NB_TABLES: [&str; 7] = [
    LogicalSwitchPort::TABLE,
    LogicalSwitch::TABLE,
    LogicalRouter::TABLE,
    LogicalRouterPort::TABLE,
    Nat::TABLE,
    LoadBalancer::TABLE,
    NbGlobal::TABLE,
];

/// Where a row's warnings sort among all NB warnings: parse errors table by
/// table, then dangling references, each group by row uuid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum WarningGroup {
    LspRow,
    SwitchRow,
    RouterRow,
    LrpRow,
    NatRow,
    LbRow,
    SwitchRefs,
    RouterRefs,
    NatRefs,
}

/// Owners whose cross-row state a batch may have changed.
#[derive(Default)]
struct Dirty {
    /// Switches to re-derive, each with the ports whose standing in it
    /// (listed or not, localnet or not, row present or not) may have changed.
    switches: BTreeMap<Uuid, Vec<Uuid>>,
    routers: BTreeSet<Uuid>,
    nats: BTreeSet<Uuid>,
}

/// Uuids pointing at a row, by the row's uuid.
pub(crate) type Referrers = HashMap<Uuid, BTreeSet<Uuid>, FastHash>;

/// The maintained snapshot. Feed it NB row changes with
/// [`LiveSnapshot::apply_nb`], SB row changes with
/// [`LiveSnapshot::apply_sb`], the whole OVS database with
/// [`LiveSnapshot::reset_ovs`]; start over with `reset_*`; take snapshots
/// with [`LiveSnapshot::snapshot`].
#[derive(Debug, Default)]
pub struct LiveSnapshot {
    nb: NbIndex,
    nb_globals: BTreeMap<Uuid, NbGlobal>,
    /// NATs as parsed, before the `gateway_port` check.
    nats_parsed: HashMap<Uuid, Nat, FastHash>,
    switches_of_port: Referrers,
    /// Per switch, the ports it lists that are localnets or name no row:
    /// the only ports [`LiveSnapshot::derive_switch`] reports. Kept port by
    /// port, so that a one-port change of a 5k-port switch looks up that
    /// port, not all 5k. Switches without any are absent.
    notable_ports: HashMap<Uuid, HashSet<Uuid, FastHash>, FastHash>,
    routers_of_nat: Referrers,
    nats_of_gateway: Referrers,
    /// Every NB row's current warnings (rows without any are absent).
    nb_warnings: BTreeMap<(WarningGroup, Uuid), Vec<RowError>>,
    ovs: LocalOvs,
    ovs_warnings: Vec<RowError>,
    sb: SbLive,
    /// All warnings in [`Snapshot::warnings`] order, refreshed after each
    /// call that changed any.
    warnings: Arc<[RowError]>,
    journal: NbJournal,
}

/// Tells the lineages of journals apart (0 is "unknown").
static LINEAGES: AtomicU64 = AtomicU64::new(1);

/// Adds row `uuid` (stored as `row`) to the entry `key`, replacing the row
/// stored there before, or removes it from the entry.
pub(crate) fn edit<K: Hash + Eq + Clone, T>(
    ix: &mut Index<K, T>,
    key: K,
    uuid: Uuid,
    row: &Arc<T>,
    add: bool,
) {
    if add {
        ix.entry(key).or_default().insert(uuid, row.clone());
    } else if let Some(set) = ix.get_mut(&key) {
        set.remove(uuid);
        if set.is_empty() {
            ix.remove(&key);
        }
    }
}

pub(crate) fn refer(map: &mut Referrers, target: Uuid, from: Uuid, add: bool) {
    if add {
        map.entry(target).or_default().insert(from);
    } else if let Some(set) = map.get_mut(&target) {
        set.remove(&from);
        if set.is_empty() {
            map.remove(&target);
        }
    }
}

/// Updates `map` from the references `old` to those `new` of row `from`,
/// touching only the difference (a switch lists thousands of ports), and
/// returns that difference: the uuids `from` started or stopped naming.
fn rerefer(map: &mut Referrers, from: Uuid, old: &[Uuid], new: &[Uuid]) -> Vec<Uuid> {
    if old == new {
        return Vec::new();
    }
    let (gone, added) = set_difference(old, new);
    for u in &gone {
        refer(map, *u, from, false);
    }
    for u in &added {
        refer(map, *u, from, true);
    }
    let mut changed = gone;
    changed.extend(added);
    changed
}

/// What `old` has that `new` lacks, and the reverse, each without
/// duplicates. OVSDB sets arrive sorted, so the common case is one merge
/// pass with no hashing: hashing both sides of a large switch's `ports`
/// dominated an LSP insert (docs/adr/0001-incremental-snapshot.md).
fn set_difference(old: &[Uuid], new: &[Uuid]) -> (Vec<Uuid>, Vec<Uuid>) {
    let strictly_sorted = |v: &[Uuid]| v.windows(2).all(|w| w[0] < w[1]);
    if !(strictly_sorted(old) && strictly_sorted(new)) {
        let old_set: HashSet<Uuid, FastHash> = old.iter().copied().collect();
        let new_set: HashSet<Uuid, FastHash> = new.iter().copied().collect();
        return (
            old_set.difference(&new_set).copied().collect(),
            new_set.difference(&old_set).copied().collect(),
        );
    }
    let (mut gone, mut added) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < old.len() && j < new.len() {
        match old[i].cmp(&new[j]) {
            std::cmp::Ordering::Less => {
                gone.push(old[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                added.push(new[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
        }
    }
    gone.extend_from_slice(&old[i..]);
    added.extend_from_slice(&new[j..]);
    (gone, added)
}

pub(crate) fn log_warnings(ws: &[RowError]) {
    for w in ws {
        tracing::warn!(table = w.table, uuid = %w.uuid, "skipping OVN data: {}", w.reason);
    }
}

impl LiveSnapshot {
    /// A snapshot of the current rows: O(1) (shared maps).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            nb_global: self.nb_globals.values().next().cloned().unwrap_or_default(),
            ovs: self.ovs.clone(),
            nb: self.nb.clone(),
            sb: self.sb.index.clone(),
            warnings: self.warnings.clone(),
            journal: self.journal.clone(),
        }
    }

    /// Replaces every NB row with those of `nb` (a fresh start: after a
    /// reconnect, or when changes were lost).
    pub fn reset_nb(&mut self, nb: &impl RowSource) {
        self.nb = NbIndex::default();
        self.nb_globals.clear();
        self.nats_parsed.clear();
        self.switches_of_port.clear();
        self.notable_ports.clear();
        self.routers_of_nat.clear();
        self.nats_of_gateway.clear();
        self.journal = NbJournal {
            lineage: LINEAGES.fetch_add(1, Ordering::Relaxed),
            ..NbJournal::default()
        };
        let old_warnings = std::mem::take(&mut self.nb_warnings);
        let rows: Vec<(&str, Uuid, &Row)> = NB_TABLES
            .iter()
            .flat_map(|t| nb.rows(t).into_iter().map(move |(u, r)| (*t, u, r)))
            .collect();
        self.patch_nb(rows.into_iter().map(|(t, u, r)| (t, u, Some(r))), false);
        // Log what is new since before the reset, not every known warning.
        for (key, ws) in &self.nb_warnings {
            if old_warnings.get(key) != Some(ws) {
                log_warnings(ws);
            }
        }
        self.refresh_warnings();
    }

    /// Sets NB rows to their current content: `(table, uuid, Some(row))` for
    /// a row that exists now (inserted or updated), `None` for one that does
    /// not (deleted). Rows of tables the snapshot does not read are ignored.
    /// Idempotent: only the rows' content matters, not how they got there.
    pub fn apply_nb<'r>(
        &mut self,
        rows: impl IntoIterator<Item = (&'r str, Uuid, Option<&'r Row>)>,
    ) {
        self.patch_nb(rows, true);
        self.refresh_warnings();
    }

    /// Rebuilds the local OVS part from the whole Open_vSwitch database.
    pub fn reset_ovs(&mut self, ovs: &impl RowSource) {
        let mut warnings = Vec::new();
        let mut roots = ovs.rows("Open_vSwitch");
        roots.sort_unstable_by_key(|(u, _)| *u);
        self.ovs = LocalOvs::parse(
            roots.into_iter().next(),
            &ovs.rows("Bridge"),
            &ovs.rows("Port").into_iter().collect(),
            &mut warnings,
        );
        if warnings != self.ovs_warnings {
            log_warnings(&warnings);
            self.ovs_warnings = warnings;
            self.refresh_warnings();
        }
    }

    /// Replaces every Southbound row with those of `sb`.
    pub fn reset_sb(&mut self, sb: &impl RowSource) {
        self.sb.reset(sb, true);
        self.refresh_warnings();
    }

    /// Sets OVN_Southbound rows to their current content, like
    /// [`LiveSnapshot::apply_nb`] (`Chassis`, `Port_Binding`,
    /// `Logical_DP_Group`, `Load_Balancer`; other tables are ignored).
    pub fn apply_sb<'r>(
        &mut self,
        rows: impl IntoIterator<Item = (&'r str, Uuid, Option<&'r Row>)>,
    ) {
        self.sb.apply(rows, true);
        self.refresh_warnings();
    }

    fn refresh_warnings(&mut self) {
        let all = self
            .nb_warnings
            .values()
            .flatten()
            .chain(&self.ovs_warnings)
            .chain(self.sb.warnings());
        if !all.clone().eq(self.warnings.iter()) {
            self.warnings = all.cloned().collect();
        }
    }

    /// Sets the warnings of one row, logging them when they changed (and
    /// `log` is set).
    fn set_warnings(&mut self, key: (WarningGroup, Uuid), ws: Vec<RowError>, log: bool) {
        if ws.is_empty() {
            self.nb_warnings.remove(&key);
        } else if self.nb_warnings.get(&key) != Some(&ws) {
            if log {
                log_warnings(&ws);
            }
            self.nb_warnings.insert(key, ws);
        }
    }

    /// Parses `row`, recording its parse error (or clearing an old one).
    fn parse<T>(
        &mut self,
        group: WarningGroup,
        uuid: Uuid,
        row: Option<&Row>,
        parse: fn(Uuid, &Row) -> Result<T, RowError>,
        log: bool,
    ) -> Option<T> {
        let (value, ws) = match row.map(|r| parse(uuid, r)) {
            None => (None, vec![]),
            Some(Ok(v)) => (Some(v), vec![]),
            Some(Err(e)) => (None, vec![e]),
        };
        self.set_warnings((group, uuid), ws, log);
        value
    }

    /// Whether the NB row exists, parsed or not.
    fn present(&self, group: WarningGroup, uuid: Uuid) -> bool {
        let parsed = match group {
            WarningGroup::LspRow => self.nb.lsps.contains_key(&uuid),
            WarningGroup::NatRow => self.nats_parsed.contains_key(&uuid),
            _ => false,
        };
        parsed || self.nb_warnings.contains_key(&(group, uuid))
    }

    fn patch_nb<'r>(
        &mut self,
        rows: impl IntoIterator<Item = (&'r str, Uuid, Option<&'r Row>)>,
        log: bool,
    ) {
        let mut dirty = Dirty::default();
        // A reset starts a new lineage with an empty journal: only changes
        // applied to it afterwards are logged.
        let journaled = log && self.journal.lineage != 0;
        if journaled {
            self.journal.batch += 1;
        }
        for (table, uuid, row) in rows {
            if journaled {
                if let Some(t) = NB_TABLES.iter().find(|t| **t == table) {
                    self.journal
                        .entries
                        .push_back((self.journal.batch, *t, uuid));
                    if self.journal.entries.len() > JOURNAL_LEN {
                        self.journal.entries.pop_front();
                    }
                }
            }
            match table {
                LogicalSwitchPort::TABLE => self.set_lsp(uuid, row, &mut dirty, log),
                LogicalSwitch::TABLE => self.set_switch(uuid, row, &mut dirty, log),
                LogicalRouter::TABLE => self.set_router(uuid, row, &mut dirty, log),
                LogicalRouterPort::TABLE => self.set_lrp(uuid, row, &mut dirty, log),
                Nat::TABLE => self.set_nat(uuid, row, &mut dirty, log),
                LoadBalancer::TABLE => self.set_lb(uuid, row, log),
                NbGlobal::TABLE => match row {
                    Some(r) => {
                        self.nb_globals.insert(uuid, NbGlobal::parse(uuid, r));
                    }
                    None => {
                        self.nb_globals.remove(&uuid);
                    }
                },
                _ => {}
            }
        }
        for (sw, ports) in dirty.switches {
            self.derive_switch(sw, &ports, log);
        }
        for r in dirty.routers {
            self.derive_router(r, log);
        }
        for n in dirty.nats {
            self.derive_nat(n, log);
        }
    }

    fn set_lsp(&mut self, uuid: Uuid, row: Option<&Row>, dirty: &mut Dirty, log: bool) {
        let was_present = self.present(WarningGroup::LspRow, uuid);
        let old = self.nb.lsps.remove(&uuid);
        if let Some(old) = &old {
            index_lsp(&mut self.nb, old, false);
        }
        let new = self.parse(
            WarningGroup::LspRow,
            uuid,
            row,
            LogicalSwitchPort::parse,
            log,
        );
        let is_localnet =
            |p: Option<&LogicalSwitchPort>| p.is_some_and(|p| p.kind == LspType::Localnet);
        let localnet_touched = is_localnet(old.as_deref()) || is_localnet(new.as_ref());
        if let Some(new) = new {
            let new = Arc::new(new);
            index_lsp(&mut self.nb, &new, true);
            self.nb.lsps.insert(uuid, new);
        }
        // The switches listing this port see it appear, vanish, or become
        // (or stop being) their localnet; a localnet that changed at all
        // must replace the row their localnet lists hold.
        if was_present != row.is_some() || localnet_touched {
            if let Some(sws) = self.switches_of_port.get(&uuid) {
                for sw in sws {
                    dirty.switches.entry(*sw).or_default().push(uuid);
                }
            }
        }
    }

    fn set_switch(&mut self, uuid: Uuid, row: Option<&Row>, dirty: &mut Dirty, log: bool) {
        let old = self.nb.switches.remove(&uuid);
        if let Some(old) = &old {
            edit(
                &mut self.nb.switches_by_name,
                old.name.clone(),
                uuid,
                old,
                false,
            );
        }
        let new = self.parse(
            WarningGroup::SwitchRow,
            uuid,
            row,
            LogicalSwitch::parse,
            log,
        );
        let no_ports: &[Uuid] = &[];
        let changed_ports = rerefer(
            &mut self.switches_of_port,
            uuid,
            old.as_ref().map_or(no_ports, |s| &s.ports),
            new.as_ref().map_or(no_ports, |s| &s.ports),
        );
        if let Some(new) = new {
            let new = Arc::new(new);
            edit(
                &mut self.nb.switches_by_name,
                new.name.clone(),
                uuid,
                &new,
                true,
            );
            self.nb.switches.insert(uuid, new);
        }
        // Re-derived even when no port changed: the order of `ports` may have.
        dirty
            .switches
            .entry(uuid)
            .or_default()
            .extend(changed_ports);
    }

    fn set_router(&mut self, uuid: Uuid, row: Option<&Row>, dirty: &mut Dirty, log: bool) {
        let old = self.nb.routers.remove(&uuid);
        if let Some(old) = &old {
            edit(
                &mut self.nb.router_by_name,
                old.name.clone(),
                uuid,
                old,
                false,
            );
        }
        let new = self.parse(
            WarningGroup::RouterRow,
            uuid,
            row,
            LogicalRouter::parse,
            log,
        );
        let none: &[Uuid] = &[];
        rerefer(
            &mut self.routers_of_nat,
            uuid,
            old.as_ref().map_or(none, |r| &r.nat),
            new.as_ref().map_or(none, |r| &r.nat),
        );
        if let Some(new) = new {
            let new = Arc::new(new);
            edit(
                &mut self.nb.router_by_name,
                new.name.clone(),
                uuid,
                &new,
                true,
            );
            self.nb.routers.insert(uuid, new);
        }
        dirty.routers.insert(uuid);
    }

    fn set_lrp(&mut self, uuid: Uuid, row: Option<&Row>, dirty: &mut Dirty, log: bool) {
        let old = self.nb.lrps.remove(&uuid);
        if let Some(old) = &old {
            if let Some(c) = &old.hosting_chassis {
                edit(
                    &mut self.nb.lrps_by_hosting_chassis,
                    c.clone(),
                    uuid,
                    old,
                    false,
                );
            }
        }
        let new = self.parse(
            WarningGroup::LrpRow,
            uuid,
            row,
            LogicalRouterPort::parse,
            log,
        );
        // NATs naming this LRP as gateway see it become usable or not.
        if old.is_some() != new.is_some() {
            if let Some(nats) = self.nats_of_gateway.get(&uuid) {
                dirty.nats.extend(nats);
            }
        }
        if let Some(new) = new {
            let new = Arc::new(new);
            if let Some(c) = &new.hosting_chassis {
                edit(
                    &mut self.nb.lrps_by_hosting_chassis,
                    c.clone(),
                    uuid,
                    &new,
                    true,
                );
            }
            self.nb.lrps.insert(uuid, new);
        }
    }

    fn set_nat(&mut self, uuid: Uuid, row: Option<&Row>, dirty: &mut Dirty, log: bool) {
        let was_present = self.present(WarningGroup::NatRow, uuid);
        if let Some(gw) = self.nats_parsed.remove(&uuid).and_then(|n| n.gateway_port) {
            refer(&mut self.nats_of_gateway, gw, uuid, false);
        }
        if let Some(new) = self.parse(WarningGroup::NatRow, uuid, row, Nat::parse, log) {
            if let Some(gw) = new.gateway_port {
                refer(&mut self.nats_of_gateway, gw, uuid, true);
            }
            self.nats_parsed.insert(uuid, new);
        }
        dirty.nats.insert(uuid);
        if was_present != row.is_some() {
            if let Some(routers) = self.routers_of_nat.get(&uuid) {
                dirty.routers.extend(routers);
            }
        }
    }

    fn set_lb(&mut self, uuid: Uuid, row: Option<&Row>, log: bool) {
        if let Some(old) = self.nb.lbs.remove(&uuid) {
            index_lb(&mut self.nb, &old, false);
        }
        if let Some(new) = self.parse(WarningGroup::LbRow, uuid, row, LoadBalancer::parse, log) {
            let new = Arc::new(new);
            index_lb(&mut self.nb, &new, true);
            self.nb.lbs.insert(uuid, new);
        }
    }

    /// A switch's localnets (in port order) and dangling port references.
    /// `recheck`: the ports whose standing may have changed since the last
    /// derive (all of them for a switch seen for the first time).
    fn derive_switch(&mut self, uuid: Uuid, recheck: &[Uuid], log: bool) {
        let mut notable = self.notable_ports.remove(&uuid).unwrap_or_default();
        for port in recheck {
            let listed = self
                .switches_of_port
                .get(port)
                .is_some_and(|sws| sws.contains(&uuid));
            let is_notable = listed
                && match self.nb.lsps.get(port) {
                    Some(p) => p.kind == LspType::Localnet,
                    None => !self.present(WarningGroup::LspRow, *port),
                };
            if is_notable {
                notable.insert(*port);
            } else {
                notable.remove(port);
            }
        }
        let mut localnets = Vec::new();
        let mut ws = Vec::new();
        if let (false, Some(sw)) = (notable.is_empty(), self.nb.switches.get(&uuid)) {
            // In the row's port order: one pass over uuids, lookups only
            // for the few notable ports.
            for port in sw.ports.iter().filter(|p| notable.contains(*p)) {
                match self.nb.lsps.get(port) {
                    Some(p) if p.kind == LspType::Localnet => localnets.push(p.clone()),
                    Some(_) => {}
                    None if self.present(WarningGroup::LspRow, *port) => {}
                    None => ws.push(RowError {
                        table: LogicalSwitch::TABLE,
                        uuid,
                        reason: format!("ports references missing row {port}"),
                    }),
                }
            }
        }
        if !notable.is_empty() {
            self.notable_ports.insert(uuid, notable);
        }
        if localnets.is_empty() {
            self.nb.localnets_of_switch.remove(&uuid);
        } else if !self
            .nb
            .localnets_of_switch
            .get(&uuid)
            .is_some_and(|old| same_rows(old, &localnets))
        {
            self.nb.localnets_of_switch.insert(uuid, localnets.into());
        }
        self.set_warnings((WarningGroup::SwitchRefs, uuid), ws, log);
    }

    /// A router's dangling NAT references.
    fn derive_router(&mut self, uuid: Uuid, log: bool) {
        let mut ws = Vec::new();
        if let Some(r) = self.nb.routers.get(&uuid).cloned() {
            for n in &r.nat {
                if !self.present(WarningGroup::NatRow, *n) {
                    ws.push(RowError {
                        table: LogicalRouter::TABLE,
                        uuid,
                        reason: format!("nat references missing row {n}"),
                    });
                }
            }
        }
        self.set_warnings((WarningGroup::RouterRefs, uuid), ws, log);
    }

    /// The NAT as served: its `gateway_port` dropped (with a warning) when
    /// that LRP is missing or did not parse.
    fn derive_nat(&mut self, uuid: Uuid, log: bool) {
        if let Some(old) = self.nb.nats.remove(&uuid) {
            index_nat(&mut self.nb, &old, false);
        }
        let mut ws = Vec::new();
        if let Some(parsed) = self.nats_parsed.get(&uuid) {
            let mut nat = parsed.clone();
            if let Some(gw) = nat.gateway_port {
                if !self.nb.lrps.contains_key(&gw) {
                    ws.push(RowError {
                        table: Nat::TABLE,
                        uuid,
                        reason: format!("gateway_port references missing or unusable row {gw}"),
                    });
                    nat.gateway_port = None;
                }
            }
            let nat = Arc::new(nat);
            index_nat(&mut self.nb, &nat, true);
            self.nb.nats.insert(uuid, nat);
        }
        self.set_warnings((WarningGroup::NatRefs, uuid), ws, log);
    }
}

/// Whether `a` and `b` hold the very same rows (not equal copies).
fn same_rows<T>(a: &[Arc<T>], b: &[Arc<T>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| Arc::ptr_eq(a, b))
}

/// Adds (or removes) what one LSP contributes to the LSP indexes.
fn index_lsp(nb: &mut NbIndex, p: &Arc<LogicalSwitchPort>, add: bool) {
    let u = p.uuid;
    edit(&mut nb.lsp_by_name, p.name.clone(), u, p, add);
    match p.kind {
        LspType::Vm | LspType::Virtual if p.up => {
            // A set: a chassis listed twice binds the port once.
            for c in p.binding_candidates() {
                edit(&mut nb.active_vifs_by_chassis, c.to_string(), u, p, add);
            }
            if let Some(net) = &p.network {
                edit(&mut nb.active_vifs_by_network, net.clone(), u, p, add);
            }
        }
        LspType::Router if p.up && p.device_owner.as_deref() == Some(ROUTER_INTERFACE_OWNER) => {
            if let Some(router) = &p.device_id {
                edit(&mut nb.router_ifaces_by_router, router.clone(), u, p, add);
            }
        }
        LspType::Localnet => {
            if let Some(net) = &p.localnet_network {
                edit(&mut nb.localnets_by_physnet, net.clone(), u, p, add);
            }
        }
        _ => {}
    }
}

fn index_nat(nb: &mut NbIndex, n: &Arc<Nat>, add: bool) {
    if let Some(lp) = &n.logical_port {
        edit(&mut nb.nat_by_logical_port, lp.clone(), n.uuid, n, add);
    }
    if let (NatType::DnatAndSnat, Some(gw)) = (&n.kind, n.gateway_port) {
        edit(&mut nb.fips_by_gateway_port, gw, n.uuid, n, add);
    }
}

fn index_lb(nb: &mut NbIndex, lb: &Arc<LoadBalancer>, add: bool) {
    if lb.vip_ips.is_empty() {
        return;
    }
    for r in lb.lr_ref.iter().chain(lb.router_name.iter()) {
        edit(&mut nb.lbs_by_router, r.clone(), lb.uuid, lb, add);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SW: Uuid = Uuid(0x10);
    const LOCALNET: Uuid = Uuid(0x20);
    const VM: Uuid = Uuid(0x21);
    const LRP: Uuid = Uuid(0x30);
    const FIP: Uuid = Uuid(0x40);

    fn row(v: serde_json::Value) -> Row {
        Row::from_wire(&v).unwrap()
    }

    fn switch(ports: &[Uuid]) -> Row {
        let ports: Vec<_> = ports
            .iter()
            .map(|u| json!(["uuid", u.to_string()]))
            .collect();
        row(json!({"name": "neutron-net1", "ports": ["set", ports]}))
    }

    fn localnet() -> Row {
        row(json!({"name": "provnet-1", "type": "localnet",
                   "options": ["map", [["network_name", "physnet1"]]]}))
    }

    #[test]
    fn a_port_arriving_after_its_switch_clears_the_dangling_warning_and_becomes_its_localnet() {
        let mut live = LiveSnapshot::default();
        live.apply_nb([(LogicalSwitch::TABLE, SW, Some(&switch(&[LOCALNET])))]);
        let before = live.snapshot();
        assert!(before.localnet_of_switch("neutron-net1").is_none());
        assert!(before.warnings()[0].reason.contains("missing row"));

        live.apply_nb([(LogicalSwitchPort::TABLE, LOCALNET, Some(&localnet()))]);
        let after = live.snapshot();
        assert_eq!(
            after.localnet_of_switch("neutron-net1").map(|p| p.uuid),
            Some(LOCALNET)
        );
        assert!(after.warnings().is_empty(), "{:?}", after.warnings());
        // The snapshot handed out earlier did not move.
        assert!(before.localnet_of_switch("neutron-net1").is_none());
    }

    #[test]
    fn a_garbled_port_is_not_a_dangling_reference() {
        let mut live = LiveSnapshot::default();
        let bad = row(json!({"name": "vm", "addresses": "zz 10.0.0.1"}));
        live.apply_nb([
            (LogicalSwitch::TABLE, SW, Some(&switch(&[VM]))),
            (LogicalSwitchPort::TABLE, VM, Some(&bad)),
        ]);
        let s = live.snapshot();
        assert_eq!(s.warnings().len(), 1);
        assert_eq!(s.warnings()[0].table, LogicalSwitchPort::TABLE);
        // Deleting it turns the parse error into a dangling reference.
        live.apply_nb([(LogicalSwitchPort::TABLE, VM, None)]);
        let s = live.snapshot();
        assert_eq!(s.warnings().len(), 1);
        assert_eq!(s.warnings()[0].table, LogicalSwitch::TABLE);
    }

    #[test]
    fn deleting_the_gateway_lrp_takes_the_fip_off_the_gateway_index() {
        let mut live = LiveSnapshot::default();
        let lrp = row(json!({"name": "lrp-gw", "mac": "fa:16:3e:00:00:10",
                             "networks": "172.24.4.1/24"}));
        let fip = row(
            json!({"type": "dnat_and_snat", "external_ip": "172.24.4.100",
                             "logical_ip": "10.0.0.5", "logical_port": "vm1",
                             "gateway_port": ["uuid", LRP.to_string()]}),
        );
        live.apply_nb([
            (LogicalRouterPort::TABLE, LRP, Some(&lrp)),
            (Nat::TABLE, FIP, Some(&fip)),
        ]);
        assert_eq!(live.snapshot().fips_on_gateway_port(LRP).count(), 1);

        live.apply_nb([(LogicalRouterPort::TABLE, LRP, None)]);
        let s = live.snapshot();
        assert_eq!(s.fips_on_gateway_port(LRP).count(), 0);
        assert_eq!(s.nat_of_logical_port("vm1").unwrap().gateway_port, None);
        assert!(s.warnings()[0].reason.contains("gateway_port"));

        live.apply_nb([(LogicalRouterPort::TABLE, LRP, Some(&lrp))]);
        assert_eq!(live.snapshot().fips_on_gateway_port(LRP).count(), 1);
        assert!(live.snapshot().warnings().is_empty());
    }

    #[test]
    fn renaming_a_port_moves_it_and_the_first_by_uuid_keeps_the_name() {
        let mut live = LiveSnapshot::default();
        let named = |n: &str| row(json!({"name": n, "type": "localnet"}));
        live.apply_nb([
            (LogicalSwitchPort::TABLE, VM, Some(&named("dup"))),
            (LogicalSwitchPort::TABLE, LOCALNET, Some(&named("dup"))),
        ]);
        // LOCALNET (0x20) sorts before VM (0x21).
        assert_eq!(live.snapshot().lsp("dup").unwrap().uuid, LOCALNET);
        live.apply_nb([(LogicalSwitchPort::TABLE, LOCALNET, Some(&named("other")))]);
        let s = live.snapshot();
        assert_eq!(s.lsp("dup").unwrap().uuid, VM);
        assert_eq!(s.lsp("other").unwrap().uuid, LOCALNET);
    }

    #[test]
    fn a_changed_row_whose_index_keys_stay_is_served_fresh_through_every_index() {
        let mut live = LiveSnapshot::default();
        let vm = |ip: &str| {
            row(json!({"name": "vm1", "up": true,
                       "addresses": format!("fa:16:3e:00:00:01 {ip}"),
                       "options": ["map", [["requested-chassis", "c1"]]],
                       "external_ids": ["map", [["neutron:network_name", "neutron-net1"]]]}))
        };
        let provnet = |tag: u16| {
            row(json!({"name": "provnet-1", "type": "localnet", "tag": tag,
                       "options": ["map", [["network_name", "physnet1"]]]}))
        };
        let (old_vm, old_provnet) = (vm("10.0.0.5"), provnet(100));
        live.apply_nb([
            (LogicalSwitch::TABLE, SW, Some(&switch(&[LOCALNET, VM]))),
            (LogicalSwitchPort::TABLE, LOCALNET, Some(&old_provnet)),
            (LogicalSwitchPort::TABLE, VM, Some(&old_vm)),
        ]);
        let before = live.snapshot();

        // Same name, chassis, network and physnet: no index key moves.
        let (new_vm, new_provnet) = (vm("10.0.0.6"), provnet(200));
        live.apply_nb([
            (LogicalSwitchPort::TABLE, VM, Some(&new_vm)),
            (LogicalSwitchPort::TABLE, LOCALNET, Some(&new_provnet)),
        ]);
        let s = live.snapshot();
        let ips = |p: &LogicalSwitchPort| {
            p.addresses
                .ips
                .iter()
                .map(|ip| ip.to_string())
                .collect::<Vec<_>>()
        };
        let on_chassis: Vec<_> = s.active_vifs_on_chassis("c1").map(ips).collect();
        assert_eq!(on_chassis, [["10.0.0.6"]]);
        let on_network: Vec<_> = s.active_vifs_on_network("neutron-net1").map(ips).collect();
        assert_eq!(on_network, [["10.0.0.6"]]);
        assert_eq!(ips(s.lsp("vm1").unwrap()), ["10.0.0.6"]);
        assert_eq!(s.localnet_of_switch("neutron-net1").unwrap().tag, Some(200));
        assert_eq!(
            s.localnets_on_physnet("physnet1").next().unwrap().tag,
            Some(200)
        );
        assert_eq!(s.lsp("provnet-1").unwrap().tag, Some(200));
        // Exactly what a fresh build of the new rows serves.
        let mut fresh = LiveSnapshot::default();
        fresh.apply_nb([
            (LogicalSwitch::TABLE, SW, Some(&switch(&[LOCALNET, VM]))),
            (LogicalSwitchPort::TABLE, LOCALNET, Some(&new_provnet)),
            (LogicalSwitchPort::TABLE, VM, Some(&new_vm)),
        ]);
        assert_eq!(s, fresh.snapshot());
        // The snapshot handed out before the change still serves the old rows.
        let old_on_chassis: Vec<_> = before.active_vifs_on_chassis("c1").map(ips).collect();
        assert_eq!(old_on_chassis, [["10.0.0.5"]]);
        assert_eq!(
            before.localnet_of_switch("neutron-net1").unwrap().tag,
            Some(100)
        );
    }

    #[test]
    fn set_difference_is_the_same_on_sorted_and_unsorted_sets() {
        let u = |v: &[u128]| v.iter().map(|i| Uuid(*i)).collect::<Vec<_>>();
        let sorted = |mut v: Vec<Uuid>| {
            v.sort();
            v
        };
        // Sorted: the merge pass.
        let (gone, added) = set_difference(&u(&[1, 2, 4, 7]), &u(&[2, 3, 4, 8, 9]));
        assert_eq!((gone, added), (u(&[1, 7]), u(&[3, 8, 9])));
        // Unsorted, or with duplicates: the hashing fallback, same answer.
        let (gone, added) = set_difference(&u(&[7, 4, 2, 1, 4]), &u(&[9, 2, 3, 8, 4]));
        assert_eq!((sorted(gone), sorted(added)), (u(&[1, 7]), u(&[3, 8, 9])));
        assert_eq!(set_difference(&[], &u(&[5])), (vec![], u(&[5])));
    }

    #[test]
    fn a_big_switch_gaining_and_losing_ports_keeps_its_localnet_and_dangling_refs() {
        let mut live = LiveSnapshot::default();
        let vm = |i: u128| (LogicalSwitchPort::TABLE, Uuid(0x1000 + i));
        let vm_row = row(json!({"name": "vm", "up": true}));
        let mut ports: Vec<Uuid> = (0..200).map(|i| vm(i).1).collect();
        ports.push(LOCALNET);
        let mut rows: Vec<(&str, Uuid, Option<&Row>)> = (0..200)
            .map(|i| (vm(i).0, vm(i).1, Some(&vm_row)))
            .collect();
        let (localnet_row, sw) = (localnet(), switch(&ports));
        rows.push((LogicalSwitchPort::TABLE, LOCALNET, Some(&localnet_row)));
        rows.push((LogicalSwitch::TABLE, SW, Some(&sw)));
        live.apply_nb(rows);
        // One more port, listed before its row exists: a dangling reference.
        ports.push(VM);
        let sw = switch(&ports);
        live.apply_nb([(LogicalSwitch::TABLE, SW, Some(&sw))]);
        let s = live.snapshot();
        assert_eq!(s.localnet_of_switch("neutron-net1").unwrap().uuid, LOCALNET);
        assert_eq!(s.warnings().len(), 1, "{:?}", s.warnings());
        // The row arrives; then the localnet leaves the switch.
        live.apply_nb([(LogicalSwitchPort::TABLE, VM, Some(&vm_row))]);
        assert!(live.snapshot().warnings().is_empty());
        ports.retain(|p| *p != LOCALNET);
        let sw = switch(&ports);
        live.apply_nb([(LogicalSwitch::TABLE, SW, Some(&sw))]);
        let s = live.snapshot();
        assert!(s.localnet_of_switch("neutron-net1").is_none());
        assert!(s.warnings().is_empty());
        // Each step equals a fresh build of the same rows.
        let mut fresh = LiveSnapshot::default();
        let mut all: Vec<(&str, Uuid, Option<&Row>)> = (0..200)
            .map(|i| (vm(i).0, vm(i).1, Some(&vm_row)))
            .collect();
        all.push((LogicalSwitchPort::TABLE, LOCALNET, Some(&localnet_row)));
        all.push((LogicalSwitchPort::TABLE, VM, Some(&vm_row)));
        all.push((LogicalSwitch::TABLE, SW, Some(&sw)));
        fresh.apply_nb(all);
        assert_eq!(s, fresh.snapshot());
        assert_eq!(live.notable_ports, fresh.notable_ports);
    }

    #[test]
    fn a_chassis_listed_twice_binds_the_port_once() {
        let mut live = LiveSnapshot::default();
        let vm = row(json!({"name": "vm", "up": true,
                            "options": ["map", [["requested-chassis", "c1,c1"]]]}));
        live.apply_nb([(LogicalSwitchPort::TABLE, VM, Some(&vm))]);
        assert_eq!(live.snapshot().active_vifs_on_chassis("c1").count(), 1);
        live.apply_nb([(LogicalSwitchPort::TABLE, VM, None)]);
        assert_eq!(live.snapshot(), Snapshot::default());
    }

    fn vm(up: bool) -> Row {
        row(
            json!({"name": "vm1", "up": up, "addresses": "fa:16:3e:00:00:21 10.0.0.21",
                   "options": ["map", [["requested-chassis", "host-1"]]]}),
        )
    }

    /// A live snapshot reset to a switch with its localnet and a VM port.
    fn started() -> LiveSnapshot {
        let mut nb: crate::Tables = Default::default();
        nb.entry(LogicalSwitch::TABLE.into())
            .or_default()
            .insert(SW, switch(&[LOCALNET, VM]));
        let ports = nb.entry(LogicalSwitchPort::TABLE.into()).or_default();
        ports.insert(LOCALNET, localnet());
        ports.insert(VM, vm(false));
        let mut live = LiveSnapshot::default();
        live.reset_nb(&nb);
        live
    }

    #[test]
    fn the_journal_names_the_rows_changed_since_an_earlier_snapshot() {
        let mut live = started();
        let s0 = live.snapshot();
        assert_eq!(s0.nb_changes_since(&s0), Some(vec![]));
        live.apply_nb([(LogicalSwitchPort::TABLE, VM, Some(&vm(true)))]);
        let s1 = live.snapshot();
        live.apply_nb([(LogicalSwitch::TABLE, SW, Some(&switch(&[LOCALNET])))]);
        let s2 = live.snapshot();
        assert_eq!(
            s2.nb_changes_since(&s0),
            Some(vec![
                (LogicalSwitchPort::TABLE, VM),
                (LogicalSwitch::TABLE, SW)
            ])
        );
        assert_eq!(
            s2.nb_changes_since(&s1),
            Some(vec![(LogicalSwitch::TABLE, SW)])
        );
        // Not the other way round, not across resets, not from nowhere.
        assert_eq!(s0.nb_changes_since(&s2), None);
        assert_eq!(s2.nb_changes_since(&Snapshot::default()), None);
        assert_eq!(started().snapshot().nb_changes_since(&s0), None);
        // History is not content.
        assert_eq!(s0, started().snapshot());
    }

    #[test]
    fn a_journal_that_no_longer_reaches_back_answers_none() {
        let mut live = started();
        let s0 = live.snapshot();
        for i in 0..=JOURNAL_LEN {
            live.apply_nb([(LogicalSwitchPort::TABLE, VM, Some(&vm(i % 2 == 0)))]);
        }
        assert_eq!(live.snapshot().nb_changes_since(&s0), None);
        let s1 = live.snapshot();
        live.apply_nb([(LogicalSwitchPort::TABLE, VM, Some(&vm(false)))]);
        assert_eq!(
            live.snapshot().nb_changes_since(&s1).map(|c| c.len()),
            Some(1)
        );
    }

    #[test]
    fn port_changes_are_reported_only_when_nothing_else_changed() {
        let mut live = started();
        let s0 = live.snapshot();
        // A VM port comes up and its switch lists it again: ports only.
        live.apply_nb([
            (LogicalSwitchPort::TABLE, VM, Some(&vm(true))),
            (LogicalSwitch::TABLE, SW, Some(&switch(&[LOCALNET, VM]))),
        ]);
        let s1 = live.snapshot();
        let changes = s1.port_changes_since(&s0).expect("ports only");
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].uuid, VM);
        assert!(!changes[0].old.as_ref().unwrap().up);
        assert!(changes[0].new.as_ref().unwrap().up);
        assert!(s1.is_active_vif_on("host-1", VM));
        assert!(!s0.is_active_vif_on("host-1", VM));

        // NB_Global's liveness bumps change nothing the agent reads; its
        // FIP mode does.
        let global = |fip: &str| {
            row(json!({"external_ids": ["map", [
                ["neutron:liveness_check_at", "now"], [crate::neutron::key::FIP_DISTRIBUTED, fip]]]}))
        };
        const GLOBAL: Uuid = Uuid(0x50);
        live.apply_nb([(NbGlobal::TABLE, GLOBAL, Some(&global("True")))]);
        assert_eq!(
            live.snapshot().port_changes_since(&s1).map(|c| c.len()),
            Some(0)
        );
        live.apply_nb([(NbGlobal::TABLE, GLOBAL, Some(&global("False")))]);
        assert!(live.snapshot().port_changes_since(&s1).is_none());
        live.apply_nb([(NbGlobal::TABLE, GLOBAL, None)]);
        let s1 = live.snapshot();

        // A localnet change moves provider wiring: not ports only.
        let mut tagged = localnet();
        tagged.columns.insert(
            "tag",
            obgp_ovsdb_data::Datum::from_wire(&json!(100)).unwrap(),
        );
        live.apply_nb([(LogicalSwitchPort::TABLE, LOCALNET, Some(&tagged))]);
        assert!(live.snapshot().port_changes_since(&s1).is_none());

        // Nor is a renamed switch, or a row of another table.
        let s2 = live.snapshot();
        let renamed = row(json!({"name": "neutron-net2",
            "ports": ["set", [["uuid", LOCALNET.to_string()], ["uuid", VM.to_string()]]]}));
        live.apply_nb([(LogicalSwitch::TABLE, SW, Some(&renamed))]);
        assert!(live.snapshot().port_changes_since(&s2).is_none());
        let s3 = live.snapshot();
        let lrp = row(json!({"name": "lrp-gw", "mac": "fa:16:3e:00:00:10",
                             "networks": "172.24.4.1/24"}));
        live.apply_nb([(LogicalRouterPort::TABLE, LRP, Some(&lrp))]);
        assert!(live.snapshot().port_changes_since(&s3).is_none());
    }
}
