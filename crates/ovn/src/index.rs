//! The persistent maps and index entries the snapshot's row maps and
//! indexes are made of ([`PMap`], [`Rows`], [`Index`], [`RowSet`]), and
//! how an index entry is read. A leaf: the snapshot, the SB index and the
//! live snapshot's reference upkeep all build on it.

use std::sync::Arc;

use imbl::shared_ptr::DefaultSharedPtr;
use imbl::OrdMap;
use obgp_ovsdb_data::Uuid;

/// A persistent map (clones share structure). A B-tree, not imbl's hash
/// trie: at 50k ports the trie's sparse nodes cost ~310 bytes an entry
/// against ~75, and the snapshot held 22 MiB more (113 against 91 MiB),
/// for no gain in `desired_state`'s time.
pub(crate) type PMap<K, V> = OrdMap<K, V>;
/// Parsed rows by uuid.
pub(crate) type Rows<T> = PMap<Uuid, Arc<T>>;
/// A lookup key to the rows it names, in uuid order: "first by uuid order
/// wins" is the set's first element.
pub(crate) type Index<K, T> = PMap<K, RowSet<T>>;

/// Sets up to this size are a sorted array, larger ones a B-tree.
const SMALL_SET: usize = 16;

/// The rows of one index entry, ordered by uuid, each stored with its
/// parsed row so that reading an entry costs no second lookup in the row
/// map (a second lookup per row showed in `desired_state`'s profile). Most
/// entries name one or a few rows (a port name, a router id), for which a
/// persistent B-tree costs a kilobyte-sized node each; those are a small
/// sorted array instead, copied on change. Large entries (the ports of a
/// chassis) are a persistent B-tree, so one change costs O(log n). The
/// representation depends only on the size, so equal sets compare equal.
///
/// The live snapshot must [`RowSet::insert`] a row's new `Arc` into every
/// entry it belongs to whenever the row changes, even when its key did not
/// (insert replaces), or the entry serves the old row.
///
/// One row is held inline (`One`): most entries of the port indexes (a
/// port's name, a network of one port) name one, and an array of one cost
/// a 40-byte allocation each, ~2.4 MiB of malloc chunks at 50k ports.
#[derive(Debug)]
pub(crate) enum RowSet<T> {
    One((Uuid, Arc<T>)),
    Small(Arc<[(Uuid, Arc<T>)]>),
    Large(OrdMap<Uuid, Arc<T>>),
}

impl<T> Clone for RowSet<T> {
    fn clone(&self) -> Self {
        match self {
            RowSet::One(one) => RowSet::One(one.clone()),
            RowSet::Small(a) => RowSet::Small(a.clone()),
            RowSet::Large(m) => RowSet::Large(m.clone()),
        }
    }
}

impl<T> Default for RowSet<T> {
    fn default() -> Self {
        RowSet::Small(Arc::new([]))
    }
}

/// Same uuids with equal rows (the same `Arc`, or equal values: a live
/// snapshot equals a fresh build of the same rows).
impl<T: PartialEq> PartialEq for RowSet<T> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .zip(other.iter())
                .all(|((u, a), (v, b))| u == v && (Arc::ptr_eq(a, b) || **a == **b))
    }
}

impl<T> RowSet<T> {
    /// Adds row `u`, or replaces the row stored for `u`.
    pub fn insert(&mut self, u: Uuid, row: Arc<T>) {
        match self {
            RowSet::One((o, r)) if *o == u => *r = row,
            RowSet::One((o, r)) => {
                let (o, r) = (*o, r.clone());
                *self = RowSet::Small(match o < u {
                    true => Arc::new([(o, r), (u, row)]),
                    false => Arc::new([(u, row), (o, r)]),
                });
            }
            RowSet::Small(a) if a.is_empty() => *self = RowSet::One((u, row)),
            RowSet::Small(a) => match a.binary_search_by_key(&u, |(k, _)| *k) {
                Ok(at) => {
                    let mut v = a.to_vec();
                    v[at].1 = row;
                    *a = v.into();
                }
                Err(at) if a.len() < SMALL_SET => {
                    let mut v = Vec::with_capacity(a.len() + 1);
                    v.extend_from_slice(&a[..at]);
                    v.push((u, row));
                    v.extend_from_slice(&a[at..]);
                    *a = v.into();
                }
                Err(_) => {
                    let mut map: OrdMap<Uuid, Arc<T>> = a.iter().cloned().collect();
                    map.insert(u, row);
                    *self = RowSet::Large(map);
                }
            },
            RowSet::Large(map) => {
                map.insert(u, row);
            }
        }
    }

    pub fn remove(&mut self, u: Uuid) {
        match self {
            RowSet::One((o, _)) if *o == u => *self = RowSet::default(),
            RowSet::One(_) => {}
            RowSet::Small(a) => {
                if let Ok(at) = a.binary_search_by_key(&u, |(k, _)| *k) {
                    let mut v = a.to_vec();
                    v.remove(at);
                    *self = match v.len() {
                        1 => RowSet::One(v.swap_remove(0)),
                        _ => RowSet::Small(v.into()),
                    };
                }
            }
            RowSet::Large(map) => {
                map.remove(&u);
                if map.len() <= SMALL_SET {
                    *self = RowSet::Small(map.iter().map(|(u, r)| (*u, r.clone())).collect());
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        match self {
            RowSet::One(_) => 1,
            RowSet::Small(a) => a.len(),
            RowSet::Large(map) => map.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The uuids and rows in ascending uuid order.
    pub fn iter(&self) -> RowSetIter<'_, T> {
        match self {
            RowSet::One(one) => RowSetIter::Small(std::slice::from_ref(one).iter()),
            RowSet::Small(a) => RowSetIter::Small(a.iter()),
            RowSet::Large(map) => RowSetIter::Large(map.iter()),
        }
    }

    /// The rows in ascending uuid order.
    pub fn rows(&self) -> impl Iterator<Item = &T> {
        self.iter().map(|(_, r)| &**r)
    }

    pub fn contains(&self, u: Uuid) -> bool {
        match self {
            RowSet::One((o, _)) => *o == u,
            RowSet::Small(a) => a.binary_search_by_key(&u, |(k, _)| *k).is_ok(),
            RowSet::Large(map) => map.contains_key(&u),
        }
    }

    /// The row with the lowest uuid.
    pub fn first(&self) -> Option<&T> {
        match self {
            RowSet::One((_, r)) => Some(&**r),
            RowSet::Small(a) => a.first().map(|(_, r)| &**r),
            RowSet::Large(map) => map.get_min().map(|(_, r)| &**r),
        }
    }
}

pub(crate) enum RowSetIter<'a, T> {
    Small(std::slice::Iter<'a, (Uuid, Arc<T>)>),
    Large(imbl::ordmap::Iter<'a, Uuid, Arc<T>, DefaultSharedPtr>),
}

impl<'a, T> Iterator for RowSetIter<'a, T> {
    type Item = (&'a Uuid, &'a Arc<T>);
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            RowSetIter::Small(it) => it.next().map(|(u, r)| (u, r)),
            RowSetIter::Large(it) => it.next(),
        }
    }
}

/// The rows an index entry names, in uuid order.
pub(crate) fn rows_at<T>(idx: Option<&RowSet<T>>) -> impl Iterator<Item = &T> {
    idx.into_iter().flat_map(RowSet::rows)
}

/// The first row (by uuid) an index entry names.
pub(crate) fn first_at<T>(idx: Option<&RowSet<T>>) -> Option<&T> {
    idx.and_then(RowSet::first)
}
