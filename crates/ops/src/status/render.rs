//! The text rendering of a [`Status`]: health first, then one line per
//! exposed IP or prefix with its rows, wiring and what the node lacks.

use std::fmt::Write;

use super::{ComputedBy, Exposure, Health, RowInfo, Status, Wiring};

/// `status --format text`.
pub fn text(s: &Status) -> String {
    let mut out = String::new();
    let origin = match s.origin {
        ComputedBy::Daemon => "from the running daemon",
        ComputedBy::Direct => "computed by this command (no daemon answered)",
        ComputedBy::Offline => "computed offline from files",
    };
    let _ = writeln!(
        out,
        "ovn-bgp-agent status ({origin}): driver {}, exposing_method {}, chassis {}",
        s.driver,
        s.exposing_method,
        if s.chassis.is_empty() {
            "-"
        } else {
            &s.chassis
        }
    );
    health(&mut out, &s.health);
    let held = s.exposed.iter().filter(|e| e.held).count();
    let _ = writeln!(
        out,
        "\nexposed: {} IP(s) and prefix(es), {held} held by the node",
        s.exposed.len()
    );
    if let Some(f) = &s.fabric {
        let _ = write!(
            out,
            "FRR's tables read in {:.2} s; peers: {}",
            f.took_s,
            if f.peers.is_empty() {
                "none established".to_string()
            } else {
                f.peers.join(", ")
            }
        );
        for e in &f.errors {
            let _ = write!(out, "; unread: {e}");
        }
        out.push('\n');
    }
    for e in &s.exposed {
        exposure(&mut out, e);
    }
    if !s.vnis.is_empty() {
        let _ = writeln!(out, "\nVNIs:");
        for v in &s.vnis {
            let _ = writeln!(
                out,
                "  {:<8} {} {} {} local {} {}",
                v.vni,
                v.vrf,
                v.bridge,
                v.vxlan,
                v.local_ip,
                if v.held { "held" } else { "NOT HELD" }
            );
            for r in &v.rows {
                let _ = writeln!(out, "           row {}", row(r));
            }
            for m in &v.missing {
                let _ = writeln!(out, "           missing {m}");
            }
        }
    }
    if !s.notes.is_empty() {
        let _ = writeln!(out, "\nnot exposed (notes of the desired state):");
        for n in &s.notes {
            let _ = writeln!(out, "  {n}");
        }
    }
    out
}

fn health(out: &mut String, h: &Health) {
    for db in &h.databases {
        let state = match &db.connected_to {
            Some(r) => format!("connected to {r}"),
            None => "DISCONNECTED".into(),
        };
        let _ = write!(
            out,
            "  database {:<15} {state}, {} sync(s)",
            db.database, db.syncs
        );
        if let Some(t) = db.last_update_unix {
            let _ = write!(out, ", last update at {t:.0} (Unix time)");
        }
        out.push('\n');
    }
    match &h.last_reconcile {
        Some(r) => {
            let outcome = if r.converged {
                "converged".to_string()
            } else {
                format!(
                    "did not converge: {}",
                    r.why.as_deref().unwrap_or("unknown")
                )
            };
            let _ = writeln!(
                out,
                "  last reconcile   {:.1} s ago ({}): {outcome}",
                r.ago_s, r.reasons
            );
        }
        None => {
            let _ = writeln!(out, "  last reconcile   none");
        }
    }
    if let Some(s) = h.reconcile_running_s {
        let _ = writeln!(out, "  a reconcile has run for {s:.1} s");
    }
    match h.pending_ops {
        Some(n) => {
            let _ = writeln!(out, "  pending plan     {n} op(s)");
        }
        None => {
            let _ = writeln!(out, "  pending plan     not computed yet");
        }
    }
    for u in &h.unread {
        let _ = writeln!(out, "  unread           {u}");
    }
    if let Some(f) = &h.frr_last_text {
        let text = if f.removal { "removal" } else { "text" };
        let _ = write!(
            out,
            "  FRR last {text:<7} {} {:.1} s ago",
            f.outcome, f.ago_s
        );
        if let Some(e) = &f.error {
            let _ = write!(out, ": {e}");
        }
        match f.last_applied_ago_s {
            Some(a) if f.error.is_some() => {
                let _ = write!(out, " (FRR last took a text {a:.1} s ago)");
            }
            None => out.push_str(" (FRR took no text since the start)"),
            Some(_) => {}
        }
        out.push('\n');
    }
    if let Some(b) = &h.bgp_sessions {
        bgp_sessions(out, b);
    }
    for (name, p) in [("readyz", &h.ready), ("healthz", &h.healthy)] {
        if let Some(p) = p {
            let code = if p.ok { 200 } else { 503 };
            let _ = writeln!(out, "  /{name:<15} {code} {}", p.reason);
        }
    }
}

/// The sessions, one line each: peer, VRF, family, state (with its
/// uptime) and, when established, the prefix counts.
fn bgp_sessions(out: &mut String, b: &super::BgpSessions) {
    let Some(sessions) = &b.sessions else {
        let _ = writeln!(
            out,
            "  BGP sessions     unknown: the read {:.1} s ago failed: {}",
            b.read_ago_s,
            b.error.as_deref().unwrap_or("no answer")
        );
        return;
    };
    let _ = writeln!(
        out,
        "  BGP sessions     {} (read {:.1} s ago)",
        sessions.len(),
        b.read_ago_s
    );
    for s in sessions {
        let _ = write!(
            out,
            "    {:<24} {:<10} {:<12} {}",
            s.peer, s.vrf, s.family, s.state
        );
        if let Some(up) = s.uptime_s {
            let _ = write!(out, " {}", duration(up));
        }
        if s.established() {
            let n = |v: Option<u64>| v.map_or("?".to_string(), |n| n.to_string());
            let _ = write!(
                out,
                ", sent {}, received {}",
                n(s.prefixes_sent),
                n(s.prefixes_received)
            );
        }
        out.push('\n');
    }
}

fn exposure(out: &mut String, e: &Exposure) {
    let kind = serde_json::to_value(e.kind)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "  {:<24} {:<9} {:<8} {}",
        e.prefix.to_string(),
        kind,
        if e.held { "held" } else { "NOT HELD" },
        wiring(&e.wiring)
    );
    for r in &e.rows {
        let _ = writeln!(out, "      row {}", row(r));
    }
    for m in &e.missing {
        let _ = writeln!(out, "      missing {m}");
    }
    if let Some(f) = &e.frr {
        let table = match (&f.evpn_route, f.in_table) {
            (None, true) => "in its table".to_string(),
            (None, false) => "NOT in its table".to_string(),
            (Some(r), true) => format!("has its {r} in l2vpn evpn"),
            (Some(r), false) => format!("has NOT its {r} in l2vpn evpn"),
        };
        match f.announced_to.as_slice() {
            [] => {
                let _ = writeln!(out, "      FRR {table}, announced to no peer");
            }
            peers => {
                let _ = writeln!(out, "      FRR {table}, announced to {}", peers.join(", "));
            }
        }
    }
}

fn wiring(w: &Wiring) -> String {
    let mut parts = Vec::new();
    if let Some(b) = &w.bridge {
        parts.push(format!("bridge {b}"));
    }
    if let Some(v) = w.vlan {
        parts.push(format!("vlan {v}"));
    }
    if let Some(d) = &w.dev {
        parts.push(format!("dev {d}"));
    }
    if let Some(t) = &w.table {
        match w.table_id {
            Some(id) if id.to_string() != *t => parts.push(format!("table {t} ({id})")),
            Some(_) => parts.push(format!("table {t}")),
            None => parts.push(format!("table {t} (no number yet)")),
        }
    }
    if let Some(v) = &w.via {
        parts.push(format!("via {v}"));
    }
    if let Some(v) = &w.vrf {
        parts.push(format!("vrf {v}"));
    }
    if let Some(m) = &w.method {
        parts.push(format!("method {m}"));
    }
    parts.join(", ")
}

fn row(r: &RowInfo) -> String {
    let mut s = format!("{} {}", r.table, r.uuid);
    if let Some(n) = &r.name {
        let _ = write!(s, " {n}");
    }
    for (k, v) in &r.neutron {
        let _ = write!(s, " {k}={v}");
    }
    if !r.found {
        s.push_str(" (not in the snapshot)");
    }
    s
}

/// `3h12m`, `4m05s`, `12s`: a session's uptime as operators read it.
pub(crate) fn duration(s: f64) -> String {
    let s = s.max(0.0) as u64;
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}
