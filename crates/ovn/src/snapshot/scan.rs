//! Whole-table reads, for the rare questions no index answers (`explain`
//! looking for every row that carries an IP). The reconciler never calls
//! these: they cost O(rows).

use obgp_ovsdb_data::Uuid;

use super::Snapshot;
use crate::sb::{PortBinding, SbIndex};
use crate::{LoadBalancer, LogicalRouterPort, LogicalSwitch, LogicalSwitchPort, Nat};

/// The rows of a table, in uuid order.
fn sorted<T>(rows: &super::Rows<T>) -> Vec<&T> {
    let mut v: Vec<(&Uuid, &T)> = rows.iter().map(|(u, r)| (u, &**r)).collect();
    v.sort_by_key(|(u, _)| **u);
    v.into_iter().map(|(_, r)| r).collect()
}

impl Snapshot {
    /// Every Logical_Switch_Port, in uuid order.
    pub fn all_lsps(&self) -> Vec<&LogicalSwitchPort> {
        sorted(&self.nb.lsps)
    }

    /// Every Logical_Router_Port, in uuid order.
    pub fn all_lrps(&self) -> Vec<&LogicalRouterPort> {
        sorted(&self.nb.lrps)
    }

    /// Every NAT, in uuid order.
    pub fn all_nats(&self) -> Vec<&Nat> {
        sorted(&self.nb.nats)
    }

    /// Every Load_Balancer, in uuid order.
    pub fn all_lbs(&self) -> Vec<&LoadBalancer> {
        sorted(&self.nb.lbs)
    }

    /// The Logical_Switch named `name` (the first by uuid).
    pub fn switch_named(&self, name: &str) -> Option<&LogicalSwitch> {
        self.nb.switches_by_name.get(name).and_then(|s| s.first())
    }

    /// What an operator reads of row `uuid` of `table`: its name and the
    /// Neutron ids it carries; `None` when the row is not in the snapshot
    /// (parsed rows only). `Load_Balancer` is a table of both databases:
    /// `sb` says which one the driver reads. The one row lookup behind
    /// `explain` and `status`.
    pub fn row_facts(&self, table: &str, uuid: Uuid, sb: bool) -> Option<RowFacts<'_>> {
        let nb = &self.nb;
        match table {
            LogicalSwitchPort::TABLE => nb.lsps.get(&uuid).and_then(|p| {
                facts(
                    &p.name,
                    &[
                        ("device_id", p.device_id.as_deref()),
                        ("device_owner", p.device_owner.as_deref()),
                        ("network_name", p.network.as_deref()),
                        ("host_id", p.host_id.as_deref()),
                    ],
                )
            }),
            LogicalRouterPort::TABLE => nb.lrps.get(&uuid).and_then(|p| {
                facts(
                    &p.name,
                    &[
                        ("router", p.router.as_deref()),
                        ("network_name", p.network.as_deref()),
                    ],
                )
            }),
            Nat::TABLE => nb.nats.get(&uuid).and_then(|n| {
                facts(
                    &n.external_ip.to_string(),
                    &[
                        ("logical_port", n.logical_port.as_deref()),
                        ("fip_network_id", n.fip_network_id.as_deref()),
                    ],
                )
            }),
            PortBinding::TABLE => self.sb.pbs.get(&uuid).and_then(|p| {
                facts(
                    &p.logical_port,
                    &[
                        ("port_name", p.port_name.as_deref()),
                        ("chassis", p.chassis.as_deref()),
                        ("network_name", p.network_name.as_deref()),
                    ],
                )
            }),
            LoadBalancer::TABLE if sb => self.sb.lbs.get(&uuid).and_then(|l| facts(&l.name, &[])),
            LoadBalancer::TABLE => nb.lbs.get(&uuid).and_then(|l| {
                facts(
                    &l.name,
                    &[
                        ("router_name", l.router_name.as_deref()),
                        ("lr_ref", l.lr_ref.as_deref()),
                        ("vip_port_id", l.vip_port.as_deref()),
                    ],
                )
            }),
            crate::LogicalRouter::TABLE => nb.routers.get(&uuid).and_then(|r| facts(&r.name, &[])),
            LogicalSwitch::TABLE => nb.switches.get(&uuid).and_then(|r| facts(&r.name, &[])),
            _ => None,
        }
    }
}

/// A row as an operator names it ([`Snapshot::row_facts`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowFacts<'a> {
    /// A port's or router's name, a NAT's external IP, a load balancer's
    /// name, a binding's `logical_port`.
    pub name: Option<String>,
    /// The Neutron ids it carries (`device_id`, `network_name`, `router`...).
    pub neutron: Vec<(&'static str, &'a str)>,
}

fn facts<'a>(name: &str, neutron: &[(&'static str, Option<&'a str>)]) -> Option<RowFacts<'a>> {
    Some(RowFacts::new(Some(name.to_string()), neutron))
}

impl<'a> RowFacts<'a> {
    fn new(name: Option<String>, neutron: &[(&'static str, Option<&'a str>)]) -> Self {
        RowFacts {
            name,
            neutron: neutron
                .iter()
                .filter_map(|(k, v)| Some((*k, (*v)?)))
                .collect(),
        }
    }
}

impl SbIndex {
    /// Every Port_Binding, in uuid order.
    pub fn all_ports(&self) -> Vec<&PortBinding> {
        sorted(&self.pbs)
    }
}
