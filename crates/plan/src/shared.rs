//! `SharedSet`: a sorted set that the netlink mirror and each observed
//! [`Actual`](crate::Actual) share instead of copying.
//!
//! At 50k ports a node holds ~7k addresses, ~5k rules and ~5k routes, and
//! every reconcile observes them all. Copying them out of the mirror (and
//! freeing the copies after the plan) was the larger part of an observe.
//! A `SharedSet` is an `Arc` around the set: a read hands out a pointer, and
//! the first write after it copies the set only if a reader still holds it
//! (`Arc::make_mut`). The reconcile drops its `Actual` once it has planned,
//! so the notifications its own writes cause change the mirror in place.

use std::collections::BTreeSet;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// A copy-on-write `BTreeSet`: reads through `Deref`, writes through
/// `DerefMut` (copying first when the set is shared), clones in O(1).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SharedSet<T: Ord>(Arc<BTreeSet<T>>);

impl<T: Ord> SharedSet<T> {
    /// An empty set.
    pub fn new() -> Self {
        SharedSet(Arc::new(BTreeSet::new()))
    }

    /// Whether `self` and `other` are the same allocation (a read that has
    /// not been written since), not merely equal.
    pub fn shares_with(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T: Ord> Default for SharedSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Ord> Deref for SharedSet<T> {
    type Target = BTreeSet<T>;
    fn deref(&self) -> &BTreeSet<T> {
        &self.0
    }
}

impl<T: Ord + Clone> DerefMut for SharedSet<T> {
    fn deref_mut(&mut self) -> &mut BTreeSet<T> {
        Arc::make_mut(&mut self.0)
    }
}

impl<T: Ord> From<BTreeSet<T>> for SharedSet<T> {
    fn from(set: BTreeSet<T>) -> Self {
        SharedSet(Arc::new(set))
    }
}

impl<T: Ord> FromIterator<T> for SharedSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        SharedSet(Arc::new(iter.into_iter().collect()))
    }
}

impl<'a, T: Ord> IntoIterator for &'a SharedSet<T> {
    type Item = &'a T;
    type IntoIter = std::collections::btree_set::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<T: Ord + Clone> IntoIterator for SharedSet<T> {
    type Item = T;
    type IntoIter = std::collections::btree_set::IntoIter<T>;
    /// Takes the set, copying it only if it is still shared.
    fn into_iter(self) -> Self::IntoIter {
        Arc::unwrap_or_clone(self.0).into_iter()
    }
}

impl<T: Ord + Clone> Extend<T> for SharedSet<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        Arc::make_mut(&mut self.0).extend(iter)
    }
}

impl<T: Ord> PartialEq<BTreeSet<T>> for SharedSet<T> {
    fn eq(&self, other: &BTreeSet<T>) -> bool {
        *self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_shares_and_the_next_write_copies_only_if_the_read_lives() {
        let mut mirror: SharedSet<u32> = [1, 2, 3].into_iter().collect();
        let read = mirror.clone();
        assert!(read.shares_with(&mirror), "a read is a pointer copy");

        // The reader still holds it: the write copies, the reader's view stays.
        mirror.insert(4);
        assert!(!read.shares_with(&mirror));
        assert_eq!(*read, BTreeSet::from([1, 2, 3]));
        assert_eq!(mirror, BTreeSet::from([1, 2, 3, 4]));

        // The reader is gone: the write is in place.
        let read = mirror.clone();
        drop(read);
        let before = Arc::as_ptr(&mirror.0);
        mirror.remove(&1);
        assert_eq!(Arc::as_ptr(&mirror.0), before, "no copy without a reader");
        assert_eq!(mirror, BTreeSet::from([2, 3, 4]));
    }
}
