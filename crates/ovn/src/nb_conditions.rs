//! Which Logical_Switch_Port rows the NB driver needs on one node, as
//! monitor conditions: `[DEFAULT] ovn_nb_monitor_all = false`.
//!
//! The other NB tables are small (switches, routers and their ports, NAT,
//! load balancers, NB_Global, DHCP options) and stay monitored whole. Ports
//! are most of the database, and a node reads few of them. The driver
//! (`obgp-desired`, `nb_underlay.rs`, `evpn.rs`, `ovn_method.rs`) looks a
//! port up only as:
//!
//! | what the driver reads | clause |
//! |---|---|
//! | localnet ports (provider networks, VLAN tags) | `type == "localnet"` |
//! | router interfaces of local gateways, gateway ports | `type == "router"` |
//! | VM and virtual ports bound here (`binding_candidates`) | `options includes {requested-chassis: <chassis>}`, `external_ids includes {neutron:host_id: <chassis>}` |
//! | a live migration's destination (`requested-chassis = "src,dst"`) with `activation-strategy=rarp` | `options includes {activation-strategy: rarp}` (widened, see below) |
//! | a port whose VIF is plugged here (local OVS `Interface` `external_ids:iface-id`) that no other clause holds: a migration's destination without the strategy, a `requested-chassis` written with spaces | `name == <iface-id>` per such port |
//! | the VMs of tenant networks behind gateways hosted here | `external_ids includes {neutron:network_name: <net>}` per network |
//! | centralized FIP ports, LB VIP ports (looked up by name) | `name == <port>` per name |
//! | the ports of BGPVPN-annotated switches (EVPN `vrf` mode) | every port, while such a switch exists |
//!
//! NAT is the one other large table (a SNAT per subnet, a FIP per few VMs);
//! the driver reads the SNATs of the routers whose gateway is hosted here
//! (`type == snat`: all SNATs, one per subnet), the NATs on the gateway
//! ports hosted here (`gateway_port == <lrp>`) and the distributed FIPs of
//! the ports bound here and of the local LB VIP ports (`logical_port ==
//! <port>`): [`LspInterest::nat_conditions`]. They depend on the ports
//! bound here, which the port conditions select; the fixpoint covers it.
//!
//! OVSDB conditions compare whole values: `requested-chassis = "a,b"` (a
//! port migrating from `a` to `b`) matches neither `a` nor `b`. The source
//! is covered by `neutron:host_id`, which Neutron keeps on the source until
//! the migration ends. The destination has two signals:
//! - Neutron writes `activation-strategy=rarp` with a two-chassis
//!   `requested-chassis` (its `[ovn] live_migration_activation_strategy`,
//!   `rarp` by default): the clause is widened to every such port of the
//!   cloud (few at a time);
//! - it leaves the strategy out for vhost-user ports, and an operator may
//!   set the option empty. Then the VIF is the signal: Nova's
//!   `pre_live_migration` plugs it on the destination (os-vif creates the
//!   OVS port with `external_ids:iface-id` = the Neutron port for
//!   vhost-user, hybrid and per-port-bridge plugging) before it sets
//!   `migrating_to`, from which Neutron writes the second chassis. Every
//!   port plugged here that no other clause holds is named
//!   ([`LspInterest::local_ifaces`]), so the row is in the cache when
//!   `requested-chassis` names this chassis. (A plain OVS port, which
//!   libvirt creates when the transfer starts, is plugged after that write:
//!   without the strategy the destination then sees the port when the
//!   transfer starts, a window docs/ovsdb.md describes.)
//!
//! A name is not asked for when the port it names is already held through
//! its network or `neutron:host_id` (most FIP and VIP ports are VMs of the
//! networks behind the gateway): ovsdb-server evaluates a condition that
//! mixes `includes` with `==` clause by clause, for every row of the table,
//! on every change (with the old and the new conditions), so a thousand
//! names cost it more than the ports they select. While the networks are
//! changing (a gateway arrived), the names of ports not yet in the cache
//! wait for the next round, when the cache holds the networks' ports: only
//! those still missing then are named. At the fixpoint (the conditions the
//! cache was filled with are those computed from it) every port the driver
//! looks up by name is in the cache or named.
//!
//! Every other clause is a superset of what the driver reads (a gateway
//! counts as local whatever its addresses, a network whatever the tenant
//! options), so a port the driver reads is never missing; a few ports it
//! does not read are kept. The sets depend on rows the clauses select only
//! through the whole tables and the `router` ports, so one recomputation
//! after a change reaches the fixpoint; the caller still iterates until the
//! conditions stop changing.

use std::collections::BTreeSet;

use obgp_ovsdb_data::{Atom, Condition, Datum, Uuid};

use crate::changes::PortChanges;
use crate::nb::{LogicalSwitchPort, LspType};
use crate::neutron::{key, port_type};
use crate::snapshot::Snapshot;

/// `options:activation-strategy`, which Neutron sets to `rarp` on a port
/// whose `requested-chassis` names the two chassis of a live migration.
pub const ACTIVATION_STRATEGY: &str = key::ACTIVATION_STRATEGY;
/// The value Neutron writes in [`ACTIVATION_STRATEGY`].
pub const RARP: &str = "rarp";

/// The Logical_Switch_Port rows one node needs: what becomes the table's
/// monitor conditions ([`LspInterest::conditions`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LspInterest {
    /// This chassis as ports name it (OVS `external_ids:hostname`, else the
    /// system hostname); `None`: no port can be bound here.
    pub chassis: Option<String>,
    /// `neutron:network_name` of the networks behind the gateways hosted
    /// here (their VMs are exposed through the gateway).
    pub networks: BTreeSet<String>,
    /// Port names the driver looks up: the logical ports of the FIPs on the
    /// gateways hosted here, the VIP ports of their routers' load balancers.
    pub names: BTreeSet<String>,
    /// Every port: the EVPN `vrf` mode reads every port of the BGPVPN
    /// switches (see [`LspInterest::with_bgpvpn_ports`]).
    pub all_ports: bool,
    /// Gateway router ports hosted here: the NATs on them (centralized
    /// FIPs) are read.
    pub gateway_ports: BTreeSet<Uuid>,
    /// Logical ports whose NAT is read (distributed FIPs): the ports bound
    /// here with `neutron:port_fip`, the VIP ports of the local load
    /// balancers with `neutron:vip_fip`.
    pub fip_ports: BTreeSet<String>,
    /// The logical ports plugged here (local OVS `iface-id`s) that no
    /// binding or network clause holds: a live migration's destination
    /// written without `activation-strategy` (see the module doc).
    pub local_ifaces: BTreeSet<String>,
}

impl LspInterest {
    /// What `snap` says this node needs, `chassis` being its name in port
    /// bindings and `snap.ovs.system_id` its name in `hosting-chassis`;
    /// `filled_with` is the interest whose rows `snap`'s ports are (`None`
    /// when unknown: every missing port is named).
    pub fn of(
        snap: &Snapshot,
        chassis: Option<&str>,
        filled_with: Option<&LspInterest>,
    ) -> LspInterest {
        let mut out = LspInterest {
            chassis: chassis.filter(|c| !c.is_empty()).map(str::to_string),
            ..LspInterest::default()
        };
        if let Some(system_id) = snap.ovs.system_id.as_deref() {
            for lrp in snap.lrps_hosted_on(system_id) {
                out.gateway_ports.insert(lrp.uuid);
                // Centralized FIPs are read when NB_Global says so; the
                // flag lives in a whole table, but asking for the ports
                // whatever it says keeps the conditions from depending on it.
                for nat in snap.fips_on_gateway_port(lrp.uuid) {
                    out.names.extend(nat.logical_port.iter().cloned());
                }
                let Some(router) = lrp.router.as_deref() else {
                    continue;
                };
                for iface in snap.router_interfaces(router) {
                    out.networks
                        .extend(iface.network.iter().map(|n| n.to_string()));
                }
                for lb in snap.lbs_of_router(router) {
                    out.names.extend(lb.vip_port.iter().cloned());
                    if lb.vip_fip.is_some() {
                        out.fip_ports.extend(lb.vip_port.iter().cloned());
                    }
                }
            }
        }
        if let Some(chassis) = &out.chassis {
            let with_fip = snap
                .active_vifs_on_chassis(chassis)
                .filter(|p| p.port_fip.is_some());
            out.fip_ports.extend(with_fip.map(|p| p.name.to_string()));
        }
        // A looked-up port the cache holds through an exact clause needs no
        // clause of its own (FIP and VIP ports are mostly VMs of the
        // networks behind the gateway): ovsdb-server evaluates the clauses
        // of a condition that is not all `==` one by one, for every row.
        // Port names are unique (the schema's index); if the port leaves
        // its network, the next recomputation names it again.
        let networks_settled = filled_with.is_none_or(|f| f.networks == out.networks);
        let names = std::mem::take(&mut out.names);
        out.names = names
            .into_iter()
            .filter(|name| match snap.lsp(name) {
                Some(p) => !out.selects_by_value(p),
                None => networks_settled,
            })
            .collect();
        // The ports plugged here. Most are bound here and held by the
        // binding clauses; one missing from the cache is named only once
        // the cache was filled with this node's binding and network
        // clauses (not in the first request: the VMs bound here would all
        // be named, at a cost per row on the server).
        if out.chassis.is_some() {
            let bindings_settled =
                filled_with.is_some_and(|f| f.chassis == out.chassis && f.networks == out.networks);
            out.local_ifaces = snap
                .ovs
                .iface_ids
                .iter()
                .filter(|id| match snap.lsp(id) {
                    Some(p) => !out.selects_by_value(p),
                    None => bindings_settled,
                })
                .cloned()
                .collect();
        }
        out
    }

    /// With every port when a switch has BGPVPN annotations: the EVPN
    /// `vrf` mode reads all the ports such a switch lists. Selecting them
    /// by `_uuid` would be exact, but ovsdb-server 3.1 stopped (crashed)
    /// on updates after `_uuid` clauses were set on NAT in the oracle test,
    /// so no condition uses `_uuid`.
    pub fn with_bgpvpn_ports(mut self, snap: &Snapshot) -> LspInterest {
        self.all_ports = !snap.bgpvpn_switches().is_empty();
        self
    }

    /// Whether [`LspInterest::of`] would give this interest again after
    /// `ports` changed and nothing else did ([`crate::NbChanges::Ports`]:
    /// no router, router port, NAT, load balancer or switch name, no local
    /// OVS change), this interest being a fixpoint (the interest the cache
    /// was filled with). `false` when a changed port, before or after, is a
    /// router interface or localnet, has a FIP, is named by the interest
    /// (a FIP or VIP port, a port plugged here, a port whose FIP is read),
    /// or leaves the network and `neutron:host_id` clauses (or is renamed
    /// while they hold it): then the
    /// interest may change and is computed again. A superset of the cases
    /// that change it, so that a reconcile after a VM port's change does
    /// not recompute it from every local port and FIP.
    pub fn unchanged_by(&self, ports: &PortChanges) -> bool {
        ports.iter().all(|change| {
            let named = |p: &LogicalSwitchPort| {
                let name = p.name.as_str();
                self.names.contains(name)
                    || self.local_ifaces.contains(name)
                    || self.fip_ports.contains(name)
            };
            let telling = |p: &LogicalSwitchPort| {
                matches!(p.kind, LspType::Router | LspType::Localnet)
                    || p.port_fip.is_some()
                    || named(p)
            };
            let old = change.old.as_deref();
            let new = change.new.as_deref();
            // A port the network or host clause held under its name, no
            // longer held under it (gone, moved, renamed): a FIP, VIP or
            // plugged port it was may now need naming.
            let leaves = old.is_some_and(|o| {
                self.selects_by_value(o)
                    && !new.is_some_and(|n| n.name == o.name && self.selects_by_value(n))
            });
            !leaves && !old.is_some_and(telling) && !new.is_some_and(telling)
        })
    }

    /// Whether `port` matches the network or `neutron:host_id` clause:
    /// the cache keeps it whatever its name.
    fn selects_by_value(&self, port: &LogicalSwitchPort) -> bool {
        let on_network = port
            .network
            .as_ref()
            .is_some_and(|n| self.networks.contains(n.as_str()));
        let host_here =
            self.chassis.is_some() && port.host_id.as_deref() == self.chassis.as_deref();
        on_network || host_here
    }

    /// The Logical_Switch_Port conditions (the server sends the rows that
    /// match any clause).
    pub fn conditions(&self) -> Vec<Condition> {
        if self.all_ports {
            return vec![Condition::True];
        }
        let s = |v: &str| Atom::String(v.into());
        let pair = |k: &str, v: &str| Datum::map(vec![(s(k), s(v))]);
        let mut out = vec![
            Condition::eq("type", Datum::scalar(s(port_type::LOCALNET))),
            Condition::eq("type", Datum::scalar(s(port_type::ROUTER))),
            Condition::includes("options", pair(ACTIVATION_STRATEGY, RARP)),
        ];
        if let Some(c) = &self.chassis {
            out.push(Condition::includes(
                "options",
                pair(key::REQUESTED_CHASSIS, c),
            ));
            out.push(Condition::includes("external_ids", pair(key::HOST_ID, c)));
        }
        for net in &self.networks {
            out.push(Condition::includes(
                "external_ids",
                pair(key::NETWORK_NAME, net),
            ));
        }
        for name in self.names.union(&self.local_ifaces) {
            out.push(Condition::eq("name", Datum::scalar(s(name))));
        }
        out
    }

    /// The NAT conditions, all `==` (ovsdb-server hashes those, so their
    /// number costs it little): every SNAT (one per subnet; the routers'
    /// SNATs are read with `require_snat_disabled_for_tenant_networks`, and
    /// selecting them by type needs no `_uuid` clause), the NATs on the
    /// gateway ports hosted here (centralized FIPs), the NATs of the ports
    /// whose distributed FIP is read.
    pub fn nat_conditions(&self) -> Vec<Condition> {
        let uuid = |u: &Uuid| Datum::scalar(Atom::Uuid(*u));
        let snat = Datum::scalar(Atom::String(crate::neutron::nat_type::SNAT.into()));
        std::iter::once(Condition::eq("type", snat))
            .chain(
                self.gateway_ports
                    .iter()
                    .map(|u| Condition::eq("gateway_port", uuid(u))),
            )
            .chain(self.fip_ports.iter().map(|p| {
                Condition::eq(
                    "logical_port",
                    Datum::scalar(Atom::String(p.as_str().into())),
                )
            }))
            .collect()
    }
}

#[cfg(test)]
mod tests;
