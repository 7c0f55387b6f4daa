//! The real `ovn-bgp-agent` binary as the benches run it (`Bench`,
//! `EvpnBench`): its command line in the node namespace, one-shot runs,
//! `plan`, and the daemon with its log.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::count_ops;

/// The real `ovn-bgp-agent` binary as a bench runs it: in the node's
/// namespace, with the bench's config files, rt_tables, FRR vty sockets and
/// OVS run directory; its daemon (if started) logs to `agent.log` in `dir`.
/// Dropping it stops the daemon.
pub struct Agent {
    netns: String,
    binary: PathBuf,
    ovs_run: PathBuf,
    /// The agent's config files, in order (later files win).
    pub config_files: Vec<PathBuf>,
    dir: PathBuf,
    vty_dir: PathBuf,
    bgp_nic_kind: String,
    daemon: Option<Child>,
}

impl Agent {
    /// The agent of a node namespace `netns` whose FRR listens in `vty_dir`
    /// and OVS runs in `ovs_run`; `bgp-nic` is a dummy where the kernel has
    /// them, else an ifb (the documented stand-in).
    pub fn new(
        netns: &str,
        binary: PathBuf,
        ovs_run: PathBuf,
        config_files: Vec<PathBuf>,
        dir: PathBuf,
        vty_dir: PathBuf,
    ) -> Agent {
        let bgp_nic_kind = if crate::kernel_has_vrf_and_dummy() {
            "dummy"
        } else {
            "ifb"
        };
        Agent {
            netns: netns.to_string(),
            binary,
            ovs_run,
            config_files,
            dir,
            vty_dir,
            bgp_nic_kind: bgp_nic_kind.to_string(),
            daemon: None,
        }
    }

    /// The command line that runs the agent in the node namespace:
    /// `ip netns exec NODE env OVS_RUNDIR=.. ovn-bgp-agent --config-file ..`.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.netns, "env"])
            .arg(format!("OVS_RUNDIR={}", self.ovs_run.display()))
            .arg(&self.binary);
        for f in &self.config_files {
            c.arg("--config-file").arg(f);
        }
        c.arg("--rt-tables")
            .arg(self.dir.join("rt_tables"))
            .arg("--vty-socket")
            .arg(&self.vty_dir)
            .args(["--bgp-nic-kind", &self.bgp_nic_kind])
            .args(args);
        c
    }

    /// The agent command line as a shell would show it (for the output).
    pub fn command_line(&self, args: &[&str]) -> String {
        let c = self.command(args);
        std::iter::once(c.get_program().to_string_lossy().into_owned())
            .chain(c.get_args().map(|a| a.to_string_lossy().into_owned()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs the agent with `args` to completion.
    pub fn run(&self, args: &[&str]) -> Result<Output> {
        self.command(args)
            .stdin(Stdio::null())
            .output()
            .context("running ovn-bgp-agent")
    }

    /// Runs the agent with `args`, failing unless it exits 0; returns stdout.
    pub fn run_ok(&self, args: &[&str]) -> Result<String> {
        let out = self.run(args)?;
        if !out.status.success() {
            bail!(
                "ovn-bgp-agent {args:?} failed ({}):\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `plan` live against the databases and the node: the plan's text.
    pub fn plan(&self) -> Result<String> {
        self.run_ok(&["plan"])
    }

    /// `plan --format json`: the number of ops (0 = converged).
    pub fn plan_op_count(&self) -> Result<usize> {
        let text = self.run_ok(&["plan", "--format", "json"])?;
        let v: Value = serde_json::from_str(&text).with_context(|| format!("plan JSON: {text}"))?;
        Ok(count_ops(&v))
    }

    /// Starts the agent daemon (no subcommand), logging to `agent.log` in the
    /// bench directory.
    pub fn start_daemon(&mut self) -> Result<()> {
        self.stop_daemon()?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("agent.log"))?;
        let child = self
            .command(&["--use-stderr"])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting the agent daemon")?;
        self.daemon = Some(child);
        Ok(())
    }

    /// SIGTERMs the daemon and waits for it (SIGKILL after 30 s); returns
    /// how long it took to exit.
    pub fn stop_daemon(&mut self) -> Result<Duration> {
        let start = Instant::now();
        if let Some(mut c) = self.daemon.take() {
            // `ip netns exec` execs the agent, so this pid is the agent's.
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(c.id().to_string())
                .status();
            while c.try_wait()?.is_none() {
                if start.elapsed() > Duration::from_secs(30) {
                    let _ = c.kill();
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(start.elapsed())
    }

    /// SIGKILLs the daemon (a crash).
    pub fn kill_daemon(&mut self) {
        if let Some(mut c) = self.daemon.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The daemon's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("agent.log")).unwrap_or_default()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.stop_daemon();
    }
}
