//! The SB index as it was built before it became incremental, kept
//! verbatim (as the `reference` NB snapshot) as the oracle the live SB index
//! is checked against.
#![allow(dead_code)]

use std::collections::HashMap;

use obgp_ovn::hash::FastHash;
use obgp_ovn::sb::{NatAddresses, PbType, PortBinding, SbLoadBalancer};
use obgp_ovn::{RowError, RowSource};
use obgp_ovsdb_data::{Row, Uuid};

fn bad(table: &'static str, uuid: Uuid, reason: impl Into<String>) -> RowError {
    RowError {
        table,
        uuid,
        reason: reason.into(),
    }
}

/// The SB rows, indexed for the SB driver's questions.
#[derive(Clone, Debug, Default)]
pub struct SbIndex {
    pbs: Vec<PortBinding>,
    by_name: HashMap<String, u32, FastHash>,
    by_datapath: HashMap<Uuid, Vec<u32>, FastHash>,
    /// Bound ports by `Chassis.name`.
    by_chassis: HashMap<String, Vec<u32>, FastHash>,
    /// Localnet ports by `options:network_name`.
    localnets_by_network: HashMap<String, Vec<u32>, FastHash>,
    /// Localnet ports by datapath.
    localnets_by_datapath: HashMap<Uuid, Vec<u32>, FastHash>,
    /// OVN LB VIP ports (type `""`, no chassis, no MAC, `up = false`) by datapath.
    lb_vip_ports_by_datapath: HashMap<Uuid, Vec<u32>, FastHash>,
    /// Patch ports' NAT address entries by their resident port:
    /// `(port binding, entry index)`.
    nat_by_resident: HashMap<String, Vec<(u32, u32)>, FastHash>,
    /// Load balancers by name (first by uuid).
    lbs_by_name: HashMap<String, SbLoadBalancer, FastHash>,
}

fn push<K: std::hash::Hash + Eq, V>(map: &mut HashMap<K, Vec<V>, FastHash>, k: K, v: V) {
    map.entry(k).or_default().push(v);
}

impl SbIndex {
    /// Parses and indexes the `Port_Binding` rows of `sb`, resolving each
    /// binding's chassis through `Chassis`. Garbled rows and dangling
    /// chassis references go to `warnings`.
    pub fn build(sb: &impl RowSource, warnings: &mut Vec<RowError>) -> SbIndex {
        let mut chassis_names: HashMap<Uuid, String, FastHash> = HashMap::default();
        for (uuid, row) in sb.rows("Chassis") {
            if let Some(name) = row.str("name").filter(|n| !n.is_empty()) {
                chassis_names.insert(uuid, name.to_string());
            }
        }
        let mut rows = sb.rows(PortBinding::TABLE);
        rows.sort_unstable_by_key(|(u, _)| *u);
        let mut s = SbIndex::default();
        for (uuid, row) in rows {
            let mut pb = match PortBinding::parse(uuid, row) {
                Ok(pb) => pb,
                Err(e) => {
                    warnings.push(e);
                    continue;
                }
            };
            if let Some(c) = row.uuid("chassis") {
                match chassis_names.get(&c) {
                    Some(name) => pb.chassis = Some(name.clone()),
                    None => warnings.push(bad(
                        PortBinding::TABLE,
                        uuid,
                        format!("chassis references missing or unnamed Chassis row {c}"),
                    )),
                }
            }
            let i = s.pbs.len() as u32;
            s.by_name.entry(pb.logical_port.clone()).or_insert(i);
            if let Some(dp) = pb.datapath {
                push(&mut s.by_datapath, dp, i);
            }
            if let Some(c) = &pb.chassis {
                push(&mut s.by_chassis, c.clone(), i);
            }
            if pb.kind == PbType::Localnet {
                if let Some(net) = &pb.network_name {
                    push(&mut s.localnets_by_network, net.clone(), i);
                }
                if let Some(dp) = pb.datapath {
                    push(&mut s.localnets_by_datapath, dp, i);
                }
            }
            if pb.is_lb_vip_port() {
                if let Some(dp) = pb.datapath {
                    push(&mut s.lb_vip_ports_by_datapath, dp, i);
                }
            }
            if pb.kind == PbType::Patch {
                for (j, n) in pb.nat_addresses.iter().enumerate() {
                    push(
                        &mut s.nat_by_resident,
                        n.resident_port.clone(),
                        (i, j as u32),
                    );
                }
            }
            s.pbs.push(pb);
        }
        s.index_load_balancers(sb);
        s
    }

    fn index_load_balancers(&mut self, sb: &impl RowSource) {
        let groups: HashMap<Uuid, Vec<Uuid>, FastHash> = sb
            .rows("Logical_DP_Group")
            .into_iter()
            .map(|(u, row)| (u, row.uuids("datapaths").collect()))
            .collect();
        let group = |row: &Row, col: &str| -> Vec<Uuid> {
            row.uuid(col)
                .and_then(|g| groups.get(&g))
                .cloned()
                .unwrap_or_default()
        };
        let mut rows = sb.rows(SbLoadBalancer::TABLE);
        rows.sort_unstable_by_key(|(u, _)| *u);
        for (uuid, row) in rows {
            let Some(name) = row.str("name").filter(|n| !n.is_empty()) else {
                continue;
            };
            let mut switch_datapaths = group(row, "ls_datapath_group");
            if switch_datapaths.is_empty() {
                switch_datapaths = group(row, "datapath_group");
            }
            if switch_datapaths.is_empty() {
                switch_datapaths = row.uuids("datapaths").collect();
            }
            self.lbs_by_name
                .entry(name.to_string())
                .or_insert(SbLoadBalancer {
                    uuid,
                    name: name.to_string(),
                    switch_datapaths,
                    router_datapaths: group(row, "lr_datapath_group"),
                });
        }
    }

    /// The load balancer named `name` (upstream `get_ovn_lb`).
    pub fn load_balancer(&self, name: &str) -> Option<&SbLoadBalancer> {
        self.lbs_by_name.get(name)
    }

    fn at<'a>(&'a self, idx: Option<&'a Vec<u32>>) -> impl Iterator<Item = &'a PortBinding> {
        idx.into_iter().flatten().map(|&i| &self.pbs[i as usize])
    }

    /// The Port_Binding whose `logical_port` is `name`.
    pub fn port(&self, name: &str) -> Option<&PortBinding> {
        self.by_name.get(name).map(|&i| &self.pbs[i as usize])
    }

    /// Ports bound to chassis `system_id` (upstream `get_ports_on_chassis`),
    /// in uuid order.
    pub fn ports_on_chassis<'a>(
        &'a self,
        system_id: &str,
    ) -> impl Iterator<Item = &'a PortBinding> {
        self.at(self.by_chassis.get(system_id))
    }

    /// Every Port_Binding of datapath `dp`, in uuid order.
    pub fn ports_on_datapath(&self, dp: Uuid) -> impl Iterator<Item = &PortBinding> {
        self.at(self.by_datapath.get(&dp))
    }

    /// Localnet ports whose `options:network_name` is `network`.
    pub fn localnets_on_network<'a>(
        &'a self,
        network: &str,
    ) -> impl Iterator<Item = &'a PortBinding> {
        self.at(self.localnets_by_network.get(network))
    }

    /// The localnet ports of datapath `dp`: it is a provider network iff
    /// there is one (upstream `is_provider_network`).
    pub fn localnets_of_datapath(&self, dp: Uuid) -> impl Iterator<Item = &PortBinding> {
        self.at(self.localnets_by_datapath.get(&dp))
    }

    /// The first localnet port of datapath `dp` whose network is accepted
    /// by `mapped` (upstream `get_network_name_and_tag`).
    pub fn localnet_of_datapath(
        &self,
        dp: Uuid,
        mapped: impl Fn(&str) -> bool,
    ) -> Option<&PortBinding> {
        self.localnets_of_datapath(dp)
            .find(|p| p.network_name.as_deref().is_some_and(&mapped))
    }

    /// OVN LB VIP ports of datapath `dp` ([`PortBinding::is_lb_vip_port`]).
    pub fn lb_vip_ports_on_datapath(&self, dp: Uuid) -> impl Iterator<Item = &PortBinding> {
        self.at(self.lb_vip_ports_by_datapath.get(&dp))
    }

    /// NAT address entries of patch ports whose resident port is `port`,
    /// with the patch Port_Binding carrying them.
    pub fn nat_addresses_of<'a>(
        &'a self,
        port: &str,
    ) -> impl Iterator<Item = (&'a PortBinding, &'a NatAddresses)> {
        self.nat_by_resident
            .get(port)
            .into_iter()
            .flatten()
            .map(|&(i, j)| {
                let pb = &self.pbs[i as usize];
                (pb, &pb.nat_addresses[j as usize])
            })
    }

    /// Number of parsed Port_Binding rows.
    pub fn len(&self) -> usize {
        self.pbs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pbs.is_empty()
    }
}
