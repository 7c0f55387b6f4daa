//! What the binary's integration tests share: a scratch directory, a file
//! written into it, and the agent run as an operator would run it, with
//! nothing of the machine's environment leaking in.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh directory under cargo's per-test-target tmp dir, named after
/// the test binary, the process and `name`.
pub fn scratch(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "{}-{}-{name}-{}",
        env!("CARGO_CRATE_NAME"),
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `text` to `dir/name`; returns its path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs the agent with a clean environment (plus `env`) and an empty HOME,
/// so no override or default config file of the machine leaks in.
pub fn agent(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ovn-bgp-agent"))
        .args(args)
        .env_clear()
        .env("HOME", scratch("home"))
        .envs(env.iter().copied())
        .output()
        .expect("running ovn-bgp-agent")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
