//! Compares two node states by the scenarios' rules
//! (`fixtures/conformance/scenarios/README.md`, "How to compare"): per-bridge
//! tables by bridge name, lists as sets, rule priorities loosely (only the
//! built-in rules' priorities count), generated MACs ignored.

use std::collections::{BTreeMap, BTreeSet};

use crate::actual::Actual;
use crate::op::route_text;

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

/// Every fact of a node state, as comparable lines, per section.
fn facts(a: &Actual) -> BTreeMap<&'static str, BTreeSet<String>> {
    let mut out: BTreeMap<&'static str, BTreeSet<String>> = BTreeMap::new();
    let mut put = |section, line: String| {
        out.entry(section).or_default().insert(line);
    };
    for (name, l) in &a.links {
        let mac = if generated_mac(&l.kind) {
            String::new()
        } else {
            format!(" mac {}", l.mac.map(|m| m.to_string()).unwrap_or_default())
        };
        put(
            "link",
            format!(
                "{name} type {} {}{}{}{}{}{mac}",
                l.kind,
                if l.up { "up" } else { "down" },
                l.master
                    .as_ref()
                    .map(|m| format!(" master {m}"))
                    .unwrap_or_default(),
                l.parent
                    .as_ref()
                    .map(|m| format!(" link {m}"))
                    .unwrap_or_default(),
                l.vlan_id.map(|v| format!(" vlan {v}")).unwrap_or_default(),
                l.vrf_table
                    .map(|v| format!(" table {v}"))
                    .unwrap_or_default(),
            ),
        );
    }
    for ad in &a.addresses {
        put("address", format!("{} dev {}", ad.net, ad.dev));
    }
    for r in &a.rules {
        let fam = if r.v6 { "inet6" } else { "inet" };
        let line = match r.dst {
            Some(d) => format!("{fam} to {d} lookup {}", table_label(a, r.table)),
            None => format!(
                "{fam} pref {} lookup {}",
                r.priority,
                table_label(a, r.table)
            ),
        };
        put("rule", line);
    }
    for r in &a.routes {
        let fam = if r.v6 { "inet6 " } else { "" };
        put(
            "route",
            format!("{fam}{} table {}", route_text(r), table_label(a, r.table)),
        );
    }
    for n in &a.neighbours {
        put(
            "neighbour",
            format!("{} lladdr {} dev {}", n.dst, n.lladdr, n.dev),
        );
    }
    for p in &a.proxy_neighbours {
        put("neighbour", format!("proxy {} dev {}", p.dst, p.dev));
    }
    for (k, v) in &a.sysctls {
        put("sysctl", format!("{k}={v}"));
    }
    for (n, name) in a.rt_tables.entries() {
        if !matches!(n, 0 | 253..=255) {
            put("rt_tables", name.to_string());
        }
    }
    for (br, b) in &a.bridges {
        for (port, ofport) in &b.ports {
            put("ovs port", format!("{br} {port} ofport {ofport}"));
        }
        for f in &b.flows {
            put("flow", format!("{br} {}", f.add_flow_arg()));
        }
    }
    out
}

/// The differences between `expected` and `got`, one line each
/// (`missing route ...`, `unexpected rule ...`); empty when they agree.
pub fn differences(expected: &Actual, got: &Actual) -> Vec<String> {
    let want = facts(expected);
    let have = facts(got);
    let empty = BTreeSet::new();
    let sections: BTreeSet<&&str> = want.keys().chain(have.keys()).collect();
    let mut out = Vec::new();
    for s in sections {
        let w = want.get(*s).unwrap_or(&empty);
        let h = have.get(*s).unwrap_or(&empty);
        out.extend(w.difference(h).map(|l| format!("missing {s} {l}")));
        out.extend(h.difference(w).map(|l| format!("unexpected {s} {l}")));
    }
    out
}
