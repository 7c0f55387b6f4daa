//! The node's I/O: the real-kernel observer and applier ([`kernel`]), which
//! reads links, addresses, rules, routes and neighbours from a
//! notification-fed [`mirror`], and runs ovs-ofctl, vtysh, sysctl and
//! rt_tables writes. The pure planning vocabulary it observes into and
//! applies from is obgp-plan.

mod codec;
pub mod kernel;
pub mod mirror;

pub use kernel::{DriftProbe, IoError, KernelConfig, KernelNode, Scope};
