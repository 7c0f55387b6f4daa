//! A node as the Python agent leaves it: the same artefacts the plan lists,
//! written the way upstream writes them (iproute2-style requests, `sysctl
//! -w`, an `rt_tables` line appended with a space, `ovs-ofctl add-flow`,
//! `vtysh -f`), so the e2e test can replace the Python agent on a running
//! node and check that nothing churns.
//!
//! What differs from the rewrite's own writer, and is therefore what the
//! adoption test exercises: rules get their priority from the kernel (the
//! Python agent gives none), routes are written by `ip route replace` with
//! the protocol and scope of upstream's route dicts, the rt_tables line is
//! appended by hand, flows and FRR text come from the command-line tools, and
//! the agent starts with no memory of a previous desired state.

use obgp_plan::{Op, Plan};

/// One write of the Python agent, as a command-line tool would make it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PythonWrite {
    /// `ip ARGS` in the node namespace.
    Ip(Vec<String>),
    /// `sysctl -w KEY=VALUE` in the node namespace.
    Sysctl { key: String, value: String },
    /// A line appended to rt_tables (`<number> <name>`).
    RtTable(String),
    /// `ovs-ofctl add-flow BRIDGE FLOW`.
    Flow { bridge: String, flow: String },
    /// `vtysh -f` of this text.
    Frr(String),
}

fn fam(v6: bool) -> Vec<String> {
    if v6 {
        vec!["-6".to_string()]
    } else {
        Vec::new()
    }
}

fn ip(args: &[&str]) -> PythonWrite {
    PythonWrite::Ip(args.iter().map(|s| s.to_string()).collect())
}

/// The Python agent's writes for the additions of `plan` (a plan made
/// against an empty node). Deletions have no Python counterpart here and
/// are returned as an error, naming the op: a plan against an empty node
/// has none. Long (about 150 lines) on purpose: one arm per [`Op`], each
/// the Python agent's command for it, read as a table.
pub fn python_writes(plan: &Plan) -> Result<Vec<PythonWrite>, String> {
    let mut out = Vec::new();
    for op in plan.ops() {
        out.push(match op {
            Op::AddLink { name, kind } => {
                use obgp_netmodel::LinkKind;
                let name = name.as_str();
                match kind {
                    LinkKind::Vrf { table } => ip(&[
                        "link",
                        "add",
                        name,
                        "type",
                        "vrf",
                        "table",
                        &table.to_string(),
                    ]),
                    LinkKind::Dummy => ip(&["link", "add", name, "type", "dummy"]),
                    LinkKind::Vlan { parent, vlan_id } => ip(&[
                        "link",
                        "add",
                        "link",
                        parent.as_str(),
                        "name",
                        name,
                        "type",
                        "vlan",
                        "id",
                        &vlan_id.to_string(),
                    ]),
                    other => return Err(format!("the Python agent creates no {other:?} link")),
                }
            }
            Op::SetLinkUp { name } => ip(&["link", "set", name.as_str(), "up"]),
            Op::SetMaster { name, master } => {
                ip(&["link", "set", name.as_str(), "master", master.as_str()])
            }
            Op::SetLinkMac { name, mac } => {
                ip(&["link", "set", name.as_str(), "address", &mac.to_string()])
            }
            Op::AddAddress(a) => ip(&["addr", "add", &a.net.to_string(), "dev", a.dev.as_str()]),
            // No priority: pyroute2's rule request carries none, so the
            // kernel picks one.
            Op::AddRule { v6, dst, table, .. } => {
                let mut args = fam(*v6);
                args.extend(
                    [
                        "rule",
                        "add",
                        "to",
                        &dst.to_string(),
                        "table",
                        &table.to_string(),
                    ]
                    .map(str::to_string),
                );
                PythonWrite::Ip(args)
            }
            Op::ReplaceRoute { route, .. } => {
                use obgp_netmodel::RouteType;
                let mut args = fam(route.v6);
                args.extend(["route", "replace"].map(str::to_string));
                match route.kind {
                    RouteType::Unicast => {}
                    RouteType::Unreachable => args.push("unreachable".into()),
                    RouteType::Blackhole => args.push("blackhole".into()),
                    RouteType::Local => args.push("local".into()),
                }
                args.push(route.dst.map_or("default".into(), |d| d.to_string()));
                if let Some(via) = route.via {
                    args.extend(["via".into(), via.to_string()]);
                }
                if let Some(dev) = &route.dev {
                    args.extend(["dev".into(), dev.to_string()]);
                }
                if let Some(m) = route.metric {
                    args.extend(["metric".into(), m.to_string()]);
                }
                args.extend([
                    "table".into(),
                    route.table.to_string(),
                    "proto".into(),
                    route.proto.to_string(),
                ]);
                if !route.v6 {
                    args.extend(["scope".into(), route.scope.to_string()]);
                }
                PythonWrite::Ip(args)
            }
            Op::ReplaceNeighbour(n) => {
                let mut args = fam(n.dst.is_ipv6());
                args.extend(
                    [
                        "neigh",
                        "replace",
                        &n.dst.to_string(),
                        "lladdr",
                        &n.lladdr.to_string(),
                        "dev",
                        n.dev.as_str(),
                        "nud",
                        "permanent",
                    ]
                    .map(str::to_string),
                );
                PythonWrite::Ip(args)
            }
            Op::AddProxyNeighbour(p) => {
                let mut args = fam(p.dst.is_ipv6());
                args.extend(
                    [
                        "neigh",
                        "add",
                        "proxy",
                        &p.dst.to_string(),
                        "dev",
                        p.dev.as_str(),
                    ]
                    .map(str::to_string),
                );
                PythonWrite::Ip(args)
            }
            Op::SetSysctl(s) => PythonWrite::Sysctl {
                key: s.key.clone(),
                value: s.value.clone(),
            },
            Op::AddRtTable { number, name } => PythonWrite::RtTable(format!("{number} {name}")),
            Op::AddFlow { bridge, flow } => PythonWrite::Flow {
                bridge: bridge.to_string(),
                flow: flow.add_flow_arg(),
            },
            Op::ApplyFrr { config } => PythonWrite::Frr(config.clone()),
            other @ (Op::DelLink { .. }
            | Op::DelAddress(_)
            | Op::DelRule { .. }
            | Op::DelRoute { .. }
            | Op::DelNeighbour(_)
            | Op::DelProxyNeighbour(_)
            | Op::DelBridgeFdb(_)
            | Op::DelFlow { .. }
            | Op::RemoveFrr { .. }) => {
                return Err(format!(
                    "a plan against an empty node deletes nothing, but it has: {other}"
                ))
            }
            other @ (Op::SetBridgePort { .. }
            | Op::AddOvsPort(_)
            | Op::DelOvsPort { .. }
            | Op::AddFdb(_)
            | Op::AddBridgeFdb(_)) => {
                return Err(format!(
                    "the Python-configured node of these tests has no EVPN: {other}"
                ))
            }
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use obgp_plan::{Group, Step};

    fn plan_of(ops: Vec<Op>) -> Plan {
        Plan {
            steps: ops
                .into_iter()
                .map(|op| Step {
                    group: Group::Wire,
                    class: None,
                    op,
                })
                .collect(),
            ..Plan::default()
        }
    }

    #[test]
    fn rules_are_written_without_a_priority_as_pyroute2_does() {
        let w = python_writes(&plan_of(vec![Op::AddRule {
            v6: true,
            dst: "2001:db8::10/128".parse().unwrap(),
            table: 200,
            table_name: Some("br-ex".into()),
            priority: Some(1000),
        }]))
        .unwrap();
        assert_eq!(
            w,
            vec![ip(&[
                "-6",
                "rule",
                "add",
                "to",
                "2001:db8::10/128",
                "table",
                "200"
            ])]
        );
    }

    #[test]
    fn rt_tables_line_is_number_space_name() {
        let w = python_writes(&plan_of(vec![Op::AddRtTable {
            number: 200,
            name: obgp_netmodel::DevName::new("br-ex").unwrap(),
        }]))
        .unwrap();
        assert_eq!(w, vec![PythonWrite::RtTable("200 br-ex".into())]);
    }

    #[test]
    fn a_deletion_is_refused_with_the_op() {
        let err = python_writes(&plan_of(vec![Op::DelAddress(obgp_netmodel::Address {
            dev: obgp_netmodel::DevName::new("bgp-nic").unwrap(),
            net: "172.24.4.10/32".parse().unwrap(),
        })]))
        .unwrap_err();
        assert!(err.contains("172.24.4.10/32"), "{err}");
    }
}
