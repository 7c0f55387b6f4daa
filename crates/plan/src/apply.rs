//! The single writer: runs a [`Plan`] against a node ([`NodeIo`]: the real
//! kernel in obgp-node, or the [`SimulatedNode`]), one op at a time, logging and
//! counting each outcome. An announcement whose wiring failed is not made
//! (O1); a rule or route into a table whose rt_tables line could not be
//! written is not made either (the bridge is never wired into a table the
//! file does not name); any other failure leaves the rest of the plan
//! running, and the next reconcile retries.

use obgp_netmodel::IpNet;

use crate::op::Op;
use crate::plan::{Group, Plan};
use crate::simulated::SimulatedNode;

/// How a node took an op it did not refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// Made.
    Done,
    /// Handed to another writer that makes it later (the agent's command
    /// lane for `vtysh` and `ovs-ofctl`); its outcome is reported there.
    Queued,
}

/// A node the applier can write to.
#[allow(async_fn_in_trait)]
pub trait NodeIo {
    async fn apply_op(&mut self, op: &Op) -> Result<Applied, String>;
}

impl NodeIo for SimulatedNode {
    async fn apply_op(&mut self, op: &Op) -> Result<Applied, String> {
        let r = self.apply(op);
        self.log.push((op.clone(), r));
        r.map(|()| Applied::Done).map_err(|e| e.to_string())
    }
}

/// What applying a plan did.
#[derive(Debug, Default)]
pub struct ApplyReport {
    pub applied: usize,
    /// Ops handed to another writer ([`Applied::Queued`]).
    pub queued: Vec<Op>,
    /// Ops that failed, with the error.
    pub failed: Vec<(Op, String)>,
    /// Announcements not made because their wiring failed (O1), and rules
    /// and routes not made because their table's rt_tables line failed.
    pub held_back: Vec<Op>,
    /// Ops not started because the applier was told to stop (shutdown).
    pub not_started: usize,
}

impl ApplyReport {
    pub fn ok(&self) -> bool {
        self.failed.is_empty() && self.held_back.is_empty()
    }
}

fn overlaps(a: Option<IpNet>, b: Option<IpNet>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.contains(&b) || b.contains(&a),
        _ => false,
    }
}

/// The table a rule or route op writes into.
fn table_written(op: &Op) -> Option<u32> {
    match op {
        Op::AddRule { table, .. } => Some(*table),
        Op::ReplaceRoute { route, .. } => Some(route.table),
        _ => None,
    }
}

/// Applies `plan` in order through `node`.
pub async fn apply_plan(node: &mut impl NodeIo, plan: &Plan) -> ApplyReport {
    apply_plan_until(node, plan, || false).await
}

/// Applies `plan` in order through `node`, asking `stop` before each op.
/// Once it says stop, the remaining ops are not started (counted in
/// [`ApplyReport::not_started`]); the op in flight always completes. The
/// plan's order makes any prefix of it safe to leave behind: wiring before
/// announcements (O1), withdrawals before unwiring (O2), so no address is
/// ever announced without its wiring.
pub async fn apply_plan_until(
    node: &mut impl NodeIo,
    plan: &Plan,
    stop: impl Fn() -> bool,
) -> ApplyReport {
    let mut report = ApplyReport::default();
    let mut failed_wiring: Vec<Option<IpNet>> = Vec::new();
    // Tables whose `Op::AddRtTable` failed: nothing is written into them,
    // so no rule or route points at a number the file does not name (and
    // that the next observe, reading the bridge's table through rt_tables,
    // could not see: the same route would be re-applied every reconcile).
    let mut unnamed_tables: Vec<u32> = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        if stop() {
            report.not_started = plan.steps.len() - i;
            tracing::info!(
                not_started = report.not_started,
                "stopping: the rest of the plan is left for the next start"
            );
            break;
        }
        if step.group == Group::Announce
            && failed_wiring
                .iter()
                .any(|w| overlaps(*w, step.op.subject()))
        {
            tracing::warn!(op = %step.op, "not announced: its wiring failed (O1)");
            report.held_back.push(step.op.clone());
            continue;
        }
        if let Some(table) = table_written(&step.op).filter(|t| unnamed_tables.contains(t)) {
            tracing::warn!(
                op = %step.op,
                table,
                "not written: rt_tables could not be given this table's line"
            );
            failed_wiring.push(step.op.subject());
            report.held_back.push(step.op.clone());
            continue;
        }
        let started = std::time::Instant::now();
        let result = node.apply_op(&step.op).await;
        // Per op, so that a slow kind of write shows in the log.
        let us = started.elapsed().as_micros() as u64;
        match result {
            Ok(Applied::Done) => {
                tracing::info!(op = %step.op, us, "applied");
                report.applied += 1;
            }
            Ok(Applied::Queued) => {
                tracing::debug!(op = %step.op, "queued");
                report.queued.push(step.op.clone());
            }
            Err(e) => {
                tracing::warn!(op = %step.op, us, error = %e, "failed");
                if matches!(step.group, Group::Wire | Group::Base) {
                    failed_wiring.push(step.op.subject());
                }
                if let Op::AddRtTable { number, .. } = &step.op {
                    unnamed_tables.push(*number);
                }
                report.failed.push((step.op.clone(), e));
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use obgp_netmodel::{Address, Class, DevName};

    use super::*;
    use crate::actual::Actual;
    use crate::plan::Step;

    fn dev(s: &str) -> DevName {
        DevName::new(s).unwrap()
    }

    /// Runs a future that never waits: the simulated node answers at once.
    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(out) => out,
            std::task::Poll::Pending => panic!("the simulated node never waits"),
        }
    }

    #[test]
    fn address_is_not_announced_when_its_wiring_failed() {
        let net: IpNet = "172.24.4.10/32".parse().unwrap();
        let step = |group, op| Step {
            group,
            class: Some(Class::Vm),
            op,
        };
        // The rule's table device is missing in the model: the route fails.
        let plan = Plan {
            steps: vec![
                step(
                    Group::Wire,
                    Op::ReplaceNeighbour(obgp_netmodel::Neighbour {
                        dev: dev("br-ex"),
                        dst: net.addr(),
                        lladdr: "fa:16:3e:11:11:11".parse().unwrap(),
                    }),
                ),
                step(
                    Group::Announce,
                    Op::AddAddress(Address {
                        dev: dev("bgp-nic"),
                        net,
                    }),
                ),
                step(
                    Group::Announce,
                    Op::AddAddress(Address {
                        dev: dev("bgp-nic"),
                        net: "172.24.4.11/32".parse().unwrap(),
                    }),
                ),
            ],
            ..Plan::default()
        };
        let mut node = SimulatedNode::new(Actual::default());
        let report = block_on(apply_plan(&mut node, &plan));
        assert_eq!(report.failed.len(), 2, "{report:?}");
        assert_eq!(report.held_back.len(), 1);
        assert_eq!(report.held_back[0], plan.steps[1].op);
        // The unrelated announcement was still tried (and failed: no bgp-nic).
        assert_eq!(report.failed[1].0, plan.steps[2].op);
    }

    /// The simulated node, except that rt_tables cannot be written.
    struct ReadOnlyRtTables(SimulatedNode);

    impl NodeIo for ReadOnlyRtTables {
        async fn apply_op(&mut self, op: &Op) -> Result<Applied, String> {
            if let Op::AddRtTable { .. } = op {
                self.0.log.push((op.clone(), Ok(())));
                return Err("rt_tables: Read-only file system (os error 30)".into());
            }
            self.0.apply_op(op).await
        }
    }

    #[test]
    fn nothing_is_written_into_a_table_whose_rt_tables_line_failed() {
        let vm: IpNet = "172.24.4.10/32".parse().unwrap();
        let step = |group, op| Step {
            group,
            class: Some(Class::Vm),
            op,
        };
        let rule = |dst: IpNet, table| Op::AddRule {
            v6: false,
            dst,
            table,
            table_name: None,
            priority: None,
        };
        let route = Op::ReplaceRoute {
            route: crate::actual::KernelRoute {
                table: 1,
                v6: false,
                dst: Some(vm),
                metric: None,
                dev: Some(dev("br-ex")),
                via: None,
                proto: obgp_netmodel::proto::BOOT,
                scope: obgp_netmodel::scope::LINK,
                kind: obgp_netmodel::RouteType::Unicast,
            },
            table_name: Some("br-ex".into()),
        };
        let other: IpNet = "198.51.100.0/24".parse().unwrap();
        let plan = Plan {
            steps: vec![
                step(
                    Group::Base,
                    Op::AddRtTable {
                        number: 1,
                        name: dev("br-ex"),
                    },
                ),
                step(Group::Wire, rule(vm, 1)),
                step(Group::Wire, route.clone()),
                step(Group::Wire, rule(other, 7)),
                step(
                    Group::Announce,
                    Op::AddAddress(Address {
                        dev: dev("bgp-nic"),
                        net: vm,
                    }),
                ),
            ],
            ..Plan::default()
        };
        let mut node = ReadOnlyRtTables(SimulatedNode::new(Actual::default()));
        let report = block_on(apply_plan(&mut node, &plan));
        assert_eq!(report.failed.len(), 1, "{report:?}");
        assert!(matches!(report.failed[0].0, Op::AddRtTable { .. }));
        assert_eq!(
            report.held_back,
            vec![rule(vm, 1), route, plan.steps[4].op.clone()],
            "the rule and route into table 1, and the announcement they wire"
        );
        // Only the rt_tables attempt and the other table's rule reached the node.
        let tried: Vec<&Op> = node.0.log.iter().map(|(op, _)| op).collect();
        assert_eq!(tried, [&plan.steps[0].op, &rule(other, 7)]);
        assert!(node.0.actual.rules.iter().all(|r| r.table != 1));
    }

    #[test]
    fn a_stop_request_lets_the_op_in_flight_finish_and_starts_no_other() {
        let step = |net: &str| Step {
            group: Group::Base,
            class: Some(Class::Base),
            op: Op::AddAddress(Address {
                dev: dev("br-ex"),
                net: net.parse().unwrap(),
            }),
        };
        let plan = Plan {
            steps: [
                "192.0.2.1/32",
                "192.0.2.2/32",
                "192.0.2.3/32",
                "192.0.2.4/32",
            ]
            .iter()
            .map(|n| step(n))
            .collect(),
            ..Plan::default()
        };
        let mut node = SimulatedNode::new(
            serde_json::from_value(serde_json::json!({
                "links": [{"name": "br-ex", "type": "bridge", "state": "up"}]
            }))
            .unwrap(),
        );
        // The stop request arrives while the second op is in flight.
        let asked = std::cell::Cell::new(0);
        let report = block_on(apply_plan_until(&mut node, &plan, || {
            asked.set(asked.get() + 1);
            asked.get() > 2
        }));
        assert_eq!(report.applied, 2, "{report:?}");
        assert_eq!(report.not_started, 2);
        assert!(report.failed.is_empty());
        assert_eq!(node.log.len(), 2, "exactly the first two ops ran");
        assert_eq!(node.log[1].0, plan.steps[1].op);
    }
}
