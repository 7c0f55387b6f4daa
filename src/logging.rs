//! Logging with tracing, set up from oslo.log's options as upstream's agent
//! does: `debug` picks DEBUG over INFO, `log_file` (under `log_dir`) writes
//! to a file, `use_stderr` adds stderr, and with neither the output goes to
//! stdout (oslo.log's fallback handler writes to stdout, not stderr).
//! `use_json` writes one JSON object per line.
//!
//! One-shot commands (`config`, `plan`) print their result on stdout, so
//! their logs always go to stderr and never to the daemon's log file.

use std::path::{Path, PathBuf};

use anyhow::Context;
use obgp_config::LogSection;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

use crate::logfile::WatchedFile;

/// Where the logs of a command go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The daemon (and `reconcile`): oslo.log's routing.
    Service,
    /// A command whose stdout is its result: stderr only.
    Tool,
}

/// oslo.log's `_get_log_file_path`: `log_file` alone, `log_dir/log_file`
/// (an absolute `log_file` stays as is), or `log_dir/ovn-bgp-agent.log`.
pub fn log_file_path(log: &LogSection) -> Option<PathBuf> {
    match (&log.log_file, &log.log_dir) {
        (Some(f), None) => Some(PathBuf::from(f)),
        (Some(f), Some(d)) => Some(Path::new(d).join(f)),
        (None, Some(d)) => Some(Path::new(d).join(format!("{}.log", obgp_config::PROG))),
        (None, None) => None,
    }
}

type BoxedLayer = Box<dyn Layer<Registry> + Send + Sync>;

fn layer<W>(writer: W, json: bool) -> BoxedLayer
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let base = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(false);
    if json {
        base.json().flatten_event(true).boxed()
    } else {
        base.boxed()
    }
}

/// Installs the global subscriber. Fails if the log file cannot be opened.
pub fn init(log: &LogSection, mode: Mode) -> anyhow::Result<()> {
    let mut layers: Vec<BoxedLayer> = Vec::new();
    match mode {
        Mode::Tool => layers.push(layer(std::io::stderr, log.use_json)),
        Mode::Service => {
            let path = log_file_path(log);
            if let Some(path) = &path {
                let file = WatchedFile::new(path)
                    .with_context(|| format!("opening log file {}", path.display()))?;
                layers.push(layer(file, log.use_json));
            }
            if log.use_stderr {
                layers.push(layer(std::io::stderr, log.use_json));
            }
            if path.is_none() && !log.use_stderr {
                layers.push(layer(std::io::stdout, log.use_json));
            }
        }
    }
    let level = if log.debug {
        LevelFilter::DEBUG
    } else {
        LevelFilter::INFO
    };
    tracing_subscriber::registry()
        .with(layers)
        .with(level)
        .try_init()
        .context("installing the log subscriber")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(file: Option<&str>, dir: Option<&str>) -> LogSection {
        LogSection {
            debug: false,
            log_file: file.map(Into::into),
            log_dir: dir.map(Into::into),
            use_json: false,
            use_stderr: false,
        }
    }

    #[test]
    fn log_file_path_follows_oslo_log() {
        assert_eq!(log_file_path(&log(None, None)), None);
        assert_eq!(
            log_file_path(&log(Some("a.log"), None)),
            Some("a.log".into())
        );
        assert_eq!(
            log_file_path(&log(Some("a.log"), Some("/var/log/x"))),
            Some("/var/log/x/a.log".into())
        );
        assert_eq!(
            log_file_path(&log(Some("/abs/a.log"), Some("/var/log/x"))),
            Some("/abs/a.log".into())
        );
        assert_eq!(
            log_file_path(&log(None, Some("/var/log/x"))),
            Some("/var/log/x/ovn-bgp-agent.log".into())
        );
    }
}
