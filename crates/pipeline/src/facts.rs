//! [`NodeFacts`] built in one place, from what the shell read of the node.
//!
//! The desired state needs a few values only I/O can give (the system
//! hostname, the router-id FRR reports, the node's addresses, the external
//! bridges' MACs). The shell reads them ([`NodeReads`] says which ones the
//! configuration needs, so that a reconcile reads nothing more) and hands
//! them over as [`NodeReadings`]; [`node_facts`] turns them into the facts
//! by the rules below, the same for the daemon, the one-shot and offline
//! commands, the conformance runner and the fuzz harness.

use std::collections::{BTreeMap, BTreeSet};

use obgp_config::{Config, Driver, ExposingMethod};
use obgp_desired::{LocalFacts, NodeFacts};
use obgp_netmodel::{Address, DevName};
use obgp_ovn::Snapshot;
use obgp_plan::{Actual, ActualLink};

/// Which of the node's readings a configuration's facts use: what the
/// shell has to read before computing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeReads {
    /// The router-id FRR reports: `bgp_router_id` is unset.
    pub frr_router_id: bool,
    /// The node's addresses: the SB EVPN driver without `evpn_local_ip`
    /// takes its VXLAN source from them.
    pub addresses: bool,
    /// The node's links and addresses: `exposing_method = ovn` takes the
    /// external bridges' MAC and addresses from them.
    pub links: bool,
}

impl NodeReads {
    /// What `config` needs read.
    pub fn of(config: &Config) -> NodeReads {
        let d = &config.default;
        NodeReads {
            frr_router_id: d.bgp_router_id.is_none(),
            addresses: d.driver == Driver::OvnEvpnDriver && d.evpn_local_ip.is_none(),
            links: d.exposing_method == ExposingMethod::Ovn,
        }
    }
}

/// What the shell read of the node (`None`: not read, or not there).
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeReadings<'a> {
    /// The system hostname (`/proc/sys/kernel/hostname`).
    pub system_hostname: Option<&'a str>,
    /// The router-id FRR reports (`show ip bgp summary json`).
    pub frr_router_id: Option<&'a str>,
    /// The node's links, by name.
    pub links: Option<&'a BTreeMap<DevName, ActualLink>>,
    /// The node's addresses.
    pub addresses: Option<&'a BTreeSet<Address>>,
    /// `exposing_method = ovn`: the external bridges' facts as a scenario
    /// file records them, taken instead of those of `links`/`addresses`.
    pub bridge_facts: Option<&'a LocalFacts>,
}

impl<'a> NodeReadings<'a> {
    /// The links and addresses of a node state (offline: a file's node,
    /// a scenario's initial node); no hostname, no router-id.
    pub fn of_node(actual: &'a Actual) -> NodeReadings<'a> {
        NodeReadings {
            links: Some(&actual.links),
            addresses: Some(&actual.addresses),
            ..NodeReadings::default()
        }
    }
}

/// The node facts `config`'s computation takes, from `read`:
/// - the hostname and FRR's router-id as read;
/// - the VXLAN source ([`obgp_desired::vxlan_source`]: the /32 on `lo`,
///   else `evpn_nic`'s address) only for the SB EVPN driver without
///   `evpn_local_ip`, the one computation that reads it;
/// - with `exposing_method = ovn`, the MAC and addresses of the local
///   cluster's external bridges in `snap` ([`obgp_desired::external_bridges`]),
///   from `read.bridge_facts` when given, else from the links and addresses.
pub fn node_facts(config: &Config, snap: &Snapshot, read: NodeReadings<'_>) -> NodeFacts {
    let wanted = NodeReads::of(config);
    let addresses = || {
        read.addresses
            .into_iter()
            .flatten()
            .map(|a| (&a.dev, a.net))
    };
    let vxlan_source = if wanted.addresses {
        obgp_desired::vxlan_source(config.default.evpn_nic.as_deref(), addresses())
    } else {
        None
    };
    let local_bridges = match (wanted.links, read.bridge_facts) {
        (false, _) => LocalFacts::default(),
        (true, Some(given)) => given.clone(),
        (true, None) => obgp_desired::local_facts(
            &obgp_desired::external_bridges(snap, config),
            |bridge| read.links.and_then(|l| l.get(bridge)).map(|l| l.mac),
            addresses(),
        ),
    };
    NodeFacts {
        system_hostname: read.system_hostname.map(str::to_string),
        frr_router_id: read.frr_router_id.map(str::to_string),
        vxlan_source,
        local_bridges,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use obgp_netmodel::MacAddr;
    use std::net::IpAddr;

    fn addr(dev: &str, net: &str) -> Address {
        Address {
            dev: DevName::new(dev).unwrap(),
            net: net.parse().unwrap(),
        }
    }

    #[test]
    fn the_vxlan_source_is_read_only_for_the_sb_evpn_driver_without_a_local_ip() {
        let addresses: BTreeSet<Address> = [addr("lo", "10.1.1.1/32")].into();
        let read = NodeReadings {
            addresses: Some(&addresses),
            ..NodeReadings::default()
        };
        let mut config = Config::default();
        config.default.driver = Driver::OvnEvpnDriver;
        let evpn = node_facts(&config, &Snapshot::default(), read);
        assert_eq!(
            evpn.vxlan_source,
            Some("10.1.1.1".parse::<IpAddr>().unwrap())
        );

        config.default.evpn_local_ip = Some("192.0.2.9".parse().unwrap());
        assert_eq!(
            node_facts(&config, &Snapshot::default(), read).vxlan_source,
            None
        );

        config.default.driver = Driver::NbOvnBgpDriver;
        config.default.evpn_local_ip = None;
        assert_eq!(
            node_facts(&config, &Snapshot::default(), read),
            NodeFacts::default()
        );
    }

    #[test]
    fn the_hostname_and_router_id_are_taken_as_read() {
        let read = NodeReadings {
            system_hostname: Some("node-1"),
            frr_router_id: Some("198.51.100.1"),
            ..NodeReadings::default()
        };
        let facts = node_facts(&Config::default(), &Snapshot::default(), read);
        assert_eq!(facts.system_hostname.as_deref(), Some("node-1"));
        assert_eq!(facts.frr_router_id.as_deref(), Some("198.51.100.1"));
    }

    #[test]
    fn given_bridge_facts_are_taken_in_the_ovn_method_only() {
        let mut given = LocalFacts::default();
        given.bridges.insert(
            "br-ext".into(),
            obgp_desired::BridgeFacts {
                mac: Some(MacAddr([2, 0, 0, 0, 0, 1])),
                addrs: vec!["192.0.2.1/24".parse().unwrap()],
            },
        );
        let read = NodeReadings {
            bridge_facts: Some(&given),
            ..NodeReadings::default()
        };
        let mut config = Config::default();
        config.default.exposing_method = ExposingMethod::Ovn;
        assert_eq!(
            node_facts(&config, &Snapshot::default(), read).local_bridges,
            given
        );
        config.default.exposing_method = ExposingMethod::Underlay;
        assert_eq!(
            node_facts(&config, &Snapshot::default(), read).local_bridges,
            LocalFacts::default()
        );
    }

    #[test]
    fn the_reads_follow_the_configuration() {
        let mut config = Config::default();
        config.default.bgp_router_id = Some("192.0.2.1".into());
        config.default.driver = Driver::NbOvnBgpDriver;
        config.default.exposing_method = ExposingMethod::Underlay;
        let none = NodeReads {
            frr_router_id: false,
            addresses: false,
            links: false,
        };
        assert_eq!(NodeReads::of(&config), none);
        config.default.bgp_router_id = None;
        config.default.exposing_method = ExposingMethod::Ovn;
        assert_eq!(
            NodeReads::of(&config),
            NodeReads {
                frr_router_id: true,
                links: true,
                ..none
            }
        );
    }
}
