//! An asynchronous OVSDB (RFC 7047) client for the agent's three databases:
//! OVN_Northbound, OVN_Southbound and the local Open_vSwitch.
//!
//! The crate is split the way the protocol is layered:
//! - [`datum`]: the value model (atoms, sets, maps, rows) shared with the OVN
//!   model and the event filters;
//! - [`framing`]: cuts the byte stream into JSON messages;
//! - [`wire`]: decodes update messages from the frame bytes;
//! - [`schema`]: the schema and the typed decoding it drives;
//! - [`cache`]: immutable snapshots, the change stream and the resync signal.

pub mod cache;
pub mod datum;
pub mod error;
pub mod framing;
pub mod schema;
pub mod wire;

pub use cache::{Change, ChangeKind, Snapshot};
pub use datum::{Atom, Datum, DatumError, Row, Uuid};
pub use error::{Error, Result};
pub use schema::DatabaseSchema;
