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
//! What each update changed, as the live snapshot returns it
//! ([`NbChanges`]), accumulates here until a reconcile takes it with the
//! snapshot ([`SnapshotFollower::take_changes`]).

use std::collections::BTreeSet;
use std::sync::Arc;

use obgp_config::Driver;
use obgp_ovn::{LiveSnapshot, NbChanges, Snapshot};
use obgp_ovsdb::cache::CacheReader;
use obgp_ovsdb_data::{Change, Uuid};
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
}

/// What one catch-up hands out.
pub struct Caught {
    /// The OVN cache snapshot the maintained one was brought up to.
    pub raw_ovn: obgp_ovsdb_data::DbSnapshot,
    /// The local OVS cache snapshot likewise.
    pub raw_ovs: obgp_ovsdb_data::DbSnapshot,
    /// The indexed snapshot, consistent with every change received so far.
    pub snapshot: Snapshot,
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
        }
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
                self.changes.then(self.live.reset_nb(&rows));
                rows
            }
            CatchUp::Patch(rows, touched) => {
                let current = touched
                    .iter()
                    .map(|(t, u)| (&**t, *u, rows.get(t, *u).map(|r| &**r)));
                if sb {
                    self.live.apply_sb(current);
                } else {
                    self.changes.then(self.live.apply_nb(current));
                }
                rows
            }
        };
        Caught {
            raw_ovn,
            raw_ovs,
            snapshot: self.live.snapshot(),
        }
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
}
