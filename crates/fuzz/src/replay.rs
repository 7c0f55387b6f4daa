//! The stable, uninstrumented driver of the harnesses: random inputs and
//! byte-level mutations of a corpus (the seeds, or what libFuzzer grew),
//! from a fixed generator so a failure reproduces. The replay test runs it
//! briefly; `examples/replay.rs` runs it for a count.
//!
//! Every panic fails the run, also one that does not repeat when its input
//! runs again alone: an outcome that depends on something besides the
//! input (what an earlier input left behind, timing) is a bug as well, and
//! forgiving it would hide exactly the failures that are hardest to find.

use std::fmt;
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

/// An input that panicked.
#[derive(Debug)]
pub struct Failure {
    /// Its place in the run (0 for a single input).
    pub case: u64,
    pub input: Vec<u8>,
    /// The panic's message.
    pub message: String,
    /// Whether it panics again when run alone, on a fresh thread. Either
    /// way the run fails; a panic that does not repeat depended on
    /// something besides its input.
    pub repeats_alone: bool,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "case {} ({} bytes) panicked: {}; {}",
            self.case,
            self.input.len(),
            self.message,
            if self.repeats_alone {
                "it panics again when run alone"
            } else {
                "it does NOT panic when run alone: its outcome depended on more than the input"
            }
        )
    }
}

/// The text of a panic's payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a panic without a text)".to_string())
}

/// Runs one input through `run`; a panic is a [`Failure`].
pub fn run_one(run: Harness, input: &[u8], case: u64) -> Result<(), Failure> {
    let Err(payload) = catch_unwind(AssertUnwindSafe(|| run(input))) else {
        return Ok(());
    };
    let again = input.to_vec();
    let repeats_alone = std::thread::spawn(move || catch_unwind(|| run(&again)).is_err())
        .join()
        .unwrap_or(true);
    Err(Failure {
        case,
        input: input.to_vec(),
        message: panic_message(payload.as_ref()),
        repeats_alone,
    })
}

/// Runs `cases` inputs through `run`; the first that panics is returned,
/// whether or not it panics again alone.
pub fn run_cases(
    run: Harness,
    corpus: &[Vec<u8>],
    cases: u64,
    seed: u64,
) -> Result<(), Box<Failure>> {
    let mut rng = Rng(seed);
    for case in 0..cases {
        let bytes = input(&mut rng, case, corpus);
        run_one(run, &bytes, case).map_err(Box::new)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Calls of [`panics_on_its_third_call`] so far.
    static CALLS: AtomicU64 = AtomicU64::new(0);

    /// A harness whose third call panics and no other: its outcome depends
    /// on what ran before, as one that keeps state between inputs can.
    fn panics_on_its_third_call(_: &[u8]) {
        if CALLS.fetch_add(1, Ordering::SeqCst) == 2 {
            panic!("the third call");
        }
    }

    #[test]
    fn a_panic_that_does_not_repeat_alone_fails_the_run() {
        let failure = run_cases(panics_on_its_third_call, &[], 10, 1)
            .expect_err("the third case panicked: the run must fail");
        assert_eq!(failure.case, 2);
        assert_eq!(failure.message, "the third call");
        assert!(!failure.repeats_alone, "the re-run is the fourth call");
        assert!(failure
            .to_string()
            .contains("does NOT panic when run alone"));
    }

    #[test]
    fn a_panic_that_repeats_alone_fails_the_run_too() {
        fn always(_: &[u8]) {
            panic!("always");
        }
        let failure = run_cases(always, &[], 3, 1).expect_err("every case panics");
        assert_eq!((failure.case, failure.repeats_alone), (0, true));
    }
}
