//! Decodes the server's update messages straight from the bytes of a frame,
//! schema-less; the schema then checks them in [`crate::snapshot`].
//!
//! One concern a module:
//! - `projection`: which keys of which map columns are kept
//!   ([`KeyProjection`]), handed down as a serde seed;
//! - `intern`: equal strings of a message share one allocation;
//! - `visitors`: the serde visitors, from an atom up to a monitor result;
//! - `streamed`, `reply_framer` and `row_scan`: a large reply decoded while
//!   it arrives, its rows cut out by the shared JSON scanner
//!   ([`crate::json_scan`]) and decoded on several threads;
//! - `error`: [`DecodeError`].

mod error;
mod intern;
mod projection;
mod reply_framer;
mod row_scan;
mod streamed;
mod visitors;

use serde::de::DeserializeSeed;

pub use error::DecodeError;
pub use projection::KeyProjection;
pub use streamed::{
    decode_streamed_message, decode_streamed_reply, row_estimate, StreamOptions, StreamedReply,
    StreamedUpdate, MAX_DECODERS,
};
pub use visitors::{MonitorResultSeed, TableUpdatesSeed, WireAtom, WireDatum};

use crate::datum::{Datum, Str, Uuid};

/// What a row update does (`update2`/`update3` notation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowOp {
    /// Part of the initial contents sent in reply to a monitor request.
    Initial,
    /// A row created by a transaction.
    Insert,
    /// `columns` holds diffs (see [`crate::schema::ColumnType::apply_diff`]).
    Modify,
    /// A row deleted by a transaction.
    Delete,
}

/// One row's update as received, not yet checked against the schema.
#[derive(Clone, Debug, PartialEq)]
pub struct RowUpdate {
    /// The row's UUID.
    pub uuid: Uuid,
    /// What the update does.
    pub op: RowOp,
    /// Column values (a diff for `Modify`, none for `Delete`).
    pub columns: Vec<(Str, Datum)>,
}

/// All row updates of one table in one message.
#[derive(Clone, Debug, PartialEq)]
pub struct TableUpdate {
    /// Table name.
    pub table: String,
    /// Row updates of the table.
    pub rows: Vec<RowUpdate>,
}

/// The `table-updates2` object of an update notification or monitor reply.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableUpdates(pub Vec<TableUpdate>);

impl TableUpdates {
    /// Number of row updates in all tables.
    pub fn row_count(&self) -> usize {
        self.0.iter().map(|t| t.rows.len()).sum()
    }
}

/// The `result` of a monitor request: `monitor_cond`'s table updates, or
/// `monitor_cond_since`'s `[found, last-txn-id, table-updates]`.
#[derive(Debug, PartialEq)]
pub enum MonitorResult {
    /// `monitor_cond`.
    Updates(TableUpdates),
    /// `monitor_cond_since`.
    Since(bool, String, TableUpdates),
}

/// `bytes`, a whole `table-updates2` object, decoded keeping only the map
/// keys `projection` keeps.
pub fn decode_table_updates(
    bytes: &[u8],
    projection: &KeyProjection,
) -> Result<TableUpdates, DecodeError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let updates = TableUpdatesSeed(projection).deserialize(&mut de)?;
    de.end()?;
    Ok(updates)
}
