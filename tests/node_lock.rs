//! One agent per node, with real processes: two `ovn-bgp-agent` daemons on
//! one node lock file. The second waits (logging the holder, `/readyz`
//! not ready, `/healthz` ok) and writes nothing; `reconcile --once` fails
//! naming the holder; `plan` does not need the lock; `kill -9` of the
//! holder hands the lock to the waiting daemon.
//!
//! The daemons' databases are sockets that do not exist: the lock is
//! taken before the agent connects anywhere, so a daemon that got past it
//! says so by waiting for the databases, and one that did not has done
//! nothing else.

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("node-lock-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A port on loopback that was free a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running daemon and its log lines as they come.
struct Daemon {
    child: Child,
    lines: Receiver<String>,
    log: Vec<String>,
    port: u16,
}

impl Daemon {
    fn start(dir: &Path, name: &str, lock: &Path) -> Daemon {
        let port = free_port();
        let config = dir.join(format!("{name}.conf"));
        std::fs::write(
            &config,
            format!(
                "[DEFAULT]\ndriver = nb_ovn_bgp_driver\nuse_stderr = true\n\
                 metrics_listen = 127.0.0.1:{port}\n\
                 ovsdb_connection = unix:{0}/no-ovs.sock\n\
                 [ovn]\novn_nb_connection = unix:{0}/no-nb.sock\n",
                dir.display()
            ),
        )
        .unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_ovn-bgp-agent"))
            .arg("--config-file")
            .arg(&config)
            .arg("--node-lock")
            .arg(lock)
            .env_clear()
            .env("HOME", dir)
            .env("POD_NAME", name)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                let _ = tx.send(line);
            }
        });
        Daemon {
            child,
            lines,
            log: Vec::new(),
            port,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The first log line containing `what`, within 20 s.
    fn wait_for(&mut self, what: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(l) = self.log.iter().find(|l| l.contains(what)) {
                return l.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => self.log.push(l),
                Err(_) => panic!("no {what:?} within 20 s; log:\n{}", self.log.join("\n")),
            }
        }
    }

    /// Every line logged so far.
    fn drain(&mut self) -> String {
        self.log.extend(self.lines.try_iter());
        self.log.join("\n")
    }

    /// `GET path` on the daemon's listener: the status code and the body.
    fn get(&self, path: &str) -> (u16, String) {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let code = text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (code, text)
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.pid().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig} {}", self.pid());
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const HOLDING: &str = "holding the node lock";
const WAITING: &str = "another agent holds the node lock";
/// What a daemon logs once it is past the lock: it tries its databases.
const PAST_THE_LOCK: &str = "OVSDB connection lost, reconnecting";

#[test]
fn a_second_agent_waits_for_the_first_writes_nothing_and_takes_over_when_it_dies() {
    let dir = scratch("two");
    let lock = dir.join("run").join("node.lock");
    let mut first = Daemon::start(&dir, "agent-a", &lock);
    first.wait_for(HOLDING);
    let held = std::fs::read_to_string(&lock).unwrap();
    let a_names = format!("pid={} ", first.pid());
    assert!(
        held.starts_with(&a_names) && held.contains("pod=agent-a"),
        "{held}"
    );

    let mut second = Daemon::start(&dir, "agent-b", &lock);
    let waiting = second.wait_for(WAITING);
    assert!(waiting.contains(&a_names), "the holder is named: {waiting}");
    // Not ready, and why; alive.
    let (code, body) = second.get("/readyz");
    assert_eq!(code, 503, "{body}");
    assert!(
        body.contains("node lock") && body.contains(&a_names),
        "{body}"
    );
    assert_eq!(second.get("/healthz").0, 200);

    // A one-shot write is refused at once, naming the holder; a read-only
    // command does not need the lock.
    let once = Command::new(env!("CARGO_BIN_EXE_ovn-bgp-agent"))
        .arg("--config-file")
        .arg(dir.join("agent-b.conf"))
        .arg("--node-lock")
        .arg(&lock)
        .args(["reconcile", "--once"])
        .env_clear()
        .env("HOME", &dir)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&once.stderr);
    assert_eq!(once.status.code(), Some(1), "{said}");
    assert!(said.contains(WAITING) && said.contains(&a_names), "{said}");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let plan = Command::new(env!("CARGO_BIN_EXE_ovn-bgp-agent"))
        .arg("--config-file")
        .arg(manifest.join("fixtures/demo/bgp-agent.conf"))
        .arg("--node-lock")
        .arg(&lock)
        .arg("plan")
        .arg("--ovn")
        .arg(manifest.join("fixtures/conformance/scenarios/nb-provider-vm.json"))
        .env_clear()
        .env("HOME", &dir)
        .output()
        .unwrap();
    assert_eq!(
        plan.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&plan.stderr)
    );

    // The first goes on; the second got no further than the lock.
    first.wait_for(PAST_THE_LOCK);
    std::thread::sleep(Duration::from_secs(1));
    let b_log = second.drain();
    assert!(
        !b_log.contains(HOLDING) && !b_log.contains(PAST_THE_LOCK),
        "{b_log}"
    );
    assert!(std::fs::read_to_string(&lock)
        .unwrap()
        .starts_with(&a_names));

    // kill -9: the kernel drops the lock with the process.
    first.signal("-KILL");
    let killed = Instant::now();
    let took = second.wait_for(HOLDING);
    assert!(
        killed.elapsed() < Duration::from_secs(5),
        "{:?}",
        killed.elapsed()
    );
    let b_names = format!("pid={} ", second.pid());
    assert!(took.contains(&b_names), "{took}");
    let now = std::fs::read_to_string(&lock).unwrap();
    assert!(
        now.starts_with(&b_names) && now.contains("pod=agent-b"),
        "{now}"
    );
    second.wait_for(PAST_THE_LOCK);
    let (_, body) = second.get("/readyz");
    assert!(!body.contains("node lock"), "{body}");

    // A daemon waiting for the lock stops at SIGTERM like any other.
    let mut third = Daemon::start(&dir, "agent-c", &lock);
    third.wait_for(WAITING);
    third.signal("-TERM");
    let status = third.child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", third.drain());
    assert!(!third.drain().contains(HOLDING));

    second.signal("-TERM");
    assert_eq!(second.child.wait().unwrap().code(), Some(0));
}
