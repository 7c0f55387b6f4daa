//! Splits the OVSDB byte stream into JSON messages.
//!
//! OVSDB (RFC 7047 § 4) writes JSON-RPC objects back to back with no length
//! prefix and no delimiter. [`JsonFramer`] finds the end of each object with
//! the data crate's [`ValueScanner`] (brace/bracket depth and string/escape
//! state, the rule the streamed reply decoder also uses) as bytes arrive. It
//! remembers how far it has scanned, so a large monitor reply that arrives
//! in 64 KiB reads is scanned once, not once per read, and it refuses any
//! message larger than its limit instead of buffering without bound.

use bytes::{Buf, BytesMut};
use obgp_ovsdb_data::json_scan::{ScanEnd, ValueScanner};
use tokio_util::codec::Decoder;

/// Default upper bound for one message (64 MiB). An OVN_Northbound initial
/// dump of a large Neutron-shaped topology exceeds it (docs/ovsdb.md,
/// "Known gaps"): raise the limit for such scales.
pub const DEFAULT_MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// Why the byte stream cannot be split into messages. The connection must be
/// dropped after any of these: the framer cannot resynchronise.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    /// A message grew past the limit before it ended.
    #[error("message exceeds the {limit}-byte limit")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
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
    max_message: usize,
    /// Bytes of the current message already scanned (still in the buffer).
    scanned: usize,
    /// Bytes of the current message handed out by [`JsonFramer::take_scanned`].
    taken: usize,
    /// Where the message in progress stands.
    scanner: ValueScanner,
}

impl Default for JsonFramer {
    fn default() -> Self {
        JsonFramer::new(DEFAULT_MAX_MESSAGE)
    }
}

impl JsonFramer {
    /// A framer refusing messages longer than `max_message` bytes.
    pub fn new(max_message: usize) -> JsonFramer {
        JsonFramer {
            max_message,
            scanned: 0,
            taken: 0,
            scanner: ValueScanner::default(),
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
                self.scanned = 0;
                self.taken = 0;
                if total > self.max_message {
                    return Err(FrameError::TooLarge {
                        limit: self.max_message,
                    });
                }
                Ok(Some(end))
            }
            ScanEnd::Incomplete => {
                self.scanned = buf.len();
                if self.taken + buf.len() > self.max_message {
                    return Err(FrameError::TooLarge {
                        limit: self.max_message,
                    });
                }
                Ok(None)
            }
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
    /// `max_message` still bounds the whole message.
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
            Some(len) => {
                if len > self.max_message {
                    return Err(FrameError::TooLarge {
                        limit: self.max_message,
                    });
                }
                Ok(Some(buf.split_to(len)))
            }
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
            Err(FrameError::TooLarge { limit: 16 })
        ));
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
