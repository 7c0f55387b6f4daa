//! The FRR texts of a replay against every text the scenario records.
//!
//! Upstream gives vtysh one text per `vtysh -f` call: the VRF leak at
//! start, the EVPN drivers' add-vrf and ND texts at each sync, del-vrf at a
//! teardown. The rewrite applies its whole text (`DesiredNode::frr_config`,
//! the VNIs' add-vrf and ND texts joined) when FRR lacks it, and del-vrf
//! for a VRF no VNI wants. So the texts are compared by phase, as the
//! lines vtysh reads in that phase ([`frr_canonical`] of the texts in
//! order), not call by call:
//! - the first phase runs from `start` to the first `sync`: upstream's
//!   start wires the base and its first sync exposes, with OVSDB events
//!   off; the rewrite's first reconcile (at start) does both;
//! - every later step is a phase of its own;
//! - a recorded text identical to one already in effect (applied before,
//!   with no removal text since) is a re-application vtysh ignores, and is
//!   left out: upstream re-applies its texts on every sync, the rewrite
//!   applies a text only when FRR lacks it. The rewrite's texts are never
//!   left out: a repeated text is churn, and a difference.
//!
//! A phase where upstream applied a text and the rewrite none is a
//! difference, and so is the reverse.

use anyhow::bail;

use crate::scenario_file::Scenario;
use crate::verdict::frr_canonical;

/// The texts upstream gave vtysh at each step (`vtysh_config` calls), checked
/// against the scenario's flat `frr` list: every recorded text is in a step.
pub(crate) fn recorded(sc: &Scenario) -> anyhow::Result<Vec<Vec<String>>> {
    let per_step: Vec<Vec<String>> = sc
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            step.calls
                .iter()
                .filter(|c| c["kind"] == "frr" && c["op"] == "vtysh_config")
                .map(|c| match c["args"]["config"].as_str() {
                    Some(t) => Ok(t.to_string()),
                    None => bail!("step {i}: vtysh_config call without a config text: {c}"),
                })
                .collect()
        })
        .collect::<anyhow::Result<_>>()?;
    let flat: Vec<&String> = per_step.iter().flatten().collect();
    if flat.len() != sc.frr.len() || flat.iter().zip(&sc.frr).any(|(a, b)| *a != b) {
        bail!(
            "the scenario's frr list ({} text(s)) is not its steps' vtysh_config calls ({})",
            sc.frr.len(),
            flat.len()
        );
    }
    Ok(per_step)
}

/// The step ranges compared as one: `start` up to the first `sync`, then
/// each step alone.
pub(crate) fn phases(actions: &[&str]) -> Vec<(usize, usize)> {
    let first_sync = match actions.first() {
        Some(a) if a.starts_with("start") => actions.iter().position(|a| a.starts_with("sync")),
        _ => None,
    };
    let first_end = first_sync.unwrap_or(0);
    let mut out = Vec::new();
    if !actions.is_empty() {
        out.push((0, first_end));
    }
    out.extend((first_end + 1..actions.len()).map(|i| (i, i)));
    out
}

/// The label a phase's differences carry (the deviations' `step`).
pub(crate) fn label((first, last): (usize, usize)) -> String {
    if first == last {
        format!("frr {first}")
    } else {
        format!("frr {first}-{last}")
    }
}

/// Whether `lines` remove configuration: a top-level `no ...` line (del-vrf).
fn is_removal(lines: &[String]) -> bool {
    lines.iter().any(|l| l.starts_with("no "))
}

/// The recorded texts of each step without re-applications of a text
/// already in effect, as canonical lines.
pub(crate) fn without_reapplications(per_step: &[Vec<String>]) -> Vec<Vec<Vec<String>>> {
    let mut in_effect: Vec<Vec<String>> = Vec::new();
    per_step
        .iter()
        .map(|texts| {
            texts
                .iter()
                .map(|t| frr_canonical(t))
                .filter(|lines| {
                    if is_removal(lines) {
                        in_effect.clear();
                        true
                    } else if in_effect.contains(lines) {
                        false
                    } else {
                        in_effect.push(lines.clone());
                        true
                    }
                })
                .collect()
        })
        .collect()
}

/// The differences of each phase, labelled: `recorded` (canonical, from
/// [`without_reapplications`]) against the texts the rewrite applied at
/// each step (`produced`).
pub(crate) fn differences(
    phases: &[(usize, usize)],
    recorded: &[Vec<Vec<String>>],
    produced: &[Vec<String>],
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for &(first, last) in phases {
        let want: Vec<String> = (first..=last)
            .filter_map(|i| recorded.get(i))
            .flatten()
            .flatten()
            .cloned()
            .collect();
        let got: Vec<String> = (first..=last)
            .filter_map(|i| produced.get(i))
            .flatten()
            .flat_map(|t| frr_canonical(t))
            .collect();
        let diff = match (want.is_empty(), got.is_empty()) {
            _ if want == got => continue,
            (false, true) => {
                format!("frr text missing: upstream applied {want:?}, the rewrite nothing")
            }
            (true, false) => {
                format!("frr text not recorded: the rewrite applied {got:?}, upstream nothing")
            }
            _ => format!("frr text differs: want {want:?}, got {got:?}"),
        };
        out.push((label((first, last)), diff));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(per_step: &[&[&str]]) -> Vec<Vec<String>> {
        per_step
            .iter()
            .map(|s| s.iter().map(|t| t.to_string()).collect())
            .collect()
    }

    const ADD: &str = "vrf vrf-1\n  vni 1\nexit-vrf\n";
    const DEL: &str = "no vrf vrf-1\n";

    #[test]
    fn start_and_first_sync_are_one_phase_then_each_step_alone() {
        let p = phases(&["start", "sync", "ovn_update (x)", "sync (again)"]);
        assert_eq!(p, [(0, 1), (2, 2), (3, 3)]);
        assert_eq!(label(p[0]), "frr 0-1");
        assert_eq!(label(p[1]), "frr 2");
        // Without a start, every step is its own phase.
        assert_eq!(phases(&["sync", "sync"]), [(0, 0), (1, 1)]);
        assert_eq!(phases(&[]), []);
    }

    #[test]
    fn a_recorded_text_the_rewrite_did_not_apply_is_a_difference() {
        let rec = without_reapplications(&texts(&[&[ADD]]));
        let d = differences(&[(0, 0)], &rec, &texts(&[&[]]));
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].0, "frr 0");
        assert!(d[0].1.starts_with("frr text missing: "), "{d:?}");
    }

    #[test]
    fn a_text_upstream_did_not_record_is_a_difference() {
        let rec = without_reapplications(&texts(&[&[], &[]]));
        let d = differences(&[(0, 0), (1, 1)], &rec, &texts(&[&[], &[DEL]]));
        assert_eq!(
            d,
            [(
                "frr 1".to_string(),
                "frr text not recorded: the rewrite applied [\"no vrf vrf-1\"], upstream nothing"
                    .to_string()
            )]
        );
    }

    #[test]
    fn every_phase_is_compared_not_only_the_last() {
        // The first phase differs, the last agrees: still a difference.
        let rec = without_reapplications(&texts(&[&[ADD], &[DEL]]));
        let d = differences(
            &[(0, 0), (1, 1)],
            &rec,
            &texts(&[&["vrf vrf-2\n  vni 2\nexit-vrf\n"], &[DEL]]),
        );
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].0, "frr 0");
        assert!(d[0].1.starts_with("frr text differs: "), "{d:?}");
    }

    #[test]
    fn upstream_reapplying_an_unchanged_text_is_not_a_text_but_ours_is() {
        // Upstream: add at sync 1, again at sync 2, del-vrf, add again.
        let rec = without_reapplications(&texts(&[&[ADD], &[ADD], &[DEL], &[ADD]]));
        assert_eq!(rec[1], Vec::<Vec<String>>::new());
        assert_eq!(rec[3].len(), 1, "after a removal the text counts again");
        let phases = [(0, 0), (1, 1), (2, 2), (3, 3)];
        let ours = texts(&[&[ADD], &[], &[DEL], &[ADD]]);
        assert_eq!(differences(&phases, &rec, &ours), []);
        // The rewrite re-applying the same text is churn: a difference.
        let churn = texts(&[&[ADD], &[ADD], &[DEL], &[ADD]]);
        let d = differences(&phases, &rec, &churn);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].0, "frr 1");
    }

    #[test]
    fn texts_of_a_phase_compare_as_the_lines_vtysh_reads_in_order() {
        // Upstream's add-vrf and ND calls against the rewrite's one text.
        let nd = "interface vrfx\n ipv6 nd prefix 2001:db8::/64\nexit\n";
        let rec = without_reapplications(&texts(&[&[ADD, nd]]));
        let joined = format!("{ADD}{nd}");
        assert_eq!(differences(&[(0, 0)], &rec, &texts(&[&[&joined]])), []);
        // The same lines in another order are a difference.
        let swapped = format!("{nd}{ADD}");
        assert_eq!(
            differences(&[(0, 0)], &rec, &texts(&[&[&swapped]])).len(),
            1
        );
    }
}
