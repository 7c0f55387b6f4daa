//! Finds where a JSON value ends in bytes that arrive in pieces, from its
//! structure alone.
//!
//! The client's framing cuts the byte stream into messages with it, and the
//! streamed reply decoder cuts a reply into row updates with it: one rule
//! for where a value ends. It tracks bracket depth and string/escape state
//! only; whether the bytes are valid JSON is for the parser that receives
//! them. It remembers its state between calls, so each byte is scanned
//! once however the value is cut into reads.

/// The scan state of one JSON value whose bytes may arrive in pieces.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValueScanner {
    depth: u32,
    in_string: bool,
    escaped: bool,
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
}

impl ValueScanner {
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
                    self.escaped = false;
                    i += 1;
                    continue;
                }
                // Jump to the next byte that can end the string or escape.
                let Some(off) = memchr::memchr2(b'"', b'\\', &buf[i..]) else {
                    return ScanEnd::Incomplete;
                };
                i += off;
                if buf[i] == b'\\' {
                    self.escaped = true;
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
                b'"' => self.in_string = true,
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
