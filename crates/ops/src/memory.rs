//! Returning freed heap to the kernel after a full dump.
//!
//! glibc's malloc keeps what a program frees, per arena, for reuse: it gives
//! back to the kernel only the top of the main heap. A full dump of a 50k
//! port Northbound is decoded beside the cache it replaces and the OVN
//! snapshot is rebuilt from it, on whichever runtime threads ran them; once
//! all that is freed, the pages stay resident in their arenas. Measured in
//! the soak bench at 50k ports (docs/soak.md): 200 MiB of live heap under
//! 852 MiB of RSS after the initial sync, and RSS +170 / +68 MiB after NB
//! restarts with the live heap unchanged. That RSS is what the DaemonSet's
//! memory limit counts.
//!
//! `malloc_trim(0)` walks every arena and `madvise`s its free pages away
//! (glibc >= 2.8). The run loop calls it after each reconcile that follows
//! a full dump ([`obgp_inputs::Trigger::follows_full_dump`]), and otherwise after a
//! reconcile at most every [`TRIM_PERIOD`]: trimming only after dumps left
//! RSS climbing back by ~4 MiB a minute under churn (freed chunks reused
//! fault their pages in again, and the periodic full recompute of the
//! desired state allocates afresh), with the live heap flat. A trim of a
//! fragmented 500 MiB heap over four arenas took 50-110 ms on the 2-vCPU
//! CI machine under load, so it runs on a blocking thread beside the loop
//! ([`spawn_release`]), one at a time, timed in the log at debug. On other
//! C libraries it does nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The longest time between two trims while reconciles run (an idle agent
/// allocates nothing, so it needs none).
pub const TRIM_PERIOD: Duration = Duration::from_secs(30);

/// When the run loop trims: after a full dump, or once [`TRIM_PERIOD`] has
/// passed since the last trim.
#[derive(Debug)]
pub struct TrimSchedule {
    last: Option<Instant>,
}

impl TrimSchedule {
    pub fn new() -> TrimSchedule {
        TrimSchedule { last: None }
    }

    /// Whether a reconcile that ended at `now` is followed by a trim;
    /// records it if so.
    pub fn due(&mut self, now: Instant, follows_full_dump: bool) -> bool {
        let due = follows_full_dump
            || self
                .last
                .is_none_or(|last| now.saturating_duration_since(last) >= TRIM_PERIOD);
        if due {
            self.last = Some(now);
        }
        due
    }
}

impl Default for TrimSchedule {
    fn default() -> Self {
        TrimSchedule::new()
    }
}

/// How many heaps (arenas) glibc's malloc may keep, unless the
/// environment sets `MALLOC_ARENA_MAX`: see [`cap_arenas`].
pub const ARENA_MAX: i32 = 2;

/// Caps glibc's arenas at [`ARENA_MAX`]; returns the cap it set (`None`:
/// the operator's `MALLOC_ARENA_MAX` stands, or the C library is not
/// glibc). Call it first thing in `main`, before any thread starts.
///
/// glibc gives a thread that finds the arenas busy a new one, up to eight
/// per core, and memory freed in one arena serves only the threads that
/// use it. The initial dump is decoded on other threads than the one that
/// builds the snapshot and the desired state, so what the decoders free
/// (the dump's buffers, a row's old values) stays resident while the
/// snapshot is built from fresh pages. At 50k ports with the full monitor
/// the main job peaked at 123.1 MiB with glibc's default and 104.9 MiB
/// with two arenas (101.5 MiB with one), in the same time
/// (docs/adr/0012-two-malloc-arenas.md).
pub fn cap_arenas() -> Option<i32> {
    let cap = if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        None
    } else {
        set_arena_max(ARENA_MAX).then_some(ARENA_MAX)
    };
    let _ = ARENA_CAP.set(cap);
    cap
}

/// What [`cap_arenas`] set (`None` before it ran, or when it set nothing):
/// for the daemon's start-up line.
pub fn arena_cap() -> Option<i32> {
    ARENA_CAP.get().copied().flatten()
}

static ARENA_CAP: std::sync::OnceLock<Option<i32>> = std::sync::OnceLock::new();

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_arena_max(max: i32) -> bool {
    // SAFETY: mallopt only sets a parameter of the allocator under its own
    // lock; arenas already created stay, later threads share the capped set.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, max) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_arena_max(_max: i32) -> bool {
    false
}

/// Runs [`release_freed_heap`] on a blocking thread unless one is still
/// running: the reconcile loop never waits for a trim.
pub fn spawn_release() {
    static RUNNING: AtomicBool = AtomicBool::new(false);
    if RUNNING.swap(true, Ordering::AcqRel) {
        return;
    }
    tokio::task::spawn_blocking(|| {
        release_freed_heap();
        RUNNING.store(false, Ordering::Release);
    });
}

/// Gives the heap pages nothing uses back to the kernel; returns whether
/// any were (always `false` where the C library has no `malloc_trim`).
pub fn release_freed_heap() -> bool {
    let started = Instant::now();
    let released = trim();
    tracing::debug!(
        released,
        ms = started.elapsed().as_secs_f64() * 1e3,
        "returned freed heap to the kernel"
    );
    released
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() -> bool {
    // SAFETY: malloc_trim only takes the allocator's own locks; any thread
    // may call it at any time.
    unsafe { libc::malloc_trim(0) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() -> bool {
    false
}

/// The process's memory at one point, MiB: the resident set, its
/// high-water mark so far, and the heap the allocator has handed out and
/// not taken back (glibc's `mallinfo2`; `None` on other C libraries).
/// RSS above the heap is code, stacks and freed pages not yet returned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Usage {
    pub rss_mib: f64,
    pub hwm_mib: f64,
    pub heap_mib: Option<f64>,
}

impl Usage {
    /// Reads `/proc/self/status` and the allocator; `None` where the first
    /// is missing (not Linux).
    pub fn now() -> Option<Usage> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let kib = |key: &str| -> Option<f64> {
            let v = status.lines().find_map(|l| l.strip_prefix(key))?;
            v.split_whitespace().next()?.parse::<f64>().ok()
        };
        Some(Usage {
            rss_mib: kib("VmRSS:")? / 1024.0,
            hwm_mib: kib("VmHWM:")? / 1024.0,
            heap_mib: heap_in_use().map(|b| b as f64 / (1024.0 * 1024.0)),
        })
    }
}

/// Logs the memory after one stage of a first computation (`stage
/// memory`, at debug): where the main job's memory goes, stage by stage
/// (docs/latency.md, "The main job"). Reads nothing unless debug is on.
pub fn log_stage(stage: &'static str) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    if let Some(u) = Usage::now() {
        tracing::debug!(
            stage,
            rss_mib = round1(u.rss_mib),
            hwm_mib = round1(u.hwm_mib),
            heap_mib = u.heap_mib.map(round1),
            "stage memory"
        );
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn heap_in_use() -> Option<u64> {
    // SAFETY: mallinfo2 only reads the allocator's statistics under its
    // own locks.
    let info = unsafe { libc::mallinfo2() };
    // Chunks in use in the arenas, plus the blocks mmapped on their own.
    Some((info.uordblks + info.hblkhd) as u64)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn heap_in_use() -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resident set of this process, KiB.
    fn rss_kib() -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap()
    }

    #[test]
    fn usage_counts_a_touched_allocation_in_the_heap_and_the_resident_set() {
        // Other tests of this binary allocate and free beside this one, so
        // only lower bounds hold: the block alone is 64 MiB of both.
        let block = std::hint::black_box(vec![1u8; 64 << 20]);
        let u = Usage::now().expect("/proc/self/status");
        assert!(u.rss_mib >= 64.0, "{u:?}");
        assert!(u.hwm_mib >= u.rss_mib, "{u:?}");
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            assert!(u.heap_mib.is_some_and(|h| h >= 64.0), "{u:?}");
        }
        drop(block);
    }

    /// The number of arenas (`<heap nr=...>`) `malloc_info` reports.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn arenas() -> usize {
        let file_path =
            std::env::temp_dir().join(format!("obgp-malloc-info-{}.xml", std::process::id()));
        let path = std::ffi::CString::new(file_path.to_str().unwrap().as_bytes()).unwrap();
        // SAFETY: a FILE opened, written by malloc_info and closed here.
        unsafe {
            let file = libc::fopen(path.as_ptr(), c"w".as_ptr());
            assert!(!file.is_null());
            assert_eq!(libc::malloc_info(0, file), 0);
            libc::fclose(file);
        }
        let xml = std::fs::read_to_string(&file_path).unwrap();
        let _ = std::fs::remove_file(&file_path);
        xml.matches("<heap nr=").count()
    }

    /// Eight threads allocating at once, each holding its blocks while the
    /// others allocate: glibc gives a thread that finds the arenas busy an
    /// arena of its own, up to its cap.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn allocate_on_eight_threads() {
        let start = std::sync::Arc::new(std::sync::Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let start = start.clone();
                std::thread::spawn(move || {
                    start.wait();
                    let blocks: Vec<Vec<u8>> = (0..20_000).map(|i| vec![i as u8; 100]).collect();
                    std::hint::black_box(blocks);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }

    /// Runs in a process of its own (the test binary again, this one test,
    /// `OBGP_ARENA_CHILD` set to whether to cap), since arenas are
    /// per process and other tests allocate on their own threads; prints
    /// the arena count.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn arena_child() {
        let Ok(cap) = std::env::var("OBGP_ARENA_CHILD") else {
            return;
        };
        if cap == "1" {
            let cap = cap_arenas();
            println!("cap={cap:?} recorded={:?}", arena_cap());
        }
        allocate_on_eight_threads();
        println!("arenas={}", arenas());
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn the_cap_keeps_threads_to_two_arenas_unless_the_environment_sets_its_own() {
        let run = |env: &[(&str, &str)]| -> (usize, String) {
            let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
            cmd.args([
                "--exact",
                "memory::tests::arena_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env_remove("MALLOC_ARENA_MAX");
            for (k, v) in env {
                cmd.env(k, v);
            }
            let out = cmd.output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "child failed: {stdout}");
            // libtest writes "test ... " before the child's own line.
            let arenas = stdout
                .split("arenas=")
                .nth(1)
                .and_then(|n| n.split_whitespace().next()?.parse().ok())
                .unwrap_or_else(|| panic!("no arena count in {stdout}"));
            (arenas, stdout.to_string())
        };
        let (uncapped, _) = run(&[("OBGP_ARENA_CHILD", "0")]);
        assert!(
            uncapped > 2,
            "eight contending threads made only {uncapped} arenas without a cap"
        );
        let (capped, out) = run(&[("OBGP_ARENA_CHILD", "1")]);
        assert!(out.contains("cap=Some(2) recorded=Some(2)"), "{out}");
        assert!(capped <= ARENA_MAX as usize, "{capped} arenas with the cap");
        // The operator's variable wins: the cap is not applied over it.
        let (operator, out) = run(&[("OBGP_ARENA_CHILD", "1"), ("MALLOC_ARENA_MAX", "4")]);
        assert!(out.contains("cap=None recorded=None"), "{out}");
        assert!(
            operator > 2 && operator <= 4,
            "{operator} arenas with MALLOC_ARENA_MAX=4"
        );
    }

    #[test]
    fn trims_after_every_full_dump_and_otherwise_once_a_period() {
        let t0 = Instant::now();
        let mut s = TrimSchedule::new();
        assert!(s.due(t0, false), "the first reconcile trims");
        assert!(!s.due(t0 + Duration::from_secs(1), false));
        assert!(
            s.due(t0 + Duration::from_secs(2), true),
            "a full dump always trims"
        );
        assert!(
            !s.due(t0 + TRIM_PERIOD, false),
            "the period counts from the last trim"
        );
        assert!(s.due(t0 + Duration::from_secs(2) + TRIM_PERIOD, false));
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn freed_small_allocations_are_given_back() {
        // 200k small blocks (below the mmap threshold, so they live in an
        // arena), touched, then every other one kept so the arena's top
        // cannot simply shrink: only a trim returns the freed pages.
        let mut blocks: Vec<Vec<u8>> = (0..200_000).map(|i| vec![i as u8; 1000]).collect();
        let kept: Vec<Vec<u8>> = blocks.drain(..).step_by(16).collect();
        let before = rss_kib();
        assert!(release_freed_heap(), "malloc_trim released nothing");
        let after = rss_kib();
        assert!(
            after + 50 * 1024 < before,
            "RSS {before} KiB before the trim, {after} KiB after: under 50 MiB given back"
        );
        assert_eq!(kept.len(), 12_500);
    }
}
