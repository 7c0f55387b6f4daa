//! The full-kernel VM tier: Debian's kernel under QEMU (TCG) with the host's
//! root shared read-only, for what the CI kernel lacks (vrf, dummy, 802.1q,
//! the openvswitch datapath).
//!
//! [`Vm::build`] prepares, once per cache directory, Debian's
//! `linux-image-amd64` kernel with its modules (`apt-get download`,
//! `dpkg -x`, `depmod`) and a busybox initramfs whose init (`tests/vm/init.sh`)
//! mounts the host's `/` over virtio-9p under a tmpfs overlay. [`Vm::run`]
//! boots it, runs one command as root in the host's current directory with
//! the host's environment, and returns the command's exit status and the
//! guest console. Everything the guest writes is discarded, except below a
//! directory shared with [`VmOptions::shares`].
//!
//! Under TCG a boot and every process spawn are slow (docs/testbed.md,
//! "Measured timings"): run many tests in one boot (see the `obgp-vm test`
//! binary), on as many virtual CPUs as the host has cores (multi-threaded
//! TCG, [`VmOptions::cpus`]).
//!
//! Over 700 lines: guest build, boot and the share and overlay rules are one
//! procedure, each step using the previous one's paths; tests in `vm/tests.rs`.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// PID 1 of the initramfs (busybox sh).
const INIT_SCRIPT: &str = include_str!("../../../tests/vm/init.sh");
/// PID 1 after `switch_root` (the host's sh): the command, then power off.
const GUEST_SCRIPT: &str = include_str!("../../../tests/vm/guest.sh");

/// Modules the initramfs loads, in this order: those it needs to mount the
/// host's root, then those of the devices the agent creates. Loading them
/// from the initramfs (RAM) rather than later over 9p saves seconds per
/// boot. crc32c_generic is a soft dependency of libcrc32c (openvswitch),
/// which busybox's modprobe does not follow. Anything else the guest needs
/// is auto-loaded from the bind-mounted module tree.
const MODULES: &[&str] = &[
    "virtio_pci",
    "9pnet_virtio",
    "9p",
    "overlay",
    "dummy",
    "vrf",
    "8021q",
    "crc32c_generic",
    "openvswitch",
    "ifb",
    "veth",
    "bridge",
];

/// Busybox applets the initramfs init uses.
const APPLETS: &[&str] = &[
    "sh",
    "mount",
    "mkdir",
    "modprobe",
    "insmod",
    "switch_root",
    "cat",
    "cut",
    "echo",
    "sleep",
];

/// Where the kernel, its modules and the initramfs are cached unless told
/// otherwise: `$OBGP_VM_DIR`, else `target/vm` in the workspace.
pub fn default_dir() -> PathBuf {
    match std::env::var_os("OBGP_VM_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/vm"),
    }
}

/// True inside an obgp-vm guest (its `guest.sh` exports `OBGP_VM=1`).
pub fn in_vm() -> bool {
    std::env::var_os("OBGP_VM").is_some_and(|v| v == "1")
}

/// How a guest is booted.
#[derive(Clone, Debug)]
pub struct VmOptions {
    /// Guest memory in MiB.
    pub mem_mib: u32,
    /// Wall-clock limit for boot, command and power-off; QEMU is killed after it.
    pub timeout: Duration,
    /// Host directories shared read-write at the same path in the guest.
    pub shares: Vec<PathBuf>,
    /// Copy every guest console line to stderr as it arrives.
    pub echo: bool,
    /// QEMU accelerator: `tcg` (the only one that boots on the CI machines,
    /// whose /dev/kvm is PVM) or `kvm` where the host has real VT-x/AMD-V.
    /// `tcg` becomes `tcg,thread=multi` (one host thread per virtual CPU)
    /// with more than one CPU and `tcg,thread=single` with one; any other
    /// value (`tcg,thread=single`) is passed to `-accel` as it is.
    pub accel: String,
    /// Virtual CPUs (`-smp`).
    pub cpus: u32,
    /// Directory the command runs in inside the guest (default: the host's
    /// current directory, which exists there too).
    pub cwd: Option<PathBuf>,
}

impl Default for VmOptions {
    /// 2 GiB, 15 minutes, no extra shares, echo on, TCG unless
    /// `$OBGP_VM_ACCEL` says otherwise, 2 CPUs unless `$OBGP_VM_CPUS` says
    /// otherwise (the CI machine's two cores: under multi-threaded TCG a
    /// second CPU runs a second test binary at nearly full speed).
    fn default() -> Self {
        VmOptions {
            mem_mib: 2048,
            timeout: Duration::from_secs(900),
            shares: Vec::new(),
            echo: true,
            accel: std::env::var("OBGP_VM_ACCEL").unwrap_or_else(|_| "tcg".to_string()),
            cpus: env_count("OBGP_VM_CPUS").unwrap_or(DEFAULT_CPUS),
            cwd: None,
        }
    }
}

/// The guest's CPUs unless told otherwise (`$OBGP_VM_CPUS`, `--cpus`).
pub const DEFAULT_CPUS: u32 = 2;

/// A positive count from environment variable `name`; `None` when it is
/// unset, empty, zero or not a number (the caller's default then holds).
pub fn env_count(name: &str) -> Option<u32> {
    let v = std::env::var(name).ok()?;
    match v.trim().parse::<u32>() {
        Ok(n) if n > 0 => Some(n),
        _ => {
            if !v.trim().is_empty() {
                eprintln!("obgp-vm: ignoring {name}={v:?}: not a positive number");
            }
            None
        }
    }
}

/// The `-accel` argument for `accel` on `cpus` virtual CPUs: plain `tcg`
/// gets the thread model that fits the CPU count.
fn accel_arg(accel: &str, cpus: u32) -> String {
    match accel {
        "tcg" if cpus > 1 => "tcg,thread=multi".to_string(),
        "tcg" => "tcg,thread=single".to_string(),
        other => other.to_string(),
    }
}

/// What one boot produced.
#[derive(Clone, Debug)]
pub struct VmRun {
    /// The command's exit status inside the guest (128+N for signal N, as sh
    /// reports it).
    pub code: i32,
    /// The whole guest console (kernel messages, init lines, the command's
    /// stdout and stderr interleaved), `\r` removed.
    pub console: String,
    /// Wall time from starting QEMU to its exit.
    pub wall: Duration,
    /// Guest uptime when the command started, as the guest reported it.
    pub guest_ready: Option<f64>,
}

impl VmRun {
    /// True if the command exited with status 0.
    pub fn success(&self) -> bool {
        self.code == 0
    }

    /// The console lines the command printed (between the start and exit
    /// markers of `guest.sh`).
    pub fn command_output(&self) -> String {
        let start = "obgp-vm: command start\n";
        let from = self.console.find(start).map_or(0, |i| i + start.len());
        let rest = &self.console[from..];
        let to = rest
            .find("obgp-vm: command exited with status")
            .unwrap_or(rest.len());
        rest[..to].to_string()
    }
}

/// The guest's fresh, empty volatile directories (tests/vm/init.sh): the
/// host's content below them is not visible in the guest.
const VOLATILE: [&str; 3] = ["/tmp", "/var/tmp", "/run"];

/// The shares a run needs: the asked ones, plus, when the working
/// directory lies below a volatile directory (a checkout under `mktemp -d`,
/// run from one of its crates), that directory's top entry there
/// (`/tmp/tmp.X`): it holds the checkout and its `target/`, which the guest
/// would otherwise not see.
fn shares_for(asked: &[PathBuf], cwd: &Path) -> Vec<PathBuf> {
    let mut shares = asked.to_vec();
    let top = VOLATILE.iter().find_map(|v| {
        let first = cwd.strip_prefix(v).ok()?.components().next()?;
        Some(Path::new(v).join(first))
    });
    if let Some(top) = top {
        if !asked.iter().any(|s| top.starts_with(s)) {
            shares.push(top);
        }
    }
    shares
}

/// A prepared guest: kernel, modules and initramfs in a cache directory.
#[derive(Clone, Debug)]
pub struct Vm {
    dir: PathBuf,
    kernel: PathBuf,
    initrd: PathBuf,
    kernel_version: String,
}

impl Vm {
    /// Prepares the guest in `dir` (created if missing) and returns it. Each
    /// step is skipped when its result is already there, so after the first
    /// build (download and unpack the kernel package, depmod) this takes a
    /// fraction of a second and needs no network. The initramfs is rebuilt
    /// whenever its init script or module list changes.
    pub fn build(dir: &Path) -> Result<Vm> {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let dir = dir
            .canonicalize()
            .with_context(|| format!("resolving {}", dir.display()))?;
        // one build at a time per cache (parallel test binaries share it)
        let _lock = BuildLock::acquire(&dir)?;
        let deb = download_kernel(&dir)?;
        let kroot = unpack_kernel(&dir, &deb)?;
        let kernel_version = kernel_version(&kroot)?;
        let bzimage = kroot.join("boot").join(format!("vmlinuz-{kernel_version}"));
        if !bzimage.is_file() {
            bail!(
                "{} has no kernel image {}",
                deb.display(),
                bzimage.display()
            );
        }
        let kernel = pvh_kernel(&dir, &kroot, &kernel_version, &bzimage).unwrap_or(bzimage);
        let initrd = build_initramfs(&dir, &kroot, &kernel_version)?;
        Ok(Vm {
            dir,
            kernel,
            initrd,
            kernel_version,
        })
    }

    /// [`Vm::build`] in [`default_dir`].
    pub fn build_default() -> Result<Vm> {
        Vm::build(&default_dir())
    }

    /// The guest kernel's release, e.g. `6.1.0-57-amd64`.
    pub fn kernel_version(&self) -> &str {
        &self.kernel_version
    }

    /// Boots the guest with default options and runs `cmd` (program and
    /// arguments, run without a shell). See [`Vm::run_with`].
    pub fn run(&self, cmd: &[&str]) -> Result<VmRun> {
        self.run_with(cmd, &VmOptions::default())
    }

    /// Boots the guest, runs `cmd` as root with the host's environment (plus
    /// `OBGP_VM=1`) in `opts.cwd` or the current directory, and powers off.
    /// `Ok` whenever the guest reported an exit status, whatever it is; an
    /// error if QEMU could not start, timed out, or the guest died before
    /// reporting (the error carries the console's tail).
    pub fn run_with(&self, cmd: &[&str], opts: &VmOptions) -> Result<VmRun> {
        if cmd.is_empty() {
            bail!("obgp-vm: no command to run");
        }
        let run_dir = RunDir::create(&self.dir)?;
        let cwd = match &opts.cwd {
            Some(c) => c.clone(),
            None => std::env::current_dir().context("reading the current directory")?,
        };
        run_dir.write("guest.sh", GUEST_SCRIPT)?;
        run_dir.write("command.sh", &command_script(cmd, &cwd, std::env::vars()))?;
        let mut shares = String::new();
        let mut qemu = Command::new("qemu-system-x86_64");
        let accel = accel_arg(&opts.accel, opts.cpus);
        let cpus = opts.cpus.max(1).to_string();
        qemu.args(["-accel", &accel, "-smp", &cpus, "-cpu", "max"])
            .args(["-m", &opts.mem_mib.to_string()])
            .args(["-nodefaults", "-no-user-config", "-display", "none"])
            .args(["-serial", "stdio", "-no-reboot"])
            .arg("-kernel")
            .arg(&self.kernel)
            .arg("-initrd")
            .arg(&self.initrd)
            .args(["-append", "console=ttyS0 quiet panic=-1"])
            .arg("-virtfs")
            .arg("local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap")
            .arg("-virtfs")
            .arg(virtfs(&run_dir.path, "run")?);
        for (i, share) in shares_for(&opts.shares, &cwd).iter().enumerate() {
            let share = share
                .canonicalize()
                .with_context(|| format!("share {} does not exist", share.display()))?;
            let tag = format!("share{i}");
            qemu.arg("-virtfs").arg(virtfs(&share, &tag)?);
            shares.push_str(&format!("{tag} {}\n", share.display()));
        }
        run_dir.write("shares", &shares)?;
        // qboot skips SeaBIOS' probing, a measurable part of each boot
        if Path::new("/usr/share/qemu/qboot.rom").is_file() {
            qemu.args(["-bios", "/usr/share/qemu/qboot.rom"]);
        }
        qemu.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // QEMU must not outlive a killed caller (a test runner's timeout)
        // SAFETY: prctl is async-signal-safe and touches no memory of ours.
        unsafe {
            use std::os::unix::process::CommandExt;
            qemu.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }

        let started = Instant::now();
        let mut child = qemu
            .spawn()
            .context("starting qemu-system-x86_64 (apt package qemu-system-x86)")?;
        let console = Arc::new(Mutex::new(String::new()));
        let readers = [
            spawn_reader(child.stdout.take(), console.clone(), opts.echo),
            spawn_reader(child.stderr.take(), console.clone(), opts.echo),
        ];
        let deadline = started + opts.timeout;
        let status = loop {
            if let Some(status) = child.try_wait().context("waiting for qemu")? {
                break Some(status);
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        for r in readers {
            let _ = r.join();
        }
        let wall = started.elapsed();
        let console = std::mem::take(&mut *console.lock().unwrap_or_else(|e| e.into_inner()));
        let Some(status) = status else {
            bail!(
                "obgp-vm: guest did not finish within {:?}; console tail:\n{}",
                opts.timeout,
                tail(&console, 40)
            );
        };
        let rc = fs::read_to_string(run_dir.path.join("rc")).ok();
        let Some(code) = rc.and_then(|s| s.trim().parse::<i32>().ok()) else {
            bail!(
                "obgp-vm: guest powered off without reporting an exit status (qemu {status}); console tail:\n{}",
                tail(&console, 40)
            );
        };
        let guest_ready = console.lines().find_map(|l| {
            l.strip_prefix("obgp-vm: guest ready after ")?
                .split('s')
                .next()?
                .parse()
                .ok()
        });
        Ok(VmRun {
            code,
            console,
            wall,
            guest_ready,
        })
    }
}

/// `apt-get download` of the versioned image `linux-image-amd64` depends on,
/// into `dir/deb`, unless a `linux-image-*.deb` is already there.
fn download_kernel(dir: &Path) -> Result<PathBuf> {
    let debs = dir.join("deb");
    fs::create_dir_all(&debs)?;
    if let Some(deb) = find_deb(&debs)? {
        return Ok(deb);
    }
    let package = match image_package() {
        Ok(p) => p,
        Err(_) => {
            apt_update()?;
            image_package()?
        }
    };
    let download = || {
        Command::new("apt-get")
            .args(["download", &package])
            .current_dir(&debs)
            .output()
            .context("running apt-get download")
    };
    let mut out = download()?;
    if !out.status.success() {
        apt_update()?;
        out = download()?;
    }
    if !out.status.success() {
        bail!(
            "apt-get download {package} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    find_deb(&debs)?.with_context(|| format!("apt-get download {package} left no .deb"))
}

fn find_deb(debs: &Path) -> Result<Option<PathBuf>> {
    let mut found: Vec<PathBuf> = fs::read_dir(debs)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("linux-image-") && n.ends_with(".deb"))
        })
        .collect();
    found.sort();
    Ok(found.pop())
}

/// The versioned package behind the `linux-image-amd64` meta package.
fn image_package() -> Result<String> {
    let out = Command::new("apt-cache")
        .args(["depends", "linux-image-amd64"])
        .output()
        .context("running apt-cache (is this a Debian host?)")?;
    let text = String::from_utf8_lossy(&out.stdout);
    parse_image_dependency(&text).context("apt-cache knows no linux-image-amd64 dependency")
}

/// From `apt-cache depends linux-image-amd64`, the `linux-image-<version>` it
/// depends on.
fn parse_image_dependency(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let dep = l.trim().strip_prefix("Depends: ")?;
        let version = dep.strip_prefix("linux-image-")?;
        version
            .starts_with(|c: char| c.is_ascii_digit())
            .then(|| dep.to_string())
    })
}

fn apt_update() -> Result<()> {
    let out = Command::new("apt-get")
        .args(["-o", "DPkg::Lock::Timeout=600", "update"])
        .output()
        .context("running apt-get update")?;
    if !out.status.success() {
        bail!(
            "apt-get update failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// `dpkg -x` the kernel package into `dir/kroot` and run `depmod` there (the
/// package ships no modules.dep). Unpacked into a temporary directory and
/// renamed, so a concurrent or interrupted build never leaves half a tree.
fn unpack_kernel(dir: &Path, deb: &Path) -> Result<PathBuf> {
    let kroot = dir.join("kroot");
    if kroot.join(".done").is_file() {
        return Ok(kroot);
    }
    let tmp = dir.join(format!("kroot.tmp-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    run_checked(Command::new("dpkg").arg("-x").arg(deb).arg(&tmp))?;
    let version = kernel_version(&tmp)?;
    run_checked(Command::new("depmod").arg("-b").arg(&tmp).arg(&version))?;
    fs::write(tmp.join(".done"), "")?;
    let _ = fs::remove_dir_all(&kroot);
    if fs::rename(&tmp, &kroot).is_err() && kroot.join(".done").is_file() {
        // another build finished first: use its tree
        let _ = fs::remove_dir_all(&tmp);
    }
    if !kroot.join(".done").is_file() {
        bail!(
            "unpacking {} into {} failed",
            deb.display(),
            kroot.display()
        );
    }
    Ok(kroot)
}

/// The uncompressed kernel (ELF `vmlinux`) unpacked from the bzImage, if the
/// kernel can boot it through PVH (`CONFIG_PVH=y`, Debian's has). QEMU then
/// jumps straight into the kernel: no real-mode setup and no xz
/// decompression, which under TCG costs seconds of every boot. `None` (boot
/// the bzImage) if anything about it fails.
fn pvh_kernel(dir: &Path, kroot: &Path, kver: &str, bzimage: &Path) -> Option<PathBuf> {
    let vmlinux = dir.join(format!("vmlinux-{kver}"));
    if vmlinux.is_file() {
        return Some(vmlinux);
    }
    let config = fs::read_to_string(kroot.join("boot").join(format!("config-{kver}"))).ok()?;
    if !config.lines().any(|l| l == "CONFIG_PVH=y") {
        return None;
    }
    let image = fs::read(bzimage).ok()?;
    // the bzImage's payload is one xz stream (CONFIG_KERNEL_XZ) after the setup code
    let start = image.windows(6).position(|w| w == b"\xfd7zXZ\x00")?;
    let tmp = dir.join(format!("vmlinux.tmp-{}", std::process::id()));
    let payload = dir.join(format!("vmlinux.xz.tmp-{}", std::process::id()));
    fs::write(&payload, &image[start..]).ok()?;
    let out = fs::File::create(&tmp).ok()?;
    let ok = Command::new("xz")
        .args(["-dc", "--single-stream"])
        .arg(&payload)
        .stdout(out)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let _ = fs::remove_file(&payload);
    let elf = ok && fs::read(&tmp).is_ok_and(|b| b.starts_with(b"\x7fELF"));
    if !elf || fs::rename(&tmp, &vmlinux).is_err() {
        let _ = fs::remove_file(&tmp);
        return None;
    }
    Some(vmlinux)
}

/// The single directory name under `kroot/lib/modules`.
fn kernel_version(kroot: &Path) -> Result<String> {
    let modules = kroot.join("lib/modules");
    let mut versions: Vec<String> = fs::read_dir(&modules)
        .with_context(|| format!("reading {}", modules.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    versions.sort();
    match versions.as_slice() {
        [v] => Ok(v.clone()),
        _ => bail!(
            "expected one kernel in {}, found {versions:?}",
            modules.display()
        ),
    }
}

/// Writes `dir/initrd.img` (uncompressed newc cpio) unless the one there was
/// built from the same inputs.
fn build_initramfs(dir: &Path, kroot: &Path, kver: &str) -> Result<PathBuf> {
    let initrd = dir.join("initrd.img");
    let stamp_path = dir.join("initrd.stamp");
    let moddir = kroot.join("lib/modules").join(kver);
    let host_modules = moddir.display().to_string();
    let conf = format!(
        "KVER='{kver}'\nHOST_MODULES='{host_modules}'\nMODULES='{}'\n",
        MODULES.join(" ")
    );
    let busybox = Path::new("/usr/bin/busybox");
    let busybox_bytes =
        fs::read(busybox).context("reading /usr/bin/busybox (apt package busybox-static)")?;
    // the initramfs has no libraries: a dynamically linked busybox (apt
    // package busybox) would leave the guest without an init
    if elf_has_interpreter(&busybox_bytes) {
        bail!("/usr/bin/busybox is dynamically linked: install the apt package busybox-static");
    }
    let stamp = format!(
        "{conf}{INIT_SCRIPT}{}{}",
        APPLETS.join(","),
        busybox_bytes.len()
    );
    if initrd.is_file() && fs::read_to_string(&stamp_path).ok().as_deref() == Some(&stamp) {
        return Ok(initrd);
    }

    let mut cpio = Cpio::default();
    let kmods = format!("lib/modules/{kver}");
    for d in [
        "bin", "etc", "proc", "sys", "dev", "newroot", "lower", "upper", "lib",
    ] {
        cpio.dir(d);
    }
    cpio.char_device("dev/console", 5, 1);
    cpio.file("bin/busybox", 0o755, &busybox_bytes);
    for applet in APPLETS {
        cpio.symlink(&format!("bin/{applet}"), "busybox");
    }
    cpio.file("init", 0o755, INIT_SCRIPT.as_bytes());
    cpio.file("etc/obgp-vm.conf", 0o644, conf.as_bytes());

    let dep = fs::read_to_string(moddir.join("modules.dep"))
        .with_context(|| format!("reading {}/modules.dep", moddir.display()))?;
    let mut files = module_closure(&dep, MODULES)?;
    files.extend(
        [
            "modules.dep",
            "modules.alias",
            "modules.softdep",
            "modules.builtin",
        ]
        .map(String::from),
    );
    files.sort();
    files.dedup();
    cpio.dir("lib/modules");
    cpio.dir(&kmods);
    for f in files {
        let src = moddir.join(&f);
        if !src.exists() {
            continue;
        }
        let dst = format!("{kmods}/{f}");
        if let Some(parent) = Path::new(&dst).parent() {
            cpio.dir_all(&parent.display().to_string());
        }
        let bytes = fs::read(&src).with_context(|| format!("reading {}", src.display()))?;
        cpio.file(&dst, 0o644, &bytes);
    }
    let tmp = dir.join(format!("initrd.img.tmp-{}", std::process::id()));
    fs::write(&tmp, cpio.finish())?;
    fs::rename(&tmp, &initrd)?;
    fs::write(&stamp_path, stamp)?;
    Ok(initrd)
}

/// True if `elf` is a 64-bit ELF with a PT_INTERP program header, i.e. needs
/// a dynamic loader.
fn elf_has_interpreter(elf: &[u8]) -> bool {
    const PT_INTERP: u32 = 3;
    let u16_at = |o: usize| {
        elf.get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
    };
    let u64_at = |o: usize| {
        elf.get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize)
    };
    if !elf.starts_with(b"\x7fELF\x02") {
        return false;
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38))
    else {
        return false;
    };
    (0..phnum).any(|i| {
        let o = phoff + i * phentsize;
        elf.get(o..o + 4)
            .is_some_and(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) == PT_INTERP)
    })
}

/// The module files (paths relative to the modules directory) needed to load
/// `modules`, with their dependencies, from the text of `modules.dep`.
fn module_closure(modules_dep: &str, modules: &[&str]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for m in modules {
        let suffix = format!("/{m}.ko");
        let line = modules_dep
            .lines()
            .find(|l| l.split(':').next().is_some_and(|p| p.ends_with(&suffix)))
            .with_context(|| format!("module {m} not in modules.dep"))?;
        let (first, deps) = line.split_once(':').unwrap_or((line, ""));
        out.push(first.to_string());
        out.extend(deps.split_whitespace().map(String::from));
    }
    Ok(out)
}

/// The guest's command script: the host's environment, the working directory,
/// and the command with every argument single-quoted for sh.
fn command_script(cmd: &[&str], cwd: &Path, env: impl Iterator<Item = (String, String)>) -> String {
    let mut s = String::from("# written by obgp-vm for one boot\n");
    for (k, v) in env {
        let is_name = !k.is_empty()
            && !k.starts_with(|c: char| c.is_ascii_digit())
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        // the guest's own values of these are the right ones
        let guest_owned = matches!(k.as_str(), "PWD" | "OLDPWD" | "SHLVL" | "_");
        if is_name && !guest_owned {
            s.push_str(&format!("export {k}={}\n", sh_quote(&v)));
        }
    }
    let cwd = sh_quote(&cwd.display().to_string());
    s.push_str(&format!(
        "cd {cwd} || {{ echo \"obgp-vm: no directory \"{cwd}; exit 125; }}\n"
    ));
    let words: Vec<String> = cmd.iter().map(|a| sh_quote(a)).collect();
    s.push_str(&format!("exec {}\n", words.join(" ")));
    s
}

/// `s` as one sh word.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn virtfs(path: &Path, tag: &str) -> Result<String> {
    let p = path.display().to_string();
    // qemu's option parser splits on commas
    if p.contains(',') {
        bail!("cannot share {p}: qemu -virtfs paths must not contain ','");
    }
    Ok(format!(
        "local,path={p},mount_tag={tag},security_model=none"
    ))
}

/// An exclusive `flock` on `DIR/.build.lock`, released when dropped (or when
/// the process dies).
struct BuildLock {
    _held: fs::File,
}

impl BuildLock {
    fn acquire(dir: &Path) -> Result<BuildLock> {
        use std::os::fd::AsRawFd;
        let path = dir.join(".build.lock");
        let file =
            fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        // SAFETY: flock on a file descriptor this function owns for as long
        // as the returned guard lives; no memory is passed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if rc != 0 {
            bail!(
                "locking {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        Ok(BuildLock { _held: file })
    }
}

/// The per-boot directory shared read-write as `/run/obgp-vm`; removed on drop.
struct RunDir {
    path: PathBuf,
}

impl RunDir {
    fn create(dir: &Path) -> Result<RunDir> {
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!("runs/{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(RunDir { path })
    }

    fn write(&self, name: &str, text: &str) -> Result<()> {
        let p = self.path.join(name);
        fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

fn spawn_reader<R: std::io::Read + Send + 'static>(
    pipe: Option<R>,
    console: Arc<Mutex<String>>,
    echo: bool,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let Some(pipe) = pipe else { return };
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        while matches!(reader.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
            let line = String::from_utf8_lossy(&buf).replace('\r', "");
            if echo {
                eprint!("{line}");
            }
            console
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push_str(&line);
            buf.clear();
        }
    })
}

fn run_checked(cmd: &mut Command) -> Result<()> {
    let out = cmd.output().with_context(|| format!("running {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A newc ("070701") cpio archive, the format the kernel unpacks as initramfs.
#[derive(Default)]
struct Cpio {
    out: Vec<u8>,
    ino: u32,
    dirs: std::collections::BTreeSet<String>,
}

impl Cpio {
    fn entry(&mut self, name: &str, mode: u32, rdev: (u32, u32), data: &[u8]) {
        self.ino += 1;
        let header = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            self.ino,
            mode,
            0, // uid
            0, // gid
            if mode & 0o170000 == 0o040000 { 2 } else { 1 },
            0, // mtime
            data.len(),
            0,
            0,
            rdev.0,
            rdev.1,
            name.len() + 1,
            0, // check
        );
        self.out.extend_from_slice(header.as_bytes());
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        self.pad();
        self.out.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while self.out.len() & 3 != 0 {
            self.out.push(0);
        }
    }

    fn dir(&mut self, name: &str) {
        if self.dirs.insert(name.to_string()) {
            self.entry(name, 0o040755, (0, 0), &[]);
        }
    }

    fn dir_all(&mut self, name: &str) {
        let mut path = String::new();
        for part in name.split('/') {
            if !path.is_empty() {
                path.push('/');
            }
            path.push_str(part);
            self.dir(&path.clone());
        }
    }

    fn file(&mut self, name: &str, perm: u32, data: &[u8]) {
        self.entry(name, 0o100000 | perm, (0, 0), data);
    }

    fn symlink(&mut self, name: &str, target: &str) {
        self.entry(name, 0o120777, (0, 0), target.as_bytes());
    }

    fn char_device(&mut self, name: &str, major: u32, minor: u32) {
        self.entry(name, 0o020600, (major, minor), &[]);
    }

    fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, (0, 0), &[]);
        self.out
    }
}

pub mod batch;

#[cfg(test)]
mod tests;
