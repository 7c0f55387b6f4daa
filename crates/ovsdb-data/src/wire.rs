//! Decodes the server's update messages straight from the bytes of a frame.
//!
//! An initial monitor reply can be tens of megabytes; building a generic JSON
//! tree first would triple the memory it needs. These serde visitors produce
//! schema-less [`Datum`]s and [`TableUpdates`] in one pass; the schema then
//! checks and canonicalises them in [`crate::cache`].
//!
//! While a [`TableUpdates`] is decoded, equal strings (column names, map
//! keys, and values such as `compute:nova`, a project id or a host name
//! that repeat on thousands of ports) are interned: the message's rows share
//! one [`Str`] per distinct string instead of allocating one per use. Tags
//! (`"set"`, `"map"`, `"uuid"`) and UUIDs are read from the frame's bytes
//! without allocating at all.
//!
//! A [`KeyProjection`] keeps only some keys of some map columns: the decoder
//! skips the other pairs in the frame's bytes, so a dropped key or value is
//! never allocated. Map diffs (`modify`) are per key, so projecting every
//! message gives the cache exactly the projection of the server's rows.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::hash::BuildHasher;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::LocalKey;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::datum::{Atom, Datum, Str, Uuid};

mod row_scan;

thread_local! {
    /// The strings of the message being decoded on this thread, if any.
    static INTERNER: RefCell<Option<Interner>> = const { RefCell::new(None) };
    /// The key projection of the messages decoded on this thread, if any.
    static PROJECTION: RefCell<Option<KeyProjection>> = const { RefCell::new(None) };
}

/// Which keys of which map columns a monitor keeps, per table. Columns not
/// named here are decoded whole.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyProjection {
    tables: Arc<HashMap<String, Vec<ColumnKeys>>>,
}

impl KeyProjection {
    /// Keeps only `keys` of map column `column` of `table` (replacing any
    /// earlier list for that column).
    pub fn keep<S: Into<String>>(
        mut self,
        table: &str,
        column: &str,
        keys: impl IntoIterator<Item = S>,
    ) -> KeyProjection {
        let keys: Vec<String> = keys.into_iter().map(Into::into).collect();
        let columns = Arc::make_mut(&mut self.tables)
            .entry(table.to_string())
            .or_default();
        columns.retain(|(c, _)| c != column);
        columns.push((column.to_string(), keys));
        self
    }

    /// Whether every column is decoded whole.
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// The keys kept of `table`.`column`, or `None` if it is decoded whole.
    pub fn keys(&self, table: &str, column: &str) -> Option<&[String]> {
        self.tables
            .get(table)?
            .iter()
            .find(|(c, _)| c == column)
            .map(|(_, k)| k.as_slice())
    }

    /// Runs `decode` with this projection applied to every
    /// [`TableUpdates`] it decodes on this thread.
    pub fn apply_to<R>(&self, decode: impl FnOnce() -> R) -> R {
        struct Restore(Option<KeyProjection>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                PROJECTION.with(|p| *p.borrow_mut() = previous);
            }
        }
        let previous = PROJECTION.with(|p| p.borrow_mut().replace(self.clone()));
        let _restore = Restore(previous);
        decode()
    }
}

/// A projected map column and the keys kept of it.
type ColumnKeys = (String, Vec<String>);

/// The kept keys of each projected column of one table.
type TableKeys = [ColumnKeys];

fn column_keys<'k>(table: Option<&'k TableKeys>, column: &str) -> Option<&'k [String]> {
    table?
        .iter()
        .find(|(c, _)| c == column)
        .map(|(_, k)| k.as_slice())
}

/// The interning table's hasher: every string of a reply is hashed once,
/// and SipHash was a third of the row decoder's time. foldhash is seeded
/// at random per process, so colliding strings cannot be prepared ahead.
type InternHasher = foldhash::fast::RandomState;

/// The strings of a message, each stored once.
///
/// Every string of a reply goes through here, so the lookup is the decoder's
/// hottest path. The table holds every distinct string of the message
/// (~100k per decoding thread for the 50k-port reply, mostly UUIDs and
/// addresses seen once), too large for the CPU caches: a probe was a cache
/// miss or two. The strings that do repeat (column names, map keys,
/// `compute:nova`, project, host and network names) are few, so a small
/// direct-mapped `recent` array in front remembers the last repeated string
/// per slot; a hit there skips the table. The string's hash is computed
/// once for both.
struct Interner {
    hasher: InternHasher,
    table: hashbrown::HashTable<Str>,
    /// Indexed by the low bits of a string's hash; filled only with strings
    /// seen twice, so strings that never repeat do not evict those that do.
    recent: Vec<Option<Str>>,
}

/// Slots of the `recent` array of a large reply's interner (64 KiB).
const RECENT_SLOTS_LARGE: usize = 4096;

/// Slots of the `recent` array of a small message's interner.
const RECENT_SLOTS_SMALL: usize = 64;

impl Interner {
    fn new(strings: usize) -> Interner {
        let slots = if strings >= RECENT_SLOTS_LARGE {
            RECENT_SLOTS_LARGE
        } else {
            RECENT_SLOTS_SMALL
        };
        Interner {
            hasher: InternHasher::default(),
            table: hashbrown::HashTable::with_capacity(strings),
            recent: vec![None; slots],
        }
    }

    fn intern(&mut self, s: &str) -> Str {
        let hash = self.hasher.hash_one(s);
        // `recent.len()` is a power of two.
        let slot = hash as usize & (self.recent.len() - 1);
        if let Some(seen) = &self.recent[slot] {
            if **seen == *s {
                return seen.clone();
            }
        }
        let hasher = &self.hasher;
        match self
            .table
            .entry(hash, |t| **t == *s, |t| hasher.hash_one(&**t))
        {
            hashbrown::hash_table::Entry::Occupied(e) => {
                let shared = e.get().clone();
                self.recent[slot] = Some(shared.clone());
                shared
            }
            hashbrown::hash_table::Entry::Vacant(e) => {
                let new = Str::from(s);
                e.insert(new.clone());
                new
            }
        }
    }
}

/// Interns strings on this thread until dropped (nested scopes share the
/// outer one). The table is dropped with the scope: strings are shared
/// within a message, and live as long as the rows holding them.
struct InternScope {
    owner: bool,
}

impl InternScope {
    fn enter() -> InternScope {
        InternScope::with_capacity(0)
    }

    /// A scope whose table starts with room for `strings` (a large reply's
    /// table would otherwise be rehashed a dozen times while it grows).
    fn with_capacity(strings: usize) -> InternScope {
        let owner = INTERNER.with(|i| {
            let mut i = i.borrow_mut();
            if i.is_none() {
                *i = Some(Interner::new(strings));
                true
            } else {
                false
            }
        });
        InternScope { owner }
    }
}

impl Drop for InternScope {
    fn drop(&mut self) {
        if self.owner {
            INTERNER.with(|i| i.borrow_mut().take());
        }
    }
}

/// `s` as a shared string: the message's earlier copy if there is one.
fn intern(s: &str) -> Str {
    INTERNER.with(|i| match i.borrow_mut().as_mut() {
        Some(interner) => interner.intern(s),
        None => Str::from(s),
    })
}

thread_local! {
    /// Reused buffers for the elements of the set, map and column list
    /// being decoded on this thread (atoms are never sets or maps, so one
    /// of each is enough).
    static SET_SCRATCH: Cell<Vec<Atom>> = const { Cell::new(Vec::new()) };
    static MAP_SCRATCH: Cell<Vec<(Atom, Atom)>> = const { Cell::new(Vec::new()) };
    static COLUMN_SCRATCH: Cell<Vec<(Str, Datum)>> = const { Cell::new(Vec::new()) };
}

/// The elements `fill` pushes, in a `Vec` allocated once at its exact
/// length. A whole dump is decoded before it is applied, so a `Vec` grown
/// to 16 for 14 map pairs would raise the peak by the slack of every map of
/// every row; growing then shrinking it cost a `realloc` per value. The
/// elements are collected in this thread's reusable `scratch` instead.
fn exact<T, E>(
    scratch: &'static LocalKey<Cell<Vec<T>>>,
    fill: impl FnOnce(&mut Vec<T>) -> Result<(), E>,
) -> Result<Vec<T>, E> {
    let mut buf = scratch.take();
    let filled = fill(&mut buf);
    let out = filled.map(|()| {
        let mut out = Vec::with_capacity(buf.len());
        // Moves the elements, leaving `buf` empty with its capacity.
        out.append(&mut buf);
        out
    });
    // After an error, the elements pushed so far are dropped now.
    buf.clear();
    scratch.set(buf);
    out
}

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
struct UuidText(Uuid);

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

/// What a row update does (`update2`/`update3` notation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowOp {
    /// Part of the initial contents sent in reply to a monitor request.
    Initial,
    /// A row created by a transaction.
    Insert,
    /// `columns` holds diffs (see [`crate::schema::ColumnType::apply_diff`]).
    Modify,
    /// A row deleted by a transaction.
    Delete,
}

/// One row's update as received, not yet checked against the schema.
#[derive(Clone, Debug, PartialEq)]
pub struct RowUpdate {
    /// The row's UUID.
    pub uuid: Uuid,
    /// What the update does.
    pub op: RowOp,
    /// Column values (a diff for `Modify`, none for `Delete`).
    pub columns: Vec<(Str, Datum)>,
}

/// All row updates of one table in one message.
#[derive(Clone, Debug, PartialEq)]
pub struct TableUpdate {
    /// Table name.
    pub table: String,
    /// Row updates of the table.
    pub rows: Vec<RowUpdate>,
}

/// The `table-updates2` object of an update notification or monitor reply.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableUpdates(pub Vec<TableUpdate>);

impl TableUpdates {
    /// Number of row updates in all tables.
    pub fn row_count(&self) -> usize {
        self.0.iter().map(|t| t.rows.len()).sum()
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
            Tag::Set => Datum::Set(exact(&SET_SCRATCH, |items| {
                seq.next_element_seed(Atoms(items))?
                    .ok_or_else(|| de::Error::custom("[\"set\"] without elements"))
            })?),
            Tag::Map => Datum::Map(exact(&MAP_SCRATCH, |pairs| {
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
struct RowUpdateSeed<'k>(Uuid, Option<&'k TableKeys>);

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

struct RowsSeed<'k>(Option<&'k TableKeys>);

impl<'de> DeserializeSeed<'de> for RowsSeed<'_> {
    type Value = Vec<RowUpdate>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RowsSeed<'_> {
    type Value = Vec<RowUpdate>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of row updates keyed by UUID")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut rows = Vec::with_capacity(map.size_hint().unwrap_or(16));
        while let Some(UuidText(uuid)) = map.next_key::<UuidText>()? {
            rows.push(map.next_value_seed(RowUpdateSeed(uuid, self.0))?);
        }
        Ok(rows)
    }
}

struct TablesVisitor;

impl<'de> Visitor<'de> for TablesVisitor {
    type Value = TableUpdates;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a table-updates2 object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TableUpdates, A::Error> {
        let projection = PROJECTION.with(|p| p.borrow().clone());
        let mut tables = Vec::new();
        while let Some(table) = map.next_key::<String>()? {
            let keys = projection
                .as_ref()
                .and_then(|p| p.tables.get(&table))
                .map(Vec::as_slice);
            let rows = map
                .next_value_seed(RowsSeed(keys))
                .map_err(|e| de::Error::custom(format!("table {table}: {e}")))?;
            tables.push(TableUpdate { table, rows });
        }
        Ok(TableUpdates(tables))
    }
}

impl<'de> Deserialize<'de> for TableUpdates {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let _interning = InternScope::enter();
        d.deserialize_map(TablesVisitor)
    }
}

/// The `result` of a monitor request: `monitor_cond`'s table updates, or
/// `monitor_cond_since`'s `[found, last-txn-id, table-updates]`.
#[derive(Debug, PartialEq)]
pub enum MonitorResult {
    /// `monitor_cond`.
    Updates(TableUpdates),
    /// `monitor_cond_since`.
    Since(bool, String, TableUpdates),
}

/// The members of a reply message decoded by [`decode_streamed_reply`].
#[derive(Debug)]
pub struct StreamedReply {
    /// The reply's `id`.
    pub id: serde_json::Value,
    /// The reply's `error` (`null` on success).
    pub error: serde_json::Value,
    /// The reply's `result`, when not `null`.
    pub result: Option<MonitorResult>,
}

/// The bytes of one message as they arrive, for [`decode_streamed_reply`]:
/// `next` returns the next chunk, `None` at the end of the message.
struct Feed<F> {
    next: F,
    buf: Vec<u8>,
    pos: usize,
    done: bool,
}

/// Bytes already decoded are dropped from the front once this many pile up.
const COMPACT_ABOVE: usize = 1 << 20;

impl<F: FnMut() -> Option<bytes::Bytes>> Feed<F> {
    /// Appends the next chunk; false at the end of the message.
    fn more(&mut self) -> bool {
        if self.done {
            return false;
        }
        match (self.next)() {
            Some(chunk) => {
                self.buf.extend_from_slice(&chunk);
                true
            }
            None => {
                self.done = true;
                false
            }
        }
    }

    fn truncated(&self) -> String {
        format!("message ends after {} bytes", self.buf.len())
    }

    /// The next byte that is not whitespace (not consumed).
    fn peek(&mut self) -> Result<u8, String> {
        loop {
            while let Some(&b) = self.buf.get(self.pos) {
                if !matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
                    return Ok(b);
                }
                self.pos += 1;
            }
            if !self.more() {
                return Err(self.truncated());
            }
        }
    }

    fn expect(&mut self, want: u8) -> Result<(), String> {
        let got = self.peek()?;
        if got != want {
            return Err(format!(
                "expected {:?}, found {:?} at byte {}",
                want as char, got as char, self.pos
            ));
        }
        self.pos += 1;
        Ok(())
    }

    /// `,` (true) or the closing `close` (false) after an element.
    fn next_or_end(&mut self, close: u8) -> Result<bool, String> {
        match self.peek()? {
            b',' => {
                self.pos += 1;
                Ok(true)
            }
            b if b == close => {
                self.pos += 1;
                Ok(false)
            }
            b => Err(format!(
                "expected ',' or {:?}, found {:?}",
                close as char, b as char
            )),
        }
    }

    /// The bytes of the next complete JSON value (its structure only;
    /// serde checks the rest), consumed.
    fn value(&mut self) -> Result<std::ops::Range<usize>, String> {
        self.peek()?;
        let start = self.pos;
        let (mut i, mut depth, mut in_string, mut escaped) = (start, 0u32, false, false);
        loop {
            while i < self.buf.len() {
                let b = self.buf[i];
                i += 1;
                if in_string {
                    if escaped {
                        escaped = false;
                    } else if b == b'\\' {
                        escaped = true;
                    } else if b == b'"' {
                        in_string = false;
                        if depth == 0 {
                            self.pos = i;
                            return Ok(start..i);
                        }
                    } else if let Some(off) = memchr::memchr2(b'"', b'\\', &self.buf[i..]) {
                        i += off;
                    } else {
                        i = self.buf.len();
                    }
                    continue;
                }
                match b {
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' if depth == 0 => {
                        // The end of a scalar at the end of its container.
                        self.pos = i - 1;
                        return Ok(start..i - 1);
                    }
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            self.pos = i;
                            return Ok(start..i);
                        }
                    }
                    b',' | b' ' | b'\t' | b'\r' | b'\n' if depth == 0 => {
                        self.pos = i - 1;
                        return Ok(start..i - 1);
                    }
                    _ => {}
                }
            }
            if !self.more() {
                if depth == 0 && !in_string && i > start {
                    self.pos = i;
                    return Ok(start..i);
                }
                return Err(self.truncated());
            }
        }
    }

    /// The next value, decoded as `T` with `seed`.
    fn decode<T>(
        &mut self,
        seed: impl for<'a> DeserializeSeed<'a, Value = T>,
    ) -> Result<T, String> {
        let range = self.value()?;
        from_bytes(&self.buf[range], seed)
    }

    /// Drops the decoded bytes from the front of the buffer.
    fn compact(&mut self) {
        if self.pos > COMPACT_ABOVE {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
    }
}

/// `T`'s plain `Deserialize` as a seed.
fn plain<T: for<'a> Deserialize<'a>>() -> std::marker::PhantomData<T> {
    std::marker::PhantomData
}

/// Decodes a reply to a monitor request from its bytes as they arrive: this
/// thread frames the row updates (brackets and strings only, the cheap
/// part) as soon as their bytes are complete and hands them in batches to
/// decoding threads, one per core (at most [`MAX_DECODERS`]), each running
/// the `from_slice` decoder of a buffered frame. Rows are reassembled in
/// the message's order, and the bytes are dropped once decoded, so the
/// message is never held whole. Interning (per decoding thread) and the
/// current [`KeyProjection`] apply as for a buffered message. Errors name
/// the table and row like the buffered decoder's; of several bad rows, the
/// first in the message is reported.
pub fn decode_streamed_reply(
    next_chunk: impl FnMut() -> Option<bytes::Bytes>,
) -> Result<StreamedReply, String> {
    let decoders = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, MAX_DECODERS);
    decode_streamed_reply_on(decoders, BATCH_BYTES, next_chunk)
}

/// At most this many threads decode one reply's rows.
pub const MAX_DECODERS: usize = 4;

/// Rows are handed to the decoding threads in batches of about this many
/// bytes: large enough that handing over costs nothing next to decoding,
/// small enough that the batches in flight stay a few hundred KiB.
const BATCH_BYTES: usize = 64 << 10;

/// Batches waiting for a decoding thread, per thread: bounds the bytes in
/// flight when the decoders fall behind the socket.
const QUEUED_PER_DECODER: usize = 2;

/// [`decode_streamed_reply`] with `decoders` decoding threads (at least
/// one) and batches of about `batch_bytes`.
fn decode_streamed_reply_on(
    decoders: usize,
    batch_bytes: usize,
    next_chunk: impl FnMut() -> Option<bytes::Bytes>,
) -> Result<StreamedReply, String> {
    let projection = PROJECTION.with(|p| p.borrow().clone());
    let first_failed = AtomicUsize::new(NO_FAILURE);
    let (tx, rx) = mpsc::sync_channel::<Batch>(decoders.max(1) * QUEUED_PER_DECODER);
    let rx = Mutex::new(rx);
    let (framed, decoded) = std::thread::scope(|scope| {
        let mut workers = Vec::new();
        for i in 0..decoders.max(1) {
            let (rx, projection, first_failed) = (&rx, projection.as_ref(), &first_failed);
            let spawned = std::thread::Builder::new()
                .name(format!("ovsdb-decode-{i}"))
                .spawn_scoped(scope, move || decode_batches(rx, projection, first_failed));
            match spawned {
                Ok(handle) => workers.push(handle),
                // Fewer decoders only cost time; none at all is an error.
                Err(e) if workers.is_empty() => {
                    return (
                        Err(format!("cannot start a decoding thread: {e}")),
                        Vec::new(),
                    )
                }
                Err(_) => break,
            }
        }
        let mut pool = RowPool {
            tx,
            batch_bytes,
            batch: None,
            seq: 0,
            first_failed: &first_failed,
        };
        let framed = frame_reply(&mut pool, next_chunk);
        // Closing the queue lets the decoders finish what is left.
        drop(pool);
        let mut decoded: Vec<(usize, RowsResult)> = Vec::new();
        for worker in workers {
            match worker.join() {
                Ok(batches) => decoded.extend(batches),
                Err(_) => return (Err("a decoding thread panicked".to_string()), Vec::new()),
            }
        }
        (framed, decoded)
    });
    let mut batches: Vec<Option<Vec<RowUpdate>>> = Vec::new();
    let mut first_error: Option<(usize, String)> = None;
    for (seq, rows) in decoded {
        match rows {
            Ok(rows) => {
                if batches.len() <= seq {
                    batches.resize_with(seq + 1, || None);
                }
                batches[seq] = Some(rows);
            }
            Err(e) => {
                if first_error.as_ref().is_none_or(|(s, _)| seq < *s) {
                    first_error = Some((seq, e));
                }
            }
        }
    }
    // A bad row comes before whatever stopped the framer.
    if let Some((_, e)) = first_error {
        return Err(e);
    }
    let framed = framed?;
    let mut take = |tables: PendingTables| -> Result<TableUpdates, String> {
        let mut out = Vec::with_capacity(tables.len());
        for (table, seqs) in tables {
            let count = seqs
                .clone()
                .map(|s| batches.get(s).and_then(Option::as_ref).map_or(0, Vec::len))
                .sum();
            let mut rows = Vec::with_capacity(count);
            for s in seqs {
                let batch = batches
                    .get_mut(s)
                    .and_then(Option::take)
                    .ok_or_else(|| format!("table {table}: batch {s} of rows was never decoded"))?;
                rows.extend(batch);
            }
            out.push(TableUpdate { table, rows });
        }
        Ok(TableUpdates(out))
    };
    Ok(StreamedReply {
        id: framed.id,
        error: framed.error,
        result: match framed.result {
            None => None,
            Some(PendingResult::Updates(t)) => Some(MonitorResult::Updates(take(t)?)),
            Some(PendingResult::Since(found, last, t)) => {
                Some(MonitorResult::Since(found, last, take(t)?))
            }
        },
    })
}

/// Strings a decoding thread's interning table has room for from the start:
/// a reply is only streamed when it is large (1 MiB by default), and one
/// decoding thread of the 54 MB reply at 50k ports interns ~100k distinct
/// strings. 64k entries cost ~1.1 MiB while the reply is decoded.
const STREAMED_INTERN_CAPACITY: usize = 1 << 16;

/// `first_failed` before any batch failed.
const NO_FAILURE: usize = usize::MAX;

/// The rows of one batch, or the error of its first bad row.
type RowsResult = Result<Vec<RowUpdate>, String>;

/// Row updates of one table, framed but not decoded: `bytes` holds each
/// row's UUID key and value, `rows` their places in it.
struct Batch {
    /// Order in the message.
    seq: usize,
    table: Arc<str>,
    bytes: Vec<u8>,
    rows: Vec<(Range<usize>, Range<usize>)>,
}

impl Batch {
    /// Decodes the rows in order; the first bad one fails the batch,
    /// named by table and row like the buffered decoder does.
    fn decode(&self, keys: Option<&TableKeys>) -> RowsResult {
        let table = &self.table;
        // UTF-8 is checked once for the whole batch (fast on ASCII), not
        // string by string as `from_slice` does; a batch that is not UTF-8
        // goes through `from_slice`, whose error names the bad row.
        let text = std::str::from_utf8(&self.bytes).ok();
        let mut rows = Vec::with_capacity(self.rows.len());
        for (key, value) in &self.rows {
            let key_text = text.and_then(|t| t.get(key.clone()));
            let uuid = match key_text.and_then(plain_uuid_key) {
                Some(uuid) => uuid,
                None => {
                    from_bytes(&self.bytes[key.clone()], plain::<UuidText>())
                        .map_err(|e| format!("table {table}: {e}"))?
                        .0
                }
            };
            let seed = RowUpdateSeed(uuid, keys);
            // The plain rows (nearly all) are scanned directly; the serde
            // visitors decode the others, and report the errors.
            let row = match text.and_then(|t| t.get(value.clone())) {
                Some(value) => match row_scan::decode_row(value, uuid, keys) {
                    Some(row) => Ok(row),
                    None => from_text(value, seed),
                },
                None => from_bytes(&self.bytes[value.clone()], seed),
            }
            .map_err(|e| format!("table {table}: {e}"))?;
            rows.push(row);
        }
        Ok(rows)
    }
}

/// The UUID of a row key written plainly (`"<36 characters>"`, no escapes),
/// or `None` for anything else, which the JSON decoder then reads (and
/// reports if bad).
fn plain_uuid_key(key: &str) -> Option<Uuid> {
    let inner = key.strip_prefix('"')?.strip_suffix('"')?;
    Uuid::parse(inner).ok()
}

/// `text`, a whole JSON value, decoded with `seed` (see [`from_bytes`]).
fn from_text<'a, T>(text: &'a str, seed: impl DeserializeSeed<'a, Value = T>) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = seed.deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(v)
}

/// `bytes`, a whole JSON value, decoded with `seed`.
fn from_bytes<'a, T>(
    bytes: &'a [u8],
    seed: impl DeserializeSeed<'a, Value = T>,
) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = seed.deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(v)
}

/// A decoding thread: decodes batches until the queue closes, with its own
/// interning table (live until the reply is decoded). Batches after the
/// first failed one are skipped; earlier ones are still decoded, so the
/// error reported is the first in the message whatever the timing.
fn decode_batches(
    queue: &Mutex<mpsc::Receiver<Batch>>,
    projection: Option<&KeyProjection>,
    first_failed: &AtomicUsize,
) -> Vec<(usize, RowsResult)> {
    let _interning = InternScope::with_capacity(STREAMED_INTERN_CAPACITY);
    let mut decoded = Vec::new();
    loop {
        // A poisoned lock only means another decoder panicked, which the
        // join reports.
        let next = match queue.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return decoded,
        };
        let Ok(batch) = next else {
            return decoded;
        };
        if batch.seq > first_failed.load(Ordering::Acquire) {
            continue;
        }
        let keys = projection
            .and_then(|p| p.tables.get(&*batch.table))
            .map(Vec::as_slice);
        let rows = batch.decode(keys);
        if rows.is_err() {
            first_failed.fetch_min(batch.seq, Ordering::AcqRel);
        }
        decoded.push((batch.seq, rows));
    }
}

/// The framer's side of the decoding threads: fills a batch per table and
/// queues it once it holds `batch_bytes`.
struct RowPool<'f> {
    tx: mpsc::SyncSender<Batch>,
    batch_bytes: usize,
    batch: Option<Batch>,
    /// The next batch's order in the message.
    seq: usize,
    first_failed: &'f AtomicUsize,
}

impl RowPool<'_> {
    /// Adds a row (its UUID key and value bytes) of `table`.
    fn push(&mut self, table: &Arc<str>, key: &[u8], value: &[u8]) -> Result<(), String> {
        let batch = self.batch.get_or_insert_with(|| Batch {
            seq: self.seq,
            table: table.clone(),
            bytes: Vec::with_capacity(self.batch_bytes + value.len()),
            rows: Vec::new(),
        });
        let k = batch.bytes.len();
        batch.bytes.extend_from_slice(key);
        let v = batch.bytes.len();
        batch.bytes.extend_from_slice(value);
        batch.rows.push((k..v, v..batch.bytes.len()));
        if batch.bytes.len() >= self.batch_bytes {
            self.flush()?;
        }
        Ok(())
    }

    /// Queues the batch being filled, if any; fails once a decoder failed
    /// (the framer stops: its error is replaced by the decoder's).
    fn flush(&mut self) -> Result<(), String> {
        if self.first_failed.load(Ordering::Acquire) != NO_FAILURE {
            return Err("a row failed to decode".to_string());
        }
        if let Some(batch) = self.batch.take() {
            self.seq += 1;
            self.tx
                .send(batch)
                .map_err(|_| "the decoding threads stopped".to_string())?;
        }
        Ok(())
    }

    /// The order of the next batch to be queued.
    fn next_seq(&self) -> usize {
        self.seq + usize::from(self.batch.is_some())
    }
}

/// The tables of a `table-updates2` object and the batches holding their
/// rows, in order.
type PendingTables = Vec<(String, Range<usize>)>;

/// A monitor result whose rows are still being decoded.
enum PendingResult {
    Updates(PendingTables),
    Since(bool, String, PendingTables),
}

/// A reply as framed: `id` and `error` decoded, the rows queued.
struct FramedReply {
    id: serde_json::Value,
    error: serde_json::Value,
    result: Option<PendingResult>,
}

/// Walks the reply's envelope, decoding its small members and queueing the
/// rows of its `result` on `pool`.
fn frame_reply(
    pool: &mut RowPool<'_>,
    next_chunk: impl FnMut() -> Option<bytes::Bytes>,
) -> Result<FramedReply, String> {
    let mut feed = Feed {
        next: next_chunk,
        buf: Vec::new(),
        pos: 0,
        done: false,
    };
    let mut reply = FramedReply {
        id: serde_json::Value::Null,
        error: serde_json::Value::Null,
        result: None,
    };
    feed.expect(b'{')?;
    if feed.peek()? != b'}' {
        loop {
            let member: String = feed.decode(plain())?;
            feed.expect(b':')?;
            match member.as_str() {
                "id" => reply.id = feed.decode(plain())?,
                "error" => reply.error = feed.decode(plain())?,
                "result" => {
                    reply.result = match feed.peek()? {
                        b'{' => Some(PendingResult::Updates(table_updates(&mut feed, pool)?)),
                        b'[' => {
                            feed.expect(b'[')?;
                            let found: bool = feed.decode(plain())?;
                            feed.expect(b',')?;
                            let last: String = feed.decode(plain())?;
                            feed.expect(b',')?;
                            let updates = table_updates(&mut feed, pool)?;
                            feed.expect(b']')?;
                            Some(PendingResult::Since(found, last, updates))
                        }
                        _ => {
                            let _: IgnoredAny = feed.decode(plain())?;
                            None
                        }
                    }
                }
                _ => {
                    let _: IgnoredAny = feed.decode(plain())?;
                }
            }
            if !feed.next_or_end(b'}')? {
                break;
            }
        }
    } else {
        feed.pos += 1;
    }
    // Nothing but whitespace may follow.
    loop {
        if feed.buf[feed.pos..]
            .iter()
            .any(|b| !b.is_ascii_whitespace())
        {
            return Err(format!(
                "trailing bytes after the message at byte {}",
                feed.pos
            ));
        }
        feed.pos = feed.buf.len();
        if !feed.more() {
            return Ok(reply);
        }
    }
}

/// A `table-updates2` object, framed row by row; the rows go to `pool`.
fn table_updates<F: FnMut() -> Option<bytes::Bytes>>(
    feed: &mut Feed<F>,
    pool: &mut RowPool<'_>,
) -> Result<PendingTables, String> {
    let mut tables = Vec::new();
    feed.expect(b'{')?;
    if feed.peek()? == b'}' {
        feed.pos += 1;
        return Ok(tables);
    }
    loop {
        let table: String = feed.decode(plain())?;
        feed.expect(b':')?;
        let shared: Arc<str> = Arc::from(table.as_str());
        let first = pool.next_seq();
        feed.expect(b'{')?;
        if feed.peek()? == b'}' {
            feed.pos += 1;
        } else {
            loop {
                let key = feed.value()?;
                feed.expect(b':')?;
                let value = feed.value()?;
                pool.push(&shared, &feed.buf[key], &feed.buf[value])?;
                feed.compact();
                if !feed.next_or_end(b'}')? {
                    break;
                }
            }
        }
        // A batch holds one table's rows.
        pool.flush()?;
        tables.push((table, first..pool.next_seq()));
        if !feed.next_or_end(b'}')? {
            return Ok(tables);
        }
    }
}

impl<'de> Deserialize<'de> for MonitorResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MonitorResult;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("table updates or [found, last-txn-id, table updates]")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MonitorResult, A::Error> {
                let _interning = InternScope::enter();
                TablesVisitor.visit_map(map).map(MonitorResult::Updates)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MonitorResult, A::Error> {
                let found: bool = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::custom("monitor_cond_since result without found"))?;
                let last: String = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::custom("monitor_cond_since result without txn id"))?;
                let updates: TableUpdates = seq.next_element()?.ok_or_else(|| {
                    de::Error::custom("monitor_cond_since result without updates")
                })?;
                if seq.next_element::<IgnoredAny>()?.is_some() {
                    return Err(de::Error::custom(
                        "monitor_cond_since result with more than 3 elements",
                    ));
                }
                Ok(MonitorResult::Since(found, last, updates))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn wire_datum_matches_datum_from_wire() {
        for v in [
            json!("x"),
            json!(5),
            json!(2.5),
            json!(true),
            json!(["uuid", "22222222-2222-4222-8222-222222222222"]),
            json!(["set", ["a", "b"]]),
            json!(["set", []]),
            json!(["map", [["k", "v"], ["k2", 3]]]),
        ] {
            let wire: WireDatum = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(wire.0, Datum::from_wire(&v).unwrap(), "{v}");
        }
    }

    #[test]
    fn table_updates_decode_all_row_ops() {
        let text = json!({
            "Logical_Switch": {
                "22222222-2222-4222-8222-222222222222": {"insert": {"name": "ls1"}},
                "33333333-2222-4222-8222-222222222222": {"delete": null},
                "44444444-2222-4222-8222-222222222222": {"modify": {"ports": ["set", []]}},
                "55555555-2222-4222-8222-222222222222": {"initial": {}}
            }
        })
        .to_string();
        let u: TableUpdates = serde_json::from_str(&text).unwrap();
        let ops: Vec<RowOp> = u.0[0].rows.iter().map(|r| r.op).collect();
        assert_eq!(
            ops,
            [RowOp::Insert, RowOp::Delete, RowOp::Modify, RowOp::Initial]
        );
        assert_eq!(u.row_count(), 4);
    }

    #[test]
    fn repeated_strings_of_a_message_share_one_allocation() {
        let text = json!({"Logical_Switch_Port": {
            "22222222-2222-4222-8222-222222222222": {"initial": {
                "external_ids": ["map", [["neutron:device_owner", "compute:nova"]]]}},
            "33333333-2222-4222-8222-222222222222": {"initial": {
                "external_ids": ["map", [["neutron:device_owner", "compute:nova"]]]}}
        }})
        .to_string();
        let u: TableUpdates = serde_json::from_str(&text).unwrap();
        let rows = &u.0[0].rows;
        let (name_a, map_a) = &rows[0].columns[0];
        let (name_b, map_b) = &rows[1].columns[0];
        assert!(
            name_a.shares_storage_with(name_b),
            "column names not shared"
        );
        let (Atom::String(k_a), Atom::String(v_a)) = &map_a.pairs()[0] else {
            panic!("not a string map: {map_a:?}");
        };
        let (Atom::String(k_b), Atom::String(v_b)) = &map_b.pairs()[0] else {
            panic!("not a string map: {map_b:?}");
        };
        assert!(k_a.shares_storage_with(k_b) && v_a.shares_storage_with(v_b));
        // Outside a message nothing is interned (no table lingers).
        let a: WireAtom = serde_json::from_str("\"compute:nova\"").unwrap();
        let b: WireAtom = serde_json::from_str("\"compute:nova\"").unwrap();
        let (Atom::String(a), Atom::String(b)) = (a.0, b.0) else {
            panic!("not strings");
        };
        assert!(a == b && !a.shares_storage_with(&b));
    }

    #[test]
    fn malformed_updates_are_errors() {
        for bad in [
            r#"{"T": {"not-a-uuid": {"insert": {}}}}"#,
            r#"{"T": {"22222222-2222-4222-8222-222222222222": {"upsert": {}}}}"#,
            r#"{"T": {"22222222-2222-4222-8222-222222222222": {}}}"#,
            r#"{"T": {"22222222-2222-4222-8222-222222222222": {"insert": {"c": ["map", [["k"]]]}}}}"#,
            r#"{"T": {"22222222-2222-4222-8222-222222222222": {"insert": {"c": {"x": 1}}}}}"#,
            r#"{"T": {"22222222-2222-4222-8222-222222222222": {"insert": {"c": ["uuid", "zz"]}}}}"#,
            r#"{"T": [1]}"#,
        ] {
            assert!(serde_json::from_str::<TableUpdates>(bad).is_err(), "{bad}");
        }
    }

    fn projected(p: &KeyProjection, text: &str) -> serde_json::Result<TableUpdates> {
        p.apply_to(|| serde_json::from_str(text))
    }

    #[test]
    fn a_key_projection_keeps_only_the_listed_keys_of_its_columns() {
        let text = json!({
            "Logical_Switch_Port": {
                "22222222-2222-4222-8222-222222222222": {"initial": {
                    "external_ids": ["map", [["neutron:cidrs", "10.0.0.5/24"],
                                             ["neutron:project_id", "p1"],
                                             ["neutron:revision_number", "3"],
                                             ["esc\"aped", "x"]]],
                    "options": ["map", [["requested-chassis", "h1"], ["mcast_flood", "true"]]],
                    "addresses": ["set", ["fa:16:3e:11:11:11 10.0.0.5"]]}},
                "33333333-2222-4222-8222-222222222222": {"modify": {
                    "external_ids": ["map", [["neutron:revision_number", "4"]]]}}
            },
            "Logical_Router_Port": {
                "44444444-2222-4222-8222-222222222222": {"initial": {
                    "external_ids": ["map", [["neutron:project_id", "p1"]]]}}
            }
        })
        .to_string();
        let p = KeyProjection::default().keep(
            "Logical_Switch_Port",
            "external_ids",
            ["neutron:cidrs", "esc\"aped"],
        );
        let u = projected(&p, &text).unwrap();
        let lsp =
            &u.0.iter()
                .find(|t| t.table == "Logical_Switch_Port")
                .unwrap()
                .rows;
        let col = |r: &RowUpdate, c: &str| {
            r.columns
                .iter()
                .find(|(n, _)| n.as_str() == c)
                .map(|(_, d)| d.clone())
        };
        let ids = col(&lsp[0], "external_ids").unwrap();
        let keys: Vec<&str> = ids.pairs().iter().filter_map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["neutron:cidrs", "esc\"aped"]);
        // Columns and tables without a list are whole.
        assert_eq!(col(&lsp[0], "options").unwrap().pairs().len(), 2);
        assert_eq!(col(&lsp[0], "addresses").unwrap().atoms().len(), 1);
        let lrp =
            &u.0.iter()
                .find(|t| t.table == "Logical_Router_Port")
                .unwrap()
                .rows;
        assert_eq!(col(&lrp[0], "external_ids").unwrap().pairs().len(), 1);
        // A diff touching only dropped keys is an empty diff.
        assert_eq!(col(&lsp[1], "external_ids"), Some(Datum::Map(Vec::new())));
        // Outside `apply_to` nothing is projected.
        let whole: TableUpdates = serde_json::from_str(&text).unwrap();
        let whole_lsp = &whole
            .0
            .iter()
            .find(|t| t.table == "Logical_Switch_Port")
            .unwrap()
            .rows;
        assert_eq!(col(&whole_lsp[0], "external_ids").unwrap().pairs().len(), 4);
    }

    #[test]
    fn a_projected_map_is_still_checked_for_shape() {
        let p = KeyProjection::default().keep("T", "c", ["kept"]);
        for bad in [
            r#"{"T": {"22222222-2222-4222-8222-222222222222": {"insert": {"c": ["map", [["dropped"]]]}}}}"#,
            r#"{"T": {"22222222-2222-4222-8222-222222222222": {"insert": {"c": ["map", [["dropped", "v", "x"]]]}}}}"#,
            r#"{"T": {"22222222-2222-4222-8222-222222222222": {"insert": {"c": ["map", [[]]]}}}}"#,
            r#"{"T": {"22222222-2222-4222-8222-222222222222": {"insert": {"c": ["map", {"dropped": 1}]}}}}"#,
            r#"{"T": {"22222222-2222-4222-8222-222222222222": {"insert": {"c": ["map", [["kept"]]]}}}}"#,
        ] {
            assert!(projected(&p, bad).is_err(), "{bad}");
        }
    }

    fn map_message(pairs: &[(String, String)]) -> String {
        json!({"T": {"22222222-2222-4222-8222-222222222222": {"modify": {
            "c": ["map", pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()],
            "d": ["map", pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()]}}}})
        .to_string()
    }

    /// `text` handed out in pieces cut at `cuts`.
    fn pieces(text: &[u8], cuts: &[usize]) -> impl FnMut() -> Option<bytes::Bytes> {
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
        points.push(0);
        points.push(text.len());
        points.sort_unstable();
        let chunks: Vec<bytes::Bytes> = points
            .windows(2)
            .map(|w| bytes::Bytes::copy_from_slice(&text[w[0]..w[1]]))
            .collect();
        let mut chunks = chunks.into_iter();
        move || chunks.next()
    }

    /// Rows spread over two tables (every third in Logical_Switch, whose
    /// maps are never projected), then an empty table.
    fn rows_json(rows: &[(String, Vec<(String, String)>)]) -> serde_json::Value {
        let mut ports = serde_json::Map::new();
        let mut switches = serde_json::Map::new();
        for (i, (name, pairs)) in rows.iter().enumerate() {
            let pairs: Vec<serde_json::Value> = pairs.iter().map(|(k, v)| json!([k, v])).collect();
            let table = if i % 3 == 2 {
                &mut switches
            } else {
                &mut ports
            };
            table.insert(
                format!("{i:08x}-2222-4222-8222-222222222222"),
                json!({"initial": {"name": name, "external_ids": ["map", pairs]}}),
            );
        }
        json!({"Logical_Switch_Port": ports, "Logical_Switch": switches, "NB_Global": {}})
    }

    #[test]
    fn of_several_bad_rows_the_first_in_the_message_is_reported() {
        let rows: serde_json::Map<String, serde_json::Value> = (0..300)
            .map(|i| {
                let name = if i == 60 || i == 200 {
                    json!(["set"])
                } else {
                    json!("p")
                };
                (
                    format!("{i:08x}-2222-4222-8222-222222222222"),
                    json!({"initial": {"name": name}}),
                )
            })
            .collect();
        let text = json!({"id": 1, "result": {"Logical_Switch_Port": rows}}).to_string();
        // Several decoders racing over small batches, many times: the
        // timing must never change which error is reported.
        for round in 0..30 {
            let err = decode_streamed_reply_on(3, 40 + round, pieces(text.as_bytes(), &[777]))
                .unwrap_err();
            assert!(
                err.starts_with("table Logical_Switch_Port: row 0000003c-2222-4222-8222-222222222222: column name:"),
                "{err}"
            );
        }
        // The buffered decoder reports the same row.
        let buffered = serde_json::from_str::<MonitorResult>(
            &serde_json::from_str::<serde_json::Value>(&text).unwrap()["result"].to_string(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            buffered.contains("row 0000003c-2222-4222-8222-222222222222"),
            "{buffered}"
        );
    }

    #[test]
    fn decoding_threads_share_strings_within_their_batches() {
        let rows: serde_json::Map<String, serde_json::Value> = (0..4)
            .map(|i| {
                (
                    format!("{i:08x}-2222-4222-8222-222222222222"),
                    json!({"initial": {"type": "compute:nova"}}),
                )
            })
            .collect();
        let text = json!({"id": 1, "result": {"T": rows}}).to_string();
        let reply = decode_streamed_reply_on(2, 1 << 20, pieces(text.as_bytes(), &[50])).unwrap();
        let Some(MonitorResult::Updates(u)) = reply.result else {
            panic!("no updates: {:?}", reply.result);
        };
        let values: Vec<&Datum> = u.0[0].rows.iter().map(|r| &r.columns[0].1).collect();
        let (Atom::String(a), Atom::String(b)) = (&values[0].atoms()[0], &values[3].atoms()[0])
        else {
            panic!("not strings: {values:?}");
        };
        assert!(a.shares_storage_with(b), "one batch, one decoder: one copy");
    }

    #[test]
    fn a_streamed_reply_with_an_error_or_no_result_keeps_its_members() {
        let text = br#"{"error": {"error": "unknown database"}, "id": 4, "result": null}"#;
        let r = decode_streamed_reply(pieces(text, &[3, 30])).unwrap();
        assert_eq!((r.id, r.result), (json!(4), None));
        assert_eq!(r.error, json!({"error": "unknown database"}));
        for bad in [
            &br#"{"id": 4, "result": {"T": {"not-a-uuid": {}}}}"#[..],
            br#"{"id": 4} x"#,
            br#"{"id": 4"#,
            b"[1]",
        ] {
            assert!(
                decode_streamed_reply(pieces(bad, &[5])).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    proptest! {
        #[test]
        fn a_reply_decoded_row_by_row_equals_the_buffered_decode(
            rows in prop::collection::vec(("[a-z\\\\\" ]{0,4}", prop::collection::vec(("[a-c\\\\\"]{0,2}", "[a-z{}\\[\\], ]{0,3}"), 0..4)), 0..6),
            since in any::<bool>(),
            pretty in any::<bool>(),
            result_first in any::<bool>(),
            cuts in prop::collection::vec(any::<usize>(), 0..10),
            kept in prop::collection::vec("[a-c]{0,2}", 0..3),
            decoders in 1usize..4,
            batch_bytes in 1usize..300,
        ) {
            let updates = rows_json(&rows);
            let result = if since { json!([true, "7a3b8c2e-0000-4000-8000-000000000001", updates]) } else { updates };
            let show = |v: &serde_json::Value| if pretty { serde_json::to_string_pretty(v).unwrap() } else { v.to_string() };
            let text = if result_first {
                format!("{{\"result\": {}, \"id\": 7, \"error\": null}}", show(&result))
            } else {
                format!("{{\"id\":7,\"result\":{},\"error\":null}}", show(&result))
            };
            let p = KeyProjection::default().keep("Logical_Switch_Port", "external_ids", kept);
            let want: MonitorResult = p.apply_to(|| serde_json::from_str(&result.to_string())).unwrap();
            let got = p.apply_to(|| decode_streamed_reply_on(decoders, batch_bytes, pieces(text.as_bytes(), &cuts))).unwrap();
            prop_assert_eq!(got.id, json!(7));
            prop_assert_eq!(got.result, Some(want));
        }

        #[test]
        fn a_streamed_reply_decoder_never_panics(
            data in prop::collection::vec(any::<u8>(), 0..256),
            cuts in prop::collection::vec(any::<usize>(), 0..6),
            decoders in 1usize..3,
        ) {
            let _ = decode_streamed_reply_on(decoders, 16, pieces(&data, &cuts));
        }

        #[test]
        fn projecting_while_decoding_equals_filtering_after(
            pairs in prop::collection::vec(("[a-e\\\\\"é]{0,3}", "[a-z]{0,3}"), 0..12),
            kept in prop::collection::vec("[a-e\\\\\"é]{0,3}", 0..4),
        ) {
            let text = map_message(&pairs);
            let p = KeyProjection::default().keep("T", "c", kept.clone());
            let got = projected(&p, &text).unwrap();
            let mut want: TableUpdates = serde_json::from_str(&text).unwrap();
            for (name, d) in &mut want.0[0].rows[0].columns {
                if name.as_str() == "c" {
                    if let Datum::Map(pairs) = d {
                        pairs.retain(|(k, _)| kept.iter().any(|s| Some(s.as_str()) == k.as_str()));
                    }
                }
            }
            prop_assert_eq!(got, want);
        }

        #[test]
        fn datum_decoder_never_panics(text in ".{0,64}", bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = serde_json::from_str::<WireDatum>(&text);
            let _ = serde_json::from_slice::<TableUpdates>(&bytes);
            let _ = serde_json::from_str::<TableUpdates>(&format!("{{\"T\":{{\"22222222-2222-4222-8222-222222222222\":{{\"modify\":{{\"c\":{text}}}}}}}}}"));
            let p = KeyProjection::default().keep("T", "c", ["a"]);
            let _ = projected(&p, &format!("{{\"T\":{{\"22222222-2222-4222-8222-222222222222\":{{\"modify\":{{\"c\":{text}}}}}}}}}"));
        }
    }
}
