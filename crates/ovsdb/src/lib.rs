//! An asynchronous OVSDB (RFC 7047) client for the agent's three databases:
//! OVN_Northbound, OVN_Southbound and the local Open_vSwitch.
//!
//! The crate is split the way the protocol is layered:
//! - [`datum`]: the value model (atoms, sets, maps, rows) shared with the OVN
//!   model and the event filters;
//! - [`framing`]: cuts the byte stream into JSON messages;
//! - [`wire`]: decodes update messages from the frame bytes;
//! - [`schema`]: the schema and the typed decoding it drives;
//! - [`cache`]: immutable snapshots, the change stream and the resync signal;
//! - [`rpc`]: transports (`unix:`, `tcp:`, `ssl:` via [`tls`]) and the
//!   JSON-RPC [`Session`];
//! - [`monitor`]: conditional monitor requests and update decoding;
//! - [`reconnect`]: the long-lived [`Client`] that keeps a cache in sync
//!   across failures and cluster failovers.

#![warn(missing_docs)]

pub mod cache;
pub mod datum;
pub mod error;
pub mod framing;
pub mod monitor;
pub mod reconnect;
pub mod rpc;
pub mod schema;
pub mod tls;
pub mod wire;

pub use cache::{Change, ChangeKind, Snapshot};
pub use datum::{Atom, Columns, Datum, DatumError, Row, Str, Uuid};
pub use error::{Error, Result};
pub use monitor::{Condition, MonitorSpec, TableMonitor};
pub use reconnect::{Client, ClientConfig};
pub use rpc::{Remote, Session, SessionConfig};
pub use schema::DatabaseSchema;
pub use tls::{TlsFiles, TlsSettings};
