//! The L2 VNIs' `vni <n>` blocks (`exposing_method = l2vni`) as FRR holds
//! them: read back from the running configuration, and the text that
//! makes a block what the agent wants or removes it.
//!
//! FRR's `vtysh -f` only adds: a route target that an annotation no longer
//! lists stays in the block until a `no route-target ...` line removes it,
//! and the block of a VNI nothing wants stays until `no vni <n>`. FRR 8.4
//! prints a block under the default instance as
//!
//! ```text
//! router bgp 64999
//!  address-family l2vpn evpn
//!   vni 2001
//!    rd 64512:2001
//!    route-target import 64512:1
//!    route-target export 64512:1
//!   exit-vni
//!  exit-address-family
//! exit
//! ```
//!
//! (newer releases may print `route-target both X` for a target in both
//! lists). Values are parsed into [`RouteDistinguisher`]s before they can
//! reach a removal text; a line that does not parse is not the agent's
//! and is left alone.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Asn, L2Vni, RouteDistinguisher, RouteTarget};

/// What one `vni <n>` block holds: its RD and its route targets by
/// direction (a target of `:rt` is in both sets).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct L2VniConfig {
    #[serde(default, with = "opt_rd")]
    pub rd: Option<RouteDistinguisher>,
    #[serde(default, with = "rd_set")]
    pub import: BTreeSet<RouteTarget>,
    #[serde(default, with = "rd_set")]
    pub export: BTreeSet<RouteTarget>,
}

impl L2VniConfig {
    /// No RD and no target: the VNI needs no block (FRR derives both).
    pub fn is_empty(&self) -> bool {
        self.rd.is_none() && self.import.is_empty() && self.export.is_empty()
    }

    /// What `self` (a block FRR holds) has that `want` lacks: the lines a
    /// `no` removes. An RD that `want` replaces is not listed (setting
    /// the new one replaces it).
    pub fn surplus_over(&self, want: &L2VniConfig) -> L2VniConfig {
        L2VniConfig {
            rd: self.rd.filter(|_| want.rd.is_none()),
            import: self.import.difference(&want.import).copied().collect(),
            export: self.export.difference(&want.export).copied().collect(),
        }
    }
}

impl L2Vni {
    /// The block's content, as FRR will print it back.
    pub fn config(&self) -> L2VniConfig {
        let both = self.route_targets.iter();
        L2VniConfig {
            rd: self.rd,
            import: both.clone().chain(&self.import_targets).copied().collect(),
            export: both.chain(&self.export_targets).copied().collect(),
        }
    }
}

/// The L2 VNI blocks of a running configuration (or of a text the agent
/// applied), and the AS of the default instance that holds them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct L2Running {
    /// The AS of `router bgp <as>` without `vrf`.
    pub asn: Option<String>,
    pub vnis: BTreeMap<u32, L2VniConfig>,
}

/// Reads the `vni <n>` blocks of the default instance's `address-family
/// l2vpn evpn` out of `show running-config` text. The structure is told by
/// keywords, not indentation, so the agent's own texts (two-space steps)
/// read the same as FRR's (one-space steps).
pub fn l2_vnis_of_running_config(text: &str) -> L2Running {
    #[derive(PartialEq)]
    enum In {
        Other,
        DefaultBgp,
        L2vpnEvpn,
        Vni(u32),
    }
    let mut state = In::Other;
    let mut out = L2Running::default();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if !line.starts_with([' ', '\t']) {
            state = In::Other;
            if let ["router", "bgp", asn] = words.as_slice() {
                out.asn.get_or_insert_with(|| asn.to_string());
                state = In::DefaultBgp;
            }
            continue;
        }
        state = match (state, words.as_slice()) {
            (In::DefaultBgp, ["address-family", "l2vpn", "evpn"]) => In::L2vpnEvpn,
            (In::L2vpnEvpn, ["exit-address-family"]) => In::DefaultBgp,
            (In::L2vpnEvpn, ["vni", n]) => match n.parse::<u32>() {
                Ok(vni) => {
                    out.vnis.entry(vni).or_default();
                    In::Vni(vni)
                }
                Err(_) => In::L2vpnEvpn,
            },
            (In::Vni(_), ["exit-vni"]) => In::L2vpnEvpn,
            (In::Vni(vni), words) => {
                if let Some(block) = out.vnis.get_mut(&vni) {
                    read_block_line(block, words);
                }
                In::Vni(vni)
            }
            (s, _) => s,
        };
    }
    out
}

/// One line inside a `vni` block: `rd X`, `route-target import|export|both X`.
fn read_block_line(block: &mut L2VniConfig, words: &[&str]) {
    match words {
        ["rd", rd] => block.rd = rd.parse().ok(),
        ["route-target", dir, rt] => {
            let Ok(rt) = rt.parse::<RouteTarget>() else {
                return;
            };
            if matches!(*dir, "import" | "both") {
                block.import.insert(rt);
            }
            if matches!(*dir, "export" | "both") {
                block.export.insert(rt);
            }
        }
        _ => {}
    }
}

/// What a removal text does to one VNI's block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum L2VniRemoval {
    /// `no vni <n>`: the whole block goes (zebra's VNI, if any, stays
    /// announced with FRR's automatic RD and targets).
    Block(u32),
    /// `no rd X` / `no route-target import|export X` inside the block.
    Lines { vni: u32, lines: L2VniConfig },
}

/// The text that applies `removals` under the default instance `asn`.
pub fn l2_vni_removal(asn: &Asn, removals: &[L2VniRemoval]) -> String {
    let mut t = format!("\nrouter bgp {asn}\n  address-family l2vpn evpn\n");
    for r in removals {
        match r {
            L2VniRemoval::Block(vni) => {
                let _ = writeln!(t, "    no vni {vni}");
            }
            L2VniRemoval::Lines { vni, lines } => {
                let _ = writeln!(t, "    vni {vni}");
                if let Some(rd) = &lines.rd {
                    let _ = writeln!(t, "      no rd {rd}");
                }
                for rt in &lines.import {
                    let _ = writeln!(t, "      no route-target import {rt}");
                }
                for rt in &lines.export {
                    let _ = writeln!(t, "      no route-target export {rt}");
                }
                t.push_str("    exit-vni\n");
            }
        }
    }
    t.push_str("  exit-address-family\n");
    t
}

/// Applies a removal text ([`l2_vni_removal`]) to blocks read before it:
/// what FRR holds after `vtysh -f` ran it.
pub fn forget_l2_vni_removal(text: &str, vnis: &mut BTreeMap<u32, L2VniConfig>) {
    let mut current = None;
    for line in text.lines() {
        match line.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["no", "vni", n] => {
                if let Ok(vni) = n.parse::<u32>() {
                    vnis.remove(&vni);
                }
            }
            ["vni", n] => current = n.parse::<u32>().ok(),
            ["exit-vni"] => current = None,
            ["no", rest @ ..] => {
                let Some(block) = current.and_then(|vni| vnis.get_mut(&vni)) else {
                    continue;
                };
                let mut gone = L2VniConfig::default();
                read_block_line(&mut gone, rest);
                if gone.rd.is_some() && gone.rd == block.rd {
                    block.rd = None;
                }
                block.import.retain(|rt| !gone.import.contains(rt));
                block.export.retain(|rt| !gone.export.contains(rt));
            }
            _ => {}
        }
    }
}

/// Route distinguishers and targets travel in JSON as FRR prints them.
mod opt_rd {
    use super::*;

    pub fn serialize<S: Serializer>(
        v: &Option<RouteDistinguisher>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        v.map(|rd| rd.to_string()).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<RouteDistinguisher>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|s| s.parse().map_err(serde::de::Error::custom))
            .transpose()
    }
}

mod rd_set {
    use super::*;

    pub fn serialize<S: Serializer>(v: &BTreeSet<RouteTarget>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|rt| rt.to_string()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeSet<RouteTarget>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|s| s.parse().map_err(serde::de::Error::custom))
            .collect()
    }
}

#[cfg(test)]
mod tests;
