//! oslo.config's `$option` substitution in values: `$name` or `${name}`
//! is replaced by the effective value of option `name` of the same section
//! (falling back to `[DEFAULT]`), `${section.name}` names the section, and
//! `$$` or `\$` is a literal `$`. A `$` that does not start a valid name is
//! kept as is (Python's `Template.safe_substitute`).

use std::collections::BTreeMap;

use crate::options::{self, OptSpec};
use crate::values::Typed;
use crate::{fields, Config};

type Raw = BTreeMap<String, BTreeMap<String, String>>;

/// Why a substitution failed, for `[section] option: why (value)`.
pub type Why = String;

/// Replaces every placeholder in the values of `raw` (canonical sections
/// and names). Returns the options whose substitution failed.
pub fn substitute_all(raw: &Raw) -> (Raw, Vec<(&'static OptSpec, Why)>) {
    let mut out = raw.clone();
    let mut failed = Vec::new();
    for spec in options::OPTIONS {
        let Some(text) = raw.get(spec.section).and_then(|s| s.get(spec.name)) else {
            continue;
        };
        if !text.contains('$') {
            continue;
        }
        match expand(raw, spec.section, text, 0) {
            Ok(v) => {
                out.entry(spec.section.to_string())
                    .or_default()
                    .insert(spec.name.to_string(), v);
            }
            Err(why) => failed.push((spec, why)),
        }
    }
    (out, failed)
}

/// References deeper than this are a loop (`a = $b`, `b = $a`).
const MAX_DEPTH: usize = 16;

fn expand(raw: &Raw, section: &str, text: &str, depth: usize) -> Result<String, Why> {
    if depth > MAX_DEPTH {
        return Err("substitution loops".into());
    }
    let text = text.replace("\\$", "$$");
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
            continue;
        }
        let (key, tail) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) if is_identifier(&braced[..end]) => {
                    (Some(&braced[..end]), &braced[end + 1..])
                }
                _ => (None, after),
            }
        } else {
            let len = identifier_len(after);
            if len > 0 {
                (Some(&after[..len]), &after[len..])
            } else {
                (None, after)
            }
        };
        match key {
            Some(key) => {
                out.push_str(&lookup(raw, section, key, depth)?);
                rest = tail;
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Python's `string.Template` identifier as oslo widens it:
/// `[_a-z][._a-z0-9]*`, any case.
fn identifier_len(s: &str) -> usize {
    let b = s.as_bytes();
    if b.is_empty() || !(b[0] == b'_' || b[0].is_ascii_alphabetic()) {
        return 0;
    }
    1 + b[1..]
        .iter()
        .take_while(|c| **c == b'_' || **c == b'.' || c.is_ascii_alphanumeric())
        .count()
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty() && identifier_len(s) == s.len()
}

/// The text an option contributes when substituted: its effective value
/// as Python's `str()` prints the converted value; unset is empty.
fn lookup(raw: &Raw, section: &str, key: &str, depth: usize) -> Result<String, Why> {
    let candidates: Vec<(&str, &str)> = match key.split_once('.') {
        Some((s, o)) => vec![(s, o), ("DEFAULT", key)],
        None => vec![(section, key), ("DEFAULT", key)],
    };
    let spec = candidates
        .iter()
        .find_map(|(s, o)| options::find(&options::normalize_section(s), o))
        .ok_or_else(|| format!("substitution key {key} not found"))?;
    let typed = match raw.get(spec.section).and_then(|s| s.get(spec.name)) {
        Some(text) => {
            let text = expand(raw, spec.section, text, depth + 1)?;
            Some(
                spec.parse(&text)
                    .map_err(|why| format!("substituting {key}: {why}"))?,
            )
        }
        None => fields::get(&Config::default(), spec),
    };
    Ok(typed.map(|t| python_str(&t)).unwrap_or_default())
}

fn python_str(t: &Typed) -> String {
    match t {
        Typed::Str(s) => s.clone(),
        Typed::Int(i) => i.to_string(),
        Typed::Bool(true) => "True".into(),
        Typed::Bool(false) => "False".into(),
        Typed::Ip(ip) => ip.to_string(),
        Typed::List(l) => format!(
            "[{}]",
            l.iter()
                .map(|i| format!("'{i}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(entries: &[(&str, &str, &str)]) -> Raw {
        let mut r = Raw::new();
        for (s, o, v) in entries {
            r.entry(s.to_string())
                .or_default()
                .insert(o.to_string(), v.to_string());
        }
        r
    }

    fn value(r: &Raw, s: &str, o: &str) -> String {
        r[s][o].clone()
    }

    #[test]
    fn references_resolve_in_the_same_section_then_default() {
        let r = raw(&[
            ("DEFAULT", "bgp_nic", "nic-$bgp_AS"),
            ("DEFAULT", "log_dir", "/var/log/${bgp_vrf}"),
            ("ovn", "ovn_sb_ca_cert", "$ovn_nb_ca_cert"),
            ("ovn", "ovn_nb_ca_cert", "/etc/ca.pem"),
            (
                "local_ovn_cluster",
                "bgp_chassis_id",
                "${ovn.ovn_nb_ca_cert}-$driver",
            ),
        ]);
        let (out, failed) = substitute_all(&r);
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(value(&out, "DEFAULT", "bgp_nic"), "nic-64999");
        assert_eq!(value(&out, "DEFAULT", "log_dir"), "/var/log/bgp-vrf");
        assert_eq!(value(&out, "ovn", "ovn_sb_ca_cert"), "/etc/ca.pem");
        assert_eq!(
            value(&out, "local_ovn_cluster", "bgp_chassis_id"),
            "/etc/ca.pem-ovn_bgp_driver"
        );
    }

    #[test]
    fn escapes_and_non_placeholders_are_literal() {
        let r = raw(&[("agent", "root_helper", "a$$b \\$c $1 ${ d")]);
        let (out, failed) = substitute_all(&r);
        assert!(failed.is_empty());
        assert_eq!(value(&out, "agent", "root_helper"), "a$b $c $1 ${ d");
    }

    #[test]
    fn unknown_keys_and_loops_fail() {
        let (_, failed) = substitute_all(&raw(&[("DEFAULT", "bgp_nic", "$state_path")]));
        assert_eq!(failed[0].1, "substitution key state_path not found");
        let (_, failed) = substitute_all(&raw(&[
            ("DEFAULT", "bgp_nic", "$bgp_vrf"),
            ("DEFAULT", "bgp_vrf", "$bgp_nic"),
        ]));
        assert_eq!(failed.len(), 2);
        assert!(failed[0].1.contains("loops"));
    }

    #[test]
    fn non_string_values_print_as_python_does() {
        let r = raw(&[
            ("DEFAULT", "bgp_nic", "$expose_tenant_networks"),
            (
                "agent",
                "root_helper",
                "${DEFAULT.address_scopes}|$bgp_router_id|",
            ),
            ("DEFAULT", "address_scopes", "a, b"),
        ]);
        let (out, _) = substitute_all(&r);
        assert_eq!(value(&out, "DEFAULT", "bgp_nic"), "False");
        assert_eq!(value(&out, "agent", "root_helper"), "['a', 'b']||");
    }
}
