//! A mirror of the node's links, addresses, rules, routes, permanent
//! neighbours and the static Linux bridge FDB entries the agent could own
//! (on ports named like its L2 VNI veth ends), kept current from rtnetlink notifications, so that observing
//! the node costs a copy of what is owned instead of full netlink dumps.
//!
//! Two sockets are opened inside the node's namespace: a non-blocking one
//! subscribed to the link, address, route, rule and neighbour groups, and a
//! blocking one for dumps. The mirror starts from full dumps and then applies
//! every notification in the order the kernel queued it.
//!
//! Exactness after our own writes: the kernel queues a notification on every
//! listening socket before it acknowledges the request that caused it, so
//! draining the listening socket until `EAGAIN` after an ACK sees that write.
//! Where the kernel sends nothing, the mirror does not guess:
//!
//! - proxy neighbours are never notified: they are dumped on every observe
//!   (the kernel walks only its small proxy table for that dump);
//! - IPv4 routes flushed with a device going down or deleted, or with the
//!   last IPv4 address of a device or a preferred source address, go without
//!   notification: those events mark the routes stale, and the next observe
//!   re-dumps them;
//! - bridge-port flags set on a device that is down (`ip link set DEV type
//!   bridge_slave ...`) go without notification: after its own
//!   `Op::SetBridgePort` the node re-reads that link
//!   ([`NetlinkMirror::reread_link`]); a foreign change of that kind is
//!   seen at the next full re-read;
//! - a notification that does not decode or does not fit what is mirrored
//!   (a delete of an unknown route with a known key, a rename) marks its part
//!   stale in the same way.
//!
//! The bridge's own view of its ports (AF_BRIDGE `RTM_NEWLINK` and
//! `RTM_DELLINK`, on the link group too) only updates a port's bridge-port
//! flags: it has no IFLA_LINKINFO, and its `RTM_DELLINK` means that the port
//! left the bridge, not that the device went.
//!
//! Overrun (`ENOBUFS` on receive: the kernel dropped notifications) marks
//! everything stale and is counted, so that the agent runs a full reconcile
//! on a freshly dumped mirror. rtnetlink notifications carry the sequence
//! number of the request that caused them (0 for the kernel's own), not a
//! per-socket counter, so `ENOBUFS` is the only loss signal there is.
//!
//! The state itself ([`MirrorState`], in `state`) is pure: it is fed decoded
//! messages and unit-tested without a kernel. This module holds the sockets.

mod state;

use std::collections::BTreeSet;
use std::io;
use std::os::fd::{AsRawFd, RawFd};

use obgp_netmodel::{Neighbour, ProxyNeighbour};
use rtnetlink::packet_core::{
    NetlinkBuffer, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_DUMP, NLM_F_DUMP_INTR,
    NLM_F_REPLACE, NLM_F_REQUEST,
};
use rtnetlink::packet_route::address::AddressMessage;
use rtnetlink::packet_route::link::LinkMessage;
use rtnetlink::packet_route::neighbour::{NeighbourFlags, NeighbourMessage};
use rtnetlink::packet_route::route::RouteMessage;
use rtnetlink::packet_route::rule::RuleMessage;
use rtnetlink::packet_route::{AddressFamily, RouteNetlinkMessage};
use rtnetlink::sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use tokio::sync::watch;

use crate::codec::{decode_neighbour, Neigh};
use crate::error::IoError;

pub use state::{MirrorState, MirrorView, Stale};

/// The rtnetlink multicast groups the mirror listens to.
const GROUPS: [u32; 8] = [
    libc::RTNLGRP_LINK,
    libc::RTNLGRP_IPV4_IFADDR,
    libc::RTNLGRP_IPV6_IFADDR,
    libc::RTNLGRP_IPV4_ROUTE,
    libc::RTNLGRP_IPV6_ROUTE,
    libc::RTNLGRP_IPV4_RULE,
    libc::RTNLGRP_IPV6_RULE,
    libc::RTNLGRP_NEIGH,
];

/// The listening socket's receive buffer. Applying 10k exposures queues
/// about 40k notifications when nothing drains in between; the kernel
/// charges each at its skb size (~1 KiB), so 32 MiB rides that out.
const DEFAULT_RCVBUF: usize = 32 << 20;

/// Receive buffer for one datagram: a dump part is at most 32 KiB, a
/// notification one message.
const RECV_BUF: usize = 64 << 10;

/// What the mirror has done since it was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MirrorStats {
    /// Notifications applied.
    pub notifications: u64,
    /// Refreshes that had to re-dump some part (the first one included).
    pub redumps: u64,
}

/// The sockets and the mirrored state.
pub struct NetlinkMirror {
    listen: Socket,
    dumper: Socket,
    seq: u32,
    buf: Vec<u8>,
    pub state: MirrorState,
    /// Overruns seen on the listening socket since it was opened.
    overruns: watch::Sender<u64>,
    pub stats: MirrorStats,
}

/// How a receive on the listening socket ended.
enum Recv {
    Data(usize),
    Empty,
    Overrun,
}

fn io_err(what: &str) -> impl Fn(io::Error) -> IoError + '_ {
    move |e| IoError::Io {
        what: what.to_string(),
        source: e,
    }
}

impl NetlinkMirror {
    /// Opens both sockets in the calling thread's network namespace (call it
    /// from [`crate::kernel::in_netns`]) and subscribes to the groups. The
    /// state starts stale: the first [`NetlinkMirror::refresh`] dumps it.
    /// `rcvbuf`: the listening socket's receive buffer, `None` for the default.
    pub fn open(rcvbuf: Option<usize>) -> io::Result<NetlinkMirror> {
        let mut listen = Socket::new(NETLINK_ROUTE)?;
        listen.bind(&SocketAddr::new(0, 0))?;
        set_rcvbuf(listen.as_raw_fd(), rcvbuf.unwrap_or(DEFAULT_RCVBUF))?;
        for g in GROUPS {
            listen.add_membership(g)?;
        }
        listen.set_non_blocking(true)?;
        let mut dumper = Socket::new(NETLINK_ROUTE)?;
        dumper.bind(&SocketAddr::new(0, 0))?;
        set_rcvbuf(dumper.as_raw_fd(), 4 << 20)?;
        Ok(NetlinkMirror {
            listen,
            dumper,
            seq: 0,
            buf: vec![0; RECV_BUF],
            state: MirrorState::new(),
            overruns: watch::Sender::new(0),
            stats: MirrorStats::default(),
        })
    }

    /// The overrun count, changed on every overrun.
    pub fn subscribe_overruns(&self) -> watch::Receiver<u64> {
        self.overruns.subscribe()
    }

    /// The listening socket, for readiness polling.
    pub fn listen_fd(&self) -> RawFd {
        self.listen.as_raw_fd()
    }

    fn recv_listen(&mut self) -> Recv {
        // SAFETY: recv into a buffer we own, with its length.
        let n = unsafe {
            libc::recv(
                self.listen.as_raw_fd(),
                self.buf.as_mut_ptr().cast(),
                self.buf.len(),
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
            )
        };
        if n >= 0 {
            return Recv::Data(n as usize);
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::EAGAIN) => Recv::Empty,
            Some(libc::EINTR) => Recv::Data(0),
            // ENOBUFS: the kernel dropped notifications. Anything else on a
            // netlink socket is as bad: trust nothing until re-dumped.
            _ => Recv::Overrun,
        }
    }

    /// Applies every queued notification, until the socket would block.
    /// Returns how many messages were applied.
    pub fn drain(&mut self) -> usize {
        let mut applied = 0;
        loop {
            let n = match self.recv_listen() {
                Recv::Empty => return applied,
                Recv::Overrun => {
                    self.overruns.send_modify(|n| *n += 1);
                    self.state.stale = Stale::ALL;
                    tracing::warn!(
                        overruns = *self.overruns.borrow(),
                        "netlink notifications lost (ENOBUFS); the node will be re-read"
                    );
                    continue;
                }
                Recv::Data(n) => n,
            };
            if n > self.buf.len() {
                // A notification larger than the buffer was cut: its part
                // cannot be trusted.
                self.state.stale = Stale::ALL;
                continue;
            }
            let mut off = 0;
            while off < n {
                let Ok(hdr) = NetlinkBuffer::new_checked(&self.buf[off..n]) else {
                    self.state.stale = Stale::ALL;
                    break;
                };
                let len = hdr.length() as usize;
                let (kind, flags) = (hdr.message_type(), hdr.flags());
                match NetlinkMessage::<RouteNetlinkMessage>::deserialize(&self.buf[off..off + len])
                {
                    Ok(NetlinkMessage {
                        payload: NetlinkPayload::InnerMessage(m),
                        ..
                    }) => {
                        self.state.apply(&m, flags & NLM_F_REPLACE != 0);
                        applied += 1;
                        self.stats.notifications += 1;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::debug!(kind, error = %e, "undecodable notification");
                        mark_stale_by_type(&mut self.state.stale, kind);
                    }
                }
                off += (len + 3) & !3;
            }
        }
    }

    /// One dump on the dump socket, retried when the kernel marks it
    /// interrupted (the table changed under it).
    pub fn dump(&mut self, msg: RouteNetlinkMessage) -> Result<Vec<RouteNetlinkMessage>, IoError> {
        self.query(msg, NLM_F_DUMP)
    }

    /// One request on the dump socket: a dump (`NLM_F_DUMP`: until
    /// `NLMSG_DONE`) or a single get (`NLM_F_ACK`: until the ACK).
    fn query(
        &mut self,
        msg: RouteNetlinkMessage,
        flags: u16,
    ) -> Result<Vec<RouteNetlinkMessage>, IoError> {
        'attempt: for _ in 0..5 {
            self.seq = self.seq.wrapping_add(1);
            let mut req = NetlinkMessage::from(msg.clone());
            req.header.flags = NLM_F_REQUEST | flags;
            req.header.sequence_number = self.seq;
            req.finalize();
            let mut out = vec![0u8; req.buffer_len()];
            req.serialize(&mut out);
            self.dumper
                .send(&out, 0)
                .map_err(io_err("netlink dump request"))?;
            let mut msgs = Vec::new();
            let mut interrupted = false;
            loop {
                // SAFETY: recv into a buffer we own, with its length.
                let n = unsafe {
                    libc::recv(
                        self.dumper.as_raw_fd(),
                        self.buf.as_mut_ptr().cast(),
                        self.buf.len(),
                        libc::MSG_TRUNC,
                    )
                };
                if n < 0 {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() == Some(libc::EINTR) {
                        continue;
                    }
                    return Err(io_err("netlink dump")(e));
                }
                let n = n as usize;
                if n > self.buf.len() {
                    return Err(io_err("netlink dump")(io::Error::other(
                        "a dump datagram larger than the receive buffer",
                    )));
                }
                let mut off = 0;
                while off < n {
                    let hdr = NetlinkBuffer::new_checked(&self.buf[off..n])
                        .map_err(|e| io_err("netlink dump")(io::Error::other(e.to_string())))?;
                    let len = hdr.length() as usize;
                    let (seq, flags) = (hdr.sequence_number(), hdr.flags());
                    let next = off + ((len + 3) & !3);
                    if seq != self.seq {
                        // The tail of an earlier, abandoned dump.
                        off = next;
                        continue;
                    }
                    interrupted |= flags & NLM_F_DUMP_INTR != 0;
                    match NetlinkMessage::<RouteNetlinkMessage>::deserialize(
                        &self.buf[off..off + len],
                    ) {
                        Ok(m) => match m.payload {
                            NetlinkPayload::InnerMessage(i) => msgs.push(i),
                            NetlinkPayload::Done(_) => {
                                if interrupted {
                                    continue 'attempt;
                                }
                                return Ok(msgs);
                            }
                            NetlinkPayload::Error(e) if e.code.is_some() => {
                                return Err(io_err("netlink dump")(e.to_io()))
                            }
                            // The ACK that ends a single get.
                            NetlinkPayload::Error(_) => return Ok(msgs),
                            _ => {}
                        },
                        // What does not decode is not ours to read.
                        Err(e) => tracing::debug!(error = %e, "undecodable dump message"),
                    }
                    off = next;
                }
            }
        }
        Err(io_err("netlink dump")(io::Error::other(
            "interrupted five times in a row",
        )))
    }

    /// Re-dumps what is stale, then applies what queued meanwhile. After it
    /// returns, the state is the kernel's as of the last queued notification.
    pub fn refresh(&mut self) -> Result<(), IoError> {
        // Notifications queued before the dumps are applied first, so that
        // a stale mark they cause is acted on now, not at the next refresh.
        self.drain();
        for _ in 0..3 {
            let stale = self.state.stale;
            if !stale.any() {
                return Ok(());
            }
            self.stats.redumps += 1;
            let links = stale.links;
            if links {
                let dump = self.dump(RouteNetlinkMessage::GetLink(LinkMessage::default()))?;
                self.state.install_links(&dump);
            }
            if stale.addresses || links {
                let dump = self.dump(RouteNetlinkMessage::GetAddress(AddressMessage::default()))?;
                self.state.install_addresses(&dump);
            }
            if stale.rules || links {
                let mut dump = Vec::new();
                for f in [AddressFamily::Inet, AddressFamily::Inet6] {
                    let mut req = RuleMessage::default();
                    req.header.family = f;
                    dump.extend(self.dump(RouteNetlinkMessage::GetRule(req))?);
                }
                self.state.install_rules(&dump);
            }
            if stale.routes || links {
                let mut dump = Vec::new();
                for f in [AddressFamily::Inet, AddressFamily::Inet6] {
                    let mut req = RouteMessage::default();
                    req.header.address_family = f;
                    dump.extend(self.dump(RouteNetlinkMessage::GetRoute(req))?);
                }
                self.state.install_routes(&dump);
            }
            if stale.neighbours || links {
                let mut dump = Vec::new();
                // AF_BRIDGE: the Linux bridges' FDBs (`bridge fdb show`),
                // notified on the neighbour group too.
                for f in [
                    AddressFamily::Inet,
                    AddressFamily::Inet6,
                    AddressFamily::Bridge,
                ] {
                    let mut req = NeighbourMessage::default();
                    req.header.family = f;
                    dump.extend(self.dump(RouteNetlinkMessage::GetNeighbour(req))?);
                }
                self.state.install_neighbours(&dump);
            }
            // What changed during the dumps (it may mark parts stale again).
            self.drain();
        }
        if self.state.stale.any() {
            return Err(io_err("netlink mirror")(io::Error::other(
                "the node kept changing under three re-reads in a row",
            )));
        }
        Ok(())
    }

    /// Re-reads one link (`RTM_GETLINK` by index) into the mirror: for a
    /// change the kernel may not notify (bridge-port flags set on a device
    /// that is down). A failed read marks everything stale.
    pub fn reread_link(&mut self, index: u32) -> Result<(), IoError> {
        // What queued before the answer goes first, so that the answer is
        // the last word about the link.
        self.drain();
        let mut req = LinkMessage::default();
        req.header.index = index;
        match self.query(RouteNetlinkMessage::GetLink(req), NLM_F_ACK) {
            Ok(msgs) => {
                for m in &msgs {
                    self.state.apply(m, false);
                }
                Ok(())
            }
            Err(e) => {
                self.state.stale = Stale::ALL;
                Err(e)
            }
        }
    }

    /// The proxy neighbours, dumped (the kernel notifies none of their changes).
    pub fn proxy_neighbours(&mut self) -> Result<BTreeSet<ProxyNeighbour>, IoError> {
        let mut out = BTreeSet::new();
        for f in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut req = NeighbourMessage::default();
            req.header.family = f;
            req.header.flags = NeighbourFlags::Proxy;
            for m in self.dump(RouteNetlinkMessage::GetNeighbour(req))? {
                if let RouteNetlinkMessage::NewNeighbour(n) = m {
                    match decode_neighbour(&n, &self.state.links) {
                        Some(Neigh::Proxy(p)) => {
                            out.insert(p);
                        }
                        // A proxy dump answers with proxy entries; the flag
                        // is not always echoed.
                        Some(Neigh::Permanent(Neighbour { dev, dst, .. }))
                        | Some(Neigh::Other { dev, dst }) => {
                            out.insert(ProxyNeighbour { dev, dst });
                        }
                        None => {}
                    }
                }
            }
        }
        Ok(out)
    }
}

fn mark_stale_by_type(stale: &mut Stale, kind: u16) {
    match kind {
        libc::RTM_NEWLINK | libc::RTM_DELLINK => *stale = Stale::ALL,
        libc::RTM_NEWADDR | libc::RTM_DELADDR => stale.addresses = true,
        libc::RTM_NEWROUTE | libc::RTM_DELROUTE => stale.routes = true,
        libc::RTM_NEWRULE | libc::RTM_DELRULE => stale.rules = true,
        libc::RTM_NEWNEIGH | libc::RTM_DELNEIGH => stale.neighbours = true,
        _ => {}
    }
}

/// Sets a socket's receive buffer, past `rmem_max` when privileged.
fn set_rcvbuf(fd: RawFd, bytes: usize) -> io::Result<()> {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: setsockopt with a c_int value and its size.
        let r = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r == 0 {
            return Ok(());
        }
    }
    Err(io::Error::last_os_error())
}
