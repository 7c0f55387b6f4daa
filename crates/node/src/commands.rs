//! The commands the node runs, `ovs-ofctl`, `ovs-vsctl` and `vtysh`, with arguments built
//! from parsed values (never a shell) and a deadline each
//! ([`crate::deadline`]); the parsers of their output; and the
//! [`DriftProbe`] that re-runs them off the reconcile loop.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use obgp_netmodel::DevName;
use obgp_plan::actual::{FrrEvpnVrf, FrrState, OfFlow, OvsBridge};
use obgp_plan::op::Op;

use crate::config::KernelConfig;
use crate::deadline::{self, CommandError, Finished};
use crate::error::IoError;
use crate::ovs_name::ovs_name;

impl From<CommandError> for IoError {
    fn from(e: CommandError) -> IoError {
        match e {
            CommandError::Spawn { cmd, source } => IoError::io(cmd, source),
            CommandError::TimedOut { cmd, after } => IoError::TimedOut { cmd, after },
            CommandError::Failed { cmd, stderr, .. } => IoError::Command {
                cmd,
                detail: stderr,
            },
        }
    }
}

fn ofctl_command(config: &KernelConfig) -> Command {
    let mut c = Command::new(&config.ovs_ofctl);
    if let Some(dir) = &config.ovs_rundir {
        c.env("OVS_RUNDIR", dir);
    }
    c
}

/// `ovs-vsctl` reaches the database the way `ovs-ofctl` reaches the
/// bridges: through `OVS_RUNDIR` (`db.sock` there), as upstream runs it
/// (no `--db`).
fn vsctl_command(config: &KernelConfig) -> Command {
    let mut c = Command::new(&config.ovs_vsctl);
    if let Some(dir) = &config.ovs_rundir {
        c.env("OVS_RUNDIR", dir);
    }
    c
}

fn vtysh_command(config: &KernelConfig) -> Command {
    let mut c = Command::new(&config.vtysh);
    if let Some(dir) = &config.vty_socket {
        c.arg("--vty_socket").arg(dir);
    }
    c
}

/// `ovs-ofctl args` within `ovs_ofctl_timeout`.
fn ofctl(config: &KernelConfig, args: &[&str]) -> Result<Finished, CommandError> {
    let mut cmd = ofctl_command(config);
    cmd.args(args);
    let what = format!("ovs-ofctl {}", args.join(" "));
    deadline::run(cmd, &what, config.ovs_ofctl_timeout)
}

/// `ovs-vsctl args` within `ovs_ofctl_timeout` (the one OVS deadline).
fn vsctl(config: &KernelConfig, args: &[&str]) -> Result<Finished, CommandError> {
    let mut cmd = vsctl_command(config);
    cmd.args(args);
    let what = format!("ovs-vsctl {}", args.join(" "));
    deadline::run(cmd, &what, config.ovs_ofctl_timeout)
}

/// `vtysh args` within `vtysh_timeout`.
fn vtysh(config: &KernelConfig, args: &[&str]) -> Result<Finished, CommandError> {
    let mut cmd = vtysh_command(config);
    cmd.args(args);
    let what = format!("vtysh {}", args.join(" "));
    deadline::run(cmd, &what, config.vtysh_timeout)
}

/// Runs `ovs-ofctl` with `args`; its stderr is the error when it fails.
pub(crate) fn run_ofctl(config: &KernelConfig, args: &[&str]) -> Result<(), IoError> {
    ofctl(config, args).map(drop).map_err(IoError::from)
}

/// `vtysh -f file`: applies a configuration file.
pub(crate) fn apply_frr_file(config: &KernelConfig, file: &Path) -> Result<(), IoError> {
    let file = file
        .to_str()
        .ok_or_else(|| IoError::Invalid(file.display().to_string()))?;
    vtysh(config, &["-f", file])
        .map(drop)
        .map_err(IoError::from)
}

/// The `ovs-vsctl` arguments of a port op: `--may-exist add-port`, with
/// the tag and type set in the same transaction (so that a port that is
/// already there gets them too), or `--if-exists del-port`.
pub(crate) fn ovs_port_args(op: &Op) -> Option<Result<Vec<String>, IoError>> {
    Some(match op {
        Op::AddOvsPort(p) => (|| {
            let (bridge, name) = (ovs_name(&p.bridge)?, ovs_name(&p.name)?);
            let mut args: Vec<String> = ["--may-exist", "add-port", bridge, name]
                .map(String::from)
                .into();
            if let Some(tag) = p.tag {
                // 802.1Q: 0..=4095 (OVS refuses the rest anyway).
                if tag > 4095 {
                    return Err(IoError::Invalid(format!("{op}: tag {tag}")));
                }
                args.extend(["--", "set", "Port", name].map(String::from));
                args.push(format!("tag={tag}"));
            }
            if p.internal {
                args.extend(["--", "set", "Interface", name, "type=internal"].map(String::from));
            }
            Ok(args)
        })(),
        Op::DelOvsPort { bridge, name } => (|| {
            let (bridge, name) = (ovs_name(bridge)?, ovs_name(name)?);
            Ok(["--if-exists", "del-port", bridge, name]
                .map(String::from)
                .into())
        })(),
        _ => return None,
    })
}

/// Makes a command op ([`Op::runs_a_command`]): `ovs-ofctl add-flow` or
/// `--strict del-flows`, `ovs-vsctl add-port` or `del-port`, or `vtysh -f`
/// of a file written for it. `None` for an op that is not one.
pub(crate) fn run_command_op(config: &KernelConfig, op: &Op) -> Option<Result<(), IoError>> {
    if let Some(args) = ovs_port_args(op) {
        return Some(args.and_then(|args| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            vsctl(config, &args).map(drop).map_err(IoError::from)
        }));
    }
    Some(match op {
        Op::AddFdb(entry) => crate::fdb::add_static(config, entry),
        Op::AddFlow { bridge, flow } => check_flow(flow).and_then(|()| {
            run_ofctl(
                config,
                &["add-flow", ovs_name(bridge)?, &flow.add_flow_arg()],
            )
        }),
        Op::DelFlow { bridge, flow } => check_flow(flow).and_then(|()| {
            run_ofctl(
                config,
                &[
                    "--strict",
                    "del-flows",
                    ovs_name(bridge)?,
                    &flow.del_flow_arg(),
                ],
            )
        }),
        // A removal (del-vrf) is a text like any other for `vtysh -f`.
        Op::ApplyFrr { config: text } | Op::RemoveFrr { config: text } => {
            let file = config
                .frr_config_dir
                .join(format!("obgp-frr-{}.conf", std::process::id()));
            std::fs::write(&file, text)
                .map_err(|e| IoError::io(file.display().to_string(), e))
                .and_then(|()| {
                    let applied = apply_frr_file(config, &file);
                    let _ = std::fs::remove_file(&file);
                    applied
                })
        }
        _ => return None,
    })
}

/// The lines of an FRR configuration text that FRR's running configuration
/// must hold for it to count as applied: the `router bgp`, `import vrf`
/// and `redistribute` lines (the rest FRR may render differently), each
/// with the blocks it sits in ([`frr_paths`]): a `redistribute kernel`
/// counts only under the VRF instance's address family that asks for it,
/// so a change of redistribution (the tenant method, `announce_with`) is
/// applied.
pub fn frr_check_lines(config: &str) -> Vec<String> {
    frr_paths(config)
        .filter(|path| {
            let leaf = path.rsplit(PATH_SEP).next().unwrap_or_default();
            ["router bgp", "import vrf", "redistribute "]
                .iter()
                .any(|kw| leaf.starts_with(kw))
        })
        .collect()
}

const PATH_SEP: &str = " > ";

/// Each line of an FRR configuration text, prefixed with the blocks it sits
/// in: `router bgp 64999 vrf bgp-vrf > address-family ipv4 unicast >
/// redistribute kernel`. A line at column 0 is a top-level statement (a
/// `router` line opens a block); inside a block, `address-family` opens a
/// sub-block that `exit-address-family` closes. This is how both FRR's
/// `show running-config` and the agent's texts are laid out.
fn frr_paths(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut router: Option<&str> = None;
    let mut family: Option<&str> = None;
    text.lines().filter_map(move |raw| {
        let line = raw.trim();
        if line.is_empty() || line == "!" {
            return None;
        }
        if !raw.starts_with([' ', '\t']) {
            family = None;
            router = line.starts_with("router ").then_some(line);
            return (line != "exit").then(|| line.to_string());
        }
        if line == "exit-address-family" {
            family = None;
            return None;
        }
        let path = match (router, family) {
            (Some(r), Some(f)) => format!("{r}{PATH_SEP}{f}{PATH_SEP}{line}"),
            (Some(r), None) => format!("{r}{PATH_SEP}{line}"),
            (None, _) => line.to_string(),
        };
        if router.is_some() && line.starts_with("address-family ") {
            family = Some(line);
        }
        Some(path)
    })
}

/// The router-id FRR reports (`show ip bgp summary json`,
/// `ipv4Unicast.routerId`), validated as IPv4 (it ends up in a vtysh
/// script). `None` when FRR does not answer in time or reports none.
pub fn read_frr_router_id(config: &KernelConfig) -> Option<String> {
    frr_router_id(config).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot read FRR's router-id");
        None
    })
}

/// Like [`read_frr_router_id`], telling a failed read (an error: unknown)
/// from FRR reporting none (`Ok(None)`).
pub(crate) fn frr_router_id(config: &KernelConfig) -> Result<Option<String>, IoError> {
    let out = vtysh(config, &["-c", "show ip bgp summary json"])?;
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&out.stdout) else {
        return Ok(None);
    };
    Ok(v.get("ipv4Unicast")
        .and_then(|u| u.get("routerId"))
        .and_then(|id| id.as_str())
        .and_then(|id| id.parse::<std::net::Ipv4Addr>().ok())
        .map(|ip| ip.to_string()))
}

/// Every token of a flow must be a plain OpenFlow word: arguments go to
/// `ovs-ofctl` unquoted, so nothing else may reach it.
pub(crate) fn check_flow(f: &OfFlow) -> Result<(), IoError> {
    let ok = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_=:./-,>".contains(&b))
    };
    for t in f.matches.iter().chain(std::iter::once(&f.actions)) {
        if !ok(t) {
            return Err(IoError::Invalid(t.clone()));
        }
    }
    Ok(())
}

/// `name -> ofport` from `ovs-ofctl show` (` 5(patch-provnet-...): addr:...`).
fn parse_ofctl_show(text: &str) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim_start();
        let Some((num, rest)) = line.split_once('(') else {
            continue;
        };
        let Ok(n) = num.parse::<u32>() else { continue };
        if let Some((name, _)) = rest.split_once("):") {
            out.insert(name.to_string(), n);
        }
    }
    out
}

/// Flows from `ovs-ofctl --no-names [--no-stats] dump-flows` output.
fn parse_dump_flows(text: &str) -> Vec<OfFlow> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let Some((head, actions)) = line.split_once(" actions=") else {
            continue;
        };
        let mut flow = OfFlow {
            cookie: 0,
            table: 0,
            priority: 32768,
            matches: BTreeSet::new(),
            actions: OfFlow::normalise_actions(actions.trim()),
        };
        for field in head.split(", ") {
            for tok in field.split(',') {
                let tok = tok.trim();
                match tok.split_once('=') {
                    Some(("cookie", v)) => {
                        flow.cookie =
                            u64::from_str_radix(v.trim_start_matches("0x"), 16).unwrap_or(0)
                    }
                    Some(("table", v)) => flow.table = v.parse().unwrap_or(0),
                    Some(("priority", v)) => flow.priority = v.parse().unwrap_or(32768),
                    Some((
                        "duration" | "n_packets" | "n_bytes" | "idle_age" | "hard_age"
                        | "idle_timeout" | "hard_timeout" | "importance",
                        _,
                    )) => {}
                    _ if tok.is_empty() || tok == "reset_counts" || tok == "send_flow_rem" => {}
                    _ => {
                        flow.matches.insert(tok.to_string());
                    }
                }
            }
        }
        out.push(flow);
    }
    out
}

/// Ports and agent-cookie flows of an OVS bridge; `None` when OVS says the
/// bridge is not there (or `ovs-ofctl` is not installed): nothing is planned
/// on it. A run that timed out or failed otherwise is an error: the bridge's
/// flows are unknown, which the caller must not take for "none".
pub(crate) fn read_ovs_bridge(
    config: &KernelConfig,
    br: &DevName,
) -> Result<Option<OvsBridge>, IoError> {
    let show = match ofctl(config, &["show", ovs_name(br)?]) {
        Ok(show) => show,
        Err(CommandError::Failed { .. }) => return Ok(None),
        Err(CommandError::Spawn { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e.into()),
    };
    let mut bridge = OvsBridge {
        ports: parse_ofctl_show(&String::from_utf8_lossy(&show.stdout)),
        ..OvsBridge::default()
    };
    if config.read_static_fdb {
        bridge.fdb = crate::fdb::read_static(config, br, &bridge.ports)?;
    }
    for cookie in [
        obgp_netmodel::cookie::MAC_TWEAK,
        obgp_netmodel::cookie::EVPN,
    ] {
        let filter = format!("cookie={cookie:#x}/-1");
        let out = ofctl(
            config,
            &[
                "--no-names",
                "--no-stats",
                "dump-flows",
                br.as_str(),
                &filter,
            ],
        )?;
        bridge
            .flows
            .extend(parse_dump_flows(&String::from_utf8_lossy(&out.stdout)));
    }
    Ok(Some(bridge))
}

/// FRR's running configuration as the planner sees it: whether it holds
/// every line of `lines` (our text applied), and the agent-shaped EVPN VRFs
/// it has ([`FrrState::learn_evpn`]; only the EVPN modes plan on them). A
/// read that failed or timed out leaves it unknown ([`FrrState::unknown`]):
/// no FRR op is planned from it. The caller decides whether to read at all
/// ([`Scope::reads_frr`](crate::Scope::reads_frr)).
pub(crate) fn read_frr_state(config: &KernelConfig, lines: &[String]) -> FrrState {
    match vtysh(config, &["-c", "show running-config"]) {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout);
            let running: BTreeSet<String> = frr_paths(&text).collect();
            let mut state = FrrState {
                has_our_config: lines.iter().all(|l| running.contains(l)),
                ..FrrState::default()
            };
            state.learn_evpn(&text);
            state
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read FRR's running configuration");
            FrrState {
                unknown: true,
                ..FrrState::default()
            }
        }
    }
}

/// Re-reads, off the reconcile loop, what periodic reconciles would
/// otherwise re-read synchronously by running `ovs-ofctl` and `vtysh` (tens
/// of milliseconds an event would wait for): the OVS ports and agent flows
/// of the bridges, whether FRR still holds our configuration and, in an
/// EVPN mode, FRR's EVPN VRFs.
#[derive(Clone, Debug)]
pub struct DriftProbe {
    pub(crate) config: KernelConfig,
    /// Each bridge with what the last observe saw of it.
    pub(crate) bridges: Vec<(DevName, Option<OvsBridge>)>,
    pub(crate) frr_lines: Vec<String>,
    /// In an EVPN scope, FRR's EVPN VRFs as last read (`None`: not read
    /// yet, or not an EVPN scope: nothing to compare).
    pub(crate) frr_evpn: Option<EvpnSeen>,
}

/// What a read of FRR says of the agent-shaped EVPN VRFs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EvpnSeen {
    vrfs: BTreeMap<u32, FrrEvpnVrf>,
    unplaced_interfaces: BTreeSet<String>,
}

impl EvpnSeen {
    pub(crate) fn of(s: &FrrState) -> EvpnSeen {
        EvpnSeen {
            vrfs: s.evpn_vrfs.clone(),
            unplaced_interfaces: s.evpn_unplaced_interfaces.clone(),
        }
    }
}

impl DriftProbe {
    /// What drifted, if anything: a bridge whose ports or agent flows differ
    /// from the last observe's, FRR lacking a line of our configuration, or
    /// FRR's EVPN VRFs differing from the last read's (one added or removed
    /// by hand). Blocking (runs the commands); a read that fails is not
    /// drift (see below).
    pub fn drift(&self) -> Option<String> {
        for (br, seen) in &self.bridges {
            match read_ovs_bridge(&self.config, br) {
                Ok(now) if &now == seen => {}
                Ok(_) => return Some(format!("OVS ports or agent flows of {br} changed")),
                // Unreadable is not drift: the next probe that reads it
                // compares again, and a reconcile now could not read it either.
                Err(e) => {
                    tracing::warn!(bridge = %br, error = %e, "drift probe: cannot read the OVS bridge")
                }
            }
        }
        if !self.frr_lines.is_empty() || self.frr_evpn.is_some() {
            // An unreadable FRR is not drift: the reconcile it would trigger
            // could not read it either (and would wait for the deadline).
            let frr = read_frr_state(&self.config, &self.frr_lines);
            if frr.unknown {
                return None;
            }
            if !frr.has_our_config {
                return Some("FRR's running configuration lacks our lines".into());
            }
            if let Some(seen) = &self.frr_evpn {
                if *seen != EvpnSeen::of(&frr) {
                    return Some("FRR's EVPN VRFs changed".into());
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests;
