//! The node's rt_tables file (`/etc/iproute2/rt_tables`): read as bytes
//! and parsed only when it changed, appended to as upstream appends.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use obgp_plan::actual::RtTables;

use crate::error::IoError;

/// What tells one version of the file from another without reading it:
/// a replaced file has another inode, an edit another size or times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }
}

/// The file as last read, and what was logged of it.
#[derive(Debug, Default)]
pub(crate) struct RtTablesFile {
    /// The path, its stamp and what it parsed to, from the last read.
    cached: Option<(PathBuf, Stamp, RtTables)>,
    /// Lines not understood that were logged: each once, not at every
    /// re-read of a file that still holds them.
    logged: BTreeSet<Vec<u8>>,
    /// How many times the file was read (for tests and diagnostics).
    pub(crate) reads: u64,
}

impl RtTablesFile {
    /// The file at `path`: what the last read parsed when its stamp is
    /// unchanged, else read and parsed afresh. A missing file is empty.
    ///
    /// The stamp is taken before the bytes are read: a write in between
    /// leaves a stamp older than the bytes, so the next call reads again.
    pub(crate) fn read(&mut self, path: &Path) -> Result<RtTables, IoError> {
        let fail = |e| IoError::io(format!("reading {}", path.display()), e);
        let stamp = match std::fs::metadata(path) {
            Ok(m) => Stamp::of(&m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.cached = None;
                return Ok(RtTables::default());
            }
            Err(e) => return Err(fail(e)),
        };
        if let Some((p, s, t)) = &self.cached {
            if p == path && *s == stamp {
                return Ok(t.clone());
            }
        }
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(fail(e)),
        };
        self.reads += 1;
        let parsed = RtTables::parse(bytes);
        for (n, line) in parsed.not_understood() {
            if self.logged.insert(line.to_vec()) {
                tracing::warn!(
                    file = %path.display(),
                    line = n,
                    text = %String::from_utf8_lossy(line),
                    "rt_tables line not understood (not `ID NAME`, ID decimal or 0x hex): \
                     it names no table for the agent, and every number in it counts as taken"
                );
            }
        }
        self.cached = Some((path.to_path_buf(), stamp, parsed.clone()));
        Ok(parsed)
    }

    /// Appends `<number> <bridge>` (upstream's line), after a newline if the
    /// last line lacks one. A write that fails part-way is cut back, so no
    /// half line is left to be read as an entry with a truncated name.
    pub(crate) fn append(&mut self, path: &Path, number: u32, bridge: &str) -> Result<(), IoError> {
        self.cached = None;
        let line = RtTables::entry_line(number, bridge);
        let fail = |source| IoError::RtTablesWrite {
            path: path.display().to_string(),
            bridge: bridge.to_string(),
            line: line.trim_end().to_string(),
            source,
        };
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .map_err(fail)?;
        let len = f.metadata().map_err(fail)?.len();
        let mut bytes = Vec::with_capacity(line.len() + 1);
        if len > 0 {
            let mut last = [0u8];
            f.read_exact_at(&mut last, len - 1).map_err(fail)?;
            if last[0] != b'\n' {
                bytes.push(b'\n');
            }
        }
        bytes.extend_from_slice(line.as_bytes());
        if let Err(e) = f.write_all(&bytes) {
            if let Err(cut) = f.set_len(len) {
                tracing::error!(
                    file = %path.display(),
                    error = %cut,
                    "could not cut a partly written rt_tables line back"
                );
            }
            return Err(fail(e));
        }
        Ok(())
    }
}
