//! The allocations of a message's decoded values: equal strings of a
//! message share one [`Str`], and sets, maps and column lists are
//! allocated at their exact length.
//!
//! While a message is decoded, equal strings (column names, map keys, and
//! values such as `compute:nova`, a project id or a host name that repeat
//! on thousands of ports) are interned: the message's rows share one
//! [`Str`] per distinct string instead of allocating one per use. The table
//! lives in a thread-local for the time of one message (a scope entered by
//! the top-level seed): the serde visitors that read strings are called
//! from deep inside serde_json, and threading a `&mut` table through every
//! seed would add a parameter to each of them for no gain in clarity.

use std::cell::{Cell, RefCell};
use std::hash::BuildHasher;
use std::thread::LocalKey;

use crate::datum::{Atom, Datum, Str};

thread_local! {
    /// The strings of the message being decoded on this thread, if any.
    static INTERNER: RefCell<Option<Interner>> = const { RefCell::new(None) };
}

/// The interning table's hasher: every string of a reply is hashed once,
/// and SipHash was a third of the row decoder's time. foldhash is seeded
/// at random per process, so colliding strings cannot be prepared ahead.
type InternHasher = foldhash::fast::RandomState;

/// The strings of a message, each stored once.
///
/// Every string of a reply goes through here, so the lookup is the decoder's
/// hottest path. The table holds every distinct string of the message
/// (for a large reply, mostly UUIDs and addresses seen once; docs/ovsdb.md,
/// "Where the time and the memory go"), too large for the CPU caches: a probe was a cache
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
pub(super) struct InternScope {
    owner: bool,
}

impl InternScope {
    pub(super) fn enter() -> InternScope {
        InternScope::with_capacity(0)
    }

    /// A scope whose table starts with room for `strings` (a large reply's
    /// table would otherwise be rehashed a dozen times while it grows).
    pub(super) fn with_capacity(strings: usize) -> InternScope {
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
pub(super) fn intern(s: &str) -> Str {
    INTERNER.with(|i| match i.borrow_mut().as_mut() {
        Some(interner) => interner.intern(s),
        None => Str::from(s),
    })
}

thread_local! {
    /// Reused buffers for the elements of the set, map and column list
    /// being decoded on this thread (atoms are never sets or maps, so one
    /// of each is enough).
    pub(super) static SET_SCRATCH: Cell<Vec<Atom>> = const { Cell::new(Vec::new()) };
    pub(super) static MAP_SCRATCH: Cell<Vec<(Atom, Atom)>> = const { Cell::new(Vec::new()) };
    pub(super) static COLUMN_SCRATCH: Cell<Vec<(Str, Datum)>> = const { Cell::new(Vec::new()) };
}

/// The elements `fill` pushes, in a `Vec` allocated once at its exact
/// length. A whole dump is decoded before it is applied, so a `Vec` grown
/// to 16 for 14 map pairs would raise the peak by the slack of every map of
/// every row; growing then shrinking it cost a `realloc` per value. The
/// elements are collected in this thread's reusable `scratch` instead.
pub(super) fn exact<T, E>(
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

#[cfg(test)]
mod tests {
    use crate::datum::Atom;
    use crate::wire::{TableUpdates, WireAtom};
    use serde_json::json;

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
}
