//! The small set operations the live snapshot's indexes (NB and SB) are
//! kept with: an index entry edited row by row ([`edit`]), reverse
//! references ([`Referrers`]: which rows point at a row) and the difference
//! of two reference lists, computed without hashing when they arrive
//! sorted.

use std::collections::HashSet;
use std::sync::Arc;

use obgp_ovsdb_data::Uuid;

use crate::hash::FastHash;
use crate::index::Index;
use crate::uuid_set::UuidSet;

/// Uuids pointing at a row, by the row's uuid.
pub(crate) type Referrers = std::collections::HashMap<Uuid, UuidSet, FastHash>;

/// Adds row `uuid` (stored as `row`) to the entry `key`, replacing the row
/// stored there before, or removes it from the entry.
pub(crate) fn edit<K: Ord + Clone, T>(
    ix: &mut Index<K, T>,
    key: K,
    uuid: Uuid,
    row: &Arc<T>,
    add: bool,
) {
    if add {
        ix.entry(key).or_default().insert(uuid, row.clone());
    } else if let Some(set) = ix.get_mut(&key) {
        set.remove(uuid);
        if set.is_empty() {
            ix.remove(&key);
        }
    }
}

pub(crate) fn refer(map: &mut Referrers, target: Uuid, from: Uuid, add: bool) {
    if add {
        map.entry(target).or_default().insert(from);
    } else if let Some(set) = map.get_mut(&target) {
        set.remove(&from);
        if set.is_empty() {
            map.remove(&target);
        }
    }
}

/// Updates `map` from the references `old` to those `new` of row `from`,
/// touching only the difference (a switch lists thousands of ports), and
/// returns that difference: the uuids `from` started or stopped naming.
pub(crate) fn rerefer(map: &mut Referrers, from: Uuid, old: &[Uuid], new: &[Uuid]) -> Vec<Uuid> {
    if old == new {
        return Vec::new();
    }
    let (gone, added) = set_difference(old, new);
    for u in &gone {
        refer(map, *u, from, false);
    }
    for u in &added {
        refer(map, *u, from, true);
    }
    let mut changed = gone;
    changed.extend(added);
    changed
}

/// What `old` has that `new` lacks, and the reverse, each without
/// duplicates. OVSDB sets arrive sorted, so the common case is one merge
/// pass with no hashing: hashing both sides of a large switch's `ports`
/// dominated an LSP insert (docs/adr/0001-incremental-snapshot.md).
fn set_difference(old: &[Uuid], new: &[Uuid]) -> (Vec<Uuid>, Vec<Uuid>) {
    let strictly_sorted = |v: &[Uuid]| v.windows(2).all(|w| w[0] < w[1]);
    if !(strictly_sorted(old) && strictly_sorted(new)) {
        let old_set: HashSet<Uuid, FastHash> = old.iter().copied().collect();
        let new_set: HashSet<Uuid, FastHash> = new.iter().copied().collect();
        return (
            old_set.difference(&new_set).copied().collect(),
            new_set.difference(&old_set).copied().collect(),
        );
    }
    let (mut gone, mut added) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < old.len() && j < new.len() {
        match old[i].cmp(&new[j]) {
            std::cmp::Ordering::Less => {
                gone.push(old[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                added.push(new[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
        }
    }
    gone.extend_from_slice(&old[i..]);
    added.extend_from_slice(&new[j..]);
    (gone, added)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_difference_is_the_same_on_sorted_and_unsorted_sets() {
        let u = |v: &[u128]| v.iter().map(|i| Uuid(*i)).collect::<Vec<_>>();
        let sorted = |mut v: Vec<Uuid>| {
            v.sort();
            v
        };
        // Sorted: the merge pass.
        let (gone, added) = set_difference(&u(&[1, 2, 4, 7]), &u(&[2, 3, 4, 8, 9]));
        assert_eq!((gone, added), (u(&[1, 7]), u(&[3, 8, 9])));
        // Unsorted, or with duplicates: the hashing fallback, same answer.
        let (gone, added) = set_difference(&u(&[7, 4, 2, 1, 4]), &u(&[9, 2, 3, 8, 4]));
        assert_eq!((sorted(gone), sorted(added)), (u(&[1, 7]), u(&[3, 8, 9])));
        assert_eq!(set_difference(&[], &u(&[5])), (vec![], u(&[5])));
    }
}
