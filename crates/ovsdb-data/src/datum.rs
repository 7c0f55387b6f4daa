//! The OVSDB value model: atoms, sets and maps (RFC 7047 § 5.1), and rows.
//!
//! A column value is always a [`Datum`]. A scalar column is a one-element set,
//! an optional column is a set of zero or one element, so readers never have to
//! care how the server chose to encode a value on the wire.
//!
//! The model is compact because a cache holds every row of a 100k-port
//! cloud: strings are shared ([`Str`], and the decoder of [`crate::wire`]
//! interns equal strings of a message, so `compute:nova` or a project id is
//! stored once, not once per port), a [`Row`] is a sorted vector of
//! (shared column name, value), a [`Uuid`] is 8-byte aligned so an
//! [`Atom`] takes 24 bytes, and a [`Datum`] takes 24 bytes too, holding a
//! single atom inline: a scalar column (a port's `name`, `type`, `up`, a
//! NAT's addresses) costs no allocation of its own.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde_json::Value;

#[cfg(feature = "column-audit")]
pub use crate::row::audit;
pub use crate::row::{Columns, Row};

/// A row UUID, kept as 128 bits: rows are looked up by UUID on every update,
/// so comparing two integers beats comparing 36-byte strings. Packed to an
/// 8-byte alignment (a `u128` alone would align to 16 and make every
/// [`Atom`] 32 bytes instead of 24); read the value by copy (`uuid.0`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(C, packed(8))]
pub struct Uuid(pub u128);

/// An immutable string shared by reference count: cloning it copies a
/// pointer. Atoms and column names are `Str`s so that a value repeated on
/// thousands of rows is stored once (see [`crate::wire`]'s interning).
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Str(Arc<str>);

impl Str {
    /// The string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether both are the same allocation (not only equal text): how tests
    /// see that the decoder interned a repeated string.
    pub fn shares_storage_with(&self, other: &Str) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for Str {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Str {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Str {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// A JSON string, like the text it holds.
impl serde::Serialize for Str {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self)
    }
}

impl fmt::Debug for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl From<&str> for Str {
    fn from(s: &str) -> Str {
        Str(Arc::from(s))
    }
}

impl From<String> for Str {
    fn from(s: String) -> Str {
        Str(Arc::from(s))
    }
}

impl From<&String> for Str {
    fn from(s: &String) -> Str {
        Str(Arc::from(s.as_str()))
    }
}

impl From<Arc<str>> for Str {
    fn from(s: Arc<str>) -> Str {
        Str(s)
    }
}

impl From<Str> for String {
    fn from(s: Str) -> String {
        s.0.to_string()
    }
}

impl PartialEq<str> for Str {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Str {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Str {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

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
        let value = self.0;
        let h = format!("{value:032x}");
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
    /// A UTF-8 string (shared: equal strings of a message are stored once).
    String(Str),
    /// A row reference or other UUID.
    Uuid(Uuid),
    /// A `named-uuid` reference inside a transaction; never seen in updates.
    NamedUuid(Str),
}

impl Atom {
    /// The string, if this is a string atom.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Atom::String(s) => Some(s),
            _ => None,
        }
    }
    /// The shared string, if this is a string atom: what a parsed row keeps
    /// instead of a copy (a clone costs a reference count).
    pub fn as_shared_str(&self) -> Option<&Str> {
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
            Value::String(s) => Ok(Atom::String(s.into())),
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
                (Some("named-uuid"), Some(s)) => Ok(Atom::NamedUuid(s.into())),
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
            Atom::NamedUuid(n) => serde_json::json!(["named-uuid", n.as_str()]),
        }
    }
}

/// A column value: a set (scalars and optionals are sets of 0 or 1) or a map.
///
/// Held in one of three compact forms, chosen by the constructors so that
/// equal values have equal forms (`==` compares forms): the empty set, a
/// set of one atom held inline (most columns are scalars: no allocation),
/// and a boxed slice of two or more atoms or of map pairs (no capacity
/// word, no spare room). 24 bytes, the size of an [`Atom`]: the forms use
/// the spare values of the atom's discriminant as their tag. Readers see
/// the value as a set or a map through [`Datum::kind`] and the accessors.
#[derive(Clone, PartialEq)]
pub struct Datum(Form);

/// [`Datum`]'s storage. Invariant (kept by the constructors): `Set` holds
/// two or more atoms; a set of one is `One`, an empty set `EmptySet`.
#[derive(Clone, PartialEq)]
enum Form {
    EmptySet,
    One(Atom),
    Set(Box<[Atom]>),
    Map(Box<[(Atom, Atom)]>),
}

/// What a [`Datum`] is, to match on: a set of atoms or a map of pairs.
/// [`Datum::kind`] lends the elements (`DatumKind<&[Atom], &[(Atom, Atom)]>`),
/// [`Datum::into_kind`] gives them up as vectors to modify.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DatumKind<S, M> {
    /// A set of atoms (a scalar is a set of one, an absent optional a set of none).
    Set(S),
    /// A map of key/value pairs, in the order they were given.
    Map(M),
}

impl Datum {
    /// A set of exactly `a`.
    pub fn scalar(a: Atom) -> Datum {
        Datum(Form::One(a))
    }

    /// The empty set (an absent optional, an empty set column).
    pub const fn empty_set() -> Datum {
        Datum(Form::EmptySet)
    }

    /// The set of `atoms`, in the given order (a set of one is a scalar).
    pub fn set(atoms: Vec<Atom>) -> Datum {
        match <[Atom; 1]>::try_from(atoms) {
            Ok([a]) => Datum(Form::One(a)),
            Err(atoms) if atoms.is_empty() => Datum(Form::EmptySet),
            // Free when the vector has no spare room, else one shrink.
            Err(atoms) => Datum(Form::Set(atoms.into_boxed_slice())),
        }
    }

    /// The map of `pairs`, in the given order.
    pub fn map(pairs: Vec<(Atom, Atom)>) -> Datum {
        Datum(Form::Map(pairs.into_boxed_slice()))
    }

    /// The empty map (an absent map column).
    pub fn empty_map() -> Datum {
        Datum(Form::Map(Box::default()))
    }

    /// Whether this is a set or a map, with its elements.
    pub fn kind(&self) -> DatumKind<&[Atom], &[(Atom, Atom)]> {
        match &self.0 {
            Form::EmptySet => DatumKind::Set(&[]),
            Form::One(a) => DatumKind::Set(std::slice::from_ref(a)),
            Form::Set(atoms) => DatumKind::Set(atoms),
            Form::Map(pairs) => DatumKind::Map(pairs),
        }
    }

    /// The elements as vectors, to build a modified value from.
    pub fn into_kind(self) -> DatumKind<Vec<Atom>, Vec<(Atom, Atom)>> {
        match self.0 {
            Form::EmptySet => DatumKind::Set(Vec::new()),
            Form::One(a) => DatumKind::Set(vec![a]),
            Form::Set(atoms) => DatumKind::Set(atoms.into_vec()),
            Form::Map(pairs) => DatumKind::Map(pairs.into_vec()),
        }
    }

    /// Whether this is a map.
    pub fn is_map(&self) -> bool {
        matches!(self.0, Form::Map(_))
    }

    /// Number of atoms of a set or pairs of a map.
    pub fn len(&self) -> usize {
        match self.kind() {
            DatumKind::Set(atoms) => atoms.len(),
            DatumKind::Map(pairs) => pairs.len(),
        }
    }

    /// Whether the set or map has no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
                            .map(Datum::set)
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
                        return Ok(Datum::map(out));
                    }
                    _ => {}
                }
            }
        }
        Atom::from_wire(v).map(Datum::scalar)
    }

    /// Encodes in wire notation; a one-element set is written as the bare atom.
    pub fn to_wire(&self) -> Value {
        match self.kind() {
            DatumKind::Set([one]) => one.to_wire(),
            DatumKind::Set(items) => {
                serde_json::json!(["set", items.iter().map(Atom::to_wire).collect::<Vec<_>>()])
            }
            DatumKind::Map(pairs) => serde_json::json!([
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
        match self.kind() {
            DatumKind::Set(items) => items,
            DatumKind::Map(_) => &[],
        }
    }

    /// The only element of a set of one, else `None`.
    pub fn as_scalar(&self) -> Option<&Atom> {
        match &self.0 {
            Form::One(a) => Some(a),
            _ => None,
        }
    }

    /// The value of string key `key` in a string map.
    pub fn map_get(&self, key: &str) -> Option<&Atom> {
        self.pairs()
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }

    /// The pairs of a map (empty for a set).
    pub fn pairs(&self) -> &[(Atom, Atom)] {
        match self.kind() {
            DatumKind::Map(pairs) => pairs,
            DatumKind::Set(_) => &[],
        }
    }
}

/// `Set([..])` or `Map([..])`, whatever the storage form.
impl fmt::Debug for Datum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            DatumKind::Set(atoms) => f.debug_tuple("Set").field(&atoms).finish(),
            DatumKind::Map(pairs) => f.debug_tuple("Map").field(&pairs).finish(),
        }
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
        assert_eq!(
            Uuid::parse("ABCDEF12-2222-4222-8222-22222222222F").unwrap(),
            Uuid::parse("abcdef12-2222-4222-8222-22222222222f").unwrap()
        );
        // 36 bytes, but a two-byte character where a digit should be.
        assert!(Uuid::parse("2222222é-2222-4222-8222-22222222222").is_err());
        assert!(Uuid::parse("+2222222-2222-4222-8222-222222222222").is_err());
    }

    proptest::proptest! {
        #[test]
        fn uuid_parse_accepts_exactly_the_canonical_form(
            s in "[0-9a-fA-F\\-xé+ ]{30,38}",
            u in proptest::prelude::any::<u128>(),
        ) {
            let canonical = s.len() == 36
                && s.bytes().enumerate().all(|(i, b)| match i {
                    8 | 13 | 18 | 23 => b == b'-',
                    _ => b.is_ascii_hexdigit(),
                });
            proptest::prop_assert_eq!(Uuid::parse(&s).is_ok(), canonical);
            let text = Uuid(u).to_string();
            proptest::prop_assert_eq!(Uuid::parse(&text).unwrap(), Uuid(u));
            proptest::prop_assert_eq!(Uuid::parse(&text.to_uppercase()).unwrap(), Uuid(u));
        }
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
    fn atoms_and_uuids_stay_small() {
        // A cached Neutron port holds ~15 map pairs: every byte of an atom
        // counts 30 times per row.
        assert_eq!(std::mem::size_of::<Uuid>(), 16);
        assert_eq!(std::mem::align_of::<Uuid>(), 8);
        assert_eq!(std::mem::size_of::<Atom>(), 24);
        // Most columns are scalars: held inline, in the atom's 24 bytes.
        assert_eq!(std::mem::size_of::<Datum>(), 24);
    }

    #[test]
    fn a_set_of_one_is_the_scalar_whatever_the_constructor() {
        let a = || Atom::String("p1".into());
        assert_eq!(Datum::set(vec![a()]), Datum::scalar(a()));
        assert_eq!(Datum::set(Vec::new()), Datum::empty_set());
        let wire_set = Datum::from_wire(&json!(["set", ["p1"]])).unwrap();
        assert_eq!(wire_set, Datum::from_wire(&json!("p1")).unwrap());
        assert_eq!(wire_set.as_scalar(), Some(&a()));
        assert_eq!(wire_set.to_wire(), json!("p1"));
        // Rebuilt from its elements, a value is the same value.
        for d in [
            Datum::empty_set(),
            Datum::scalar(a()),
            Datum::set(vec![a(), Atom::Integer(1)]),
            Datum::empty_map(),
            Datum::map(vec![(a(), a())]),
        ] {
            let rebuilt = match d.clone().into_kind() {
                DatumKind::Set(atoms) => Datum::set(atoms),
                DatumKind::Map(pairs) => Datum::map(pairs),
            };
            assert_eq!(rebuilt, d);
            assert_eq!(Datum::from_wire(&d.to_wire()).unwrap(), d);
        }
        // An empty map is not an empty set: a map column's default differs.
        assert_ne!(Datum::empty_map(), Datum::empty_set());
        assert_eq!(Datum::empty_map().kind(), DatumKind::Map(&[][..]));
        assert_eq!(
            format!("{:?}", Datum::scalar(Atom::Integer(7))),
            "Set([Integer(7)])"
        );
    }

    #[test]
    fn malformed_values_are_errors_not_panics() {
        assert!(Datum::from_wire(&json!(["map", [["only-key"]]])).is_err());
        assert!(Datum::from_wire(&json!({"x": 1})).is_err());
        assert!(Row::from_wire(&json!([1, 2])).is_err());
    }
}
