//! A real ovs-vswitchd in a node's network namespace, on the node's
//! Open_vSwitch database (netdev datapath: the CI kernel has no openvswitch
//! module, so `br-ex` becomes the daemon's tap in the namespace).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::ovsdb::OvsdbServer;

/// ovs-vswitchd in a namespace; stopped on drop.
pub struct Vswitchd {
    child: Child,
    run_dir: PathBuf,
}

impl Drop for Vswitchd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Vswitchd {
    /// Starts ovs-vswitchd in `netns` on `ovs`, with `run_dir` standing for
    /// the node's /var/run/openvswitch, and waits (60 s at most) until it
    /// made `br-ex`: its management socket and its tap in the namespace.
    ///
    /// As on a node, ovs-vsctl finds the database in the run dir (the
    /// agent's calls, like upstream's, pass no --db) and ovs-appctl and
    /// ovs-ofctl find the daemon there through its pidfile and control
    /// socket.
    pub fn start(netns: &str, ovs: &OvsdbServer, run_dir: &Path) -> Result<Vswitchd> {
        ensure_tun_device()?;
        let db_sock = run_dir.join("db.sock");
        if !db_sock.exists() {
            std::os::unix::fs::symlink(ovs.dir().join("db.sock"), &db_sock).with_context(|| {
                format!("linking {} to the Open_vSwitch socket", db_sock.display())
            })?;
        }
        let child = Command::new("ip")
            .args(["netns", "exec", netns, "env"])
            .arg(format!("OVS_RUNDIR={}", run_dir.display()))
            .arg("ovs-vswitchd")
            .arg(ovs.unix_remote())
            .arg(format!("--pidfile={}/ovs-vswitchd.pid", run_dir.display()))
            .arg(format!("--log-file={}/ovs-vswitchd.log", run_dir.display()))
            .args(["--no-chdir", "-vconsole:off"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting ovs-vswitchd (apt package openvswitch-switch)")?;
        let v = Vswitchd {
            child,
            run_dir: run_dir.to_path_buf(),
        };
        let t = Instant::now();
        while !(run_dir.join("br-ex.mgmt").exists() && br_ex_in(netns)) {
            if t.elapsed() > Duration::from_secs(60) {
                bail!(
                    "ovs-vswitchd made no br-ex within 60 s: {}",
                    std::fs::read_to_string(run_dir.join("ovs-vswitchd.log")).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(v)
    }

    /// The daemon's pid (`ip netns exec` execs it, so the child's pid is
    /// its own): the wedge tests stop and resume it.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The run directory the daemon was started with (`OVS_RUNDIR` for
    /// ovs-ofctl and ovs-appctl).
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }
}

fn br_ex_in(netns: &str) -> bool {
    Command::new("ip")
        .args(["-n", netns, "link", "show", "br-ex"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The netdev datapath makes its ports as taps: the VM tier's fresh /dev
/// has no /dev/net/tun node, but its kernel loads `tun` on first open.
fn ensure_tun_device() -> Result<()> {
    std::fs::create_dir_all("/dev/net")?;
    make_char_device(Path::new("/dev/net/tun"), 10, 200)
        .context("creating /dev/net/tun for ovs-vswitchd's netdev datapath")
}

/// `mknod PATH c MAJOR MINOR`, and done if `PATH` exists already: the VM
/// tier runs two test binaries at a time, and both benches may find the
/// node missing and make it at once (the loser's `mknod` used to fail
/// with "File exists" and take its test down).
fn make_char_device(path: &Path, major: u32, minor: u32) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .with_context(|| format!("{} has a NUL byte", path.display()))?;
    // SAFETY: mknod reads the NUL-terminated path, which lives until the
    // call returns; no other memory is passed.
    let rc = unsafe {
        libc::mknod(
            c_path.as_ptr(),
            libc::S_IFCHR | 0o666,
            libc::makedev(major, minor),
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.kind() == std::io::ErrorKind::AlreadyExists {
        return Ok(());
    }
    bail!("mknod {} c {major} {minor}: {err}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_device_made_twice_is_no_error() {
        let dir = tempfile::tempdir().unwrap();
        let node = dir.path().join("tun");
        // as two benches starting at once do: both make it
        make_char_device(&node, 10, 200).unwrap();
        make_char_device(&node, 10, 200).unwrap();
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let meta = std::fs::metadata(&node).unwrap();
        assert!(meta.file_type().is_char_device());
        assert_eq!(meta.rdev(), libc::makedev(10, 200));
        // any other failure is one, naming the path
        let err = make_char_device(&dir.path().join("no/such/dir"), 10, 200).unwrap_err();
        assert!(format!("{err:#}").contains("no/such/dir"), "{err:#}");
    }
}
