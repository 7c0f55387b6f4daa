//! A log file that follows log rotation, like oslo.log's use of Python's
//! `WatchedFileHandler`: before each record the path is checked, and when
//! logrotate has moved or removed the file, it is reopened (created) so
//! records never keep going to a renamed file.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use tracing_subscriber::fmt::MakeWriter;

/// The open file and the identity (device, inode) it had when opened.
struct Open {
    file: File,
    id: (u64, u64),
}

/// An append-mode log file reopened when its path stops naming it.
pub struct WatchedFile {
    path: PathBuf,
    open: Mutex<Open>,
}

fn open(path: &Path) -> io::Result<Open> {
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let m = file.metadata()?;
    Ok(Open {
        file,
        id: (m.dev(), m.ino()),
    })
}

impl WatchedFile {
    /// Opens (creates) `path` for appending.
    pub fn new(path: &Path) -> io::Result<WatchedFile> {
        Ok(WatchedFile {
            path: path.to_path_buf(),
            open: Mutex::new(open(path)?),
        })
    }
}

/// Writes one record to the file, reopening it first if it was rotated.
pub struct Writer<'a> {
    path: &'a Path,
    open: MutexGuard<'a, Open>,
}

impl Writer<'_> {
    fn reopen_if_rotated(&mut self) {
        let current = std::fs::metadata(self.path)
            .map(|m| (m.dev(), m.ino()))
            .ok();
        if current != Some(self.open.id) {
            // If reopening fails, keep writing to the old file: losing
            // records is worse than writing them to the rotated file.
            if let Ok(fresh) = open(self.path) {
                *self.open = fresh;
            }
        }
    }
}

impl Write for Writer<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.open.file.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.open.file.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.open.file.flush()
    }
}

impl<'a> MakeWriter<'a> for WatchedFile {
    type Writer = Writer<'a>;

    fn make_writer(&'a self) -> Writer<'a> {
        // A poisoned lock only means another thread panicked mid-write; the
        // file handle itself is still usable.
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let mut w = Writer {
            path: &self.path,
            open,
        };
        w.reopen_if_rotated();
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "ovn-bgp-agent-logfile-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_rotated_file_is_reopened_at_its_path() {
        let dir = scratch("rotate");
        let path = dir.join("agent.log");
        let f = WatchedFile::new(&path).unwrap();
        f.make_writer().write_all(b"one\n").unwrap();
        std::fs::rename(&path, dir.join("agent.log.1")).unwrap();
        f.make_writer().write_all(b"two\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("agent.log.1")).unwrap(),
            "one\n"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
        std::fs::remove_file(&path).unwrap();
        f.make_writer().write_all(b"three\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "three\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_existing_file_is_appended_to() {
        let dir = scratch("append");
        let path = dir.join("agent.log");
        std::fs::write(&path, "old\n").unwrap();
        WatchedFile::new(&path)
            .unwrap()
            .make_writer()
            .write_all(b"new\n")
            .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\nnew\n");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
