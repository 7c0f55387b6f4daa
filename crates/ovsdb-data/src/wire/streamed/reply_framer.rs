//! The framing half of the streamed reply decoder: walks the envelope of a
//! monitor reply or of an `update2`/`update3` notification as its bytes
//! arrive, decodes the small members (`id`, `error`, `method`,
//! `monitor_cond_since`'s flags, the monitor id and transaction id of an
//! update) and cuts the rows of its `result` or `params` out for the
//! decoding threads ([`super`]). Where a value ends is the shared
//! [`ValueScanner`]'s rule, the one the client's framing uses. One value
//! (a row, an `id`) is held whole while it arrives, up to `max_value` bytes.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use serde::de::{DeserializeSeed, IgnoredAny};

use super::{RowPool, StreamOptions};
use crate::json_scan::{ScanEnd, ValueScanner};
use crate::wire::error::DecodeError;
use crate::wire::projection::KeyProjection;
use crate::wire::visitors::{from_bytes, plain};

/// The bytes of one reply message as they arrive: `next` returns the next
/// chunk, `None` at the end of the message. Decoded bytes are dropped
/// from the front as the walk goes on.
pub(super) struct ChunkedMessage<F> {
    next: F,
    buf: Vec<u8>,
    pos: usize,
    done: bool,
    max_value: usize,
}

/// Bytes already decoded are dropped from the front once this many pile up.
const COMPACT_ABOVE: usize = 1 << 20;

impl<F: FnMut() -> Option<bytes::Bytes>> ChunkedMessage<F> {
    /// Appends the next chunk; false at the end of the message.
    fn more(&mut self) -> bool {
        if self.done {
            return false;
        }
        match (self.next)() {
            Some(chunk) => {
                self.buf.extend_from_slice(&chunk);
                true
            }
            None => {
                self.done = true;
                false
            }
        }
    }

    fn truncated(&self) -> DecodeError {
        DecodeError::Truncated {
            len: self.buf.len(),
        }
    }

    /// The next byte that is not whitespace (not consumed).
    fn peek(&mut self) -> Result<u8, DecodeError> {
        loop {
            while let Some(&b) = self.buf.get(self.pos) {
                if !matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
                    return Ok(b);
                }
                self.pos += 1;
            }
            if !self.more() {
                return Err(self.truncated());
            }
        }
    }

    fn expect(&mut self, want: u8) -> Result<(), DecodeError> {
        let got = self.peek()?;
        if got != want {
            return Err(DecodeError::Unexpected {
                expected: format!("{:?}", want as char),
                found: got as char,
                offset: self.pos,
            });
        }
        self.pos += 1;
        Ok(())
    }

    /// `,` (true) or the closing `close` (false) after an element.
    fn next_or_end(&mut self, close: u8) -> Result<bool, DecodeError> {
        match self.peek()? {
            b',' => {
                self.pos += 1;
                Ok(true)
            }
            b if b == close => {
                self.pos += 1;
                Ok(false)
            }
            b => Err(DecodeError::Unexpected {
                expected: format!("',' or {:?}", close as char),
                found: b as char,
                offset: self.pos,
            }),
        }
    }

    /// The bytes of the next complete JSON value (its structure only;
    /// serde checks the rest), consumed.
    fn value(&mut self) -> Result<Range<usize>, DecodeError> {
        self.peek()?;
        let start = self.pos;
        let mut scanner = ValueScanner::default();
        let mut from = start;
        loop {
            if let ScanEnd::Complete(end) = scanner.scan(&self.buf, from) {
                self.pos = end;
                return Ok(start..end);
            }
            from = self.buf.len();
            if from - start > self.max_value {
                return Err(DecodeError::ValueTooLarge {
                    limit: self.max_value,
                    offset: start,
                });
            }
            if !self.more() {
                if scanner.ends_with_input() && from > start {
                    self.pos = from;
                    return Ok(start..from);
                }
                return Err(self.truncated());
            }
        }
    }

    /// The next value, decoded as `T` with `seed`.
    fn decode<T>(
        &mut self,
        seed: impl for<'a> DeserializeSeed<'a, Value = T>,
    ) -> Result<T, DecodeError> {
        let range = self.value()?;
        Ok(from_bytes(&self.buf[range], seed)?)
    }

    /// Drops the decoded bytes from the front of the buffer.
    fn compact(&mut self) {
        if self.pos > COMPACT_ABOVE {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
    }
}

/// The tables of a `table-updates2` object and the batches holding their
/// rows, in order.
pub(super) type PendingTables = Vec<(String, Range<usize>)>;

/// A monitor result whose rows are still being decoded.
pub(super) enum PendingResult {
    Updates(PendingTables),
    Since(bool, String, PendingTables),
}

/// The `params` of an update notification whose rows are still being
/// decoded.
pub(super) struct PendingUpdate {
    pub(super) monitor_id: serde_json::Value,
    pub(super) last_txn_id: Option<String>,
    pub(super) tables: PendingTables,
}

/// A message as framed: `id`, `error` and `method` decoded, the rows queued.
pub(super) struct FramedReply {
    pub(super) id: serde_json::Value,
    pub(super) error: serde_json::Value,
    pub(super) result: Option<PendingResult>,
    pub(super) method: Option<String>,
    pub(super) params: Option<PendingUpdate>,
}

/// Sets the projection the decoding threads apply to this message's rows;
/// a message has rows in one member only.
fn choose(chosen: &OnceLock<KeyProjection>, projection: KeyProjection) -> Result<(), DecodeError> {
    chosen
        .set(projection)
        .map_err(|_| DecodeError::TwoRowMembers)
}

/// Walks the message's envelope, decoding its small members and queueing
/// the rows of its `result` or `params` on `pool`, after choosing their
/// projection in `chosen` from `options`.
pub(super) fn frame_reply(
    pool: &mut RowPool<'_>,
    options: &StreamOptions<'_>,
    chosen: &OnceLock<KeyProjection>,
    next_chunk: impl FnMut() -> Option<bytes::Bytes>,
) -> Result<FramedReply, DecodeError> {
    let mut feed = ChunkedMessage {
        next: next_chunk,
        buf: Vec::new(),
        pos: 0,
        done: false,
        max_value: options.max_value,
    };
    let mut reply = FramedReply {
        id: serde_json::Value::Null,
        error: serde_json::Value::Null,
        result: None,
        method: None,
        params: None,
    };
    feed.expect(b'{')?;
    if feed.peek()? != b'}' {
        loop {
            let member: String = feed.decode(plain())?;
            feed.expect(b':')?;
            match member.as_str() {
                "id" => reply.id = feed.decode(plain())?,
                "error" => reply.error = feed.decode(plain())?,
                "method" => reply.method = feed.decode(plain())?,
                "params" => reply.params = update_params(&mut feed, pool, options, chosen)?,
                "result" => {
                    reply.result = match feed.peek()? {
                        b'{' => {
                            choose(chosen, options.reply.clone())?;
                            Some(PendingResult::Updates(table_updates(&mut feed, pool)?))
                        }
                        b'[' => {
                            choose(chosen, options.reply.clone())?;
                            feed.expect(b'[')?;
                            let found: bool = feed.decode(plain())?;
                            feed.expect(b',')?;
                            let last: String = feed.decode(plain())?;
                            feed.expect(b',')?;
                            let updates = table_updates(&mut feed, pool)?;
                            feed.expect(b']')?;
                            Some(PendingResult::Since(found, last, updates))
                        }
                        _ => {
                            let _: IgnoredAny = feed.decode(plain())?;
                            None
                        }
                    }
                }
                _ => {
                    let _: IgnoredAny = feed.decode(plain())?;
                }
            }
            if !feed.next_or_end(b'}')? {
                break;
            }
        }
    } else {
        feed.pos += 1;
    }
    // Nothing but whitespace may follow.
    loop {
        if feed.buf[feed.pos..]
            .iter()
            .any(|b| !b.is_ascii_whitespace())
        {
            return Err(DecodeError::TrailingBytes { offset: feed.pos });
        }
        feed.pos = feed.buf.len();
        if !feed.more() {
            return Ok(reply);
        }
    }
}

/// The `params` of `update2` (`[monitor-id, table-updates2]`) or `update3`
/// (`[monitor-id, last-txn-id, table-updates2]`), told apart by their
/// second element (the member order of the envelope is the server's, so
/// `method` may come after them); the rows are projected as the monitor's.
/// Anything else is `None` (skipped; the session refuses a large
/// notification it cannot use).
fn update_params<F: FnMut() -> Option<bytes::Bytes>>(
    feed: &mut ChunkedMessage<F>,
    pool: &mut RowPool<'_>,
    options: &StreamOptions<'_>,
    chosen: &OnceLock<KeyProjection>,
) -> Result<Option<PendingUpdate>, DecodeError> {
    if feed.peek()? != b'[' {
        let _: IgnoredAny = feed.decode(plain())?;
        return Ok(None);
    }
    feed.expect(b'[')?;
    let monitor_id: serde_json::Value = feed.decode(plain())?;
    feed.expect(b',')?;
    let last_txn_id = match feed.peek()? {
        b'"' => {
            let id: String = feed.decode(plain())?;
            feed.expect(b',')?;
            Some(id)
        }
        _ => None,
    };
    let projection = options
        .monitors
        .iter()
        .find(|(id, _)| *id == monitor_id)
        .map(|(_, p)| p.clone())
        .unwrap_or_default();
    choose(chosen, projection)?;
    let tables = table_updates(feed, pool)?;
    feed.expect(b']')?;
    Ok(Some(PendingUpdate {
        monitor_id,
        last_txn_id,
        tables,
    }))
}

/// A `table-updates2` object, framed row by row; the rows go to `pool`.
fn table_updates<F: FnMut() -> Option<bytes::Bytes>>(
    feed: &mut ChunkedMessage<F>,
    pool: &mut RowPool<'_>,
) -> Result<PendingTables, DecodeError> {
    let mut tables = Vec::new();
    feed.expect(b'{')?;
    if feed.peek()? == b'}' {
        feed.pos += 1;
        return Ok(tables);
    }
    loop {
        let table: String = feed.decode(plain())?;
        feed.expect(b':')?;
        let shared: Arc<str> = Arc::from(table.as_str());
        let first = pool.next_seq();
        feed.expect(b'{')?;
        if feed.peek()? == b'}' {
            feed.pos += 1;
        } else {
            loop {
                let key = feed.value()?;
                feed.expect(b':')?;
                let value = feed.value()?;
                pool.push(&shared, &feed.buf[key], &feed.buf[value])?;
                feed.compact();
                if !feed.next_or_end(b'}')? {
                    break;
                }
            }
        }
        // A batch holds one table's rows.
        pool.flush()?;
        tables.push((table, first..pool.next_seq()));
        if !feed.next_or_end(b'}')? {
            return Ok(tables);
        }
    }
}
