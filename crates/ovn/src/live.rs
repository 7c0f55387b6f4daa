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
//!
//! Every index a row contributes to is maintained here, beside the others
//! (the SB tables are in `live_sb.rs`, each NB table's patch in `live/rows.rs`, the
//! set operations they use in `refs.rs`, the tests in `live/tests.rs`): an index updated in two
//! files is one that drifts.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use obgp_ovsdb_data::{Row, Uuid};

use crate::changes::{NbChanges, PortChange};
use crate::hash::FastHash;
use crate::live_sb::SbLive;
use crate::nb::log_warnings;
use crate::nb::{
    DhcpOptions, LoadBalancer, LogicalRouter, LogicalRouterPort, LogicalSwitch, LogicalSwitchPort,
    LspType, Nat, NatType, NbGlobal, RowError,
};
use crate::neutron::ROUTER_INTERFACE_OWNER;
use crate::ovs::LocalOvs;
use crate::refs::{edit, refer, rerefer, Referrers};
use crate::rows_version::RowsVersion;
use crate::snapshot::{NbIndex, RowSource, Snapshot};

/// The NB tables the snapshot reads; rows of other tables are ignored.
pub const NB_TABLES: [&str; 8] = [
    LogicalSwitchPort::TABLE,
    LogicalSwitch::TABLE,
    LogicalRouter::TABLE,
    LogicalRouterPort::TABLE,
    Nat::TABLE,
    LoadBalancer::TABLE,
    NbGlobal::TABLE,
    DhcpOptions::TABLE,
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
    DhcpRow,
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

/// What a batch changed, as the desired state sees it: the ports, each
/// with its row before the batch and after it, and whether anything else
/// it reads changed (see [`NbChanges::Ports`]).
#[derive(Default)]
struct Touched {
    /// `None` for a reset, whose changes are not told port by port.
    ports: Option<BTreeMap<Uuid, PortChange>>,
    beyond_ports: bool,
}

impl Touched {
    /// Port `uuid` went from `old` to `new`; a port met twice in a batch
    /// keeps its first old row.
    fn port(
        &mut self,
        uuid: Uuid,
        old: Option<Arc<LogicalSwitchPort>>,
        new: Option<Arc<LogicalSwitchPort>>,
    ) {
        if let Some(ports) = &mut self.ports {
            ports
                .entry(uuid)
                .and_modify(|c| c.new = new.clone())
                .or_insert(PortChange { uuid, old, new });
        }
    }
}

/// The maintained snapshot. Feed it NB row changes with
/// [`LiveSnapshot::apply_nb`], SB row changes with
/// [`LiveSnapshot::apply_sb`], the whole OVS database with
/// [`LiveSnapshot::reset_ovs`]; start over with `reset_*`; take snapshots
/// with [`LiveSnapshot::snapshot`].
#[derive(Debug, Default)]
pub struct LiveSnapshot {
    nb: NbIndex,
    nb_globals: BTreeMap<Uuid, NbGlobal>,
    /// NATs as parsed, before the `gateway_port` check. The snapshot
    /// serves the same `Arc` when the check changes nothing (nearly every
    /// NAT): a copy per NAT cost ~4 MiB at 50k ports (10k NATs).
    nats_parsed: HashMap<Uuid, Arc<Nat>, FastHash>,
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
    /// The state of the NB and OVS rows, fresh after every update of them.
    version: RowsVersion,
    /// The NB cache holds only some Logical_Switch_Port and NAT rows
    /// (conditional monitoring): a port a switch lists, or a NAT a router
    /// lists, that the cache lacks is not dangling, it is not monitored.
    partial_ports: bool,
}

/// A snapshot built from rows is a fresh live snapshot reset with them, so
/// a built snapshot and a maintained one cannot differ in how they parse
/// and index. (Here, not in `snapshot`, so that the snapshot module does
/// not depend on the live one that maintains it.)
impl Snapshot {
    /// Builds the snapshot from the NB and local OVS databases. Rows that do
    /// not parse, and references to rows that do not exist, are skipped with
    /// a `tracing::warn!` naming the table and uuid and kept in
    /// [`Snapshot::warnings`].
    pub fn build(nb: &impl RowSource, ovs: &impl RowSource) -> Snapshot {
        let mut live = LiveSnapshot::default();
        live.reset_nb(nb);
        live.reset_ovs(ovs);
        live.snapshot()
    }

    /// The snapshot of the NB rows `filter` keeps (built as a snapshot of
    /// selected ports, [`LiveSnapshot::with_partial_ports`]) and the local
    /// OVS: what a full monitor's follower with that local filter holds,
    /// and what a conditional monitor with the same conditions would.
    pub fn build_filtered(
        nb: &impl RowSource,
        filter: &crate::NbRowFilter,
        ovs: &impl RowSource,
    ) -> Snapshot {
        let mut live = LiveSnapshot::with_partial_ports();
        live.reset_nb(&crate::FilteredRows { rows: nb, filter });
        live.reset_ovs(ovs);
        live.snapshot()
    }

    /// [`Snapshot::build`] plus the OVN_Southbound rows the SB driver
    /// reads (`Port_Binding`, `Chassis`), indexed in [`Snapshot::sb`]. The
    /// NB part is identical to `build`'s.
    pub fn build_with_sb(
        nb: &impl RowSource,
        sb: &impl RowSource,
        ovs: &impl RowSource,
    ) -> Snapshot {
        let mut live = LiveSnapshot::default();
        live.reset_nb(nb);
        live.reset_ovs(ovs);
        live.reset_sb(sb);
        live.snapshot()
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
            version: self.version,
        }
    }

    /// No change since the current state: what the changes of the next
    /// updates accumulate on ([`NbChanges::then`]).
    pub fn unchanged(&self) -> NbChanges {
        NbChanges::ports(self.version, self.version, BTreeMap::new())
    }

    /// A live snapshot of an NB cache that holds only some ports and NATs
    /// (`ovn_nb_monitor_all = false`): switches' references to ports and
    /// routers' references to NATs it lacks are not reported as dangling.
    pub fn with_partial_ports() -> LiveSnapshot {
        LiveSnapshot {
            partial_ports: true,
            ..LiveSnapshot::default()
        }
    }

    /// Whether the snapshot holds Logical_Switch_Port or NAT row `uuid`
    /// of `table` (parsed, or kept as a warning); `false` for other tables.
    pub fn holds_nb_row(&self, table: &str, uuid: Uuid) -> bool {
        match table {
            LogicalSwitchPort::TABLE => self.present(WarningGroup::LspRow, uuid),
            Nat::TABLE => self.present(WarningGroup::NatRow, uuid),
            _ => false,
        }
    }

    /// Replaces every NB row with those of `nb` (a fresh start: after a
    /// reconnect, or when changes were lost). What changed is not known:
    /// [`NbChanges::Full`].
    pub fn reset_nb(&mut self, nb: &impl RowSource) -> NbChanges {
        self.nb = NbIndex::default();
        self.nb_globals.clear();
        self.nats_parsed.clear();
        self.switches_of_port.clear();
        self.notable_ports.clear();
        self.routers_of_nat.clear();
        self.nats_of_gateway.clear();
        self.version = RowsVersion::fresh();
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
        NbChanges::Full
    }

    /// Sets NB rows to their current content: `(table, uuid, Some(row))` for
    /// a row that exists now (inserted or updated), `None` for one that does
    /// not (deleted). Rows of tables the snapshot does not read are ignored.
    /// Idempotent: only the rows' content matters, not how they got there.
    ///
    /// Returns what changed: the ports, or [`NbChanges::Full`] when
    /// anything else the NB driver reads did (decided while patching, from
    /// the rows and indexes touched).
    pub fn apply_nb<'r>(
        &mut self,
        rows: impl IntoIterator<Item = (&'r str, Uuid, Option<&'r Row>)>,
    ) -> NbChanges {
        let touched = self.patch_nb(rows, true);
        self.refresh_warnings();
        let since = std::mem::replace(&mut self.version, RowsVersion::fresh());
        match touched {
            Touched {
                ports: Some(ports),
                beyond_ports: false,
            } => NbChanges::ports(since, self.version, ports),
            _ => NbChanges::Full,
        }
    }

    /// Rebuilds the local OVS part from the whole Open_vSwitch database.
    /// Returns no port change when the view the agent reads stayed,
    /// [`NbChanges::Full`] when it changed.
    pub fn reset_ovs(&mut self, ovs: &impl RowSource) -> NbChanges {
        let mut warnings = Vec::new();
        let mut roots = ovs.rows("Open_vSwitch");
        roots.sort_unstable_by_key(|(u, _)| *u);
        let parsed = LocalOvs::parse(
            roots.into_iter().next(),
            &ovs.rows("Bridge"),
            &ovs.rows("Port").into_iter().collect(),
            &ovs.rows("Interface"),
            &mut warnings,
        );
        if warnings != self.ovs_warnings {
            log_warnings(&warnings);
            self.ovs_warnings = warnings;
            self.refresh_warnings();
        }
        let since = self.version;
        if parsed == self.ovs {
            return NbChanges::ports(since, since, BTreeMap::new());
        }
        self.ovs = parsed;
        self.version = RowsVersion::fresh();
        NbChanges::Full
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

    /// Patches in `rows` and returns what that changed. `log`: an update
    /// (its new warnings logged, its port changes told), not a reset.
    fn patch_nb<'r>(
        &mut self,
        rows: impl IntoIterator<Item = (&'r str, Uuid, Option<&'r Row>)>,
        log: bool,
    ) -> Touched {
        let mut dirty = Dirty::default();
        let mut touched = Touched {
            ports: log.then(BTreeMap::new),
            beyond_ports: false,
        };
        // The NB_Global the agent reads (the first by uuid) before the
        // batch, once a row of that table is met: Neutron's liveness
        // checks bump rows without changing it.
        let mut global_before: Option<Option<NbGlobal>> = None;
        for (table, uuid, row) in rows {
            match table {
                LogicalSwitchPort::TABLE => self.set_lsp(uuid, row, &mut dirty, &mut touched, log),
                LogicalSwitch::TABLE => self.set_switch(uuid, row, &mut dirty, &mut touched, log),
                LogicalRouter::TABLE => self.set_router(uuid, row, &mut dirty, log),
                LogicalRouterPort::TABLE => self.set_lrp(uuid, row, &mut dirty, log),
                Nat::TABLE => self.set_nat(uuid, row, &mut dirty, log),
                LoadBalancer::TABLE => self.set_lb(uuid, row, log),
                DhcpOptions::TABLE => self.set_dhcp(uuid, row, log),
                NbGlobal::TABLE => {
                    global_before.get_or_insert_with(|| self.nb_globals.values().next().cloned());
                    match row {
                        Some(r) => {
                            self.nb_globals.insert(uuid, NbGlobal::parse(uuid, r));
                        }
                        None => {
                            self.nb_globals.remove(&uuid);
                        }
                    }
                }
                _ => {}
            }
            if matches!(
                table,
                LogicalRouter::TABLE
                    | LogicalRouterPort::TABLE
                    | Nat::TABLE
                    | LoadBalancer::TABLE
                    | DhcpOptions::TABLE
            ) {
                touched.beyond_ports = true;
            }
        }
        if let Some(before) = global_before {
            let now = self.nb_globals.values().next();
            touched.beyond_ports |= before.unwrap_or_default() != now.cloned().unwrap_or_default();
        }
        for (sw, ports) in dirty.switches {
            touched.beyond_ports |= self.derive_switch(sw, &ports, log);
        }
        for r in dirty.routers {
            self.derive_router(r, log);
        }
        for n in dirty.nats {
            self.derive_nat(n, log);
        }
        touched
    }
}

mod rows;

#[cfg(test)]
mod tests;
