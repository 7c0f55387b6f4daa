//! The node's I/O: the real-kernel observer and applier ([`kernel`]), which
//! reads links, addresses, rules, routes and neighbours from a
//! notification-fed [`mirror`], encodes its netlink writes and decodes what
//! the kernel sends in one codec, and runs ovs-ofctl and vtysh (with the
//! [`DriftProbe`] that re-runs them off the loop), sysctl and rt_tables
//! writes. The single writer of `obgp_plan::apply_plan` reaches both
//! through [`NodeWriter`]. The pure planning vocabulary it observes into and
//! applies from is obgp-plan.

mod bgp;
mod codec;
mod commands;
mod config;
pub mod deadline;
mod error;
pub mod fdb;
pub mod kernel;
pub mod lane;
pub mod lock;
pub mod mirror;
mod ovs_name;
mod rt_tables;
mod scope;
mod writer;

pub use bgp::{
    read_advertised, read_bgp_prefix, read_bgp_sessions, read_bgp_table, read_evpn_advertised,
    read_evpn_routes, BgpSessionsReader, EvpnRouteType,
};
pub use commands::{frr_check_lines, read_frr_router_id, DriftProbe};
pub use config::KernelConfig;
pub use error::IoError;
pub use kernel::KernelNode;
pub use lane::{CommandLane, CommandOutcome, CommandView, LaneSignal};
pub use lock::{Holder, LockError, NodeLock};
pub use scope::Scope;
pub use writer::NodeWriter;
