//! Executable scripts for tests and benches (stand-ins for vtysh,
//! ovs-ofctl...).
//!
//! A script written by this process with `std::fs::write` can be refused at
//! exec with ETXTBSY: another thread that forks while the write descriptor
//! is open hands it to its child, which holds it until its own exec. So the
//! script is written by a short-lived `sh` instead; this process never
//! holds it open for writing, and no fork can leak it.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// Writes `text` to `path` as an executable (0755) file.
pub fn write_executable(path: &Path, text: &str) -> Result<()> {
    let mut writer = Command::new("/bin/sh")
        .args(["-c", r#"cat > "$1" && chmod 755 "$1""#, "sh"])
        .arg(path)
        .stdin(Stdio::piped())
        .spawn()
        .context("spawning /bin/sh to write a script")?;
    writer
        .stdin
        .take()
        .context("the writer's stdin")?
        .write_all(text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    let status = writer.wait()?;
    if !status.success() {
        bail!("writing {}: {status}", path.display());
    }
    Ok(())
}
