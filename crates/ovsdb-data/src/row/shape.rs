//! Row shapes: the sorted column names of a row, shared by every row that
//! has the same columns (the ports of a dump all have the same handful).
//!
//! Each thread keeps the set of shapes it has built, so a row finds the
//! names of its shape there instead of holding its own copy. The set drops
//! the shapes no row holds any more whenever it has doubled since it last
//! did, so it stays within twice the shapes in use.

use std::borrow::Borrow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use crate::datum::Str;

/// A shape's sorted column names: one pointer, the names behind it shared.
#[derive(Clone, PartialEq)]
pub(crate) struct Names(Arc<Box<[Str]>>);

impl Deref for Names {
    type Target = [Str];
    fn deref(&self) -> &[Str] {
        &self.0
    }
}

/// A shape in the set, found by its names.
struct Known(Names);

impl Borrow<[Str]> for Known {
    fn borrow(&self) -> &[Str] {
        &self.0
    }
}

impl Hash for Known {
    fn hash<H: Hasher>(&self, state: &mut H) {
        <[Str]>::hash(&self.0, state)
    }
}

impl PartialEq for Known {
    fn eq(&self, other: &Known) -> bool {
        *self.0 == *other.0
    }
}

impl Eq for Known {}

/// Fewest shapes kept before the set is pruned.
const PRUNE_FLOOR: usize = 64;

struct Shapes {
    known: HashSet<Known>,
    /// The set's size at which the shapes no row holds are dropped.
    prune_at: usize,
    /// The names being looked up, in a buffer kept between rows.
    scratch: Vec<Str>,
}

thread_local! {
    static SHAPES: RefCell<Shapes> = RefCell::new(Shapes {
        known: HashSet::new(),
        prune_at: PRUNE_FLOOR,
        scratch: Vec::new(),
    });
}

/// The shared names of the shape `names` (sorted, no duplicates).
pub(crate) fn names_of<'a>(names: impl Iterator<Item = &'a Str>) -> Names {
    SHAPES.with(|shapes| {
        let mut shapes = shapes.borrow_mut();
        let Shapes {
            known,
            prune_at,
            scratch,
        } = &mut *shapes;
        scratch.extend(names.cloned());
        let found = match known.get(scratch.as_slice()) {
            Some(Known(names)) => names.clone(),
            None => {
                let names = Names(Arc::new(scratch.as_slice().into()));
                if known.len() >= *prune_at {
                    known.retain(|Known(n)| Arc::strong_count(&n.0) > 1);
                    *prune_at = (2 * known.len()).max(PRUNE_FLOOR);
                }
                known.insert(Known(names.clone()));
                names
            }
        };
        scratch.clear();
        found
    })
}

/// How many shapes this thread's set holds (tests).
#[cfg(test)]
pub(crate) fn known_on_this_thread() -> usize {
    SHAPES.with(|shapes| shapes.borrow().known.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(of: &[&str]) -> Vec<Str> {
        of.iter().map(|s| Str::from(*s)).collect()
    }

    #[test]
    fn equal_names_share_one_shape() {
        let a = names_of(names(&["addresses", "name", "up"]).iter());
        let b = names_of(names(&["addresses", "name", "up"]).iter());
        let c = names_of(names(&["name", "up"]).iter());
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert!(!Arc::ptr_eq(&a.0, &c.0));
        assert_eq!(&*c, &names(&["name", "up"])[..]);
    }

    #[test]
    fn shapes_no_row_holds_are_dropped() {
        // Thousands of distinct shapes, each dropped at once: the set
        // stays within twice the floor, not one entry per shape ever seen.
        for i in 0..5000 {
            drop(names_of(names(&[&format!("column-{i}")]).iter()));
        }
        assert!(known_on_this_thread() <= 2 * PRUNE_FLOOR);
        // A shape still held survives a prune.
        let held = names_of(names(&["kept"]).iter());
        for i in 0..5000 {
            drop(names_of(names(&[&format!("other-{i}")]).iter()));
        }
        let again = names_of(names(&["kept"]).iter());
        assert!(Arc::ptr_eq(&held.0, &again.0));
    }
}
