//! Why an update message could not be decoded.

use std::sync::Arc;

/// A message that is not a well-formed OVSDB update or monitor reply, or a
/// streamed decode that could not run. The messages of a bad row name its
/// table, row UUID and column.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The JSON is malformed or not shaped as an OVSDB message (serde's
    /// message names the table, row and column where there are some).
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A row of a streamed reply's table did not decode.
    #[error("table {table}: {source}")]
    Row {
        /// The table of the row.
        table: Arc<str>,
        /// The decoder's message, naming the row and column.
        #[source]
        source: serde_json::Error,
    },
    /// The message ended inside a value.
    #[error("message ends after {len} bytes")]
    Truncated {
        /// Bytes of the message received.
        len: usize,
    },
    /// A byte other than what the reply's structure needs here.
    #[error("expected {expected}, found {found:?} at byte {offset}")]
    Unexpected {
        /// What the structure needs (e.g. `'{'`, `',' or '}'`).
        expected: String,
        /// The byte found, as a character.
        found: char,
        /// Its offset in the bytes held.
        offset: usize,
    },
    /// Something other than whitespace follows the message.
    #[error("trailing bytes after the message at byte {offset}")]
    TrailingBytes {
        /// Offset of the first such byte in the bytes held.
        offset: usize,
    },
    /// Not even one decoding thread could be started.
    #[error("cannot start a decoding thread: {0}")]
    Spawn(#[source] std::io::Error),
    /// A decoding thread panicked.
    #[error("a decoding thread panicked")]
    DecoderPanicked,
    /// A framed batch of rows came back from no decoding thread.
    #[error("table {table}: batch {batch} of rows was never decoded")]
    LostBatch {
        /// The table of the batch.
        table: String,
        /// The batch's order in the message.
        batch: usize,
    },
    /// The framer stopped because a decoding thread failed (the streamed
    /// decoder reports that thread's error instead).
    #[error("a row failed to decode")]
    RowFailed,
    /// One value of a message decoded while it arrives (a row, an `id`) is
    /// longer than the bound on what is held whole.
    #[error("a value of more than {limit} bytes at byte {offset} (max_message: one value is held whole)")]
    ValueTooLarge {
        /// The bound in bytes.
        limit: usize,
        /// Where the value starts in the bytes held.
        offset: usize,
    },
    /// The rows of a message decoded while it arrives take more than the
    /// bound (an estimate, [`super::streamed::row_estimate`]).
    #[error("the decoded rows of the message take more than {limit} bytes (max_decoded)")]
    DecodedTooLarge {
        /// The bound in bytes.
        limit: usize,
    },
    /// A message with rows in both `result` and `params`.
    #[error("a message with both a result and params")]
    TwoRowMembers,
    /// The decoding threads stopped taking batches.
    #[error("the decoding threads stopped")]
    DecodersStopped,
}
