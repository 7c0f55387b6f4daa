//! The single writer's door to the node: `obgp_plan::apply_plan` runs a
//! plan through [`NodeWriter`], which sends each netlink op to the kernel
//! and hands each command op to the command lane.

use obgp_plan::{Applied, NodeIo, Op};

use crate::{CommandLane, KernelNode};

/// The node as the single writer sees it: netlink ops are made here, in
/// turn, by the [`KernelNode`]; command ops (`ovs-ofctl`, `vtysh`) are
/// handed to the [`CommandLane`] and not waited for (their outcomes come
/// back through [`CommandLane::take_outcomes`]).
pub struct NodeWriter<'a> {
    node: &'a mut KernelNode,
    lane: &'a CommandLane,
}

impl<'a> NodeWriter<'a> {
    /// Writes through `node` and `lane` for as long as it is borrowed.
    pub fn new(node: &'a mut KernelNode, lane: &'a CommandLane) -> NodeWriter<'a> {
        NodeWriter { node, lane }
    }
}

impl NodeIo for NodeWriter<'_> {
    async fn apply_op(&mut self, op: &Op) -> Result<Applied, String> {
        if op.runs_a_command() {
            self.lane.submit([op.clone()]);
            return Ok(Applied::Queued);
        }
        self.node.apply_op(op).await
    }
}
