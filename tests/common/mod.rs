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

/// A scenario fixture's directory (`fixtures/<dir>`: its `basic.json` and
/// the `bgp-agent.conf` it goes with).
pub struct Fixture(pub &'static str);

impl Fixture {
    pub fn path(&self, name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(self.0)
            .join(name)
    }

    /// `basic.json`, the scenario.
    pub fn scenario(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.path("basic.json")).unwrap()).unwrap()
    }

    /// The agent with the fixture's `bgp-agent.conf` and `args`, which
    /// must exit 0: its stdout.
    pub fn agent(&self, args: &[&str]) -> String {
        let conf = self.path("bgp-agent.conf");
        let mut all = vec!["--config-file", conf.to_str().unwrap()];
        all.extend_from_slice(args);
        let o = agent(&all, &[]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stdout(&o)
    }
}

/// A JSON array of strings.
pub fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// The indented lines under `header` in `plan`'s text, trimmed.
pub fn lines_after<'a>(text: &'a str, header: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| *l != header)
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(str::trim)
        .collect()
}
