//! Self-test of the VM tier: one boot proves the whole chain (kernel cache,
//! initramfs, host root over 9p, a host-built test binary running inside,
//! exit status and output passed back) and that the guest kernel has the
//! exact devices the agent creates: `bgp-vrf` (vrf table 10), a dummy
//! `bgp-nic` enslaved to it, and a vlan `br-ex.100`.

use std::process::Command;

use anyhow::{bail, ensure, Context, Result};
use obgp_testbed::vm::{self, Vm, VmOptions};
use serde_json::Value;

/// A network namespace removed on drop, so nothing stays behind in the
/// guest or, if run by hand, on the host.
struct Netns(String);

impl Netns {
    fn new(name: &str) -> Result<Netns> {
        ip(&["netns", "add", name])?;
        Ok(Netns(name.to_string()))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn ip(args: &[&str]) -> Result<String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("running ip (apt package iproute2)")?;
    if !out.status.success() {
        bail!(
            "ip {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn link(ns: &str, name: &str) -> Result<Value> {
    let text = ip(&["-n", ns, "-d", "-j", "link", "show", "dev", name])?;
    let links: Value = serde_json::from_str(&text).with_context(|| format!("ip -j: {text}"))?;
    links
        .get(0)
        .cloned()
        .with_context(|| format!("no link {name} in {ns}"))
}

#[test]
#[ignore = "vm tier: needs the vrf, dummy and 8021q kernel modules (make test-vm)"]
fn agent_devices_can_be_created_on_the_vm_kernel() -> Result<()> {
    let ns = Netns::new(&format!("obgpvm-{}", std::process::id()))?;
    let n = ns.0.as_str();
    ip(&[
        "-n", n, "link", "add", "bgp-vrf", "type", "vrf", "table", "10",
    ])
    .context("this kernel has no vrf devices: run the test through `obgp-vm test`")?;
    ip(&["-n", n, "link", "add", "bgp-nic", "type", "dummy"])?;
    ip(&["-n", n, "link", "set", "bgp-nic", "master", "bgp-vrf"])?;
    ip(&["-n", n, "link", "add", "br-ex", "type", "bridge"])?;
    ip(&[
        "-n",
        n,
        "link",
        "add",
        "link",
        "br-ex",
        "name",
        "br-ex.100",
        "type",
        "vlan",
        "id",
        "100",
    ])?;
    for dev in ["bgp-vrf", "bgp-nic", "br-ex", "br-ex.100"] {
        ip(&["-n", n, "link", "set", dev, "up"])?;
    }
    ip(&["-n", n, "addr", "add", "172.24.4.10/32", "dev", "bgp-nic"])?;

    let vrf = link(n, "bgp-vrf")?;
    assert_eq!(vrf["linkinfo"]["info_kind"], "vrf", "{vrf}");
    assert_eq!(vrf["linkinfo"]["info_data"]["table"], 10, "{vrf}");
    let nic = link(n, "bgp-nic")?;
    assert_eq!(nic["linkinfo"]["info_kind"], "dummy", "{nic}");
    assert_eq!(nic["master"], "bgp-vrf", "{nic}");
    let vlan = link(n, "br-ex.100")?;
    assert_eq!(vlan["linkinfo"]["info_kind"], "vlan", "{vlan}");
    assert_eq!(vlan["linkinfo"]["info_data"]["id"], 100, "{vlan}");
    assert_eq!(vlan["link"], "br-ex", "{vlan}");
    // the address on the enslaved dummy lands in the VRF's table
    let routes = ip(&["-n", n, "route", "show", "table", "10"])?;
    assert!(routes.contains("172.24.4.10"), "table 10: {routes}");
    Ok(())
}

/// Processes this test started, killed and reaped on drop.
struct Children(Vec<std::process::Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Polls until a unix socket accepts connections, up to `timeout`.
fn wait_for_socket(path: &std::path::Path, timeout: std::time::Duration) -> Result<()> {
    let deadline = std::time::Instant::now() + timeout;
    while std::os::unix::net::UnixStream::connect(path).is_err() {
        if std::time::Instant::now() >= deadline {
            bail!(
                "{} did not accept connections within {timeout:?}",
                path.display()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Ok(())
}

fn run_ok(cmd: &mut Command) -> Result<String> {
    let out = cmd.output().with_context(|| format!("running {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
#[ignore = "vm tier: needs the openvswitch kernel module (make test-vm)"]
fn ovs_kernel_datapath_takes_cookie_999_flows_in_the_vm() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let d = dir.path();
    let ns = Netns::new(&format!("obgpvm-ovs-{}", std::process::id()))?;
    let db = format!("unix:{}/db.sock", d.display());
    let envs = [
        ("OVS_RUNDIR", d.to_path_buf()),
        ("OVS_LOGDIR", d.to_path_buf()),
        ("OVS_DBDIR", d.to_path_buf()),
        ("OVS_SYSCONFDIR", d.join("etc")),
    ];
    let ovs = |program: &str| {
        let mut c = Command::new(program);
        c.envs(envs.iter().map(|(k, v)| (*k, v.as_os_str())));
        c
    };
    std::fs::create_dir_all(d.join("etc"))?;
    run_ok(
        ovs("ovsdb-tool")
            .args(["create"])
            .arg(d.join("conf.db"))
            .arg("/usr/share/openvswitch/vswitch.ovsschema"),
    )
    .context("ovsdb-tool (apt package openvswitch-switch)")?;
    let mut children = Children(Vec::new());
    children.0.push(
        ovs("ovsdb-server")
            .arg(d.join("conf.db"))
            .arg(format!("--remote=p{db}"))
            .arg(format!("--unixctl={}/ovsdb-server.ctl", d.display()))
            .arg(format!("--log-file={}/ovsdb-server.log", d.display()))
            .args(["--no-chdir", "-vconsole:off"])
            .spawn()?,
    );
    let vsctl = |args: &[&str]| {
        run_ok(
            ovs("ovs-vsctl")
                .arg(format!("--db={db}"))
                .arg("--timeout=120")
                .args(args),
        )
    };
    wait_for_socket(&d.join("db.sock"), std::time::Duration::from_secs(60))?;
    vsctl(&["--no-wait", "init"])?;
    children.0.push(
        ovs("ip")
            .args(["netns", "exec", &ns.0, "ovs-vswitchd", &db])
            .arg(format!("--unixctl={}/ovs-vswitchd.ctl", d.display()))
            .arg(format!("--log-file={}/ovs-vswitchd.log", d.display()))
            .args(["--no-chdir", "-vconsole:off"])
            .spawn()?,
    );
    // the default datapath type is "system": the kernel module's datapath
    vsctl(&["add-br", "br-ex"])?;
    let br = link(&ns.0, "br-ex").context(
        "no kernel datapath bridge (no openvswitch module?): run through `obgp-vm test`",
    )?;
    assert_eq!(br["linkinfo"]["info_kind"], "openvswitch", "{br}");
    run_ok(ovs("ovs-ofctl").args([
        "add-flow",
        "br-ex",
        "cookie=999,priority=900,ip,in_port=LOCAL,actions=NORMAL",
    ]))?;
    let flows = run_ok(ovs("ovs-ofctl").args(["dump-flows", "br-ex", "cookie=999/-1"]))?;
    assert!(flows.contains("cookie=0x3e7"), "{flows}");
    let dps = run_ok(Command::new("ip").args(["netns", "exec", &ns.0, "ovs-dpctl", "show"]))?;
    assert!(dps.contains("system@ovs-system"), "{dps}");
    Ok(())
}

/// Boots the VM once and runs this very test binary's VM-tier test in it.
/// The exit status of the guest command is 7 on purpose: it must come back.
#[test]
fn vm_runs_host_built_tests_and_returns_exit_status() -> Result<()> {
    ensure!(
        !vm::in_vm(),
        "this test boots a VM; it must not run inside one"
    );
    let vm = Vm::build_default().context("building the VM tier (needs apt access once)")?;
    let me = std::env::current_exe()?;
    let me = me.display().to_string();
    // a read-write share the host and the guest both write into
    let share = tempfile::tempdir()?;
    let shared = share.path().display().to_string();
    let host_file = share.path().join("from-host");
    std::fs::write(&host_file, "host")?;
    let host_file = host_file.display().to_string();
    // a path on the host's root outside any share: the guest may write it
    // (to its overlay), the host must never see it. A checkout below /tmp
    // is shared with the guest (and /tmp itself is the guest's own), so
    // the probe goes to /var/cache then.
    let manifest_dir = env!("CARGO_MANIFEST_DIR");
    let probe_dir = if ["/tmp/", "/var/tmp/", "/run/"]
        .iter()
        .any(|v| manifest_dir.starts_with(v))
    {
        "/var/cache"
    } else {
        manifest_dir
    };
    let overlay_probe = format!("{probe_dir}/obgp-vm-overlay-probe-{}", std::process::id());
    let script = format!(
        "'{me}' --ignored --exact --test-threads=1 --color never agent_devices_can_be_created_on_the_vm_kernel; \
         echo \"inner status $?\"; echo \"OBGP_VM=$OBGP_VM kernel $(uname -r)\"; \
         echo from-guest > '{shared}/from-guest'; cat '{host_file}'; echo; \
         echo overlay > '{overlay_probe}' && echo \"overlay write ok\"; exit 7"
    );
    let run = vm.run_with(
        &["sh", "-c", &script],
        &VmOptions {
            timeout: std::time::Duration::from_secs(600),
            shares: vec![share.path().to_path_buf()],
            ..VmOptions::default()
        },
    )?;
    let out = run.command_output();
    assert_eq!(
        run.code, 7,
        "guest exit status not passed back:\n{}",
        run.console
    );
    assert!(
        out.contains("test agent_devices_can_be_created_on_the_vm_kernel ... ok"),
        "VM-tier test did not pass in the guest:\n{out}"
    );
    assert!(out.contains("inner status 0"), "{out}");
    assert!(
        out.contains(&format!("OBGP_VM=1 kernel {}", vm.kernel_version())),
        "{out}"
    );
    // the share is read-write both ways; the host root only through the
    // guest's overlay, which is discarded
    let from_guest = std::fs::read_to_string(share.path().join("from-guest"))
        .context("the guest's write to the shared directory did not arrive")?;
    assert_eq!(from_guest, "from-guest\n");
    assert!(
        out.contains("host\n"),
        "guest did not see the host's file: {out}"
    );
    assert!(out.contains("overlay write ok"), "{out}");
    assert!(
        !std::path::Path::new(&overlay_probe).exists(),
        "the guest wrote through to the host's root: {overlay_probe}"
    );
    eprintln!(
        "VM tier: boot + test + poweroff {:.1} s wall, guest ready at {:?} s uptime",
        run.wall.as_secs_f64(),
        run.guest_ready
    );
    Ok(())
}
