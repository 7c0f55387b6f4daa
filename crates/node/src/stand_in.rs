//! Stand-in programs for the tests of the command runners.
//!
//! A script written by this process with `std::fs::write` can be refused at
//! exec with ETXTBSY: another test thread that forks while the write
//! descriptor is open hands it to its child, which holds it until its own
//! exec. So the script is written by a short-lived `sh` instead; this
//! process never holds it open for writing, and no fork can leak it.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Writes `text` to `path` as an executable (0755) file.
pub(crate) fn write_executable(path: &Path, text: &str) {
    let mut writer = Command::new("/bin/sh")
        .args(["-c", r#"cat > "$1" && chmod 755 "$1""#, "sh"])
        .arg(path)
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawn /bin/sh to write a stand-in");
    writer
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(text.as_bytes())
        .expect("write the stand-in's text");
    let status = writer.wait().expect("wait for /bin/sh");
    assert!(status.success(), "writing {}: {status}", path.display());
}
