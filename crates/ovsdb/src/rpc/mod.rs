//! JSON-RPC 1.0 over a stream socket (RFC 7047 § 4): where to connect
//! ([`transport`]), one live connection ([`session`]) and the decoding of
//! what it hands back ([`reply`]).

pub mod reply;
pub mod session;
pub mod transport;

pub use reply::{notification_params, notification_params_with, MonitorReply, Response};
pub use session::{Notification, Session, SessionConfig};
pub use transport::Remote;
