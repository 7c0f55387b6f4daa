//! `ovn-bgp-agent status`: what this node exposes now and why, and the
//! agent's health. One model ([`Status`]) that the daemon serves on
//! `metrics_listen` (`GET /status`, JSON) and the command computes itself
//! when no daemon answers, rendered as text by [`render::text`].
//!
//! For each exposed IP or prefix: its kind (the desired state's class),
//! the OVN rows behind it ([`rows`]: table, uuid, the Neutron name or id
//! the row carries), its wiring (bridge, VLAN, table or VRF) and whether
//! the observed node holds it ([`obgp_plan::holds`], the same comparison
//! the planner makes). [`exposures`] builds that part from values only;
//! the loop's `live_status` gathers the values from the daemon's loop or
//! from the live databases and node.

pub mod render;
pub mod rows;

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;
use obgp_config::Config;
use obgp_desired::{Desired, ExposedIp};
use obgp_netmodel::{Class, DesiredNode};
use obgp_ovn::Snapshot;
use obgp_plan::holds::{missing_links, HoldsIndex};
use obgp_plan::Actual;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use obgp_inputs::MonitoredDb;

pub use rows::RowInfo;

/// Who computed a [`Status`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComputedBy {
    /// The running daemon: its last desired state against the node now.
    Daemon,
    /// The `status` command itself, from the live databases and node.
    Direct,
    /// The `status` command from files (`--ovn`, a node state).
    Offline,
}

/// What this node exposes and why, and the agent's health.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub origin: ComputedBy,
    pub driver: String,
    pub exposing_method: String,
    /// This node's name in the rows the driver reads (system-id or hostname).
    pub chassis: String,
    /// Every exposed IP and prefix, in prefix order.
    pub exposed: Vec<Exposure>,
    /// The EVPN drivers' VNIs (empty in the underlay modes).
    pub vnis: Vec<VniStatus>,
    /// Why some OVN data is not exposed (the desired state's notes).
    pub notes: Vec<String>,
    pub health: Health,
    /// How FRR's tables were read for the exposures (`status` live only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric: Option<FabricRead>,
}

/// The reads behind the exposures' FRR state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FabricRead {
    /// The established peers whose advertised routes were read.
    pub peers: Vec<String>,
    /// What could not be read (the exposures of that family or peer are
    /// then unknown, not absent).
    pub errors: Vec<String>,
    /// How long the reads took.
    pub took_s: f64,
}

/// One exposed IP or prefix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Exposure {
    pub prefix: IpNet,
    /// The class of the exposure (`vm`, `fip`, `gateway`, `lb`, `subnet`,
    /// `tenant_vm`).
    pub kind: Class,
    /// The OVN rows behind it.
    pub rows: Vec<RowInfo>,
    pub wiring: Wiring,
    /// The node holds every object the desired state asks for it.
    pub held: bool,
    /// What the node lacks of it, one line each.
    pub missing: Vec<String>,
    /// What FRR holds of it (`status` live only, filled by the command
    /// from FRR's tables: [`crate::fabric::annotate_status`]); `None`: not
    /// looked up, or FRR could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frr: Option<ExposureFrr>,
}

/// What FRR holds of one exposure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExposureFrr {
    /// The prefix is in the default instance's table (its family's); for
    /// an EVPN exposure, this node's `evpn_route` is in the `l2vpn evpn`
    /// table.
    pub in_table: bool,
    /// The peers FRR sent it to (their advertised routes list it).
    pub announced_to: Vec<String>,
    /// The EVPN modes: the route looked up (`type-5 route 172.24.4.10/32`,
    /// `type-2 route fa:16:3e:11:11:11 172.24.4.10`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evpn_route: Option<String>,
}

/// Where an exposure lands on the node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wiring {
    /// The provider bridge traffic for it goes through.
    pub bridge: Option<String>,
    pub vlan: Option<u16>,
    /// The device its route or address is on (bridge, VLAN device,
    /// `bgp_nic`, a VNI's port or `lo-<vni>`).
    pub dev: Option<String>,
    /// The routing table: a bridge's rt_tables name, or the VRF's number.
    pub table: Option<String>,
    /// Its number on this node (`None`: the bridge has no rt_tables entry yet).
    pub table_id: Option<u32>,
    /// The VRF announcing it (`bgp_vrf`, `vrf-<vni>`).
    pub vrf: Option<String>,
    /// The next hop of a subnet route.
    pub via: Option<IpAddr>,
    /// `exposing_method = dynamic`: the method its provider network got
    /// and why (`vrf (neutron_bgpvpn:type=l3, ...)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The EVPN modes: the VNI its route carries (a type-5 route from
    /// `vrf`, or with `mac` a type-2 route).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vni: Option<u32>,
    /// `l2vni`: the MAC of its type-2 (MAC/IP) route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<obgp_netmodel::MacAddr>,
}

/// One VNI of an EVPN driver.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VniStatus {
    pub vni: u32,
    pub vrf: String,
    pub bridge: String,
    pub vxlan: String,
    pub local_ip: IpAddr,
    /// The rows carrying the VNI's networking-bgpvpn annotation.
    pub rows: Vec<RowInfo>,
    /// The node has the VNI's devices.
    pub held: bool,
    pub missing: Vec<String>,
}

/// The agent's health.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Health {
    pub databases: Vec<DbHealth>,
    /// The daemon's last finished reconcile (`None`: none yet, or no daemon).
    pub last_reconcile: Option<LastReconcile>,
    /// How long the reconcile in flight has run, if one is.
    pub reconcile_running_s: Option<f64>,
    /// Ops the node still needs (what `plan` prints now); `None` when not
    /// computed (no desired state yet).
    pub pending_ops: Option<usize>,
    /// What could not be read of the node (FRR, an OVS bridge).
    pub unread: Vec<String>,
    /// `/readyz` and `/healthz` with their reasons (daemon only).
    pub ready: Option<Probe>,
    pub healthy: Option<Probe>,
    /// The last FRR text the daemon handed to vtysh and how it went
    /// (daemon only; `None`: none since it started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frr_last_text: Option<FrrLastText>,
    /// FRR's BGP sessions as last read (daemon only; `None`: not read yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bgp_sessions: Option<BgpSessions>,
}

/// The last read of FRR's BGP sessions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BgpSessions {
    pub read_ago_s: f64,
    /// `None`: FRR could not be read (`error` says why): the sessions are
    /// unknown, not absent.
    pub sessions: Option<Vec<obgp_netmodel::frr::BgpSession>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The last FRR text handed to vtysh: the agent's view of FRR's
/// configuration state (what frr-k8s calls FRRNodeState).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrrLastText {
    pub finished_unix: f64,
    pub ago_s: f64,
    /// A removal (del-vrf, an L2 VNI block) rather than the agent's text.
    pub removal: bool,
    /// `applied`, `rejected` (FRR's parser refused it: nothing applied) or
    /// `failed`.
    pub outcome: String,
    /// FRR's or vtysh's message when it was not applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When FRR last took a text, if it ever did since the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_ago_s: Option<f64>,
}

/// One database connection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DbHealth {
    pub database: String,
    /// The remote it is connected to; `None`: disconnected.
    pub connected_to: Option<String>,
    /// Completed syncs: the initial dump and one per reconnect.
    pub syncs: u64,
    /// Unix time of its last update, as the daemon saw it.
    pub last_update_unix: Option<f64>,
}

/// The last finished reconcile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LastReconcile {
    pub finished_unix: f64,
    pub ago_s: f64,
    /// What triggered it.
    pub reasons: String,
    pub converged: bool,
    /// Why it did not converge.
    pub why: Option<String>,
}

/// A probe's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    pub ok: bool,
    pub reason: String,
}

/// The values the exposure list is computed from.
pub struct StatusInputs<'a> {
    pub config: &'a Config,
    pub snapshot: &'a Snapshot,
    pub desired: &'a Desired,
    /// `desired` flattened (what the planner diffs).
    pub node: &'a DesiredNode,
    /// The observed node.
    pub actual: &'a Actual,
}

/// The exposed IPs and prefixes with their rows, wiring and whether the
/// node holds them, and the VNIs of an EVPN driver.
pub fn exposures(i: &StatusInputs<'_>) -> (Vec<Exposure>, Vec<VniStatus>) {
    let holds = HoldsIndex::new(i.node, i.actual);
    let rows = rows::Lookup::new(i.snapshot, i.config);
    let entry = |prefix: IpNet, kind, rows: Vec<RowInfo>, wiring| {
        let h = holds.of(prefix);
        Exposure {
            prefix,
            kind,
            rows,
            wiring,
            held: h.held(),
            missing: h.missing,
            frr: None,
        }
    };
    let mut out = Vec::new();
    let mut vnis = Vec::new();
    let dynamic = i.desired.dynamic.as_ref();
    // `exposing_method = dynamic` has both: its underlay networks' part
    // and its EVPN networks' VNIs.
    let underlay = i.desired.evpn.is_none() || dynamic.is_some();
    let decision = |ip: IpAddr| match dynamic {
        Some(d) => d.decision(i.desired, ip),
        None => i.desired.exposed.get(&ip),
    };
    let subnets = || {
        let evpn = dynamic
            .map(|d| d.evpn_subnets.as_slice())
            .unwrap_or_default();
        i.desired.tenant_subnets.iter().chain(evpn)
    };
    if underlay {
        {
            for e in i.desired.exposed.values() {
                let w = underlay_wiring(i, e);
                out.push(entry(
                    IpNet::from(e.ip),
                    e.class,
                    vec![rows.of(e.source)],
                    w,
                ));
            }
            for s in &i.desired.tenant_subnets {
                let (table, table_id) = bridge_table(i.actual, &s.bridge.to_string());
                let w = Wiring {
                    bridge: Some(s.bridge.to_string()),
                    dev: Some(s.dev.to_string()),
                    table,
                    table_id,
                    vrf: s.vrf_route.then(|| i.desired.vrf.to_string()),
                    via: s.via,
                    ..Wiring::default()
                };
                out.push(entry(s.net, Class::Subnet, rows.router(&s.router), w));
            }
            // The stretched-L2 driver's provider and tenant subnets.
            for r in i.desired.vrf_routes.values() {
                let w = Wiring {
                    dev: Some(i.desired.bgp_nic.to_string()),
                    table: Some(i.desired.vrf_table.to_string()),
                    table_id: Some(i.desired.vrf_table),
                    vrf: Some(i.desired.vrf.to_string()),
                    via: r.via,
                    ..Wiring::default()
                };
                let found = r.rows.iter().map(|&row| rows.of(row)).collect();
                out.push(entry(r.net, r.class, found, w));
            }
        }
    }
    if let Some(evpn) = &i.desired.evpn {
        {
            for v in evpn.vnis.values() {
                let vni_rows = rows.vni(v.vni);
                let wiring = |dev: &str, bridge: Option<String>, vlan, via| Wiring {
                    bridge,
                    vlan,
                    dev: Some(dev.to_string()),
                    table: Some(v.vni.to_string()),
                    table_id: Some(v.vni),
                    vrf: Some(v.vrf.to_string()),
                    via,
                    method: None,
                    vni: Some(v.vni),
                    mac: None,
                };
                let behind = |prefix: IpNet| -> Option<(Class, Vec<RowInfo>)> {
                    if let Some(e) = decision(prefix.addr()) {
                        if prefix.prefix_len() == IpNet::from(e.ip).prefix_len() {
                            return Some((e.class, vec![rows.of(e.source)]));
                        }
                    }
                    let s = subnets().find(|s| s.net == prefix)?;
                    Some((Class::Subnet, rows.router(&s.router)))
                };
                for p in &v.ports {
                    for r in &p.routes {
                        let (_, found) = behind(r.dst).unwrap_or((r.class, Vec::new()));
                        let found = if found.is_empty() {
                            vni_rows.clone()
                        } else {
                            found
                        };
                        let w = wiring(
                            p.vrf_end.as_str(),
                            Some(p.ovs_bridge.to_string()),
                            p.vlan,
                            r.via,
                        );
                        out.push(entry(r.dst, r.class, found, w));
                    }
                }
                if let Some((lo, ips)) = &v.lo {
                    for ip in ips {
                        let (kind, found) =
                            behind(*ip).unwrap_or((Class::TenantVm, vni_rows.clone()));
                        let w = wiring(lo.as_str(), None, None, None);
                        out.push(entry(*ip, kind, found, w));
                    }
                }
                let missing = missing_links(i.actual, [&v.vrf, &v.bridge, &v.vxlan]);
                vnis.push(VniStatus {
                    vni: v.vni,
                    vrf: v.vrf.to_string(),
                    bridge: v.bridge.to_string(),
                    vxlan: v.vxlan.to_string(),
                    local_ip: v.local_ip,
                    rows: vni_rows,
                    held: missing.is_empty(),
                    missing,
                });
            }
            // `exposing_method = l2vni`: each host is a static FDB entry
            // of its MAC in `br-<vni>` and a permanent neighbour on it
            // (what zebra announces as a type-2 route); no VRF, no table.
            // The desired entries the node lacks, by bridge and MAC.
            let unpinned: BTreeMap<_, _> = i
                .node
                .bridge_fdb
                .keys()
                .filter(|f| !i.actual.bridge_fdb.contains(f))
                .map(|f| ((&f.bridge, f.mac), f))
                .collect();
            for v in evpn.l2.values() {
                for (ip, h) in &v.hosts {
                    let w = Wiring {
                        bridge: Some(v.ovs_bridge.to_string()),
                        vlan: v.vlan,
                        dev: Some(v.bridge.to_string()),
                        vni: Some(v.vni),
                        mac: Some(h.mac),
                        ..Wiring::default()
                    };
                    let mut e = entry(IpNet::from(*ip), Class::Vm, vec![rows.of(h.source)], w);
                    if let Some(f) = unpinned.get(&(&v.bridge, h.mac)) {
                        e.held = false;
                        e.missing.insert(0, format!("bridge-fdb {f} static"));
                    }
                    out.push(e);
                }
            }
        }
    }
    if let Some(d) = dynamic {
        for e in &mut out {
            let network = match decision(e.prefix.addr()) {
                Some(x) if IpNet::from(x.ip) == e.prefix => d.network_of(i.desired, x),
                _ => subnets()
                    .find(|s| s.net == e.prefix)
                    .and_then(|s| d.network_of_subnet(i.desired, s)),
            };
            e.wiring.method = network.map(|n| n.describe());
        }
    }
    out.sort_by_key(|e| e.prefix);
    (out, vnis)
}

fn underlay_wiring(i: &StatusInputs<'_>, e: &ExposedIp) -> Wiring {
    let vrf = Some(i.desired.vrf.to_string());
    let Some(w) = &e.wiring else {
        // The host method's tenant IPs: announced only, OVN routes them
        // through the gateway.
        return Wiring {
            dev: Some(i.desired.bgp_nic.to_string()),
            vrf,
            ..Wiring::default()
        };
    };
    let (table, table_id) = bridge_table(i.actual, w.target.bridge.as_str());
    Wiring {
        bridge: Some(w.target.bridge.to_string()),
        vlan: w.target.vlan,
        dev: Some(w.target.dev.to_string()),
        table,
        table_id,
        vrf,
        via: None,
        ..Wiring::default()
    }
}

/// A bridge's table: its name, and its number where rt_tables has one.
fn bridge_table(actual: &Actual, bridge: &str) -> (Option<String>, Option<u32>) {
    (Some(bridge.to_string()), actual.rt_tables.lookup(bridge))
}

/// A status with no exposure computed: the daemon before its first
/// reconcile.
pub fn health_only(config: &Config, origin: ComputedBy, health: Health) -> Status {
    Status {
        origin,
        driver: config.default.driver.as_str().to_string(),
        exposing_method: config.default.exposing_method.as_str().to_string(),
        chassis: String::new(),
        exposed: Vec::new(),
        vnis: Vec::new(),
        notes: Vec::new(),
        health,
        fabric: None,
    }
}

/// The whole status from its inputs and the health part.
pub fn status(i: &StatusInputs<'_>, origin: ComputedBy, chassis: String, health: Health) -> Status {
    let (exposed, vnis) = exposures(i);
    Status {
        exposed,
        vnis,
        chassis,
        notes: i.desired.notes.clone(),
        ..health_only(i.config, origin, health)
    }
}

/// Where the loop sends a `/status` answer.
pub type Reply = oneshot::Sender<Status>;

/// A database's connection as `status` shows it.
pub fn db_health(source: &MonitoredDb, last_update_unix: Option<f64>) -> DbHealth {
    DbHealth {
        database: source.database.to_string(),
        connected_to: source.client.connected_to(),
        syncs: *source.client.cache().resynced().borrow(),
        last_update_unix,
    }
}

#[cfg(test)]
mod tests;
