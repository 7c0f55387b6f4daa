//! The fast path of the streamed reply decoder: one framed row update read
//! straight from its bytes, without serde.
//!
//! Nearly every row of an initial dump is plain: strings without escapes,
//! small non-negative integers, booleans, `["uuid", ..]`, sets and maps of
//! those. For them the serde visitors' generality (a visitor call per token,
//! `str` checks per string) was most of the decoder's time. This scanner
//! reads exactly that subset and gives up (`None`) on anything else:
//! escapes, reals, negative or large numbers, `null`, unknown tags, bad
//! structure. The caller then decodes the row with the serde visitors, so a
//! row the scanner declines gets exactly the result or the error message
//! it always got, and a row it accepts must decode to what the visitors
//! would produce (same interning, same key projection, same element order:
//! property-tested against them below).

use super::intern::{exact, intern, COLUMN_SCRATCH, MAP_SCRATCH, SET_SCRATCH};
use super::projection::{column_keys, TableKeys};
use super::{RowOp, RowUpdate};
use crate::datum::{Atom, Datum, Uuid};

/// The row update `text` (one whole JSON value) of row `uuid`, or `None`
/// when it is not in the plain subset this scanner reads.
pub(super) fn decode_row(text: &str, uuid: Uuid, keys: Option<&TableKeys>) -> Option<RowUpdate> {
    let mut scan = Scan {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    let row = scan.row_update(uuid, keys)?;
    scan.skip_whitespace();
    (scan.pos == scan.bytes.len()).then_some(row)
}

/// A position in the text of one row update.
struct Scan<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

/// Integers of at most this many digits fit an `i64` whatever they are.
const MAX_INTEGER_DIGITS: usize = 18;

impl<'a> Scan<'a> {
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next byte that is not whitespace (not consumed).
    fn peek(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.bytes.get(self.pos).copied()
    }

    /// Consumes `byte`, the next one that is not whitespace.
    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    /// Consumes `word` (`true`, `null`...).
    fn literal(&mut self, word: &str) -> Option<()> {
        self.skip_whitespace();
        self.bytes[self.pos..]
            .starts_with(word.as_bytes())
            .then(|| self.pos += word.len())
    }

    /// A string without escapes or control characters (JSON forbids the
    /// latter; the former are left to serde).
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.pos;
        let len = self.bytes[start..]
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if self.bytes[start + len] != b'"' {
            return None;
        }
        self.pos = start + len + 1;
        // The text is UTF-8 and `"` is ASCII: a char boundary.
        self.text.get(start..start + len)
    }

    /// A non-negative integer written plainly (no sign, fraction, exponent
    /// or leading zero).
    fn integer(&mut self) -> Option<i64> {
        self.skip_whitespace();
        let start = self.pos;
        let digits = self.bytes[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits == 0 || digits > MAX_INTEGER_DIGITS || (digits > 1 && self.bytes[start] == b'0') {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.bytes.get(start + digits) {
            return None;
        }
        self.pos = start + digits;
        self.text.get(start..start + digits)?.parse().ok()
    }

    /// An atom: string (interned), integer, boolean, `["uuid", ..]` or
    /// `["named-uuid", ..]`.
    fn atom(&mut self) -> Option<Atom> {
        match self.peek()? {
            b'"' => Some(Atom::String(intern(self.string()?))),
            b't' => self.literal("true").map(|()| Atom::Boolean(true)),
            b'f' => self.literal("false").map(|()| Atom::Boolean(false)),
            b'0'..=b'9' => self.integer().map(Atom::Integer),
            b'[' => {
                self.pos += 1;
                let atom = match self.string()? {
                    "uuid" => {
                        self.eat(b',')?;
                        Atom::Uuid(Uuid::parse(self.string()?).ok()?)
                    }
                    "named-uuid" => {
                        self.eat(b',')?;
                        Atom::NamedUuid(intern(self.string()?))
                    }
                    _ => return None,
                };
                self.eat(b']')?;
                Some(atom)
            }
            _ => None,
        }
    }

    /// A map value whose key is not kept: read and dropped, never interned.
    fn skip_atom(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'0'..=b'9' => self.integer().map(drop),
            _ => None,
        }
    }

    /// `,` (true) or `close` (false) after an element.
    fn next_or_end(&mut self, close: u8) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.pos += 1;
                Some(true)
            }
            b if b == close => {
                self.pos += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// A datum: a bare atom (a set of one), `["set", [..]]`, `["map", [..]]`;
    /// of a map only the pairs whose string key is in `keys`, if given.
    fn datum(&mut self, keys: Option<&[String]>) -> Option<Datum> {
        if self.peek()? != b'[' {
            return self.atom().map(Datum::scalar);
        }
        let start = self.pos;
        self.pos += 1;
        let datum = match self.string()? {
            "set" => {
                self.eat(b',')?;
                Datum::set(exact(&SET_SCRATCH, |atoms| self.atoms(atoms).ok_or(())).ok()?)
            }
            "map" => {
                self.eat(b',')?;
                Datum::map(exact(&MAP_SCRATCH, |pairs| self.pairs(keys, pairs).ok_or(())).ok()?)
            }
            "uuid" | "named-uuid" => {
                self.pos = start;
                return self.atom().map(Datum::scalar);
            }
            _ => return None,
        };
        self.eat(b']')?;
        Some(datum)
    }

    /// The elements of a set, pushed onto `atoms`.
    fn atoms(&mut self, atoms: &mut Vec<Atom>) -> Option<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.pos += 1;
            return Some(());
        }
        loop {
            atoms.push(self.atom()?);
            if !self.next_or_end(b']')? {
                return Some(());
            }
        }
    }

    /// The pairs of a map, pushed onto `pairs` (see [`Scan::datum`]).
    fn pairs(&mut self, keys: Option<&[String]>, pairs: &mut Vec<(Atom, Atom)>) -> Option<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.pos += 1;
            return Some(());
        }
        loop {
            self.eat(b'[')?;
            match keys {
                Some(keys) if self.peek()? == b'"' => {
                    let key = self.string()?;
                    self.eat(b',')?;
                    if keys.iter().any(|k| k == key) {
                        let key = Atom::String(intern(key));
                        pairs.push((key, self.atom()?));
                    } else {
                        self.skip_atom()?;
                    }
                }
                _ => {
                    let key = self.atom()?;
                    self.eat(b',')?;
                    pairs.push((key, self.atom()?));
                }
            }
            self.eat(b']')?;
            if !self.next_or_end(b']')? {
                return Some(());
            }
        }
    }

    /// `{"initial"|"insert"|"modify": {columns}}` or `{"delete": null}`.
    fn row_update(&mut self, uuid: Uuid, keys: Option<&TableKeys>) -> Option<RowUpdate> {
        self.eat(b'{')?;
        let op = match self.string()? {
            "initial" => RowOp::Initial,
            "insert" => RowOp::Insert,
            "modify" => RowOp::Modify,
            "delete" => RowOp::Delete,
            _ => return None,
        };
        self.eat(b':')?;
        let columns = if op == RowOp::Delete {
            self.literal("null")?;
            Vec::new()
        } else {
            exact(&COLUMN_SCRATCH, |columns| {
                self.columns(keys, columns).ok_or(())
            })
            .ok()?
        };
        self.eat(b'}')?;
        Some(RowUpdate { uuid, op, columns })
    }

    /// The columns of a row, pushed onto `columns`.
    fn columns(
        &mut self,
        keys: Option<&TableKeys>,
        columns: &mut Vec<(crate::datum::Str, Datum)>,
    ) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.pos += 1;
            return Some(());
        }
        loop {
            let name = intern(self.string()?);
            self.eat(b':')?;
            let datum = self.datum(column_keys(keys, &name))?;
            columns.push((name, datum));
            if !self.next_or_end(b'}')? {
                return Some(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::visitors::{from_text, RowUpdateSeed};
    use proptest::prelude::*;
    use serde_json::{json, Value};

    const UUID: Uuid = Uuid(0x2222_2222_2222_4222_8222_2222_2222_2222);

    /// What the serde visitors make of `text`.
    fn visitors(text: &str, keys: Option<&TableKeys>) -> Result<RowUpdate, String> {
        from_text(text, RowUpdateSeed(UUID, keys)).map_err(|e| e.to_string())
    }

    fn keys() -> Vec<(String, Vec<String>)> {
        vec![("a".to_string(), vec!["k".to_string(), "é".to_string()])]
    }

    #[test]
    fn a_plain_port_row_is_scanned_like_the_visitors_decode_it() {
        let text = json!({"initial": {
            "addresses": "fa:16:3e:00:60:d8 10.1.142.47",
            "external_ids": ["map", [["neutron:cidrs", "10.1.142.47/24"], ["neutron:mtu", ""], ["neutron:host_id", "host-003"]]],
            "name": "a114e027-ab36-4ccc-bfee-e9a77c4762eb",
            "options": ["map", [["requested-chassis", "host-003"]]],
            "ports": ["set", [["uuid", "000080a4-ebea-4014-a89c-82395e3b18f1"], ["uuid", "0000ce2d-fe79-4e18-baf2-59a6c741f6a0"]]],
            "tag": 42, "up": true, "enabled": ["set", []], "dhcp": ["named-uuid", "row1"]}})
        .to_string();
        let keys = vec![(
            "external_ids".to_string(),
            vec!["neutron:cidrs".to_string(), "neutron:host_id".to_string()],
        )];
        for keys in [None, Some(keys.as_slice())] {
            let scanned = decode_row(&text, UUID, keys).expect("a plain row is scanned");
            assert_eq!(Ok(scanned), visitors(&text, keys));
        }
        let pretty =
            serde_json::to_string_pretty(&serde_json::from_str::<Value>(&text).unwrap()).unwrap();
        assert_eq!(
            decode_row(&pretty, UUID, None).map(Ok),
            Some(visitors(&text, None))
        );
        let delete = r#"{"delete": null}"#;
        assert_eq!(
            decode_row(delete, UUID, None).map(Ok),
            Some(visitors(delete, None))
        );
    }

    #[test]
    fn rows_outside_the_plain_subset_are_left_to_the_visitors() {
        for text in [
            r#"{"initial": {"a": "esc\"aped"}}"#,
            r#"{"initial": {"a": -1}}"#,
            r#"{"initial": {"a": 1.5}}"#,
            r#"{"initial": {"a": 12345678901234567890}}"#,
            r#"{"initial": {"a": null}}"#,
            r#"{"initial": {"a": ["set"]}}"#,
            r#"{"initial": {"a": ["uuid", "not-a-uuid"]}}"#,
            r#"{"initial": {"a": ["map", [["k"]]]}}"#,
            r#"{"initial": {}, "modify": {}}"#,
            r#"{"delete": {}}"#,
            r#"{"other": {}}"#,
            r#"{"initial": {"a": 1}} x"#,
            r#"{"initial": {"a": 01}}"#,
            r#"{"initial": {"a": truex}}"#,
        ] {
            assert_eq!(decode_row(text, UUID, None), None, "{text}");
        }
    }

    /// An atom in wire notation: plain ones and ones the scanner declines.
    fn atom() -> impl Strategy<Value = Value> {
        prop_oneof![
            "[a-ck\\\\\"é\n ]{0,4}".prop_map(Value::from),
            (0i64..2000).prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
            any::<u128>().prop_map(|u| json!(["uuid", Uuid(u).to_string()])),
            "[a-z]{0,3}".prop_map(|n| json!(["named-uuid", n])),
            Just(Value::Null),
        ]
    }

    fn datum() -> impl Strategy<Value = Value> {
        prop_oneof![
            atom(),
            prop::collection::vec(atom(), 0..4).prop_map(|a| json!(["set", a])),
            prop::collection::vec((atom(), atom()), 0..4).prop_map(|p| json!([
                "map",
                p.into_iter()
                    .map(|(k, v)| json!([k, v]))
                    .collect::<Vec<_>>()
            ])),
            prop::collection::vec(("[ké]{1,2}", atom()), 0..4).prop_map(|p| json!([
                "map",
                p.into_iter()
                    .map(|(k, v)| json!([k, v]))
                    .collect::<Vec<_>>()
            ])),
        ]
    }

    proptest! {
        #[test]
        fn an_accepted_row_decodes_exactly_as_the_visitors_decode_it(
            op in prop::sample::select(vec!["initial", "insert", "modify", "delete", "other"]),
            columns in prop::collection::vec(("[a-c]", datum()), 0..5),
            pretty in any::<bool>(),
            projected in any::<bool>(),
            cut in any::<prop::sample::Index>(),
        ) {
            // Written by hand: duplicate column names are kept, in order,
            // by both decoders.
            let body = if op == "delete" {
                "null".to_string()
            } else {
                let columns = columns
                    .iter()
                    .map(|(name, d)| {
                        let d = if pretty { serde_json::to_string_pretty(d).unwrap() } else { d.to_string() };
                        format!("{}: {d}", json!(name))
                    })
                    .collect::<Vec<_>>();
                format!("{{{}}}", columns.join(if pretty { ",\n  " } else { "," }))
            };
            let text = format!("{{{}: {body}}}", json!(op));
            let keys = keys();
            let keys = projected.then_some(keys.as_slice());
            if let Some(scanned) = decode_row(&text, UUID, keys) {
                prop_assert_eq!(Ok(scanned), visitors(&text, keys));
            }
            // A row cut short is never accepted.
            let at = cut.index(text.len());
            if let Some(prefix) = text.get(..at) {
                prop_assert_eq!(decode_row(prefix, UUID, keys), None);
            }
        }

        #[test]
        fn the_scanner_never_panics(text in ".{0,80}") {
            let keys = keys();
            let _ = decode_row(&text, UUID, None);
            let _ = decode_row(&text, UUID, Some(&keys));
        }
    }
}
