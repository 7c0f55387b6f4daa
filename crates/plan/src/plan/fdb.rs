//! Static FDB entries on OVS bridges (the `ovn` exposing method's pinned
//! bridge MACs): added where missing, never removed, since an entry has
//! no owner mark (docs/ownership.md).

use obgp_netmodel::Class;

use super::order::rank;
use super::Group;
use super::Planner;
use crate::op::Op;

impl Planner<'_> {
    /// Desired static FDB entries the bridge lacks, on a port it has (or
    /// its own, named after it). Never removed (no owner mark).
    pub(super) fn fdb(&mut self) {
        for e in &self.desired.fdb {
            let what = format!("fdb {} {} vlan {} {}", e.bridge, e.port, e.vlan, e.mac);
            let Some(bridge) = self.actual.bridges.get(&e.bridge) else {
                let why = if self.actual.bridges_unknown.contains(&e.bridge) {
                    "the bridge's entries could not be read"
                } else {
                    "the bridge is not in OVS"
                };
                self.skip(what, why);
                continue;
            };
            if bridge.fdb.contains(e) {
                continue;
            }
            if e.port != e.bridge.as_str() && !bridge.ports.contains_key(&e.port) {
                self.skip(what, format!("port {} is not on {}", e.port, e.bridge));
                continue;
            }
            self.push(
                Group::Base,
                rank::FDB,
                Some(Class::Base),
                Op::AddFdb(e.clone()),
            );
        }
    }
}
