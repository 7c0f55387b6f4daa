//! Static entries of a Linux bridge's FDB (`Op::AddBridgeFdb`,
//! `Op::DelBridgeFdb`, `Actual::bridge_fdb`) on a real kernel, in a
//! network namespace: a real bridge with an enslaved veth end named like
//! the agent's L2 VNI port. What the node writes is what `bridge fdb show`
//! shows and what it reads back (through the netlink mirror's
//! notifications, and in a fresh node's dumps); foreign entries (a static
//! one on a foreign port, on a foreign bridge's port, learned ones, the
//! kernel's permanent ones) are never touched. This kernel has bridges
//! and veths but no VXLAN, so the planner's ownership rule (which needs a
//! proven `br-<n>`/`vxlan-<n>` pair) is tested with plain values in
//! `crates/plan/tests/l2vni.rs`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use obgp_netmodel::{BridgeFdbEntry, Class, DesiredNode, DevName};
use obgp_node::{KernelConfig, KernelNode, Scope};
use obgp_plan::plan::plan;
use obgp_plan::{apply_plan, Actual, Op};
use obgp_testbed::netns::Netns;

fn dev(s: &str) -> DevName {
    DevName::new(s).unwrap()
}

/// The agent's veth end of an L2 VNI (`vrf<uuid[:11]>`), in `br-2001`.
const OURS: &str = "vrfdd3b5a95-aa";
/// An operator's port in the same bridge.
const FOREIGN_PORT: &str = "tap-foreign";
/// An agent-named veth end in an operator's bridge: read (the name is the
/// agent's), never deleted by a plan (the bridge is no proven L2 VNI).
const FOREIGN_BRIDGE_PORT: &str = "vrfee000000-01";

fn set<const N: usize>(entries: [BridgeFdbEntry; N]) -> BTreeSet<BridgeFdbEntry> {
    entries.into()
}

fn entry(bridge: &str, port: &str, mac: &str) -> BridgeFdbEntry {
    BridgeFdbEntry {
        bridge: dev(bridge),
        mac: mac.parse().unwrap(),
        vlan: None,
        port: dev(port),
    }
}

struct Bed {
    ns: Netns,
    _dir: tempfile::TempDir,
    rt_tables: PathBuf,
}

/// `br-2001` with the agent's veth end and a foreign port, `br-foo` with
/// an agent-named port, and the foreign entries: a static one on each
/// foreign port, two learned ones on the agent's port.
fn bed(tag: &str) -> Bed {
    let ns = Netns::new(tag).expect("creating a netns (run the tests as root)");
    for br in ["br-2001", "br-foo"] {
        ns.ip(&["link", "add", br, "type", "bridge"]).unwrap();
        ns.ip(&["link", "set", br, "up"]).unwrap();
    }
    for (port, peer, br) in [
        (OURS, "ovsdd3b5a95-aa", "br-2001"),
        (FOREIGN_PORT, "tap-foreign-p", "br-2001"),
        (FOREIGN_BRIDGE_PORT, "ovsee000000-01", "br-foo"),
    ] {
        ns.veth(port, peer, None).unwrap();
        ns.ip(&["link", "set", port, "master", br]).unwrap();
    }
    for (mac, port) in [
        ("fa:16:3e:aa:00:01", FOREIGN_PORT),
        ("fa:16:3e:aa:00:02", FOREIGN_BRIDGE_PORT),
    ] {
        bridge(&ns, &["fdb", "add", mac, "dev", port, "master", "static"]);
    }
    // Two MACs the bridge learns on the agent's port from real frames
    // (the VM's side of the veth): 03 is pinned by the test, 04 stays
    // learned.
    for last in [3, 4] {
        learn(&ns, "ovsdd3b5a95-aa", [0xfa, 0x16, 0x3e, 0xaa, 0, last]);
    }
    let dir = tempfile::tempdir().unwrap();
    let rt_tables = dir.path().join("rt_tables");
    std::fs::write(
        &rt_tables,
        "255\tlocal\n254\tmain\n253\tdefault\n0\tunspec\n",
    )
    .unwrap();
    Bed {
        ns,
        _dir: dir,
        rt_tables,
    }
}

/// Sends one broadcast frame with source MAC `src` out of `dev` (an
/// AF_PACKET socket in the namespace) and waits until the bridge on the
/// other end of the veth has learnt `src`.
fn learn(ns: &Netns, dev: &str, src: [u8; 6]) {
    let name = std::ffi::CString::new(dev).unwrap();
    let sent = ns
        .run(move || {
            // SAFETY: a raw packet socket, a zeroed sockaddr_ll filled in
            // and a frame buffer we own, each passed with its length.
            unsafe {
                let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
                assert!(fd >= 0, "{}", std::io::Error::last_os_error());
                let mut to: libc::sockaddr_ll = std::mem::zeroed();
                to.sll_family = libc::AF_PACKET as u16;
                to.sll_ifindex = libc::if_nametoindex(name.as_ptr()) as i32;
                to.sll_halen = 6;
                to.sll_addr[..6].copy_from_slice(&[0xff; 6]);
                // Broadcast, from `src`, the local experimental EtherType.
                let mut frame = vec![0xff; 6];
                frame.extend_from_slice(&src);
                frame.extend_from_slice(&[0x88, 0xb5]);
                frame.resize(60, 0);
                let n = libc::sendto(
                    fd,
                    frame.as_ptr().cast(),
                    frame.len(),
                    0,
                    (&to as *const libc::sockaddr_ll).cast(),
                    std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
                );
                libc::close(fd);
                n
            }
        })
        .unwrap();
    assert_eq!(sent, 60, "sending from {dev}");
    let mac = obgp_netmodel::MacAddr(src).to_string();
    for _ in 0..100 {
        if !kernel_fdb(ns, &mac).is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("the bridge did not learn {mac}");
}

/// `bridge ARGS...` in the namespace; its stdout.
fn bridge(ns: &Netns, args: &[&str]) -> String {
    let out = ns
        .exec("bridge", args)
        .unwrap_or_else(|e| panic!("bridge {}: {e:#}", args.join(" ")));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The kernel's FDB lines (`bridge fdb show`) for `mac`.
fn kernel_fdb(ns: &Netns, mac: &str) -> Vec<String> {
    bridge(ns, &["fdb", "show"])
        .lines()
        .filter(|l| l.starts_with(mac))
        .map(|l| l.trim().to_string())
        .collect()
}

async fn node(bed: &Bed) -> KernelNode {
    KernelNode::connect(KernelConfig {
        netns: Some(bed.ns.path()),
        rt_tables: bed.rt_tables.clone(),
        dummy_kind: "ifb".into(),
        ovs_ofctl: "/nonexistent/ovs-ofctl".into(),
        ..KernelConfig::default()
    })
    .await
    .unwrap()
}

/// The long-lived node's view (its mirror, fed by notifications), checked
/// against a fresh node's (full dumps).
async fn observe(k: &mut KernelNode, bed: &Bed, step: &str) -> Actual {
    let scope = Scope::default();
    let mirrored = k.observe(&scope).await.unwrap();
    let dumped = node(bed).await.observe(&scope).await.unwrap();
    assert_eq!(mirrored.bridge_fdb, dumped.bridge_fdb, "{step}");
    mirrored
}

async fn apply(k: &mut KernelNode, op: Op) {
    k.apply(&op).await.unwrap_or_else(|e| panic!("{op}: {e}"));
}

#[tokio::test]
async fn static_entries_are_added_read_back_and_deleted_and_foreign_ones_stay() {
    let bed = bed("brfdb");
    let mut k = node(&bed).await;
    let ns = &bed.ns;

    // Only static entries on agent-named veth ends are read: not the one
    // on the foreign port, not the learned ones, not the kernel's
    // permanent entries of the ports' own MACs.
    let foreign_read = entry("br-foo", FOREIGN_BRIDGE_PORT, "fa:16:3e:aa:00:02");
    let a = observe(&mut k, &bed, "start").await;
    assert_eq!(a.bridge_fdb, set([foreign_read.clone()]), "start");

    // Add: the kernel holds it as `bridge fdb replace ... master static`
    // makes it, and the mirror reads it back.
    let vm = entry("br-2001", OURS, "fa:16:3e:11:11:11");
    apply(&mut k, Op::AddBridgeFdb(vm.clone())).await;
    assert_eq!(
        kernel_fdb(ns, "fa:16:3e:11:11:11"),
        [format!(
            "fa:16:3e:11:11:11 dev {OURS} master br-2001 static"
        )]
    );
    let a = observe(&mut k, &bed, "added").await;
    assert_eq!(a.bridge_fdb, set([foreign_read.clone(), vm.clone()]));

    // A MAC the bridge learnt from a frame is pinned by the same replace.
    let learned = entry("br-2001", OURS, "fa:16:3e:aa:00:03");
    apply(&mut k, Op::AddBridgeFdb(learned.clone())).await;
    assert_eq!(
        kernel_fdb(ns, "fa:16:3e:aa:00:03"),
        [format!(
            "fa:16:3e:aa:00:03 dev {OURS} master br-2001 static"
        )]
    );
    let a = observe(&mut k, &bed, "learned pinned").await;
    assert!(a.bridge_fdb.contains(&learned));

    // Someone moves our MAC to another port: the key no longer holds ours.
    bridge(
        ns,
        &[
            "fdb",
            "replace",
            "fa:16:3e:11:11:11",
            "dev",
            FOREIGN_PORT,
            "master",
            "static",
        ],
    );
    let a = observe(&mut k, &bed, "moved away").await;
    assert!(!a.bridge_fdb.contains(&vm), "{:?}", a.bridge_fdb);
    // And the add moves it back.
    apply(&mut k, Op::AddBridgeFdb(vm.clone())).await;
    let a = observe(&mut k, &bed, "moved back").await;
    assert!(a.bridge_fdb.contains(&vm));
    assert_eq!(
        kernel_fdb(ns, "fa:16:3e:11:11:11"),
        [format!(
            "fa:16:3e:11:11:11 dev {OURS} master br-2001 static"
        )]
    );

    // Delete: ours go; every foreign entry and the permanent ones stay.
    let before = bridge(ns, &["fdb", "show"]);
    for e in [&vm, &learned] {
        apply(&mut k, Op::DelBridgeFdb(e.clone())).await;
    }
    let a = observe(&mut k, &bed, "deleted").await;
    assert_eq!(a.bridge_fdb, set([foreign_read]));
    let after = bridge(ns, &["fdb", "show"]);
    let others = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with("fa:16:3e:11:11:11") && !l.starts_with("fa:16:3e:aa:00:03"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(others(&after), others(&before));
    for (mac, port) in [
        ("fa:16:3e:aa:00:01", FOREIGN_PORT),
        ("fa:16:3e:aa:00:02", FOREIGN_BRIDGE_PORT),
    ] {
        assert_eq!(kernel_fdb(ns, mac).len(), 1, "{mac} on {port}:\n{after}");
    }
    assert!(kernel_fdb(ns, "fa:16:3e:aa:00:03").is_empty(), "{after}");
    let learned_stays = kernel_fdb(ns, "fa:16:3e:aa:00:04");
    assert_eq!(
        learned_stays,
        [format!("fa:16:3e:aa:00:04 dev {OURS} master br-2001")],
        "{after}"
    );
    assert!(
        after.contains("permanent"),
        "the ports' own entries:\n{after}"
    );

    // Deleting what is not there fails with the kernel's ENOENT.
    let e = k.apply(&Op::DelBridgeFdb(vm.clone())).await.unwrap_err();
    assert_eq!(e.errno(), Some(libc::ENOENT), "{e}");
}

#[tokio::test]
async fn a_desired_entry_converges_through_plan_and_apply_and_its_port_takes_it_along() {
    let bed = bed("brfdbplan");
    let mut k = node(&bed).await;
    let vm = entry("br-2001", OURS, "fa:16:3e:11:11:11");
    let mut d = DesiredNode::default();
    d.bridge_fdb.insert(vm.clone(), Class::Vm);
    let before = k.observe(&Scope::for_desired(&d)).await.unwrap();
    let p = plan(&d, &before).unwrap();
    let ops: Vec<String> = p.ops().map(ToString::to_string).collect();
    assert_eq!(
        ops,
        [format!(
            "+ bridge-fdb br-2001 {OURS} fa:16:3e:11:11:11 static"
        )],
        "{p}"
    );
    let report = apply_plan(&mut k, &p).await;
    assert!(report.ok(), "{report:?}");
    let after = observe(&mut k, &bed, "converged").await;
    let again = plan(&d, &after).unwrap();
    assert!(again.is_empty(), "{again}");

    // The port leaving the bridge takes its entries along (notified).
    bed.ns.ip(&["link", "set", OURS, "nomaster"]).unwrap();
    let a = observe(&mut k, &bed, "port left the bridge").await;
    assert!(!a.bridge_fdb.contains(&vm), "{:?}", a.bridge_fdb);
    bed.ns
        .ip(&["link", "set", OURS, "master", "br-2001"])
        .unwrap();
    // Deleting the bridge takes them too.
    apply(&mut k, Op::AddBridgeFdb(vm.clone())).await;
    bed.ns.ip(&["link", "del", "br-2001"]).unwrap();
    let a = observe(&mut k, &bed, "bridge deleted").await;
    assert!(!a.bridge_fdb.iter().any(|e| e.bridge == dev("br-2001")));
}
