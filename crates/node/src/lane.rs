//! The command lane: the one reader and writer of FRR (`vtysh`) and of the
//! OVS bridges' ports and agent flows (`ovs-ofctl`; the agent's ports with
//! `ovs-vsctl`), on a thread of its own.
//!
//! A reconcile never waits for either. It plans with what the lane last
//! read ([`CommandLane::view`]: fresh, or *unknown* while a read is due or
//! an op on it is in flight, so nothing is planned on it), and hands the
//! lane the command ops of its plan ([`CommandLane::submit`]). The lane
//! applies them in order, re-reads what they touched and what a view asked
//! for, then signals ([`LaneSignal`]): the agent reconciles with what it
//! learnt, or retries after a failure with its backoff. A wedged bgpd or
//! ovs-vswitchd costs each command its deadline on this thread only; the
//! netlink side of every reconcile goes on as usual.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use obgp_netmodel::DevName;
use obgp_plan::actual::{FrrState, OvsBridge};
use obgp_plan::op::Op;
use tokio::sync::watch;

use crate::commands::{
    frr_check_lines, frr_router_id, read_frr_state, read_ovs_bridge, run_command_op, DriftProbe,
    EvpnSeen,
};
use crate::config::KernelConfig;
use crate::deadline::{self, InFlight};
use crate::error::IoError;
use crate::Scope;

/// What the lane knows of FRR and the OVS bridges for one scope.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandView {
    /// Bridges read and in OVS.
    pub bridges: BTreeMap<DevName, OvsBridge>,
    /// Bridges not read yet, or whose read failed, or with an op in flight.
    pub bridges_unknown: BTreeSet<DevName>,
    /// `unknown` while FRR is not read yet, its read failed, or an FRR op
    /// is in flight.
    pub frr: FrrState,
}

impl CommandView {
    /// Whether everything the scope asked for is known.
    pub fn is_complete(&self) -> bool {
        self.bridges_unknown.is_empty() && !self.frr.unknown
    }
}

/// What the lane tells the agent each time it runs out of work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaneSignal {
    /// Counts the times the lane went idle.
    pub round: u64,
    /// A view found something unknown and the lane has read it since (or
    /// applied an op): a reconcile now plans with it.
    pub learned: bool,
    /// A read or an op failed: a retry after the agent's backoff.
    pub failed: bool,
}

/// An op the lane applied, and how it went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandOutcome {
    pub op: Op,
    pub result: Result<(), String>,
    /// The op was an FRR text that FRR's parser refused in its dry run
    /// (`result` has FRR's message): nothing of it was applied.
    pub rejected: bool,
}

/// The lane's state, shared by the agent's threads and the lane's.
#[derive(Default)]
struct Lane {
    /// Bridges read since their last invalidation (`None`: not in OVS).
    bridges: BTreeMap<DevName, Option<OvsBridge>>,
    /// FRR's state, with the lines it was read for.
    frr: Option<(Vec<String>, FrrState)>,
    /// FRR's router-id as read (`Some(None)`: FRR reports none).
    router_id: Option<Option<String>>,
    want_bridges: BTreeSet<DevName>,
    want_frr: Option<Vec<String>>,
    want_router_id: bool,
    /// Reads in progress: not asked for again meanwhile.
    reading_bridges: BTreeSet<DevName>,
    reading_frr: Option<Vec<String>>,
    /// Bumped by every invalidation and every submitted op: a read that
    /// started before is not kept (it may predate the change).
    flows_epoch: u64,
    frr_epoch: u64,
    ops: VecDeque<Op>,
    /// Ops taken off the queue and not finished.
    applying: bool,
    /// A view found something unknown since the last signal.
    waited_on: bool,
    outcomes: Vec<CommandOutcome>,
    /// This round: something became known, something failed.
    learned: bool,
    failed: bool,
    round: u64,
    stopping: bool,
}

impl Lane {
    fn has_work(&self) -> bool {
        !self.ops.is_empty()
            || !self.want_bridges.is_empty()
            || self.want_frr.is_some()
            || self.want_router_id
    }

    fn idle(&self) -> bool {
        !self.has_work()
            && !self.applying
            && self.reading_bridges.is_empty()
            && self.reading_frr.is_none()
    }
}

struct Shared {
    config: KernelConfig,
    lane: Mutex<Lane>,
    wake: Condvar,
    signal: watch::Sender<LaneSignal>,
    in_flight: InFlight,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Lane> {
        // A panic on the lane's thread leaves state that is at worst
        // stale: every entry is re-read after an invalidation.
        self.lane.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The handle the reconciler holds; dropping it stops the lane and kills
/// the command in flight.
pub struct CommandLane {
    shared: Arc<Shared>,
}

impl CommandLane {
    /// Starts the lane's thread.
    pub fn start(config: KernelConfig) -> std::io::Result<CommandLane> {
        let (signal, _) = watch::channel(LaneSignal::default());
        let shared = Arc::new(Shared {
            config,
            lane: Mutex::new(Lane::default()),
            wake: Condvar::new(),
            signal,
            in_flight: InFlight::default(),
        });
        let worker = shared.clone();
        std::thread::Builder::new()
            .name("obgp-commands".into())
            .spawn(move || work(&worker))?;
        Ok(CommandLane { shared })
    }

    fn wake(&self) {
        self.shared.wake.notify_one();
    }

    /// What is known of `scope`'s bridges and FRR (its lines, its EVPN
    /// VRFs), at once. What is
    /// not known is asked for: the lane reads it and signals
    /// ([`LaneSignal::learned`]).
    pub fn view(&self, scope: &Scope) -> CommandView {
        let mut l = self.shared.lock();
        let mut v = CommandView::default();
        let mut asked = false;
        for br in &scope.ovs_bridges {
            match l.bridges.get(br) {
                Some(Some(b)) => {
                    v.bridges.insert(br.clone(), b.clone());
                }
                Some(None) => {}
                None => {
                    v.bridges_unknown.insert(br.clone());
                    if !l.reading_bridges.contains(br) {
                        l.want_bridges.insert(br.clone());
                    }
                    asked = true;
                }
            }
        }
        if scope.reads_frr() {
            match &l.frr {
                Some((lines, state)) if *lines == scope.frr_lines => v.frr = state.clone(),
                // An EVPN scope without lines of ours (no text, or the text
                // known applied): a read for other lines tells the EVPN
                // VRFs all the same, and no lines are held trivially.
                Some((_, state)) if scope.frr_lines.is_empty() => {
                    v.frr = FrrState {
                        has_our_config: true,
                        ..state.clone()
                    }
                }
                _ => {
                    v.frr.unknown = true;
                    if l.reading_frr.as_ref() != Some(&scope.frr_lines) {
                        l.want_frr = Some(scope.frr_lines.clone());
                    }
                    asked = true;
                }
            }
        }
        if asked {
            l.waited_on = true;
            drop(l);
            self.wake();
        }
        v
    }

    /// FRR's router-id as last read; `None` until it was (the read is
    /// asked for) or when FRR reports none.
    pub fn router_id(&self) -> Option<String> {
        let mut l = self.shared.lock();
        match &l.router_id {
            Some(id) => id.clone(),
            None => {
                l.want_router_id = true;
                l.waited_on = true;
                drop(l);
                self.wake();
                None
            }
        }
    }

    /// Queues command ops ([`Op::runs_a_command`]; others are ignored) to
    /// be applied in order. What they touch is unknown to views until the
    /// lane has applied them and read it again.
    pub fn submit(&self, ops: impl IntoIterator<Item = Op>) {
        let mut l = self.shared.lock();
        let mut any = false;
        for op in ops {
            match &op {
                // A port op changes the bridge's ports (and ofports) as a
                // flow op its flows: the bridge is read again after it.
                Op::AddFlow { bridge, .. }
                | Op::DelFlow { bridge, .. }
                | Op::AddOvsPort(obgp_netmodel::OvsPort { bridge, .. })
                | Op::DelOvsPort { bridge, .. }
                | Op::AddFdb(obgp_netmodel::FdbEntry { bridge, .. }) => {
                    l.bridges.remove(bridge);
                    l.want_bridges.insert(bridge.clone());
                    l.flows_epoch += 1;
                }
                Op::ApplyFrr { config } => {
                    l.frr = None;
                    l.want_frr = Some(frr_check_lines(config));
                    l.frr_epoch += 1;
                }
                // A removal (del-vrf) holds no line of our text: FRR is read
                // again after it for the lines it was last read for.
                Op::RemoveFrr { .. } => {
                    let last = l.frr.take().map(|(lines, _)| lines);
                    if l.want_frr.is_none() {
                        l.want_frr = last;
                    }
                    l.frr_epoch += 1;
                }
                _ => continue,
            }
            l.ops.push_back(op);
            any = true;
        }
        drop(l);
        if any {
            self.wake();
        }
    }

    /// Forgets the bridges read: hand edits of flows change no database
    /// row, so a periodic reconcile or an OVS database change asks again.
    pub fn invalidate_flows(&self) {
        let mut l = self.shared.lock();
        l.bridges.clear();
        l.flows_epoch += 1;
    }

    /// Forgets FRR's state (and router-id): the next view asks again.
    pub fn invalidate_frr(&self) {
        let mut l = self.shared.lock();
        l.frr = None;
        l.router_id = None;
        l.frr_epoch += 1;
    }

    /// The ops applied since the last call, in order.
    pub fn take_outcomes(&self) -> Vec<CommandOutcome> {
        std::mem::take(&mut self.shared.lock().outcomes)
    }

    /// Changes each time the lane runs out of work.
    pub fn signals(&self) -> watch::Receiver<LaneSignal> {
        self.shared.signal.subscribe()
    }

    /// Whether the lane has nothing queued, asked for or in flight.
    pub fn is_idle(&self) -> bool {
        self.shared.lock().idle()
    }

    /// Waits until the lane is idle: each command it runs is bounded by
    /// its deadline, so this returns (the one-shot commands use it).
    pub async fn settled(&self) {
        let mut rx = self.signals();
        while !self.is_idle() {
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// A background re-read of `scope`'s bridges and FRR lines, against
    /// what the lane last read of them (see [`DriftProbe`]).
    /// What reads FRR's BGP sessions with the lane's vtysh settings, on
    /// the caller's thread (a background check, not the lane's queue).
    pub fn bgp_sessions_reader(&self) -> crate::BgpSessionsReader {
        crate::BgpSessionsReader {
            config: self.shared.config.clone(),
        }
    }

    pub fn drift_probe(&self, scope: &Scope) -> DriftProbe {
        let l = self.shared.lock();
        DriftProbe {
            config: self.shared.config.clone(),
            // A bridge the lane has not read (or is about to re-read) has
            // nothing to compare with: not drift, the lane reads it anyway.
            bridges: scope
                .ovs_bridges
                .iter()
                .filter_map(|b| Some((b.clone(), l.bridges.get(b)?.clone())))
                .collect(),
            frr_lines: scope.frr_lines.clone(),
            // Any read tells the EVPN VRFs; none yet: nothing to compare.
            frr_evpn: scope
                .evpn
                .then(|| l.frr.as_ref().map(|(_, s)| EvpnSeen::of(s)))
                .flatten(),
        }
    }
}

impl Drop for CommandLane {
    fn drop(&mut self) {
        self.shared.lock().stopping = true;
        self.shared.in_flight.kill();
        self.shared.wake.notify_all();
    }
}

/// One batch of reads, taken off the wants together.
struct Reads {
    bridges: Vec<DevName>,
    frr: Option<Vec<String>>,
    router_id: bool,
    flows_epoch: u64,
    frr_epoch: u64,
}

/// The lane's thread: every queued op first, in order, then the reads due
/// (those the ops made due included; never one while an op is queued, or
/// it would read the bridge before the op); a signal each time it runs out
/// of work.
fn work(shared: &Shared) {
    deadline::track_on_this_thread(shared.in_flight.clone());
    loop {
        let ops: Vec<Op> = {
            let mut l = shared.lock();
            loop {
                if l.stopping {
                    return;
                }
                if l.has_work() {
                    break;
                }
                l = shared.wake.wait(l).unwrap_or_else(|p| p.into_inner());
            }
            l.applying = true;
            l.ops.drain(..).collect()
        };
        if !ops.is_empty() {
            apply(shared, ops);
            // Ops queued meanwhile go before any read.
            continue;
        }
        let reads = {
            let mut l = shared.lock();
            l.applying = false;
            let reads = Reads {
                bridges: std::mem::take(&mut l.want_bridges).into_iter().collect(),
                frr: l.want_frr.take(),
                router_id: std::mem::take(&mut l.want_router_id),
                flows_epoch: l.flows_epoch,
                frr_epoch: l.frr_epoch,
            };
            l.reading_bridges = reads.bridges.iter().cloned().collect();
            l.reading_frr = reads.frr.clone();
            reads
        };
        read(shared, reads);
        let mut l = shared.lock();
        if l.stopping {
            return;
        }
        if l.idle() {
            l.round += 1;
            let signal = LaneSignal {
                round: l.round,
                learned: l.learned && l.waited_on,
                failed: l.failed,
            };
            if signal.learned {
                l.waited_on = false;
            }
            l.learned = false;
            l.failed = false;
            drop(l);
            shared.signal.send_replace(signal);
        }
    }
}

/// Applies `ops` in order, recording each outcome.
fn apply(shared: &Shared, ops: Vec<Op>) {
    for op in ops {
        let started = Instant::now();
        let result = run_command_op(&shared.config, &op).unwrap_or(Ok(()));
        let rejected = matches!(result, Err(IoError::FrrRejected { .. }));
        let result = result.map_err(|e| e.to_string());
        let us = started.elapsed().as_micros() as u64;
        match &result {
            Ok(()) => tracing::info!(op = %op, us, "applied"),
            Err(e) => tracing::warn!(op = %op, us, error = %e, "failed"),
        }
        let mut l = shared.lock();
        l.failed |= result.is_err();
        l.learned = true;
        l.outcomes.push(CommandOutcome {
            op,
            result,
            rejected,
        });
        if l.stopping {
            return;
        }
    }
}

/// Runs `reads` and keeps what is still current.
fn read(shared: &Shared, reads: Reads) {
    for br in reads.bridges {
        let result = read_ovs_bridge(&shared.config, &br);
        let mut l = shared.lock();
        l.reading_bridges.remove(&br);
        match result {
            Ok(bridge) if l.flows_epoch == reads.flows_epoch => {
                l.bridges.insert(br, bridge);
                l.learned = true;
            }
            // Invalidated meanwhile: read again.
            Ok(_) => {
                l.want_bridges.insert(br);
            }
            Err(e) => {
                tracing::warn!(bridge = %br, error = %e, "cannot read the OVS bridge: no flow planned on it");
                l.failed = true;
            }
        }
        if l.stopping {
            return;
        }
    }
    if let Some(lines) = reads.frr {
        let state = read_frr_state(&shared.config, &lines);
        let mut l = shared.lock();
        l.reading_frr = None;
        if state.unknown {
            l.failed = true;
        } else if l.frr_epoch == reads.frr_epoch {
            l.frr = Some((lines, state));
            l.learned = true;
        } else if l.want_frr.is_none() {
            l.want_frr = Some(lines);
        }
    }
    if reads.router_id {
        let id = frr_router_id(&shared.config);
        let mut l = shared.lock();
        match id {
            Ok(id) if l.frr_epoch == reads.frr_epoch => {
                l.router_id = Some(id);
                l.learned = true;
            }
            Ok(_) => l.want_router_id = true,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read FRR's router-id");
                l.failed = true;
            }
        }
    }
}

#[cfg(test)]
mod tests;
