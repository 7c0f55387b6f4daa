//! The replay's node: the simulated kernel and OVS ([`SimulatedNode`]) and
//! FRR's running configuration, read before each plan the way the daemon
//! reads it.
//!
//! The simulated node alone only knows that some text was applied once
//! (`FrrState::has_our_config` stays true after the first `vtysh -f`), so a
//! desired FRR text that changed between steps would look applied: the
//! replay would neither apply it nor show the re-application a real node
//! gets. Here FRR keeps the blocks of every text applied, less the blocks a
//! removal text (`no vrf X`, `no router bgp N vrf X`, `no interface X`)
//! drops, and "FRR holds our text" is judged by the daemon's own rule
//! ([`obgp_node::frr_check_lines`]: every `router bgp`, `import vrf` and
//! `redistribute` line, with the blocks it sits in, is in the running
//! configuration).

use obgp_plan::{Actual, Op, Plan, SimulatedNode};

/// FRR's running configuration as top-level blocks: a line at column 0
/// and the indented lines under it.
#[derive(Debug, Default)]
pub(crate) struct RunningFrr {
    blocks: Vec<(String, Vec<String>)>,
}

impl RunningFrr {
    /// `vtysh -f` of a text that adds configuration.
    pub fn apply(&mut self, text: &str) {
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            if line.starts_with([' ', '\t']) {
                match self.blocks.last_mut() {
                    Some((_, body)) => body.push(line.to_string()),
                    None => self.blocks.push((line.trim().to_string(), Vec::new())),
                }
            } else {
                self.blocks.push((line.trim_end().to_string(), Vec::new()));
            }
        }
    }

    /// `vtysh -f` of a removal text: each top-level `no X` drops the blocks
    /// headed `X`.
    pub fn remove(&mut self, text: &str) {
        for line in text.lines().filter(|l| !l.starts_with([' ', '\t'])) {
            if let Some(head) = line.trim_end().strip_prefix("no ") {
                self.blocks.retain(|(h, _)| h != head);
            }
        }
    }

    /// The running configuration as `show running-config` prints it.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (head, body) in &self.blocks {
            out.push_str(head);
            out.push('\n');
            for l in body {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }

    /// Whether the running configuration holds `desired`, by the daemon's rule.
    pub fn holds(&self, desired: &str) -> bool {
        let running = obgp_node::frr_check_lines(&self.text());
        obgp_node::frr_check_lines(desired)
            .iter()
            .all(|l| running.contains(l))
    }
}

/// The node a replay plans against and applies to.
pub(crate) struct ReplayNode {
    pub sim: SimulatedNode,
    pub frr: RunningFrr,
}

impl ReplayNode {
    pub fn new(initial: Actual) -> ReplayNode {
        ReplayNode {
            sim: SimulatedNode::new(initial),
            frr: RunningFrr::default(),
        }
    }

    /// The node as the daemon observes it when it wants `desired_frr`.
    pub fn observe_wanting(&mut self, desired_frr: Option<&str>) -> &Actual {
        let held = desired_frr.is_some_and(|t| self.frr.holds(t));
        self.sim.actual.frr.has_our_config = held;
        &self.sim.actual
    }

    /// Applies `plan`'s ops; returns the FRR texts it gave vtysh, in order.
    pub fn apply(&mut self, plan: &Plan) -> Vec<String> {
        let mut texts = Vec::new();
        for op in plan.ops() {
            match op {
                Op::ApplyFrr { config } => {
                    self.frr.apply(config);
                    texts.push(config.clone());
                }
                Op::RemoveFrr { config } => {
                    self.frr.remove(config);
                    texts.push(config.clone());
                }
                _ => {}
            }
        }
        self.sim.apply_all(plan.ops());
        texts
    }
}

/// The replayed node as the pipeline's port: observed for the FRR text the
/// run wants, as the daemon's observer reads FRR's running configuration.
impl obgp_pipeline::ObserveNode for ReplayNode {
    type Observed = Actual;
    type Error = std::convert::Infallible;

    fn observe(
        &mut self,
        wanted: obgp_pipeline::ObserveFor<'_>,
    ) -> impl std::future::Future<Output = Result<Actual, Self::Error>> {
        let actual = self
            .observe_wanting(wanted.node.frr_config.as_deref())
            .clone();
        std::future::ready(Ok(actual))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEAK: &str = "router bgp 64999\n  address-family ipv4 unicast\n    import vrf bgp-vrf\n  exit-address-family\n\nrouter bgp 64999 vrf bgp-vrf\n  address-family ipv4 unicast\n    redistribute connected\n  exit-address-family\n";

    #[test]
    fn a_changed_text_is_not_held_until_applied() {
        let mut frr = RunningFrr::default();
        assert!(!frr.holds(LEAK));
        frr.apply(LEAK);
        assert!(frr.holds(LEAK));
        // The tenant method now asks for kernel routes too.
        let kernel = LEAK.replace(
            "    redistribute connected\n",
            "    redistribute connected\n    redistribute kernel\n",
        );
        assert!(!frr.holds(&kernel));
        frr.apply(&kernel);
        assert!(frr.holds(&kernel) && frr.holds(LEAK));
    }

    #[test]
    fn del_vrf_drops_the_vrf_blocks_and_keeps_the_others() {
        let add = |n: u32| {
            format!(
                "vrf vrf-{n}\n  vni {n}\nexit-vrf\nrouter bgp 64999 vrf vrf-{n}\n  address-family ipv4 unicast\n    redistribute connected\n  exit-address-family\n"
            )
        };
        let mut frr = RunningFrr::default();
        frr.apply(&add(1001));
        frr.apply(&add(1002));
        frr.remove(
            "no vrf vrf-1001\nno interface veth-vrf-1001\nno router bgp 64999 vrf vrf-1001\n",
        );
        assert!(!frr.holds(&add(1001)), "{}", frr.text());
        assert!(frr.holds(&add(1002)), "{}", frr.text());
    }
}
