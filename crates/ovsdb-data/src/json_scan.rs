//! Finds where a JSON value ends in bytes that arrive in pieces, from its
//! structure alone.
//!
//! The client's framing cuts the byte stream into messages with it, and the
//! streamed reply decoder cuts a reply into row updates with it: one rule
//! for where a value ends. It tracks bracket depth and string/escape state
//! only; whether the bytes are valid JSON is for the parser that receives
//! them. It remembers its state between calls, so each byte is scanned
//! once however the value is cut into reads.
//!
//! It can also bound what a hostile peer could make its consumers hold
//! ([`ScanLimits`]): a string atom longer than a limit, or containers
//! nested deeper than one, stop the scan at the byte that crosses it,
//! long before the message ends.

/// Bounds on a value's shape, checked while it is scanned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanLimits {
    /// Longest string (a member name or a string atom), in bytes as
    /// written between its quotes (escapes count as written).
    pub max_string: usize,
    /// Deepest nesting of arrays and objects.
    pub max_depth: u32,
}

impl ScanLimits {
    /// No bound (what [`ValueScanner::default`] scans with).
    pub const NONE: ScanLimits = ScanLimits {
        max_string: usize::MAX,
        max_depth: u32::MAX,
    };
}

impl Default for ScanLimits {
    fn default() -> Self {
        ScanLimits::NONE
    }
}

/// Which bound of [`ScanLimits`] a value crossed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverLimit {
    /// A string grew past `max_string` bytes.
    String {
        /// The limit in bytes.
        limit: usize,
    },
    /// Containers nested deeper than `max_depth`.
    Depth {
        /// The limit in levels.
        limit: u32,
    },
}

impl std::fmt::Display for OverLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OverLimit::String { limit } => {
                write!(
                    f,
                    "a string is longer than the {limit}-byte limit (max_string)"
                )
            }
            OverLimit::Depth { limit } => write!(
                f,
                "arrays and objects nest deeper than the limit of {limit} (max_depth)"
            ),
        }
    }
}

/// The scan state of one JSON value whose bytes may arrive in pieces.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValueScanner {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// Bytes of the string in progress so far.
    string_len: usize,
    limits: ScanLimits,
}

/// Where a value's scan stands after the bytes given so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanEnd {
    /// The value ends just before byte `.0` of the buffer.
    Complete(usize),
    /// Every byte given belongs to the value, which goes on in the next
    /// bytes (or, for a number or literal, ends with the input: see
    /// [`ValueScanner::ends_with_input`]).
    Incomplete,
    /// The value crossed a bound of its [`ScanLimits`] at byte `at` of the
    /// buffer; the scan cannot go on.
    OverLimit {
        /// The bound crossed.
        limit: OverLimit,
        /// The offset in the buffer where it was crossed.
        at: usize,
    },
}

impl ValueScanner {
    /// A scanner that stops at the first byte crossing `limits`.
    pub fn with_limits(limits: ScanLimits) -> ValueScanner {
        ValueScanner {
            limits,
            ..ValueScanner::default()
        }
    }

    /// Scans `buf[from..]`, the continuation of the value whose first byte
    /// (not whitespace) was at or before `from`. A container or string ends
    /// after its closing byte; a number or literal ends before the first
    /// `,`, whitespace or closing bracket after it (a closing bracket first
    /// of all gives an empty value, for the parser to reject). After
    /// `Complete`, the scanner is ready for the next value.
    #[inline]
    pub fn scan(&mut self, buf: &[u8], from: usize) -> ScanEnd {
        let mut i = from;
        while i < buf.len() {
            if self.in_string {
                if self.escaped {
                    // The byte after a backslash never ends the string.
                    if self.string_len >= self.limits.max_string {
                        return self.string_over_limit(i);
                    }
                    self.escaped = false;
                    self.string_len += 1;
                    i += 1;
                    continue;
                }
                // Jump to the next byte that can end the string or escape.
                let found = memchr::memchr2(b'"', b'\\', &buf[i..]);
                let run = found.unwrap_or(buf.len() - i);
                // The bytes the string may still take.
                let room = self.limits.max_string.saturating_sub(self.string_len);
                if run > room {
                    return self.string_over_limit(i + room);
                }
                self.string_len += run;
                let Some(off) = found else {
                    return ScanEnd::Incomplete;
                };
                i += off;
                if buf[i] == b'\\' {
                    if self.string_len >= self.limits.max_string {
                        return self.string_over_limit(i);
                    }
                    self.escaped = true;
                    self.string_len += 1;
                } else {
                    self.in_string = false;
                    if self.depth == 0 {
                        return ScanEnd::Complete(i + 1);
                    }
                }
                i += 1;
                continue;
            }
            match buf[i] {
                b'"' => {
                    self.in_string = true;
                    self.string_len = 0;
                }
                b'{' | b'[' if self.depth >= self.limits.max_depth => {
                    return ScanEnd::OverLimit {
                        limit: OverLimit::Depth {
                            limit: self.limits.max_depth,
                        },
                        at: i,
                    }
                }
                b'{' | b'[' => self.depth += 1,
                // The end of a scalar at the end of its container.
                b'}' | b']' if self.depth == 0 => return ScanEnd::Complete(i),
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        return ScanEnd::Complete(i + 1);
                    }
                }
                b',' | b' ' | b'\t' | b'\r' | b'\n' if self.depth == 0 => {
                    return ScanEnd::Complete(i)
                }
                _ => {}
            }
            i += 1;
        }
        ScanEnd::Incomplete
    }

    fn string_over_limit(&self, at: usize) -> ScanEnd {
        ScanEnd::OverLimit {
            limit: OverLimit::String {
                limit: self.limits.max_string,
            },
            at,
        }
    }

    /// Whether the bytes scanned so far, if any, are a whole value when the
    /// input ends here (a number or literal ends with the input; a string
    /// or container still open does not).
    pub fn ends_with_input(&self) -> bool {
        self.depth == 0 && !self.in_string
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    /// Where the value at the start of `text` ends, scanned in pieces cut
    /// at `cuts`.
    fn end_in_pieces(text: &[u8], cuts: &[usize]) -> Option<usize> {
        let mut scanner = ValueScanner::default();
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
        points.push(text.len());
        points.sort_unstable();
        let mut from = 0;
        for to in points {
            if let ScanEnd::Complete(end) = scanner.scan(&text[..to], from) {
                return Some(end);
            }
            from = to.max(from);
        }
        (scanner.ends_with_input() && !text.is_empty()).then_some(text.len())
    }

    #[test]
    fn scalars_end_before_their_delimiter_and_containers_after_their_closer() {
        assert_eq!(end_in_pieces(b"12,3", &[]), Some(2));
        assert_eq!(end_in_pieces(b"true}", &[]), Some(4));
        assert_eq!(end_in_pieces(b"null", &[]), Some(4));
        assert_eq!(end_in_pieces(br#""a\"]," x"#, &[2, 3]), Some(7));
        assert_eq!(end_in_pieces(br#"{"a": [1, "}"]} ,"#, &[1, 9]), Some(15));
        assert_eq!(end_in_pieces(b"]", &[]), Some(0));
        assert_eq!(end_in_pieces(br#"{"a": "#, &[]), None);
        assert_eq!(end_in_pieces(br#""open"#, &[]), None);
    }

    /// The scan of `text` in pieces of `piece` bytes with `limits`: where
    /// it ended, or the bound crossed and its absolute offset.
    fn scan_limited(
        text: &[u8],
        piece: usize,
        limits: ScanLimits,
    ) -> Result<Option<usize>, (OverLimit, usize)> {
        let mut scanner = ValueScanner::with_limits(limits);
        let mut from = 0;
        while from < text.len() {
            let to = (from + piece).min(text.len());
            match scanner.scan(&text[..to], from) {
                ScanEnd::Complete(end) => return Ok(Some(end)),
                ScanEnd::OverLimit { limit, at } => return Err((limit, at)),
                ScanEnd::Incomplete => from = to,
            }
        }
        Ok(None)
    }

    #[test]
    fn a_string_longer_than_max_string_stops_the_scan_where_it_crosses_the_limit() {
        let limits = ScanLimits {
            max_string: 8,
            ..ScanLimits::NONE
        };
        // Exactly at the limit, escapes counted as written: accepted.
        for piece in [1, 3, 100] {
            assert_eq!(
                scan_limited(br#"{"k":"12\"4567"}"#, piece, limits),
                Ok(Some(16)),
                "piece {piece}"
            );
        }
        // One byte more, terminated or not, in any cut: refused at the
        // ninth byte of the string (offset 6 + 8), however it is cut.
        for text in [
            &br#"{"k":"123456789"}"#[..],
            br#"{"k":"123456789012345"#,
            br#"{"k":"1234567\"9"}"#,
        ] {
            for piece in [1, 2, 5, 100] {
                assert_eq!(
                    scan_limited(text, piece, limits),
                    Err((OverLimit::String { limit: 8 }, 14)),
                    "piece {piece}"
                );
            }
        }
        // Member names count too.
        assert!(scan_limited(br#"{"0123456789":1}"#, 4, limits).is_err());
        // Without limits, the same strings are fine.
        assert_eq!(
            scan_limited(br#"{"k":"123456789"}"#, 4, ScanLimits::NONE),
            Ok(Some(17))
        );
    }

    #[test]
    fn nesting_deeper_than_max_depth_stops_the_scan_at_the_opening_bracket() {
        let limits = ScanLimits {
            max_depth: 3,
            ..ScanLimits::NONE
        };
        assert_eq!(scan_limited(b"[[{}]]", 2, limits), Ok(Some(6)));
        assert_eq!(
            scan_limited(b"[[{\"a\":[1]}]]", 2, limits),
            Err((OverLimit::Depth { limit: 3 }, 7))
        );
        // A hundred thousand opening brackets: refused at the fourth, no
        // recursion anywhere (the scanner keeps a counter, not a stack).
        let deep = vec![b'['; 100_000];
        assert_eq!(
            scan_limited(&deep, 4096, limits),
            Err((OverLimit::Depth { limit: 3 }, 3))
        );
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(|f| json!(f)),
            ".*".prop_map(Value::String),
            "[\\\\\"{}\\[\\], ]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(".{0,4}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn a_value_ends_where_the_parser_says_however_it_is_cut(
            v in json_value(),
            pretty in any::<bool>(),
            after in prop::sample::select(vec![",", " ", "]", "}", "\n", ""]),
            cuts in prop::collection::vec(any::<usize>(), 0..8),
        ) {
            let text = if pretty { serde_json::to_string_pretty(&v).unwrap() } else { v.to_string() };
            let input = format!("{text}{after}");
            prop_assert_eq!(end_in_pieces(input.as_bytes(), &cuts), Some(text.len()));
        }

        #[test]
        fn the_scanner_never_panics(
            data in prop::collection::vec(any::<u8>(), 0..256),
            cuts in prop::collection::vec(any::<usize>(), 0..8),
        ) {
            let _ = end_in_pieces(&data, &cuts);
        }
    }
}
