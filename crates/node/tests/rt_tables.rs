//! rt_tables on the real path: the observer reads the file as bytes, only
//! when it changed, and in every notation iproute2 reads; the applier's
//! append failing (immutable file or directory, read-only mount, full
//! file system, no permission) wires the bridge into no table and retries
//! without re-writing anything. Real netlink in a network namespace (root).

use std::path::{Path, PathBuf};

use obgp_netmodel::{proto, scope, Class, DesiredNode, DevName, Link, LinkKind, Route, RouteType};
use obgp_netmodel::{Rule, TableRef};
use obgp_node::{KernelConfig, KernelNode, Scope};
use obgp_plan::plan::plan;
use obgp_plan::{apply_plan, ApplyReport, Op, Plan};
use obgp_testbed::netns::Netns;

fn dev(s: &str) -> DevName {
    DevName::new(s).unwrap()
}

const VM: &str = "172.24.4.10/32";

/// br-ex (a Linux bridge standing in for the OVS one) with its table's
/// default route, and one VM's rule and host route in that table.
fn desired() -> DesiredNode {
    let br = dev("br-ex");
    let mut d = DesiredNode {
        vrf_table: 10,
        ..DesiredNode::default()
    };
    d.links.insert(Link {
        name: br.clone(),
        kind: LinkKind::Bridge,
        master: None,
        mac: None,
        up: true,
    });
    d.bridge_tables.insert(br.clone());
    for dst in [None, Some(VM)] {
        let route = Route {
            table: TableRef::Bridge(br.clone()),
            v6: false,
            dst: dst.map(|d| d.parse().unwrap()),
            dev: Some(br.clone()),
            via: None,
            proto: proto::BOOT,
            scope: scope::LINK,
            kind: RouteType::Unicast,
            metric: None,
        };
        d.routes.insert(route, Class::Vm);
    }
    d.rules.insert(
        Rule {
            dst: VM.parse().unwrap(),
            table: TableRef::Bridge(br),
            priority: None,
        },
        Class::Vm,
    );
    d
}

async fn node(ns: &Netns, rt_tables: &Path) -> KernelNode {
    KernelNode::connect(KernelConfig {
        netns: Some(ns.path()),
        rt_tables: rt_tables.to_path_buf(),
        dummy_kind: "ifb".into(),
        ovs_ofctl: "/nonexistent/ovs-ofctl".into(),
        ..KernelConfig::default()
    })
    .await
    .unwrap()
}

/// One reconcile: observe, plan the whole node, apply.
async fn reconcile(k: &mut KernelNode, d: &DesiredNode) -> (Plan, ApplyReport) {
    let actual = k.observe(&Scope::for_desired(d)).await.unwrap();
    let p = plan(d, &actual).unwrap();
    let report = apply_plan(k, &p).await;
    (p, report)
}

/// Runs `f` on a thread of its own with a single-threaded runtime: the
/// faults below change the calling thread's mount namespace or
/// file-system uid, which must not leak into other tests.
fn on_own_thread(f: impl FnOnce(&tokio::runtime::Runtime) + Send) {
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            f(&rt)
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

#[test]
fn bytes_hex_ids_and_lines_not_understood_are_read_and_taken() {
    let ns = Netns::new("rthex").expect("creating a netns (run the tests as root)");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rt_tables");
    let mut file = obgp_plan::RtTables::RESERVED.as_bytes().to_vec();
    // An operator's table in hex, a comment and a line in Latin-1, and a
    // line the agent cannot read, with a number in it.
    file.extend_from_slice(b"# tables r\xe9serv\xe9es\n0x1\tcustomer\n\xff 2 \xfe\n");
    std::fs::write(&path, &file).unwrap();
    ns.ip(&["link", "set", "lo", "up"]).unwrap();
    ns.ip(&[
        "route",
        "add",
        "203.0.113.0/24",
        "dev",
        "lo",
        "table",
        "1",
        "proto",
        "static",
    ])
    .unwrap();
    on_own_thread(|rt| {
        rt.block_on(async {
            let mut k = node(&ns, &path).await;
            let d = desired();
            let (p, report) = reconcile(&mut k, &d).await;
            assert!(report.ok(), "plan:\n{p}\nreport: {report:?}");
            assert_eq!(
                p.tables[&dev("br-ex")],
                3,
                "1 is 0x1, 2 is in the line not understood"
            );
            let (again, _) = reconcile(&mut k, &d).await;
            assert!(again.is_empty(), "{again}");
        })
    });
    let text = std::fs::read(&path).unwrap();
    assert!(text.starts_with(&file), "the file is only appended to");
    assert_eq!(&text[file.len()..], b"3 br-ex\n");
    let table1 = ns.ip(&["route", "show", "table", "1"]).unwrap();
    assert!(table1.contains("203.0.113.0/24 dev lo"), "{table1}");
}

#[test]
fn rt_tables_is_read_again_only_when_it_changed() {
    let ns = Netns::new("rtread").expect("creating a netns (run the tests as root)");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rt_tables");
    std::fs::write(&path, "1 br-ex\n").unwrap();
    on_own_thread(|rt| {
        rt.block_on(async {
            let mut k = node(&ns, &path).await;
            let scope = Scope::for_desired(&desired());
            for _ in 0..3 {
                let a = k.observe(&scope).await.unwrap();
                assert_eq!(a.rt_tables.lookup("br-ex"), Some(1));
            }
            assert_eq!(k.rt_tables_reads(), 1, "three observes, one read");

            // An operator appends a line: seen at the next observe.
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            std::io::Write::write_all(&mut f, b"0x20 ops\n").unwrap();
            let a = k.observe(&scope).await.unwrap();
            assert_eq!(a.rt_tables.lookup("ops"), Some(32));
            assert_eq!(k.rt_tables_reads(), 2);

            // Replaced by another file of the same size: another inode.
            let new = dir.path().join("rt_tables.new");
            std::fs::write(&new, "2 br-ex\n0x20 ops\n").unwrap();
            std::fs::rename(&new, &path).unwrap();
            let a = k.observe(&scope).await.unwrap();
            assert_eq!(a.rt_tables.lookup("br-ex"), Some(2));
            k.observe(&scope).await.unwrap();
            assert_eq!(k.rt_tables_reads(), 3);
        })
    });
}

/// What the calling thread logs, as text.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_line_not_understood_is_logged_once_with_its_place() {
    let ns = Netns::new("rtlog").expect("creating a netns (run the tests as root)");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rt_tables");
    std::fs::write(
        &path,
        b"1 br-ex
7up \xff\n",
    )
    .unwrap();
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    on_own_thread(|rt| {
        let _guard = tracing::subscriber::set_default(subscriber);
        rt.block_on(async {
            let mut k = node(&ns, &path).await;
            let scope = Scope::for_desired(&desired());
            k.observe(&scope).await.unwrap();
            k.observe(&scope).await.unwrap();
            // Changed: read again, the old line not logged again, the new one once.
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            std::io::Write::write_all(&mut f, b"0x1g junk\n").unwrap();
            let a = k.observe(&scope).await.unwrap();
            assert_eq!(k.rt_tables_reads(), 2);
            assert!(a.rt_tables.taken().contains(&7));
        })
    });
    let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("not understood"))
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].contains("line=2") && lines[0].contains("7up \u{fffd}"),
        "{text}"
    );
    assert!(
        lines[1].contains("line=3") && lines[1].contains("0x1g junk"),
        "{text}"
    );
    let file = path.display().to_string();
    assert!(lines.iter().all(|l| l.contains(&file)), "{text}");
}

/// A way rt_tables cannot be written, made on the calling thread.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// `chattr +i` on the file: EPERM even for root.
    ImmutableFile,
    /// No file yet, `chattr +i` on its directory: the create fails.
    ImmutableDir,
    /// The directory bind-mounted read-only: EROFS.
    ReadOnlyMount,
    /// A full tmpfs, the file ending on a page boundary: ENOSPC.
    Full,
    /// A file-system uid that is not root: EACCES on the 0644 file.
    NoPermission,
}

impl Fault {
    fn errno(self) -> i32 {
        match self {
            Fault::ImmutableFile | Fault::ImmutableDir => libc::EPERM,
            Fault::ReadOnlyMount => libc::EROFS,
            Fault::Full => libc::ENOSPC,
            Fault::NoPermission => libc::EACCES,
        }
    }
}

fn chattr(flag: &str, path: &Path) {
    let st = std::process::Command::new("chattr")
        .args([flag, &path.display().to_string()])
        .status()
        .unwrap();
    assert!(st.success(), "chattr {flag} {}", path.display());
}

fn check(r: libc::c_int, what: &str) {
    assert!(r == 0, "{what}: {}", std::io::Error::last_os_error());
}

/// A private mount namespace for the calling thread (mounts made in it
/// never reach the host, and vanish with the thread).
fn private_mounts() {
    // SAFETY: plain syscalls on this thread's own namespaces.
    unsafe {
        check(libc::unshare(libc::CLONE_NEWNS), "unshare(CLONE_NEWNS)");
        let root = c"/";
        let flags = libc::MS_REC | libc::MS_PRIVATE;
        let r = libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        );
        check(r, "making / private");
    }
}

fn mount(
    src: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) {
    use std::ffi::CString;
    let c = |s: &str| CString::new(s).unwrap();
    let src = src.map(|p| c(&p.display().to_string()));
    let target = c(&target.display().to_string());
    let fstype = fstype.map(c);
    let data = data.map(c);
    let ptr = |o: &Option<CString>| o.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: valid C strings or null, for this thread's private mounts.
    let r = unsafe {
        libc::mount(
            ptr(&src),
            target.as_ptr(),
            ptr(&fstype),
            flags,
            ptr(&data).cast(),
        )
    };
    check(r, "mount");
}

/// Makes `fault` on `dir` (holding `file`) for the calling thread, with
/// the file's content `reserved`; returns how to undo it.
fn make(fault: Fault, dir: &Path, file: &Path, reserved: &str) -> Box<dyn FnOnce()> {
    match fault {
        Fault::ImmutableFile => {
            std::fs::write(file, reserved).unwrap();
            chattr("+i", file);
            let file = file.to_path_buf();
            Box::new(move || chattr("-i", &file))
        }
        Fault::ImmutableDir => {
            chattr("+i", dir);
            let dir = dir.to_path_buf();
            Box::new(move || chattr("-i", &dir))
        }
        Fault::ReadOnlyMount => {
            std::fs::write(file, reserved).unwrap();
            private_mounts();
            mount(Some(dir), dir, None, libc::MS_BIND, None);
            let ro = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY;
            mount(None, dir, None, ro, None);
            let dir = dir.to_path_buf();
            Box::new(move || mount(None, &dir, None, libc::MS_BIND | libc::MS_REMOUNT, None))
        }
        Fault::Full => {
            private_mounts();
            mount(None, dir, Some("tmpfs"), 0, Some("size=64k"));
            // Padded to one page, so the append needs a page there is no room for.
            let mut text = reserved.to_string();
            let pad = 4096 - text.len() - 2;
            text.push_str(&format!("#{}\n", "-".repeat(pad)));
            assert_eq!(text.len(), 4096);
            std::fs::write(file, &text).unwrap();
            let filler = dir.join("filler");
            let mut f = std::fs::File::create(&filler).unwrap();
            while std::io::Write::write_all(&mut f, &[0u8; 4096]).is_ok() {}
            Box::new(move || std::fs::remove_file(&filler).unwrap())
        }
        Fault::NoPermission => {
            std::fs::write(file, reserved).unwrap();
            // SAFETY: changes this thread's file-system uid only; 0 restores it.
            unsafe { libc::setfsuid(65534) };
            Box::new(|| unsafe {
                libc::setfsuid(0);
            })
        }
    }
}

fn held_into_table_1(report: &ApplyReport) -> usize {
    report
        .held_back
        .iter()
        .filter(|op| match op {
            Op::AddRule { table, .. } => *table == 1,
            Op::ReplaceRoute { route, .. } => route.table == 1,
            _ => false,
        })
        .count()
}

fn unwritable_rt_tables_wires_nothing_and_retries_without_churn(fault: Fault) {
    let ns = Netns::new("rtro").expect("creating a netns (run the tests as root)");
    let top = tempfile::tempdir().unwrap();
    // Searchable by the file-system uid of `Fault::NoPermission`.
    std::fs::set_permissions(
        top.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let dir = top.path().join("iproute2");
    std::fs::create_dir(&dir).unwrap();
    let path: PathBuf = dir.join("rt_tables");
    let reserved = obgp_plan::RtTables::RESERVED;
    on_own_thread(|rt| {
        rt.block_on(async {
            let mut k = node(&ns, &path).await;
            let undo = make(fault, &dir, &path, reserved);
            let d = desired();

            let (first, report) = reconcile(&mut k, &d).await;
            assert_eq!(report.failed.len(), 1, "{fault:?}: {report:?}");
            let (op, error) = &report.failed[0];
            assert_eq!(
                op,
                &Op::AddRtTable {
                    number: 1,
                    name: dev("br-ex")
                }
            );
            let errno = std::io::Error::from_raw_os_error(fault.errno()).to_string();
            let file = path.display().to_string();
            for part in [file.as_str(), "br-ex", errno.as_str()] {
                assert!(error.contains(part), "{fault:?}: {part:?} not in {error}");
            }
            assert_eq!(held_into_table_1(&report), 3, "{fault:?}: {report:?}");
            let wired = |ns: &Netns| {
                let rules = ns.ip(&["rule", "show"]).unwrap();
                // A table no route was ever written into does not exist.
                let routes = match ns.ip(&["route", "show", "table", "1"]) {
                    Err(e) if e.to_string().contains("FIB table does not exist") => String::new(),
                    other => other.unwrap(),
                };
                (rules.contains("lookup 1"), routes)
            };
            assert_eq!(wired(&ns), (false, String::new()), "{fault:?}");

            // The retry: the same table number, the same failure, nothing written.
            let (second, report) = reconcile(&mut k, &d).await;
            assert_eq!(second.tables, first.tables);
            assert_eq!(report.applied, 0, "{fault:?}: {report:?}");
            assert_eq!(report.failed.len(), 1);
            assert_eq!(held_into_table_1(&report), 3);
            assert_eq!(wired(&ns), (false, String::new()), "{fault:?}");

            // Writable again: the line, then the wiring, then nothing to do.
            undo();
            let (_, report) = reconcile(&mut k, &d).await;
            assert!(report.ok(), "{fault:?}: {report:?}");
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(text.lines().last(), Some("1 br-ex"), "{fault:?}: {text}");
            assert!(text.ends_with('\n'));
            assert!(wired(&ns).0, "{fault:?}");
            let (last, _) = reconcile(&mut k, &d).await;
            assert!(last.is_empty(), "{fault:?}: {last}");
        })
    });
}

#[test]
fn an_immutable_rt_tables_wires_nothing_and_retries_without_churn() {
    unwritable_rt_tables_wires_nothing_and_retries_without_churn(Fault::ImmutableFile);
}

#[test]
fn an_immutable_directory_wires_nothing_and_retries_without_churn() {
    unwritable_rt_tables_wires_nothing_and_retries_without_churn(Fault::ImmutableDir);
}

#[test]
fn a_read_only_mount_wires_nothing_and_retries_without_churn() {
    unwritable_rt_tables_wires_nothing_and_retries_without_churn(Fault::ReadOnlyMount);
}

#[test]
fn a_full_file_system_wires_nothing_and_retries_without_churn() {
    unwritable_rt_tables_wires_nothing_and_retries_without_churn(Fault::Full);
}

#[test]
fn no_permission_wires_nothing_and_retries_without_churn() {
    unwritable_rt_tables_wires_nothing_and_retries_without_churn(Fault::NoPermission);
}
