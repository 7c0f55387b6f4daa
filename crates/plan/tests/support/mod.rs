//! What the planner's tests build their desired nodes from.

// Each test binary uses its own subset.
#![allow(dead_code)]

use obgp_netmodel::{Class, DesiredNode, DevName, Link, LinkKind};

/// The classes of exposure the property tests draw from.
pub const CLASSES: [Class; 5] = [
    Class::Vm,
    Class::Fip,
    Class::Lb,
    Class::Gateway,
    Class::TenantVm,
];

pub fn dev(s: &str) -> DevName {
    DevName::new(s).unwrap()
}

/// The announcement side every underlay node has: `bgp-vrf` (table 10)
/// with `bgp-nic` in it as the announcement device, and `frr` as the FRR
/// text. Bridges, wiring and exposures are the caller's.
pub fn announcing_node(frr: Option<&str>) -> DesiredNode {
    let mut d = DesiredNode {
        announce_dev: Some(dev("bgp-nic")),
        vrf_table: 10,
        frr_config: frr.map(str::to_string),
        ..DesiredNode::default()
    };
    d.links.insert(Link {
        name: dev("bgp-vrf"),
        kind: LinkKind::Vrf { table: 10 },
        master: None,
        mac: None,
        up: true,
    });
    d.links.insert(Link {
        name: dev("bgp-nic"),
        kind: LinkKind::Dummy,
        master: Some(dev("bgp-vrf")),
        mac: None,
        up: true,
    });
    d
}

/// A link the agent finds on the node and does not create (a provider
/// bridge), up.
pub fn existing(name: &DevName) -> Link {
    Link {
        name: name.clone(),
        kind: LinkKind::Existing,
        master: None,
        mac: None,
        up: true,
    }
}
