//! One agent per node: an exclusive `flock(2)` on a file on the host
//! ([`NodeLock`]), held for as long as the agent may write to the node.
//!
//! The lock is the kernel's, on the file's inode: a DaemonSet pod and a
//! systemd unit see the same one when the pod mounts the host's directory
//! (`/run/ovn-bgp-agent`, a hostPath). It goes with the process, however
//! it dies (`kill -9` included), so a stale lock file never keeps the next
//! agent out; the file itself is never deleted (deleting it would let a
//! new agent lock a new inode while the old one still holds the old).
//! The file is opened close-on-exec, so the commands the agent runs
//! (`vtysh`, `ovs-ofctl`) never inherit the lock and outlive it.
//!
//! The holder writes who it is into the file once it holds the lock
//! (`pid=.. host=.. pod=.. started=..`); an agent that finds the lock
//! taken reads that to name the holder.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Where the lock files live on the host.
pub const DEFAULT_LOCK_DIR: &str = "/run/ovn-bgp-agent";

/// A failure to open, lock or write the lock file (not its being held).
#[derive(Debug, thiserror::Error)]
#[error("node lock {path}: {what}: {source}")]
pub struct LockError {
    pub path: PathBuf,
    pub what: &'static str,
    #[source]
    pub source: io::Error,
}

/// Who holds the lock, as the holder wrote it into the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder(pub String);

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.trim() {
            "" => f.write_str("an agent that has not written its name yet"),
            who => f.write_str(who),
        }
    }
}

/// The held lock; released when dropped or when the process ends.
#[derive(Debug)]
pub struct NodeLock {
    _file: File,
    path: PathBuf,
    holder: Holder,
}

impl NodeLock {
    /// The lock file of the network namespace the agent writes to:
    /// `DIR/net-<inode>.lock`, the inode of `netns` (an `ip netns` file)
    /// or of the agent's own namespace. The node's writes are its network
    /// namespace's (rules, routes, devices), so two agents on one host
    /// namespace share the file and agents on test namespaces do not.
    pub fn default_path(dir: &Path, netns: Option<&Path>) -> Result<PathBuf, LockError> {
        let ns = netns.unwrap_or(Path::new("/proc/self/ns/net"));
        let inode = std::fs::metadata(ns)
            .map_err(|source| LockError {
                path: ns.to_path_buf(),
                what: "reading the network namespace's inode",
                source,
            })?
            .ino();
        Ok(dir.join(format!("net-{inode}.lock")))
    }

    /// Takes the lock at `path` if no one holds it (creating the file and
    /// its directory), and writes who this agent is into it; returns the
    /// holder when someone else does.
    pub fn try_acquire(path: &Path) -> Result<Result<NodeLock, Holder>, LockError> {
        let fail = |what| {
            move |source| LockError {
                path: path.to_path_buf(),
                what,
                source,
            }
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(fail("creating its directory"))?;
        }
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .open(path)
            .map_err(fail("opening"))?;
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(fail("locking")(e));
            }
            let mut text = String::new();
            // Read what the holder wrote; bytes that are not UTF-8 are shown replaced.
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).map_err(fail("reading"))?;
            text.push_str(&String::from_utf8_lossy(&bytes));
            return Ok(Err(Holder(text.trim().to_string())));
        }
        let holder = Holder(whoami());
        file.set_len(0).map_err(fail("truncating"))?;
        file.write_all(format!("{holder}\n").as_bytes())
            .map_err(fail("writing who holds it"))?;
        Ok(Ok(NodeLock {
            _file: file,
            path: path.to_path_buf(),
            holder,
        }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What this agent wrote into the file.
    pub fn holder(&self) -> &Holder {
        &self.holder
    }
}

/// `pid=.. host=.. pod=.. started=..`: the process (its pid in its own pid
/// namespace: a pod's is not the host's), the host name, the pod
/// (`POD_NAME`, which the DaemonSet sets from the downward API; `-`
/// outside Kubernetes) and when it took the lock.
fn whoami() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "-".into());
    let pod = std::env::var("POD_NAME").unwrap_or_else(|_| "-".into());
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!(
        "pid={} host={host} pod={pod} started={}",
        std::process::id(),
        utc_rfc3339(now)
    )
}

/// `YYYY-MM-DDTHH:MM:SSZ` of a Unix time (the civil-from-days algorithm of
/// Howard Hinnant's date library), so that no time crate is needed.
fn utc_rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_times_print_as_rfc3339() {
        assert_eq!(utc_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_rfc3339(1_796_426_999), "2026-12-04T23:29:59Z");
    }

    #[test]
    fn a_second_lock_in_the_same_process_sees_the_holder_and_takes_over_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run").join("net-1.lock");
        let first = NodeLock::try_acquire(&path).unwrap().unwrap();
        assert!(first
            .holder()
            .0
            .starts_with(&format!("pid={} ", std::process::id())));
        // flock is per open file: a second open in this process conflicts too.
        let held = NodeLock::try_acquire(&path).unwrap().unwrap_err();
        assert_eq!(&held, first.holder());
        drop(first);
        let second = NodeLock::try_acquire(&path).unwrap().unwrap();
        assert_eq!(second.path(), path);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            format!("{}\n", second.holder()),
            "rewritten, not appended"
        );
    }

    #[test]
    fn the_default_path_follows_the_network_namespace() {
        let dir = Path::new(DEFAULT_LOCK_DIR);
        let own = NodeLock::default_path(dir, None).unwrap();
        let again = NodeLock::default_path(dir, Some(Path::new("/proc/self/ns/net"))).unwrap();
        assert_eq!(own, again);
        assert!(own.to_str().unwrap().starts_with("/run/ovn-bgp-agent/net-"));
        let err = NodeLock::default_path(dir, Some(Path::new("/nonexistent/ns"))).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/ns"), "{err}");
    }
}
