//! The union of the underlay node and the EVPN methods' node under
//! `exposing_method = dynamic` ([`add_node`]).

use std::collections::BTreeMap;

use obgp_netmodel::{Class, DesiredNode};

/// Adds `evpn`'s objects to the underlay node `n` (`exposing_method =
/// dynamic`): the two name different devices, tables and flows (the
/// dynamic split gives each provider network to one method), so the
/// union is theirs side by side; an object both name keeps the underlay's
/// class. The FRR text is the underlay's VRF leak, closed with `exit`,
/// then the VNIs' texts.
///
/// `evpn` is taken apart field by field, so that a field added to
/// [`DesiredNode`] does not compile here until it is merged (two were
/// once dropped this way: the static bridge FDB entries and the L2 VNI
/// blocks, found by the VM-tier dynamic test).
pub(super) fn add_node(n: &mut DesiredNode, evpn: DesiredNode) {
    let DesiredNode {
        // The announcement side is the underlay's: an EVPN part has none.
        announce_dev: _,
        vrf_table: _,
        links,
        bridge_tables,
        sysctls,
        addresses,
        rules,
        routes,
        neighbours,
        proxy_neighbours,
        flows,
        ovs_ports,
        fdb,
        bridge_fdb,
        evpn_vnis,
        l2_vni_frr,
        suppressed_local_routes,
        evpn: cleanup,
        frr_config,
    } = evpn;
    n.links.extend(links);
    n.bridge_tables.extend(bridge_tables);
    n.sysctls.extend(sysctls);
    first_wins(&mut n.addresses, addresses);
    first_wins(&mut n.rules, rules);
    first_wins(&mut n.routes, routes);
    first_wins(&mut n.neighbours, neighbours);
    first_wins(&mut n.proxy_neighbours, proxy_neighbours);
    first_wins(&mut n.bridge_fdb, bridge_fdb);
    n.flows.extend(flows);
    n.ovs_ports.extend(ovs_ports);
    n.fdb.extend(fdb);
    n.evpn_vnis.extend(evpn_vnis);
    n.l2_vni_frr.extend(l2_vni_frr);
    n.suppressed_local_routes.extend(suppressed_local_routes);
    n.evpn = cleanup;
    n.frr_config = match (n.frr_config.take(), frr_config) {
        // The leak text ends inside `router bgp ... vrf bgp-vrf`: without
        // `exit`, FRR reads the VNIs' `vrf vrf-<n>` stanza inside it and
        // refuses the text (`% Unknown command: exit-vrf`).
        (Some(leak), Some(vnis)) => Some(leak + "\nexit\n" + &vnis),
        (leak, vnis) => leak.or(vnis),
    };
}

/// Adds `more`'s entries that `map` lacks (an entry both have keeps
/// `map`'s class).
fn first_wins<K: Ord>(map: &mut BTreeMap<K, Class>, more: BTreeMap<K, Class>) {
    for (k, c) in more {
        map.entry(k).or_insert(c);
    }
}
