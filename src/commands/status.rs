//! `ovn-bgp-agent status`: what this node exposes now and why, and the
//! agent's health (docs/operations.md, "status").
//!
//! Where it comes from: `--daemon ADDR` asks the daemon listening there
//! (`GET /status`) and fails when it does not answer; by default the
//! daemon on `[DEFAULT] metrics_listen` is asked when that is set, and
//! when nothing listens there (no daemon running) the status is computed
//! here from the live databases and node, as `plan` does (`--direct`
//! forces that); `--ovn FILE` computes it from files. Every path gives the
//! same model (`obgp_controller::ops::status::Status`), printed by one renderer.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use obgp_config::Config;
use obgp_controller::live_status;
use obgp_controller::ops::status::{render, Status};

use crate::cli::{Format, NodeArgs, OvnInput};

/// How long a daemon has to accept the connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long it has to answer: its own wait for the run loop and some.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(15);

/// Where the status comes from.
pub enum StatusFrom<'a> {
    /// The daemon at this address, or fail.
    Daemon(&'a str),
    /// The daemon on metrics_listen if one listens, else computed here.
    Default,
    /// Computed here from the live databases and node.
    Direct,
    /// Computed from files.
    Offline {
        ovn: &'a Path,
        node_state: Option<&'a Path>,
    },
}

impl<'a> StatusFrom<'a> {
    pub fn of(daemon: Option<&'a str>, direct: bool, input: &'a OvnInput) -> StatusFrom<'a> {
        match (daemon, input.ovn.as_deref()) {
            (Some(addr), _) => StatusFrom::Daemon(addr),
            (None, Some(ovn)) => StatusFrom::Offline {
                ovn,
                node_state: input.node_state.as_deref(),
            },
            (None, None) if direct => StatusFrom::Direct,
            (None, None) => StatusFrom::Default,
        }
    }
}

pub fn run(
    config: &Config,
    node: &NodeArgs,
    format: Format,
    source: StatusFrom<'_>,
) -> anyhow::Result<ExitCode> {
    let live = !matches!(source, StatusFrom::Offline { .. });
    let mut status = match source {
        StatusFrom::Daemon(addr) => from_daemon(addr)?,
        StatusFrom::Offline { ovn, node_state } => {
            let file = super::ovn_file::OvnFile::read(ovn, node_state, config)?;
            let facts = super::ovn_file::facts(config, &file);
            if format == Format::Text {
                // What HELD and NOT HELD are measured against.
                println!("{}", file.node.line());
            }
            live_status::offline(config, &file.snapshot, &facts, &file.actual)?
        }
        StatusFrom::Direct => direct(config, node)?,
        StatusFrom::Default => match config.default.metrics_listen {
            Some(addr) => match from_daemon(&addr.to_string()) {
                Ok(s) => s,
                Err(e) if no_daemon(&e) => {
                    tracing::info!(
                        "no daemon listens on metrics_listen = {addr}: computing the status here"
                    );
                    direct(config, node)?
                }
                Err(e) => return Err(e),
            },
            None => direct(config, node)?,
        },
    };
    // Live, each exposure gains what FRR holds of it, read here (never by
    // the daemon's loop).
    if live {
        let kernel = super::run_options(config, node).kernel;
        obgp_controller::fabric::annotate_live(config, &kernel, &mut status);
    }
    match format {
        Format::Text => print!("{}", render::text(&status)),
        Format::Json => super::print_json(&status)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn direct(config: &Config, node: &NodeArgs) -> anyhow::Result<Status> {
    let opts = super::run_options(config, node);
    Ok(super::runtime()?.block_on(live_status::direct(config, &opts))?)
}

/// Nothing listens there: the connection was refused (a daemon that
/// listens but fails to answer is an error, not a reason to compute
/// around it).
fn no_daemon(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
    })
}

/// `GET /status` from the daemon at `addr` (host:port).
pub fn from_daemon(addr: &str) -> anyhow::Result<Status> {
    let target = addr
        .to_socket_addrs()
        .with_context(|| format!("daemon address {addr:?}"))?
        .next()
        .with_context(|| format!("daemon address {addr:?} resolves to nothing"))?;
    let mut stream = TcpStream::connect_timeout(&target, CONNECT_TIMEOUT)
        .with_context(|| format!("connecting to the daemon at {addr}"))?;
    stream.set_read_timeout(Some(ANSWER_TIMEOUT))?;
    stream.set_write_timeout(Some(CONNECT_TIMEOUT))?;
    write!(
        stream,
        "GET /status HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .with_context(|| format!("reading the daemon's answer from {addr}"))?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .with_context(|| format!("{addr} answered without an HTTP head: {answer:?}"))?;
    let code = head.get(9..12).unwrap_or_default();
    if code != "200" {
        bail!(
            "the daemon at {addr} answered {}: {}",
            head.lines().next().unwrap_or_default(),
            body.trim_end()
        );
    }
    serde_json::from_str(body).with_context(|| format!("the status JSON from {addr}"))
}
