//! The fast hasher, from `obgp_netmodel::hash` (shared with the planner).

pub use obgp_netmodel::hash::{FastHash, FxHasher};
