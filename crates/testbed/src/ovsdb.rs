//! Real ovsdb-server instances for system tests: standalone (unix + TCP,
//! optionally SSL with a throw-away CA) and three-member RAFT clusters.
//!
//! Each instance lives in its own temporary directory and runs as a child
//! process (no `--detach`), so it is killed when its handle is dropped, even
//! when a test panics. TCP ports are free ports on 127.0.0.1 picked at start.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;
use tempfile::TempDir;

/// The path of a schema in `fixtures/schemas` (e.g. `"ovn-nb.ovsschema"`).
pub fn schema_path(file: &str) -> PathBuf {
    crate::fixtures_dir().join("schemas").join(file)
}

fn require(binary: &str) -> Result<()> {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(binary).is_file()))
        .unwrap_or(false);
    if !found {
        bail!("{binary} not found in PATH: install Debian's openvswitch-switch (and openssl) to run the OVSDB system tests");
    }
    Ok(())
}

/// Runs `cmd` to completion and returns its stdout; a non-zero exit is an
/// error carrying the command, its status and its output.
pub fn run(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// How long an ovsdb-server may take to listen: it loads the whole
/// database first, and a 50k-port NB on a loaded 2-core machine took over
/// 15 s (the soak's NB restarts). A server that exits fails at once.
const LISTEN_WITHIN: Duration = Duration::from_secs(90);

fn wait_for_socket(path: &Path, child: &mut Child, log: &Path) -> Result<()> {
    let deadline = Instant::now() + LISTEN_WITHIN;
    loop {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            bail!(
                "ovsdb-server exited ({status}) before listening on {}:\n{log}",
                path.display()
            );
        }
        if Instant::now() > deadline {
            bail!(
                "ovsdb-server did not listen on {} within {} s",
                path.display(),
                LISTEN_WITHIN.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill(child: &mut Option<Child>) {
    if let Some(mut c) = child.take() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// Key material of a throw-away CA, as the `[ovn]` options expect it.
#[derive(Clone, Debug)]
pub struct Pki {
    pub ca_cert: PathBuf,
    pub server_key: PathBuf,
    pub server_cert: PathBuf,
    pub client_key: PathBuf,
    pub client_cert: PathBuf,
}

impl Pki {
    /// Creates a CA and a server and client certificate signed by it, in
    /// `dir`, with openssl (EC P-256: fast to generate). The certificates
    /// carry the extensions `ovs-pki` gives them, so no host name or
    /// address of the server matches them.
    pub fn create(dir: &Path) -> Result<Pki> {
        require("openssl")?;
        let p = |n: &str| dir.join(n);
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        run(Command::new("openssl")
            .args(["req", "-x509"])
            .args(ec)
            .args(["-days", "3650", "-subj", "/CN=obgp-test-ca", "-keyout"])
            .arg(p("ca-key.pem"))
            .arg("-out")
            .arg(p("ca-cert.pem")))?;
        for who in ["server", "client"] {
            // The extensions ovs-pki (OVS 3.1) writes: v3, not a CA, and a
            // "DNS" subjectAltName that is really "<name> id:<uuid>": never
            // a name or address a client could match.
            std::fs::write(
                p(&format!("{who}.ext")),
                format!("basicConstraints=CA:FALSE\nsubjectAltName=DNS:obgp-test-{who} id:00000000-0000-4000-8000-000000000001\n"),
            )?;
            run(Command::new("openssl")
                .arg("req")
                .args(ec)
                .args(["-subj", &format!("/CN=obgp-test-{who}"), "-keyout"])
                .arg(p(&format!("{who}-key.pem")))
                .arg("-out")
                .arg(p(&format!("{who}-req.pem"))))?;
            run(Command::new("openssl")
                .args(["x509", "-req", "-days", "3650", "-CAcreateserial", "-in"])
                .arg(p(&format!("{who}-req.pem")))
                .arg("-extfile")
                .arg(p(&format!("{who}.ext")))
                .arg("-CA")
                .arg(p("ca-cert.pem"))
                .arg("-CAkey")
                .arg(p("ca-key.pem"))
                .arg("-out")
                .arg(p(&format!("{who}-cert.pem"))))?;
        }
        Ok(Pki {
            ca_cert: p("ca-cert.pem"),
            server_key: p("server-key.pem"),
            server_cert: p("server-cert.pem"),
            client_key: p("client-key.pem"),
            client_cert: p("client-cert.pem"),
        })
    }
}

/// A standalone ovsdb-server serving one database.
pub struct OvsdbServer {
    dir: TempDir,
    db_name: String,
    tcp_port: u16,
    ssl: Option<(Pki, u16)>,
    child: Option<Child>,
}

impl OvsdbServer {
    /// Creates a fresh database from `fixtures/schemas/<schema_file>` and
    /// serves it on a unix socket and a free 127.0.0.1 TCP port.
    pub fn start(schema_file: &str) -> Result<OvsdbServer> {
        OvsdbServer::start_with(schema_file, false)
    }

    /// As [`OvsdbServer::start`], plus an SSL port (`pssl:`) with a CA, a
    /// server and a client certificate made for this instance. The server
    /// requires a client certificate signed by the CA.
    pub fn start_ssl(schema_file: &str) -> Result<OvsdbServer> {
        OvsdbServer::start_with(schema_file, true)
    }

    fn start_with(schema_file: &str, ssl: bool) -> Result<OvsdbServer> {
        require("ovsdb-server")?;
        require("ovsdb-tool")?;
        let dir = tempfile::Builder::new().prefix("obgp-ovsdb-").tempdir()?;
        let schema = schema_path(schema_file);
        let db_name = run(Command::new("ovsdb-tool").arg("schema-name").arg(&schema))?
            .trim()
            .to_string();
        run(Command::new("ovsdb-tool")
            .arg("create")
            .arg(dir.path().join("db"))
            .arg(&schema))?;
        let ssl = if ssl {
            Some((Pki::create(dir.path())?, free_port()?))
        } else {
            None
        };
        let mut server = OvsdbServer {
            tcp_port: free_port()?,
            dir,
            db_name,
            ssl,
            child: None,
        };
        server.restart()?;
        Ok(server)
    }

    /// Name of the database served (e.g. `OVN_Northbound`).
    pub fn db_name(&self) -> &str {
        &self.db_name
    }

    /// The instance's directory (database file, log, sockets).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `unix:PATH` of the server's socket.
    pub fn unix_remote(&self) -> String {
        format!("unix:{}", self.dir.path().join("db.sock").display())
    }

    /// `tcp:127.0.0.1:PORT`.
    pub fn tcp_remote(&self) -> String {
        format!("tcp:127.0.0.1:{}", self.tcp_port)
    }

    /// `ssl:127.0.0.1:PORT`, if started with SSL.
    pub fn ssl_remote(&self) -> Option<String> {
        self.ssl.as_ref().map(|(_, p)| format!("ssl:127.0.0.1:{p}"))
    }

    /// The key material, if started with SSL.
    pub fn pki(&self) -> Option<&Pki> {
        self.ssl.as_ref().map(|(p, _)| p)
    }

    /// The server's process id while it runs (e.g. to SIGSTOP it).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILLs the server (the database file stays).
    pub fn kill(&mut self) {
        kill(&mut self.child);
    }

    /// Starts the server (again) on the same database file and ports.
    pub fn restart(&mut self) -> Result<()> {
        kill(&mut self.child);
        let d = self.dir.path();
        let sock = d.join("db.sock");
        let _ = std::fs::remove_file(&sock);
        let mut cmd = Command::new("ovsdb-server");
        cmd.arg(d.join("db"))
            .arg(format!("--remote=punix:{}", sock.display()))
            .arg(format!("--remote=ptcp:{}:127.0.0.1", self.tcp_port))
            .arg(format!("--unixctl={}", d.join("db.ctl").display()))
            .arg(format!("--log-file={}", d.join("db.log").display()))
            .args(["--no-chdir", "-vconsole:off"]);
        if let Some((pki, port)) = &self.ssl {
            cmd.arg(format!("--remote=pssl:{port}:127.0.0.1"))
                .arg(format!("--private-key={}", pki.server_key.display()))
                .arg(format!("--certificate={}", pki.server_cert.display()))
                .arg(format!("--ca-cert={}", pki.ca_cert.display()));
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting ovsdb-server")?;
        wait_for_socket(&sock, &mut child, &d.join("db.log"))?;
        self.child = Some(child);
        Ok(())
    }

    /// Runs `ops` with `ovsdb-client transact` (an independent client) and
    /// returns its results; fails if any operation failed.
    pub fn transact(&self, ops: &[Value]) -> Result<Vec<Value>> {
        transact_cli(&self.unix_remote(), &self.db_name, ops)
    }

    /// Every row of `table` as `ovsdb-client` reads it (wire notation,
    /// including `_uuid` and `_version`).
    pub fn select_all(&self, table: &str) -> Result<Vec<Value>> {
        let op = serde_json::json!({"op": "select", "table": table, "where": []});
        let r = self.transact(&[op])?;
        Ok(r[0]["rows"].as_array().cloned().unwrap_or_default())
    }
}

impl Drop for OvsdbServer {
    fn drop(&mut self) {
        kill(&mut self.child);
    }
}

/// `ovsdb-client transact REMOTE [DB, ops...]`, failing on any op error.
pub fn transact_cli(remote: &str, db: &str, ops: &[Value]) -> Result<Vec<Value>> {
    require("ovsdb-client")?;
    let mut params = vec![Value::from(db)];
    params.extend(ops.iter().cloned());
    let out = run(Command::new("ovsdb-client")
        .args(["transact", remote])
        .arg(Value::Array(params).to_string()))?;
    let results: Vec<Value> =
        serde_json::from_str(&out).with_context(|| format!("ovsdb-client output {out}"))?;
    if let Some(e) = results.iter().find(|r| r.get("error").is_some()) {
        bail!("transaction failed: {e}");
    }
    Ok(results)
}

/// A three-member RAFT cluster of one database on 127.0.0.1.
pub struct Cluster {
    dir: TempDir,
    db_name: String,
    raft_ports: [u16; 3],
    tcp_ports: [u16; 3],
    members: [Option<Child>; 3],
}

impl Cluster {
    /// Creates the cluster from `fixtures/schemas/<schema_file>` (member 0
    /// creates it, 1 and 2 join) and waits until every member is connected.
    pub fn start(schema_file: &str) -> Result<Cluster> {
        require("ovsdb-server")?;
        require("ovsdb-tool")?;
        require("ovsdb-client")?;
        require("ovs-appctl")?;
        let dir = tempfile::Builder::new().prefix("obgp-raft-").tempdir()?;
        let schema = schema_path(schema_file);
        let db_name = run(Command::new("ovsdb-tool").arg("schema-name").arg(&schema))?
            .trim()
            .to_string();
        let raft_ports = [free_port()?, free_port()?, free_port()?];
        let tcp_ports = [free_port()?, free_port()?, free_port()?];
        let raft = |i: usize| format!("tcp:127.0.0.1:{}", raft_ports[i]);
        run(Command::new("ovsdb-tool")
            .arg("create-cluster")
            .arg(dir.path().join("m0.db"))
            .arg(&schema)
            .arg(raft(0)))?;
        for i in 1..3 {
            run(Command::new("ovsdb-tool")
                .arg("join-cluster")
                .arg(dir.path().join(format!("m{i}.db")))
                .arg(&db_name)
                .arg(raft(i))
                .arg(raft(0)))?;
        }
        let mut c = Cluster {
            dir,
            db_name,
            raft_ports,
            tcp_ports,
            members: [None, None, None],
        };
        for i in 0..3 {
            c.revive(i)?;
        }
        for i in 0..3 {
            c.wait_connected(i)?;
        }
        Ok(c)
    }

    /// Name of the clustered database.
    pub fn db_name(&self) -> &str {
        &self.db_name
    }

    /// The RAFT port of member `i` (for diagnostics).
    pub fn raft_port(&self, i: usize) -> u16 {
        self.raft_ports[i]
    }

    /// `tcp:127.0.0.1:PORT` of member `i`.
    pub fn tcp_remote(&self, i: usize) -> String {
        format!("tcp:127.0.0.1:{}", self.tcp_ports[i])
    }

    /// `unix:PATH` of member `i`.
    pub fn unix_remote(&self, i: usize) -> String {
        format!(
            "unix:{}",
            self.dir.path().join(format!("m{i}.sock")).display()
        )
    }

    /// All members' TCP remotes, comma separated, as clients configure them.
    pub fn remotes(&self) -> String {
        (0..3)
            .map(|i| self.tcp_remote(i))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Starts member `i` (again) on its database file.
    pub fn revive(&mut self, i: usize) -> Result<()> {
        kill(&mut self.members[i]);
        let d = self.dir.path();
        let sock = d.join(format!("m{i}.sock"));
        let _ = std::fs::remove_file(&sock);
        let log = d.join(format!("m{i}.log"));
        let mut child = Command::new("ovsdb-server")
            .arg(d.join(format!("m{i}.db")))
            .arg(format!("--remote=punix:{}", sock.display()))
            .arg(format!("--remote=ptcp:{}:127.0.0.1", self.tcp_ports[i]))
            .arg(format!(
                "--unixctl={}",
                d.join(format!("m{i}.ctl")).display()
            ))
            .arg(format!("--log-file={}", log.display()))
            .args(["--no-chdir", "-vconsole:off"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting ovsdb-server cluster member")?;
        wait_for_socket(&sock, &mut child, &log)?;
        self.members[i] = Some(child);
        Ok(())
    }

    /// The process id of member `i`, while it runs (benchmarks read its
    /// CPU time).
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.members[i].as_ref().map(Child::id)
    }

    /// SIGKILLs member `i` (a crash: the others must elect a new leader).
    pub fn kill(&mut self, i: usize) {
        kill(&mut self.members[i]);
    }

    /// Waits until member `i` has joined the cluster and knows a leader.
    pub fn wait_connected(&self, i: usize) -> Result<()> {
        run(Command::new("timeout").arg("20").arg("ovsdb-client").args([
            "wait",
            &self.unix_remote(i),
            &self.db_name,
            "connected",
        ]))?;
        Ok(())
    }

    /// The member that is the leader now, per `cluster/status`.
    pub fn leader(&self) -> Result<usize> {
        for i in 0..3 {
            if self.members[i].is_none() {
                continue;
            }
            let ctl = self.dir.path().join(format!("m{i}.ctl"));
            let Ok(status) = run(Command::new("ovs-appctl")
                .arg("-t")
                .arg(&ctl)
                .args(["cluster/status", &self.db_name]))
            else {
                continue;
            };
            if status.lines().any(|l| l.trim() == "Role: leader") {
                return Ok(i);
            }
        }
        bail!("no member of {} is leader", self.db_name)
    }

    /// Raises the RAFT election timer to `ms` (from the leader; ovsdb-server
    /// at most doubles it per call): benchmarks loading large transactions
    /// on a busy machine otherwise see elections mid-load.
    pub fn set_election_timer(&self, ms: u64) -> Result<()> {
        let mut current = 1000;
        while current < ms {
            current = (current * 2).min(ms);
            let leader = self.wait_leader(Duration::from_secs(30))?;
            let ctl = self.dir.path().join(format!("m{leader}.ctl"));
            run(Command::new("ovs-appctl").arg("-t").arg(&ctl).args([
                "cluster/change-election-timer",
                &self.db_name,
                &current.to_string(),
            ]))?;
        }
        Ok(())
    }

    /// Waits up to `timeout` for a leader among the running members.
    pub fn wait_leader(&self, timeout: Duration) -> Result<usize> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.leader() {
                Ok(i) => return Ok(i),
                Err(e) if Instant::now() > deadline => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for m in &mut self.members {
            kill(m);
        }
    }
}

/// A real `ovn-northd` compiling an NB [`OvsdbServer`] into an SB one, its
/// log in the NB server's directory; killed on drop.
pub struct Northd {
    child: Option<Child>,
    log: PathBuf,
}

impl Northd {
    pub fn start(nb: &OvsdbServer, sb: &OvsdbServer) -> Result<Northd> {
        require("ovn-northd")?;
        let d = nb.dir();
        let log = d.join("northd.log");
        let child = Command::new("ovn-northd")
            .arg(format!("--ovnnb-db={}", nb.unix_remote()))
            .arg(format!("--ovnsb-db={}", sb.unix_remote()))
            .arg(format!("--unixctl={}", d.join("northd.ctl").display()))
            .arg(format!("--log-file={}", log.display()))
            .args(["--no-chdir", "-vconsole:off"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting ovn-northd")?;
        Ok(Northd {
            child: Some(child),
            log,
        })
    }

    /// What northd logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Northd {
    fn drop(&mut self) {
        kill(&mut self.child);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standalone_server_serves_the_fixture_schema_and_survives_a_restart() -> Result<()> {
        let mut s = OvsdbServer::start("ovn-nb.ovsschema")?;
        assert_eq!(s.db_name(), "OVN_Northbound");
        s.transact(&[
            serde_json::json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "ls0"}}),
        ])?;
        s.kill();
        s.restart()?;
        let rows = s.select_all("Logical_Switch")?;
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0]["name"], "ls0");
        Ok(())
    }
}
