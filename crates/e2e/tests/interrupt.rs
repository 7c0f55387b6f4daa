//! Ctrl-C during a bench wait ends the wait with an error (so the bench is
//! dropped and cleaned up) instead of killing the process. Its own test
//! binary: the caught signal is process-wide state.

use std::time::{Duration, Instant};

use obgp_e2e::interrupt::{catch_interrupts, interrupted};
use obgp_e2e::wait_for;

#[test]
fn sigint_ends_a_bench_wait_with_an_error_instead_of_killing_the_process() {
    catch_interrupts();
    assert_eq!(interrupted(), None);
    let t = Instant::now();
    let mut polls = 0;
    let out: anyhow::Result<()> = wait_for(
        "something that never happens",
        Duration::from_secs(60),
        || {
            polls += 1;
            if polls == 3 {
                // SAFETY: raising a signal whose handler only stores to an atomic.
                unsafe { libc::raise(libc::SIGINT) };
            }
            Ok(None)
        },
    );
    let err = out.expect_err("the wait must stop on SIGINT");
    assert!(err.to_string().contains("interrupted by signal 2"), "{err}");
    assert_eq!(interrupted(), Some(libc::SIGINT));
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "stopped by the signal, not the timeout"
    );
}
