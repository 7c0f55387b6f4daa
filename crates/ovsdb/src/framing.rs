//! Splits the OVSDB byte stream into JSON messages.
//!
//! OVSDB (RFC 7047 § 4) writes JSON-RPC objects back to back with no length
//! prefix and no delimiter. [`JsonFramer`] finds the end of each object with
//! the data crate's [`ValueScanner`] (brace/bracket depth and string/escape
//! state, the rule the streamed reply decoder also uses) as bytes arrive. It
//! remembers how far it has scanned, so a large monitor reply that arrives
//! in 64 KiB reads is scanned once, not once per read, and it refuses any
//! message past its [`FrameLimits`] (size, string length, nesting) at the
//! byte that crosses them, instead of buffering without bound.

use bytes::{Buf, BytesMut};
use obgp_ovsdb_data::json_scan::{OverLimit, ScanEnd, ScanLimits, ValueScanner};
use tokio_util::codec::Decoder;

/// Default upper bound for one message held whole (16 MiB). Since the large
/// messages (monitor replies, update notifications) are decoded while they
/// arrive and bounded by [`DEFAULT_MAX_STREAMED`] instead, what is left is
/// small: a schema (~0.1 MB), transaction replies, echoes.
pub const DEFAULT_MAX_MESSAGE: usize = 16 << 20;

/// Default upper bound for one message decoded while it arrives (256 MiB):
/// twice a 100k-port OVN_Northbound dump (~125 MB), the largest scale the
/// agent is measured at (docs/ovsdb.md). A streamed message's bytes are
/// dropped as its rows are decoded, so what it costs is the rows kept.
pub const DEFAULT_MAX_STREAMED: usize = 256 << 20;

/// Default longest string (1 MiB). No OVN_Northbound, OVN_Southbound or
/// Open_vSwitch value is legitimately near it: names, UUIDs, addresses,
/// `external_ids` and `options` values and ACL matches are bytes to a few
/// KiB; a set of many values (a port group's ports, an address set) is
/// many short atoms, not one long one.
pub const DEFAULT_MAX_STRING: usize = 1 << 20;

/// Default deepest nesting (64). The deepest OVSDB message is a notification
/// or a monitor reply holding a map of sets: about 8 levels. serde_json,
/// which parses the frames, refuses deeper than 128 itself; the scanner
/// refuses sooner, while the message arrives, and holds no stack per level.
pub const DEFAULT_MAX_DEPTH: u32 = 64;

/// What one message may make the client hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameLimits {
    /// Largest message held whole before it is decoded.
    pub max_message: usize,
    /// Largest message handed on while it arrives
    /// ([`JsonFramer::take_scanned`]).
    pub max_streamed: usize,
    /// Longest string and deepest nesting in any message.
    pub scan: ScanLimits,
}

impl Default for FrameLimits {
    fn default() -> Self {
        FrameLimits {
            max_message: DEFAULT_MAX_MESSAGE,
            max_streamed: DEFAULT_MAX_STREAMED,
            scan: ScanLimits {
                max_string: DEFAULT_MAX_STRING,
                max_depth: DEFAULT_MAX_DEPTH,
            },
        }
    }
}

/// Why the byte stream cannot be split into messages. The connection must be
/// dropped after any of these: the framer cannot resynchronise.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    /// A message held whole grew past the limit before it ended.
    #[error("message exceeds the {limit}-byte limit (max_message)")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// A message decoded while it arrives grew past its limit.
    #[error("message decoded while it arrives exceeds the {limit}-byte limit (max_streamed)")]
    StreamedTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// A string or the nesting crossed its bound.
    #[error("{limit}, at byte {offset} of the message")]
    OverLimit {
        /// The bound crossed.
        limit: OverLimit,
        /// Where in the message.
        offset: usize,
    },
    /// A message starts with something other than `{`.
    #[error("message does not start with '{{' (found byte {byte:#04x} at offset {offset})")]
    NotAnObject {
        /// The byte found.
        byte: u8,
        /// Its offset in the message.
        offset: usize,
    },
    /// A closing bracket with no matching opener.
    #[error("unbalanced '{byte}' at offset {offset}", byte = *byte as char)]
    Unbalanced {
        /// The closing byte.
        byte: u8,
        /// Its offset in the message.
        offset: usize,
    },
    /// The stream ended inside a message.
    #[error("connection closed in the middle of a message ({pending} bytes pending)")]
    Truncated {
        /// Bytes of the unfinished message.
        pending: usize,
    },
    /// Reading from the socket failed (kept as text so the error stays `Eq`).
    #[error("read error: {0}")]
    Io(String),
}

impl From<std::io::Error> for FrameError {
    fn from(e: std::io::Error) -> Self {
        FrameError::Io(e.to_string())
    }
}

/// Incremental splitter of back-to-back JSON objects; a `tokio_util` codec
/// whose items are the raw bytes of one complete object each.
///
/// It checks structure only (balanced brackets outside strings); whether the
/// bytes are valid JSON is for the parser that receives them.
#[derive(Debug, Clone)]
pub struct JsonFramer {
    limits: FrameLimits,
    /// Bytes of the current message already scanned (still in the buffer).
    scanned: usize,
    /// Bytes of the current message handed out by [`JsonFramer::take_scanned`].
    taken: usize,
    /// Where the message in progress stands.
    scanner: ValueScanner,
}

impl Default for JsonFramer {
    fn default() -> Self {
        JsonFramer::with_limits(FrameLimits::default())
    }
}

impl JsonFramer {
    /// A framer refusing messages longer than `max_message` bytes, whether
    /// held whole or not, with no bound on strings or nesting.
    pub fn new(max_message: usize) -> JsonFramer {
        JsonFramer::with_limits(FrameLimits {
            max_message,
            max_streamed: max_message,
            scan: ScanLimits::NONE,
        })
    }

    /// A framer refusing messages past `limits`.
    pub fn with_limits(limits: FrameLimits) -> JsonFramer {
        JsonFramer {
            limits,
            scanned: 0,
            taken: 0,
            scanner: ValueScanner::with_limits(limits.scan),
        }
    }

    /// The size limit of the message in progress: once part of it was
    /// taken, it is being decoded while it arrives.
    fn too_large(&self) -> FrameError {
        if self.taken > 0 {
            FrameError::StreamedTooLarge {
                limit: self.limits.max_streamed,
            }
        } else {
            FrameError::TooLarge {
                limit: self.limits.max_message,
            }
        }
    }

    fn size_limit(&self) -> usize {
        if self.taken > 0 {
            self.limits.max_streamed
        } else {
            self.limits.max_message
        }
    }

    /// Scans new bytes; returns the length of the first complete message in
    /// `buf` (which starts at a message's first byte) once it has ended.
    fn scan(&mut self, buf: &[u8]) -> Result<Option<usize>, FrameError> {
        if self.scanned == 0 && self.taken == 0 {
            // A message's first byte: the scanner finds where a value ends,
            // the framer only accepts objects.
            match buf.first() {
                None => return Ok(None),
                Some(b'{') => {}
                Some(&byte @ (b'}' | b']')) => {
                    return Err(FrameError::Unbalanced { byte, offset: 0 })
                }
                Some(&byte) => return Err(FrameError::NotAnObject { byte, offset: 0 }),
            }
        }
        match self.scanner.scan(buf, self.scanned) {
            ScanEnd::Complete(end) => {
                let total = self.taken + end;
                let (limit, err) = (self.size_limit(), self.too_large());
                self.scanned = 0;
                self.taken = 0;
                if total > limit {
                    return Err(err);
                }
                Ok(Some(end))
            }
            ScanEnd::Incomplete => {
                self.scanned = buf.len();
                if self.taken + buf.len() > self.size_limit() {
                    return Err(self.too_large());
                }
                Ok(None)
            }
            ScanEnd::OverLimit { limit, at } => Err(FrameError::OverLimit {
                limit,
                offset: self.taken + at,
            }),
        }
    }

    /// Bytes of the message in progress seen so far (scanned and taken);
    /// 0 between messages.
    pub fn pending_len(&self) -> usize {
        self.taken + self.scanned
    }

    /// Splits the scanned bytes of the message in progress off the front
    /// of `buf`, for a consumer that decodes a large message while it
    /// arrives. The framer keeps its place: the next [`Decoder::decode`]
    /// returns the rest of the message (only the bytes after these), and
    /// from now on `max_streamed` bounds the whole message.
    pub fn take_scanned(&mut self, buf: &mut BytesMut) -> BytesMut {
        let part = buf.split_to(self.scanned.min(buf.len()));
        self.taken += part.len();
        self.scanned = 0;
        part
    }
}

fn skip_whitespace(buf: &mut BytesMut) {
    let n = buf
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        .unwrap_or(buf.len());
    buf.advance(n);
}

impl Decoder for JsonFramer {
    type Item = BytesMut;
    type Error = FrameError;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<BytesMut>, FrameError> {
        if self.scanned == 0 && self.taken == 0 {
            skip_whitespace(buf);
        }
        match self.scan(buf)? {
            Some(len) => Ok(Some(buf.split_to(len))),
            None => {
                // Grow in big steps while a large message is arriving, so a
                // large reply is not read into a buffer doubling from 8 KiB.
                if self.scanned > 0 && buf.capacity() - buf.len() < 64 * 1024 {
                    buf.reserve(buf.len().clamp(64 * 1024, 4 * 1024 * 1024));
                }
                Ok(None)
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<BytesMut>, FrameError> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        if self.taken > 0 {
            // Closed in the middle of a message whose start was taken.
            return Err(FrameError::Truncated {
                pending: self.pending_len(),
            });
        }
        skip_whitespace(buf);
        if buf.is_empty() {
            Ok(None)
        } else {
            Err(FrameError::Truncated { pending: buf.len() })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    /// Feeds `chunks` one after another and collects every frame produced.
    fn feed(framer: &mut JsonFramer, chunks: &[&[u8]]) -> Result<Vec<Value>, FrameError> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in chunks {
            buf.extend_from_slice(chunk);
            while let Some(frame) = framer.decode(&mut buf)? {
                out.push(serde_json::from_slice(&frame).expect("framer cut a valid message"));
            }
        }
        while let Some(frame) = framer.decode_eof(&mut buf)? {
            out.push(serde_json::from_slice(&frame).expect("framer cut a valid message"));
        }
        Ok(out)
    }

    #[test]
    fn a_close_after_taken_bytes_is_truncated() {
        let mut framer = JsonFramer::default();
        let mut buf = BytesMut::from(&br#"{"a":"0123"#[..]);
        assert!(framer.decode(&mut buf).unwrap().is_none());
        framer.take_scanned(&mut buf);
        assert!(matches!(
            framer.decode_eof(&mut buf),
            Err(FrameError::Truncated { pending: 10 })
        ));
    }

    #[test]
    fn taken_bytes_count_toward_the_limit() {
        let mut framer = JsonFramer::new(16);
        let mut buf = BytesMut::from(&br#"{"a":"0123"#[..]);
        assert!(framer.decode(&mut buf).unwrap().is_none());
        assert_eq!(framer.take_scanned(&mut buf).len(), 10);
        buf.extend_from_slice(br#"4567"#);
        assert!(framer.decode(&mut buf).unwrap().is_none());
        buf.extend_from_slice(br#"89"}"#);
        assert!(matches!(
            framer.decode(&mut buf),
            Err(FrameError::StreamedTooLarge { limit: 16 })
        ));
    }

    fn limits(max_message: usize, max_streamed: usize, max_string: usize) -> FrameLimits {
        FrameLimits {
            max_message,
            max_streamed,
            scan: ScanLimits {
                max_string,
                max_depth: 4,
            },
        }
    }

    #[test]
    fn a_message_handed_on_while_it_arrives_is_bounded_by_max_streamed() {
        let mut framer = JsonFramer::with_limits(limits(16, 40, 100));
        let mut buf = BytesMut::from(&br#"{"a":"0123"#[..]);
        assert!(framer.decode(&mut buf).unwrap().is_none());
        framer.take_scanned(&mut buf);
        // Past max_message but within max_streamed: goes on.
        buf.extend_from_slice(b"456789012345678901234");
        assert!(framer.decode(&mut buf).unwrap().is_none());
        framer.take_scanned(&mut buf);
        buf.extend_from_slice(b"5678901234");
        assert_eq!(
            framer.decode(&mut buf),
            Err(FrameError::StreamedTooLarge { limit: 40 })
        );
        // A message held whole keeps the small limit.
        let mut framer = JsonFramer::with_limits(limits(16, 40, 100));
        let mut buf = BytesMut::from(&br#"{"a":"0123456789012"#[..]);
        assert_eq!(
            framer.decode(&mut buf),
            Err(FrameError::TooLarge { limit: 16 })
        );
    }

    #[test]
    fn a_long_string_or_deep_nesting_is_refused_where_it_crosses_the_limit() {
        let mut framer = JsonFramer::with_limits(limits(1000, 1000, 8));
        // An unterminated string is refused after 8 bytes, not at the
        // message limit; the offset counts bytes taken before.
        let mut buf = BytesMut::from(&br#"{"a":"0123"#[..]);
        assert!(framer.decode(&mut buf).unwrap().is_none());
        framer.take_scanned(&mut buf);
        buf.extend_from_slice(b"45678");
        assert_eq!(
            framer.decode(&mut buf),
            Err(FrameError::OverLimit {
                limit: OverLimit::String { limit: 8 },
                offset: 14
            })
        );
        let err = feed(
            &mut JsonFramer::with_limits(limits(1000, 1000, 8)),
            &[br#"{"a":[[[[1]]]]}"#],
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "arrays and objects nest deeper than the limit of 4 (max_depth), at byte 8 of the message"
        );
        // The defaults allow what OVSDB sends.
        let ok = br#"{"id":null,"method":"update2","params":["m",{"T":{"aaaaaaaa-0000-4000-8000-000000000001":{"modify":{"c":["map",[["k",["set",[1]]]]]}}}}]}"#;
        assert_eq!(feed(&mut JsonFramer::default(), &[ok]).unwrap().len(), 1);
    }

    #[test]
    fn back_to_back_objects_are_split() {
        let text = br#"{"id":1,"result":[]}{"method":"echo","params":[],"id":"echo"}  {"a":{"b":[1,{"c":2}]}}"#;
        let got = feed(&mut JsonFramer::default(), &[text]).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[1]["method"], "echo");
        assert_eq!(got[2]["a"]["b"][1]["c"], 2);
    }

    #[test]
    fn brackets_and_quotes_inside_strings_do_not_count() {
        let v = json!({"s": "}{][\"\\\\\"", "t": "\\u0022}", "u": "\\"});
        let text = v.to_string();
        let bytes = text.as_bytes();
        // One byte at a time exercises every escape state across reads.
        let chunks: Vec<&[u8]> = bytes.chunks(1).collect();
        let got = feed(&mut JsonFramer::default(), &chunks).unwrap();
        assert_eq!(got, vec![v]);
    }

    #[test]
    fn message_over_the_limit_is_an_error() {
        let mut framer = JsonFramer::new(16);
        let err = feed(&mut framer, &[br#"{"key":"a value that is too long"}"#]).unwrap_err();
        assert_eq!(err, FrameError::TooLarge { limit: 16 });
        // Also when the message never ends: the buffer must not grow unbounded.
        let mut framer = JsonFramer::new(16);
        let mut buf = BytesMut::from(&b"{\"k\":\""[..]);
        assert_eq!(framer.decode(&mut buf), Ok(None));
        buf.extend_from_slice(&[b'x'; 32]);
        assert_eq!(
            framer.decode(&mut buf),
            Err(FrameError::TooLarge { limit: 16 })
        );
    }

    #[test]
    fn close_mid_message_is_truncated() {
        let err = feed(&mut JsonFramer::default(), &[br#"{"id":1,"res"#]).unwrap_err();
        assert!(matches!(err, FrameError::Truncated { .. }), "{err}");
    }

    #[test]
    fn non_object_and_unbalanced_input_are_errors() {
        let err = feed(&mut JsonFramer::default(), &[b"[1,2]"]).unwrap_err();
        assert_eq!(
            err,
            FrameError::NotAnObject {
                byte: b'[',
                offset: 0
            }
        );
        let err = feed(&mut JsonFramer::default(), &[b"}"]).unwrap_err();
        assert_eq!(
            err,
            FrameError::Unbalanced {
                byte: b'}',
                offset: 0
            }
        );
        // A string before an object is not a message (it is not framed
        // together with the object that follows).
        let err = feed(&mut JsonFramer::default(), &[br#""s"{}"#]).unwrap_err();
        assert_eq!(
            err,
            FrameError::NotAnObject {
                byte: b'"',
                offset: 0
            }
        );
        let err = feed(&mut JsonFramer::default(), &[b"garbage"]).unwrap_err();
        assert_eq!(
            err,
            FrameError::NotAnObject {
                byte: b'g',
                offset: 0
            }
        );
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            ".*".prop_map(Value::String),
            "[\\\\\"{}\\[\\]]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(".{0,4}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn json_object() -> impl Strategy<Value = Value> {
        prop::collection::btree_map(".{0,6}", json_value(), 0..5)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
    }

    proptest! {
        #[test]
        fn any_split_of_valid_messages_yields_them_in_order(
            msgs in prop::collection::vec(json_object(), 1..5),
            ws in prop::collection::vec("[ \n\t]{0,2}", 5),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let mut text = String::new();
            for (m, w) in msgs.iter().zip(ws.iter().cycle()) {
                text.push_str(&m.to_string());
                text.push_str(w);
            }
            let bytes = text.as_bytes();
            let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
            points.push(0);
            points.push(bytes.len());
            points.sort_unstable();
            let chunks: Vec<&[u8]> = points.windows(2).map(|w| &bytes[w[0]..w[1]]).collect();
            let got = feed(&mut JsonFramer::default(), &chunks).unwrap();
            prop_assert_eq!(got, msgs);
        }

        #[test]
        fn taking_scanned_bytes_midway_loses_and_reorders_nothing(
            msgs in prop::collection::vec(json_object(), 1..5),
            ws in prop::collection::vec("[ \n\t]{0,2}", 5),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
            takes in prop::collection::vec(any::<bool>(), 9),
        ) {
            let mut text = String::new();
            for (m, w) in msgs.iter().zip(ws.iter().cycle()) {
                text.push_str(&m.to_string());
                text.push_str(w);
            }
            let bytes = text.as_bytes();
            let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
            points.push(0);
            points.push(bytes.len());
            points.sort_unstable();
            let mut framer = JsonFramer::default();
            let (mut buf, mut taken, mut got) = (BytesMut::new(), Vec::new(), Vec::new());
            for (w, take) in points.windows(2).zip(takes.iter().cycle()) {
                buf.extend_from_slice(&bytes[w[0]..w[1]]);
                while let Some(frame) = framer.decode(&mut buf).unwrap() {
                    taken.extend_from_slice(&frame);
                    got.push(serde_json::from_slice::<Value>(&taken).expect("a whole message"));
                    taken.clear();
                }
                if *take && framer.pending_len() > 0 {
                    let before = framer.pending_len();
                    taken.extend_from_slice(&framer.take_scanned(&mut buf));
                    prop_assert_eq!(framer.pending_len(), before);
                }
            }
            prop_assert_eq!(got, msgs);
        }

        #[test]
        fn garbage_never_panics_and_never_exceeds_the_limit(
            data in prop::collection::vec(any::<u8>(), 0..512),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let mut points: Vec<usize> = cuts.iter().map(|c| c.index(data.len() + 1)).collect();
            points.push(0);
            points.push(data.len());
            points.sort_unstable();
            let mut framer = JsonFramer::new(64);
            let mut buf = BytesMut::new();
            'outer: for w in points.windows(2) {
                buf.extend_from_slice(&data[w[0]..w[1]]);
                loop {
                    match framer.decode(&mut buf) {
                        Ok(Some(frame)) => prop_assert!(frame.len() <= 64),
                        Ok(None) => break,
                        Err(_) => break 'outer,
                    }
                }
                prop_assert!(buf.len() <= 64 + data.len());
            }
        }
    }
}
