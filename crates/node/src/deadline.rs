//! External commands (`vtysh`, `ovs-ofctl`) run with a deadline, so that a
//! wedged child can never stall the reconcile loop.
//!
//! The child runs in a process group of its own; past the deadline the
//! whole group is killed (a `vtysh` that forked a pager or a helper goes
//! with it), and the run counts as [`CommandError::TimedOut`]. The caller
//! decides what a failure means: for a read it is "unknown", never
//! "absent".

use std::cell::RefCell;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// How long a killed child's group gets to be reaped before the run is
/// reported anyway (the reaper thread keeps waiting in the background).
const REAP_GRACE: Duration = Duration::from_millis(500);

/// The process group of the command a thread is running, so that another
/// thread can kill it at once (the agent stopping must not wait for a
/// wedged child's deadline). A thread opts in with [`track_on_this_thread`].
#[derive(Clone, Debug, Default)]
pub struct InFlight(Arc<Slot>);

#[derive(Debug, Default)]
struct Slot {
    pgid: AtomicI32,
    /// Set by [`InFlight::kill`]: a command started afterwards is killed
    /// as soon as it is spawned.
    stopped: AtomicBool,
}

impl InFlight {
    /// Kills the process group of the command in flight, if any, and of
    /// every command started from now on; each run ends as a failure.
    pub fn kill(&self) {
        // SeqCst on both sides: either this swap sees the group `run`
        // stored, or `run` sees `stopped` after storing it.
        self.0.stopped.store(true, Ordering::SeqCst);
        let pgid = self.0.pgid.swap(0, Ordering::SeqCst);
        if pgid > 0 {
            // SAFETY: kill(2) on a process group this module started.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
    }

    fn started(&self, pgid: libc::pid_t) {
        self.0.pgid.store(pgid, Ordering::SeqCst);
        if self.0.stopped.load(Ordering::SeqCst) {
            self.kill();
        }
    }
}

thread_local! {
    static TRACKED: RefCell<Option<InFlight>> = const { RefCell::new(None) };
}

/// Records, in `slot`, the process group of every command this thread runs
/// from now on, while it runs.
pub fn track_on_this_thread(slot: InFlight) {
    TRACKED.with(|t| *t.borrow_mut() = Some(slot));
}

/// Clears the tracked slot when the run ends, however it ends.
struct Tracking(Option<InFlight>);

impl Drop for Tracking {
    fn drop(&mut self) {
        if let Some(slot) = &self.0 {
            slot.0.pgid.store(0, Ordering::SeqCst);
        }
    }
}

/// What a command printed and how it ended.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Why a command gave no usable result.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("{cmd}: cannot start: {source}")]
    Spawn {
        cmd: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{cmd}: no answer within {}s: killed", after.as_secs_f64())]
    TimedOut { cmd: String, after: Duration },
    #[error("{cmd}: {status}: {stderr}")]
    Failed {
        cmd: String,
        status: ExitStatus,
        stderr: String,
    },
}

/// How often a spawn refused with ETXTBSY is tried again, and how long
/// apart.
const TEXT_BUSY_TRIES: u32 = 5;
const TEXT_BUSY_PAUSE: Duration = Duration::from_millis(20);

/// Spawns `cmd`, trying again a few times while the kernel answers
/// ETXTBSY. That answer means some process still holds the program open
/// for writing: a package upgrade copying ovs-ofctl in place, or another
/// thread's fork inheriting the descriptor of a script just written,
/// until that child execs. Both last milliseconds.
fn spawn_past_text_busy(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    let mut tries = 1;
    loop {
        match cmd.spawn() {
            Err(e)
                if e.kind() == std::io::ErrorKind::ExecutableFileBusy
                    && tries < TEXT_BUSY_TRIES =>
            {
                tries += 1;
                std::thread::sleep(TEXT_BUSY_PAUSE);
            }
            other => return other,
        }
    }
}

/// Runs `cmd` to completion within `deadline`, stdin closed. `what` names
/// it in errors (for example `ovs-ofctl dump-flows br-ex`). A non-zero
/// exit is [`CommandError::Failed`] with the child's stderr.
pub fn run(mut cmd: Command, what: &str, deadline: Duration) -> Result<Finished, CommandError> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let child = spawn_past_text_busy(&mut cmd).map_err(|source| CommandError::Spawn {
        cmd: what.to_string(),
        source,
    })?;
    let pgid = child.id() as libc::pid_t;
    let tracking = Tracking(TRACKED.with(|t| t.borrow().clone()));
    if let Some(slot) = &tracking.0 {
        slot.started(pgid);
    }
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("obgp-command".into())
        .spawn(move || {
            let _ = tx.send(collect(child));
        })
        .map_err(|source| CommandError::Spawn {
            cmd: what.to_string(),
            source,
        })?;
    let finished = match rx.recv_timeout(deadline) {
        Ok(r) => r,
        Err(_) => {
            // SAFETY: kill(2) with a negative pid signals the process group
            // the child leads (process_group(0) above); no memory involved.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            let _ = rx.recv_timeout(REAP_GRACE);
            return Err(CommandError::TimedOut {
                cmd: what.to_string(),
                after: deadline,
            });
        }
    };
    let finished = finished.map_err(|source| CommandError::Spawn {
        cmd: what.to_string(),
        source,
    })?;
    if finished.status.success() {
        Ok(finished)
    } else {
        Err(CommandError::Failed {
            cmd: what.to_string(),
            status: finished.status,
            stderr: String::from_utf8_lossy(&finished.stderr).trim().to_string(),
        })
    }
}

/// Reads both pipes to their end (stderr on a thread of its own, so a child
/// filling one pipe never blocks on the other), then reaps the child.
fn collect(mut child: Child) -> std::io::Result<Finished> {
    let mut stderr_pipe = child.stderr.take();
    let stderr = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(p) = stderr_pipe.as_mut() {
            let _ = p.read_to_end(&mut buf);
        }
        buf
    });
    let mut stdout = Vec::new();
    if let Some(mut p) = child.stdout.take() {
        let _ = p.read_to_end(&mut stdout);
    }
    let stderr = stderr.join().unwrap_or_default();
    let status = child.wait()?;
    Ok(Finished {
        status,
        stdout,
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("/bin/sh");
        c.arg("-c").arg(script);
        c
    }

    #[test]
    fn a_finished_command_gives_its_output() {
        let out = run(sh("echo out; echo err >&2"), "sh", Duration::from_secs(5)).unwrap();
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }

    #[test]
    fn a_failing_command_names_itself_and_its_stderr() {
        let e = run(
            sh("echo no such bridge >&2; exit 3"),
            "ovs-ofctl show br-x",
            Duration::from_secs(5),
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, CommandError::Failed { .. }), "{msg}");
        assert!(
            msg.contains("ovs-ofctl show br-x") && msg.contains("no such bridge"),
            "{msg}"
        );
    }

    #[test]
    fn a_wedged_command_and_its_children_are_killed_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("grandchild.pid");
        // The child forks a grandchild that holds the pipes open, then both hang.
        let script = format!("sleep 60 & echo $! > {}; sleep 60", pidfile.display());
        let start = Instant::now();
        let e = run(sh(&script), "vtysh -f", Duration::from_millis(300)).unwrap_err();
        let took = start.elapsed();
        assert!(matches!(e, CommandError::TimedOut { .. }), "{e}");
        assert!(e.to_string().contains("vtysh -f"), "{e}");
        assert!(took < Duration::from_secs(5), "returned after {took:?}");
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The grandchild was in the child's group: it is gone (or a zombie
        // about to be reaped by init), never still sleeping.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
            let alive = state
                .as_deref()
                .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
                .unwrap_or(false);
            if !alive {
                break;
            }
            assert!(Instant::now() < deadline, "grandchild {pid} still running");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let e = run(
            Command::new("/nonexistent/vtysh"),
            "vtysh",
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(matches!(e, CommandError::Spawn { .. }), "{e}");
    }

    /// A script still open for writing, as another thread's fork leaves it
    /// until its child execs.
    fn script_held_open(dir: &std::path::Path) -> (std::path::PathBuf, std::fs::File) {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("ofctl");
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(b"#!/bin/sh\necho answered\n").unwrap();
        file.set_permissions(std::fs::Permissions::from_mode(0o755))
            .unwrap();
        (path, file)
    }

    #[test]
    fn a_program_busy_for_a_moment_is_started_once_its_writer_closes() {
        let dir = tempfile::tempdir().unwrap();
        let (path, file) = script_held_open(dir.path());
        let writer = std::thread::spawn(move || {
            std::thread::sleep(TEXT_BUSY_PAUSE);
            drop(file);
        });
        let done = run(
            Command::new(&path),
            "ovs-ofctl show",
            Duration::from_secs(5),
        )
        .unwrap();
        writer.join().unwrap();
        assert_eq!(String::from_utf8_lossy(&done.stdout), "answered\n");
    }

    #[test]
    fn a_program_busy_for_good_is_a_spawn_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _file) = script_held_open(dir.path());
        let e = run(
            Command::new(&path),
            "ovs-ofctl show",
            Duration::from_secs(5),
        )
        .unwrap_err();
        match &e {
            CommandError::Spawn { source, .. } => {
                assert_eq!(source.kind(), std::io::ErrorKind::ExecutableFileBusy, "{e}")
            }
            other => panic!("{other}"),
        }
        assert!(e.to_string().contains("ovs-ofctl show"), "{e}");
    }
}
