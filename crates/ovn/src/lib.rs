//! Typed views of the OVN Northbound rows and the local Open_vSwitch row the
//! drivers read, with Neutron's conventions applied, and the immutable,
//! indexed [`Snapshot`] `desired_state` computes from.
//!
//! Parsing happens once, here, at the edge: everything downstream sees
//! [`obgp_netmodel::MacAddr`], [`ipnet::IpNet`], [`obgp_netmodel::DevName`]
//! and typed enums, never raw column strings. Bad rows are skipped with a
//! warning that names the table and the row uuid ([`Snapshot::warnings`]).
//!
//! [`LiveSnapshot`] keeps a snapshot up to date row by row (OVSDB changes),
//! so a one-row change costs O(that row), not a rebuild of the database,
//! and says what it changed ([`NbChanges`]).

pub mod addresses;
mod changes;
pub mod dump;
pub mod fixture;
pub mod hash;
mod index;
pub mod live;
mod live_sb;
mod monitor;
pub mod nb;
pub mod nb_conditions;
mod nb_filter;
pub mod neutron;
pub mod ovs;
mod refs;
mod rows_version;
pub mod sb;
pub mod snapshot;
mod uuid_set;

pub use changes::{NbChanges, PortChange, PortChanges};
pub use live::LiveSnapshot;
pub use nb::{
    DhcpOptions, LoadBalancer, LogicalRouter, LogicalRouterPort, LogicalSwitch, LogicalSwitchPort,
    LspType, Nat, NatType, NbGlobal, PortAddresses, RowError,
};
pub use nb_conditions::LspInterest;
pub use nb_filter::{FilteredRows, NbRowFilter};
pub use neutron::{BgpVpn, BgpVpnError, BgpVpnType};
pub use ovs::{BridgeMapping, ChassisNaming, LocalOvs};
pub use sb::{NatAddresses, PbMac, PbType, PortBinding, SbIndex, SbLoadBalancer};
pub use snapshot::{RowFacts, RowSource, Snapshot, Table, Tables, NB_DB, OVS_DB, SB_DB};
