//! The OVN snapshot kept up to date from the OVSDB caches' change streams,
//! so that a reconcile after a one-row change costs O(that row).
//!
//! Consistency rules (each one is what makes a change impossible to lose or
//! to revert):
//! - Changes only say *which* rows to look at; the rows' content is read
//!   from the cache snapshot taken after draining the changes, with no
//!   batch published in between ([`CacheReader::drain_then_snapshot`]):
//!   the snapshot holds exactly the batches whose changes were drained, so
//!   the maintained snapshot equals a fresh build of the raw one handed out
//!   with it, never half a transaction (say a deleted FIP's router update
//!   without the NAT's delete). A row re-read this way is its latest
//!   content, never an older one.
//! - On the first catch-up, after a resync (reconnect), and when the change
//!   receiver lagged (changes were dropped), the snapshot is rebuilt from the
//!   cache snapshot instead, with the same drain-then-read order.
//!
//! With `ovn_nb_monitor_all = true` the follower can hold a local filter
//! ([`SnapshotFollower::with_local_filter`]): the cache keeps every row, the
//! live snapshot only the Logical_Switch_Port and NAT rows the filter
//! keeps ([`NbRowFilter`], the conditions a conditional monitor would send).
//! A changed row is applied as absent when the filter drops it; a new
//! filter ([`SnapshotFollower::set_local_filter`]) is applied by the next
//! catch-up, which patches exactly the rows whose membership changed.
//!
//! What each update changed, as the live snapshot returns it
//! ([`NbChanges`]), accumulates here until a reconcile takes it with the
//! snapshot ([`SnapshotFollower::take_changes`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use obgp_config::Driver;
use obgp_ovn::{FilteredRows, LiveSnapshot, NbChanges, NbRowFilter, Snapshot};
use obgp_ovsdb::cache::CacheReader;
use obgp_ovsdb_data::{Change, DbSnapshot, Row, Uuid};
use tokio::sync::{broadcast, watch};

/// One database's change stream as the maintained snapshot consumes it.
struct ChangeFeed {
    changes: broadcast::Receiver<Change>,
    resynced: watch::Receiver<u64>,
    /// The resync generation the snapshot was last rebuilt at; `None` until
    /// the first rebuild (or after a panic mid-update).
    built_at: Option<u64>,
}

/// What a catch-up found: rebuild from `rows`, or re-read the `touched`
/// rows from `rows`.
enum CatchUp {
    Rebuild(obgp_ovsdb_data::DbSnapshot),
    Patch(obgp_ovsdb_data::DbSnapshot, BTreeSet<(Arc<str>, Uuid)>),
}

impl ChangeFeed {
    /// Subscribes now: every change published from here on is seen.
    fn new(cache: &CacheReader) -> ChangeFeed {
        ChangeFeed {
            changes: cache.subscribe(),
            resynced: cache.resynced(),
            built_at: None,
        }
    }

    fn catch_up(&mut self, cache: &CacheReader, database: &str) -> CatchUp {
        let generation = *self.resynced.borrow_and_update();
        let mut rebuild = self.built_at != Some(generation);
        let mut touched = BTreeSet::new();
        // Drained and read as one step: see the module comment.
        let rows = cache.drain_then_snapshot(&mut self.changes, |change| match change {
            Ok(c) if !rebuild => {
                touched.insert((c.table, c.uuid));
            }
            Ok(_) => {}
            Err(lost) => {
                if !rebuild {
                    tracing::info!(
                        database,
                        lost,
                        "change stream lagged: rebuilding the OVN snapshot from the cache"
                    );
                }
                rebuild = true;
            }
        });
        self.built_at = Some(generation);
        if rebuild {
            CatchUp::Rebuild(rows)
        } else {
            CatchUp::Patch(rows, touched)
        }
    }
}

/// The maintained snapshot of the driver's OVN database and the local OVS.
pub struct SnapshotFollower {
    live: LiveSnapshot,
    /// What the updates since the last [`SnapshotFollower::take_changes`]
    /// changed.
    changes: NbChanges,
    ovn: ChangeFeed,
    ovs: ChangeFeed,
    driver: Driver,
    /// The local filter of the NB rows the live snapshot holds (full
    /// monitor); `None`: it holds every cached row.
    filter: Option<Arc<NbRowFilter>>,
    /// A filter set since the last catch-up; the next one applies it.
    next_filter: Option<Arc<NbRowFilter>>,
}

/// What one catch-up hands out.
pub struct Caught {
    /// The OVN cache snapshot the maintained one was brought up to.
    pub raw_ovn: obgp_ovsdb_data::DbSnapshot,
    /// The local OVS cache snapshot likewise.
    pub raw_ovs: obgp_ovsdb_data::DbSnapshot,
    /// The indexed snapshot, consistent with every change received so far.
    pub snapshot: Snapshot,
    /// The local filter `snapshot` holds the NB rows of (`None`: every row).
    pub filter: Option<Arc<NbRowFilter>>,
}

impl SnapshotFollower {
    /// Subscribes to both caches' changes; the first
    /// [`SnapshotFollower::catch_up`] builds from the caches. `ovn` is
    /// OVN_Southbound for the SB driver, OVN_Northbound otherwise;
    /// `partial_ports`: the NB cache holds only some ports (conditional
    /// monitor), see [`LiveSnapshot::with_partial_ports`].
    pub fn new(
        ovn: &CacheReader,
        ovs: &CacheReader,
        driver: Driver,
        partial_ports: bool,
    ) -> SnapshotFollower {
        SnapshotFollower {
            live: if partial_ports {
                LiveSnapshot::with_partial_ports()
            } else {
                LiveSnapshot::default()
            },
            changes: NbChanges::Full,
            ovn: ChangeFeed::new(ovn),
            ovs: ChangeFeed::new(ovs),
            driver,
            filter: None,
            next_filter: None,
        }
    }

    /// The follower of a full NB monitor whose live snapshot holds only the
    /// rows `filter` keeps (built as a snapshot of selected ports,
    /// [`LiveSnapshot::with_partial_ports`]); the cache keeps every row.
    /// Before the first catch-up.
    pub fn with_local_filter(mut self, filter: NbRowFilter) -> SnapshotFollower {
        self.live = LiveSnapshot::with_partial_ports();
        self.changes = NbChanges::Full;
        self.filter = Some(Arc::new(filter));
        self
    }

    /// The filter the next catch-up applies: the rows whose membership
    /// changed are patched in or out, their changes accumulating like any
    /// patch's. Ignored (with an error logged) on a follower made without
    /// a local filter, whose snapshot is not one of selected ports.
    pub fn set_local_filter(&mut self, filter: NbRowFilter) {
        if self.filter.is_none() {
            tracing::error!("a local NB row filter set on a follower of every row; ignored");
            return;
        }
        let current = self.next_filter.as_ref().or(self.filter.as_ref());
        if current.is_some_and(|f| **f == filter) {
            return;
        }
        self.next_filter = Some(Arc::new(filter));
    }

    /// What changed since the last call (or since the start:
    /// [`NbChanges::Full`]), up to the snapshot the last catch-up handed
    /// out; from here on the changes accumulate afresh.
    pub fn take_changes(&mut self) -> NbChanges {
        std::mem::replace(&mut self.changes, self.live.unchanged())
    }

    /// Forgets the state: the next catch-up rebuilds (used when an update
    /// panicked half-way).
    pub fn invalidate(&mut self) {
        self.changes = NbChanges::Full;
        self.ovn.built_at = None;
        self.ovs.built_at = None;
    }

    /// Applies what changed since the last call and returns the result.
    /// NB and SB rows are patched one by one; the local OVS database (a
    /// handful of rows) is rebuilt whole when anything in it changed.
    pub fn catch_up(&mut self, ovn: &CacheReader, ovs: &CacheReader) -> Caught {
        let raw_ovs = match self.ovs.catch_up(ovs, obgp_ovn::OVS_DB) {
            CatchUp::Patch(rows, touched) if touched.is_empty() => rows,
            CatchUp::Rebuild(rows) | CatchUp::Patch(rows, _) => {
                self.changes.then(self.live.reset_ovs(&rows));
                rows
            }
        };
        let sb = self.driver.reads_sb();
        let database = if sb { obgp_ovn::SB_DB } else { obgp_ovn::NB_DB };
        let raw_ovn = match self.ovn.catch_up(ovn, database) {
            // The SB driver's desired state is computed from every row:
            // its changes are not tracked.
            CatchUp::Rebuild(rows) if sb => {
                self.live.reset_sb(&rows);
                rows
            }
            CatchUp::Rebuild(rows) => {
                if let Some(next) = self.next_filter.take() {
                    self.filter = Some(next);
                }
                let changes = match &self.filter {
                    Some(filter) => self.live.reset_nb(&FilteredRows {
                        rows: &rows,
                        filter,
                    }),
                    None => self.live.reset_nb(&rows),
                };
                self.changes.then(changes);
                rows
            }
            CatchUp::Patch(rows, touched) if sb => {
                let current = touched
                    .iter()
                    .map(|(t, u)| (&**t, *u, rows.get(t, *u).map(|r| &**r)));
                self.live.apply_sb(current);
                rows
            }
            CatchUp::Patch(rows, touched) => {
                let changes = self.patch_nb(&rows, &touched);
                self.changes.then(changes);
                rows
            }
        };
        Caught {
            raw_ovn,
            raw_ovs,
            snapshot: self.live.snapshot(),
            filter: self.filter.clone(),
        }
    }

    /// Patches the `touched` NB rows in from `rows`, through the local
    /// filter if there is one: a row it drops is applied as absent (and
    /// skipped when the snapshot does not hold it either: another node's
    /// port changing is no change here). A filter set since the last
    /// catch-up is applied too: every row of the filtered tables whose
    /// membership differs from what the snapshot holds is patched in or out.
    fn patch_nb(&mut self, rows: &DbSnapshot, touched: &BTreeSet<(Arc<str>, Uuid)>) -> NbChanges {
        let Some(old) = self.filter.clone() else {
            let current = touched
                .iter()
                .map(|(t, u)| (&**t, *u, rows.get(t, *u).map(|r| &**r)));
            return self.live.apply_nb(current);
        };
        let changed_filter = self.next_filter.take();
        let filter = changed_filter.clone().unwrap_or(old);
        let mut current: BTreeMap<(&str, Uuid), Option<&Row>> = BTreeMap::new();
        for (table, uuid) in touched {
            let row = rows.get(table, *uuid).map(|r| &**r);
            let kept = row.filter(|r| filter.keeps(table, *uuid, r));
            let filtered = NbRowFilter::filters(table);
            if kept.is_none() && filtered && !self.live.holds_nb_row(table, *uuid) {
                continue;
            }
            current.insert((&**table, *uuid), kept);
        }
        if changed_filter.is_some() {
            for table in NbRowFilter::TABLES {
                for (uuid, row) in rows.table(table) {
                    let keeps = filter.keeps(table, *uuid, row);
                    if keeps != self.live.holds_nb_row(table, *uuid) {
                        current
                            .entry((table, *uuid))
                            .or_insert(keeps.then_some(&**row));
                    }
                }
            }
            self.filter = Some(filter);
        }
        self.live
            .apply_nb(current.into_iter().map(|((t, u), r)| (t, u, r)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use obgp_ovsdb::cache::{cache, CachePublisher};
    use obgp_ovsdb_data::wire::TableUpdates;
    use obgp_ovsdb_data::DatabaseSchema;
    use serde_json::json;

    fn schema(file: &str) -> Arc<DatabaseSchema> {
        let path = format!(
            "{}/../../fixtures/schemas/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        Arc::new(DatabaseSchema::from_file(&path).unwrap())
    }

    fn nb_cache(capacity: usize) -> (CachePublisher, CacheReader) {
        let empty = obgp_ovsdb_data::DbSnapshot::empty(
            schema("ovn-nb.ovsschema"),
            ["Logical_Switch", "Logical_Switch_Port"],
        );
        cache(empty, capacity)
    }

    fn ovs_cache() -> (CachePublisher, CacheReader) {
        cache(
            obgp_ovsdb_data::DbSnapshot::empty(schema("vswitch.ovsschema"), ["Open_vSwitch"]),
            16,
        )
    }

    fn lsp_uuid(i: u32) -> String {
        format!("22222222-0000-4000-8000-{i:012}")
    }

    /// Publishes one batch the way the client's monitor task does.
    fn publish(p: &CachePublisher, updates: serde_json::Value) {
        let updates: TableUpdates = serde_json::from_value(updates).unwrap();
        let (next, changes) = p.current().apply(updates).unwrap();
        p.publish(next, changes);
    }

    fn insert_port(p: &CachePublisher, i: u32, up: bool) {
        publish(
            p,
            json!({"Logical_Switch_Port": {lsp_uuid(i): {"insert": {
                "name": format!("vm{i}"), "up": up,
                "options": ["map", [["requested-chassis", "c1"]]]}}}}),
        );
    }

    fn fresh(c: &Caught) -> Snapshot {
        Snapshot::build(&c.raw_ovn, &c.raw_ovs)
    }

    #[test]
    fn changes_after_the_first_build_are_patched_in_and_equal_a_fresh_build() {
        let (nb_pub, nb) = nb_cache(64);
        let (_ovs_pub, ovs) = ovs_cache();
        insert_port(&nb_pub, 1, true);
        let mut m = SnapshotFollower::new(&nb, &ovs, Driver::NbOvnBgpDriver, false);
        let first = m.catch_up(&nb, &ovs);
        assert_eq!(first.snapshot.active_vifs_on_chassis("c1").count(), 1);

        insert_port(&nb_pub, 2, true);
        publish(
            &nb_pub,
            json!({"Logical_Switch_Port": {lsp_uuid(1): {"modify": {"up": false}}}}),
        );
        let next = m.catch_up(&nb, &ovs);
        let vifs: Vec<_> = next
            .snapshot
            .active_vifs_on_chassis("c1")
            .map(|p| p.name.clone())
            .collect();
        assert_eq!(vifs, ["vm2"]);
        assert!(next.snapshot == fresh(&next));
        // The snapshot handed out before is unchanged.
        assert_eq!(first.snapshot.active_vifs_on_chassis("c1").count(), 1);
    }

    #[test]
    fn a_lagged_receiver_rebuilds_from_the_cache_and_loses_nothing() {
        let (nb_pub, nb) = nb_cache(2);
        let (_ovs_pub, ovs) = ovs_cache();
        let mut m = SnapshotFollower::new(&nb, &ovs, Driver::NbOvnBgpDriver, false);
        m.catch_up(&nb, &ovs);
        // Five batches into a two-change buffer: three are dropped.
        for i in 0..5 {
            insert_port(&nb_pub, i, true);
        }
        let caught = m.catch_up(&nb, &ovs);
        assert_eq!(caught.snapshot.active_vifs_on_chassis("c1").count(), 5);
        assert!(caught.snapshot == fresh(&caught));
        // Back to patching afterwards.
        publish(
            &nb_pub,
            json!({"Logical_Switch_Port": {lsp_uuid(0): {"delete": null}}}),
        );
        let caught = m.catch_up(&nb, &ovs);
        assert_eq!(caught.snapshot.active_vifs_on_chassis("c1").count(), 4);
        assert!(caught.snapshot == fresh(&caught));
    }

    #[test]
    fn a_resync_rebuilds_even_when_its_changes_were_drained() {
        let (nb_pub, nb) = nb_cache(64);
        let (_ovs_pub, ovs) = ovs_cache();
        insert_port(&nb_pub, 1, true);
        let mut m = SnapshotFollower::new(&nb, &ovs, Driver::NbOvnBgpDriver, false);
        m.catch_up(&nb, &ovs);
        // A reconnect's dump replaces the rows (here: without sending the
        // difference, the worst case) and bumps the generation.
        let dump: TableUpdates = serde_json::from_value(json!({"Logical_Switch_Port": {
            lsp_uuid(7): {"initial": {"name": "vm7", "up": true,
                "options": ["map", [["requested-chassis", "c1"]]]}}}}))
        .unwrap();
        let empty = obgp_ovsdb_data::DbSnapshot::empty(
            schema("ovn-nb.ovsschema"),
            ["Logical_Switch", "Logical_Switch_Port"],
        );
        let (next, _) = nb_pub.current().replace(empty, dump).unwrap();
        nb_pub.publish(next, Vec::new());
        nb_pub.resynced();
        let caught = m.catch_up(&nb, &ovs);
        let vifs: Vec<_> = caught
            .snapshot
            .active_vifs_on_chassis("c1")
            .map(|p| p.name.clone())
            .collect();
        assert_eq!(vifs, ["vm7"]);
        assert!(caught.snapshot == fresh(&caught));
    }

    #[test]
    fn a_change_received_twice_is_harmless() {
        let (nb_pub, nb) = nb_cache(64);
        let (_ovs_pub, ovs) = ovs_cache();
        let mut m = SnapshotFollower::new(&nb, &ovs, Driver::NbOvnBgpDriver, false);
        m.catch_up(&nb, &ovs);
        insert_port(&nb_pub, 1, true);
        publish(
            &nb_pub,
            json!({"Logical_Switch_Port": {lsp_uuid(1): {"modify": {"up": false}}}}),
        );
        // The insert's change is re-sent after the update (as a resumed
        // monitor may): the row's latest content wins, not the insert's.
        let stale = Change {
            table: Arc::from("Logical_Switch_Port"),
            uuid: Uuid::parse(&lsp_uuid(1)).unwrap(),
            kind: obgp_ovsdb_data::ChangeKind::Insert,
            new: None,
            old: None,
        };
        nb_pub.publish(nb_pub.current(), vec![stale]);
        let caught = m.catch_up(&nb, &ovs);
        assert_eq!(caught.snapshot.active_vifs_on_chassis("c1").count(), 0);
        assert!(caught.snapshot.lsp("vm1").is_some());
        assert!(caught.snapshot == fresh(&caught));
    }

    #[test]
    fn a_batch_published_during_a_catch_up_is_patched_in_whole_or_not_at_all() {
        let (nb_pub, nb) = nb_cache(1 << 16);
        let (_ovs_pub, ovs) = ovs_cache();
        let mut m = SnapshotFollower::new(&nb, &ovs, Driver::NbOvnBgpDriver, false);
        m.catch_up(&nb, &ovs);
        // Each batch binds a port and unbinds the previous one (two changes):
        // a catch-up between its snapshot and its last change, were it not
        // excluded, would patch in half of it while handing out the raw
        // snapshot with all of it.
        const BATCHES: u32 = 5000;
        let writer = std::thread::spawn(move || {
            insert_port(&nb_pub, 0, true);
            for i in 1..BATCHES {
                publish(
                    &nb_pub,
                    json!({"Logical_Switch_Port": {
                        lsp_uuid(i): {"insert": {"name": format!("vm{i}"), "up": true,
                            "options": ["map", [["requested-chassis", "c1"]]]}},
                        lsp_uuid(i - 1): {"modify": {"up": false}}}}),
                );
            }
        });
        let mut reads = 0;
        while !writer.is_finished() {
            let caught = m.catch_up(&nb, &ovs);
            assert!(
                caught.snapshot == fresh(&caught),
                "catch-up {reads}: the maintained snapshot differs from the raw one's build"
            );
            assert!(caught.snapshot.active_vifs_on_chassis("c1").count() <= 1);
            reads += 1;
        }
        writer.join().unwrap();
        let caught = m.catch_up(&nb, &ovs);
        assert!(caught.snapshot == fresh(&caught));
        let vifs: Vec<_> = caught
            .snapshot
            .active_vifs_on_chassis("c1")
            .map(|p| p.name.clone())
            .collect();
        assert_eq!(vifs, [format!("vm{}", BATCHES - 1)]);
    }

    fn insert_port_on(p: &CachePublisher, i: u32, chassis: &str) {
        publish(
            p,
            json!({"Logical_Switch_Port": {lsp_uuid(i): {"insert": {
                "name": format!("vm{i}"), "up": true,
                "options": ["map", [["requested-chassis", chassis]]]}}}}),
        );
    }

    /// The filter of a node named `chassis` (its binding clauses, the
    /// localnet and router clauses).
    fn filter_of(chassis: &str) -> NbRowFilter {
        NbRowFilter::of(&obgp_ovn::LspInterest {
            chassis: Some(chassis.into()),
            ..obgp_ovn::LspInterest::default()
        })
    }

    /// The build of the ports of `c.raw_ovn` a conditional monitor for
    /// `chassis` would hold, selected here by name, not by the filter.
    fn fresh_on(c: &Caught, wanted: &[&str]) -> Snapshot {
        let mut tables = obgp_ovn::Tables::new();
        for table in c.raw_ovn.tables() {
            let rows = c.raw_ovn.table(table).iter().filter(|(_, r)| {
                table != "Logical_Switch_Port" || wanted.contains(&r.str("name").unwrap_or(""))
            });
            tables.insert(
                table.to_string(),
                rows.map(|(u, r)| (*u, (**r).clone())).collect(),
            );
        }
        Snapshot::build(&tables, &c.raw_ovs)
    }

    fn port_names(s: &Snapshot) -> Vec<String> {
        let mut names: Vec<String> = ["vm1", "vm2", "vm3", "ln"]
            .into_iter()
            .filter(|n| s.lsp(n).is_some())
            .map(str::to_string)
            .collect();
        names.sort();
        names
    }

    fn changed_ports(changes: NbChanges) -> BTreeSet<Uuid> {
        match changes {
            NbChanges::Ports(p) => p.iter().map(|c| c.uuid).collect(),
            NbChanges::Full => panic!("expected port changes, got Full"),
        }
    }

    #[test]
    fn a_local_filter_keeps_the_selected_ports_and_a_new_filter_moves_exactly_the_changed_ones() {
        let (nb_pub, nb) = nb_cache(64);
        let (_ovs_pub, ovs) = ovs_cache();
        insert_port_on(&nb_pub, 1, "c1");
        insert_port_on(&nb_pub, 2, "c2");
        insert_port_on(&nb_pub, 3, "c3");
        publish(
            &nb_pub,
            json!({"Logical_Switch_Port": {lsp_uuid(9): {"insert": {
                "name": "ln", "type": "localnet"}}}}),
        );
        let mut m = SnapshotFollower::new(&nb, &ovs, Driver::NbOvnBgpDriver, false)
            .with_local_filter(filter_of("c1"));
        let first = m.catch_up(&nb, &ovs);
        assert_eq!(first.raw_ovn.table("Logical_Switch_Port").len(), 4);
        assert_eq!(port_names(&first.snapshot), ["ln", "vm1"]);
        assert!(first.snapshot == fresh_on(&first, &["vm1", "ln"]));
        assert_eq!(first.filter.as_deref(), Some(&filter_of("c1")));
        m.take_changes();

        // Another node's port changing is no change here.
        publish(
            &nb_pub,
            json!({"Logical_Switch_Port": {lsp_uuid(3): {"modify": {"up": false}}}}),
        );
        let next = m.catch_up(&nb, &ovs);
        assert!(changed_ports(m.take_changes()).is_empty());
        assert!(next.snapshot == fresh_on(&next, &["vm1", "ln"]));

        // The node now answers to c2: vm1 leaves, vm2 joins, nothing else
        // is touched (vm3 and the localnet stay as they were).
        m.set_local_filter(filter_of("c2"));
        let moved = m.catch_up(&nb, &ovs);
        assert_eq!(port_names(&moved.snapshot), ["ln", "vm2"]);
        assert!(moved.snapshot == fresh_on(&moved, &["vm2", "ln"]));
        let uuid = |i| Uuid::parse(&lsp_uuid(i)).unwrap();
        assert_eq!(
            changed_ports(m.take_changes()),
            BTreeSet::from([uuid(1), uuid(2)])
        );

        // A port bound here later is patched in through the filter; one
        // leaving this node is patched out.
        insert_port_on(&nb_pub, 4, "c2");
        publish(
            &nb_pub,
            json!({"Logical_Switch_Port": {lsp_uuid(2): {"modify": {
                "options": ["map", [["requested-chassis", "c3"]]]}}}}),
        );
        let later = m.catch_up(&nb, &ovs);
        assert!(later.snapshot.lsp("vm4").is_some());
        assert!(later.snapshot.lsp("vm2").is_none());
        assert!(later.snapshot == fresh_on(&later, &["vm4", "ln"]));
        assert_eq!(
            changed_ports(m.take_changes()),
            BTreeSet::from([uuid(2), uuid(4)])
        );
    }

    #[test]
    fn a_rebuild_reads_through_the_local_filter_set_before_it() {
        let (nb_pub, nb) = nb_cache(2);
        let (_ovs_pub, ovs) = ovs_cache();
        let mut m = SnapshotFollower::new(&nb, &ovs, Driver::NbOvnBgpDriver, false)
            .with_local_filter(filter_of("c1"));
        m.catch_up(&nb, &ovs);
        m.set_local_filter(filter_of("c2"));
        // Five batches into a two-change buffer: the catch-up rebuilds.
        for i in 0..5 {
            insert_port_on(&nb_pub, i, if i % 2 == 0 { "c1" } else { "c2" });
        }
        let caught = m.catch_up(&nb, &ovs);
        assert_eq!(port_names(&caught.snapshot), ["vm1", "vm3"]);
        assert!(caught.snapshot == fresh_on(&caught, &["vm1", "vm3"]));
        assert_eq!(caught.filter.as_deref(), Some(&filter_of("c2")));
    }
}
