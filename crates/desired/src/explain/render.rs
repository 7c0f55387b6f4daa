//! The text form of an [`Explanation`]: one line per finding, the deciding
//! one first.

use std::fmt;

use super::{Explanation, Finding, RowInfo};

impl fmt::Display for RowInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(n) if n != &self.uuid => write!(f, "{} {} ({})", self.table, n, self.uuid),
            _ => write!(f, "{} {}", self.table, self.uuid),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::Exposed {
                ip,
                rule,
                source,
                via,
                through,
                detail,
                ..
            } => {
                write!(f, "exposed: {ip} as {}", rule.describe())?;
                if let Some(d) = detail {
                    write!(f, ", {d}")?;
                }
                write!(f, "; from {source}")?;
                if let Some(v) = via {
                    write!(f, " via {v}")?;
                }
                write!(f, "; {through}")
            }
            Finding::Covered {
                ip,
                subnet,
                router,
                bridge,
                announced,
            } => {
                write!(
                    f,
                    "covered: {ip} is in tenant subnet {subnet} of router {router}, routed through {bridge}"
                )?;
                if *announced {
                    write!(f, " and announced as the subnet (subnet method)")
                } else {
                    write!(f, " (not announced as a subnet: host method)")
                }
            }
            Finding::Routed {
                ip,
                subnet,
                via,
                rows,
                ..
            } => {
                write!(f, "routed: {ip} is in {subnet}, in the VRF table ")?;
                match via {
                    Some(v) => write!(f, "via gateway {v}")?,
                    None => write!(f, "on-link (a gateway's provider subnet)")?,
                }
                let rows: Vec<String> = rows.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    ", announced by redistribute kernel; from {}",
                    rows.join(", ")
                )
            }
            Finding::Prefix {
                prefix, what, rows, ..
            } => {
                write!(f, "prefix: {prefix} is a {what}")?;
                if !rows.is_empty() {
                    let rows: Vec<String> = rows.iter().map(ToString::to_string).collect();
                    write!(f, "; from {}", rows.join(", "))?;
                }
                Ok(())
            }
            Finding::NotExposed { ip, row, reason } => {
                write!(f, "not exposed: ")?;
                match (ip, row) {
                    (Some(ip), Some(row)) => write!(f, "{ip} of {row}: ")?,
                    (Some(ip), None) => write!(f, "{ip}: ")?,
                    (None, Some(row)) => write!(f, "{row}: ")?,
                    (None, None) => {}
                }
                write!(f, "{reason}")
            }
        }
    }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = match self.findings.first() {
            Some(Finding::Covered {
                subnet,
                announced: true,
                ..
            }) if !self
                .findings
                .iter()
                .any(|f| matches!(f, Finding::Exposed { .. })) =>
            {
                format!("reachable through subnet {subnet} announced from")
            }
            _ if self.exposed() => "exposed on".to_string(),
            _ => "not exposed on".to_string(),
        };
        writeln!(
            f,
            "{}: {verdict} this node ({}; hostname {}, system-id {})",
            self.query,
            self.driver,
            self.hostname.as_deref().unwrap_or("unknown"),
            self.system_id.as_deref().unwrap_or("unknown"),
        )?;
        for row in &self.rows {
            writeln!(f, "  row: {row}")?;
        }
        for finding in &self.findings {
            writeln!(f, "  {finding}")?;
        }
        if self.findings.is_empty() && self.query.contains('/') {
            writeln!(
                f,
                "  no tenant subnet, VRF route or EVPN route of this node is {}",
                self.query
            )?;
        } else if self.findings.is_empty() {
            match self.rows.is_empty() {
                true => writeln!(f, "  no OVN row carries it")?,
                false => writeln!(f, "  no decision of the driver concerns it")?,
            }
        }
        for reason in &self.node {
            writeln!(f, "  node: {reason}")?;
        }
        Ok(())
    }
}
