//! `/etc/iproute2/rt_tables` read the way iproute2 reads it
//! (`lib/rt_names.c`): one `ID NAME` entry per line, the id decimal or
//! `0x` hexadecimal, blank lines and `#` comments skipped, anything after
//! the name ignored. The file is bytes, not text: a comment or a name in
//! another encoding is still a line like any other.
//!
//! Where iproute2 reports a line it cannot parse and stops, the agent
//! keeps reading: the line is kept as *not understood*, names no table,
//! and every number in it, decimal or hexadecimal, counts as taken, so
//! the agent never allocates a number whose owner it could not read
//! ([`RtTables::taken`]).

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::Arc;

/// `/etc/iproute2/rt_tables`, parsed once. Cheap to clone (the parsed file
/// is shared): the observer hands the same value to every reconcile until
/// the file changes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RtTables(Arc<Parsed>);

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Parsed {
    bytes: Vec<u8>,
    /// `(id, name's byte range)` of every entry line, in file order.
    entries: Vec<(u32, Range<usize>)>,
    /// Every id an entry names and every number a line not understood holds.
    taken: BTreeSet<u32>,
    /// `(1-based line number, the line's byte range)` of the lines that
    /// are neither blank, a comment nor an entry.
    not_understood: Vec<(usize, Range<usize>)>,
}

/// What one line of the file is.
enum Line {
    /// Blank, or a `#` comment.
    Nothing,
    /// `ID NAME`: the id and the name's byte range within the line.
    Entry(u32, Range<usize>),
    NotUnderstood,
}

/// C's `isspace` in the "C" locale, which `sscanf` skips.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// An id as iproute2's `sscanf` formats take it whole: `0x` and hex
/// digits, or decimal digits; `None` for anything else or above `u32`.
fn parse_id(token: &[u8]) -> Option<u32> {
    let (digits, radix) = match token.strip_prefix(b"0x") {
        Some(hex) if !hex.is_empty() && hex.iter().all(u8::is_ascii_hexdigit) => (hex, 16),
        Some(_) => return None,
        None if !token.is_empty() && token.iter().all(u8::is_ascii_digit) => (token, 10),
        None => return None,
    };
    // ASCII digits, so valid UTF-8.
    u32::from_str_radix(std::str::from_utf8(digits).ok()?, radix).ok()
}

fn parse_line(line: &[u8]) -> Line {
    let next_space = |from: usize| {
        line[from..]
            .iter()
            .position(|b| is_space(*b))
            .map_or(line.len(), |p| from + p)
    };
    let next_word = |from: usize| {
        line[from..]
            .iter()
            .position(|b| !is_space(*b))
            .map(|p| from + p)
    };
    let Some(id_start) = next_word(0) else {
        return Line::Nothing;
    };
    if line[id_start] == b'#' {
        return Line::Nothing;
    }
    let id_end = next_space(id_start);
    let Some(id) = parse_id(&line[id_start..id_end]) else {
        return Line::NotUnderstood;
    };
    // A name starting with `#` is a comment where the name should be:
    // iproute2 would call the table "#...", which nobody meant.
    match next_word(id_end) {
        Some(name_start) if line[name_start] != b'#' => {
            Line::Entry(id, name_start..next_space(name_start))
        }
        _ => Line::NotUnderstood,
    }
}

/// Every number in `line` in either notation iproute2 reads: each run of
/// decimal digits, and each `0x`/`0X` followed by hex digits (read as hex,
/// its digits also as decimal). Values above `u32` are left out: no table
/// has them.
fn numbers_in(line: &[u8]) -> Vec<u32> {
    let run = |from: usize, pred: fn(&u8) -> bool| {
        line[from..]
            .iter()
            .position(|b| !pred(b))
            .map_or(line.len(), |p| from + p)
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        if !line[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let hex_prefix = line[i] == b'0'
            && matches!(line.get(i + 1), Some(b'x' | b'X'))
            && line.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        if hex_prefix {
            let end = run(i + 2, u8::is_ascii_hexdigit);
            out.extend(parse_id(&[b"0x", &line[i + 2..end]].concat()));
            out.push(0);
            // The digits after `0x` are scanned again as decimal runs.
            i += 2;
            continue;
        }
        let end = run(i, u8::is_ascii_digit);
        out.extend(parse_id(&line[i..end]));
        i = end;
    }
    out
}

impl Parsed {
    fn new(bytes: Vec<u8>) -> Parsed {
        let mut p = Parsed {
            bytes,
            ..Parsed::default()
        };
        let mut start = 0;
        for (i, line) in p.bytes.split(|b| *b == b'\n').enumerate() {
            let span = start..start + line.len();
            start = span.end + 1;
            match parse_line(line) {
                Line::Nothing => {}
                Line::Entry(id, name) => {
                    p.taken.insert(id);
                    p.entries
                        .push((id, span.start + name.start..span.start + name.end));
                }
                Line::NotUnderstood => {
                    p.taken.extend(numbers_in(line));
                    p.not_understood.push((i + 1, span));
                }
            }
        }
        p
    }
}

impl RtTables {
    /// The file as iproute2 installs it: the four reserved tables only.
    pub const RESERVED: &'static str = "255\tlocal\n254\tmain\n253\tdefault\n0\tunspec\n";

    /// Parses the file's bytes.
    pub fn parse(bytes: impl Into<Vec<u8>>) -> RtTables {
        RtTables(Arc::new(Parsed::new(bytes.into())))
    }

    /// The file's bytes as read.
    pub fn bytes(&self) -> &[u8] {
        &self.0.bytes
    }

    /// The file as text, bytes that are not UTF-8 replaced (for the
    /// scenarios' node-state shape and for printing).
    pub fn text_lossy(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.0.bytes)
    }

    /// `(id, name)` of every entry line, in file order; a name that is not
    /// UTF-8 is shown with replacement characters.
    pub fn entries(&self) -> impl Iterator<Item = (u32, Cow<'_, str>)> {
        self.0
            .entries
            .iter()
            .map(|(id, name)| (*id, String::from_utf8_lossy(&self.0.bytes[name.clone()])))
    }

    /// The id of the first entry named `name`, compared byte for byte
    /// (upstream stops at the first too).
    pub fn lookup(&self, name: &str) -> Option<u32> {
        self.0
            .entries
            .iter()
            .find(|(_, n)| &self.0.bytes[n.clone()] == name.as_bytes())
            .map(|(id, _)| *id)
    }

    /// The name of the first entry with id `number`.
    pub fn name_of(&self, number: u32) -> Option<Cow<'_, str>> {
        self.0
            .entries
            .iter()
            .find(|(id, _)| *id == number)
            .map(|(_, n)| String::from_utf8_lossy(&self.0.bytes[n.clone()]))
    }

    /// Every number the file takes: the ids of its entries and every
    /// number, in either notation, of a line not understood.
    pub fn taken(&self) -> &BTreeSet<u32> {
        &self.0.taken
    }

    /// `(1-based line number, the line's bytes)` of each line that is
    /// neither blank, a comment nor an `ID NAME` entry.
    pub fn not_understood(&self) -> impl Iterator<Item = (usize, &[u8])> {
        self.0
            .not_understood
            .iter()
            .map(|(n, span)| (*n, &self.0.bytes[span.clone()]))
    }

    /// The line upstream appends for a new bridge table.
    pub fn entry_line(number: u32, name: &str) -> String {
        format!("{number} {name}\n")
    }

    /// Appends an entry as upstream does (no rewrite of existing lines).
    pub fn append(&mut self, number: u32, name: &str) {
        let mut bytes = self.0.bytes.clone();
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(Self::entry_line(number, name).as_bytes());
        *self = RtTables::parse(bytes);
    }
}

impl From<&str> for RtTables {
    fn from(text: &str) -> RtTables {
        RtTables::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(t: &RtTables) -> Vec<(u32, String)> {
        t.entries().map(|(n, s)| (n, s.into_owned())).collect()
    }

    fn taken(t: &RtTables) -> Vec<u32> {
        t.taken().iter().copied().collect()
    }

    #[test]
    fn decimal_entries_comments_and_trailing_words() {
        let t = RtTables::from(
            "#\n255\tlocal\n254\tmain\n#1\tinr.ruhep\n1 br-ex\n 7 indented\n200 br-vlan extra\n",
        );
        assert_eq!(
            entries(&t),
            [
                (255, "local"),
                (254, "main"),
                (1, "br-ex"),
                (7, "indented"),
                (200, "br-vlan")
            ]
            .map(|(n, s)| (n, s.to_string()))
        );
        assert_eq!(t.lookup("br-ex"), Some(1));
        assert_eq!(t.lookup("inr.ruhep"), None, "a commented-out entry");
        assert_eq!(t.name_of(200).as_deref(), Some("br-vlan"));
        assert_eq!(taken(&t), [1, 7, 200, 254, 255]);
        assert_eq!(t.not_understood().count(), 0);
    }

    #[test]
    fn hexadecimal_ids_are_ids() {
        let t = RtTables::from("0xc8 customer\n0x1\tbr-ex # an operator's\n0xFF up\n");
        assert_eq!(t.lookup("customer"), Some(200));
        assert_eq!(t.lookup("br-ex"), Some(1));
        assert_eq!(t.name_of(255).as_deref(), Some("up"));
        assert_eq!(taken(&t), [1, 200, 255]);
    }

    #[test]
    fn bytes_that_are_not_utf8_are_read_where_they_are() {
        let mut file = b"# caf\xe9 \xff\xfe\n".to_vec();
        file.extend_from_slice(b"5 t\xe9ble\n6 br-ex\n\xff\xff junk 9\n");
        let t = RtTables::parse(file.clone());
        assert_eq!(t.bytes(), &file[..]);
        assert_eq!(t.lookup("br-ex"), Some(6));
        assert_eq!(t.name_of(5).as_deref(), Some("t\u{fffd}ble"));
        assert_eq!(t.lookup("t\u{fffd}ble"), None, "names compare as bytes");
        assert_eq!(taken(&t), [5, 6, 9]);
        let junk: Vec<_> = t.not_understood().collect();
        assert_eq!(junk, [(4, &b"\xff\xff junk 9"[..])]);
        assert!(t.text_lossy().contains("junk 9"));
    }

    #[test]
    fn a_line_not_understood_takes_every_number_in_it() {
        let t = RtTables::from(concat!(
            "12abc br-a\n",    // iproute2 would read id 12
            "0x1g br-b\n",     // iproute2 would read id 1
            "0X1f br-c\n",     // uppercase X is no prefix iproute2 knows
            "-3 br-d\n",       // iproute2 skips negative ids
            "40\n",            // no name
            "41 # reserved\n", // a comment where the name goes
            "99999999999 big\n",
            "0x zero\n",
            "br-e 42\n",
        ));
        assert_eq!(t.entries().count(), 0);
        assert_eq!(taken(&t), [0, 1, 3, 12, 31, 40, 41, 42]);
        let lines: Vec<usize> = t.not_understood().map(|(n, _)| n).collect();
        assert_eq!(lines, (1..=9).collect::<Vec<_>>());
        for name in ["br-a", "br-b", "br-c", "br-d", "br-e", "big", "zero"] {
            assert_eq!(t.lookup(name), None, "{name}");
        }
    }

    #[test]
    fn duplicates_keep_the_first_entry_and_take_every_id() {
        let t = RtTables::from("3 br-ex\n4 br-ex\n0x3 other\n");
        assert_eq!(t.lookup("br-ex"), Some(3));
        assert_eq!(t.name_of(3).as_deref(), Some("br-ex"));
        assert_eq!(taken(&t), [3, 4]);
    }

    #[test]
    fn appending_after_a_last_line_without_newline() {
        let mut t = RtTables::from("0x10 ops");
        t.append(1, "br-ex");
        assert_eq!(t.bytes(), b"0x10 ops\n1 br-ex\n");
        assert_eq!(taken(&t), [1, 16]);
        let mut empty = RtTables::default();
        empty.append(2, "br-vlan");
        assert_eq!(empty.text_lossy(), "2 br-vlan\n");
    }

    #[test]
    fn blank_and_whitespace_only_lines_are_nothing() {
        let t = RtTables::from("\n \t\r\n\x0b\n   # indented comment\n");
        assert!(t.taken().is_empty());
        assert_eq!(t.not_understood().count(), 0);
    }
}
