//! What a predicate sees of a row and its columns, with the semantics of
//! upstream's Python attribute reads (present, missing, or opaque).
//!
//! Upstream's predicates read `row.<column>` and `old.<column>` and catch
//! `AttributeError`/`IndexError`/`KeyError` to decide. To take the same
//! decisions the rewrite has to know, per column, whether it *exists* on the
//! value it was given, not only its content:
//!
//! - the updated row coming from the OVSDB cache has every column of its
//!   table; a column the server did not send holds its default
//!   ([`RowView::complete`]);
//! - ovsdbapp's `old` carries only the columns that changed
//!   ([`RowView::listed`]); a create or delete has no `old` at all
//!   ([`RowView::none`]), which reads like a row without columns;
//! - upstream's tests also pass unconfigured mocks, whose every attribute
//!   exists and is a truthy value equal to nothing else ([`RowView::opaque`],
//!   or [`RowView::mocked`] when some attributes were configured).

use obgp_ovsdb_data::datum::{Atom, Datum, DatumKind, Row, Uuid};

/// An exception upstream's predicate would have raised. Each predicate
/// catches exactly the kinds upstream catches; the others escape, as they
/// did from upstream's `match_fn`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Raised {
    /// The value has no such column or attribute.
    #[error("AttributeError: no attribute {0:?}")]
    Attribute(&'static str),
    /// `list[0]` of an empty list (or `str[0]` of an empty string).
    #[error("IndexError: list index out of range")]
    Index,
    /// `dict[key]` without that key.
    #[error("KeyError: {0:?}")]
    Key(&'static str),
    /// An operation the value does not support (indexing or iterating an
    /// opaque value, string methods on a number...).
    #[error("TypeError: {0}")]
    Type(&'static str),
    /// `port_utils.get_ips_from_lsp` found no IP in `addresses[0]`.
    #[error("IpAddressNotFound: no IP address in the port's addresses")]
    IpAddressNotFound,
    /// `nat_utils.get_gateway_lrp`: the NAT row has no `gateway_port`.
    #[error("NATNotFound: NAT row has no gateway_port")]
    NatNotFound,
    /// `nat_utils.get_chassis_hosting_crlrp`: the gateway port's `status` has
    /// no `hosting-chassis`.
    #[error("ChassisNotFound: gateway port has no hosting-chassis in its status")]
    ChassisNotFound,
}

impl Raised {
    /// The Python exception class name upstream raised (`AttributeError`...).
    pub fn python_type(&self) -> &'static str {
        match self {
            Raised::Attribute(_) => "AttributeError",
            Raised::Index => "IndexError",
            Raised::Key(_) => "KeyError",
            Raised::Type(_) => "TypeError",
            Raised::IpAddressNotFound => "IpAddressNotFound",
            Raised::NatNotFound => "NATNotFound",
            Raised::ChassisNotFound => "ChassisNotFound",
        }
    }
}

/// What the columns absent from a [`RowView`]'s map mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Absent {
    /// They exist and hold their type's default (a row from the OVSDB cache).
    Default,
    /// They do not exist (ovsdbapp's `old`: only the changed columns).
    Missing,
    /// They exist and hold opaque values (a mock in upstream's tests).
    Opaque,
}

static NO_COLUMNS: Row = Row {
    columns: obgp_ovsdb_data::datum::Columns::new(),
};
static EMPTY: Datum = Datum::empty_set();

/// A row (or ovsdbapp's `old`) as a predicate reads it.
#[derive(Clone, Copy, Debug)]
pub struct RowView<'a> {
    row: &'a Row,
    absent: Absent,
}

impl<'a> RowView<'a> {
    /// A row from the OVSDB cache: every column exists; columns missing
    /// from the map hold their default (as in an `update2` notification).
    pub fn complete(row: &'a Row) -> Self {
        RowView {
            row,
            absent: Absent::Default,
        }
    }

    /// ovsdbapp's `old`: exactly the columns that changed, with their
    /// previous values. Any other column does not exist.
    pub fn listed(row: &'a Row) -> Self {
        RowView {
            row,
            absent: Absent::Missing,
        }
    }

    /// No `old` (create and delete events): no column exists.
    pub fn none() -> Self {
        RowView {
            row: &NO_COLUMNS,
            absent: Absent::Missing,
        }
    }

    /// A value whose every column exists and is opaque: truthy, equal to
    /// nothing, not indexable. Only upstream's tests produce one (a bare mock).
    pub fn opaque() -> Self {
        RowView {
            row: &NO_COLUMNS,
            absent: Absent::Opaque,
        }
    }

    /// A configured mock: the listed columns hold their values, every other
    /// column is opaque.
    pub fn mocked(row: &'a Row) -> Self {
        RowView {
            row,
            absent: Absent::Opaque,
        }
    }

    /// Python's `hasattr(value, column)`.
    pub fn has(&self, column: &str) -> bool {
        self.absent != Absent::Missing || self.row.get(column).is_some()
    }

    /// `value.<column>` of a set or map column: a list or a dict.
    pub fn col(&self, column: &'static str) -> Result<Val<'a>, Raised> {
        match (self.row.get(column), self.absent) {
            (Some(d), _) => Ok(Val::from_datum(d)),
            (None, Absent::Default) => Ok(Val::from_datum(&EMPTY)),
            (None, Absent::Opaque) => Ok(Val::Opaque),
            (None, Absent::Missing) => Err(Raised::Attribute(column)),
        }
    }

    /// `value.<column>` of a string column (`type`, `name`, SB
    /// `logical_port`...): the string, `""` when empty.
    pub fn text(&self, column: &'static str) -> Result<Val<'a>, Raised> {
        Ok(match self.col(column)? {
            Val::List([]) => Val::Str(""),
            Val::List([a]) => Val::from_atom(a),
            other => other,
        })
    }
}

/// A Python value read from a row: what upstream's expressions operate on.
#[derive(Clone, Copy, Debug)]
pub enum Val<'a> {
    /// Python `None` (`dict.get` of a missing key).
    None,
    Str(&'a str),
    Int(i64),
    Real(f64),
    Bool(bool),
    /// A reference to another row (compared by identity, i.e. UUID).
    Ref(Uuid),
    /// A set or optional column, as ovsdbapp gives it: a list.
    List(&'a [Atom]),
    /// A map column: a dict.
    Dict(&'a [(Atom, Atom)]),
    /// A bare mock: truthy, equal only to itself, every attribute exists,
    /// not indexable or iterable.
    Opaque,
}

impl<'a> Val<'a> {
    fn from_datum(d: &'a Datum) -> Val<'a> {
        match d.kind() {
            DatumKind::Set(atoms) => Val::List(atoms),
            DatumKind::Map(pairs) => Val::Dict(pairs),
        }
    }

    /// The Python value of one atom.
    pub fn from_atom(a: &'a Atom) -> Val<'a> {
        match a {
            Atom::String(s) | Atom::NamedUuid(s) => Val::Str(s),
            Atom::Integer(i) => Val::Int(*i),
            Atom::Real(r) => Val::Real(*r),
            Atom::Boolean(b) => Val::Bool(*b),
            Atom::Uuid(u) => Val::Ref(*u),
        }
    }

    /// Python truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            Val::None => false,
            Val::Str(s) => !s.is_empty(),
            Val::Int(i) => *i != 0,
            Val::Real(r) => *r != 0.0,
            Val::Bool(b) => *b,
            Val::Ref(_) | Val::Opaque => true,
            Val::List(l) => !l.is_empty(),
            Val::Dict(d) => !d.is_empty(),
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&'a str> {
        match self {
            Val::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Python `==`. An opaque value equals nothing: upstream's mocks are
    /// distinct objects wherever the predicates compare them.
    pub fn py_eq(&self, other: &Val<'_>) -> bool {
        match (self, other) {
            (Val::Opaque, _) | (_, Val::Opaque) => false,
            (Val::None, Val::None) => true,
            (Val::Str(a), Val::Str(b)) => a == b,
            (Val::Ref(a), Val::Ref(b)) => a == b,
            (Val::List(a), Val::List(b)) => a == b,
            (Val::Dict(a), Val::Dict(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, v)| b.iter().any(|(k2, v2)| k == k2 && v == v2))
            }
            (a, b) => match (a.number(), b.number()) {
                (Some(x), Some(y)) => x == y,
                _ => false,
            },
        }
    }

    /// `self == s` for a string `s`.
    pub fn is(&self, s: &str) -> bool {
        self.py_eq(&Val::Str(s))
    }

    // Python compares True == 1 and 1 == 1.0.
    fn number(&self) -> Option<f64> {
        match self {
            Val::Int(i) => Some(*i as f64),
            Val::Real(r) => Some(*r),
            Val::Bool(b) => Some(f64::from(u8::from(*b))),
            _ => None,
        }
    }

    /// `value[0]`.
    pub fn first(&self) -> Result<Val<'a>, Raised> {
        match self {
            Val::List(l) => l.first().map(Val::from_atom).ok_or(Raised::Index),
            Val::Str(s) => match s.chars().next() {
                Some(c) => Ok(Val::Str(&s[..c.len_utf8()])),
                None => Err(Raised::Index),
            },
            Val::Dict(_) => Err(Raised::Key("0")),
            _ => Err(Raised::Type("value is not subscriptable")),
        }
    }

    /// `dict.get(key)`: `None` when absent.
    pub fn get(&self, key: &str) -> Result<Val<'a>, Raised> {
        match self {
            Val::Dict(pairs) => Ok(pairs
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| Val::from_atom(v))
                .unwrap_or(Val::None)),
            // A mock's method returns a further mock.
            Val::Opaque => Ok(Val::Opaque),
            _ => Err(Raised::Attribute("get")),
        }
    }

    /// `dict[key]`.
    pub fn item(&self, key: &'static str) -> Result<Val<'a>, Raised> {
        match self {
            Val::Dict(_) => match self.get(key)? {
                Val::None => Err(Raised::Key(key)),
                v => Ok(v),
            },
            _ => Err(Raised::Type("value is not subscriptable")),
        }
    }

    /// `key in value` (dict keys, list elements, substring).
    pub fn contains(&self, key: &str) -> Result<bool, Raised> {
        match self {
            Val::Dict(pairs) => Ok(pairs.iter().any(|(k, _)| k.as_str() == Some(key))),
            Val::List(l) => Ok(l.iter().any(|a| a.as_str() == Some(key))),
            Val::Str(s) => Ok(s.contains(key)),
            _ => Err(Raised::Type("argument is not iterable")),
        }
    }

    /// `key in value.keys()`.
    pub fn keys_contain(&self, key: &str) -> Result<bool, Raised> {
        match self {
            Val::Dict(_) => self.contains(key),
            Val::Opaque => Err(Raised::Type("argument is not iterable")),
            _ => Err(Raised::Attribute("keys")),
        }
    }

    /// `set(self.keys()).issubset(set(other.keys()))`.
    pub fn keys_subset_of(&self, other: &Val<'_>) -> Result<bool, Raised> {
        match (self, other) {
            (Val::Dict(a), Val::Dict(b)) => {
                Ok(a.iter().all(|(k, _)| b.iter().any(|(k2, _)| k == k2)))
            }
            (Val::Opaque, _) | (_, Val::Opaque) => Err(Raised::Type("argument is not iterable")),
            _ => Err(Raised::Attribute("keys")),
        }
    }

    /// `str.startswith(prefix)`; a mock's method returns a (truthy) mock.
    pub fn starts_with(&self, prefix: &str) -> Result<bool, Raised> {
        match self {
            Val::Str(s) => Ok(s.starts_with(prefix)),
            Val::Opaque => Ok(true),
            _ => Err(Raised::Attribute("startswith")),
        }
    }

    /// A string method's receiver (`strip`, `split`...): the string itself.
    pub fn string_method(&self, method: &'static str) -> Result<&'a str, Raised> {
        match self {
            Val::Str(s) => Ok(s),
            // The method returns a mock; whatever is done with it next
            // (`in`, iteration) is a TypeError.
            Val::Opaque => Err(Raised::Type("argument of type 'Mock' is not iterable")),
            _ => Err(Raised::Attribute(method)),
        }
    }

    /// Python's `str(value)` as `"%s"` formats it.
    pub fn py_str(&self) -> String {
        match self {
            Val::None => "None".to_string(),
            Val::Str(s) => s.to_string(),
            Val::Int(i) => i.to_string(),
            Val::Real(r) => r.to_string(),
            Val::Bool(true) => "True".to_string(),
            Val::Bool(false) => "False".to_string(),
            Val::Ref(u) => u.to_string(),
            Val::List(_) | Val::Dict(_) | Val::Opaque => format!("{self:?}"),
        }
    }

    /// The string to look up in the agent's caches (`x in dict`): a
    /// non-string value matches no key there.
    pub fn key(&self) -> Option<&'a str> {
        self.as_str()
    }
}
