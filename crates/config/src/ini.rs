//! An INI parser with oslo.config's rules, so a file upstream accepts is
//! read the same way here.
//!
//! oslo's rules, which differ from Python's `configparser` and from most INI
//! crates: comments are whole lines starting with `#` or `;` (a `#` after a
//! value is part of the value); `key = value` and `key: value` both assign,
//! split at whichever of `=` and `:` comes first; a value wrapped in matching
//! single or double quotes loses them; an indented line continues the
//! previous value (joined with a newline) and a blank line ends it; an
//! option repeated in a file keeps its last value; a section repeated in a
//! file is merged; `[DEFAULT]` values are NOT inherited by other sections.

use std::collections::BTreeMap;

use crate::options::normalize_section;

/// A syntax error, with the 1-based line it is on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {why}: {text:?}")]
pub struct IniError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with the line.
    pub why: &'static str,
    /// The line, without trailing whitespace.
    pub text: String,
}

/// One assignment as written in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub value: String,
    /// 1-based line of the key.
    pub line: usize,
}

/// A parsed file: section (normalised as oslo does) → option → last value.
/// Sections that appear with no option are kept, so they can be checked too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ini {
    pub sections: BTreeMap<String, BTreeMap<String, Entry>>,
    /// The line of each section's first header.
    pub section_lines: BTreeMap<String, usize>,
}

impl Ini {
    /// The value of `[section] key`, if the file sets it.
    pub fn get(&self, section: &str, key: &str) -> Option<&Entry> {
        self.sections.get(section).and_then(|s| s.get(key))
    }
}

/// Parses a whole file's text.
pub fn parse(text: &str) -> Result<Ini, IniError> {
    let mut ini = Ini::default();
    let mut section: Option<String> = None;
    // The assignment being read: key, its line, and its value lines.
    let mut pending: Option<(String, usize, Vec<String>)> = None;

    let flush = |ini: &mut Ini,
                 section: &Option<String>,
                 pending: &mut Option<(String, usize, Vec<String>)>| {
        if let (Some(sec), Some((key, line, lines))) = (section, pending.take()) {
            ini.sections.entry(sec.clone()).or_default().insert(
                key,
                Entry {
                    value: lines.join("\n"),
                    line,
                },
            );
        }
    };

    for (idx, raw) in text.lines().enumerate() {
        let lineno = idx + 1;
        let line = raw.trim_end();
        let err = |why| IniError {
            line: lineno,
            why,
            text: line.to_string(),
        };
        if line.is_empty() {
            flush(&mut ini, &section, &mut pending);
            continue;
        }
        if line.starts_with([' ', '\t']) {
            match pending.as_mut() {
                Some((_, _, lines)) => lines.push(line.trim_start().to_string()),
                None => return Err(err("continuation line with no option before it")),
            }
            continue;
        }
        flush(&mut ini, &section, &mut pending);
        if line.starts_with('[') {
            if !line.ends_with(']') {
                return Err(err("section header without closing ']'"));
            }
            if line.len() <= 2 {
                return Err(err("section header without a name"));
            }
            let name = normalize_section(&line[1..line.len() - 1]);
            ini.sections.entry(name.clone()).or_default();
            ini.section_lines.entry(name.clone()).or_insert(lineno);
            section = Some(name);
        } else if line.starts_with(['#', ';']) {
            // A comment.
        } else {
            let (key, value) =
                split_key_value(line).ok_or_else(|| err("neither '=' nor ':' in an assignment"))?;
            if key.is_empty() {
                return Err(err("assignment without an option name"));
            }
            if section.is_none() {
                return Err(err("option before any [section]"));
            }
            pending = Some((key.to_string(), lineno, vec![value.to_string()]));
        }
    }
    flush(&mut ini, &section, &mut pending);
    Ok(ini)
}

/// Splits `key = value` / `key: value` at the first of `=` and `:`, trims
/// both and strips one pair of matching quotes around the value.
fn split_key_value(line: &str) -> Option<(&str, &str)> {
    let at = match (line.find('='), line.find(':')) {
        (Some(e), Some(c)) => e.min(c),
        (Some(e), None) => e,
        (None, Some(c)) => c,
        (None, None) => return None,
    };
    let key = line[..at].trim();
    let mut value = line[at + 1..].trim();
    let quoted = value.starts_with(['"', '\'']) && value.ends_with(&value[..1]);
    if quoted {
        // A lone quote character is "quoted" too: oslo turns it into "".
        value = if value.len() >= 2 {
            &value[1..value.len() - 1]
        } else {
            ""
        };
    }
    Some((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(ini: &Ini, s: &str, k: &str) -> String {
        ini.get(s, k).unwrap().value.clone()
    }

    #[test]
    fn equals_and_colon_both_assign_at_the_first_separator() {
        let ini = parse("[DEFAULT]\na = tcp:1.2.3.4:6642\nb: x=y\n").unwrap();
        assert_eq!(value(&ini, "DEFAULT", "a"), "tcp:1.2.3.4:6642");
        assert_eq!(value(&ini, "DEFAULT", "b"), "x=y");
    }

    #[test]
    fn trailing_hash_is_part_of_the_value() {
        let ini = parse("[DEFAULT]\ndriver = nb_ovn_bgp_driver # mine\n").unwrap();
        assert_eq!(value(&ini, "DEFAULT", "driver"), "nb_ovn_bgp_driver # mine");
    }

    #[test]
    fn matching_quotes_are_stripped_once() {
        let ini = parse("[s]\na = \"x y\"\nb = 'z'\nc = \"q'\nd = \"\n").unwrap();
        assert_eq!(value(&ini, "s", "a"), "x y");
        assert_eq!(value(&ini, "s", "b"), "z");
        assert_eq!(value(&ini, "s", "c"), "\"q'");
        assert_eq!(value(&ini, "s", "d"), "");
    }

    #[test]
    fn indented_lines_continue_and_blank_line_ends_a_value() {
        let ini = parse("[s]\na = one,\n  two\n\tthree\n\nb = 2\n").unwrap();
        assert_eq!(value(&ini, "s", "a"), "one,\ntwo\nthree");
        assert_eq!(value(&ini, "s", "b"), "2");
    }

    #[test]
    fn last_assignment_wins_and_repeated_sections_merge() {
        let ini = parse("[s]\na = 1\n[t]\nx = 0\n[s]\na = 2\nb = 3\n").unwrap();
        assert_eq!(value(&ini, "s", "a"), "2");
        assert_eq!(value(&ini, "s", "b"), "3");
        assert_eq!(ini.get("s", "a").unwrap().line, 6);
    }

    #[test]
    fn section_names_are_lowercased_except_default() {
        let ini = parse("[OVN]\na = 1\n[DEFAULT]\nb = 2\n[Default]\nc = 3\n").unwrap();
        assert_eq!(value(&ini, "ovn", "a"), "1");
        assert_eq!(value(&ini, "DEFAULT", "b"), "2");
        assert_eq!(value(&ini, "default", "c"), "3");
    }

    #[test]
    fn comments_and_empty_sections_are_kept_apart() {
        let ini = parse("# top\n; also\n[empty]\n[s]\n#a = 1\n").unwrap();
        assert!(ini.sections["empty"].is_empty());
        assert!(ini.get("s", "a").is_none());
    }

    #[test]
    fn syntax_errors_name_the_line() {
        for (text, line) in [
            ("a = 1\n", 1),
            ("[s]\n  orphan\n", 2),
            ("[s\n", 1),
            ("[]\n", 1),
            ("[s]\nnovalue\n", 2),
            ("[s]\n= 1\n", 2),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
        }
    }
}
