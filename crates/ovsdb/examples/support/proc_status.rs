//! The process's own `/proc/self/status`, for the measuring examples.

use anyhow::{Context, Result};

/// A `/proc/self/status` field in KiB (`VmRSS:`, `VmHWM:`).
pub fn status_kib(field: &str) -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .with_context(|| format!("{field} not in /proc/self/status"))
}
