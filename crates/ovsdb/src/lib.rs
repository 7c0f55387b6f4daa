//! An asynchronous OVSDB (RFC 7047) client for the agent's three databases:
//! OVN_Northbound, OVN_Southbound and the local Open_vSwitch.
//!
//! The values it moves (datums, schemas, decoded updates, snapshots) are
//! `obgp-ovsdb-data`'s; this crate does the I/O, layered as the protocol is:
//! - [`framing`]: cuts the byte stream into JSON messages;
//! - [`rpc`]: transports (`unix:`, `tcp:`, `ssl:` via [`tls`]) and the
//!   JSON-RPC [`Session`];
//! - [`monitor`]: conditional monitor requests and update decoding;
//! - [`cache`]: publishes snapshots, the change stream and the resync
//!   signal to readers;
//! - [`backoff`]: when to reconnect after a failure;
//! - [`reconnect`]: the long-lived [`Client`] that keeps a cache in sync
//!   across failures and cluster failovers;
//! - `state_file`: the cache kept on disk between runs, so that a restart
//!   resumes instead of taking a full dump.

#![warn(missing_docs)]

pub mod backoff;
pub mod cache;
pub mod error;
pub mod framing;
pub mod monitor;
pub mod reconnect;
pub mod rpc;
mod server_db;
mod state_file;
pub mod tls;

pub use cache::{CachePublisher, CacheReader};
pub use error::{Error, Result};
pub use reconnect::{Client, ClientConfig};
pub use rpc::{Remote, Session, SessionConfig};
pub use state_file::read_cache_header;
pub use tls::{TlsFiles, TlsSettings};
