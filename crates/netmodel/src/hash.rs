//! A fast, non-cryptographic hasher for the working maps of the snapshot
//! indexes, `desired_state` and the planner.

/// FxHash (rustc's hasher) with a murmur3 finaliser: the maps it serves are keyed
/// by short names, IPs, rules and routes from a trusted snapshot or this
/// node, so SipHash's DoS resistance buys nothing and costs a third of the
/// lookups' time.
#[derive(Default, Clone, Copy, Debug)]
pub struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        // The multiply leaves the low bits (hashbrown's bucket index) depending
        // only on the inputs' low bits: mix the high bits down (murmur3 fmix).
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^ (h >> 33)
    }
}

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// `BuildHasher` for [`FxHasher`].
pub type FastHash = std::hash::BuildHasherDefault<FxHasher>;
