//! FRR routers (zebra + bgpd) in network namespaces: the node's router and
//! the fabric peer, each with its own config, pid and vty directory.
//!
//! [`FrrRouter`] runs the two daemons of one router in a given namespace as
//! children of the test process (so they are always stopped and reaped on
//! drop). [`FrrPair`] builds the usual fixture: a "node" and a "peer"
//! namespace joined by a veth pair, an eBGP session between them, and a
//! `bgp-nic` stand-in on the node whose addresses the node announces with
//! `redistribute connected`; plus bounded waits for what the peer learns.
//!
//! Why the daemons are started the way they are (see `../shared/testbed`):
//! FRR refuses to run as root unless root is in group frrvty, so the daemons
//! drop to user `frr` and the router's directory is chowned to it; FRR always
//! writes `/var/tmp/frr/<daemon>.<pid>/`, so each daemon gets the router's
//! own `vartmp` bind-mounted on `/var/tmp` inside the private mount namespace
//! that `ip netns exec` creates, and nothing lands on the host's /var/tmp.
//!
//! Over 700 lines: a test harness whose parts (daemon start, namespaces,
//! vty protocol, bounded waits) serve one fixture and change together.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// Where Debian installs the FRR daemons (apt package `frr`).
const FRR_SBIN: &str = "/usr/lib/frr";
/// How long a daemon gets to come up: well under a second on the host, many
/// seconds under TCG (docs/testbed.md, "Measured timings"), more on a loaded
/// machine. Only a failing start waits this long.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a daemon gets to exit after SIGTERM before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one vty command may take to answer.
const VTY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a pair's session gets to come up.
const ESTABLISHED_TIMEOUT: Duration = Duration::from_secs(60);
/// Poll interval of every wait here (each poll is one cheap vty round trip).
const POLL: Duration = Duration::from_millis(50);

/// One FRR router: zebra and bgpd in network namespace `netns`, all state
/// (configs, pid files, vty sockets, logs, zserv socket) below its directory.
/// The daemons are killed and reaped on drop, also when a test panics.
pub struct FrrRouter {
    netns: String,
    dir: PathBuf,
    zebra_args: Vec<String>,
    daemons: Vec<(&'static str, Child)>,
}

impl FrrRouter {
    /// Starts zebra and bgpd in `netns` (which must exist) with state in
    /// `dir` (created; chowned to user frr), waits until both answer on their
    /// vty sockets, then applies `config` with `vtysh -f` (nothing if empty).
    /// On any failure the daemons already started are stopped and the error
    /// carries their logs.
    pub fn start(netns: &str, dir: &Path, config: &str) -> Result<FrrRouter> {
        FrrRouter::start_with(netns, dir, config, &[])
    }

    /// [`FrrRouter::start`] with extra zebra arguments, e.g. `-n` for FRR's
    /// netns VRF backend (every named netns on the host becomes an FRR VRF).
    pub fn start_with(
        netns: &str,
        dir: &Path,
        config: &str,
        zebra_args: &[&str],
    ) -> Result<FrrRouter> {
        let router = FrrRouter::launch(netns, dir, "", zebra_args)?;
        if !config.trim().is_empty() {
            let file = router.dir.join("frr-initial.conf");
            fs::write(&file, config)?;
            router.vtysh_file(&file)?;
        }
        Ok(router)
    }

    /// Starts the daemons with `bgpd_conf` as bgpd's startup config (read by
    /// bgpd itself: saves a vtysh spawn, slow under TCG). Only for pure BGP
    /// config, which is what [`FrrPair`] has.
    fn launch(netns: &str, dir: &Path, bgpd_conf: &str, zebra_args: &[&str]) -> Result<FrrRouter> {
        FrrRouter::launch_with_configs(netns, dir, "", bgpd_conf, zebra_args)
    }

    /// [`FrrRouter::launch`] with a zebra startup config too (e.g. an EVPN
    /// `vrf NAME` / `vni N` mapping, which is zebra's).
    pub(crate) fn launch_with_configs(
        netns: &str,
        dir: &Path,
        zebra_conf: &str,
        bgpd_conf: &str,
        zebra_args: &[&str],
    ) -> Result<FrrRouter> {
        let frr = frr_ids()?;
        fs::create_dir_all(dir.join("vartmp"))
            .with_context(|| format!("creating {}", dir.display()))?;
        let dir = dir.canonicalize()?;
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755))?;
        fs::set_permissions(dir.join("vartmp"), fs::Permissions::from_mode(0o1777))?;
        check_reachable_by_others(&dir)?;
        fs::write(dir.join("zebra.conf"), zebra_conf)?;
        fs::write(dir.join("bgpd.conf"), bgpd_conf)?;
        chown_tree(&dir, frr)?;
        let mut router = FrrRouter {
            netns: netns.to_string(),
            dir,
            zebra_args: zebra_args.iter().map(|s| s.to_string()).collect(),
            daemons: Vec::new(),
        };
        router.start_daemons()?;
        Ok(router)
    }

    /// zebra first, then bgpd once zebra serves: a bgpd that finds no zserv
    /// socket retries only after ~10 s and until then announces nothing.
    fn start_daemons(&mut self) -> Result<()> {
        for daemon in ["zebra", "bgpd"] {
            let deadline = Instant::now() + START_TIMEOUT;
            // sockets of a previous run (restart) would look ready
            let socket = self.dir.join(format!("{daemon}.vty"));
            let _ = fs::remove_file(&socket);
            if daemon == "zebra" {
                let _ = fs::remove_file(self.dir.join("zserv.api"));
            }
            let child = self.spawn_daemon(daemon)?;
            self.daemons.push((daemon, child));
            // zebra opens its zserv socket before its vty socket, so a vty
            // that accepts means bgpd can connect. A connect instead of a
            // vtysh call: vtysh is slow under TCG (it loads YANG models).
            loop {
                self.check_alive()?;
                if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
                    break;
                }
                if Instant::now() >= deadline {
                    bail!(
                        "FRR {daemon} in netns {} did not answer on {} within {START_TIMEOUT:?}\n{}",
                        self.netns,
                        self.dir.display(),
                        self.logs()
                    );
                }
                std::thread::sleep(POLL);
            }
        }
        Ok(())
    }

    fn spawn_daemon(&self, daemon: &str) -> Result<Child> {
        let d = &self.dir;
        let path = |name: &str| d.join(name).display().to_string();
        let out = fs::File::create(d.join(format!("{daemon}.out")))?;
        let mut cmd = Command::new("ip");
        // `ip netns exec` gives the command a private mount namespace, so the
        // bind mount of vartmp on /var/tmp is seen by this daemon only
        cmd.args(["netns", "exec", &self.netns, "sh", "-c"])
            .arg(r#"mount --bind "$1" /var/tmp || exit 97; shift; exec "$@""#)
            .arg("sh")
            .arg(path("vartmp"))
            .arg(format!("{FRR_SBIN}/{daemon}"))
            .args(["-f", &path(&format!("{daemon}.conf"))])
            .args(["-i", &path(&format!("{daemon}.pid"))])
            .args(["-z", &path("zserv.api")])
            .arg("--vty_socket")
            .arg(d)
            .args(["-P", "0"])
            .args(["--log", &format!("file:{}", path(&format!("{daemon}.log")))]);
        if daemon == "zebra" {
            cmd.args(&self.zebra_args);
        }
        cmd.stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        cmd.spawn().with_context(|| {
            format!(
                "starting FRR {daemon} in netns {} (ip, apt package frr)",
                self.netns
            )
        })
    }

    /// An error naming the daemon (with the logs) if one of them has exited.
    fn check_alive(&mut self) -> Result<()> {
        for (name, child) in &mut self.daemons {
            if let Some(status) = child.try_wait()? {
                let name = *name;
                bail!(
                    "FRR {name} in netns {} exited ({status})\n{}",
                    self.netns,
                    self.logs()
                );
            }
        }
        Ok(())
    }

    /// Stops the daemons and starts them again with empty configs, as an
    /// operator's `systemctl restart frr` with no saved config would: whatever
    /// was configured with vtysh is gone.
    pub fn restart(&mut self) -> Result<()> {
        self.stop();
        for daemon in ["zebra", "bgpd"] {
            fs::write(self.dir.join(format!("{daemon}.conf")), "")?;
        }
        self.start_daemons()
    }

    /// SIGTERM to every daemon (bgpd then sends its peers a NOTIFICATION, as
    /// on a real restart), SIGKILL after [`STOP_TIMEOUT`], all reaped.
    fn stop(&mut self) {
        for (_, child) in &self.daemons {
            // the child is ours and not yet reaped, so its pid is still its own
            if let Ok(pid) = libc::pid_t::try_from(child.id()) {
                // SAFETY: kill(2) takes plain integers; no memory is shared.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        for (_, mut child) in self.daemons.drain(..) {
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(POLL);
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGKILL to every daemon, reaped: teardown needs no graceful exit (the
    /// namespace goes next), and under TCG a graceful one costs seconds.
    fn kill(&mut self) {
        for (_, mut child) in self.daemons.drain(..) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The process ids of the running daemons (zebra, bgpd).
    pub fn pids(&self) -> Vec<u32> {
        self.daemons.iter().map(|(_, c)| c.id()).collect()
    }

    /// The process id of one daemon (`zebra`, `bgpd`).
    pub fn pid_of(&self, daemon: &str) -> Option<u32> {
        self.daemons
            .iter()
            .find(|(name, _)| *name == daemon)
            .map(|(_, c)| c.id())
    }

    /// The network namespace the daemons run in.
    pub fn netns(&self) -> &str {
        &self.netns
    }

    /// The directory holding the vty sockets: what `vtysh --vty_socket`
    /// (and the agent's `frr_vty_socket`-style setting) needs.
    pub fn vty_dir(&self) -> &Path {
        &self.dir
    }

    fn vtysh_command(&self, args: &[&str]) -> Result<std::process::Output> {
        Command::new("vtysh")
            .arg("--vty_socket")
            .arg(&self.dir)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .context("running vtysh (apt package frr)")
    }

    /// Runs one vtysh command (`show ...`, or several lines of config after
    /// `configure terminal`) and returns its output; an error with the output
    /// if vtysh fails.
    pub fn vtysh(&self, cmd: &str) -> Result<String> {
        let out = self.vtysh_command(&["-c", cmd])?;
        checked(out, &format!("vtysh -c {cmd:?} on {}", self.netns))
    }

    /// Applies a config file with `vtysh -f` (what the agent does).
    pub fn vtysh_file(&self, path: &Path) -> Result<String> {
        let p = path.display().to_string();
        let out = self.vtysh_command(&["-f", &p])?;
        checked(out, &format!("vtysh -f {p} on {}", self.netns))
    }

    /// `show bgp ipv4 unicast json`, parsed.
    pub fn show_bgp_json(&self) -> Result<Value> {
        self.show_json("show bgp ipv4 unicast json")
    }

    /// `show bgp ipv6 unicast json`, parsed.
    pub fn show_bgp_ipv6_json(&self) -> Result<Value> {
        self.show_json("show bgp ipv6 unicast json")
    }

    /// Any `show ... json` command, parsed. `show bgp ...` commands go
    /// straight to bgpd's vty socket ([`FrrRouter::vty_command`]), the others
    /// through vtysh.
    pub fn show_json(&self, cmd: &str) -> Result<Value> {
        let text = if cmd.starts_with("show bgp") || cmd.starts_with("show ip bgp") {
            self.vty_command("bgpd", cmd)?
        } else {
            self.vtysh(cmd)?
        };
        serde_json::from_str(&text).with_context(|| format!("{cmd}: not JSON: {text}"))
    }

    /// Runs one command on `daemon`'s vty socket directly, speaking vtysh's
    /// protocol (the command NUL-terminated; the answer is the output, three
    /// NULs and the command's status byte). A session starts in FRR's view
    /// node, so this is for `show` commands. Far cheaper than a vtysh spawn
    /// (which loads its YANG models; docs/testbed.md, "Measured timings"),
    /// which is what makes polling cheap in the VM tier.
    pub fn vty_command(&self, daemon: &str, cmd: &str) -> Result<String> {
        use std::io::{Read, Write};
        let path = self.dir.join(format!("{daemon}.vty"));
        let what = || format!("{daemon} vty {} ({cmd:?})", path.display());
        let mut sock = std::os::unix::net::UnixStream::connect(&path)
            .with_context(|| format!("connecting to {}", what()))?;
        sock.set_read_timeout(Some(VTY_TIMEOUT))?;
        let mut request = cmd.as_bytes().to_vec();
        request.push(0);
        sock.write_all(&request)
            .with_context(|| format!("writing to {}", what()))?;
        let mut answer = Vec::new();
        let mut buf = [0u8; 65536];
        loop {
            let n = sock
                .read(&mut buf)
                .with_context(|| format!("reading from {}", what()))?;
            if n == 0 {
                bail!("{} closed the connection before answering", what());
            }
            answer.extend_from_slice(&buf[..n]);
            if let Some((text, status)) = split_vty_answer(&answer) {
                let text = String::from_utf8_lossy(text).into_owned();
                if status != 0 {
                    bail!("{} failed (status {status}): {}", what(), text.trim());
                }
                return Ok(text);
            }
        }
    }

    /// Every prefix in this router's IPv4 and IPv6 unicast BGP tables, as FRR
    /// prints them (`192.0.2.10/32`, `2001:db8::10/128`).
    pub fn bgp_prefixes(&self) -> Result<BTreeSet<String>> {
        let mut out = route_keys(&self.show_bgp_json()?);
        out.extend(route_keys(&self.show_bgp_ipv6_json()?));
        Ok(out)
    }

    /// The BGP state of `neighbor` (`Established`, `Active`, ...), if FRR
    /// knows the neighbor.
    pub fn neighbor_state(&self, neighbor: &str) -> Result<Option<String>> {
        let v = self.show_json(&format!("show bgp neighbors {neighbor} json"))?;
        Ok(v[neighbor]["bgpState"].as_str().map(String::from))
    }

    /// Waits (polling, bounded) until the session with `neighbor` is
    /// Established; the error shows the last state and the logs.
    pub fn wait_established(&mut self, neighbor: &str, timeout: Duration) -> Result<Duration> {
        let started = Instant::now();
        let mut last = None;
        while started.elapsed() < timeout {
            self.check_alive()?;
            last = self.neighbor_state(neighbor).ok().flatten();
            if last.as_deref() == Some("Established") {
                return Ok(started.elapsed());
            }
            std::thread::sleep(POLL);
        }
        bail!(
            "BGP session {} -> {neighbor} not Established within {timeout:?} (last state {last:?})\n{}",
            self.netns,
            self.logs()
        )
    }

    /// Waits (polling, bounded) until `prefix` is in this router's BGP table
    /// (`present`) or gone from it (`!present`); returns how long it took.
    /// The error shows the table and the logs.
    pub fn wait_for_prefix(
        &mut self,
        prefix: &str,
        present: bool,
        timeout: Duration,
    ) -> Result<Duration> {
        let cmd = if prefix.contains(':') {
            "show bgp ipv6 unicast json"
        } else {
            "show bgp ipv4 unicast json"
        };
        let started = Instant::now();
        let mut last = BTreeSet::new();
        while started.elapsed() < timeout {
            self.check_alive()?;
            last = route_keys(&self.show_json(cmd)?);
            if last.contains(prefix) == present {
                return Ok(started.elapsed());
            }
            std::thread::sleep(POLL);
        }
        bail!(
            "{} still {} {prefix} after {timeout:?}; its BGP table: {last:?}\n{}",
            self.netns,
            if present { "lacks" } else { "has" },
            self.logs()
        )
    }

    /// The daemons' log files and captured output, for failure messages.
    pub fn logs(&self) -> String {
        let mut s = String::new();
        for daemon in ["zebra", "bgpd"] {
            for ext in ["log", "out"] {
                let p = self.dir.join(format!("{daemon}.{ext}"));
                if let Ok(text) = fs::read_to_string(&p) {
                    if !text.trim().is_empty() {
                        s.push_str(&format!("--- {} ---\n{}\n", p.display(), tail(&text, 30)));
                    }
                }
            }
        }
        s
    }
}

impl Drop for FrrRouter {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Options of an [`FrrPair`].
#[derive(Clone, Debug)]
pub struct FrrPairOptions {
    /// The node's AS (the agent's `bgp_AS`).
    pub node_as: u32,
    /// The peer's (ToR's) AS.
    pub peer_as: u32,
    /// Configure BGP on the node too (router-id, neighbor, `redistribute
    /// connected` for both families). If false the node's router is running
    /// but unconfigured: the code under test writes its config with
    /// `vtysh --vty_socket <node.vty_dir()> -f FILE`.
    pub configure_node: bool,
    /// Create `bgp-nic` in the node namespace: a dummy where the kernel has
    /// one (VM tier), else an ifb (CI kernel). Always up.
    pub bgp_nic: bool,
    /// Run the node's zebra with FRR's netns VRF backend (`zebra -n`): a
    /// namespace NAME is FRR `vrf NAME`, a stand-in for kernel VRFs.
    pub vrf_netns: bool,
}

impl Default for FrrPairOptions {
    /// Node AS 64999, peer AS 65000, node configured, bgp-nic present.
    fn default() -> Self {
        FrrPairOptions {
            node_as: 64999,
            peer_as: 65000,
            configure_node: true,
            bgp_nic: true,
            vrf_netns: false,
        }
    }
}

/// Two routers in two fresh namespaces joined by a veth pair: "node"
/// (10.255.0.1/30 and fd00:255::1/64, where the agent runs) and "peer"
/// (10.255.0.2/30 and fd00:255::2/64, the fabric), with an eBGP session (timers 1/3, connect 1) carrying IPv4 and
/// IPv6 unicast. Dropping it stops the daemons and deletes the namespaces.
pub struct FrrPair {
    // fields drop in order: daemons before the namespaces they run in
    /// The node's router.
    pub node: FrrRouter,
    /// The fabric peer.
    pub peer: FrrRouter,
    /// The veth end in the node namespace.
    pub node_if: String,
    /// The veth end in the peer namespace.
    pub peer_if: String,
    extra_ns: Vec<Netns>,
    node_ns: Netns,
    peer_ns: Netns,
}

/// The node's address on the veth, the peer's BGP neighbor.
pub const NODE_ADDR: &str = "10.255.0.1";
/// The peer's address on the veth, the node's BGP neighbor.
pub const PEER_ADDR: &str = "10.255.0.2";
/// The node's IPv6 address on the veth (the next hop of its IPv6 routes).
pub const NODE_ADDR6: &str = "fd00:255::1";
/// The peer's IPv6 address on the veth.
pub const PEER_ADDR6: &str = "fd00:255::2";

impl FrrPair {
    /// A configured pair with the given ASes, waiting for Established.
    pub fn start(dir: &Path, node_as: u32, peer_as: u32) -> Result<FrrPair> {
        FrrPair::start_with(
            dir,
            &FrrPairOptions {
                node_as,
                peer_as,
                ..FrrPairOptions::default()
            },
        )
    }

    /// A pair with state below `dir` (`node/`, `peer/`). Namespace and veth
    /// names derive from `dir`, so pairs in different directories coexist.
    /// With `configure_node`, returns once the session is Established.
    pub fn start_with(dir: &Path, opts: &FrrPairOptions) -> Result<FrrPair> {
        fs::create_dir_all(dir)?;
        let dir = dir.canonicalize()?;
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755))?;
        let tag = short_hash(&dir.display().to_string());
        let node_ns = Netns::add(&format!("obgp{tag}-node"))?;
        let peer_ns = Netns::add(&format!("obgp{tag}-peer"))?;
        let node_if = format!("obgp{tag}n");
        let peer_if = format!("obgp{tag}p");
        let (n, p) = (node_ns.0.as_str(), peer_ns.0.as_str());
        ip(&[
            "link", "add", &node_if, "type", "veth", "peer", "name", &peer_if,
        ])?;
        ip(&["link", "set", &node_if, "netns", n])?;
        ip(&["link", "set", &peer_if, "netns", p])?;
        for (ns, dev, addr, addr6) in [
            (n, &node_if, NODE_ADDR, NODE_ADDR6),
            (p, &peer_if, PEER_ADDR, PEER_ADDR6),
        ] {
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["-n", ns, "addr", "add", &format!("{addr}/30"), "dev", dev])?;
            // IPv6 routes over the IPv4 session need a global next hop: with
            // only a link-local one the peer rejects the UPDATE and resets
            ip(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{addr6}/64"),
                "dev",
                dev,
                "nodad",
            ])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        if opts.bgp_nic {
            if ip(&["-n", n, "link", "add", "bgp-nic", "type", "dummy"]).is_err() {
                ip(&["-n", n, "link", "add", "bgp-nic", "type", "ifb"])
                    .context("this kernel has neither dummy nor ifb devices for bgp-nic")?;
            }
            ip(&["-n", n, "link", "set", "bgp-nic", "up"])?;
        }
        let peer_conf = peer_config(opts);
        let peer = FrrRouter::launch(p, &dir.join("peer"), &peer_conf, &[])?;
        let zebra_args: &[&str] = if opts.vrf_netns { &["-n"] } else { &[] };
        let node_conf = if opts.configure_node {
            node_config(opts)
        } else {
            String::new()
        };
        let node = FrrRouter::launch(n, &dir.join("node"), &node_conf, zebra_args)?;
        let mut pair = FrrPair {
            node,
            peer,
            node_if,
            peer_if,
            extra_ns: Vec::new(),
            node_ns,
            peer_ns,
        };
        if opts.configure_node {
            pair.peer
                .wait_established(NODE_ADDR, ESTABLISHED_TIMEOUT)
                .map_err(|e| e.context(pair.node.logs()))?;
        }
        Ok(pair)
    }

    /// The node's namespace name.
    pub fn node_netns(&self) -> &str {
        &self.node_ns.0
    }

    /// The peer's namespace name.
    pub fn peer_netns(&self) -> &str {
        &self.peer_ns.0
    }

    /// Creates network namespace `name`, deleted when the pair is dropped
    /// (after the daemons). With [`FrrPairOptions::vrf_netns`] it is the node
    /// FRR's `vrf NAME`. Namespace names are global: derive `name` from
    /// something unique to the test, e.g. [`FrrPair::node_netns`].
    pub fn add_netns(&mut self, name: &str) -> Result<()> {
        self.extra_ns.push(Netns::add(name)?);
        Ok(())
    }

    /// Runs `ip ARGS` in the node namespace (`ip -n NODE ARGS`).
    pub fn node_ip(&self, args: &[&str]) -> Result<String> {
        let mut all = vec!["-n", self.node_netns()];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// Waits until the peer has learned `prefix`; returns how long it took.
    pub fn wait_peer_has(&mut self, prefix: &str, timeout: Duration) -> Result<Duration> {
        self.peer.wait_for_prefix(prefix, true, timeout)
    }

    /// Waits until the peer no longer has `prefix`; returns how long it took.
    pub fn wait_peer_lacks(&mut self, prefix: &str, timeout: Duration) -> Result<Duration> {
        self.peer.wait_for_prefix(prefix, false, timeout)
    }
}

/// The peer's config: expects the node from NODE_ADDR in `node_as`.
fn peer_config(opts: &FrrPairOptions) -> String {
    format!(
        "router bgp {peer_as}
 bgp router-id {PEER_ADDR}
 no bgp ebgp-requires-policy
 neighbor {NODE_ADDR} remote-as {node_as}
 neighbor {NODE_ADDR} timers 1 3
 neighbor {NODE_ADDR} timers connect 1
 address-family ipv6 unicast
  neighbor {NODE_ADDR} activate
 exit-address-family
",
        peer_as = opts.peer_as,
        node_as = opts.node_as
    )
}

/// The node's config: announce every connected address (bgp-nic's).
fn node_config(opts: &FrrPairOptions) -> String {
    format!(
        "router bgp {node_as}
 bgp router-id {NODE_ADDR}
 no bgp ebgp-requires-policy
 neighbor {PEER_ADDR} remote-as {peer_as}
 neighbor {PEER_ADDR} timers 1 3
 neighbor {PEER_ADDR} timers connect 1
 address-family ipv4 unicast
  redistribute connected
 exit-address-family
 address-family ipv6 unicast
  redistribute connected
  neighbor {PEER_ADDR} activate
 exit-address-family
",
        peer_as = opts.peer_as,
        node_as = opts.node_as
    )
}

/// A complete vty answer split into its output and status byte: the output
/// (which never contains NUL) is followed by `\0\0\0<status>`.
fn split_vty_answer(answer: &[u8]) -> Option<(&[u8], u8)> {
    let end = answer.windows(3).position(|w| w == [0, 0, 0])?;
    Some((&answer[..end], *answer.get(end + 3)?))
}

/// The prefixes under `"routes"` of a `show bgp ... json` answer.
fn route_keys(v: &Value) -> BTreeSet<String> {
    v["routes"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// A named network namespace, deleted on drop (which also destroys the veth
/// ends and devices in it).
pub(crate) struct Netns(pub(crate) String);

impl Netns {
    pub(crate) fn add(name: &str) -> Result<Netns> {
        // a namespace of that name is a leftover of a crashed run of the same
        // directory: the names are ours
        if Path::new("/run/netns").join(name).exists() {
            let _ = ip(&["netns", "del", name]);
        }
        ip(&["netns", "add", name])?;
        Ok(Netns(name.to_string()))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.0]);
    }
}

pub(crate) fn ip(args: &[&str]) -> Result<String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("running ip (apt package iproute2)")?;
    checked(out, &format!("ip {}", args.join(" ")))
}

pub(crate) fn checked(out: std::process::Output, what: &str) -> Result<String> {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        bail!(
            "{what} failed ({}): {}{}",
            out.status,
            stdout.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(stdout)
}

/// uid and gid of user frr, from /etc/passwd.
fn frr_ids() -> Result<(u32, u32)> {
    let passwd = fs::read_to_string("/etc/passwd")?;
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() > 3 && f[0] == "frr")
                .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
        })
        .context("no user frr: install the apt package frr")
}

fn chown_tree(dir: &Path, (uid, gid): (u32, u32)) -> Result<()> {
    std::os::unix::fs::chown(dir, Some(uid), Some(gid))
        .with_context(|| format!("chown frr {}", dir.display()))?;
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            chown_tree(&path, (uid, gid))?;
        } else {
            std::os::unix::fs::chown(&path, Some(uid), Some(gid))?;
        }
    }
    Ok(())
}

/// FRR drops to user frr before it opens its logs and sockets: every
/// ancestor of `dir` must let others traverse it.
fn check_reachable_by_others(dir: &Path) -> Result<()> {
    for a in dir.ancestors().skip(1) {
        let mode = fs::metadata(a)?.permissions().mode();
        if mode & 0o001 == 0 {
            bail!(
                "FRR runs as user frr and cannot reach {}: {} has mode {:o} (needs o+x)",
                dir.display(),
                a.display(),
                mode & 0o7777
            );
        }
    }
    Ok(())
}

/// Six hex digits (FNV-1a of `s`): short enough for interface names.
pub(crate) fn short_hash(s: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{:06x}", h & 0xff_ffff)
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests;
