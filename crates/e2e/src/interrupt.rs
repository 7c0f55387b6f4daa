//! Ctrl-C for the demo and the bench: a SIGINT/SIGTERM/SIGHUP sets a flag
//! instead of killing the process, so the waits of the bench stop with an
//! error and every `Bench` (namespaces, servers, FRR, ovs-vswitchd) is
//! dropped, i.e. removed, on the way out.
//!
//! Only a flag is set in the handler (async-signal-safe). The children the
//! bench started get the terminal's SIGINT themselves: `exec` resets a
//! caught signal to its default action, so they stop as before.

use std::sync::atomic::{AtomicI32, Ordering};

static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn record(signal: libc::c_int) {
    SIGNAL.store(signal, Ordering::SeqCst);
}

/// Catches SIGINT, SIGTERM and SIGHUP from now on (see the module doc).
pub fn catch_interrupts() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: `record` only stores to an atomic, which is
        // async-signal-safe; the handler stays valid for the whole process.
        unsafe {
            libc::signal(
                signal,
                record as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

/// The signal caught since [`catch_interrupts`], if any.
pub fn interrupted() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}
