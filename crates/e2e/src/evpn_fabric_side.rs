//! The EVPN modes' fabric side as an operator reads it (issue 31): the
//! agent's `explain IP` ends with this node's EVPN route in FRR's `l2vpn
//! evpn` table and the peers FRR sent it to, and `status --format json`
//! gives the exposure `frr.in_table` and `frr.announced_to`. Checked
//! against the real agent, FRR and fabric of an [`EvpnBench`].

use anyhow::{ensure, Context, Result};
use serde_json::Value;

use crate::evpn::EvpnBench;

/// What the fabric side must say for one exposure.
pub struct ExpectedRoute<'a> {
    /// The exposure as `status` lists it (`172.24.4.10/32`).
    pub prefix: &'a str,
    /// `explain`'s route wording (`type-5 route 172.24.4.10/32`,
    /// `type-2 route fa:16:3e:11:11:11 172.24.4.10`).
    pub route: &'a str,
    pub rd: &'a str,
    /// The `l2vpn evpn` peer FRR must have sent it to.
    pub peer: &'a str,
}

/// Runs `explain IP` (when `explain` is `Some(IP)`) and `status --format
/// json` against the bench's running agent; fails with both answers and
/// the node's EVPN table unless each says the route is in FRR's table
/// and was announced to the peer. Returns explain's `FRR:` line.
pub fn check_announced(
    b: &EvpnBench,
    explain: Option<&str>,
    want: &ExpectedRoute<'_>,
) -> Result<String> {
    let evidence = || {
        format!(
            "--- node: show bgp l2vpn evpn route detail type macip|prefix json ---\n{}\n{}\n--- node: show bgp vrf all summary json ---\n{}",
            b.fabric
                .node
                .vtysh("show bgp l2vpn evpn route detail type macip json")
                .unwrap_or_else(|e| format!("{e:#}")),
            b.fabric
                .node
                .vtysh("show bgp l2vpn evpn route detail type prefix json")
                .unwrap_or_else(|e| format!("{e:#}")),
            b.fabric
                .node
                .vtysh("show bgp vrf all summary json")
                .unwrap_or_else(|e| format!("{e:#}")),
        )
    };
    let mut line = String::new();
    if let Some(ip) = explain {
        let answer = b.agent.run_ok(&["explain", ip])?;
        line = answer
            .lines()
            .find(|l| l.starts_with("FRR: "))
            .with_context(|| format!("explain {ip} has no FRR line:\n{answer}\n{}", evidence()))?
            .to_string();
        let in_table = format!(
            "its {} is in the l2vpn evpn table (rd {}",
            want.route, want.rd
        );
        let announced = format!("announced to {} (Established", want.peer);
        ensure!(
            line.contains(&in_table) && line.contains(&announced),
            "explain {ip}'s fabric side does not say {in_table:?} and {announced:?}:\n{answer}\n{}",
            evidence()
        );
    }
    let text = b.agent.run_ok(&["status", "--format", "json"])?;
    let status: Value =
        serde_json::from_str(&text).with_context(|| format!("status JSON: {text}"))?;
    let exposure = status["exposed"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["prefix"] == want.prefix)
        .with_context(|| format!("status lists no {}: {text}", want.prefix))?;
    let frr = &exposure["frr"];
    let announced_to: Vec<&str> = frr["announced_to"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    ensure!(
        frr["in_table"] == true
            && announced_to.contains(&want.peer)
            && frr["evpn_route"] == want.route,
        "status's {} has frr {frr} (fabric {}), not in_table with {} to {}\n{}",
        want.prefix,
        status["fabric"],
        want.route,
        want.peer,
        evidence()
    );
    Ok(line)
}
