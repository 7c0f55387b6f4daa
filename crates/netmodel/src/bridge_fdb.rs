//! A static entry of a Linux bridge's forwarding database: what `bridge
//! fdb replace MAC dev PORT master static [vlan V]` makes (an `AF_BRIDGE`
//! neighbour with `NTF_MASTER`, state `NUD_NOARP`).
//!
//! Not to be confused with [`crate::FdbEntry`], an entry of an *OVS*
//! bridge's MAC learning table (`ovs-appctl fdb/add`, the `ovn` exposing
//! method). The two tables are different: the kernel bridge's FDB is what
//! FRR's zebra reads to advertise a local MAC as an EVPN type-2 route
//! (`exposing_method = l2vni`, docs/evpn.md).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{DevName, MacAddr};

/// A static entry of a Linux bridge's FDB on one of its ports.
///
/// The kernel keys an entry by (bridge, MAC, VLAN): the port is where the
/// MAC points, and a replace with another port moves it. The fields are
/// declared in that order so that the entries of one key are adjacent in
/// a sorted set ([`BridgeFdbEntry::same_key`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BridgeFdbEntry {
    /// The Linux bridge (`NDA_MASTER`).
    pub bridge: DevName,
    pub mac: MacAddr,
    /// The bridge VLAN (`NDA_VLAN`); `None` on a bridge without VLAN
    /// filtering, which is every bridge the agent builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<u16>,
    /// The bridge port the MAC is pinned on (the message's ifindex).
    pub port: DevName,
}

impl BridgeFdbEntry {
    /// Whether `other` is the kernel's same entry, wherever it points.
    pub fn same_key(&self, other: &BridgeFdbEntry) -> bool {
        self.bridge == other.bridge && self.mac == other.mac && self.vlan == other.vlan
    }
}

impl fmt::Display for BridgeFdbEntry {
    /// `br-2001 vrfdd3b5a95-aa fa:16:3e:11:11:11`, with `vlan V` before
    /// the MAC when there is one (the style of the OVS FDB op).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.bridge, self.port)?;
        if let Some(v) = self.vlan {
            write!(f, " vlan {v}")?;
        }
        write!(f, " {}", self.mac)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(bridge: &str, port: &str, mac: &str, vlan: Option<u16>) -> BridgeFdbEntry {
        BridgeFdbEntry {
            bridge: DevName::new(bridge).unwrap(),
            mac: mac.parse().unwrap(),
            vlan,
            port: DevName::new(port).unwrap(),
        }
    }

    #[test]
    fn an_entry_is_keyed_by_bridge_mac_and_vlan_not_by_port() {
        let a = entry("br-2001", "vrfdd3b5a95-aa", "fa:16:3e:11:11:11", None);
        let moved = entry("br-2001", "vxlan-2001", "fa:16:3e:11:11:11", None);
        assert!(a.same_key(&moved));
        for other in [
            entry("br-2002", "vrfdd3b5a95-aa", "fa:16:3e:11:11:11", None),
            entry("br-2001", "vrfdd3b5a95-aa", "fa:16:3e:11:11:12", None),
            entry("br-2001", "vrfdd3b5a95-aa", "fa:16:3e:11:11:11", Some(10)),
        ] {
            assert!(!a.same_key(&other), "{other}");
        }
        assert_eq!(a.to_string(), "br-2001 vrfdd3b5a95-aa fa:16:3e:11:11:11");
        let tagged = entry("br-1", "p", "fa:16:3e:11:11:11", Some(10));
        assert_eq!(tagged.to_string(), "br-1 p vlan 10 fa:16:3e:11:11:11");
        let json = serde_json::to_string(&a).unwrap();
        assert!(!json.contains("vlan"), "{json}");
        assert_eq!(serde_json::from_str::<BridgeFdbEntry>(&json).unwrap(), a);
    }
}
