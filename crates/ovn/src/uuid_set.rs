//! A set of row uuids sized for the reverse references the live snapshot
//! keeps (which switch lists a port, which router a NAT): nearly every set
//! holds one uuid. A `BTreeSet` allocates a ~200-byte node even for one,
//! ~10 MiB over the 52k ports of a 50k-port cloud; a sorted vector holds it
//! in 16 bytes. Large sets (the ports of a chassis in the SB) stay B-trees,
//! so that inserting into them stays O(log n).

use std::collections::BTreeSet;

use obgp_ovsdb_data::Uuid;

/// Sets up to this size are a sorted vector.
const SMALL: usize = 16;

/// One member is held inline (`One`): a port is listed by one switch, a
/// NAT by one router, and a one-uuid vector still cost a 16-byte
/// allocation (a 32-byte malloc chunk) per port, ~1.6 MiB at 50k ports.
/// A `Small` vector holds two or more members, or none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum UuidSet {
    One(Uuid),
    Small(Vec<Uuid>),
    Large(BTreeSet<Uuid>),
}

impl Default for UuidSet {
    fn default() -> Self {
        UuidSet::Small(Vec::new())
    }
}

impl UuidSet {
    /// Adds `u`; false if it was there.
    pub fn insert(&mut self, u: Uuid) -> bool {
        match self {
            UuidSet::One(o) if *o == u => false,
            UuidSet::One(o) => {
                let o = *o;
                *self = UuidSet::Small(if o < u { vec![o, u] } else { vec![u, o] });
                true
            }
            UuidSet::Small(v) if v.is_empty() => {
                *self = UuidSet::One(u);
                true
            }
            UuidSet::Small(v) => match v.binary_search(&u) {
                Ok(_) => false,
                Err(_) if v.len() == SMALL => {
                    let mut set: BTreeSet<Uuid> = v.drain(..).collect();
                    set.insert(u);
                    *self = UuidSet::Large(set);
                    true
                }
                Err(i) => {
                    v.insert(i, u);
                    true
                }
            },
            UuidSet::Large(set) => set.insert(u),
        }
    }

    /// Removes `u`; false if it was not there.
    pub fn remove(&mut self, u: &Uuid) -> bool {
        match self {
            UuidSet::One(o) if o == u => {
                *self = UuidSet::default();
                true
            }
            UuidSet::One(_) => false,
            UuidSet::Small(v) => match v.binary_search(u) {
                Ok(i) => {
                    v.remove(i);
                    if let [only] = v[..] {
                        *self = UuidSet::One(only);
                    }
                    true
                }
                Err(_) => false,
            },
            UuidSet::Large(set) => set.remove(u),
        }
    }

    pub fn contains(&self, u: &Uuid) -> bool {
        match self {
            UuidSet::One(o) => o == u,
            UuidSet::Small(v) => v.binary_search(u).is_ok(),
            UuidSet::Large(set) => set.contains(u),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            UuidSet::One(_) => false,
            UuidSet::Small(v) => v.is_empty(),
            UuidSet::Large(set) => set.is_empty(),
        }
    }

    /// The uuids in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        match self {
            UuidSet::One(u) => Iter::Small(std::slice::from_ref(u).iter()),
            UuidSet::Small(v) => Iter::Small(v.iter()),
            UuidSet::Large(set) => Iter::Large(set.iter()),
        }
    }
}

pub(crate) enum Iter<'a> {
    Small(std::slice::Iter<'a, Uuid>),
    Large(std::collections::btree_set::Iter<'a, Uuid>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Uuid;
    fn next(&mut self) -> Option<&'a Uuid> {
        match self {
            Iter::Small(i) => i.next(),
            Iter::Large(i) => i.next(),
        }
    }
}

impl<'a> IntoIterator for &'a UuidSet {
    type Item = &'a Uuid;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any sequence of inserts and removes leaves the same uuids, in the
    /// same order, as a `BTreeSet`, before and after the set outgrows its
    /// vector.
    #[test]
    fn behaves_as_a_btreeset_on_both_sides_of_its_size_boundary() {
        let mut set = UuidSet::default();
        let mut model = BTreeSet::new();
        // A deterministic walk over 40 uuids: up to 40 members, then back.
        let mut x: u128 = 7;
        let mut grew = false;
        for step in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = Uuid((x >> 64) % 40);
            let add = (step / 500) % 2 == 0 || x.is_multiple_of(3);
            if add {
                assert_eq!(set.insert(u), model.insert(u), "insert {step}");
            } else {
                assert_eq!(set.remove(&u), model.remove(&u), "remove {step}");
            }
            assert_eq!(set.contains(&u), model.contains(&u));
            assert_eq!(set.is_empty(), model.is_empty());
            assert!(set.iter().eq(model.iter()), "order at step {step}");
            grew |= matches!(set, UuidSet::Large(_));
            if matches!(set, UuidSet::Small(_)) {
                assert_ne!(model.len(), 1, "one member held in a vector at step {step}");
            }
        }
        assert!(grew, "the walk never went past {SMALL} members");
    }

    /// The usual single referrer costs no allocation.
    #[test]
    fn one_member_is_held_inline() {
        let mut set = UuidSet::default();
        set.insert(Uuid(5));
        assert_eq!(set, UuidSet::One(Uuid(5)));
        set.insert(Uuid(3));
        set.remove(&Uuid(3));
        assert_eq!(set, UuidSet::One(Uuid(5)));
        set.remove(&Uuid(5));
        assert!(set.is_empty() && set.iter().next().is_none());
    }
}
