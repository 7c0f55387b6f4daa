//! The cache file's I/O: where the monitor task leaves its resume point,
//! how it is written (atomically, off the async threads) and read back at
//! start. The format is `obgp_ovsdb_data::cache_file`'s.
//!
//! The monitor task records a [`ResumePoint`] (the published snapshot with
//! the transaction id and monitor request it reflects, taken together, the
//! same triple an in-process reconnect resumes from) after every batch it
//! applies; [`StateFile::save`] writes the latest one when it changed. It is
//! called every [`ClientConfig::state_interval`](crate::ClientConfig) and
//! by [`Client::save_state`](crate::Client::save_state) at shutdown.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use obgp_ovsdb_data::cache_file::{self, CacheHeader, LoadedCache, SchemaIdentity};
use obgp_ovsdb_data::wire::KeyProjection;
use obgp_ovsdb_data::DbSnapshot;

use crate::error::{Error, Result};

/// A snapshot and what it reflects: a consistent point to resume from.
#[derive(Clone, Debug)]
pub(crate) struct ResumePoint {
    pub(crate) database: String,
    pub(crate) schema: Arc<serde_json::Value>,
    pub(crate) cluster_id: Option<String>,
    pub(crate) last_txn_id: String,
    pub(crate) monitor: Arc<obgp_ovsdb_data::MonitorSpec>,
    pub(crate) snapshot: DbSnapshot,
}

impl ResumePoint {
    fn header(&self) -> CacheHeader {
        CacheHeader {
            database: self.database.clone(),
            schema: self.schema.clone(),
            cluster_id: self.cluster_id.clone(),
            last_txn_id: self.last_txn_id.clone(),
            monitor: cache_file::monitor_identity(&self.monitor),
        }
    }
}

/// The latest resume point, and how many were recorded (to skip writing
/// when nothing changed since the last write).
#[derive(Debug, Default)]
struct Latest {
    point: Option<ResumePoint>,
    recorded: u64,
    written: u64,
}

/// One database's cache file: the path and the latest resume point.
#[derive(Clone, Debug)]
pub(crate) struct StateFile {
    path: PathBuf,
    latest: Arc<Mutex<Latest>>,
    /// One write at a time (the periodic one and the shutdown one).
    writing: Arc<tokio::sync::Mutex<()>>,
}

impl StateFile {
    pub(crate) fn new(path: PathBuf) -> StateFile {
        StateFile {
            path,
            latest: Arc::default(),
            writing: Arc::default(),
        }
    }

    /// Records `point` as the latest (written at the next save).
    pub(crate) fn record(&self, point: ResumePoint) {
        let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        latest.point = Some(point);
        latest.recorded += 1;
    }

    /// Writes the latest resume point if it changed since the last write.
    /// Returns whether it wrote.
    pub(crate) async fn save(&self) -> Result<bool> {
        let _one = self.writing.lock().await;
        let (point, recorded) = {
            let latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
            match &latest.point {
                Some(p) if latest.recorded != latest.written => (p.clone(), latest.recorded),
                _ => return Ok(false),
            }
        };
        let path = self.path.clone();
        let rows: usize = point
            .snapshot
            .tables()
            .map(|t| point.snapshot.table(t).len())
            .sum();
        let started = Instant::now();
        let bytes = tokio::task::spawn_blocking(move || {
            let bytes = cache_file::encode(&point.header(), &point.snapshot);
            write_atomically(&path, &bytes).map(|()| bytes.len())
        })
        .await;
        let failed = |reason: String| Error::StateFile {
            path: self.path.display().to_string(),
            reason,
        };
        let bytes = bytes
            .map_err(|e| failed(format!("writer task: {e}")))?
            .map_err(|e| failed(e.to_string()))?;
        self.latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .written = recorded;
        tracing::info!(file = %self.path.display(), rows, bytes, took_ms = started.elapsed().as_millis() as u64, "OVSDB cache written");
        Ok(true)
    }

    /// Reads the cache file back, off the async threads. `None` when there
    /// is none or it cannot be used (logged once, with why: the client then
    /// takes a full dump).
    pub(crate) async fn load(&self, projection: KeyProjection) -> Option<LoadedCache> {
        let path = self.path.clone();
        let started = Instant::now();
        let read = tokio::task::spawn_blocking(move || match std::fs::read(&path) {
            Ok(bytes) => Some(cache_file::decode(&bytes, &projection).map_err(|e| e.to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => Some(Err(e.to_string())),
        })
        .await
        .ok()
        .flatten();
        let file = self.path.display();
        match read {
            None => {
                tracing::info!(%file, "no OVSDB cache file: the first sync is a full dump");
                None
            }
            Some(Err(why)) => {
                tracing::warn!(%file, reason = %why, "OVSDB cache file not usable: the first sync is a full dump");
                None
            }
            Some(Ok(loaded)) => {
                tracing::info!(%file, took_ms = started.elapsed().as_millis() as u64, last_txn_id = %loaded.header.last_txn_id, "OVSDB cache file loaded; used only if the server still has its transaction");
                Some(loaded)
            }
        }
    }
}

/// The header of the cache file at `path` (its first two lines only, not
/// the rows), `None` when there is no usable one. How a caller learns the
/// monitor request the file was filled with before it starts the client:
/// a conditional monitor resumes only from the very same conditions.
pub fn read_cache_header(path: &Path) -> Option<CacheHeader> {
    use std::io::BufRead as _;
    let mut reader = std::io::BufReader::new(std::fs::File::open(path).ok()?);
    let mut head = Vec::new();
    for _ in 0..2 {
        if reader.read_until(b'\n', &mut head).ok()? == 0 {
            return None;
        }
    }
    cache_file::decode_header(&head).ok()
}

/// Writes `bytes` to `path` so that a crash leaves either the old file or
/// the new one, never a part: a temporary file beside it, synced, renamed
/// over it, and the directory synced so the rename itself is durable.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    // The process id in the name: a one-shot command of the agent writing
    // beside the daemon never shares a temporary file with it.
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = (|| {
        // The NB rows are the cloud's inventory: the owner only.
        use std::os::unix::fs::OpenOptionsExt as _;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        // A full disk must not also leave a part-written file behind.
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    std::fs::File::open(dir)?.sync_all()
}

/// Why a loaded cache cannot be resumed from on this server with this
/// monitor request, `None` when it can: another database, another schema
/// (a server upgraded since, or a foreign cache), another cluster, or rows
/// selected by another request (a resume would miss the rows the new
/// conditions add and keep those they drop).
pub(crate) fn unusable(
    loaded: &LoadedCache,
    database: &str,
    schema: &serde_json::Value,
    cluster_id: Option<&str>,
    monitor: &obgp_ovsdb_data::MonitorSpec,
) -> Option<String> {
    let header = &loaded.header;
    if header.database != database {
        return Some(format!(
            "it holds database {}, this client monitors {database}",
            header.database
        ));
    }
    let (cached, served) = (header.schema_identity(), SchemaIdentity::of(schema));
    if cached != served {
        return Some(format!(
            "it was written with schema {cached}, the server has {served}"
        ));
    }
    if header.cluster_id.as_deref() != cluster_id {
        let name = |c: Option<&str>| c.map_or("none (standalone)".to_string(), str::to_string);
        return Some(format!(
            "it was written from cluster {}, the server is in cluster {}",
            name(header.cluster_id.as_deref()),
            name(cluster_id)
        ));
    }
    if header.monitor != cache_file::monitor_identity(monitor) {
        return Some(
            "it was filled with other monitor conditions or columns than this request's".into(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn an_atomic_write_replaces_the_file_owner_only_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("db.cache");
        write_atomically(&path, b"first").unwrap();
        write_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["db.cache"]);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.cache");
        write_atomically(&path, b"old").unwrap();
        // The target is now a non-empty directory: the rename fails.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("x"), b"").unwrap();
        assert!(write_atomically(&path, b"new").is_err());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["db.cache"], "a temporary file was left behind");
    }
}
