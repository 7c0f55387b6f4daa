//! What the node-local cluster of `exposing_method = ovn` needs on the
//! node, as the desired state carries it. A leaf: the desired state holds
//! it, [`crate::ovn_method`] computes it.

use std::collections::BTreeSet;

use obgp_local_cluster::LocalClusterRows;
use obgp_netmodel::{DevName, FdbEntry, Flow};
use serde::Serialize;

/// One mapping of `ovn-bridge-mappings-<bgp_chassis_id>` and its role.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Segment {
    /// The local cluster's network name: its switch's name.
    pub network: String,
    pub bridge: DevName,
    /// Internal: the bridge is also OpenStack's (`ovn-bridge-mappings`);
    /// external: it holds the fabric NICs.
    pub internal: bool,
    /// The VLAN of the internal localnet (the OpenStack provider network's
    /// tag on that bridge); `None`: untagged.
    pub vlan: Option<u16>,
}

/// What the node-local cluster needs, as
/// [`Desired::local_cluster`](crate::Desired::local_cluster) carries it:
/// the part of [`OvnMethod`](crate::OvnMethod) that is not the exposure.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct LocalCluster {
    pub segments: Vec<Segment>,
    pub local_nb: LocalClusterRows,
    pub flows: BTreeSet<Flow>,
    pub fdb: BTreeSet<FdbEntry>,
}
