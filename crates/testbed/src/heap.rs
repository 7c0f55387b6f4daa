//! A counting global allocator for benches: live and peak heap bytes, to
//! tell what the program holds from what the allocator keeps around (RSS).
//!
//! A bench installs it with
//! `#[global_allocator] static ALLOC: obgp_testbed::heap::CountingAlloc = obgp_testbed::heap::CountingAlloc;`
//! and reads [`live`] and [`peak`].

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Forwards to the system allocator and counts sizes on the side.
pub struct CountingAlloc;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes to the system allocator unchanged; the counters
// are only read and written beside it.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            raise_peak(LIVE.fetch_add(layout.size(), Relaxed) + layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
            raise_peak(LIVE.fetch_add(new_size, Relaxed) + new_size);
        }
        p
    }
}

/// Records `live` as the peak if it is one. Reading first keeps threads
/// from writing the shared counter on every allocation (a `fetch_max` each
/// time cost ~5% of the OVSDB decoder's samples).
fn raise_peak(live: usize) {
    if live > PEAK.load(Relaxed) {
        PEAK.fetch_max(live, Relaxed);
    }
}

/// Heap bytes allocated and not freed (0 unless [`CountingAlloc`] is the
/// global allocator).
pub fn live() -> usize {
    LIVE.load(Relaxed)
}

/// The highest [`live`] since the start or the last [`reset_peak`].
pub fn peak() -> usize {
    PEAK.load(Relaxed)
}

/// Starts a new peak measurement from the current live bytes.
pub fn reset_peak() {
    PEAK.store(LIVE.load(Relaxed), Relaxed);
}

/// Bytes as MiB, for reports.
pub fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}
