//! The stable, uninstrumented driver of the harnesses: random inputs and
//! byte-level mutations of a corpus (the seeds, or what libFuzzer grew),
//! from a fixed generator so a failure reproduces. The replay test runs it
//! briefly; `examples/replay.rs` runs it for a count.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::Harness;

/// splitmix64: a fixed, dependency-free generator.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// `seed` with one to eight byte edits (set, remove, cut, insert).
pub fn mutated(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for _ in 0..1 + rng.below(8) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(4) {
            0 if at < bytes.len() => bytes[at] = rng.next_u64() as u8,
            1 if at < bytes.len() => {
                bytes.remove(at);
            }
            2 => bytes.truncate(at),
            _ => bytes.insert(at, rng.next_u64() as u8),
        }
    }
    bytes
}

/// The `case`th input: random bytes for even cases, a mutated corpus
/// entry for odd ones.
pub fn input(rng: &mut Rng, case: u64, corpus: &[Vec<u8>]) -> Vec<u8> {
    if case & 1 == 0 || corpus.is_empty() {
        let len = rng.below(512);
        (0..len).map(|_| rng.next_u64() as u8).collect()
    } else {
        let pick = rng.below(corpus.len());
        mutated(rng, &corpus[pick])
    }
}

/// Runs `cases` inputs through `run`; the first that panics is returned.
pub fn run_cases(run: Harness, corpus: &[Vec<u8>], cases: u64, seed: u64) -> Result<(), Vec<u8>> {
    let mut rng = Rng(seed);
    for case in 0..cases {
        let bytes = input(&mut rng, case, corpus);
        if catch_unwind(AssertUnwindSafe(|| run(&bytes))).is_err() {
            return Err(bytes);
        }
    }
    Ok(())
}
