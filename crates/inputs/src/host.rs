//! What the agent reads of the host itself, besides the databases.

/// The system hostname (`/proc/sys/kernel/hostname`), upstream's
/// `socket.gethostname()` fallback for the chassis name.
pub fn system_hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}
