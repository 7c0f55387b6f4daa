//! The README's quickstart commands work as written: each
//! `target/debug/ovn-bgp-agent ...` line of its Quickstart section is run,
//! from the repository root, with the binary cargo built for this test.

use std::path::Path;
use std::process::Command;

/// The command lines of the README's Quickstart section that run the agent.
fn quickstart_commands() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = readme
        .split("\n## ")
        .find(|s| s.starts_with("Quickstart"))
        .expect("README.md has a Quickstart section");
    section
        .lines()
        .filter(|l| l.starts_with("target/debug/ovn-bgp-agent "))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_quickstarts_offline_commands_succeed_on_the_demo_topology() {
    let commands = quickstart_commands();
    let verbs: Vec<&str> = ["plan", "explain", "status"]
        .into_iter()
        .filter(|v| commands.iter().any(|c| c.contains(&format!(" {v} "))))
        .collect();
    assert_eq!(verbs, ["plan", "explain", "status"], "{commands:#?}");
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme-home");
    std::fs::create_dir_all(&home).unwrap();
    for line in &commands {
        let mut words = line.split_whitespace().skip(1);
        let out = Command::new(env!("CARGO_BIN_EXE_ovn-bgp-agent"))
            .args(words.by_ref())
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_clear()
            .env("HOME", &home)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{line}\n{stdout}\n{stderr}");
        assert!(!stdout.trim().is_empty(), "{line}: no output");
        if line.contains(" explain ") {
            assert!(
                stdout.starts_with("172.24.4.50: exposed on this node"),
                "{line}\n{stdout}"
            );
        }
    }
}
