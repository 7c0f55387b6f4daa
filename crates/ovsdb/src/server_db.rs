//! Whether a server's copy of our database may be used, read from its
//! `_Server.Database` row, with the rules of OVS's C IDL (`lib/ovsdb-cs.c`):
//! a clustered member must be connected to its cluster, must not be behind
//! what the client already saw from the cluster, and in leader-only mode
//! must lead it; a relay must be connected to its source.

use obgp_ovsdb_data::{Row, Uuid};

/// The columns of `_Server.Database` the check reads.
pub(crate) const COLUMNS: [&str; 6] = ["name", "model", "connected", "leader", "index", "cid"];

/// What `_Server.Database` says about one database on one server.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DatabaseStatus {
    /// `standalone`, `clustered`, `relay` (empty if the server has none).
    pub model: String,
    /// Connected to its cluster (or relay source).
    pub connected: bool,
    /// This member leads the cluster.
    pub leader: bool,
    /// The index of the last RAFT log entry this member applied.
    pub index: Option<u64>,
    /// The cluster's id.
    pub cid: Option<Uuid>,
}

impl DatabaseStatus {
    /// Reads the row as the cache holds it: a column it lacks has its
    /// default value (`false`, `0`), since servers leave default values out
    /// of `initial` and `insert` rows, so a disconnected member's initial
    /// row has no `connected` at all.
    pub(crate) fn from_row(row: &Row) -> DatabaseStatus {
        DatabaseStatus {
            model: row.str("model").unwrap_or_default().to_string(),
            connected: row.bool("connected").unwrap_or(false),
            leader: row.bool("leader").unwrap_or(false),
            index: row.int("index").and_then(|i| u64::try_from(i).ok()),
            cid: row.uuid("cid"),
        }
    }
}

/// The newest RAFT index the client has seen from a cluster, kept across
/// sessions: a member behind it would take the cache back in time.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct SeenIndex {
    cid: Option<Uuid>,
    index: u64,
}

/// Why a server's copy of the database is left for another member.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unusable {
    #[error("clustered database server is disconnected from its cluster")]
    Disconnected,
    #[error("clustered database server is not the cluster leader")]
    NotLeader,
    #[error("clustered database server has stale data (index {index}, already seen {seen})")]
    Stale { index: u64, seen: u64 },
    #[error("relay database server is disconnected from its relay source")]
    RelayDisconnected,
    #[error("relay database server cannot be the cluster leader")]
    RelayNotLeader,
}

/// Whether `status` may be used; on success records its index in `seen`.
///
/// Unlike the C IDL, which keeps its minimum index until the application
/// resets it (`ovsdb_idl_reset_min_index`), a member of another cluster id
/// (the cluster was rebuilt from scratch) starts the watermark over: its
/// index counts from a new log, not from ours.
pub(crate) fn check(
    status: &DatabaseStatus,
    leader_only: bool,
    seen: &mut SeenIndex,
) -> Result<(), Unusable> {
    match status.model.as_str() {
        "clustered" => {
            if !status.connected {
                return Err(Unusable::Disconnected);
            }
            if leader_only && !status.leader {
                return Err(Unusable::NotLeader);
            }
            if status.cid.is_some() && seen.cid.is_some() && status.cid != seen.cid {
                tracing::warn!(
                    seen = ?seen.cid,
                    now = ?status.cid,
                    "the database's cluster id changed (a rebuilt cluster): its index is not compared with the old cluster's"
                );
                *seen = SeenIndex::default();
            }
            let index = status.index.unwrap_or(0);
            if index < seen.index {
                return Err(Unusable::Stale {
                    index,
                    seen: seen.index,
                });
            }
            seen.index = index;
            seen.cid = status.cid.or(seen.cid);
            Ok(())
        }
        "relay" if !status.connected => Err(Unusable::RelayDisconnected),
        "relay" if leader_only => Err(Unusable::RelayNotLeader),
        // Standalone (or an old server without a model): nothing to check.
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use obgp_ovsdb_data::{Atom, Datum};

    const CID: Uuid = Uuid(0x1111_1111_1111_4111_8111_1111_1111_1111);
    const OTHER_CID: Uuid = Uuid(0x2222_2222_2222_4222_8222_2222_2222_2222);

    fn member(connected: bool, leader: bool, index: u64) -> DatabaseStatus {
        DatabaseStatus {
            model: "clustered".into(),
            connected,
            leader,
            index: Some(index),
            cid: Some(CID),
        }
    }

    #[test]
    fn absent_columns_read_as_their_defaults() {
        // An initial row of a disconnected follower: no connected, no
        // leader, as the server leaves false out.
        let row = Row {
            columns: [
                ("name", Datum::scalar(Atom::String("OVN_Northbound".into()))),
                ("model", Datum::scalar(Atom::String("clustered".into()))),
                ("index", Datum::scalar(Atom::Integer(12))),
            ]
            .into(),
        };
        let status = DatabaseStatus::from_row(&row);
        assert!(!status.connected && !status.leader);
        assert_eq!(status.index, Some(12));
        let mut seen = SeenIndex::default();
        assert_eq!(
            check(&status, false, &mut seen),
            Err(Unusable::Disconnected)
        );
    }

    #[test]
    fn a_member_that_lost_its_cluster_or_leadership_is_left() {
        let mut seen = SeenIndex::default();
        assert_eq!(
            check(&member(false, true, 5), false, &mut seen),
            Err(Unusable::Disconnected)
        );
        assert_eq!(
            check(&member(true, false, 5), true, &mut seen),
            Err(Unusable::NotLeader)
        );
        assert_eq!(check(&member(true, false, 5), false, &mut seen), Ok(()));
        assert_eq!(check(&member(true, true, 5), true, &mut seen), Ok(()));
    }

    #[test]
    fn a_member_behind_the_index_already_seen_is_stale() {
        let mut seen = SeenIndex::default();
        assert_eq!(check(&member(true, true, 40), false, &mut seen), Ok(()));
        assert_eq!(
            check(&member(true, false, 39), false, &mut seen),
            Err(Unusable::Stale {
                index: 39,
                seen: 40
            })
        );
        // Not raised by the stale one; a member that caught up is fine.
        assert_eq!(check(&member(true, false, 40), false, &mut seen), Ok(()));
        assert_eq!(check(&member(true, false, 41), false, &mut seen), Ok(()));
        assert_eq!(
            check(&member(true, false, 40), false, &mut seen),
            Err(Unusable::Stale {
                index: 40,
                seen: 41
            })
        );
        // A rebuilt cluster (new cid) starts over.
        let rebuilt = DatabaseStatus {
            cid: Some(OTHER_CID),
            ..member(true, true, 3)
        };
        assert_eq!(check(&rebuilt, false, &mut seen), Ok(()));
        assert_eq!(
            check(
                &DatabaseStatus {
                    cid: Some(OTHER_CID),
                    ..member(true, true, 2)
                },
                false,
                &mut seen
            ),
            Err(Unusable::Stale { index: 2, seen: 3 })
        );
    }

    #[test]
    fn standalone_servers_pass_and_relays_need_their_source() {
        let mut seen = SeenIndex::default();
        let standalone = DatabaseStatus {
            model: "standalone".into(),
            connected: true,
            leader: true,
            index: None,
            cid: None,
        };
        assert_eq!(check(&standalone, true, &mut seen), Ok(()));
        let relay = DatabaseStatus {
            model: "relay".into(),
            leader: false,
            ..standalone.clone()
        };
        assert_eq!(check(&relay, false, &mut seen), Ok(()));
        assert_eq!(
            check(&relay, true, &mut seen),
            Err(Unusable::RelayNotLeader)
        );
        let cut = DatabaseStatus {
            connected: false,
            ..relay
        };
        assert_eq!(
            check(&cut, false, &mut seen),
            Err(Unusable::RelayDisconnected)
        );
    }
}
