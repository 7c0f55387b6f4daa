//! The real node: rtnetlink opened inside a network namespace, `/proc/sys`
//! written from that namespace, rt_tables appended, `ovs-ofctl`, `ovs-vsctl`
//! and `vtysh` run (the `commands` module).
//!
//! [`KernelNode::observe`] reads what the planner needs; [`KernelNode::apply`]
//! (what [`obgp_plan::NodeIo`] calls) makes one [`Op`]: a netlink request
//! encoded by the `codec` module, a file write, or a command.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::StreamExt;
use obgp_netmodel::{DevName, LinkKind};
use rtnetlink::packet_core::{NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_REQUEST};
use rtnetlink::packet_route::RouteNetlinkMessage;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::watch;

use crate::codec;
use crate::commands::{read_frr_state, read_ovs_bridge};
use crate::config::KernelConfig;
use crate::error::IoError;
use crate::mirror::{MirrorStats, NetlinkMirror, Stale};
use crate::rt_tables::RtTablesFile;
use crate::Scope;
use obgp_plan::actual::Actual;
use obgp_plan::op::Op;
use obgp_plan::NodeIo;

/// Runs `f` on a thread that has entered the network namespace `netns`.
/// The namespace of the calling thread is never changed.
pub fn in_netns<T: Send>(
    netns: Option<&Path>,
    f: impl FnOnce() -> io::Result<T> + Send,
) -> io::Result<T> {
    let Some(path) = netns else {
        return f();
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            let ns = File::open(path)?;
            // SAFETY: setns on a valid namespace fd, affecting only this
            // short-lived thread.
            if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(io::Error::last_os_error());
            }
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("namespace thread panicked")))
    })
}

/// `/proc/sys/...` path of a dotted sysctl key (a `/` inside a component is a
/// `.` of a device name, as `sysctl` writes it).
pub fn sysctl_path(key: &str) -> Result<PathBuf, IoError> {
    let ok = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b))
        && !key
            .split('.')
            .any(|c| c.is_empty() || c == ".." || c.replace('/', ".") == "..");
    if !ok {
        return Err(IoError::Invalid(key.to_string()));
    }
    let mut p = PathBuf::from("/proc/sys");
    for c in key.split('.') {
        p.push(c.replace('/', "."));
    }
    Ok(p)
}

/// The rtnetlink node.
pub struct KernelNode {
    pub config: KernelConfig,
    /// The writer's socket.
    handle: rtnetlink::Handle,
    conn: tokio::task::JoinHandle<()>,
    /// Links, addresses, rules, routes and neighbours as notified.
    mirror: Arc<Mutex<NetlinkMirror>>,
    drainer: tokio::task::JoinHandle<()>,
    overruns: watch::Receiver<u64>,
    /// Sysctl files by key, opened inside the namespace.
    sysctl_files: BTreeMap<String, File>,
    /// rt_tables as last read (re-read only when it changed).
    rt_tables: RtTablesFile,
}

impl Drop for KernelNode {
    fn drop(&mut self) {
        self.conn.abort();
        self.drainer.abort();
    }
}

/// The mirror's listening socket as tokio polls it: the descriptor, and the
/// mirror that owns the socket, so that it stays open while it is polled.
struct ListenFd {
    fd: RawFd,
    mirror: Arc<Mutex<NetlinkMirror>>,
}

impl AsRawFd for ListenFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd
    }
}

/// Applies notifications as they arrive, so that they never pile up in the
/// socket between reconciles (and an overrun is reported when it happens,
/// not at the next observe).
async fn drain_in_background(mirror: Arc<Mutex<NetlinkMirror>>, fd: RawFd) {
    // SAFETY: the descriptor is the mirror's listening socket, which the
    // mirror owns and never replaces; `ListenFd` holds the mirror, so the
    // socket is open for as long as the `AsyncFd` lives.
    let registered =
        unsafe { AsyncFd::register_with_interest(ListenFd { fd, mirror }, Interest::READABLE) };
    let afd = match registered {
        Ok(a) => a,
        Err(e) => {
            tracing::error!(
                "netlink mirror: cannot poll its socket ({e}); draining at observe only"
            );
            return;
        }
    };
    loop {
        let Ok(mut ready) = afd.readable().await else {
            return;
        };
        let mirror = &afd.get_ref().mirror;
        mirror.lock().unwrap_or_else(|p| p.into_inner()).drain();
        ready.clear_ready();
    }
}

/// Runs `f`, which blocks, through `block_in_place` where the runtime allows
/// it (multi-threaded), else in place.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

impl KernelNode {
    /// Opens, inside `config.netns` (from a thread that entered it), the
    /// rtnetlink socket the writer uses, driven on the current tokio runtime,
    /// and the netlink mirror's sockets, drained by a background task so
    /// that notifications never pile up between reconciles.
    pub async fn connect(config: KernelConfig) -> Result<KernelNode, IoError> {
        let rt = tokio::runtime::Handle::current();
        let rcvbuf = config.mirror_rcvbuf;
        let (conn, handle, mirror) = in_netns(config.netns.as_deref(), move || {
            let _guard = rt.enter();
            let (conn, handle, _) = rtnetlink::new_connection()?;
            Ok((conn, handle, NetlinkMirror::open(rcvbuf)?))
        })
        .map_err(|e| IoError::io("opening rtnetlink", e))?;
        let conn = tokio::spawn(conn);
        let overruns = mirror.subscribe_overruns();
        let fd = mirror.listen_fd();
        let mirror = Arc::new(Mutex::new(mirror));
        let drainer = tokio::spawn(drain_in_background(mirror.clone(), fd));
        Ok(KernelNode {
            config,
            handle,
            conn,
            mirror,
            drainer,
            overruns,
            sysctl_files: BTreeMap::new(),
            rt_tables: RtTablesFile::default(),
        })
    }

    async fn request(&mut self, msg: RouteNetlinkMessage, flags: u16) -> io::Result<()> {
        let mut req = NetlinkMessage::from(msg);
        req.header.flags = NLM_F_REQUEST | NLM_F_ACK | flags;
        let mut resp = self
            .handle
            .request(req)
            .map_err(|e| io::Error::other(e.to_string()))?;
        while let Some(m) = resp.next().await {
            if let NetlinkPayload::Error(e) = m.payload {
                if e.code.is_some() {
                    return Err(e.to_io());
                }
            }
        }
        Ok(())
    }

    /// The node's addresses, the mirror brought up to date first (the
    /// first call dumps them; later ones apply the pending notifications).
    pub fn addresses(&self) -> Result<obgp_plan::SharedSet<obgp_netmodel::Address>, IoError> {
        Ok(self.links_and_addresses()?.1)
    }

    /// The node's links and addresses, the mirror brought up to date
    /// first (as [`Self::addresses`]).
    pub fn links_and_addresses(
        &self,
    ) -> Result<
        (
            BTreeMap<DevName, obgp_plan::ActualLink>,
            obgp_plan::SharedSet<obgp_netmodel::Address>,
        ),
        IoError,
    > {
        let mut m = self.mirror();
        m.refresh()?;
        let view = m.state.read(&BTreeSet::new());
        Ok((view.links, view.addresses))
    }

    fn mirror(&self) -> MutexGuard<'_, NetlinkMirror> {
        // A panic while holding the lock leaves a mirror that is at worst
        // stale; the next refresh repairs that.
        self.mirror.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The interface index of `dev`: from the mirror, brought up to date
    /// first when it does not know the name (a device created since).
    fn ifindex(&self, dev: &DevName) -> Result<u32, IoError> {
        let mut m = self.mirror();
        if let Some(i) = m.state.ifindex(dev) {
            return Ok(i);
        }
        m.refresh()?;
        m.state
            .ifindex(dev)
            .ok_or_else(|| IoError::NoDevice(dev.to_string()))
    }

    /// Makes the next observe read the kernel afresh: full netlink dumps
    /// instead of the mirror. For reconciles that must not trust anything
    /// cached (after a netlink overrun).
    pub fn resync(&mut self) {
        self.mirror().state.stale = Stale::ALL;
    }

    /// Whether the node changed in a way the kernel did not notify, once
    /// the notifications queued so far are applied: IPv4 routes flushed with
    /// their device's last IPv4 address or preferred source, or with a
    /// device going down. The mirror then holds that part stale, and only
    /// the next observe's re-read shows the node as it is; after the
    /// agent's own writes, that calls for another reconcile at once.
    pub fn has_unnotified_changes(&self) -> bool {
        let mut m = self.mirror();
        m.drain();
        m.state.stale.any()
    }

    /// The number of netlink overruns (notifications the kernel dropped)
    /// seen so far; it changes whenever one is seen. The mirror re-dumps by
    /// itself at the next observe; the agent should reconcile in full.
    pub fn overruns(&self) -> watch::Receiver<u64> {
        self.overruns.clone()
    }

    /// What the netlink mirror has done so far (notifications applied,
    /// re-dumps), for tests and diagnostics.
    pub fn mirror_stats(&self) -> MirrorStats {
        self.mirror().stats
    }

    /// How many times rt_tables was read from disk: once, and again only
    /// when its inode, size or times changed (for tests and diagnostics).
    pub fn rt_tables_reads(&self) -> u64 {
        self.rt_tables.reads
    }

    /// Reads the node, the commands' side included: [`Self::observe_kernel`],
    /// then the OVS ports and agent flows of the scope's bridges and FRR's
    /// state, each command run in turn (within its deadline). The agent's
    /// reconciles read the commands' side through the
    /// [`CommandLane`](crate::lane::CommandLane) instead, which never
    /// waits; tests and benchmarks use this.
    pub async fn observe(&mut self, scope: &Scope) -> Result<Actual, IoError> {
        let mut a = self.observe_kernel(scope).await?;
        for br in &scope.ovs_bridges {
            match read_ovs_bridge(&self.config, br) {
                Ok(Some(b)) => {
                    a.bridges.insert(br.clone(), b);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(bridge = %br, error = %e, "cannot read the OVS bridge: no flow planned on it");
                    a.bridges_unknown.insert(br.clone());
                }
            }
        }
        if scope.reads_frr() {
            a.frr = read_frr_state(&self.config, &scope.frr_lines);
        }
        Ok(a)
    }

    /// Reads the kernel's side of the node. Links, addresses, rules, routes
    /// and permanent neighbours come from the netlink mirror (re-dumped
    /// where stale); routes only of the VRF table, the scope's bridges'
    /// tables (through rt_tables), `scope.tables` and, in an EVPN scope,
    /// the tables of the agent-shaped VRFs the mirror holds; proxy neighbours,
    /// sysctls are read each time, rt_tables when it changed. No command runs: OVS
    /// bridges and FRR are left empty (the caller fills them in).
    pub async fn observe_kernel(&mut self, scope: &Scope) -> Result<Actual, IoError> {
        let started = std::time::Instant::now();
        let rt_tables = self.rt_tables.read(&self.config.rt_tables)?;
        let mut tables = scope.tables.clone();
        tables.insert(scope.vrf_table);
        tables.extend(
            scope
                .bridge_tables
                .iter()
                .filter_map(|b| rt_tables.lookup(b.as_str())),
        );

        let (view, proxy_neighbours, t_refresh, t_proxies) = {
            let mut m = self.mirror();
            if m.state.stale.any() {
                // Full dumps block for tens of milliseconds: on a
                // multi-threaded runtime, let the other tasks move on.
                blocking(|| m.refresh())?;
            } else {
                m.refresh()?;
            }
            let t_refresh = started.elapsed();
            if scope.evpn {
                // A VNI no longer desired is torn down with its routes: its
                // table is read as long as its VRF is there. Only the
                // agent's shape (`vrf-<n>`, table `n`): an operator's VRF's
                // table is none of ours.
                tables.extend(m.state.vrf_tables().filter_map(|(name, table)| {
                    (obgp_netmodel::names::evpn::vni_of_vrf(name.as_str()) == Some(table))
                        .then_some(table)
                }));
            }
            let proxies = m.proxy_neighbours()?;
            let t_proxies = started.elapsed();
            (m.state.read(&tables), proxies, t_refresh, t_proxies)
        };
        let t_netlink = started.elapsed();
        let mut a = Actual {
            links: view.links,
            addresses: view.addresses,
            rules: view.rules,
            routes: view.routes,
            neighbours: view.neighbours,
            proxy_neighbours,
            bridge_fdb: view.bridge_fdb,
            rt_tables,
            ..Actual::default()
        };

        a.sysctls = self.read_sysctls(&scope.sysctl_keys)?;

        tracing::debug!(
            // Cumulative: rt_tables and the mirror's catch-up, then the
            // proxy-neighbour dump, then the sets handed out, then sysctls.
            refresh_ms = t_refresh.as_secs_f64() * 1e3,
            proxies_ms = t_proxies.as_secs_f64() * 1e3,
            netlink_ms = t_netlink.as_secs_f64() * 1e3,
            total_ms = started.elapsed().as_secs_f64() * 1e3,
            rules = a.rules.len(),
            routes = a.routes.len(),
            addresses = a.addresses.len(),
            "observed"
        );
        Ok(a)
    }

    /// The values of `keys` that exist. `/proc/sys/net` shows the namespace
    /// of whoever opens the file, so each file is opened once from a thread
    /// inside the namespace and then re-read in place (a sysctl file
    /// answers every read from offset 0 with the current value); spawning
    /// that thread on every observe cost milliseconds on a loaded machine.
    /// A file that fails to read (its device went away, maybe to come back)
    /// is opened afresh.
    fn read_sysctls(
        &mut self,
        keys: &BTreeSet<String>,
    ) -> Result<BTreeMap<String, String>, IoError> {
        let read = |f: &File| -> Option<String> {
            let mut buf = [0u8; 256];
            let n = f.read_at(&mut buf, 0).ok()?;
            Some(String::from_utf8_lossy(&buf[..n]).trim().to_string())
        };
        let mut out = BTreeMap::new();
        let mut to_open = Vec::new();
        for k in keys {
            match self.sysctl_files.get(k).and_then(read) {
                Some(v) => {
                    out.insert(k.clone(), v);
                }
                None => to_open.push(k.clone()),
            }
        }
        if to_open.is_empty() {
            return Ok(out);
        }
        let opened = in_netns(self.config.netns.as_deref(), move || {
            Ok(to_open
                .into_iter()
                .map(|k| {
                    let file = sysctl_path(&k).ok().and_then(|p| File::open(p).ok());
                    (k, file)
                })
                .collect::<Vec<_>>())
        })
        .map_err(|e| IoError::io("reading sysctls", e))?;
        for (k, file) in opened {
            self.sysctl_files.remove(&k);
            let Some(file) = file else { continue };
            if let Some(v) = read(&file) {
                out.insert(k.clone(), v);
                self.sysctl_files.insert(k, file);
            }
        }
        Ok(out)
    }

    /// Applies one op: one netlink request, one file write or one command.
    /// Device names resolve through the netlink mirror. A netlink request
    /// failing as if the mirror were wrong (EEXIST: already there; ENOENT,
    /// ESRCH, ENODEV: not there) marks its part of the mirror stale.
    /// Command ops run here in turn, within their deadline (the agent's
    /// reconciles hand them to the [`CommandLane`](crate::lane::CommandLane)).
    pub async fn apply(&mut self, op: &Op) -> Result<(), IoError> {
        let result = self.apply_once(op).await;
        // The kernel's answer, not our own lookup failing (`NoDevice`: the
        // mirror, brought up to date, does not know the device either).
        let mismatch = |e: &IoError| {
            matches!(e, IoError::Io { .. })
                && matches!(
                    e.errno(),
                    Some(libc::EEXIST | libc::ENOENT | libc::ESRCH | libc::ENODEV)
                )
        };
        if result.as_ref().is_err_and(mismatch) {
            let mut m = self.mirror();
            let stale = &mut m.state.stale;
            match op {
                Op::AddLink { .. }
                | Op::SetLinkUp { .. }
                | Op::SetMaster { .. }
                | Op::SetLinkMac { .. }
                | Op::SetBridgePort { .. }
                | Op::DelLink { .. } => *stale = Stale::ALL,
                Op::AddAddress(_) | Op::DelAddress(_) => stale.addresses = true,
                Op::AddRule { .. } | Op::DelRule { .. } => stale.rules = true,
                Op::ReplaceRoute { .. } | Op::DelRoute { .. } => stale.routes = true,
                Op::ReplaceNeighbour(_)
                | Op::DelNeighbour(_)
                | Op::AddBridgeFdb(_)
                | Op::DelBridgeFdb(_) => stale.neighbours = true,
                _ => {}
            }
        }
        result
    }

    async fn apply_once(&mut self, op: &Op) -> Result<(), IoError> {
        let what = || op.to_string();
        let nl = |r: io::Result<()>| r.map_err(|e| IoError::io(what(), e));
        match op {
            Op::SetSysctl(s) => {
                let path = sysctl_path(&s.key)?;
                if !s
                    .value
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                {
                    return Err(IoError::Invalid(s.value.clone()));
                }
                let value = s.value.clone();
                in_netns(self.config.netns.as_deref(), move || {
                    std::fs::write(&path, format!("{value}\n"))
                })
                .map_err(|e| IoError::io(what(), e))
            }
            Op::AddRtTable { number, name } => {
                self.rt_tables
                    .append(&self.config.rt_tables, *number, name.as_str())
            }
            Op::AddFlow { .. }
            | Op::DelFlow { .. }
            | Op::ApplyFrr { .. }
            | Op::RemoveFrr { .. }
            | Op::AddOvsPort(_)
            | Op::DelOvsPort { .. }
            | Op::AddFdb(_) => crate::commands::run_command_op(&self.config, op)
                .unwrap_or_else(|| Err(IoError::Invalid(op.to_string()))),
            // Links, addresses, rules, routes, neighbours, bridge FDB
            // entries: one rtnetlink request.
            _ => {
                if let Op::AddLink {
                    name,
                    kind: LinkKind::Dummy,
                } = op
                {
                    if self.config.dummy_kind != "dummy" {
                        // The plan says `type dummy`; say what is created.
                        tracing::info!(
                            device = %name,
                            kind = %self.config.dummy_kind,
                            "creating the dummy device as its configured stand-in kind"
                        );
                    }
                }
                let req = codec::encode(op, &self.config.dummy_kind, |d| self.ifindex(d))?;
                let index = match &req.msg {
                    RouteNetlinkMessage::NewLink(m) => m.header.index,
                    _ => 0,
                };
                nl(self.request(req.msg, req.flags).await)?;
                if let Op::SetBridgePort { .. } = op {
                    // Not notified when the device is down: read it back.
                    blocking(|| self.mirror().reread_link(index))?;
                }
                Ok(())
            }
        }
    }
}

impl NodeIo for KernelNode {
    async fn apply_op(&mut self, op: &Op) -> Result<obgp_plan::Applied, String> {
        self.apply(op)
            .await
            .map(|()| obgp_plan::Applied::Done)
            .map_err(|e: IoError| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctl_keys_map_to_proc_paths_with_vlan_dots() {
        assert_eq!(
            sysctl_path("net.ipv4.conf.br-ex/100.proxy_arp").unwrap(),
            PathBuf::from("/proc/sys/net/ipv4/conf/br-ex.100/proxy_arp")
        );
        for bad in [
            "",
            "net..ipv4",
            "net.ipv4.conf./..x",
            "net.ipv4 x",
            "net/../../etc",
        ] {
            assert!(sysctl_path(bad).is_err(), "{bad}");
        }
    }
}
