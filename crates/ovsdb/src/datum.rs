//! The OVSDB value model: atoms, sets and maps (RFC 7047 § 5.1), and rows.
//!
//! A column value is always a [`Datum`]. A scalar column is a one-element set,
//! an optional column is a set of zero or one element, so readers never have to
//! care how the server chose to encode a value on the wire.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

/// A row UUID, kept as 128 bits: rows are looked up by UUID on every update,
/// so comparing two integers beats comparing 36-byte strings.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Uuid(pub u128);

impl Uuid {
    /// Parses the canonical `8-4-4-4-12` hexadecimal form.
    pub fn parse(s: &str) -> Result<Uuid, DatumError> {
        let bad = || DatumError::BadUuid(s.to_string());
        if s.len() != 36 {
            return Err(bad());
        }
        let mut value: u128 = 0;
        for (i, c) in s.chars().enumerate() {
            if matches!(i, 8 | 13 | 18 | 23) {
                if c != '-' {
                    return Err(bad());
                }
                continue;
            }
            let digit = c.to_digit(16).ok_or_else(bad)?;
            value = (value << 4) | u128::from(digit);
        }
        Ok(Uuid(value))
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = format!("{:032x}", self.0);
        write!(
            f,
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// One OVSDB atom.
#[derive(Clone, Debug, PartialEq, PartialOrd)]
pub enum Atom {
    /// A 64-bit signed integer.
    Integer(i64),
    /// A double-precision real.
    Real(f64),
    /// A boolean.
    Boolean(bool),
    /// A UTF-8 string.
    String(String),
    /// A row reference or other UUID.
    Uuid(Uuid),
    /// A `named-uuid` reference inside a transaction; never seen in updates.
    NamedUuid(String),
}

impl Atom {
    /// The string, if this is a string atom.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Atom::String(s) => Some(s),
            _ => None,
        }
    }
    /// The UUID, if this is a UUID atom.
    pub fn as_uuid(&self) -> Option<Uuid> {
        match self {
            Atom::Uuid(u) => Some(*u),
            _ => None,
        }
    }
    /// The integer, if this is an integer atom.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Atom::Integer(i) => Some(*i),
            _ => None,
        }
    }
    /// The boolean, if this is a boolean atom.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Atom::Boolean(b) => Some(*b),
            _ => None,
        }
    }

    /// Decodes an atom in wire notation, without a schema: numbers with a
    /// fraction are reals, `["uuid", s]` is a UUID.
    pub fn from_wire(v: &Value) -> Result<Atom, DatumError> {
        match v {
            Value::String(s) => Ok(Atom::String(s.clone())),
            Value::Bool(b) => Ok(Atom::Boolean(*b)),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Ok(Atom::Integer(i)),
                None => n
                    .as_f64()
                    .map(Atom::Real)
                    .ok_or_else(|| DatumError::BadAtom(v.to_string())),
            },
            Value::Array(a) if a.len() == 2 => match (a[0].as_str(), a[1].as_str()) {
                (Some("uuid"), Some(s)) => Ok(Atom::Uuid(Uuid::parse(s)?)),
                (Some("named-uuid"), Some(s)) => Ok(Atom::NamedUuid(s.to_string())),
                _ => Err(DatumError::BadAtom(v.to_string())),
            },
            _ => Err(DatumError::BadAtom(v.to_string())),
        }
    }

    /// Encodes the atom in wire notation.
    pub fn to_wire(&self) -> Value {
        match self {
            Atom::Integer(i) => Value::from(*i),
            Atom::Real(r) => Value::from(*r),
            Atom::Boolean(b) => Value::from(*b),
            Atom::String(s) => Value::from(s.as_str()),
            Atom::Uuid(u) => serde_json::json!(["uuid", u.to_string()]),
            Atom::NamedUuid(n) => serde_json::json!(["named-uuid", n]),
        }
    }
}

/// A column value: a set (scalars and optionals are sets of 0 or 1) or a map.
#[derive(Clone, Debug, PartialEq)]
pub enum Datum {
    /// A set of atoms (a scalar is a set of one, an absent optional a set of none).
    Set(Vec<Atom>),
    /// A map of key/value pairs.
    Map(Vec<(Atom, Atom)>),
}

impl Datum {
    /// A set of exactly `a`.
    pub fn scalar(a: Atom) -> Datum {
        Datum::Set(vec![a])
    }
    /// The empty set (an absent optional, an empty set column).
    pub fn empty_set() -> Datum {
        Datum::Set(Vec::new())
    }

    /// Decodes a datum in wire notation without a schema. A bare atom is a
    /// one-element set; `["set", [...]]` and `["map", [[k, v], ...]]` as in RFC 7047.
    pub fn from_wire(v: &Value) -> Result<Datum, DatumError> {
        if let Value::Array(a) = v {
            if a.len() == 2 {
                match (a[0].as_str(), &a[1]) {
                    (Some("set"), Value::Array(items)) => {
                        return items
                            .iter()
                            .map(Atom::from_wire)
                            .collect::<Result<_, _>>()
                            .map(Datum::Set)
                    }
                    (Some("map"), Value::Array(pairs)) => {
                        let mut out = Vec::with_capacity(pairs.len());
                        for p in pairs {
                            match p {
                                Value::Array(kv) if kv.len() == 2 => {
                                    out.push((Atom::from_wire(&kv[0])?, Atom::from_wire(&kv[1])?))
                                }
                                _ => return Err(DatumError::BadMapPair(p.to_string())),
                            }
                        }
                        return Ok(Datum::Map(out));
                    }
                    _ => {}
                }
            }
        }
        Atom::from_wire(v).map(Datum::scalar)
    }

    /// Encodes in wire notation; a one-element set is written as the bare atom.
    pub fn to_wire(&self) -> Value {
        match self {
            Datum::Set(items) if items.len() == 1 => items[0].to_wire(),
            Datum::Set(items) => {
                serde_json::json!(["set", items.iter().map(Atom::to_wire).collect::<Vec<_>>()])
            }
            Datum::Map(pairs) => serde_json::json!([
                "map",
                pairs
                    .iter()
                    .map(|(k, v)| Value::Array(vec![k.to_wire(), v.to_wire()]))
                    .collect::<Vec<_>>()
            ]),
        }
    }

    /// The elements of a set (empty for a map).
    pub fn atoms(&self) -> &[Atom] {
        match self {
            Datum::Set(items) => items,
            Datum::Map(_) => &[],
        }
    }

    /// The only element of a set of one, else `None`.
    pub fn as_scalar(&self) -> Option<&Atom> {
        match self.atoms() {
            [a] => Some(a),
            _ => None,
        }
    }

    /// The value of string key `key` in a string map.
    pub fn map_get(&self, key: &str) -> Option<&Atom> {
        match self {
            Datum::Map(pairs) => pairs
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            Datum::Set(_) => None,
        }
    }

    /// The pairs of a map (empty for a set).
    pub fn pairs(&self) -> &[(Atom, Atom)] {
        match self {
            Datum::Map(pairs) => pairs,
            Datum::Set(_) => &[],
        }
    }
}

/// One row: column name to value. A column absent from the map holds its
/// type's default (empty set, empty map, 0, "", false).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    /// Column name to value; absent columns hold their default.
    pub columns: BTreeMap<String, Datum>,
}

impl Row {
    /// Decodes `{"column": datum, ...}` in wire notation.
    pub fn from_wire(v: &Value) -> Result<Row, DatumError> {
        let obj = v
            .as_object()
            .ok_or_else(|| DatumError::NotAnObject(v.to_string()))?;
        let mut columns = BTreeMap::new();
        for (k, d) in obj {
            let datum =
                Datum::from_wire(d).map_err(|e| DatumError::Column(k.clone(), Box::new(e)))?;
            columns.insert(k.clone(), datum);
        }
        Ok(Row { columns })
    }

    /// The value of `column`, if present.
    pub fn get(&self, column: &str) -> Option<&Datum> {
        #[cfg(feature = "column-audit")]
        audit::note(column);
        self.columns.get(column)
    }

    /// This row restricted to `columns` (what a monitor of those columns
    /// would have sent).
    pub fn project(&self, columns: &[&str]) -> Row {
        Row {
            columns: self
                .columns
                .iter()
                .filter(|(name, _)| columns.contains(&name.as_str()))
                .map(|(name, d)| (name.clone(), d.clone()))
                .collect(),
        }
    }

    /// A string scalar column (`None` when absent, empty or not a string).
    pub fn str(&self, column: &str) -> Option<&str> {
        self.get(column)?.as_scalar()?.as_str()
    }

    /// Every string element of a set column.
    pub fn strs(&self, column: &str) -> impl Iterator<Item = &str> {
        self.get(column)
            .map(Datum::atoms)
            .unwrap_or(&[])
            .iter()
            .filter_map(Atom::as_str)
    }

    /// A UUID scalar column (e.g. a reference), `None` when absent.
    pub fn uuid(&self, column: &str) -> Option<Uuid> {
        self.get(column)?.as_scalar()?.as_uuid()
    }

    /// Every UUID element of a set column (references).
    pub fn uuids(&self, column: &str) -> impl Iterator<Item = Uuid> + '_ {
        self.get(column)
            .map(Datum::atoms)
            .unwrap_or(&[])
            .iter()
            .filter_map(Atom::as_uuid)
    }

    /// An integer scalar column, `None` when absent.
    pub fn int(&self, column: &str) -> Option<i64> {
        self.get(column)?.as_scalar()?.as_i64()
    }

    /// A boolean scalar column, `None` when absent.
    pub fn bool(&self, column: &str) -> Option<bool> {
        self.get(column)?.as_scalar()?.as_bool()
    }

    /// The string value of `key` in a string-to-string map column such as
    /// `external_ids`, `options` or `status`.
    pub fn map_str(&self, column: &str, key: &str) -> Option<&str> {
        self.get(column)?.map_get(key)?.as_str()
    }
}

/// Which columns a piece of code reads (feature `column-audit`, for tests
/// only): readers of a monitored database must not read a column the
/// monitor leaves out, since it would silently hold its default.
#[cfg(feature = "column-audit")]
pub mod audit {
    use std::cell::RefCell;
    use std::collections::BTreeSet;

    thread_local! {
        static READ: RefCell<Option<BTreeSet<String>>> = const { RefCell::new(None) };
    }

    /// Runs `f` and returns, beside its result, the name of every column it
    /// read through [`super::Row::get`] (and the accessors built on it) on
    /// this thread.
    pub fn record<R>(f: impl FnOnce() -> R) -> (R, BTreeSet<String>) {
        let previous = READ.with(|r| r.borrow_mut().replace(BTreeSet::new()));
        let out = f();
        let read = READ.with(|r| std::mem::replace(&mut *r.borrow_mut(), previous));
        (out, read.unwrap_or_default())
    }

    pub(crate) fn note(column: &str) {
        READ.with(|r| {
            if let Some(set) = r.borrow_mut().as_mut() {
                if !set.contains(column) {
                    set.insert(column.to_string());
                }
            }
        });
    }
}

/// Why a value could not be decoded. Each variant carries the offending text.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DatumError {
    #[error("invalid UUID {0:?}")]
    /// Not the 8-4-4-4-12 hexadecimal form.
    BadUuid(String),
    #[error("invalid atom {0}")]
    /// Not an atom in wire notation.
    BadAtom(String),
    #[error("invalid map pair {0}")]
    /// A map element that is not a `[key, value]` pair.
    BadMapPair(String),
    #[error("row is not a JSON object: {0}")]
    /// A row that is not a JSON object.
    NotAnObject(String),
    #[error("column {0}: {1}")]
    /// A column's value could not be decoded.
    Column(String, Box<DatumError>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn uuid_round_trips_through_text() {
        let s = "22222222-2222-4222-8222-222222222222";
        assert_eq!(Uuid::parse(s).unwrap().to_string(), s);
        assert!(Uuid::parse("not-a-uuid").is_err());
        assert!(Uuid::parse("22222222x2222-4222-8222-222222222222").is_err());
    }

    #[test]
    fn bare_atom_is_a_set_of_one() {
        let d = Datum::from_wire(&json!("br-ex")).unwrap();
        assert_eq!(d.as_scalar().and_then(Atom::as_str), Some("br-ex"));
        assert_eq!(d.to_wire(), json!("br-ex"));
    }

    #[test]
    fn map_lookup_by_string_key() {
        let row = Row::from_wire(&json!({
            "external_ids": ["map", [["neutron:cidrs", "10.0.0.5/24"], ["k", "v"]]],
            "addresses": ["set", ["fa:16:3e:11:11:11 10.0.0.5", "unknown"]],
            "lr": ["uuid", "22222222-2222-4222-8222-222222222222"],
            "tag": 100
        }))
        .unwrap();
        assert_eq!(
            row.map_str("external_ids", "neutron:cidrs"),
            Some("10.0.0.5/24")
        );
        assert_eq!(row.strs("addresses").count(), 2);
        assert_eq!(row.int("tag"), Some(100));
        assert!(row.uuid("lr").is_some());
        assert_eq!(row.str("missing"), None);
    }

    #[test]
    fn malformed_values_are_errors_not_panics() {
        assert!(Datum::from_wire(&json!(["map", [["only-key"]]])).is_err());
        assert!(Datum::from_wire(&json!({"x": 1})).is_err());
        assert!(Row::from_wire(&json!([1, 2])).is_err());
    }
}
