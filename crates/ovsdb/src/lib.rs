//! An asynchronous OVSDB (RFC 7047) client for the agent's three databases:
//! OVN_Northbound, OVN_Southbound and the local Open_vSwitch.
//!
//! The crate is split the way the protocol is layered: [`datum`] is the value
//! model (atoms, sets, maps, rows) shared with the OVN model and the event
//! filters; [`framing`] cuts the byte stream into JSON messages.

pub mod datum;
pub mod error;
pub mod framing;

pub use datum::{Atom, Datum, DatumError, Row, Uuid};
pub use error::{Error, Result};
