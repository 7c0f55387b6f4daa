//! The agent state the predicates read: exactly what upstream's `match_fn`s
//! read from `self.agent` (the driver and its caches).

use obgp_ovsdb_data::datum::Uuid;

use crate::view::RowView;

/// What upstream's predicates read from the driver. In production it is
/// computed from the current OVN snapshot and the configuration; the
/// conformance runner answers from upstream's recorded test mocks.
///
/// Every method is a read of upstream state at match time, so
/// implementations must be cheap (a map lookup), side-effect free, and
/// agree with the desired state the next reconcile computes.
pub trait AgentView {
    /// `agent.chassis`: the chassis name the rows bind ports to. SB drivers:
    /// the OVS `system-id`; NB driver: the host name LSPs name in
    /// `requested-chassis` / `neutron:host_id`.
    fn chassis(&self) -> &str;

    /// `agent.chassis_id` (NB driver): the OVS `system-id`, as written in
    /// `Logical_Router_Port.status:hosting-chassis`.
    fn chassis_id(&self) -> &str;

    /// `bool(agent.ovn_local_cr_lrps)`: this chassis hosts at least one
    /// gateway (cr-lrp) port.
    fn has_local_cr_lrps(&self) -> bool;

    /// `router in agent.ovn_local_cr_lrps` (NB: keyed by router UUID, as in
    /// `neutron:device_id` and `lr_ref` without the `neutron-` prefix).
    /// `None` (a missing key upstream) matches nothing.
    fn is_local_cr_lrp(&self, router: Option<&str>) -> bool;

    /// `network in agent.ovn_local_lrps` (NB: logical switch names of the
    /// tenant networks behind a gateway hosted here).
    fn is_local_lrp_network(&self, logical_switch: Option<&str>) -> bool;

    /// `agent.is_ip_exposed(logical_switch, ips)`: one of `ips` is currently
    /// exposed by this agent for that logical switch.
    fn is_ip_exposed(&self, logical_switch: Option<&str>, ips: &[&str]) -> bool;

    /// `agent.is_ls_provider(logical_switch)`: the switch is a provider
    /// network whose bridge this node wires.
    fn is_ls_provider(&self, logical_switch: Option<&str>) -> bool;

    /// `agent.distributed`: floating IPs are distributed (NB_Global
    /// `external_ids:neutron:fip-distributed`, absent = true).
    fn distributed(&self) -> bool;

    /// `bool(agent.provider_ovn_lbs.get(name))` (SB driver): the load
    /// balancer's VIP is exposed on a provider network by this agent.
    fn is_provider_ovn_lb(&self, name: Option<&str>) -> bool;

    /// `agent.nb_idl.lsp_get(name_or_uuid).execute()`: the NB
    /// Logical_Switch_Port with that name or UUID, as a
    /// [`RowView::complete`] row.
    fn lsp(&self, name_or_uuid: &str) -> Option<RowView<'_>>;

    /// The row a reference column points at (`row.chassis[0]`,
    /// `nat.gateway_port[0]`), as a [`RowView::complete`] row. `None` when
    /// it is not in the snapshot (upstream's IDL drops such references).
    fn row(&self, uuid: Uuid) -> Option<RowView<'_>>;
}
