//! `explain` of a prefix (`10.0.0.0/24`): the announcements of this node
//! that are that prefix, as `status` lists them: a tenant subnet routed
//! behind a local gateway, a route of the stretched-L2 VRF table, a route
//! of an EVPN VNI's table.

use ipnet::IpNet;

use super::{Decisions, Finding};

/// Every announcement of this node that is exactly `prefix`.
pub(super) fn announcing(ctx: &Decisions, prefix: IpNet) -> Vec<Finding> {
    let d = &ctx.desired;
    let subnets = d
        .tenant_subnets
        .iter()
        .filter(|s| s.net == prefix)
        .map(|s| Finding::Prefix {
            prefix,
            class: obgp_netmodel::Class::Subnet,
            what: if s.vrf_route {
                format!(
                    "tenant subnet of router {}, routed through {} and announced as the subnet (subnet method)",
                    s.router, s.bridge
                )
            } else {
                format!(
                    "tenant subnet of router {}, routed through {}; not announced as a subnet (host method: its VM IPs are announced one by one)",
                    s.router, s.bridge
                )
            },
            announced: s.vrf_route,
            rows: Vec::new(),
        });
    let vrf_routes = d
        .vrf_routes
        .values()
        .filter(|r| r.net == prefix)
        .map(|r| Finding::Prefix {
            prefix,
            class: r.class,
            what: format!(
                "route in the VRF table {}, announced by redistribute kernel",
                match r.via {
                    Some(v) => format!("via gateway {v}"),
                    None => "on-link (a gateway's provider subnet)".to_string(),
                }
            ),
            announced: true,
            rows: r.rows.iter().map(|&row| ctx.row(row)).collect(),
        });
    let evpn_routes = d.evpn.iter().flat_map(|evpn| {
        evpn.vnis.values().flat_map(move |v| {
            v.ports
                .iter()
                .flat_map(|p| p.routes.iter().map(move |r| (p, r)))
                .filter(move |(_, r)| r.dst == prefix)
                .map(move |(p, r)| Finding::Prefix {
                    prefix,
                    class: r.class,
                    what: format!(
                        "route of VNI {} in table {} ({}) on {}{}",
                        v.vni,
                        v.vni,
                        v.vrf,
                        p.vrf_end,
                        r.via.map(|via| format!(" via {via}")).unwrap_or_default()
                    ),
                    announced: true,
                    rows: Vec::new(),
                })
        })
    });
    subnets.chain(vrf_routes).chain(evpn_routes).collect()
}

#[cfg(test)]
mod tests {
    use super::super::{explain, Finding, Query};
    use crate::NodeFacts;

    use crate::explain::tests::demo;

    #[test]
    fn a_prefix_query_parses_as_a_prefix_and_a_host_prefix_as_its_ip() {
        assert_eq!(
            Query::parse("10.0.0.0/24"),
            Query::Prefix("10.0.0.0/24".parse().unwrap())
        );
        // The router interface address names its subnet.
        assert_eq!(
            Query::parse("10.0.0.1/24"),
            Query::Prefix("10.0.0.0/24".parse().unwrap())
        );
        assert_eq!(
            Query::parse("172.24.4.10/32"),
            Query::Ip("172.24.4.10".parse().unwrap())
        );
        assert_eq!(Query::parse("port-1"), Query::Port("port-1".into()));
    }

    #[test]
    fn the_demo_tenant_subnet_is_explained_as_announced_from_this_node() {
        let (snap, config) = demo();
        let e = explain(
            &snap,
            &config,
            &NodeFacts::default(),
            &Query::parse("10.0.0.0/24"),
        )
        .unwrap();
        assert!(e.exposed(), "{e}");
        assert_eq!(e.findings.len(), 1, "{e}");
        let Finding::Prefix {
            prefix,
            class,
            announced,
            what,
            ..
        } = &e.findings[0]
        else {
            panic!("{e}")
        };
        assert_eq!(prefix.to_string(), "10.0.0.0/24");
        assert_eq!(*class, obgp_netmodel::Class::Subnet);
        assert!(announced);
        assert!(
            what.contains("router1") || what.contains("router"),
            "{what}"
        );
        let text = e.to_string();
        assert!(
            text.starts_with("10.0.0.0/24: exposed on this node"),
            "{text}"
        );
        assert!(!text.contains("no port named"), "{text}");
    }

    #[test]
    fn a_prefix_this_node_does_not_announce_says_so() {
        let (snap, config) = demo();
        let e = explain(
            &snap,
            &config,
            &NodeFacts::default(),
            &Query::parse("192.0.2.0/24"),
        )
        .unwrap();
        assert!(!e.exposed());
        assert!(e.findings.is_empty());
        assert!(
            e.to_string()
                .contains("no tenant subnet, VRF route or EVPN route of this node is 192.0.2.0/24"),
            "{e}"
        );
    }

    #[test]
    fn a_tenant_vm_ip_answers_first_with_the_subnet_that_reaches_it_and_nothing_else() {
        let (snap, config) = demo();
        let e = explain(
            &snap,
            &config,
            &NodeFacts::default(),
            &Query::parse("10.0.0.5"),
        )
        .unwrap();
        let text = e.to_string();
        assert!(
            text.starts_with(
                "10.0.0.5: reachable through subnet 10.0.0.0/24 announced from this node"
            ),
            "{text}"
        );
        assert!(
            e.findings
                .iter()
                .all(|f| matches!(f, Finding::Covered { .. } | Finding::Routed { .. })),
            "{text}"
        );
        assert!(!text.contains("not exposed"), "{text}");
        assert!(e.exposed());
    }
}
