//! `nb_ovn_bgp_driver` with `exposing_method = ovn`: the NB driver's
//! exposures, reached through a node-local OVN cluster instead of kernel
//! routing (docs/modes.md, ADR 0008).
//!
//! What is exposed is the NB underlay driver's decision, reused as is
//! ([`crate::desired_state`] under `exposing_method = underlay`); this
//! module decides how it is reached: the rows of the node-local NB
//! ([`rows`]), the cookie-999 flows and FDB entries on the OVS bridges,
//! and which announcements stay (only those the local cluster reaches).
//! Pure: the kernel facts it needs (the external bridges' MAC and
//! addresses) come in [`LocalFacts`].

mod rows;

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipnet::IpNet;
use obgp_config::{Config, Driver, ExposingMethod};
use obgp_local_cluster::LocalClusterRows;
use obgp_netmodel::{cookie, Class, DevName, Flow, FlowAction, FlowMatch, MacAddr};
use obgp_ovn::Snapshot;
use serde::{Deserialize, Serialize};

use crate::local_cluster::{LocalCluster, Segment};
use crate::model::Desired;
use crate::provenance::{Reason, Rejection, Trace};
use crate::{DesiredError, NodeFacts};

pub use rows::{
    gateway_chassis_name, internal_router_port, ROUTER, ROUTER_INTERNAL_MAC, ROUTER_POLICY_PRIORITY,
};

/// What the kernel says about a bridge of the local cluster's external
/// side (upstream `get_nic_info`): read by the caller before each
/// computation.
///
/// Scenario files and `plan --ovn` give them as JSON:
/// `{"mac": "aa:..", "addrs": ["100.64.1.9/30"]}`, both keys optional.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BridgeFacts {
    pub mac: Option<MacAddr>,
    /// Its addresses, in the kernel's order.
    pub addrs: Vec<IpNet>,
}

/// The kernel facts of the external bridges, by bridge name; in JSON, an
/// object of [`BridgeFacts`] by bridge name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct LocalFacts {
    pub bridges: BTreeMap<String, BridgeFacts>,
}

pub use obgp_netmodel::FdbEntry;

/// The `config` member of the golden files (`fixtures/ovn-local/*.json`):
/// the `[local_ovn_cluster]` options a case sets, and
/// `expose_tenant_networks`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GoldenConfig {
    pub peer_ips: Vec<String>,
    pub external_nics: Vec<String>,
    pub provider_networks_pool_prefixes: Vec<String>,
    pub bgp_chassis_id: Option<String>,
    pub expose_tenant_networks: Option<bool>,
}

impl GoldenConfig {
    /// The NB driver in this mode (router-id 192.0.2.1) with the case's
    /// options; the rest upstream's defaults.
    pub fn config(&self) -> Config {
        let mut c = Config::default();
        c.default.driver = Driver::NbOvnBgpDriver;
        c.default.exposing_method = ExposingMethod::Ovn;
        c.default.bgp_router_id = Some("192.0.2.1".into());
        if let Some(t) = self.expose_tenant_networks {
            c.default.expose_tenant_networks = t;
        }
        let lc = &mut c.local_ovn_cluster;
        lc.peer_ips = self.peer_ips.clone();
        lc.external_nics = self.external_nics.clone();
        lc.provider_networks_pool_prefixes = self.provider_networks_pool_prefixes.clone();
        if let Some(id) = &self.bgp_chassis_id {
            lc.bgp_chassis_id = id.clone();
        }
        c
    }
}

/// Everything `exposing_method = ovn` wants, in its own terms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OvnMethod {
    /// The NB driver's exposures that the local cluster reaches: what is
    /// announced on `bgp_nic` (`bridges` and `tenant_subnets` are empty:
    /// this mode has no kernel wiring). Their `wiring` is the underlay
    /// driver's, kept for the MACs: do not flatten this with
    /// [`Desired::to_node`], which would wire them in the kernel.
    pub exposure: Desired,
    /// The segments of the local cluster, internal first.
    pub segments: Vec<Segment>,
    /// The rows of the node-local NB.
    pub local_nb: LocalClusterRows,
    /// The cookie-999 flows: egress on the OpenStack bridges, ingress on
    /// the external ones.
    pub flows: BTreeSet<Flow>,
    pub fdb: BTreeSet<FdbEntry>,
    /// What was refused or could not be built yet, each naming the value.
    pub notes: Vec<String>,
}

/// The IPv4 and IPv6 peers of `[local_ovn_cluster] peer_ips`, validated.
fn peers(config: &Config) -> Result<Vec<IpAddr>, DesiredError> {
    config
        .local_ovn_cluster
        .peer_ips
        .iter()
        .map(|p| {
            p.parse::<IpAddr>().map_err(|_| DesiredError::BadConfig {
                option: "peer_ips",
                value: p.clone(),
                reason: "not an IP address".into(),
            })
        })
        .collect()
}

fn pool(config: &Config) -> Result<Vec<IpNet>, DesiredError> {
    let raw = &config.local_ovn_cluster.provider_networks_pool_prefixes;
    if raw.is_empty() {
        return Err(DesiredError::BadConfig {
            option: "provider_networks_pool_prefixes",
            value: String::new(),
            reason: "exposing_method = ovn needs the prefixes the local router answers for".into(),
        });
    }
    raw.iter()
        .map(|p| {
            p.parse::<IpNet>().map_err(|_| DesiredError::BadConfig {
                option: "provider_networks_pool_prefixes",
                value: p.clone(),
                reason: "not a CIDR prefix".into(),
            })
        })
        .collect()
}

/// `bgp_chassis_id` goes into row names and match-free columns
/// (`chassis_name`, `<port>_<chassis>`) and an OVS key suffix: printable
/// ASCII without spaces, quotes, commas or colons.
fn chassis_id(id: &str) -> Result<(), DesiredError> {
    let ok = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_graphic() && !matches!(c, '"' | '\\' | ',' | ':'));
    if ok {
        return Ok(());
    }
    Err(DesiredError::BadConfig {
        option: "bgp_chassis_id",
        value: id.to_string(),
        reason: "must be printable ASCII without spaces, quotes, commas or colons".into(),
    })
}

/// The segments: the bgp mappings, internal ones (bridge also mapped by
/// OpenStack) first. Only the first internal one is served: the pool
/// prefixes are one set, answered by one router port.
fn segments(snap: &Snapshot, config: &Config, notes: &mut Vec<String>) -> Vec<Segment> {
    let chassis = &config.local_ovn_cluster.bgp_chassis_id;
    let Some(mappings) = snap.ovs.suffixed_bridge_mappings.get(chassis) else {
        notes.push(format!(
            "Open_vSwitch external_ids:ovn-bridge-mappings-{chassis} is unset: the local cluster has no switch"
        ));
        return Vec::new();
    };
    let openstack: BTreeSet<&str> = snap
        .ovs
        .bridge_mappings
        .iter()
        .map(|m| m.bridge.as_str())
        .collect();
    let mut internal = Vec::new();
    let mut external = Vec::new();
    let mut networks = BTreeSet::new();
    for m in mappings {
        if !networks.insert(m.network.as_str()) {
            notes.push(format!(
                "ovn-bridge-mappings-{chassis}: network {} listed twice, the first wins",
                m.network
            ));
            continue;
        }
        if openstack.contains(m.bridge.as_str()) {
            internal.push(m);
        } else {
            external.push(m);
        }
    }
    let mut out = Vec::new();
    for (i, m) in internal.iter().enumerate() {
        if i > 0 {
            notes.push(format!(
                "internal segment {}:{} refused: the local router has one internal port (bgp-router-openstack) for provider_networks_pool_prefixes, taken by {}",
                m.network, m.bridge, out.first().map_or("", |s: &Segment| s.network.as_str())
            ));
            continue;
        }
        let vlan = internal_vlan(snap, &m.bridge, notes);
        out.push(Segment {
            network: m.network.clone(),
            bridge: m.bridge.clone(),
            internal: true,
            vlan,
        });
    }
    out.extend(external.into_iter().map(|m| Segment {
        network: m.network.clone(),
        bridge: m.bridge.clone(),
        internal: false,
        vlan: None,
    }));
    out
}

/// The VLAN the internal localnet carries: the tag of the OpenStack
/// provider networks on `bridge` (untagged when one is flat; the smallest
/// tag when several, the others noted and not served).
fn internal_vlan(snap: &Snapshot, bridge: &DevName, notes: &mut Vec<String>) -> Option<u16> {
    let mut tags: BTreeSet<Option<u16>> = BTreeSet::new();
    for m in snap
        .ovs
        .bridge_mappings
        .iter()
        .filter(|m| &m.bridge == bridge)
    {
        tags.extend(snap.localnets_on_physnet(&m.network).map(|ln| ln.tag));
    }
    let chosen = tags.iter().next().copied().flatten();
    let others: Vec<String> = tags
        .iter()
        .filter(|t| **t != chosen)
        .map(|t| t.map_or("flat".to_string(), |v| format!("VLAN {v}")))
        .collect();
    if !others.is_empty() {
        notes.push(format!(
            "bridge {bridge}: provider networks on {} are not served (one internal segment, {})",
            others.join(", "),
            chosen.map_or("flat".to_string(), |v| format!("VLAN {v}"))
        ));
    }
    chosen
}

/// Computes what `exposing_method = ovn` wants on this node.
pub fn desired_ovn_method(
    snap: &Snapshot,
    config: &Config,
    facts: &NodeFacts,
    local: &LocalFacts,
) -> Result<OvnMethod, DesiredError> {
    traced(snap, config, facts, local, Trace::default()).map(|(o, _)| o)
}

/// [`desired_ovn_method`] recording into `trace`: the underlay driver's
/// exposure decisions (its refusals recorded too), then what of them the
/// node-local cluster reaches, its NB rows, flows and FDB entries.
pub(crate) fn traced(
    snap: &Snapshot,
    config: &Config,
    facts: &NodeFacts,
    local: &LocalFacts,
    trace: Trace,
) -> Result<(OvnMethod, Trace), DesiredError> {
    let d = &config.default;
    if d.driver != Driver::NbOvnBgpDriver {
        return Err(DesiredError::Unsupported {
            driver: d.driver,
            method: ExposingMethod::Ovn,
        });
    }
    let mut underlay = config.clone();
    underlay.default.exposing_method = ExposingMethod::Underlay;
    let (mut exposure, _, mut trace) = crate::compute_traced(snap, &underlay, facts, trace)?;
    let peers = peers(config)?;
    let pool = pool(config)?;
    chassis_id(&config.local_ovn_cluster.bgp_chassis_id)?;
    let mut notes = Vec::new();
    let segments = segments(snap, config, &mut notes);
    keep_reachable(&mut exposure, &segments, &mut notes, &mut trace);

    let mut local_nb = LocalClusterRows::default();
    let built = rows::build(
        &mut local_nb,
        rows::RowInputs {
            segments: &segments,
            peers: &peers,
            pool: &pool,
            chassis: &config.local_ovn_cluster.bgp_chassis_id,
            local,
            exposure: &exposure,
        },
        &mut notes,
    );
    let mut flows = egress_flows(snap);
    let mut fdb = BTreeSet::new();
    for seg in segments.iter().filter(|s| !s.internal) {
        let Some(mac) = built.external_macs.get(&seg.network) else {
            continue;
        };
        flows.extend(ingress_flows(snap, config, seg, &pool, &mut notes));
        fdb.insert(FdbEntry {
            bridge: seg.bridge.clone(),
            port: seg.bridge.as_str().to_string(),
            vlan: 0,
            mac: *mac,
        });
    }
    let ovn = OvnMethod {
        exposure,
        segments,
        local_nb,
        flows,
        fdb,
        notes,
    };
    Ok((ovn, trace))
}

/// Keeps the announcements the local cluster reaches: provider exposures
/// on the internal segment's bridge and VLAN. Tenant networks are refused
/// (ADR 0008): the local router does not route them.
fn keep_reachable(
    exposure: &mut Desired,
    segments: &[Segment],
    notes: &mut Vec<String>,
    trace: &mut Trace,
) {
    for t in exposure.tenant_subnets.drain(..) {
        notes.push(format!(
            "tenant subnet {} (router {}) refused: exposing_method = ovn does not route tenant networks",
            t.net, t.router
        ));
    }
    let internal = segments.iter().find(|s| s.internal);
    exposure.exposed.retain(|ip, e| {
        let why = match (&e.wiring, internal) {
            (_, _) if matches!(e.class, Class::Subnet | Class::TenantVm) => {
                "tenant networks are not routed by the local cluster".to_string()
            }
            (None, _) => "no provider network wiring".to_string(),
            (Some(_), None) => "the local cluster has no internal segment".to_string(),
            (Some(w), Some(seg)) if w.target.bridge != seg.bridge => format!(
                "bridge {} is not the local cluster's internal bridge {}",
                w.target.bridge, seg.bridge
            ),
            (Some(w), Some(seg)) if w.target.vlan != seg.vlan => format!(
                "its provider network's VLAN {:?} is not the internal segment's {:?}",
                w.target.vlan, seg.vlan
            ),
            _ => return true,
        };
        notes.push(format!("{ip} ({}) not announced: {why}", e.source));
        trace.reject(|| {
            Rejection::of(
                e.source,
                Reason::NotReachedByLocalCluster { why: why.clone() },
            )
            .ip(*ip)
        });
        false
    });
    exposure.bridges.clear();
}

/// The egress flows of every OpenStack-mapped bridge: what leaves
/// OpenStack's patch ports goes to the local router's internal MAC.
fn egress_flows(snap: &Snapshot) -> BTreeSet<Flow> {
    let mut flows = BTreeSet::new();
    let bridges: BTreeSet<&DevName> = snap.ovs.bridge_mappings.iter().map(|m| &m.bridge).collect();
    for bridge in bridges {
        let ports = snap.ovs.bridge_ports.get(bridge.as_str());
        for port in ports.into_iter().flatten() {
            if !port.starts_with("patch-provnet-") {
                continue;
            }
            for protocol in ["ip", "ipv6"] {
                flows.insert(Flow {
                    bridge: bridge.clone(),
                    cookie: cookie::MAC_TWEAK,
                    table: 0,
                    priority: 1000,
                    protocol: protocol.into(),
                    in_port: port.clone(),
                    matches: Vec::new(),
                    actions: vec![
                        FlowAction::ModDlDst(ROUTER_INTERNAL_MAC),
                        FlowAction::Normal,
                    ],
                });
            }
        }
    }
    flows
}

/// The ingress flows of an external bridge: traffic from its fabric NIC
/// to a pool prefix goes to the local cluster's patch port, addressed to
/// the router port's MAC (the bridge's).
fn ingress_flows(
    snap: &Snapshot,
    config: &Config,
    seg: &Segment,
    pool: &[IpNet],
    notes: &mut Vec<String>,
) -> Vec<Flow> {
    let ports = snap
        .ovs
        .bridge_ports
        .get(seg.bridge.as_str())
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let nics = &config.local_ovn_cluster.external_nics;
    let Some(nic) = ports.iter().find(|p| nics.contains(p)) else {
        notes.push(format!(
            "bridge {}: none of external_nics {nics:?} is one of its ports: no ingress flows",
            seg.bridge
        ));
        return Vec::new();
    };
    let prefix = format!("patch-{}-localnet-to-", seg.network);
    let Some(patch) = ports.iter().find(|p| p.starts_with(&prefix)) else {
        notes.push(format!(
            "bridge {}: no patch port {prefix}* yet (the local ovn-controller creates it): no ingress flows",
            seg.bridge
        ));
        return Vec::new();
    };
    pool.iter()
        .map(|net| Flow {
            bridge: seg.bridge.clone(),
            cookie: cookie::MAC_TWEAK,
            table: 0,
            priority: 1000,
            protocol: if net.addr().is_ipv4() { "ip" } else { "ipv6" }.into(),
            in_port: nic.clone(),
            matches: vec![FlowMatch::Dst(net.trunc())],
            actions: vec![
                FlowAction::ModDlDstBridgeMac,
                FlowAction::Output(patch.clone()),
            ],
        })
        .collect()
}

impl OvnMethod {
    /// Flattens into the node objects the planner diffs against the node:
    /// the announcements on `bgp_nic` (the VRF, `bgp_nic` and the VRF leak
    /// as the underlay driver has them, each exposed IP's /32 or /128
    /// there) without any kernel wiring (no bridge tables, rules, routes,
    /// neighbours: the local cluster routes), plus the cookie-999 flows.
    /// The local-NB rows and the FDB entries are not node objects.
    pub fn to_node(&self) -> obgp_netmodel::DesiredNode {
        self.clone().into_desired().to_node()
    }

    /// The desired state the reconcile plans with: the announcements
    /// without kernel wiring (the exposures' `wiring` dropped: the local
    /// cluster routes), the cluster in [`Desired::local_cluster`], and
    /// this mode's notes after the underlay driver's.
    pub fn into_desired(self) -> Desired {
        let mut d = self.exposure;
        d.bridges.clear();
        d.tenant_subnets.clear();
        for e in d.exposed.values_mut() {
            e.wiring = None;
        }
        d.notes.extend(self.notes);
        d.local_cluster = Some(LocalCluster {
            segments: self.segments,
            local_nb: self.local_nb,
            flows: self.flows,
            fdb: self.fdb,
        });
        d
    }
}

/// The kernel facts of `bridges` (the local cluster's external bridges)
/// from the node's links and addresses: each bridge's MAC and addresses
/// (in the order given). A bridge the node does not have gets no entry.
pub fn local_facts<'a>(
    bridges: impl IntoIterator<Item = &'a DevName>,
    mac_of: impl Fn(&DevName) -> Option<Option<MacAddr>>,
    addresses: impl IntoIterator<Item = (&'a DevName, IpNet)> + Clone,
) -> LocalFacts {
    let mut facts = LocalFacts::default();
    for bridge in bridges {
        let Some(mac) = mac_of(bridge) else {
            continue;
        };
        let addrs = addresses
            .clone()
            .into_iter()
            .filter(|(dev, _)| *dev == bridge)
            .map(|(_, net)| net)
            .collect();
        facts
            .bridges
            .insert(bridge.as_str().to_string(), BridgeFacts { mac, addrs });
    }
    facts
}

/// The bridges of the local cluster's external segments
/// (`ovn-bridge-mappings-<bgp_chassis_id>` minus OpenStack's), whose
/// kernel facts [`desired_ovn_method`] needs.
pub fn external_bridges(snap: &Snapshot, config: &Config) -> Vec<DevName> {
    let mut notes = Vec::new();
    segments(snap, config, &mut notes)
        .into_iter()
        .filter(|s| !s.internal)
        .map(|s| s.bridge)
        .collect()
}
