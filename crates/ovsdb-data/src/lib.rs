//! The OVSDB (RFC 7047) value model, with no I/O: what the agent's three
//! databases (OVN_Northbound, OVN_Southbound, Open_vSwitch) hold and how
//! their update messages decode.
//!
//! - [`datum`]: atoms, sets, maps and rows, shared with the OVN model and
//!   the event filters;
//! - [`schema`]: the schema and the typed checks it drives;
//! - [`wire`]: decodes update messages straight from their bytes;
//! - [`json_scan`]: finds where a JSON value ends in a byte stream (the
//!   client's framing and the streamed decoder both use it);
//! - [`monitor_spec`]: what a monitor follows (tables, columns, conditions,
//!   map-key projections);
//! - [`snapshot`]: the cache's point-in-time [`DbSnapshot`] and the
//!   [`Change`]s an update batch makes to it;
//! - [`cache_file`]: a snapshot's on-disk form, for restarts that resume.
//!
//! The session, TLS, reconnect and change-stream channels live in
//! `obgp-ovsdb`, which builds on this crate.

#![warn(missing_docs)]

pub mod cache_file;
pub mod datum;
pub mod error;
pub mod json_scan;
pub mod monitor_spec;
pub mod row;
pub mod schema;
pub mod snapshot;
pub mod wire;

pub use datum::{Atom, Columns, Datum, DatumError, DatumKind, Row, Str, Uuid};
pub use error::DataError;
pub use monitor_spec::{Condition, MonitorSpec, TableMonitor};
pub use schema::DatabaseSchema;
pub use snapshot::{AppliedUpdate, Change, ChangeKind, DbSnapshot, DbTable};
pub use wire::RowFault;
