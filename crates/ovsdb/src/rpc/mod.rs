//! JSON-RPC 1.0 over a stream socket (RFC 7047 § 4): where to connect
//! ([`transport`]) and one live connection ([`session`]).

pub mod session;
pub mod transport;

pub use session::{Notification, Session, SessionConfig};
pub use transport::Remote;
