//! Structure-aware edits of JSON documents (OVSDB rows in wire notation,
//! node states, scenario configs), driven by the fuzzer's bytes: each edit
//! keeps the document JSON and mostly plausible, so the input reaches the
//! code past the parsers instead of dying in them.

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Value};

/// Values that are well-formed but meaningless or hostile for the agent:
/// addresses it must never expose, names the kernel refuses, numbers at
/// the edges of their types.
pub const NONSENSE: &[&str] = &[
    "",
    " ",
    "0.0.0.0",
    "127.0.0.1",
    "255.255.255.255",
    "224.0.0.1",
    "169.254.0.1",
    "::",
    "::1",
    "fe80::1",
    "ff02::1",
    "10.0.0.1/33",
    "2001:db8::/129",
    "00:00:00:00:00:00",
    "ff:ff:ff:ff:ff:ff",
    "01:00:5e:00:00:01",
    "fa:16:3e:00:00:0",
    "unknown",
    "router",
    "dynamic",
    "lo",
    "eth0",
    "br-ex",
    "br-int",
    "bgp-nic",
    "bgp-vrf",
    "a-name-longer-than-15-bytes",
    "nét-網絡-🦀",
    "tab\there",
    "new\nline",
    "nul\u{0}byte",
    "physnet1:br-ex",
    "physnet1:br-ex,physnet2:",
    ":",
    ",",
    "True",
    "False",
    "true",
    "0",
    "-1",
    "4094",
    "4095",
    "65535",
    "4294967295",
    "4294967296",
    "99999999999999999999",
    "neutron-",
    "lrp-",
    "00000000-0000-0000-0000-000000000000",
];

const NUMBERS: &[i64] = &[
    0,
    1,
    -1,
    2,
    10,
    253,
    254,
    255,
    256,
    4094,
    4095,
    4096,
    32766,
    65535,
    65536,
    i32::MAX as i64,
    u32::MAX as i64,
    u32::MAX as i64 + 1,
    i64::MAX,
    i64::MIN,
];

/// The strings and object keys of the documents an input starts from, so
/// that an edit can put one row's name, uuid or address into another.
#[derive(Debug, Default)]
pub struct Pools {
    pub strings: Vec<String>,
    pub keys: Vec<String>,
}

impl Pools {
    /// The strings and keys found in `docs`, deduplicated.
    pub fn harvest<'a>(docs: impl IntoIterator<Item = &'a Value>) -> Pools {
        let mut strings = std::collections::BTreeSet::new();
        let mut keys = std::collections::BTreeSet::new();
        let mut stack: Vec<&Value> = docs.into_iter().collect();
        while let Some(v) = stack.pop() {
            match v {
                Value::String(s) => {
                    strings.insert(s.clone());
                }
                Value::Array(a) => stack.extend(a),
                Value::Object(o) => {
                    keys.extend(o.keys().cloned());
                    stack.extend(o.values());
                }
                _ => {}
            }
        }
        Pools {
            strings: strings.into_iter().collect(),
            keys: keys.into_iter().collect(),
        }
    }
}

/// A string chosen from the pools, the nonsense list, or made up.
pub fn string(u: &mut Unstructured, pools: &Pools) -> Result<String> {
    Ok(match u.int_in_range(0..=9)? {
        0..=3 if !pools.strings.is_empty() => u.choose(&pools.strings)?.clone(),
        4 | 5 => (*u.choose(NONSENSE)?).to_string(),
        6 => {
            // Composite values: "mac ip ip" addresses, "a,b" lists, cidrs.
            let sep = *u.choose(&[" ", ",", "/", ":", ";", "="])?;
            let n = u.int_in_range(2..=4)?;
            let mut parts = Vec::new();
            for _ in 0..n {
                parts.push(if pools.strings.is_empty() || u.ratio(1, 3)? {
                    (*u.choose(NONSENSE)?).to_string()
                } else {
                    u.choose(&pools.strings)?.clone()
                });
            }
            parts.join(sep)
        }
        7 => {
            // A pool string with one character changed, added or cut.
            let mut s = if pools.strings.is_empty() {
                String::new()
            } else {
                u.choose(&pools.strings)?.clone()
            };
            edit_string(u, &mut s)?;
            s
        }
        8 => format!(
            "{:08x}-0000-4000-8000-{:012x}",
            u.arbitrary::<u32>()?,
            u.arbitrary::<u16>()?
        ),
        _ => {
            let len = u.int_in_range(0..=40)?;
            let mut s = String::new();
            for _ in 0..len {
                s.push(u.arbitrary::<char>()?);
            }
            s
        }
    })
}

fn edit_string(u: &mut Unstructured, s: &mut String) -> Result<()> {
    let chars: Vec<char> = s.chars().collect();
    let at = if chars.is_empty() {
        0
    } else {
        u.choose_index(chars.len())?
    };
    let mut chars = chars;
    match u.int_in_range(0..=3)? {
        0 if !chars.is_empty() => {
            chars.remove(at);
        }
        1 if !chars.is_empty() => chars[at] = u.arbitrary::<char>()?,
        2 => chars.truncate(at),
        _ => chars.insert(
            at,
            *u.choose(&['.', ':', '/', '0', 'f', ' ', '-', 'é', '\n'])?,
        ),
    }
    *s = chars.into_iter().collect();
    Ok(())
}

fn number(u: &mut Unstructured) -> Result<Value> {
    Ok(match u.int_in_range(0..=3)? {
        0 => Value::from(u.arbitrary::<i64>()?),
        1 => serde_json::Number::from_f64(u.arbitrary::<f64>()?).map_or(Value::Null, Value::Number),
        _ => Value::from(*u.choose(NUMBERS)?),
    })
}

fn count(v: &Value) -> usize {
    let mut n = 0;
    let mut stack = vec![v];
    while let Some(x) = stack.pop() {
        n += 1;
        match x {
            Value::Array(a) => stack.extend(a),
            Value::Object(o) => stack.extend(o.values()),
            _ => {}
        }
    }
    n
}

/// The `n`th node of `v` in pre-order.
fn nth(v: &Value, n: usize) -> Option<&Value> {
    let mut stack = vec![v];
    let mut i = 0;
    while let Some(x) = stack.pop() {
        if i == n {
            return Some(x);
        }
        i += 1;
        match x {
            Value::Array(a) => stack.extend(a.iter().rev()),
            Value::Object(o) => stack.extend(o.values().rev()),
            _ => {}
        }
    }
    None
}

fn nth_mut(v: &mut Value, n: usize) -> Option<&mut Value> {
    let mut stack = vec![v];
    let mut i = 0;
    while let Some(x) = stack.pop() {
        if i == n {
            return Some(x);
        }
        i += 1;
        match x {
            Value::Array(a) => stack.extend(a.iter_mut().rev()),
            Value::Object(o) => stack.extend(o.values_mut().rev()),
            _ => {}
        }
    }
    None
}

/// Applies one edit to a node of `doc` chosen by `u`: replace a value
/// (with a pool string, a nonsense value, a number, another subtree),
/// remove, duplicate or add an array element or object member (a copied
/// row under a new uuid, for instance), or edit a string.
pub fn mutate(u: &mut Unstructured, doc: &mut Value, pools: &Pools) -> Result<()> {
    let total = count(doc);
    let target = u.choose_index(total)?;
    // A copy of some node, for splices (taken before borrowing the target).
    let donor = if u.ratio(1, 3)? {
        nth(doc, u.choose_index(total)?).cloned()
    } else {
        None
    };
    let op = u.int_in_range(0..=9)?;
    let fresh_string = string(u, pools)?;
    let Some(node) = nth_mut(doc, target) else {
        return Ok(());
    };
    match (op, node) {
        (0..=3, node @ Value::String(_)) => *node = Value::String(fresh_string),
        (0..=3, Value::Array(a)) if !a.is_empty() => {
            let i = u.choose_index(a.len())?;
            a[i] = Value::String(fresh_string);
        }
        (4, Value::String(s)) => edit_string(u, s)?,
        (5, Value::Array(a)) if !a.is_empty() => {
            let i = u.choose_index(a.len())?;
            if u.arbitrary()? {
                a.remove(i);
            } else {
                let copy = a[i].clone();
                a.insert(i, copy);
            }
        }
        (6, Value::Array(a)) => a.push(donor.unwrap_or(Value::String(fresh_string))),
        (5, Value::Object(o)) if !o.is_empty() => {
            let i = u.choose_index(o.len())?;
            let key = o.keys().nth(i).cloned();
            if let Some(key) = key {
                o.remove(&key);
            }
        }
        (6, Value::Object(o)) => {
            let key = if pools.keys.is_empty() || u.arbitrary()? {
                fresh_string
            } else {
                u.choose(&pools.keys)?.clone()
            };
            let value = match donor {
                Some(d) => d,
                // A sibling under a new key: a copied row under a new uuid.
                None if !o.is_empty() => {
                    let i = u.choose_index(o.len())?;
                    o.values().nth(i).cloned().unwrap_or(Value::Null)
                }
                None => Value::Null,
            };
            o.insert(key, value);
        }
        (7, node) => *node = number(u)?,
        (8, node) => {
            *node = match u.int_in_range(0..=3)? {
                0 => Value::Null,
                1 => Value::Bool(u.arbitrary()?),
                2 => Value::Array(Vec::new()),
                _ => Value::Object(Map::new()),
            }
        }
        (_, node) => {
            if let Some(d) = donor {
                *node = d;
            } else {
                *node = Value::String(fresh_string);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pre_order_indexes_reach_every_node_once() {
        let doc = json!({"a": [1, {"b": "x"}], "c": null});
        let n = count(&doc);
        assert_eq!(n, 6);
        let all: Vec<&Value> = (0..n).filter_map(|i| nth(&doc, i)).collect();
        assert_eq!(all.len(), n);
        assert_eq!(all[0], &doc);
        assert!(nth(&doc, n).is_none());
    }

    #[test]
    fn an_edit_keeps_the_document_json_whatever_the_bytes() {
        let pools = Pools::harvest([&json!({"k": "v"})]);
        for seed in 0u8..=255 {
            let bytes: Vec<u8> = (0..64)
                .map(|i| seed.wrapping_mul(31).wrapping_add(i))
                .collect();
            let mut u = Unstructured::new(&bytes);
            let mut doc = json!({"rows": {"u1": {"name": "p0", "addresses": ["set", ["a b"]]}}});
            let _ = mutate(&mut u, &mut doc, &pools);
            let text = doc.to_string();
            assert!(serde_json::from_str::<Value>(&text).is_ok(), "{text}");
        }
    }
}
