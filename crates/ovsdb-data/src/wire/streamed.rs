//! The streamed reply decoder: a monitor reply or an update notification
//! decoded while its bytes arrive, by a framing thread
//! ([`super::reply_framer`]) and a few decoding threads, so that a message
//! of tens of megabytes is never held whole.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};

use super::error::DecodeError;
use super::intern::InternScope;
use super::projection::{KeyProjection, TableKeys};
use super::reply_framer::{frame_reply, PendingResult, PendingTables, PendingUpdate};
use super::visitors::{from_bytes, from_text, plain, RowUpdateSeed, UuidText};
use super::{MonitorResult, RowUpdate, TableUpdate, TableUpdates};
use crate::datum::{Atom, Datum, Str, Uuid};

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
            + match d {
                Datum::Set(atoms) => atoms.iter().map(atom).sum::<usize>(),
                Datum::Map(pairs) => pairs.iter().map(|(k, v)| atom(k) + atom(v)).sum(),
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
/// one) and batches of about `batch_bytes`.
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
    let mut batches: Vec<Option<Vec<RowUpdate>>> = Vec::new();
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
                .map(|s| batches.get(s).and_then(Option::as_ref).map_or(0, Vec::len))
                .sum();
            let mut rows = Vec::with_capacity(count);
            for s in seqs {
                let batch = batches.get_mut(s).and_then(Option::take).ok_or_else(|| {
                    DecodeError::LostBatch {
                        table: table.clone(),
                        batch: s,
                    }
                })?;
                rows.extend(batch);
            }
            out.push(TableUpdate { table, rows });
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

/// The rows of one batch, or the error of its first bad row.
type RowsResult = Result<Vec<RowUpdate>, DecodeError>;

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
    /// Decodes the rows in order; the first bad one fails the batch,
    /// named by table and row like the buffered decoder does.
    fn decode(&self, keys: Option<&TableKeys>, budget: &DecodedBudget) -> RowsResult {
        let table = &self.table;
        // UTF-8 is checked once for the whole batch (fast on ASCII), not
        // string by string as `from_slice` does; a batch that is not UTF-8
        // goes through `from_slice`, whose error names the bad row.
        let text = std::str::from_utf8(&self.bytes).ok();
        let mut rows = Vec::with_capacity(self.rows.len());
        for (key, value) in &self.rows {
            let key_text = text.and_then(|t| t.get(key.clone()));
            let uuid = match key_text.and_then(plain_uuid_key) {
                Some(uuid) => uuid,
                None => {
                    from_bytes(&self.bytes[key.clone()], plain::<UuidText>())
                        .map_err(|source| DecodeError::Row {
                            table: table.clone(),
                            source,
                        })?
                        .0
                }
            };
            let seed = RowUpdateSeed(uuid, keys);
            // The plain rows (nearly all) are scanned directly; the serde
            // visitors decode the others, and report the errors.
            let row = match text.and_then(|t| t.get(value.clone())) {
                Some(value) => match super::row_scan::decode_row(value, uuid, keys) {
                    Some(row) => Ok(row),
                    None => from_text(value, seed),
                },
                None => from_bytes(&self.bytes[value.clone()], seed),
            }
            .map_err(|source| DecodeError::Row {
                table: table.clone(),
                source,
            })?;
            if !budget.charge(row_estimate(&row)) {
                return Err(DecodeError::DecodedTooLarge {
                    limit: budget.limit,
                });
            }
            rows.push(row);
        }
        Ok(rows)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datum::{Atom, Datum};
    use crate::wire::MonitorResultSeed;
    use proptest::prelude::*;
    use serde::de::DeserializeSeed;
    use serde_json::json;

    /// A reply's options: `projection`, no monitors, no bound.
    fn opts(projection: &KeyProjection) -> StreamOptions<'_> {
        StreamOptions {
            reply: projection,
            monitors: &[],
            max_value: usize::MAX,
            max_decoded: usize::MAX,
        }
    }

    /// `text` handed out in pieces cut at `cuts`.
    fn pieces(text: &[u8], cuts: &[usize]) -> impl FnMut() -> Option<bytes::Bytes> {
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
        points.push(0);
        points.push(text.len());
        points.sort_unstable();
        let chunks: Vec<bytes::Bytes> = points
            .windows(2)
            .map(|w| bytes::Bytes::copy_from_slice(&text[w[0]..w[1]]))
            .collect();
        let mut chunks = chunks.into_iter();
        move || chunks.next()
    }

    /// Rows spread over two tables (every third in Logical_Switch, whose
    /// maps are never projected), then an empty table.
    fn rows_json(rows: &[(String, Vec<(String, String)>)]) -> serde_json::Value {
        let mut ports = serde_json::Map::new();
        let mut switches = serde_json::Map::new();
        for (i, (name, pairs)) in rows.iter().enumerate() {
            let pairs: Vec<serde_json::Value> = pairs.iter().map(|(k, v)| json!([k, v])).collect();
            let table = if i % 3 == 2 {
                &mut switches
            } else {
                &mut ports
            };
            table.insert(
                format!("{i:08x}-2222-4222-8222-222222222222"),
                json!({"initial": {"name": name, "external_ids": ["map", pairs]}}),
            );
        }
        json!({"Logical_Switch_Port": ports, "Logical_Switch": switches, "NB_Global": {}})
    }

    #[test]
    fn of_several_bad_rows_the_first_in_the_message_is_reported() {
        let rows: serde_json::Map<String, serde_json::Value> = (0..300)
            .map(|i| {
                let name = if i == 60 || i == 200 {
                    json!(["set"])
                } else {
                    json!("p")
                };
                (
                    format!("{i:08x}-2222-4222-8222-222222222222"),
                    json!({"initial": {"name": name}}),
                )
            })
            .collect();
        let text = json!({"id": 1, "result": {"Logical_Switch_Port": rows}}).to_string();
        let none = KeyProjection::default();
        // Several decoders racing over small batches, many times: the
        // timing must never change which error is reported.
        for round in 0..30 {
            let err = decode_streamed_reply_on(
                &opts(&none),
                3,
                40 + round,
                pieces(text.as_bytes(), &[777]),
            )
            .unwrap_err()
            .to_string();
            assert!(
                err.starts_with("table Logical_Switch_Port: row 0000003c-2222-4222-8222-222222222222: column name:"),
                "{err}"
            );
        }
        // The buffered decoder reports the same row.
        let buffered = serde_json::from_str::<MonitorResult>(
            &serde_json::from_str::<serde_json::Value>(&text).unwrap()["result"].to_string(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            buffered.contains("row 0000003c-2222-4222-8222-222222222222"),
            "{buffered}"
        );
    }

    #[test]
    fn decoding_threads_share_strings_within_their_batches() {
        let rows: serde_json::Map<String, serde_json::Value> = (0..4)
            .map(|i| {
                (
                    format!("{i:08x}-2222-4222-8222-222222222222"),
                    json!({"initial": {"type": "compute:nova"}}),
                )
            })
            .collect();
        let text = json!({"id": 1, "result": {"T": rows}}).to_string();
        let reply = decode_streamed_reply_on(
            &opts(&KeyProjection::default()),
            2,
            1 << 20,
            pieces(text.as_bytes(), &[50]),
        )
        .unwrap();
        let Some(MonitorResult::Updates(u)) = reply.result else {
            panic!("no updates: {:?}", reply.result);
        };
        let values: Vec<&Datum> = u.0[0].rows.iter().map(|r| &r.columns[0].1).collect();
        let (Atom::String(a), Atom::String(b)) = (&values[0].atoms()[0], &values[3].atoms()[0])
        else {
            panic!("not strings: {values:?}");
        };
        assert!(a.shares_storage_with(b), "one batch, one decoder: one copy");
    }

    #[test]
    fn a_streamed_reply_with_an_error_or_no_result_keeps_its_members() {
        let text = br#"{"error": {"error": "unknown database"}, "id": 4, "result": null}"#;
        let none = KeyProjection::default();
        let r = decode_streamed_reply(&none, pieces(text, &[3, 30])).unwrap();
        assert_eq!((r.id, r.result), (json!(4), None));
        assert_eq!(r.error, json!({"error": "unknown database"}));
        for bad in [
            &br#"{"id": 4, "result": {"T": {"not-a-uuid": {}}}}"#[..],
            br#"{"id": 4} x"#,
            br#"{"id": 4"#,
            b"[1]",
        ] {
            assert!(
                decode_streamed_reply(&none, pieces(bad, &[5])).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn an_update_notification_is_decoded_row_by_row_with_its_monitors_projection() {
        let rows = [
            (
                "p".to_string(),
                vec![("kept".into(), "1".into()), ("dropped".into(), "2".into())],
            ),
            ("q".to_string(), vec![("kept".into(), "3".into())]),
        ];
        let updates = rows_json(&rows);
        let kept = KeyProjection::default().keep("Logical_Switch_Port", "external_ids", ["kept"]);
        let want =
            crate::wire::decode_table_updates(updates.to_string().as_bytes(), &kept).unwrap();
        let monitors = [
            (json!("other"), KeyProjection::default()),
            (json!("db"), kept.clone()),
        ];
        let options = StreamOptions {
            reply: &KeyProjection::default(),
            monitors: &monitors,
            max_value: 1 << 20,
            max_decoded: usize::MAX,
        };
        // update3, params before method (the envelope's member order is
        // the server's), and update2.
        let u3 = format!(
            r#"{{"params": ["db", "7a3b8c2e-0000-4000-8000-000000000001", {updates}], "id": null, "method": "update3"}}"#
        );
        let u2 = json!({"id": null, "method": "update2", "params": ["db", updates]}).to_string();
        for (text, txn) in [
            (u3, Some("7a3b8c2e-0000-4000-8000-000000000001")),
            (u2, None),
        ] {
            let got = decode_streamed_reply_on(&options, 2, 40, pieces(text.as_bytes(), &[9, 70]))
                .unwrap();
            assert_eq!(got.id, serde_json::Value::Null);
            assert!(got.result.is_none());
            let params = got.params.expect("update params");
            assert_eq!(params.monitor_id, json!("db"));
            assert_eq!(params.last_txn_id.as_deref(), txn);
            assert_eq!(params.updates, want, "projected as monitor db's");
        }
        assert_eq!(
            decode_streamed_reply_on(
                &options,
                1,
                40,
                pieces(br#"{"method": "update2", "params": ["db", {}]}"#, &[])
            )
            .unwrap()
            .method
            .as_deref(),
            Some("update2")
        );
    }

    #[test]
    fn a_value_longer_than_max_value_is_refused_before_it_ends() {
        let big = "x".repeat(5000);
        let text = json!({"id": null, "method": "update2", "params": ["db", {"T": {
            "00000000-2222-4222-8222-222222222222": {"insert": {"name": big}}
        }}]})
        .to_string();
        let options = StreamOptions {
            reply: &KeyProjection::default(),
            monitors: &[],
            max_value: 1000,
            max_decoded: usize::MAX,
        };
        // In pieces of 100 bytes: refused once 1000 bytes of the row are held.
        let cuts: Vec<usize> = (1..60).map(|i| i * 100).collect();
        let mut handed = 0usize;
        let mut next = pieces(text.as_bytes(), &cuts);
        let err = decode_streamed_reply_on(&options, 1, 64, || {
            let chunk = next();
            handed += chunk.as_ref().map_or(0, bytes::Bytes::len);
            chunk
        })
        .unwrap_err();
        assert!(
            matches!(err, DecodeError::ValueTooLarge { limit: 1000, .. }),
            "{err}"
        );
        assert!(handed < 1300, "read {handed} bytes before refusing");
    }

    #[test]
    fn rows_decoding_past_max_decoded_stop_the_message() {
        // Small integers: 2 bytes an atom on the wire, 24 decoded.
        let ints: Vec<u32> = (0..2000).collect();
        let rows: serde_json::Map<String, serde_json::Value> = (0..20)
            .map(|i| {
                (
                    format!("{i:08x}-2222-4222-8222-222222222222"),
                    json!({"insert": {"tag": ["set", ints]}}),
                )
            })
            .collect();
        let text =
            json!({"id": null, "method": "update2", "params": ["db", {"T": rows}]}).to_string();
        let none = KeyProjection::default();
        let whole =
            decode_streamed_reply_on(&opts(&none), 2, 4096, pieces(text.as_bytes(), &[])).unwrap();
        let estimate = whole.decoded_bytes;
        assert!(estimate > 20 * 2000 * 24, "{estimate}");
        assert!(
            estimate > 5 * text.len(),
            "{estimate} for {} bytes",
            text.len()
        );
        let options = StreamOptions {
            max_decoded: estimate / 2,
            ..opts(&none)
        };
        let err = decode_streamed_reply_on(&options, 2, 4096, pieces(text.as_bytes(), &[100]))
            .unwrap_err();
        assert!(
            matches!(err, DecodeError::DecodedTooLarge { limit } if limit == estimate / 2),
            "{err}"
        );
    }

    proptest! {
        #[test]
        fn a_reply_decoded_row_by_row_equals_the_buffered_decode(
            rows in prop::collection::vec(("[a-z\\\\\" ]{0,4}", prop::collection::vec(("[a-c\\\\\"]{0,2}", "[a-z{}\\[\\], ]{0,3}"), 0..4)), 0..6),
            since in any::<bool>(),
            pretty in any::<bool>(),
            result_first in any::<bool>(),
            cuts in prop::collection::vec(any::<usize>(), 0..10),
            kept in prop::collection::vec("[a-c]{0,2}", 0..3),
            decoders in 1usize..4,
            batch_bytes in 1usize..300,
        ) {
            let updates = rows_json(&rows);
            let result = if since { json!([true, "7a3b8c2e-0000-4000-8000-000000000001", updates]) } else { updates };
            let show = |v: &serde_json::Value| if pretty { serde_json::to_string_pretty(v).unwrap() } else { v.to_string() };
            let text = if result_first {
                format!("{{\"result\": {}, \"id\": 7, \"error\": null}}", show(&result))
            } else {
                format!("{{\"id\":7,\"result\":{},\"error\":null}}", show(&result))
            };
            let p = KeyProjection::default().keep("Logical_Switch_Port", "external_ids", kept);
            let want = MonitorResultSeed(&p).deserialize(&mut serde_json::Deserializer::from_str(&result.to_string())).unwrap();
            let got = decode_streamed_reply_on(&opts(&p), decoders, batch_bytes, pieces(text.as_bytes(), &cuts)).unwrap();
            prop_assert_eq!(got.id, json!(7));
            prop_assert_eq!(got.result, Some(want));
        }

        #[test]
        fn a_streamed_reply_decoder_never_panics(
            data in prop::collection::vec(any::<u8>(), 0..256),
            cuts in prop::collection::vec(any::<usize>(), 0..6),
            decoders in 1usize..3,
        ) {
            let _ = decode_streamed_reply_on(&opts(&KeyProjection::default()), decoders, 16, pieces(&data, &cuts));
        }

    }
}
