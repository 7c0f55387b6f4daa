//! The NB driver's snapshot holds only the Logical_Switch_Port and NAT rows
//! this node needs ([`obgp_ovn::LspInterest`]), and the conditions that
//! select them follow the snapshot. Where they are applied
//! ([`ConditionTarget`]):
//! - `[DEFAULT] ovn_nb_monitor_all = false` (the default): sent to
//!   ovsdb-server as monitor conditions; the cache holds only those rows;
//! - `ovn_nb_monitor_all = true`: the server sends and the cache holds
//!   every row, and the follower's local filter
//!   ([`SnapshotFollower::set_local_filter`](crate::SnapshotFollower::set_local_filter))
//!   keeps the same rows in the typed snapshot.
//!
//! Which ports are needed depends on the other NB tables (a gateway moving
//! here adds its networks' ports), so before a reconcile reads the snapshot
//! the conditions are recomputed from it; when they changed they are
//! applied (sent with `monitor_cond_change`, or set as the local filter)
//! and the snapshot is read again once it holds their rows, until they stop
//! changing. A reconcile never computes from a snapshot whose conditions
//! have not converged: it waits, or is retried when the server cannot be
//! reached.

use std::sync::Mutex;
use std::time::Duration;

use obgp_config::{Config, Driver, ExposingMethod};
use obgp_ovn::{LogicalSwitchPort, LspInterest, Nat, NbChanges, NbRowFilter, Snapshot};
use obgp_ovsdb::Client;
use obgp_ovsdb_data::{Condition, MonitorSpec};

/// Rounds of recompute-and-send before giving up for this reconcile: the
/// conditions depend on their own rows only through the `router` ports,
/// which they always select, so one round settles them unless the database
/// keeps changing meanwhile.
const MAX_ROUNDS: usize = 5;

/// How long one condition change may take (it waits for a reconnect when
/// the server is away).
const CHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the port and NAT conditions are applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionTarget {
    /// Sent to ovsdb-server: the cache holds only the rows they select
    /// (`ovn_nb_monitor_all = false`).
    Server,
    /// The follower's local filter: the cache holds every row, the typed
    /// snapshot those they select (`ovn_nb_monitor_all = true`).
    LocalFilter,
}

/// The port conditions of the NB driver's snapshot.
#[derive(Debug)]
pub struct PortConditions {
    config: Config,
    system_hostname: Option<String>,
    target: ConditionTarget,
    /// The interest whose rows the snapshot holds (its conditions were
    /// acknowledged: `set_conditions` returned, or the first request; or
    /// set as the local filter); `None` while a change is unconfirmed.
    acked: Mutex<Option<LspInterest>>,
    /// The snapshot at which the acknowledged interest was last found to be
    /// the one the snapshot calls for: where the next reconcile's changes
    /// start when nothing else read the inputs meanwhile.
    verified_at: Mutex<Option<Snapshot>>,
}

/// Whether `config` asks for a conditional NB monitor, the port conditions
/// sent to the server: the NB driver's default (`ovn_nb_monitor_all =
/// false`). The other drivers read OVN_Southbound whole and do not read
/// the option.
pub fn conditional(config: &Config) -> bool {
    !config.default.ovn_nb_monitor_all && config.default.driver == Driver::NbOvnBgpDriver
}

impl PortConditions {
    /// The tables monitored by conditions; the others are monitored whole.
    pub const TABLES: [&'static str; 2] = [LogicalSwitchPort::TABLE, Nat::TABLE];

    /// Conditions for `config`'s node (the NB driver), applied where
    /// `ovn_nb_monitor_all` says: [`ConditionTarget::Server`] when
    /// [`conditional`], else [`ConditionTarget::LocalFilter`].
    pub fn new(config: &Config, system_hostname: Option<String>) -> PortConditions {
        PortConditions {
            config: config.clone(),
            system_hostname,
            target: if conditional(config) {
                ConditionTarget::Server
            } else {
                ConditionTarget::LocalFilter
            },
            acked: Mutex::new(None),
            verified_at: Mutex::new(None),
        }
    }

    /// Where the conditions are applied.
    pub fn target(&self) -> ConditionTarget {
        self.target
    }

    /// The ports `snap` calls for, `filled_with` being the interest whose
    /// rows its ports are.
    pub fn wanted(&self, snap: &Snapshot, filled_with: Option<&LspInterest>) -> LspInterest {
        let chassis =
            obgp_desired::chassis_name(&self.config, snap, self.system_hostname.as_deref())
                .unwrap_or_default();
        let interest = LspInterest::of(snap, Some(chassis), filled_with);
        match self.config.default.exposing_method {
            // The EVPN methods read every port an annotated switch lists
            // (its localnet, and for vrf its DHCP options); so does
            // dynamic, which may give a network either.
            ExposingMethod::Vrf | ExposingMethod::L2vni | ExposingMethod::Dynamic => {
                interest.with_bgpvpn_ports(snap)
            }
            _ => interest,
        }
    }

    /// The local filter `snap` calls for (`snap` holds only the local OVS):
    /// what the follower of a full monitor starts with, so that not even
    /// the first snapshot holds every port.
    pub fn initial_filter(&self, snap: &Snapshot) -> NbRowFilter {
        let wanted = self.wanted(snap, None);
        let filter = NbRowFilter::of(&wanted);
        *self.acked.lock().unwrap_or_else(|p| p.into_inner()) = Some(wanted);
        filter
    }

    /// `spec` with the conditions `snap` calls for on ports and NATs: what
    /// the first monitor request asks for (`snap` holds only the local OVS).
    pub fn initial_spec(&self, mut spec: MonitorSpec, snap: &Snapshot) -> MonitorSpec {
        let wanted = self.wanted(snap, None);
        for (table, conditions) in Self::table_conditions(&wanted) {
            if let Some(t) = spec.tables.get_mut(&table) {
                t.conditions = conditions;
            }
        }
        *self.acked.lock().unwrap_or_else(|p| p.into_inner()) = Some(wanted);
        spec
    }

    /// `spec`, the request a cache file was filled with (its port and NAT
    /// conditions those of the last run's interest), as the first request:
    /// the client can then resume from the file. The interest those
    /// conditions stand for is not known here, so the first round of
    /// [`PortConditions::converged`] computes it afresh (every missing
    /// port named) and sends it unless it is the same; nothing is read
    /// before the conditions converged, as on any start.
    pub fn resume_spec(&self, spec: MonitorSpec) -> MonitorSpec {
        *self.acked.lock().unwrap_or_else(|p| p.into_inner()) = None;
        spec
    }

    /// The monitor request `base` with the port and NAT conditions of the
    /// cache file whose header is `header`, if `base` with them is exactly
    /// the request the file was filled with (same tables, columns and kept
    /// keys).
    pub fn spec_of_cache_file(
        base: &MonitorSpec,
        header: &obgp_ovsdb_data::cache_file::CacheHeader,
    ) -> Option<MonitorSpec> {
        use obgp_ovsdb_data::cache_file::{monitor_conditions, monitor_identity};
        let mut spec = base.clone();
        for table in [LogicalSwitchPort::TABLE, Nat::TABLE] {
            spec.tables.get_mut(table)?.conditions = monitor_conditions(&header.monitor, table)?;
        }
        (monitor_identity(&spec) == header.monitor).then_some(spec)
    }

    /// The conditions of each table `interest` selects rows of.
    fn table_conditions(interest: &LspInterest) -> Vec<(String, Option<Vec<Condition>>)> {
        let [ports, nats] = Self::TABLES;
        vec![
            (ports.to_string(), Some(interest.conditions())),
            (nats.to_string(), Some(interest.nat_conditions())),
        ]
    }

    /// What the next reconcile reads (`read`, whose snapshot `snapshot_of`
    /// gives), once the port conditions are those the snapshot calls for
    /// and the snapshot holds their rows: sent to `client`'s server
    /// ([`ConditionTarget::Server`]; the next `read` once the server
    /// acknowledged them), or handed to `set_local_filter`
    /// ([`ConditionTarget::LocalFilter`]; the next `read` applies it). The
    /// error says why they did not converge (the caller's
    /// `MonitoredDbError::Conditions`).
    pub async fn converged<T>(
        &self,
        client: &Client,
        set_local_filter: impl Fn(NbRowFilter),
        read: impl Fn() -> T,
        snapshot_of: impl Fn(&T) -> &Snapshot,
        changes_so_far: impl Fn() -> NbChanges,
    ) -> Result<T, String> {
        for round in 0..MAX_ROUNDS {
            let inputs = read();
            let snap = snapshot_of(&inputs);
            // Computed and compared under the lock, not against a copy: the
            // interest holds a name per port bound here, and this runs on
            // every reconcile.
            let wanted = {
                let acked = self.acked.lock().unwrap_or_else(|p| p.into_inner());
                let mut verified_at = self.verified_at.lock().unwrap_or_else(|p| p.into_inner());
                // A reconcile after ports changed, none of which the
                // interest depends on: it stands, without computing it
                // from every local port and FIP (milliseconds at 50k).
                let unchanged = round == 0
                    && acked.as_ref().is_some_and(|acked| {
                        verified_at.as_ref().is_some_and(|at| {
                            changes_so_far()
                                .ports_between(at, snap)
                                .is_some_and(|ports| acked.unchanged_by(ports))
                        })
                    });
                if unchanged {
                    debug_assert_eq!(
                        Some(&self.wanted(snap, acked.as_ref())),
                        acked.as_ref(),
                        "LspInterest::unchanged_by said unchanged; the interest changed"
                    );
                    *verified_at = Some(snap.clone());
                    return Ok(inputs);
                }
                let wanted = self.wanted(snap, acked.as_ref());
                if acked.as_ref() == Some(&wanted) {
                    *verified_at = Some(snap.clone());
                    return Ok(inputs);
                }
                *verified_at = None;
                wanted
            };
            tracing::debug!(
                networks = wanted.networks.len(),
                names = wanted.names.len(),
                gateway_ports = wanted.gateway_ports.len(),
                fip_ports = wanted.fip_ports.len(),
                local_ifaces = wanted.local_ifaces.len(),
                target = ?self.target,
                "port and NAT conditions changed; applying them"
            );
            *self.acked.lock().unwrap_or_else(|p| p.into_inner()) = None;
            if self.target == ConditionTarget::LocalFilter {
                set_local_filter(NbRowFilter::of(&wanted));
                *self.acked.lock().unwrap_or_else(|p| p.into_inner()) = Some(wanted);
                continue;
            }
            let change = client.set_conditions_of(Self::table_conditions(&wanted));
            match tokio::time::timeout(CHANGE_TIMEOUT, change).await {
                Ok(Ok(())) => {
                    *self.acked.lock().unwrap_or_else(|p| p.into_inner()) = Some(wanted);
                }
                Ok(Err(e)) => return Err(e.to_string()),
                Err(_) => {
                    return Err(format!(
                        "no answer to the condition change within {CHANGE_TIMEOUT:?}"
                    ))
                }
            }
        }
        Err(format!(
            "the conditions kept changing over {MAX_ROUNDS} rounds"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The l2vni scenario's OVN rows (an annotated switch with its
    /// localnet and VM ports).
    fn l2vni_snapshot() -> Snapshot {
        let p = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/l2vni/basic.json"
        );
        let sc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        Snapshot::from_wire(&sc["ovn"]).unwrap()
    }

    #[test]
    fn the_evpn_methods_monitor_every_port_once_a_switch_is_annotated() {
        let snap = l2vni_snapshot();
        for (method, all) in [
            (ExposingMethod::Vrf, true),
            (ExposingMethod::L2vni, true),
            (ExposingMethod::Dynamic, true),
            (ExposingMethod::Underlay, false),
        ] {
            let mut config = Config::default();
            config.default.exposing_method = method;
            let wanted = PortConditions::new(&config, None).wanted(&snap, None);
            assert_eq!(
                wanted.conditions() == vec![Condition::True],
                all,
                "{method:?}"
            );
        }
    }
}
