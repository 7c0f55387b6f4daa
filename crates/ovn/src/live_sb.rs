//! The Southbound half of the live snapshot: [`SbIndex`] patched row by row,
//! the way `live.rs` patches the NB indexes.
//!
//! Cross-row state, recomputed per owner after each batch:
//! - a Port_Binding's chassis name (and its "missing or unnamed Chassis"
//!   warning) depends on the `Chassis` row it references;
//! - a Load_Balancer's datapaths depend on the `Logical_DP_Group` rows it
//!   references.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use obgp_ovsdb_data::{Row, Uuid};

use crate::hash::FastHash;
use crate::nb::{log_warnings, RowError};
use crate::refs::{edit, refer, Referrers};
use crate::sb::{bad, PbType, PortBinding, SbIndex, SbLoadBalancer};
use crate::snapshot::RowSource;

/// The SB tables the index reads.
pub const SB_TABLES: [&str; 4] = [
    "Chassis",
    PortBinding::TABLE,
    "Logical_DP_Group",
    SbLoadBalancer::TABLE,
];

/// A named `Load_Balancer` row's references, before resolving groups.
#[derive(Debug)]
struct LbRefs {
    name: String,
    ls_group: Option<Uuid>,
    dp_group: Option<Uuid>,
    lr_group: Option<Uuid>,
    datapaths: Vec<Uuid>,
}

impl LbRefs {
    fn groups(&self) -> impl Iterator<Item = Uuid> + '_ {
        [self.ls_group, self.dp_group, self.lr_group]
            .into_iter()
            .flatten()
    }
}

#[derive(Default)]
struct Dirty {
    pbs: BTreeSet<Uuid>,
    lbs: BTreeSet<Uuid>,
}

/// An SB index built from rows is a fresh live one reset with them, so a
/// built index and a maintained one cannot differ. (Here, not in `sb`, so
/// that the row types do not depend on the live index that keeps them.)
impl SbIndex {
    /// Parses and indexes the `Port_Binding` rows of `sb`, resolving each
    /// binding's chassis through `Chassis`. Garbled rows and dangling
    /// chassis references go to `warnings`.
    pub fn build(sb: &impl RowSource, warnings: &mut Vec<RowError>) -> SbIndex {
        let mut live = SbLive::default();
        live.reset(sb, false);
        warnings.extend(live.warnings().cloned());
        live.index
    }
}

/// The maintained SB index and what patching it needs.
#[derive(Debug, Default)]
pub(crate) struct SbLive {
    pub index: SbIndex,
    /// Named Chassis rows.
    chassis_names: HashMap<Uuid, String, FastHash>,
    /// Port_Bindings as parsed (chassis unresolved), with the chassis they
    /// reference.
    parsed: HashMap<Uuid, (PortBinding, Option<Uuid>), FastHash>,
    pbs_of_chassis: Referrers,
    groups: HashMap<Uuid, Vec<Uuid>, FastHash>,
    lb_refs: HashMap<Uuid, LbRefs, FastHash>,
    lbs_of_group: Referrers,
    /// Per Port_Binding: its parse error or its dangling chassis.
    warnings: BTreeMap<Uuid, RowError>,
}

impl SbLive {
    /// The warnings in Port_Binding uuid order.
    pub fn warnings(&self) -> impl Iterator<Item = &RowError> + Clone {
        self.warnings.values()
    }

    /// Replaces every row with those of `sb`.
    pub fn reset(&mut self, sb: &impl RowSource, log: bool) {
        let old = std::mem::take(&mut self.warnings);
        *self = SbLive::default();
        let rows: Vec<(&str, Uuid, &Row)> = SB_TABLES
            .iter()
            .flat_map(|t| sb.rows(t).into_iter().map(move |(u, r)| (*t, u, r)))
            .collect();
        self.apply(rows.into_iter().map(|(t, u, r)| (t, u, Some(r))), false);
        if log {
            for (u, w) in &self.warnings {
                if old.get(u) != Some(w) {
                    log_warnings(std::slice::from_ref(w));
                }
            }
        }
    }

    /// Sets rows to their current content (`None`: the row is gone).
    pub fn apply<'r>(
        &mut self,
        rows: impl IntoIterator<Item = (&'r str, Uuid, Option<&'r Row>)>,
        log: bool,
    ) {
        let mut dirty = Dirty::default();
        for (table, uuid, row) in rows {
            match table {
                "Chassis" => {
                    let name = row
                        .and_then(|r| r.str("name"))
                        .filter(|n| !n.is_empty())
                        .map(str::to_string);
                    let renamed = match name {
                        Some(n) => self.chassis_names.insert(uuid, n.clone()).as_ref() != Some(&n),
                        None => self.chassis_names.remove(&uuid).is_some(),
                    };
                    if renamed {
                        if let Some(pbs) = self.pbs_of_chassis.get(&uuid) {
                            dirty.pbs.extend(pbs);
                        }
                    }
                }
                PortBinding::TABLE => {
                    if let Some((_, Some(c))) = self.parsed.remove(&uuid) {
                        refer(&mut self.pbs_of_chassis, c, uuid, false);
                    }
                    self.warnings.remove(&uuid);
                    match row.map(|r| (PortBinding::parse(uuid, r), r.uuid("chassis"))) {
                        None => {}
                        Some((Ok(pb), chassis)) => {
                            if let Some(c) = chassis {
                                refer(&mut self.pbs_of_chassis, c, uuid, true);
                            }
                            self.parsed.insert(uuid, (pb, chassis));
                        }
                        Some((Err(e), _)) => {
                            if log {
                                log_warnings(std::slice::from_ref(&e));
                            }
                            self.warnings.insert(uuid, e);
                        }
                    }
                    dirty.pbs.insert(uuid);
                }
                "Logical_DP_Group" => {
                    match row {
                        Some(r) => self.groups.insert(uuid, r.uuids("datapaths").collect()),
                        None => self.groups.remove(&uuid),
                    };
                    if let Some(lbs) = self.lbs_of_group.get(&uuid) {
                        dirty.lbs.extend(lbs);
                    }
                }
                SbLoadBalancer::TABLE => {
                    if let Some(old) = self.lb_refs.remove(&uuid) {
                        for g in old.groups() {
                            refer(&mut self.lbs_of_group, g, uuid, false);
                        }
                    }
                    let named =
                        row.and_then(|r| Some((r, r.str("name").filter(|n| !n.is_empty())?)));
                    if let Some((r, name)) = named {
                        let refs = LbRefs {
                            name: name.to_string(),
                            ls_group: r.uuid("ls_datapath_group"),
                            dp_group: r.uuid("datapath_group"),
                            lr_group: r.uuid("lr_datapath_group"),
                            datapaths: r.uuids("datapaths").collect(),
                        };
                        for g in refs.groups() {
                            refer(&mut self.lbs_of_group, g, uuid, true);
                        }
                        self.lb_refs.insert(uuid, refs);
                    }
                    dirty.lbs.insert(uuid);
                }
                _ => {}
            }
        }
        for pb in dirty.pbs {
            self.derive_pb(pb, log);
        }
        for lb in dirty.lbs {
            self.derive_lb(lb);
        }
    }

    /// The binding as served: chassis resolved to its name, or a warning.
    fn derive_pb(&mut self, uuid: Uuid, log: bool) {
        if let Some(old) = self.index.pbs.remove(&uuid) {
            index_pb(&mut self.index, &old, false);
        }
        let Some((parsed, chassis)) = self.parsed.get(&uuid) else {
            return; // deleted, or a parse error already recorded
        };
        let mut pb = parsed.clone();
        let mut warning = None;
        if let Some(c) = chassis {
            match self.chassis_names.get(c) {
                Some(name) => pb.chassis = Some(name.clone()),
                None => {
                    warning = Some(bad(
                        PortBinding::TABLE,
                        uuid,
                        format!("chassis references missing or unnamed Chassis row {c}"),
                    ))
                }
            }
        }
        match warning {
            Some(w) => {
                if log && self.warnings.get(&uuid) != Some(&w) {
                    log_warnings(std::slice::from_ref(&w));
                }
                self.warnings.insert(uuid, w);
            }
            None => {
                self.warnings.remove(&uuid);
            }
        }
        let pb = Arc::new(pb);
        index_pb(&mut self.index, &pb, true);
        self.index.pbs.insert(uuid, pb);
    }

    fn derive_lb(&mut self, uuid: Uuid) {
        if let Some(old) = self.index.lbs.remove(&uuid) {
            edit(
                &mut self.index.lbs_by_name,
                old.name.clone(),
                uuid,
                &old,
                false,
            );
        }
        let Some(refs) = self.lb_refs.get(&uuid) else {
            return;
        };
        let group = |g: Option<Uuid>| -> Vec<Uuid> {
            g.and_then(|g| self.groups.get(&g))
                .cloned()
                .unwrap_or_default()
        };
        let mut switch_datapaths = group(refs.ls_group);
        if switch_datapaths.is_empty() {
            switch_datapaths = group(refs.dp_group);
        }
        if switch_datapaths.is_empty() {
            switch_datapaths = refs.datapaths.clone();
        }
        let lb = SbLoadBalancer {
            uuid,
            name: refs.name.clone(),
            switch_datapaths,
            router_datapaths: group(refs.lr_group),
        };
        let lb = Arc::new(lb);
        edit(
            &mut self.index.lbs_by_name,
            lb.name.clone(),
            uuid,
            &lb,
            true,
        );
        self.index.lbs.insert(uuid, lb);
    }
}

/// Adds (or removes) what one resolved binding contributes to the indexes.
fn index_pb(ix: &mut SbIndex, pb: &Arc<PortBinding>, add: bool) {
    let u = pb.uuid;
    edit(&mut ix.by_name, pb.logical_port.clone(), u, pb, add);
    if let Some(dp) = pb.datapath {
        edit(&mut ix.by_datapath, dp, u, pb, add);
    }
    if let Some(c) = &pb.chassis {
        edit(&mut ix.by_chassis, c.clone(), u, pb, add);
    }
    if pb.kind == PbType::Localnet {
        if let Some(net) = &pb.network_name {
            edit(&mut ix.localnets_by_network, net.clone(), u, pb, add);
        }
        if let Some(dp) = pb.datapath {
            edit(&mut ix.localnets_by_datapath, dp, u, pb, add);
        }
    }
    if pb.kind == PbType::ChassisRedirect {
        edit(&mut ix.chassis_redirects, (), u, pb, add);
    }
    if pb.is_lb_vip_port() {
        if let Some(dp) = pb.datapath {
            edit(&mut ix.lb_vip_ports_by_datapath, dp, u, pb, add);
        }
    }
    if pb.kind == PbType::Patch {
        for (j, n) in pb.nat_addresses.iter().enumerate() {
            let key = n.resident_port.clone();
            if add {
                ix.nat_by_resident
                    .entry(key)
                    .or_default()
                    .insert((u, j as u32));
            } else if let Some(set) = ix.nat_by_resident.get_mut(&key) {
                set.remove(&(u, j as u32));
                if set.is_empty() {
                    ix.nat_by_resident.remove(&key);
                }
            }
        }
    }
}
