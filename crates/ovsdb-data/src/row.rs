//! A row: its columns (values beside the sorted names of the row's shape,
//! shared), and the typed accessors readers use.

mod shape;

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::datum::{Atom, Datum, DatumError, Str, Uuid};

/// A row's columns: the values, in the order of the sorted column names,
/// and those names, shared by every row that has the same columns.
///
/// The names are looked up in a per-thread set of shapes ([`shape`]):
/// the ports of a dump all have the same handful of columns, so a row
/// pays 8 bytes for its names instead of 16 a column, and a value costs
/// its 24 bytes. Both halves are boxed slices (no spare room); `None` is
/// no column at all, so that [`Columns::new`] is `const`. The methods
/// mirror the `BTreeMap` ones readers used before; [`Columns::insert`] and
/// [`Columns::remove`] of a new or present name rebuild the row (the cold
/// path: an update builds a new row anyway).
#[derive(Clone, Default, PartialEq)]
pub struct Columns {
    names: Option<shape::Names>,
    values: Option<Box<[Datum]>>,
}

impl Columns {
    /// No columns.
    pub const fn new() -> Columns {
        Columns {
            names: None,
            values: None,
        }
    }

    /// Columns from pairs in any order; a repeated name keeps its last value.
    pub fn from_pairs(mut pairs: Vec<(Str, Datum)>) -> Columns {
        // Stable sort, then keep the last of equal names.
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        pairs.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                std::mem::swap(later, kept);
            }
            same
        });
        if pairs.is_empty() {
            return Columns::new();
        }
        let names = shape::names_of(pairs.iter().map(|(n, _)| n));
        let values = pairs.into_iter().map(|(_, d)| d).collect();
        Columns {
            names: Some(names),
            values: Some(values),
        }
    }

    /// The sorted names.
    fn names(&self) -> &[Str] {
        self.names.as_deref().unwrap_or(&[])
    }

    fn values_slice(&self) -> &[Datum] {
        self.values.as_deref().unwrap_or(&[])
    }

    fn values_slice_mut(&mut self) -> &mut [Datum] {
        self.values.as_deref_mut().unwrap_or(&mut [])
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.names().binary_search_by(|n| n.as_str().cmp(name))
    }

    /// The value of column `name`.
    pub fn get(&self, name: &str) -> Option<&Datum> {
        self.find(name).ok().map(|i| &self.values_slice()[i])
    }

    /// The value of column `name`, to modify in place.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Datum> {
        let i = self.find(name).ok()?;
        Some(&mut self.values_slice_mut()[i])
    }

    /// Whether column `name` is present.
    pub fn contains_key(&self, name: &str) -> bool {
        self.find(name).is_ok()
    }

    /// Sets column `name`; returns its previous value.
    pub fn insert(&mut self, name: impl Into<Str>, value: Datum) -> Option<Datum> {
        let name = name.into();
        match self.find(&name) {
            Ok(i) => Some(std::mem::replace(&mut self.values_slice_mut()[i], value)),
            Err(i) => {
                let mut pairs = std::mem::take(self).into_pairs();
                pairs.insert(i, (name, value));
                *self = Columns::from_pairs(pairs);
                None
            }
        }
    }

    /// Removes column `name`; returns its value.
    pub fn remove(&mut self, name: &str) -> Option<Datum> {
        let i = self.find(name).ok()?;
        let mut pairs = std::mem::take(self).into_pairs();
        let (_, removed) = pairs.remove(i);
        *self = Columns::from_pairs(pairs);
        Some(removed)
    }

    /// Number of columns present.
    pub fn len(&self) -> usize {
        self.names().len()
    }

    /// Whether no column is present.
    pub fn is_empty(&self) -> bool {
        self.names().is_empty()
    }

    /// (name, value) pairs in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&Str, &Datum)> {
        self.names().iter().zip(self.values_slice())
    }

    /// Column names in order.
    pub fn keys(&self) -> impl Iterator<Item = &Str> {
        self.names().iter()
    }

    /// Values in column-name order.
    pub fn values(&self) -> impl Iterator<Item = &Datum> {
        self.values_slice().iter()
    }

    /// Values in column-name order, to modify in place.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Datum> {
        self.values_slice_mut().iter_mut()
    }

    /// Keeps the columns for which `keep` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(&Str, &mut Datum) -> bool) {
        let mut pairs = std::mem::take(self).into_pairs();
        pairs.retain_mut(|(n, d)| keep(n, d));
        *self = Columns::from_pairs(pairs);
    }

    /// Nothing to drop: both halves are boxed slices, without spare room.
    /// Kept for the callers that shrank the vector this used to be.
    pub fn shrink_to_fit(&mut self) {}

    /// The (name, value) pairs, taken apart.
    fn into_pairs(self) -> Vec<(Str, Datum)> {
        let Columns { names, values } = self;
        let names = names.as_deref().unwrap_or(&[]).iter().cloned();
        names
            .zip(values.map(Vec::from).unwrap_or_default())
            .collect()
    }
}

impl fmt::Debug for Columns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Into<Str>> FromIterator<(K, Datum)> for Columns {
    fn from_iter<I: IntoIterator<Item = (K, Datum)>>(iter: I) -> Columns {
        Columns::from_pairs(iter.into_iter().map(|(k, d)| (k.into(), d)).collect())
    }
}

impl<K: Into<Str>, const N: usize> From<[(K, Datum); N]> for Columns {
    fn from(pairs: [(K, Datum); N]) -> Columns {
        pairs.into_iter().collect()
    }
}

impl From<BTreeMap<String, Datum>> for Columns {
    fn from(map: BTreeMap<String, Datum>) -> Columns {
        map.into_iter().collect()
    }
}

impl<'a> IntoIterator for &'a Columns {
    type Item = (&'a Str, &'a Datum);
    type IntoIter = std::iter::Zip<std::slice::Iter<'a, Str>, std::slice::Iter<'a, Datum>>;
    fn into_iter(self) -> Self::IntoIter {
        self.names().iter().zip(self.values_slice())
    }
}

impl IntoIterator for Columns {
    type Item = (Str, Datum);
    type IntoIter = std::vec::IntoIter<(Str, Datum)>;
    fn into_iter(self) -> Self::IntoIter {
        self.into_pairs().into_iter()
    }
}

/// One row: column name to value. A column absent from the map holds its
/// type's default (empty set, empty map, 0, "", false).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    /// Column name to value; absent columns hold their default.
    pub columns: Columns,
}

impl Row {
    /// Decodes `{"column": datum, ...}` in wire notation.
    pub fn from_wire(v: &Value) -> Result<Row, DatumError> {
        let obj = v
            .as_object()
            .ok_or_else(|| DatumError::NotAnObject(v.to_string()))?;
        let mut columns = Vec::with_capacity(obj.len());
        for (k, d) in obj {
            let datum =
                Datum::from_wire(d).map_err(|e| DatumError::Column(k.clone(), Box::new(e)))?;
            columns.push((Str::from(k), datum));
        }
        Ok(Row {
            columns: Columns::from_pairs(columns),
        })
    }

    /// The row in wire notation (`{"column": datum, ...}`), the inverse of
    /// [`Row::from_wire`]: what a capture of a node writes.
    pub fn to_wire(&self) -> Value {
        Value::Object(
            self.columns
                .iter()
                .map(|(name, d)| (name.to_string(), d.to_wire()))
                .collect(),
        )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_stay_sorted_and_behave_like_a_map() {
        let mut c = Columns::new();
        assert_eq!(c.insert("name", Datum::empty_set()), None);
        assert_eq!(c.insert("addresses", Datum::empty_set()), None);
        assert!(c
            .insert("name", Datum::scalar(Atom::String("p1".into())))
            .is_some());
        assert_eq!(
            c.keys().map(Str::as_str).collect::<Vec<_>>(),
            ["addresses", "name"]
        );
        assert_eq!(c.remove("addresses"), Some(Datum::empty_set()));
        assert!(!c.contains_key("addresses"));
        let one = Datum::scalar(Atom::Integer(1));
        let from: Columns = vec![
            ("b", Datum::empty_set()),
            ("a", Datum::empty_set()),
            ("b", one.clone()),
        ]
        .into_iter()
        .collect();
        assert_eq!(from.keys().map(Str::as_str).collect::<Vec<_>>(), ["a", "b"]);
        // A repeated name keeps its last value, as a BTreeMap would.
        assert_eq!(from.get("b"), Some(&one));
    }

    #[test]
    fn rows_with_the_same_columns_share_their_names() {
        // A port row costs 8 bytes of names, not 16 a column; the Arc'd
        // row stays in a 48-byte malloc chunk.
        assert_eq!(std::mem::size_of::<Columns>(), 24);
        let port = |name: &str| {
            Row::from_wire(&serde_json::json!({"name": name, "up": true, "tag": 7})).unwrap()
        };
        let (p1, p2) = (port("p1"), port("p2"));
        let (n1, n2) = (p1.columns.names.as_ref(), p2.columns.names.as_ref());
        assert!(std::ptr::eq(&**n1.unwrap(), &**n2.unwrap()));
        // Growing a row gives it the shape of rows with those columns.
        let mut grown = port("p3");
        grown.columns.remove("tag");
        grown.columns.insert("tag", Datum::scalar(Atom::Integer(7)));
        assert!(std::ptr::eq(
            &**grown.columns.names.as_ref().unwrap(),
            &**n1.unwrap()
        ));
        assert_eq!(grown.columns.get("name"), port("p3").columns.get("name"));
        assert_eq!(grown, port("p3"));
        let mut emptied = port("p4");
        emptied.columns.retain(|_, _| false);
        assert_eq!(emptied.columns, Columns::new());
        assert_eq!(emptied.columns.iter().count(), 0);
    }

    #[test]
    fn a_row_written_to_wire_reads_back_the_same() {
        let wire = serde_json::json!({
            "name": "p1",
            "addresses": ["set", ["fa:16:3e:00:00:01 10.0.0.5", "router"]],
            "external_ids": ["map", [["neutron:host_id", "compute-1"]]],
            "ls": ["uuid", "11111111-1111-4111-8111-111111111111"],
            "tag": 7,
        });
        let row = Row::from_wire(&wire).unwrap();
        assert_eq!(Row::from_wire(&row.to_wire()).unwrap(), row);
    }
}
