//! When an announcement reaches the kernel: the namespace's rtnetlink
//! notifications for IPv4 host announcements, with their arrival time, read
//! by a thread that entered the namespace. An announcement is an /32
//! address (`RTM_NEWADDR`, `announce_with = address`) or a /32 route with
//! the agent's protocol number (`RTM_NEWROUTE`, `announce_with = route`).

use std::fs::File;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use obgp_config::AnnounceWith;
use obgp_testbed::netns::Netns;

const RTM_NEWADDR: u16 = 20;
const RTM_NEWROUTE: u16 = 24;

/// The announcements (IP, device ifindex) the kernel reports in `netns`.
pub fn spawn_announcement_monitor(
    netns: &Netns,
    how: AnnounceWith,
) -> Result<mpsc::Receiver<(Ipv4Addr, u32, Instant)>> {
    let ns = File::open(netns.path()).context("opening the namespace")?;
    let group = match how {
        AnnounceWith::Address => libc::RTMGRP_IPV4_IFADDR,
        AnnounceWith::Route => libc::RTMGRP_IPV4_ROUTE,
    };
    let (tx, rx) = mpsc::channel();
    let (ready_tx, ready_rx) = mpsc::channel::<std::io::Result<()>>();
    std::thread::spawn(move || {
        // SAFETY: setns/socket/bind/recv on descriptors this thread owns,
        // with correctly sized buffers.
        let fd = unsafe {
            if libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
                let _ = ready_tx.send(Err(std::io::Error::last_os_error()));
                return;
            }
            let fd = libc::socket(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_ROUTE);
            let mut sa: libc::sockaddr_nl = std::mem::zeroed();
            sa.nl_family = libc::AF_NETLINK as u16;
            sa.nl_groups = group as u32;
            if fd < 0
                || libc::bind(
                    fd,
                    &sa as *const libc::sockaddr_nl as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_nl>() as u32,
                ) != 0
            {
                let _ = ready_tx.send(Err(std::io::Error::last_os_error()));
                return;
            }
            // A daemon adding 26k routes at once overran the default
            // receive buffer at 200k ports: the kernel drops what does not
            // fit (ENOBUFS) and the bench waited for announcements it had
            // lost. 64 MiB (root may pass rmem_max).
            let size: libc::c_int = 64 << 20;
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as u32,
            );
            fd
        };
        let _ = ready_tx.send(Ok(()));
        let mut buf = vec![0u8; 1 << 16];
        loop {
            // SAFETY: buf is valid for its length.
            let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
            let at = Instant::now();
            if n <= 0 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOBUFS) {
                    eprintln!("announcement monitor: receive buffer overrun, events lost");
                }
                continue;
            }
            for (ip, ifindex) in parse_announcements(&buf[..n as usize]) {
                if tx.send((ip, ifindex, at)).is_err() {
                    return;
                }
            }
        }
    });
    ready_rx
        .recv_timeout(Duration::from_secs(5))
        .context("announcement monitor start")?
        .context("announcement monitor socket in the namespace")?;
    Ok(rx)
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_ne_bytes([b[i], b[i + 1]])
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// The IPv4 /32 announcements of one netlink datagram: the IFA_LOCAL of an
/// RTM_NEWADDR (with its ifindex), or the RTA_DST of an RTM_NEWROUTE with
/// the agent's protocol (with its RTA_OIF).
fn parse_announcements(mut buf: &[u8]) -> Vec<(Ipv4Addr, u32)> {
    const IFA_LOCAL: u16 = 2;
    const RTA_DST: u16 = 1;
    const RTA_OIF: u16 = 4;
    let mut out = Vec::new();
    while buf.len() >= 16 {
        let len = u32_at(buf, 0) as usize;
        if len < 16 || len > buf.len() {
            break;
        }
        let msg = &buf[..len];
        let kind = u16_at(msg, 4);
        // ifaddrmsg: family, prefixlen, flags, scope, index (8 bytes);
        // rtmsg: family, dst_len, src_len, tos, table, protocol, scope,
        // type, flags (12 bytes).
        let header = match kind {
            RTM_NEWADDR if len >= 24 => Some((msg[16], msg[17], 24)),
            RTM_NEWROUTE if len >= 28 && msg[21] == obgp_netmodel::proto::ANNOUNCE => {
                Some((msg[16], msg[17], 28))
            }
            _ => None,
        };
        if let Some((family, prefix, attrs_at)) = header {
            if family == libc::AF_INET as u8 && prefix == 32 {
                let mut ip = None;
                let mut ifindex = if kind == RTM_NEWADDR {
                    u32_at(msg, 20)
                } else {
                    0
                };
                let mut attrs = &msg[attrs_at..];
                while attrs.len() >= 4 {
                    let alen = u16_at(attrs, 0) as usize;
                    if alen < 4 || alen > attrs.len() {
                        break;
                    }
                    let kind_of_attr = u16_at(attrs, 2);
                    let wanted = if kind == RTM_NEWADDR {
                        IFA_LOCAL
                    } else {
                        RTA_DST
                    };
                    if kind_of_attr == wanted && alen == 8 {
                        ip = Some(Ipv4Addr::new(attrs[4], attrs[5], attrs[6], attrs[7]));
                    } else if kind == RTM_NEWROUTE && kind_of_attr == RTA_OIF && alen == 8 {
                        ifindex = u32_at(attrs, 4);
                    }
                    attrs = &attrs[((alen + 3) & !3).min(attrs.len())..];
                }
                out.extend(ip.map(|ip| (ip, ifindex)));
            }
        }
        buf = &buf[((len + 3) & !3).min(buf.len())..];
    }
    out
}

/// How many IPv4 announcements of the agent's kind the namespace holds on
/// `dev`: its addresses, or its routes with the agent's protocol.
pub fn announcements_on(ns: &Netns, dev: &str, how: AnnounceWith) -> usize {
    let listed = match how {
        AnnounceWith::Address => ns.ip(&["-4", "-o", "addr", "show", "dev", dev]),
        AnnounceWith::Route => ns.ip(&[
            "-4",
            "-o",
            "route",
            "show",
            "table",
            "all",
            "dev",
            dev,
            "proto",
            &obgp_netmodel::proto::ANNOUNCE.to_string(),
        ]),
    };
    listed.map(|s| s.lines().count()).unwrap_or(0)
}
