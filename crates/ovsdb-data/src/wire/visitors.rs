//! The serde visitors that decode update messages, schema-less, in one
//! pass over a frame's bytes.
//!
//! An initial monitor reply can be tens of megabytes; building a generic
//! JSON tree first would triple the memory it needs. These visitors produce
//! [`Datum`]s and [`TableUpdates`] directly; the schema then checks and
//! canonicalises them in [`crate::snapshot`]. Tags (`"set"`, `"map"`,
//! `"uuid"`) and UUIDs are read from the bytes without allocating; strings
//! go through the message's interner ([`super::intern`]).
//!
//! About 720 lines: one visitor per level of the notation, from an atom up
//! to a monitor result, which read as one grammar (the tests are in
//! `visitors/tests.rs`).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::intern::{exact, intern, InternScope, COLUMN_SCRATCH, MAP_SCRATCH, SET_SCRATCH};
use super::projection::{column_keys, KeyProjection, TableKeys};
use super::{is_row_fault, MonitorResult, RowFault, RowOp, RowUpdate, TableUpdate, TableUpdates};
use crate::datum::{Atom, Datum, Str, Uuid};

/// A string read through the interner.
struct Interned(Str);

impl<'de> Deserialize<'de> for Interned {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Interned;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Interned, E> {
                Ok(Interned(intern(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A UUID in text form, parsed without allocating.
pub(super) struct UuidText(pub(super) Uuid);

impl<'de> Deserialize<'de> for UuidText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = UuidText;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a UUID string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<UuidText, E> {
                Uuid::parse(v).map(UuidText).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

/// The tag of a `[tag, value]` array, read without allocating.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tag {
    Set,
    Map,
    Uuid,
    NamedUuid,
}

impl<'de> Deserialize<'de> for Tag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Tag;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"set\", \"map\", \"uuid\" or \"named-uuid\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Tag, E> {
                Ok(match v {
                    "set" => Tag::Set,
                    "map" => Tag::Map,
                    "uuid" => Tag::Uuid,
                    "named-uuid" => Tag::NamedUuid,
                    other => return Err(E::custom(format!("invalid tag [{other:?}, ...]"))),
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// An atom in wire notation, decoded without a schema.
pub struct WireAtom(pub Atom);

/// A datum in wire notation, decoded without a schema (same rules as
/// [`Datum::from_wire`]).
pub struct WireDatum(pub Datum);

struct AtomVisitor;

impl<'de> Visitor<'de> for AtomVisitor {
    type Value = Atom;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an OVSDB atom")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Atom, E> {
        Ok(Atom::Boolean(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Atom, E> {
        Ok(Atom::Integer(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Atom, E> {
        i64::try_from(v)
            .map(Atom::Integer)
            .map_err(|_| E::custom(format!("integer {v} out of range")))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Atom, E> {
        Ok(Atom::Real(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Atom, E> {
        Ok(Atom::String(intern(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Atom, A::Error> {
        let tag: Tag = seq
            .next_element()?
            .ok_or_else(|| de::Error::custom("empty array where an atom was expected"))?;
        let atom = match tag {
            Tag::Uuid => Atom::Uuid(
                seq.next_element::<UuidText>()?
                    .ok_or_else(|| de::Error::custom("[\"uuid\"] without a value"))?
                    .0,
            ),
            Tag::NamedUuid => Atom::NamedUuid(
                seq.next_element::<Interned>()?
                    .ok_or_else(|| de::Error::custom("[\"named-uuid\"] without a value"))?
                    .0,
            ),
            Tag::Set | Tag::Map => {
                return Err(de::Error::custom(
                    "invalid atom: a set or map where an atom was expected",
                ))
            }
        };
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::custom(
                "[\"uuid\", ...] with more than 2 elements",
            ));
        }
        Ok(atom)
    }
}

impl<'de> Deserialize<'de> for WireAtom {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(AtomVisitor).map(WireAtom)
    }
}

struct PairVisitor;

impl<'de> Visitor<'de> for PairVisitor {
    type Value = (Atom, Atom);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a [key, value] pair")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(Atom, Atom), A::Error> {
        let k: WireAtom = seq
            .next_element()?
            .ok_or_else(|| de::Error::custom("map pair without key"))?;
        let v: WireAtom = seq
            .next_element()?
            .ok_or_else(|| de::Error::custom("map pair without value"))?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::custom("map pair with more than 2 elements"));
        }
        Ok((k.0, v.0))
    }
}

struct WirePair((Atom, Atom));

impl<'de> Deserialize<'de> for WirePair {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(PairVisitor).map(WirePair)
    }
}

/// Decodes a datum; in a map, only string keys in `keys` are kept (all
/// keys when `None`).
#[derive(Clone, Copy)]
struct DatumVisitor<'k> {
    keys: Option<&'k [String]>,
}

impl<'de> DeserializeSeed<'de> for DatumVisitor<'_> {
    type Value = Datum;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Datum, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DatumVisitor<'_> {
    type Value = Datum;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an OVSDB datum")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Datum, E> {
        AtomVisitor.visit_bool(v).map(Datum::scalar)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Datum, E> {
        AtomVisitor.visit_i64(v).map(Datum::scalar)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Datum, E> {
        AtomVisitor.visit_u64(v).map(Datum::scalar)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Datum, E> {
        AtomVisitor.visit_f64(v).map(Datum::scalar)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Datum, E> {
        AtomVisitor.visit_str(v).map(Datum::scalar)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Datum, A::Error> {
        let tag: Tag = seq
            .next_element()?
            .ok_or_else(|| de::Error::custom("empty array where a datum was expected"))?;
        let datum = match tag {
            Tag::Set => Datum::set(exact(&SET_SCRATCH, |items| {
                seq.next_element_seed(Atoms(items))?
                    .ok_or_else(|| de::Error::custom("[\"set\"] without elements"))
            })?),
            Tag::Map => Datum::map(exact(&MAP_SCRATCH, |pairs| {
                seq.next_element_seed(Pairs {
                    keys: self.keys,
                    pairs,
                })?
                .ok_or_else(|| de::Error::custom("[\"map\"] without pairs"))
            })?),
            Tag::Uuid => Datum::scalar(Atom::Uuid(
                seq.next_element::<UuidText>()?
                    .ok_or_else(|| de::Error::custom("[\"uuid\"] without a value"))?
                    .0,
            )),
            Tag::NamedUuid => Datum::scalar(Atom::NamedUuid(
                seq.next_element::<Interned>()?
                    .ok_or_else(|| de::Error::custom("[\"named-uuid\"] without a value"))?
                    .0,
            )),
        };
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::custom(
                "a [tag, value] datum with more than 2 elements",
            ));
        }
        Ok(datum)
    }
}

impl<'de> Deserialize<'de> for WireDatum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DatumVisitor { keys: None })
            .map(WireDatum)
    }
}

/// The elements of a set, pushed onto `.0`.
struct Atoms<'v>(&'v mut Vec<Atom>);

impl<'de> DeserializeSeed<'de> for Atoms<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Atoms<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of atoms")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(WireAtom(atom)) = seq.next_element()? {
            self.0.push(atom);
        }
        Ok(())
    }
}

/// The pairs of a map, pushed onto `pairs`: with `keys`, only those whose
/// string key is listed (the others are skipped in the frame without
/// allocating); all of them without.
struct Pairs<'k, 'v> {
    keys: Option<&'k [String]>,
    pairs: &'v mut Vec<(Atom, Atom)>,
}

impl<'de> DeserializeSeed<'de> for Pairs<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Pairs<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of [key, value] pairs")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        match self.keys {
            None => {
                while let Some(WirePair(pair)) = seq.next_element()? {
                    self.pairs.push(pair);
                }
            }
            Some(keys) => {
                while let Some(pair) = seq.next_element_seed(ProjectedPair(keys))? {
                    self.pairs.extend(pair);
                }
            }
        }
        Ok(())
    }
}

/// One `[key, value]` pair: `None` when the key is not kept (the value is
/// then skipped, but must still be there).
struct ProjectedPair<'k>(&'k [String]);

impl<'de> DeserializeSeed<'de> for ProjectedPair<'_> {
    type Value = Option<(Atom, Atom)>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ProjectedPair<'_> {
    type Value = Option<(Atom, Atom)>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a [key, value] pair")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let key = seq
            .next_element_seed(ProjectedKey(self.0))?
            .ok_or_else(|| de::Error::custom("map pair without key"))?;
        let pair = match key {
            Some(k) => {
                let v: WireAtom = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::custom("map pair without value"))?;
                Some((k, v.0))
            }
            None => {
                seq.next_element::<IgnoredAny>()?
                    .ok_or_else(|| de::Error::custom("map pair without value"))?;
                None
            }
        };
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::custom("map pair with more than 2 elements"));
        }
        Ok(pair)
    }
}

/// A map key: `None` for a string key not in `.0` (never allocated);
/// keys of other types are kept.
struct ProjectedKey<'k>(&'k [String]);

impl<'de> DeserializeSeed<'de> for ProjectedKey<'_> {
    type Value = Option<Atom>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ProjectedKey<'_> {
    type Value = Option<Atom>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an OVSDB atom")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<Atom>, E> {
        Ok(self
            .0
            .iter()
            .any(|k| k == v)
            .then(|| Atom::String(intern(v))))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Option<Atom>, E> {
        AtomVisitor.visit_bool(v).map(Some)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<Atom>, E> {
        AtomVisitor.visit_i64(v).map(Some)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<Atom>, E> {
        AtomVisitor.visit_u64(v).map(Some)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Option<Atom>, E> {
        AtomVisitor.visit_f64(v).map(Some)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Option<Atom>, A::Error> {
        AtomVisitor.visit_seq(seq).map(Some)
    }
}

/// The columns of a row update; `.0` is the table's key projection.
struct ColumnsSeed<'k>(Option<&'k TableKeys>);

impl<'de> DeserializeSeed<'de> for ColumnsSeed<'_> {
    type Value = Vec<(Str, Datum)>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ColumnsSeed<'_> {
    type Value = Vec<(Str, Datum)>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of columns")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        exact(&COLUMN_SCRATCH, |out| {
            while let Some(Interned(k)) = map.next_key::<Interned>()? {
                let keys = column_keys(self.0, &k);
                let v = map
                    .next_value_seed(DatumVisitor { keys })
                    .map_err(|e| de::Error::custom(format!("column {k}: {e}")))?;
                out.push((k, v));
            }
            Ok(())
        })
    }
}

/// The key of a row update: the operation, or the unknown name (only
/// allocated for a bad message).
struct OpName(Option<RowOp>, String);

impl<'de> Deserialize<'de> for OpName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = OpName;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a row update name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<OpName, E> {
                Ok(match v {
                    "initial" => OpName(Some(RowOp::Initial), String::new()),
                    "insert" => OpName(Some(RowOp::Insert), String::new()),
                    "modify" => OpName(Some(RowOp::Modify), String::new()),
                    "delete" => OpName(Some(RowOp::Delete), String::new()),
                    other => OpName(None, other.to_string()),
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// Visits `{"initial"|"insert"|"modify": {...}}` or `{"delete": null}`.
pub(super) struct RowUpdateSeed<'k>(pub(super) Uuid, pub(super) Option<&'k TableKeys>);

impl<'de> DeserializeSeed<'de> for RowUpdateSeed<'_> {
    type Value = RowUpdate;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RowUpdate, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RowUpdateSeed<'_> {
    type Value = RowUpdate;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a row-update2 object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RowUpdate, A::Error> {
        let mut found: Option<RowUpdate> = None;
        while let Some(k) = map.next_key::<OpName>()? {
            let op = match k.0 {
                Some(op) => op,
                None => {
                    return Err(de::Error::custom(format!(
                        "row {}: unknown row update {:?}",
                        self.0, k.1
                    )))
                }
            };
            if found.is_some() {
                return Err(de::Error::custom(format!(
                    "row {}: more than one row update",
                    self.0
                )));
            }
            let columns = if op == RowOp::Delete {
                map.next_value::<IgnoredAny>()?;
                Vec::new()
            } else {
                map.next_value_seed(ColumnsSeed(self.1))
                    .map_err(|e| de::Error::custom(format!("row {}: {e}", self.0)))?
            };
            found = Some(RowUpdate {
                uuid: self.0,
                op,
                columns,
            });
        }
        found.ok_or_else(|| de::Error::custom(format!("row {}: empty row update", self.0)))
    }
}

/// The rows of one table: `.keys` its key projection. A row whose JSON
/// parses but is not a valid row update is skipped into the faults, named
/// by its key; JSON that does not parse fails the message.
struct RowsSeed<'a> {
    table: &'a str,
    keys: Option<&'a TableKeys>,
}

impl<'de> DeserializeSeed<'de> for RowsSeed<'_> {
    type Value = (Vec<RowUpdate>, Vec<RowFault>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RowsSeed<'_> {
    type Value = (Vec<RowUpdate>, Vec<RowFault>);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of row updates keyed by UUID")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut rows = Vec::with_capacity(map.size_hint().unwrap_or(16));
        let mut skipped = Vec::new();
        while let Some(RowKey(key)) = map.next_key::<RowKey>()? {
            // Taken whole (which checks its JSON) before it is decoded, so
            // that a bad row leaves the parser at the next one.
            let value: Box<RawValue> = map.next_value().map_err(|e| match &key {
                Ok(uuid) => de::Error::custom(format!("row {uuid}: {e}")),
                Err(key) => de::Error::custom(format!("row {key:?}: {e}")),
            })?;
            let uuid = match key {
                Ok(uuid) => uuid,
                Err(key) => {
                    skipped.push(RowFault {
                        table: self.table.to_string(),
                        uuid: None,
                        reason: format!("row key {key:?} is not a UUID"),
                    });
                    continue;
                }
            };
            let text = value.get();
            let row = match super::row_scan::decode_row(text, uuid, self.keys) {
                Some(row) => Ok(row),
                None => from_text(text, RowUpdateSeed(uuid, self.keys)),
            };
            match row {
                Ok(row) => rows.push(row),
                Err(e) if is_row_fault(text.as_bytes(), &e) => {
                    skipped.push(RowFault::of_row(self.table, uuid, &e))
                }
                Err(e) => return Err(de::Error::custom(e)),
            }
        }
        Ok((rows, skipped))
    }
}

/// A row's key: its UUID, or the text that is not one.
struct RowKey(Result<Uuid, String>);

impl<'de> Deserialize<'de> for RowKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RowKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a row UUID")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RowKey, E> {
                Ok(RowKey(Uuid::parse(v).map_err(|_| v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// The `table-updates2` object, with `.0`'s map-key projection (none:
/// every column whole).
#[derive(Clone, Copy)]
struct TablesSeed<'p>(Option<&'p KeyProjection>);

impl<'de> DeserializeSeed<'de> for TablesSeed<'_> {
    type Value = TableUpdates;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<TableUpdates, D::Error> {
        let _interning = InternScope::enter();
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TablesSeed<'_> {
    type Value = TableUpdates;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a table-updates2 object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TableUpdates, A::Error> {
        let mut tables = Vec::new();
        while let Some(table) = map.next_key::<String>()? {
            let keys = self.0.and_then(|p| p.table(&table));
            let (rows, skipped) = map
                .next_value_seed(RowsSeed {
                    table: &table,
                    keys,
                })
                .map_err(|e| de::Error::custom(format!("table {table}: {e}")))?;
            tables.push(TableUpdate {
                table,
                rows,
                skipped,
            });
        }
        Ok(TableUpdates(tables))
    }
}

/// Decodes a `table-updates2` object keeping only the map keys `.0` keeps.
#[derive(Clone, Copy)]
pub struct TableUpdatesSeed<'p>(pub &'p KeyProjection);

impl<'de> DeserializeSeed<'de> for TableUpdatesSeed<'_> {
    type Value = TableUpdates;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<TableUpdates, D::Error> {
        TablesSeed(Some(self.0)).deserialize(d)
    }
}

/// Every column whole.
impl<'de> Deserialize<'de> for TableUpdates {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        TablesSeed(None).deserialize(d)
    }
}

/// Decodes a monitor request's `result` keeping only the map keys `.0`
/// keeps.
#[derive(Clone, Copy)]
pub struct MonitorResultSeed<'p>(pub &'p KeyProjection);

impl<'de> DeserializeSeed<'de> for MonitorResultSeed<'_> {
    type Value = MonitorResult;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<MonitorResult, D::Error> {
        d.deserialize_any(MonitorResultVisitor(TablesSeed(Some(self.0))))
    }
}

/// Every column whole.
impl<'de> Deserialize<'de> for MonitorResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MonitorResultVisitor(TablesSeed(None)))
    }
}

struct MonitorResultVisitor<'p>(TablesSeed<'p>);

impl<'de> Visitor<'de> for MonitorResultVisitor<'_> {
    type Value = MonitorResult;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("table updates or [found, last-txn-id, table updates]")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MonitorResult, A::Error> {
        let _interning = InternScope::enter();
        self.0.visit_map(map).map(MonitorResult::Updates)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MonitorResult, A::Error> {
        let found: bool = seq
            .next_element()?
            .ok_or_else(|| de::Error::custom("monitor_cond_since result without found"))?;
        let last: String = seq
            .next_element()?
            .ok_or_else(|| de::Error::custom("monitor_cond_since result without txn id"))?;
        let updates = seq
            .next_element_seed(self.0)?
            .ok_or_else(|| de::Error::custom("monitor_cond_since result without updates"))?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::custom(
                "monitor_cond_since result with more than 3 elements",
            ));
        }
        Ok(MonitorResult::Since(found, last, updates))
    }
}

/// `text`, a whole JSON value, decoded with `seed` (see [`from_bytes`]).
pub(super) fn from_text<'a, T>(
    text: &'a str,
    seed: impl DeserializeSeed<'a, Value = T>,
) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = seed.deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// `bytes`, a whole JSON value, decoded with `seed`.
pub(super) fn from_bytes<'a, T>(
    bytes: &'a [u8],
    seed: impl DeserializeSeed<'a, Value = T>,
) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = seed.deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// `T`'s plain `Deserialize` as a seed.
pub(super) fn plain<T: for<'a> Deserialize<'a>>() -> std::marker::PhantomData<T> {
    std::marker::PhantomData
}

#[cfg(test)]
mod tests;
