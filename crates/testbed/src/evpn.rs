//! A real EVPN fabric for the VM tier: the agent's node and a fabric VTEP,
//! each with its own FRR, joined by a veth underlay, with an iBGP
//! `l2vpn evpn` session between them.
//!
//! ```text
//!  node namespace (the agent's)              peer namespace (fabric VTEP)
//!  FRR: router bgp ASN, advertise-all-vni    FRR: the same, plus its VRF config
//!  underlay 10.1.1.1/24  ───── veth ─────    underlay 10.1.1.2/24
//!  vrf-<vni>/br-<vni>/vxlan-<vni>            vrf-<vni>/br-<vni>/vxlan-<vni>
//!   (created by the code under test)          (created here) + 192.168.201.1/32,
//!                                             fd00:201::1/128 on vrf-<vni>
//! ```
//!
//! With [`EvpnFabricOptions::node_lo_vtep`] the node's VTEP is a /32 on its
//! `lo` instead (the peer has a route to it via 10.1.1.1): the VXLAN
//! source an agent finds there when `evpn_local_ip` is unset.
//!
//! The node's router starts with only the default instance (the operator's
//! base config): the EVPN VRF text (`vrf vrf-<vni>` / `vni`, `router bgp
//! ASN vrf vrf-<vni>`) is what the code under test applies with vtysh. The
//! peer's VRF advertises its own addresses as type-5 routes with
//! [`EvpnFabricOptions::route_targets`], so the node's VRF gets a route back
//! and a ping from the peer's VRF can be answered across the VXLAN.
//!
//! With [`EvpnFabricOptions::l2`] the VNI is an L2 VNI instead (the
//! `l2vni` method, [`l2`]): the peer's `br-<vni>`/`vxlan-<vni>` are in no
//! VRF, its FRR has the VNI's `vni` block with the route targets, and
//! hosts on the stretched segment hang off its bridge
//! ([`EvpnFabric::add_peer_host`]).
//!
//! For a node running both EVPN kinds at once (`exposing_method =
//! dynamic`), [`EvpnFabricOptions::peer_l2_vnis`] gives the peer L2 VNIs
//! beside its VRF's, and [`EvpnFabricOptions::ipv4_unicast`] has the
//! session carry `ipv4 unicast` too, so the peer also receives the
//! node's underlay announcements.
//!
//! Why kernel 6.1 only: the CI kernel has no vrf devices (nor dummy, which
//! the agent's base wiring needs), so the L3 fabric is for
//! `#[ignore = "vm tier: ..."]` tests (docs/testbed.md); the L2 fabric
//! needs only bridge, veth and vxlan, which the CI kernel has.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::frr::{checked, ip, short_hash, FrrRouter, Netns};

pub mod l2;
mod options;
mod routes;

pub use options::{EvpnFabricOptions, PeerL2Vni};

pub use routes::unicast_has_path_via;
pub(crate) use routes::{kernel_routes, path_vni};
pub use routes::{type5_routes, KernelRoute, Type5Route};

/// The node's underlay address: its VTEP (`evpn_local_ip`) and BGP source.
pub const NODE_VTEP: &str = "10.1.1.1";
/// The fabric VTEP's underlay address.
pub const PEER_VTEP: &str = "10.1.1.2";
/// An address in the peer's VRF (on its `vrf-<vni>` device): the source of
/// the pings, advertised to the node as a type-5 route.
pub const PEER_VRF_ADDR: &str = "192.168.201.1";
/// The IPv6 address in the peer's VRF.
pub const PEER_VRF_ADDR6: &str = "fd00:201::1";
/// The VXLAN UDP port (the agent's `evpn_udp_dstport` default).
pub const VXLAN_PORT: u16 = 4789;
/// How long the l2vpn evpn session gets to come up (VM tier: ~10x slower
/// CPU; only a failing start waits this long).
const ESTABLISHED_TIMEOUT: Duration = Duration::from_secs(90);
const POLL: Duration = Duration::from_millis(100);

/// The fabric: namespaces, underlay veth, the peer's VNI devices, both FRRs
/// (the session Established). Dropped: daemons killed, namespaces deleted.
pub struct EvpnFabric {
    // fields drop in order: daemons before the namespaces they run in
    /// The node's router (the agent applies its EVPN text here).
    pub node: FrrRouter,
    /// The fabric VTEP's router.
    pub peer: FrrRouter,
    opts: EvpnFabricOptions,
    hosts: Vec<Netns>,
    node_ns: Netns,
    peer_ns: Netns,
}

impl EvpnFabric {
    /// Builds the fabric below `dir` (router state in `node/`, `peer/`);
    /// namespace names derive from `dir`. Returns once the node's and the
    /// peer's `l2vpn evpn` session is Established. Prints what it runs where.
    pub fn start(dir: &Path, opts: &EvpnFabricOptions) -> Result<EvpnFabric> {
        fs::create_dir_all(dir)?;
        let dir = dir.canonicalize()?;
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755))?;
        let tag = short_hash(&dir.display().to_string());
        let node_ns = Netns::add(&format!("obgp{tag}-evn"))?;
        let peer_ns = Netns::add(&format!("obgp{tag}-evp"))?;
        let (n, p) = (node_ns.0.clone(), peer_ns.0.clone());
        let node_if = format!("ev{tag}n");
        let peer_if = format!("ev{tag}p");
        say(&format!(
            "underlay: netns {n} {node_if} {NODE_VTEP}/24 <-> netns {p} {peer_if} {PEER_VTEP}/24"
        ));
        ip(&[
            "link", "add", &node_if, "type", "veth", "peer", "name", &peer_if,
        ])?;
        ip(&["link", "set", &node_if, "netns", &n])?;
        ip(&["link", "set", &peer_if, "netns", &p])?;
        for (ns, dev, addr) in [(&n, &node_if, NODE_VTEP), (&p, &peer_if, PEER_VTEP)] {
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        if let Some(lo) = opts.node_lo_vtep {
            run_in(&n, "ip", &["addr", "add", &format!("{lo}/32"), "dev", "lo"])?;
            run_in(
                &p,
                "ip",
                &["route", "add", &format!("{lo}/32"), "via", NODE_VTEP],
            )?;
        }
        let vni = opts.vni;
        let mut extra_vni_blocks = String::new();
        for extra in &opts.peer_l2_vnis {
            l2::create_l2_vni_devices(&p, extra.vni, PEER_VTEP, VXLAN_PORT)?;
            extra_vni_blocks.push_str(&l2::vni_block(extra.vni, None, &extra.route_targets));
        }
        let peer_base = |evpn_extra: &str| {
            base_config(
                opts,
                PEER_VTEP,
                NODE_VTEP,
                &format!("{evpn_extra}{extra_vni_blocks}"),
            )
        };
        let (peer_zebra, peer_bgpd) = if opts.l2 {
            l2::create_l2_vni_devices(&p, vni, PEER_VTEP, VXLAN_PORT)?;
            (String::new(), peer_base(&l2::peer_vni_block(opts)))
        } else {
            create_vni_devices(&p, vni, PEER_VTEP, VXLAN_PORT)?;
            let vrf = format!("vrf-{vni}");
            for addr in [
                format!("{PEER_VRF_ADDR}/32"),
                format!("{PEER_VRF_ADDR6}/128"),
            ] {
                run_in(&p, "ip", &["addr", "add", &addr, "dev", &vrf])?;
            }
            let zebra = format!("vrf {vrf}\n vni {vni}\nexit-vrf\n");
            let bgpd = format!("{}{}", peer_base(""), peer_vrf_config(opts));
            (zebra, bgpd)
        };
        say(&format!(
            "FRR peer (fabric VTEP) in netns {p}, state {}/peer:\n{}{}",
            dir.display(),
            indent(&peer_zebra),
            indent(&peer_bgpd)
        ));
        let peer =
            FrrRouter::launch_with_configs(&p, &dir.join("peer"), &peer_zebra, &peer_bgpd, &[])?;
        let node_bgpd = base_config(opts, NODE_VTEP, PEER_VTEP, "");
        say(&format!(
            "FRR node in netns {n}, state {}/node (base config; the EVPN VRF text comes from the code under test):\n{}",
            dir.display(),
            indent(&node_bgpd)
        ));
        let node = FrrRouter::launch_with_configs(&n, &dir.join("node"), "", &node_bgpd, &[])?;
        let mut fabric = EvpnFabric {
            node,
            peer,
            opts: opts.clone(),
            hosts: Vec::new(),
            node_ns,
            peer_ns,
        };
        let took = fabric
            .peer
            .wait_established(NODE_VTEP, ESTABLISHED_TIMEOUT)
            .map_err(|e| e.context(fabric.node.logs()))?;
        say(&format!(
            "iBGP l2vpn evpn session {PEER_VTEP} <-> {NODE_VTEP} Established ({:.1} s)",
            took.as_secs_f64()
        ));
        Ok(fabric)
    }

    /// The node's namespace (where the agent runs).
    pub fn node_netns(&self) -> &str {
        &self.node_ns.0
    }

    /// The fabric VTEP's namespace.
    pub fn peer_netns(&self) -> &str {
        &self.peer_ns.0
    }

    /// The node's VTEP: [`EvpnFabricOptions::node_lo_vtep`], else
    /// [`NODE_VTEP`]. The next hop of the type-5 routes the node announces.
    pub fn node_vtep(&self) -> String {
        self.opts
            .node_lo_vtep
            .map_or_else(|| NODE_VTEP.to_string(), |ip| ip.to_string())
    }

    /// True for an L2 fabric ([`EvpnFabricOptions::l2`]).
    pub fn is_l2(&self) -> bool {
        self.opts.l2
    }

    /// The VNI of the peer's VRF.
    pub fn vni(&self) -> u32 {
        self.opts.vni
    }

    /// The peer's VRF device, `vrf-<vni>`.
    pub fn vrf(&self) -> String {
        format!("vrf-{}", self.opts.vni)
    }

    /// A host (a VM stand-in) in a namespace of its own: veth `node_end`
    /// (in the node namespace, up, left for the caller to enslave) <->
    /// `eth0` (MAC `mac`, address `cidr`, default route via `gateway`).
    /// Returns the host's namespace name; deleted with the fabric.
    pub fn add_host(
        &mut self,
        node_end: &str,
        mac: &str,
        cidr: &str,
        gateway: &str,
    ) -> Result<String> {
        let name = format!("{}-h{}", self.node_ns.0, self.hosts.len());
        let ns = Netns::add(&name)?;
        let n = self.node_netns().to_string();
        say(&format!(
            "host: netns {name} eth0 {mac} {cidr} (default via {gateway}) <-> {node_end} in netns {n}"
        ));
        ip(&[
            "-n", &n, "link", "add", node_end, "type", "veth", "peer", "name", "eth0",
        ])?;
        ip(&["-n", &n, "link", "set", "eth0", "netns", &name])?;
        ip(&["-n", &n, "link", "set", node_end, "up"])?;
        ip(&["-n", &name, "link", "set", "lo", "up"])?;
        ip(&["-n", &name, "link", "set", "eth0", "address", mac])?;
        ip(&["-n", &name, "addr", "add", cidr, "dev", "eth0"])?;
        ip(&["-n", &name, "link", "set", "eth0", "up"])?;
        ip(&["-n", &name, "route", "add", "default", "via", gateway])?;
        self.hosts.push(ns);
        Ok(name)
    }

    /// `ip ARGS` in the node namespace, printed.
    pub fn node_ip(&self, args: &[&str]) -> Result<String> {
        run_in(self.node_netns(), "ip", args)
    }

    /// `ip ARGS` in the peer namespace, printed.
    pub fn peer_ip(&self, args: &[&str]) -> Result<String> {
        run_in(self.peer_netns(), "ip", args)
    }

    /// The type-5 routes in the peer's BGP EVPN table (its own included).
    pub fn peer_type5_routes(&self) -> Result<Vec<Type5Route>> {
        let v = self
            .peer
            .show_json("show bgp l2vpn evpn route detail type prefix json")?;
        Ok(type5_routes(&v))
    }

    /// The peer's type-5 routes for `prefix` that came from the node (next
    /// hop [`EvpnFabric::node_vtep`]).
    pub fn peer_type5_from_node(&self, prefix: &str) -> Result<Vec<Type5Route>> {
        let vtep = self.node_vtep();
        Ok(self
            .peer_type5_routes()?
            .into_iter()
            .filter(|r| r.prefix == prefix && r.next_hop == vtep)
            .collect())
    }

    /// Whether the peer's `ipv4 unicast` table holds `prefix` from the
    /// node (a path whose next hop is [`NODE_VTEP`], the session's
    /// source). Needs [`EvpnFabricOptions::ipv4_unicast`].
    pub fn peer_unicast_from_node(&self, prefix: &str) -> Result<bool> {
        if !self.opts.ipv4_unicast {
            bail!("peer_unicast_from_node({prefix}): the session carries no ipv4 unicast (EvpnFabricOptions::ipv4_unicast)");
        }
        Ok(unicast_has_path_via(
            &self.peer.show_bgp_json()?,
            prefix,
            NODE_VTEP,
        ))
    }

    /// Waits until the peer has (`present`) or lacks a type-5 route of
    /// `prefix` from the node; returns how long it took. The error shows
    /// the peer's type-5 table.
    pub fn wait_peer_type5(
        &self,
        prefix: &str,
        present: bool,
        timeout: Duration,
    ) -> Result<Duration> {
        let started = Instant::now();
        loop {
            let have = !self.peer_type5_from_node(prefix)?.is_empty();
            if have == present {
                return Ok(started.elapsed());
            }
            if started.elapsed() > timeout {
                bail!(
                    "the peer still {} the type-5 route {prefix} from {} after {timeout:?}; its type-5 routes: {:#?}\n{}",
                    if present { "lacks" } else { "has" },
                    self.node_vtep(),
                    self.peer_type5_routes()?,
                    self.peer.logs()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// The peer's kernel VRF table, both families (`ip -j [-6] route show
    /// vrf vrf-<vni>`).
    pub fn peer_vrf_routes(&self) -> Result<Vec<KernelRoute>> {
        let vrf = self.vrf();
        let mut out = Vec::new();
        for fam in ["-4", "-6"] {
            let text = ip(&[
                "-n",
                self.peer_netns(),
                "-j",
                fam,
                "route",
                "show",
                "vrf",
                &vrf,
            ])?;
            out.extend(kernel_routes(&text)?);
        }
        Ok(out)
    }

    /// Waits until the peer's VRF table has (`present`) or lacks a route to
    /// `dst` (as `ip` prints it: `172.24.4.10`, `2001:db8::10`) installed by
    /// BGP; returns how long it took.
    pub fn wait_peer_vrf_route(
        &self,
        dst: &str,
        present: bool,
        timeout: Duration,
    ) -> Result<Duration> {
        let started = Instant::now();
        loop {
            let routes = self.peer_vrf_routes()?;
            let have = routes
                .iter()
                .any(|r| r.dst == dst && r.protocol.as_deref() == Some("bgp"));
            if have == present {
                return Ok(started.elapsed());
            }
            if started.elapsed() > timeout {
                bail!(
                    "the peer's {} still {} a bgp route to {dst} after {timeout:?}: {routes:#?}",
                    self.vrf(),
                    if present { "lacks" } else { "has" }
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Pings `dst` from the peer's VRF across the VXLAN ([`ping`]).
    pub fn ping_from_peer_vrf(&self, dst: &str, timeout: Duration) -> Result<String> {
        ping(self.peer_netns(), Some(&self.vrf()), dst, timeout).map_err(|e| {
            e.context(format!(
                "peer {} routes: {:#?}",
                self.vrf(),
                self.peer_vrf_routes().unwrap_or_default()
            ))
        })
    }

    /// Pings `dst` from the node's `vrf-<vni>` (no VXLAN on the way: the
    /// node's own side of the path, e.g. to a host behind the provider
    /// bridge).
    pub fn ping_from_node_vrf(&self, dst: &str, timeout: Duration) -> Result<String> {
        ping(self.node_netns(), Some(&self.vrf()), dst, timeout)
    }

    /// What the node and the peer know about the path, for a failure: their
    /// neighbours on `br-<vni>`, FDB of `vxlan-<vni>`, VRF routes and the
    /// links' counters, and the hosts' links and neighbours.
    pub fn path_evidence(&self) -> String {
        let vni = self.opts.vni;
        let (vrf, br, vx) = (self.vrf(), format!("br-{vni}"), format!("vxlan-{vni}"));
        let mut out = String::new();
        let mut show = |ns: &str, program: &str, args: &[&str]| {
            let text = Command::new("ip")
                .args(["netns", "exec", ns, program])
                .args(args)
                .output()
                .map(|o| {
                    format!(
                        "{}{}",
                        String::from_utf8_lossy(&o.stdout),
                        String::from_utf8_lossy(&o.stderr)
                    )
                })
                .unwrap_or_else(|e| format!("({e})"));
            out.push_str(&format!(
                "$ netns {ns}: {program} {}\n{text}",
                args.join(" ")
            ));
        };
        for ns in [self.node_netns(), self.peer_netns()] {
            show(ns, "ip", &["neigh", "show", "dev", &br]);
            show(ns, "bridge", &["fdb", "show", "dev", &vx]);
            show(ns, "ip", &["route", "show", "vrf", &vrf]);
            show(ns, "ip", &["neigh", "show", "vrf", &vrf]);
            show(ns, "ip", &["-br", "link"]);
        }
        for h in &self.hosts {
            show(&h.0, "ip", &["-s", "link", "show", "eth0"]);
            show(&h.0, "ip", &["neigh"]);
        }
        out
    }
}

/// Pings `dst` from `netns` (`busybox ping`; with `vrf`, `-I <vrf>`: the
/// socket bound to the VRF, the source one of its addresses), one echo per
/// try until one is answered or `timeout` passes. Returns the last ping's
/// output. (The host has no iputils ping; busybox is a VM-tier dependency
/// anyway.)
pub fn ping(netns: &str, vrf: Option<&str>, dst: &str, timeout: Duration) -> Result<String> {
    let mut args = vec!["ping", "-c", "1", "-W", "2"];
    if let Some(vrf) = vrf {
        args.extend(["-I", vrf]);
    }
    args.push(dst);
    say(&format!("netns {netns}: busybox {}", args.join(" ")));
    let started = Instant::now();
    loop {
        let out = Command::new("ip")
            .args(["netns", "exec", netns, "busybox"])
            .args(&args)
            .output()
            .context("running busybox ping (apt package busybox-static)")?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if out.status.success() {
            return Ok(text);
        }
        if started.elapsed() > timeout {
            let from = vrf.map_or_else(String::new, |v| format!(" to {v}"));
            bail!(
                "no echo reply from {dst}{from} in netns {netns} within {timeout:?}: {}",
                text.trim()
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Creates the L3 VNI devices the agent's EVPN modes build, in namespace
/// `netns`: `vrf-<vni>` (table = VNI) and in it the bridge and VXLAN
/// device of [`create_bridge_with_vxlan`]. The peer's side of the fabric,
/// and the node's before the agent does it.
pub fn create_vni_devices(netns: &str, vni: u32, local: &str, dstport: u16) -> Result<()> {
    let (vrf, vni_s) = (format!("vrf-{vni}"), vni.to_string());
    run_in(
        netns,
        "ip",
        &["link", "add", &vrf, "type", "vrf", "table", &vni_s],
    )?;
    run_in(netns, "ip", &["link", "set", &vrf, "up"])?;
    create_bridge_with_vxlan(netns, vni, local, dstport, Some(&vrf))?;
    // routing between the VRF's devices (the VXLAN side and the hosts'),
    // as the agent's sysctls do on the node
    run_in(
        netns,
        "sysctl",
        &[
            "-q",
            "-w",
            "net.ipv4.ip_forward=1",
            "net.ipv6.conf.all.forwarding=1",
        ],
    )?;
    Ok(())
}

/// `br-<vni>` (no STP, enslaved to `vrf` if any) and `vxlan-<vni>` (id =
/// VNI, `local`, `dstport`, no learning) in it with the bridge-port flags
/// learning off and neigh_suppress on; all up: the two devices of a VNI in
/// both EVPN modes.
pub(crate) fn create_bridge_with_vxlan(
    netns: &str,
    vni: u32,
    local: &str,
    dstport: u16,
    vrf: Option<&str>,
) -> Result<()> {
    let (br, vx) = (format!("br-{vni}"), format!("vxlan-{vni}"));
    let (vni_s, port) = (vni.to_string(), dstport.to_string());
    run_in(
        netns,
        "ip",
        &["link", "add", &br, "type", "bridge", "stp_state", "0"],
    )?;
    if let Some(vrf) = vrf {
        run_in(netns, "ip", &["link", "set", &br, "master", vrf])?;
    }
    let steps: [&[&str]; 5] = [
        &["link", "set", &br, "up"],
        &[
            "link",
            "add",
            &vx,
            "type",
            "vxlan",
            "id",
            &vni_s,
            "local",
            local,
            "dstport",
            &port,
            "nolearning",
        ],
        &["link", "set", &vx, "master", &br],
        &["link", "set", &vx, "up"],
        &["link", "show", &vx],
    ];
    for args in steps {
        run_in(netns, "ip", args)?;
    }
    run_in(
        netns,
        "bridge",
        &[
            "link",
            "set",
            "dev",
            &vx,
            "learning",
            "off",
            "neigh_suppress",
            "on",
        ],
    )?;
    Ok(())
}

/// The default instance of either side: the iBGP `l2vpn evpn` session and
/// `advertise-all-vni` (which makes zebra report the VNIs to bgpd), then
/// `evpn_extra` (lines of its `address-family l2vpn evpn`); with
/// [`EvpnFabricOptions::ipv4_unicast`] the session's `ipv4 unicast` too.
fn base_config(opts: &EvpnFabricOptions, me: &str, neighbor: &str, evpn_extra: &str) -> String {
    let asn = opts.asn;
    let unicast = if opts.ipv4_unicast {
        format!(
            " address-family ipv4 unicast\n  neighbor {neighbor} activate\n exit-address-family\n"
        )
    } else {
        String::new()
    };
    format!(
        "router bgp {asn}
 bgp router-id {me}
 no bgp default ipv4-unicast
 neighbor {neighbor} remote-as {asn}
 neighbor {neighbor} timers 1 3
 neighbor {neighbor} timers connect 1
{unicast} address-family l2vpn evpn
  neighbor {neighbor} activate
  advertise-all-vni
{evpn_extra} exit-address-family
"
    )
}

/// The peer's VRF instance: its own addresses out as type-5 routes, with
/// the fabric's route targets in both directions.
fn peer_vrf_config(opts: &EvpnFabricOptions) -> String {
    let mut rts = String::new();
    for rt in &opts.route_targets {
        rts.push_str(&format!(
            "  route-target import {rt}\n  route-target export {rt}\n"
        ));
    }
    format!(
        "router bgp {asn} vrf vrf-{vni}
 bgp router-id {PEER_VTEP}
 address-family ipv4 unicast
  redistribute connected
 exit-address-family
 address-family ipv6 unicast
  redistribute connected
 exit-address-family
 address-family l2vpn evpn
  advertise ipv4 unicast
  advertise ipv6 unicast
  rd {PEER_VTEP}:{vni}
{rts} exit-address-family
",
        asn = opts.asn,
        vni = opts.vni
    )
}

/// Runs `program args` in `netns` (`ip netns exec`), printing it first:
/// the test output says what ran where.
pub(crate) fn run_in(netns: &str, program: &str, args: &[&str]) -> Result<String> {
    say(&format!("netns {netns}: {program} {}", args.join(" ")));
    let out = Command::new("ip")
        .args(["netns", "exec", netns, program])
        .args(args)
        .output()
        .with_context(|| format!("running {program} in netns {netns}"))?;
    checked(
        out,
        &format!("{program} {} in netns {netns}", args.join(" ")),
    )
}

pub(crate) fn say(what: &str) {
    println!("evpn-fabric: {what}");
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    | {l}\n")).collect()
}

#[cfg(test)]
mod tests;
