//! Compares two node states by the scenarios' rules
//! (`fixtures/conformance/scenarios/README.md`, "How to compare"): per-bridge
//! tables by bridge name, lists as sets, rule priorities loosely (only the
//! built-in rules' priorities count), generated MACs ignored.

use std::collections::BTreeSet;

use crate::actual::Actual;

/// A table's name for comparison: its rt_tables name, else its number.
fn table_label(a: &Actual, table: u32) -> String {
    match a.rt_tables.name_of(table) {
        Some(n) if !matches!(table, 0 | 253..=255) => n.to_string(),
        _ => format!("#{table}"),
    }
}

/// Kinds whose MAC the kernel (or the model) makes up.
fn generated_mac(kind: &str) -> bool {
    matches!(kind, "vrf" | "dummy" | "veth" | "vxlan" | "bridge" | "ifb")
}

/// Every fact of a node state as one comparable line, in the vocabulary the
/// desired-state tests and `fixtures/conformance/deviations-scenarios.json`
/// use (`addr DEV NET`, `rule DST table=NAME`, `neigh DEV IP MAC`, ...).
pub fn facts(a: &Actual) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (name, l) in &a.links {
        let state = if l.up { "up" } else { "down" };
        let line = match l.kind.as_str() {
            "vrf" => format!(
                "link {name} vrf table={} {state}",
                l.vrf_table.map(|t| t.to_string()).unwrap_or("-".into())
            ),
            "vlan" => format!(
                "link {name} vlan parent={} id={} {state}",
                l.parent
                    .as_ref()
                    .map(|p| p.to_string())
                    .unwrap_or("-".into()),
                l.vlan_id.map(|v| v.to_string()).unwrap_or("-".into())
            ),
            kind => {
                let master = l
                    .master
                    .as_ref()
                    .map(|m| m.to_string())
                    .unwrap_or("-".into());
                let mac = if generated_mac(kind) {
                    String::new()
                } else {
                    format!(
                        " mac={}",
                        l.mac.map(|m| m.to_string()).unwrap_or("-".into())
                    )
                };
                format!("link {name} {kind} master={master} {state}{mac}")
            }
        };
        out.insert(line);
    }
    for ad in &a.addresses {
        out.insert(format!("addr {} {}", ad.dev, ad.net));
    }
    for r in &a.rules {
        let line = match r.dst {
            Some(d) => format!("rule {d} table={}", table_label(a, r.table)),
            None => format!(
                "rule {} all table={} pref={}",
                if r.v6 { "inet6" } else { "inet" },
                table_label(a, r.table),
                r.priority
            ),
        };
        out.insert(line);
    }
    for r in &a.routes {
        let mut line = format!(
            "route table={} {} {} dev={} via={} proto={} scope={} type={}",
            table_label(a, r.table),
            if r.v6 { "inet6" } else { "inet" },
            r.dst.map(|d| d.to_string()).unwrap_or("default".into()),
            r.dev.as_ref().map(|d| d.to_string()).unwrap_or("-".into()),
            r.via.map(|v| v.to_string()).unwrap_or("-".into()),
            r.proto,
            r.scope,
            crate::actual::state::route_type_name(r.kind),
        );
        if let Some(m) = r.metric {
            line.push_str(&format!(" metric={m}"));
        }
        out.insert(line);
    }
    for n in &a.neighbours {
        out.insert(format!("neigh {} {} {}", n.dev, n.dst, n.lladdr));
    }
    for p in &a.proxy_neighbours {
        out.insert(format!("proxy {} {}", p.dev, p.dst));
    }
    for (k, v) in &a.sysctls {
        out.insert(format!("sysctl {k}={v}"));
    }
    for (n, name) in a.rt_tables.entries() {
        if !matches!(n, 0 | 253..=255) {
            out.insert(format!("rt_tables {name}"));
        }
    }
    for (br, b) in &a.bridges {
        for (port, ofport) in &b.ports {
            out.insert(format!("ovs-port {br} {port}={ofport}"));
        }
        for f in &b.flows {
            out.insert(format!("flow {br} {}", f.add_flow_arg()));
        }
    }
    out
}

/// The differences between the recorded node `expected` and our node `got`,
/// one line each: `on node, not desired: X` (the recorded node has X, ours
/// does not) and `desired, not on node: X` (ours has X, the recorded node
/// does not); empty when they agree.
pub fn differences(expected: &Actual, got: &Actual) -> Vec<String> {
    let want = facts(expected);
    let have = facts(got);
    let mut out: Vec<String> = want
        .difference(&have)
        .map(|l| format!("on node, not desired: {l}"))
        .collect();
    out.extend(
        have.difference(&want)
            .map(|l| format!("desired, not on node: {l}")),
    );
    out
}
