//! Network namespaces for tests: a named namespace that is deleted on drop,
//! veth pairs into it, and running a command or a closure inside it.
//!
//! Names are unique per process and call (`obgp-<pid>-<n>-<tag>`), so tests
//! run in parallel. Needs root and `ip` (iproute2).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{bail, Context, Result};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A network namespace owned by the test; `ip netns del` on drop.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

fn run_ip(args: &[&str]) -> Result<Output> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("running ip (apt package iproute2)")?;
    if !out.status.success() {
        bail!(
            "ip {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out)
}

impl Netns {
    /// Creates a fresh namespace with `lo` up. `tag` (a few letters) makes
    /// the name readable in `ip netns list`.
    pub fn new(tag: &str) -> Result<Netns> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tag: String = tag
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .take(12)
            .collect();
        let name = format!("obgp-{}-{n}-{tag}", std::process::id());
        run_ip(&["netns", "add", &name]).context("creating a network namespace (needs root)")?;
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `/run/netns/<name>`, for `setns(2)` or `KernelConfig::netns`.
    pub fn path(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(&self.name)
    }

    /// Runs `program args...` inside the namespace (`ip netns exec`); fails
    /// with its stderr when it exits non-zero.
    pub fn exec(&self, program: &str, args: &[&str]) -> Result<Output> {
        let mut all = vec!["netns", "exec", &self.name, program];
        all.extend_from_slice(args);
        run_ip(&all)
    }

    /// `ip ARGS...` inside the namespace; returns stdout.
    pub fn ip(&self, args: &[&str]) -> Result<String> {
        let mut all = vec!["-n", &self.name];
        all.extend_from_slice(args);
        let out = run_ip(&all)?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Runs `f` on a thread that has entered the namespace (the calling
    /// thread's namespace never changes).
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T> {
        let file = File::open(self.path()).with_context(|| format!("opening {:?}", self.path()))?;
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: setns on a valid namespace fd, for this thread only.
                if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    bail!("setns: {}", std::io::Error::last_os_error());
                }
                Ok(f())
            })
            .join()
            .map_err(|_| anyhow::anyhow!("closure in netns panicked"))?
        })
    }

    /// Creates the veth pair `here` (in this namespace) – `there` (in
    /// `peer`, or in this namespace when `None`), both up.
    pub fn veth(&self, here: &str, there: &str, peer: Option<&Netns>) -> Result<()> {
        self.ip(&["link", "add", here, "type", "veth", "peer", "name", there])?;
        if let Some(p) = peer {
            self.ip(&["link", "set", there, "netns", &p.name])?;
            p.ip(&["link", "set", there, "up"])?;
        } else {
            self.ip(&["link", "set", there, "up"])?;
        }
        self.ip(&["link", "set", here, "up"])?;
        Ok(())
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(e) = run_ip(&["netns", "del", &self.name]) {
            tracing::warn!("leaving netns {} behind: {e:#}", self.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_is_isolated_and_removed_on_drop() {
        let a = Netns::new("a").unwrap();
        let b = Netns::new("b").unwrap();
        a.veth("va", "vb", Some(&b)).unwrap();
        assert!(a.ip(&["link", "show", "va"]).is_ok());
        assert!(a.ip(&["link", "show", "vb"]).is_err());
        assert!(b.ip(&["link", "show", "vb"]).is_ok());
        // The closure sees the namespace's devices through /sys.
        let seen = b
            .run(|| std::path::Path::new("/proc/sys/net/ipv4/conf/vb").exists())
            .unwrap();
        assert!(seen);
        let path = a.path();
        drop(a);
        assert!(!path.exists());
    }
}
