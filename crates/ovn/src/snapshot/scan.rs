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

    /// What an operator calls row `uuid` of `table`: a port's or router's
    /// name, a NAT's external IP, a load balancer's name, a binding's
    /// `logical_port`. `None` when the row is not in the snapshot.
    pub fn row_name(&self, table: &str, uuid: Uuid) -> Option<String> {
        let nb = &self.nb;
        match table {
            LogicalSwitchPort::TABLE => nb.lsps.get(&uuid).map(|r| r.name.clone()),
            LogicalSwitch::TABLE => nb.switches.get(&uuid).map(|r| r.name.clone()),
            LogicalRouterPort::TABLE => nb.lrps.get(&uuid).map(|r| r.name.clone()),
            crate::LogicalRouter::TABLE => nb.routers.get(&uuid).map(|r| r.name.clone()),
            Nat::TABLE => nb.nats.get(&uuid).map(|r| r.external_ip.to_string()),
            LoadBalancer::TABLE => (nb.lbs.get(&uuid).map(|r| r.name.clone()))
                .or_else(|| self.sb.lbs.get(&uuid).map(|r| r.name.clone())),
            PortBinding::TABLE => self.sb.pbs.get(&uuid).map(|r| r.logical_port.clone()),
            _ => None,
        }
    }

    /// Whether the snapshot holds row `uuid` of `table` (NB, SB
    /// Port_Binding and Load_Balancer of either database; parsed rows only).
    pub fn contains_row(&self, table: &str, uuid: Uuid) -> bool {
        let nb = &self.nb;
        match table {
            LogicalSwitchPort::TABLE => nb.lsps.contains_key(&uuid),
            LogicalSwitch::TABLE => nb.switches.contains_key(&uuid),
            LogicalRouterPort::TABLE => nb.lrps.contains_key(&uuid),
            crate::LogicalRouter::TABLE => nb.routers.contains_key(&uuid),
            Nat::TABLE => nb.nats.contains_key(&uuid),
            // NB and SB both name it Load_Balancer.
            LoadBalancer::TABLE => nb.lbs.contains_key(&uuid) || self.sb.lbs.contains_key(&uuid),
            PortBinding::TABLE => self.sb.pbs.contains_key(&uuid),
            _ => false,
        }
    }
}

impl SbIndex {
    /// Every Port_Binding, in uuid order.
    pub fn all_ports(&self) -> Vec<&PortBinding> {
        sorted(&self.pbs)
    }
}
