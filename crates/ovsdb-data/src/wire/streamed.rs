//! The streamed reply decoder: a monitor reply or an update notification
//! decoded while its bytes arrive, by a framing thread
//! ([`reply_framer`]) and a few decoding threads, so that a message
//! of tens of megabytes is never held whole.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};

use super::error::DecodeError;
use super::intern::InternScope;
use super::projection::{KeyProjection, TableKeys};
use super::visitors::{from_bytes, from_text, plain, RowUpdateSeed, UuidText};
use super::{is_row_fault, MonitorResult, RowFault, RowUpdate, TableUpdate, TableUpdates};
use crate::datum::{Atom, Datum, DatumKind, Str, Uuid};
use reply_framer::{frame_reply, PendingResult, PendingTables, PendingUpdate};

/// The members of a message decoded by [`decode_streamed_message`]: a
/// reply (`id`, `error`, `result`) or a notification (`method`, `params`).
#[derive(Debug)]
pub struct StreamedReply {
    /// The reply's `id`.
    pub id: serde_json::Value,
    /// The reply's `error` (`null` on success).
    pub error: serde_json::Value,
    /// The reply's `result`, when not `null`.
    pub result: Option<MonitorResult>,
    /// A notification's `method`.
    pub method: Option<String>,
    /// A notification's `params`, when shaped as `update2`'s or `update3`'s.
    pub params: Option<StreamedUpdate>,
    /// The estimated bytes of the decoded rows (what `max_decoded` bounds).
    pub decoded_bytes: usize,
}

/// The `params` of an `update2` or `update3` notification.
#[derive(Debug, PartialEq)]
pub struct StreamedUpdate {
    /// The monitor the update belongs to.
    pub monitor_id: serde_json::Value,
    /// `update3`'s transaction id.
    pub last_txn_id: Option<String>,
    /// The row updates, projected as the monitor's.
    pub updates: TableUpdates,
}

/// How [`decode_streamed_message`] projects rows and what it holds whole.
#[derive(Clone, Copy, Debug)]
pub struct StreamOptions<'a> {
    /// The projection of a reply's `result`.
    pub reply: &'a KeyProjection,
    /// The projection of an update's rows, by monitor id (the monitors
    /// not named here are decoded whole).
    pub monitors: &'a [(serde_json::Value, KeyProjection)],
    /// Longest single value held whole while the message arrives (a row
    /// update, the `id`): a row is decoded from its whole bytes.
    pub max_value: usize,
    /// Most bytes the decoded rows may take, estimated per row
    /// ([`row_estimate`]): the wire size does not bound them (a set of
    /// small integers takes 2 bytes an atom on the wire, 24 decoded).
    pub max_decoded: usize,
}

/// The bytes a decoded row takes, estimated from its shape: the row, its
/// columns, each atom, and each string atom's bytes, counted per
/// occurrence (the decoder's interner shares equal strings, so this is an
/// upper bound; column names are always shared and not counted).
pub fn row_estimate(row: &RowUpdate) -> usize {
    fn atom(a: &Atom) -> usize {
        std::mem::size_of::<Atom>()
            + match a {
                Atom::String(s) => s.as_str().len(),
                _ => 0,
            }
    }
    let columns = row.columns.iter().map(|(_, d)| {
        std::mem::size_of::<(Str, Datum)>()
            + match d.kind() {
                DatumKind::Set(atoms) => atoms.iter().map(atom).sum::<usize>(),
                DatumKind::Map(pairs) => pairs.iter().map(|(k, v)| atom(k) + atom(v)).sum(),
            }
    });
    std::mem::size_of::<RowUpdate>() + columns.sum::<usize>()
}

/// The decoded bytes of one message, shared by its decoding threads.
struct DecodedBudget {
    used: AtomicUsize,
    limit: usize,
}

impl DecodedBudget {
    /// Counts `bytes` more; false once past the limit.
    fn charge(&self, bytes: usize) -> bool {
        self.used.fetch_add(bytes, Ordering::Relaxed) + bytes <= self.limit
    }
}

/// Decodes a reply to a monitor request from its bytes as they arrive: this
/// thread frames the row updates (brackets and strings only, the cheap
/// part) as soon as their bytes are complete and hands them in batches to
/// decoding threads, one per core (at most [`MAX_DECODERS`]), each running
/// the `from_slice` decoder of a buffered frame. Rows are reassembled in
/// the message's order, and the bytes are dropped once decoded, so the
/// message is never held whole. Interning (per decoding thread) and
/// `projection` apply as for a buffered message. Errors name
/// the table and row like the buffered decoder's; of several bad rows, the
/// first in the message is reported.
pub fn decode_streamed_reply(
    projection: &KeyProjection,
    next_chunk: impl FnMut() -> Option<bytes::Bytes>,
) -> Result<StreamedReply, DecodeError> {
    let options = StreamOptions {
        reply: projection,
        monitors: &[],
        max_value: usize::MAX,
        max_decoded: usize::MAX,
    };
    decode_streamed_message(&options, next_chunk)
}

/// As [`decode_streamed_reply`], for a reply or an `update2`/`update3`
/// notification, with the projections and the bound of `options`.
pub fn decode_streamed_message(
    options: &StreamOptions<'_>,
    next_chunk: impl FnMut() -> Option<bytes::Bytes>,
) -> Result<StreamedReply, DecodeError> {
    let decoders = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, MAX_DECODERS);
    decode_streamed_reply_on(options, decoders, BATCH_BYTES, next_chunk)
}

/// At most this many threads decode one reply's rows.
pub const MAX_DECODERS: usize = 4;

/// Rows are handed to the decoding threads in batches of about this many
/// bytes: large enough that handing over costs nothing next to decoding,
/// small enough that the batches in flight stay a few hundred KiB.
const BATCH_BYTES: usize = 64 << 10;

/// Batches waiting for a decoding thread, per thread: bounds the bytes in
/// flight when the decoders fall behind the socket.
const QUEUED_PER_DECODER: usize = 2;

/// [`decode_streamed_reply`] with `decoders` decoding threads (at least
/// one) and batches of about `batch_bytes`. Long (about 130 lines) on
/// purpose: the framing thread and the decoders live in one
/// `thread::scope`, and what they hand back is put in order right after
/// it; split, the pieces would pass the channels and pools around.
fn decode_streamed_reply_on(
    options: &StreamOptions<'_>,
    decoders: usize,
    batch_bytes: usize,
    next_chunk: impl FnMut() -> Option<bytes::Bytes>,
) -> Result<StreamedReply, DecodeError> {
    // Set by the framer before it queues the first row.
    let chosen: OnceLock<KeyProjection> = OnceLock::new();
    let projection = &chosen;
    let first_failed = AtomicUsize::new(NO_FAILURE);
    let budget = DecodedBudget {
        used: AtomicUsize::new(0),
        limit: options.max_decoded,
    };
    let (tx, rx) = mpsc::sync_channel::<RowBatch>(decoders.max(1) * QUEUED_PER_DECODER);
    let rx = Mutex::new(rx);
    let (framed, decoded) = std::thread::scope(|scope| {
        let mut workers = Vec::new();
        for i in 0..decoders.max(1) {
            let (rx, first_failed, budget) = (&rx, &first_failed, &budget);
            let spawned = std::thread::Builder::new()
                .name(format!("ovsdb-decode-{i}"))
                .spawn_scoped(scope, move || {
                    decode_batches(rx, projection, first_failed, budget)
                });
            match spawned {
                Ok(handle) => workers.push(handle),
                // Fewer decoders only cost time; none at all is an error.
                Err(e) if workers.is_empty() => return (Err(DecodeError::Spawn(e)), Vec::new()),
                Err(_) => break,
            }
        }
        let mut pool = RowPool {
            tx,
            batch_bytes,
            batch: None,
            seq: 0,
            first_failed: &first_failed,
        };
        let framed = frame_reply(&mut pool, options, &chosen, next_chunk);
        // Closing the queue lets the decoders finish what is left.
        drop(pool);
        let mut decoded: Vec<(usize, RowsResult)> = Vec::new();
        for worker in workers {
            match worker.join() {
                Ok(batches) => decoded.extend(batches),
                Err(_) => return (Err(DecodeError::DecoderPanicked), Vec::new()),
            }
        }
        (framed, decoded)
    });
    let mut batches: Vec<Option<DecodedRows>> = Vec::new();
    let mut first_error: Option<(usize, DecodeError)> = None;
    for (seq, rows) in decoded {
        match rows {
            Ok(rows) => {
                if batches.len() <= seq {
                    batches.resize_with(seq + 1, || None);
                }
                batches[seq] = Some(rows);
            }
            Err(e) => {
                if first_error.as_ref().is_none_or(|(s, _)| seq < *s) {
                    first_error = Some((seq, e));
                }
            }
        }
    }
    // A bad row comes before whatever stopped the framer.
    if let Some((_, e)) = first_error {
        return Err(e);
    }
    let framed = framed?;
    let mut take = |tables: PendingTables| -> Result<TableUpdates, DecodeError> {
        let mut out = Vec::with_capacity(tables.len());
        for (table, seqs) in tables {
            let count = seqs
                .clone()
                .map(|s| {
                    batches
                        .get(s)
                        .and_then(Option::as_ref)
                        .map_or(0, |b| b.0.len())
                })
                .sum();
            let mut rows = Vec::with_capacity(count);
            let mut skipped = Vec::new();
            for s in seqs {
                let batch = batches.get_mut(s).and_then(Option::take).ok_or_else(|| {
                    DecodeError::LostBatch {
                        table: table.clone(),
                        batch: s,
                    }
                })?;
                rows.extend(batch.0);
                skipped.extend(batch.1);
            }
            out.push(TableUpdate {
                table,
                rows,
                skipped,
            });
        }
        Ok(TableUpdates(out))
    };
    Ok(StreamedReply {
        id: framed.id,
        error: framed.error,
        result: match framed.result {
            None => None,
            Some(PendingResult::Updates(t)) => Some(MonitorResult::Updates(take(t)?)),
            Some(PendingResult::Since(found, last, t)) => {
                Some(MonitorResult::Since(found, last, take(t)?))
            }
        },
        method: framed.method,
        params: match framed.params {
            None => None,
            Some(PendingUpdate {
                monitor_id,
                last_txn_id,
                tables,
            }) => Some(StreamedUpdate {
                monitor_id,
                last_txn_id,
                updates: take(tables)?,
            }),
        },
        decoded_bytes: budget.used.load(Ordering::Relaxed),
    })
}

/// Strings a decoding thread's interning table has room for from the start:
/// a reply is only streamed when it is large (1 MiB by default), and one
/// decoding thread of the 54 MB reply at 50k ports interns ~100k distinct
/// strings. 64k entries cost ~1.1 MiB while the reply is decoded.
const STREAMED_INTERN_CAPACITY: usize = 1 << 16;

/// `first_failed` before any batch failed.
const NO_FAILURE: usize = usize::MAX;

/// The rows of one batch and those skipped (see [`RowFault`]).
type DecodedRows = (Vec<RowUpdate>, Vec<RowFault>);

/// The rows of one batch, or the error of its first row that is not
/// well-formed JSON.
type RowsResult = Result<DecodedRows, DecodeError>;

/// Row updates of one table, framed but not decoded, on their way to a
/// decoding thread: `bytes` holds each row's UUID key and value, `rows`
/// their places in it.
pub(super) struct RowBatch {
    /// Order in the message.
    seq: usize,
    table: Arc<str>,
    bytes: Vec<u8>,
    rows: Vec<(Range<usize>, Range<usize>)>,
}

impl RowBatch {
    /// Decodes the rows in order, each charged to `budget`. A row that is
    /// well-formed JSON but not a valid row update is skipped as the
    /// buffered decoder skips it; the first that is not well-formed JSON
    /// fails the batch, named by table and row.
    fn decode(&self, keys: Option<&TableKeys>, budget: &DecodedBudget) -> RowsResult {
        let table = &self.table;
        // UTF-8 is checked once for the whole batch (fast on ASCII), not
        // string by string as `from_slice` does; a batch that is not UTF-8
        // goes through `from_slice`, whose error names the bad row.
        let text = std::str::from_utf8(&self.bytes).ok();
        let mut rows = Vec::with_capacity(self.rows.len());
        let mut skipped = Vec::new();
        let failed = |source| DecodeError::Row {
            table: table.clone(),
            source,
        };
        for (key, value) in &self.rows {
            let key_text = text.and_then(|t| t.get(key.clone()));
            let uuid = match key_text.and_then(plain_uuid_key) {
                Some(uuid) => uuid,
                None => match from_bytes(&self.bytes[key.clone()], plain::<UuidText>()) {
                    Ok(uuid) => uuid.0,
                    Err(e) if is_row_fault(&self.bytes[key.clone()], &e) => {
                        // The key as the buffered decoder names it: the
                        // decoded string, Rust-escaped (not its JSON text,
                        // whose escapes differ).
                        let raw = &self.bytes[key.clone()];
                        let key = serde_json::from_slice::<String>(raw)
                            .unwrap_or_else(|_| String::from_utf8_lossy(raw).into_owned());
                        skipped.push(RowFault {
                            table: table.to_string(),
                            uuid: None,
                            reason: format!("row key {key:?} is not a UUID"),
                        });
                        continue;
                    }
                    Err(e) => return Err(failed(e)),
                },
            };
            let seed = RowUpdateSeed(uuid, keys);
            // The plain rows (nearly all) are scanned directly; the serde
            // visitors decode the others, and report the errors.
            let row = match text.and_then(|t| t.get(value.clone())) {
                Some(value) => match super::row_scan::decode_row(value, uuid, keys) {
                    Some(row) => Ok(row),
                    None => from_text(value, seed),
                },
                // Not UTF-8: checked whole first, as the buffered decoder
                // takes each row (a `RawValue`), since the visitors skip
                // the columns and map keys they do not read without
                // checking their UTF-8 (the bad bytes may sit there).
                None => {
                    let bytes = &self.bytes[value.clone()];
                    serde_json::from_slice::<Box<serde_json::value::RawValue>>(bytes)
                        .and_then(|_| from_bytes(bytes, seed))
                }
            };
            match row {
                Ok(row) => {
                    if !budget.charge(row_estimate(&row)) {
                        return Err(DecodeError::DecodedTooLarge {
                            limit: budget.limit,
                        });
                    }
                    rows.push(row)
                }
                Err(e) if is_row_fault(&self.bytes[value.clone()], &e) => {
                    skipped.push(RowFault::of_row(table, uuid, &e))
                }
                Err(e) => return Err(failed(e)),
            }
        }
        Ok((rows, skipped))
    }
}

/// The UUID of a row key written plainly (`"<36 characters>"`, no escapes),
/// or `None` for anything else, which the JSON decoder then reads (and
/// reports if bad).
fn plain_uuid_key(key: &str) -> Option<Uuid> {
    let inner = key.strip_prefix('"')?.strip_suffix('"')?;
    Uuid::parse(inner).ok()
}

/// A decoding thread: decodes batches until the queue closes, with its own
/// interning table (live until the reply is decoded). Batches after the
/// first failed one are skipped; earlier ones are still decoded, so the
/// error reported is the first in the message whatever the timing.
fn decode_batches(
    queue: &Mutex<mpsc::Receiver<RowBatch>>,
    projection: &OnceLock<KeyProjection>,
    first_failed: &AtomicUsize,
    budget: &DecodedBudget,
) -> Vec<(usize, RowsResult)> {
    let _interning = InternScope::with_capacity(STREAMED_INTERN_CAPACITY);
    let mut decoded = Vec::new();
    loop {
        // A poisoned lock only means another decoder panicked, which the
        // join reports.
        let next = match queue.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return decoded,
        };
        let Ok(batch) = next else {
            return decoded;
        };
        if batch.seq > first_failed.load(Ordering::Acquire) {
            continue;
        }
        let keys = projection.get().and_then(|p| p.table(&batch.table));
        let rows = batch.decode(keys, budget);
        if rows.is_err() {
            first_failed.fetch_min(batch.seq, Ordering::AcqRel);
        }
        decoded.push((batch.seq, rows));
    }
}

/// The framer's side of the decoding threads: fills a batch per table and
/// queues it once it holds `batch_bytes`.
pub(super) struct RowPool<'f> {
    tx: mpsc::SyncSender<RowBatch>,
    batch_bytes: usize,
    batch: Option<RowBatch>,
    /// The next batch's order in the message.
    seq: usize,
    first_failed: &'f AtomicUsize,
}

impl RowPool<'_> {
    /// Adds a row (its UUID key and value bytes) of `table`.
    pub(super) fn push(
        &mut self,
        table: &Arc<str>,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), DecodeError> {
        let batch = self.batch.get_or_insert_with(|| RowBatch {
            seq: self.seq,
            table: table.clone(),
            bytes: Vec::with_capacity(self.batch_bytes + value.len()),
            rows: Vec::new(),
        });
        let k = batch.bytes.len();
        batch.bytes.extend_from_slice(key);
        let v = batch.bytes.len();
        batch.bytes.extend_from_slice(value);
        batch.rows.push((k..v, v..batch.bytes.len()));
        if batch.bytes.len() >= self.batch_bytes {
            self.flush()?;
        }
        Ok(())
    }

    /// Queues the batch being filled, if any; fails once a decoder failed
    /// (the framer stops: its error is replaced by the decoder's).
    pub(super) fn flush(&mut self) -> Result<(), DecodeError> {
        if self.first_failed.load(Ordering::Acquire) != NO_FAILURE {
            return Err(DecodeError::RowFailed);
        }
        if let Some(batch) = self.batch.take() {
            self.seq += 1;
            self.tx
                .send(batch)
                .map_err(|_| DecodeError::DecodersStopped)?;
        }
        Ok(())
    }

    /// The order of the next batch to be queued.
    pub(super) fn next_seq(&self) -> usize {
        self.seq + usize::from(self.batch.is_some())
    }
}

mod reply_framer;
#[cfg(test)]
mod tests;
