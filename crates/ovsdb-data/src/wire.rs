//! Decodes the server's update messages straight from the bytes of a frame,
//! schema-less; the schema then checks them in [`crate::snapshot`].
//!
//! One concern a module:
//! - `projection`: which keys of which map columns are kept
//!   ([`KeyProjection`]), handed down as a serde seed;
//! - `intern`: equal strings of a message share one allocation;
//! - `visitors`: the serde visitors, from an atom up to a monitor result;
//! - `streamed` (with its `reply_framer`) and `row_scan`: a large reply
//!   decoded while it arrives, its rows cut out by the shared JSON scanner
//!   ([`crate::json_scan`]) and decoded on several threads;
//! - `error`: [`DecodeError`].

mod error;
mod intern;
mod projection;
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
    /// Row updates left out because they are not OVSDB notation (an
    /// invalid atom, a key that is not a UUID, an unknown operation).
    pub skipped: Vec<RowFault>,
}

impl TableUpdate {
    /// The updates `rows` of `table`, none skipped.
    pub fn new(table: impl Into<String>, rows: Vec<RowUpdate>) -> TableUpdate {
        TableUpdate {
            table: table.into(),
            rows,
            skipped: Vec::new(),
        }
    }
}

/// A row update that was left out: well-formed JSON, but not a valid row
/// (bad notation, or a value that does not fit the schema). The rest of
/// its message is still used; only JSON that does not parse, or a message
/// of the wrong shape above the rows, fails the whole message.
#[derive(Clone, Debug, PartialEq)]
pub struct RowFault {
    /// The table of the row.
    pub table: String,
    /// The row, when the server keyed it with a valid UUID.
    pub uuid: Option<Uuid>,
    /// What is wrong, naming the column (or the key that is not a UUID).
    pub reason: String,
}

impl RowFault {
    /// The fault of row `uuid` of `table` whose decoding failed with `e`
    /// (whose message already names the row: not repeated).
    pub(crate) fn of_row(table: &str, uuid: Uuid, e: &serde_json::Error) -> RowFault {
        let message = e.to_string();
        let named = format!("row {uuid}: ");
        RowFault {
            table: table.to_string(),
            uuid: Some(uuid),
            reason: message
                .strip_prefix(&named)
                .map_or_else(|| message.clone(), str::to_string),
        }
    }
}

impl std::fmt::Display for RowFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.uuid {
            Some(uuid) => write!(f, "{} row {uuid}: {}", self.table, self.reason),
            None => write!(f, "{}: {}", self.table, self.reason),
        }
    }
}

/// Whether `e`, from decoding the text `json` of one row, is a fault of
/// that row (JSON that parses but is not a valid row update) rather than of
/// the JSON itself (syntax, end of input), which fails the whole message.
/// The visitors wrap nested errors to name the row and column, which hides
/// serde's category: a data error is checked by parsing the text again
/// (only on this error path).
pub(crate) fn is_row_fault(json: &[u8], e: &serde_json::Error) -> bool {
    // A bad row is well-formed JSON with the wrong shape. Checked by
    // decoding it whole (only on this path, so rarely): `IgnoredAny` would
    // skip strings without checking their UTF-8 or their `\u` escapes (a
    // lone surrogate), which are a corrupt message, never a bad row.
    e.classify() == serde_json::error::Category::Data
        && serde_json::from_slice::<serde_json::Value>(json).is_ok()
}

/// The `table-updates2` object of an update notification or monitor reply.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableUpdates(pub Vec<TableUpdate>);

impl TableUpdates {
    /// Number of row updates in all tables.
    pub fn row_count(&self) -> usize {
        self.0.iter().map(|t| t.rows.len()).sum()
    }

    /// The row updates left out while decoding, in message order.
    pub fn skipped(&self) -> impl Iterator<Item = &RowFault> {
        self.0.iter().flat_map(|t| &t.skipped)
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
