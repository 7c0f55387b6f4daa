//! OpenFlow flows: the desired flows materialised from the node's facts
//! (ofports, bridge MAC), and the agent's cookie-999 flows nothing wants.

use std::collections::{BTreeMap, BTreeSet};

use obgp_netmodel::{Class, DevName};

use super::order::rank;
use super::Group;
use super::Planner;
use crate::actual::OfFlow;
use crate::op::Op;

/// What a desired flow waits for before it can be written.
enum Missing {
    BridgeMac,
    DeviceMac(DevName),
    Port(String),
}

impl Planner<'_> {
    /// Materialises the desired flows from the node's facts (ofports, bridge
    /// MAC). Returns the concrete flows per bridge, and the bridges whose MAC
    /// is unknown (their leftovers are not judged).
    fn materialised_flows(&mut self) -> (BTreeMap<DevName, BTreeSet<OfFlow>>, BTreeSet<DevName>) {
        let mut out: BTreeMap<DevName, BTreeSet<OfFlow>> = BTreeMap::new();
        let mut blind = BTreeSet::new();
        for f in &self.desired.flows {
            let what = format!(
                "flow {} cookie={} priority={} {} in_port={}",
                f.bridge, f.cookie, f.priority, f.protocol, f.in_port
            );
            let Some(bridge) = self.actual.bridges.get(&f.bridge) else {
                let why = if self.actual.bridges_unknown.contains(&f.bridge) {
                    "the bridge's flows could not be read"
                } else {
                    "the bridge is not in OVS"
                };
                self.skip(what, why);
                blind.insert(f.bridge.clone());
                continue;
            };
            let Some(ofport) = bridge.ports.get(&f.in_port) else {
                // Upstream defect D1 is about this case: the patch port is not
                // there yet. Skip this flow only; the next reconcile adds it.
                self.skip(what, format!("port {} is not on the bridge yet", f.in_port));
                continue;
            };
            let mac_of = |dev: &DevName| self.actual.links.get(dev).and_then(|l| l.mac);
            let mut actions = Vec::new();
            let mut missing = None;
            for a in &f.actions {
                use obgp_netmodel::FlowAction as A;
                let text = match a {
                    A::ModDlDstBridgeMac => mac_of(&f.bridge).map(|m| format!("mod_dl_dst:{m}")),
                    A::ModDlDstMacOf(dev) => mac_of(dev).map(|m| format!("mod_dl_dst:{m}")),
                    A::ModDlDst(m) => Some(format!("mod_dl_dst:{m}")),
                    A::ModDlSrc(m) => Some(format!("mod_dl_src:{m}")),
                    A::Output(p) => match bridge.ports.get(p) {
                        Some(n) => Some(format!("output:{n}")),
                        None => {
                            missing = Some(Missing::Port(p.clone()));
                            break;
                        }
                    },
                    A::StripVlan => Some("strip_vlan".into()),
                    A::Normal => Some("NORMAL".into()),
                };
                match text {
                    Some(t) => actions.push(t),
                    None => {
                        missing = Some(match a {
                            A::ModDlDstMacOf(dev) if *dev != f.bridge => {
                                Missing::DeviceMac(dev.clone())
                            }
                            _ => Missing::BridgeMac,
                        });
                        break;
                    }
                }
            }
            match missing {
                None => {}
                Some(Missing::BridgeMac) => {
                    self.skip(what, "the bridge's MAC address is unknown");
                    blind.insert(f.bridge.clone());
                    continue;
                }
                // Wiring still to come (the veth end, its MAC): this flow only,
                // the next reconcile adds it.
                Some(Missing::DeviceMac(dev)) => {
                    self.skip(what, format!("device {dev} is not on the node yet"));
                    continue;
                }
                Some(Missing::Port(p)) => {
                    self.skip(what, format!("port {p} is not on the bridge yet"));
                    continue;
                }
            }
            let flow = OfFlow {
                cookie: f.cookie,
                table: f.table,
                priority: f.priority,
                matches: [f.protocol.clone(), format!("in_port={ofport}")]
                    .into_iter()
                    .chain(f.matches.iter().map(|m| m.to_string()))
                    .collect(),
                actions: actions.join(","),
            };
            out.entry(f.bridge.clone()).or_default().insert(flow);
        }
        (out, blind)
    }

    pub(super) fn flows(&mut self) {
        let (flows, _) = self.materialised_flows();
        for (bridge, fs) in flows {
            let have = &self.actual.bridges[&bridge].flows;
            for f in fs {
                if !have.contains(&f) {
                    self.push(
                        Group::Base,
                        rank::FLOW,
                        Some(Class::Base),
                        Op::AddFlow {
                            bridge: bridge.clone(),
                            flow: f,
                        },
                    );
                }
            }
        }
    }

    /// [`Self::materialised_flows`] without recording skips a second time.
    fn materialised_flows_quiet(
        &mut self,
    ) -> (BTreeMap<DevName, BTreeSet<OfFlow>>, BTreeSet<DevName>) {
        let n = self.skipped.len();
        let out = self.materialised_flows();
        self.skipped.truncate(n);
        out
    }

    /// Cookie-999 flows that the desired state does not declare, on the
    /// bridges the agent manages: those it or the previous desired state
    /// wires or puts flows on (`exposing_method = ovn`'s fabric bridges
    /// hold flows without a table; one whose segment went is judged once
    /// more). Not judged where the bridge MAC is unknown.
    pub(super) fn flow_leftovers(&mut self) {
        let (d, a) = (self.desired, self.actual);
        let (flows, blind) = self.materialised_flows_quiet();
        let mut flow_bridges: BTreeSet<DevName> = d.bridge_tables.clone();
        flow_bridges.extend(d.flows.iter().map(|f| f.bridge.clone()));
        if let Some(prev) = self.previous {
            flow_bridges.extend(prev.flows.iter().map(|f| f.bridge.clone()));
        }
        let mut cookies = vec![obgp_netmodel::cookie::MAC_TWEAK];
        if let Some(evpn) = &d.evpn {
            flow_bridges.extend(evpn.bridges.iter().cloned());
            if evpn.steering_flows {
                cookies.push(obgp_netmodel::cookie::EVPN);
            }
        }
        for br in flow_bridges {
            if blind.contains(&br) {
                continue;
            }
            let Some(have) = a.bridges.get(&br) else {
                continue;
            };
            let want = flows.get(&br);
            // A wanted flow with the same match replaces this one in place
            // (`add-flow`); deleting it (`del-flows --strict` matches
            // without the actions) would take the new one too.
            let replaced = |f: &OfFlow| {
                want.is_some_and(|w| {
                    w.iter().any(|n| {
                        n.table == f.table && n.priority == f.priority && n.matches == f.matches
                    })
                })
            };
            for f in &have.flows {
                if cookies.contains(&f.cookie)
                    && !want.is_some_and(|w| w.contains(f))
                    && !replaced(f)
                {
                    let op = Op::DelFlow {
                        bridge: br.clone(),
                        flow: f.clone(),
                    };
                    self.push(Group::Unwire, rank::FLOW, Some(Class::Base), op);
                }
            }
        }
    }
}
