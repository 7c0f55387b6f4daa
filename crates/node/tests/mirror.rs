//! The netlink mirror on a real kernel, in namespaces the tests create
//! (root, iproute2): after our writes and after foreign `ip` commands, an
//! observe through the long-lived mirror equals an observe by a freshly
//! connected node (full dumps); an overrun is detected, reported and
//! recovered from.

use std::io::Write;
use std::path::PathBuf;

use obgp_netmodel::{proto, scope, Address, DevName, IpNet, Neighbour, ProxyNeighbour, RouteType};
use obgp_node::{KernelConfig, KernelNode, Scope};
use obgp_plan::{Actual, KernelRoute, Op};
use obgp_testbed::netns::Netns;

fn dev(s: &str) -> DevName {
    DevName::new(s).unwrap()
}

fn net(s: &str) -> IpNet {
    s.parse().unwrap()
}

struct Bed {
    ns: Netns,
    _dir: tempfile::TempDir,
    rt_tables: PathBuf,
}

/// A namespace with a Linux bridge `br-ex` and an ifb `bgp-nic`, both up.
fn bed(tag: &str) -> Bed {
    let ns = Netns::new(tag).expect("creating a netns (run the tests as root)");
    ns.ip(&["link", "add", "br-ex", "type", "bridge"]).unwrap();
    ns.ip(&["link", "set", "br-ex", "up"]).unwrap();
    ns.ip(&["link", "add", "bgp-nic", "type", "ifb"]).unwrap();
    ns.ip(&["link", "set", "bgp-nic", "up"]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rt_tables = dir.path().join("rt_tables");
    std::fs::write(&rt_tables, "255\tlocal\n254\tmain\n200\tbr-ex\n").unwrap();
    Bed {
        ns,
        _dir: dir,
        rt_tables,
    }
}

async fn node(bed: &Bed, rcvbuf: Option<usize>) -> KernelNode {
    KernelNode::connect(KernelConfig {
        netns: Some(bed.ns.path()),
        rt_tables: bed.rt_tables.clone(),
        dummy_kind: "ifb".into(),
        ovs_ofctl: "/nonexistent/ovs-ofctl".into(),
        mirror_rcvbuf: rcvbuf,
        ..KernelConfig::default()
    })
    .await
    .unwrap()
}

/// The bridge's table (through rt_tables), the VRF table 10 and 1000.
fn scope() -> Scope {
    let mut s = Scope {
        vrf_table: 10,
        ..Scope::default()
    };
    s.bridge_tables.insert(dev("br-ex"));
    s.tables.insert(1000);
    s
}

/// What a freshly connected node (a new mirror: full dumps) observes.
async fn fresh(bed: &Bed) -> Actual {
    node(bed, None).await.observe(&scope()).await.unwrap()
}

/// The long-lived node's observe must equal a fresh one's, field by field
/// (the message says which part differs).
async fn assert_mirror_exact(k: &mut KernelNode, bed: &Bed, step: &str) -> Actual {
    let mirrored = k.observe(&scope()).await.unwrap();
    let dumped = fresh(bed).await;
    assert_eq!(mirrored.links, dumped.links, "{step}: links");
    assert_eq!(mirrored.addresses, dumped.addresses, "{step}: addresses");
    assert_eq!(mirrored.rules, dumped.rules, "{step}: rules");
    assert_eq!(mirrored.routes, dumped.routes, "{step}: routes");
    assert_eq!(mirrored.neighbours, dumped.neighbours, "{step}: neighbours");
    assert_eq!(
        mirrored.proxy_neighbours, dumped.proxy_neighbours,
        "{step}: proxy neighbours"
    );
    assert_eq!(mirrored, dumped, "{step}");
    mirrored
}

fn host_route(table: u32, dst: &str, dev_: &str) -> KernelRoute {
    let dst = net(dst);
    KernelRoute {
        table,
        v6: dst.addr().is_ipv6(),
        dst: Some(dst),
        metric: None,
        dev: Some(dev(dev_)),
        via: None,
        proto: proto::BOOT,
        scope: scope::LINK,
        kind: RouteType::Unicast,
    }
    .normalised()
}

/// Our writes, each observed at once (no sleep: the kernel queues the
/// notification before it acknowledges the write).
fn our_writes() -> Vec<Op> {
    let mut ops = Vec::new();
    for ip in ["172.24.4.10/32", "2001:db8::10/128", "172.24.4.11/32"] {
        let n = net(ip);
        ops.push(Op::AddAddress(Address {
            dev: dev("bgp-nic"),
            net: n,
        }));
        ops.push(Op::AddRule {
            v6: n.addr().is_ipv6(),
            dst: n,
            table: 200,
            table_name: None,
            priority: None,
        });
        ops.push(Op::ReplaceRoute {
            route: host_route(200, ip, "br-ex"),
            table_name: None,
        });
        ops.push(Op::ReplaceNeighbour(Neighbour {
            dev: dev("br-ex"),
            dst: n.addr(),
            lladdr: "fa:16:3e:11:11:11".parse().unwrap(),
        }));
    }
    ops.push(Op::ReplaceRoute {
        route: host_route(1000, "198.51.100.0/24", "br-ex"),
        table_name: None,
    });
    ops.push(Op::ReplaceRoute {
        route: host_route(10, "172.24.4.10/32", "bgp-nic"),
        table_name: None,
    });
    ops.push(Op::AddProxyNeighbour(ProxyNeighbour {
        dev: dev("br-ex"),
        dst: "2001:db8::".parse().unwrap(),
    }));
    // And some of them taken back.
    ops.push(Op::DelAddress(Address {
        dev: dev("bgp-nic"),
        net: net("172.24.4.11/32"),
    }));
    ops.push(Op::DelRoute {
        route: host_route(200, "172.24.4.11/32", "br-ex"),
        table_name: None,
    });
    ops.push(Op::DelNeighbour(Neighbour {
        dev: dev("br-ex"),
        dst: "172.24.4.11".parse().unwrap(),
        lladdr: "fa:16:3e:11:11:11".parse().unwrap(),
    }));
    ops
}

#[tokio::test]
async fn mirror_equals_a_fresh_dump_after_our_writes_and_foreign_commands() {
    let bed = bed("mirror");
    let mut k = node(&bed, None).await;
    assert_mirror_exact(&mut k, &bed, "start").await;
    let at_start = k.mirror_stats();
    assert_eq!(at_start.redumps, 1, "the first observe dumps everything");

    for op in our_writes() {
        k.apply(&op).await.unwrap_or_else(|e| panic!("{op}: {e}"));
        let a = k.observe(&scope()).await.unwrap();
        // The write itself is seen at once.
        match &op {
            Op::AddAddress(ad) => assert!(a.addresses.contains(ad), "{op}"),
            Op::DelAddress(ad) => assert!(!a.addresses.contains(ad), "{op}"),
            Op::ReplaceRoute { route, .. } => assert!(a.routes.contains(route), "{op}"),
            Op::DelRoute { route, .. } => assert!(!a.routes.contains(route), "{op}"),
            Op::ReplaceNeighbour(n) => assert!(a.neighbours.contains(n), "{op}"),
            Op::DelNeighbour(n) => assert!(!a.neighbours.contains(n), "{op}"),
            Op::AddProxyNeighbour(p) => assert!(a.proxy_neighbours.contains(p), "{op}"),
            Op::AddRule { dst, table, .. } => assert!(
                a.rules
                    .iter()
                    .any(|r| r.dst == Some(*dst) && r.table == *table),
                "{op}"
            ),
            _ => {}
        }
    }
    let a = assert_mirror_exact(&mut k, &bed, "after our writes").await;
    assert_eq!(a.rules.iter().filter(|r| r.table == 200).count(), 3);
    // All of it came from notifications, with no re-dump.
    let stats = k.mirror_stats();
    assert_eq!(stats.redumps, at_start.redumps, "{stats:?}");
    assert!(
        stats.notifications >= our_writes().len() as u64,
        "{stats:?}"
    );

    // Foreign commands, each step compared with a fresh dump.
    // (what, whether the kernel flushes routes silently so that the mirror
    // must re-dump them, the commands)
    let steps: &[(&str, bool, &[&[&str]])] = &[
        (
            "addresses, the last IPv4 one of bgp-nic removed (its routes flushed silently)",
            true,
            &[
                &["addr", "add", "192.0.2.1/24", "dev", "br-ex"],
                &[
                    "-6",
                    "addr",
                    "add",
                    "2001:db8:1::1/64",
                    "dev",
                    "br-ex",
                    "nodad",
                ],
                &["addr", "del", "172.24.4.10/32", "dev", "bgp-nic"],
            ],
        ),
        (
            "routes in several tables",
            false,
            &[
                &[
                    "route",
                    "add",
                    "203.0.113.0/24",
                    "dev",
                    "br-ex",
                    "table",
                    "200",
                ],
                &[
                    "route",
                    "add",
                    "203.0.113.0/24",
                    "via",
                    "192.0.2.2",
                    "table",
                    "1000",
                ],
                &["route", "add", "blackhole", "198.18.0.0/15", "table", "10"],
                &[
                    "-6",
                    "route",
                    "add",
                    "2001:db8:5::/64",
                    "dev",
                    "br-ex",
                    "table",
                    "200",
                ],
                &["route", "add", "10.99.0.0/16", "dev", "br-ex"],
                // A replace changes the route with the same key in place.
                &[
                    "route",
                    "replace",
                    "203.0.113.0/24",
                    "via",
                    "192.0.2.3",
                    "table",
                    "200",
                ],
                &["route", "del", "198.18.0.0/15", "table", "10"],
            ],
        ),
        (
            "rules",
            false,
            &[
                &[
                    "rule",
                    "add",
                    "to",
                    "203.0.113.7",
                    "table",
                    "200",
                    "pref",
                    "500",
                ],
                &["-6", "rule", "add", "to", "2001:db8:5::7", "table", "200"],
                &["rule", "del", "to", "172.24.4.10", "table", "200"],
            ],
        ),
        (
            "neighbours",
            false,
            &[
                &[
                    "neigh",
                    "add",
                    "192.0.2.50",
                    "lladdr",
                    "fa:16:3e:00:00:50",
                    "dev",
                    "br-ex",
                    "nud",
                    "permanent",
                ],
                &[
                    "neigh",
                    "add",
                    "192.0.2.51",
                    "lladdr",
                    "fa:16:3e:00:00:51",
                    "dev",
                    "br-ex",
                    "nud",
                    "permanent",
                ],
                // No longer permanent: no longer read.
                &[
                    "neigh",
                    "replace",
                    "192.0.2.51",
                    "lladdr",
                    "fa:16:3e:00:00:51",
                    "dev",
                    "br-ex",
                    "nud",
                    "reachable",
                ],
                &[
                    "neigh",
                    "replace",
                    "192.0.2.50",
                    "lladdr",
                    "fa:16:3e:00:00:99",
                    "dev",
                    "br-ex",
                    "nud",
                    "permanent",
                ],
                &["-6", "neigh", "del", "2001:db8::10", "dev", "br-ex"],
            ],
        ),
        (
            "proxy neighbours",
            false,
            &[
                &["neigh", "add", "proxy", "192.0.2.77", "dev", "br-ex"],
                &["-6", "neigh", "del", "proxy", "2001:db8::", "dev", "br-ex"],
            ],
        ),
        (
            "a second device with state, then down (IPv4 routes flushed silently)",
            true,
            &[
                &["link", "add", "br-two", "type", "bridge"],
                &["link", "set", "br-two", "up"],
                &["addr", "add", "198.51.100.1/24", "dev", "br-two"],
                &[
                    "route",
                    "add",
                    "198.51.101.0/24",
                    "dev",
                    "br-two",
                    "table",
                    "200",
                ],
                &[
                    "route",
                    "add",
                    "198.51.102.0/24",
                    "via",
                    "198.51.100.9",
                    "table",
                    "1000",
                ],
                &[
                    "neigh",
                    "add",
                    "198.51.100.5",
                    "lladdr",
                    "fa:16:3e:00:01:05",
                    "dev",
                    "br-two",
                    "nud",
                    "permanent",
                ],
                &["link", "set", "br-two", "down"],
            ],
        ),
        (
            "up again, a route back, then deleted",
            true,
            &[
                &["link", "set", "br-two", "up"],
                &[
                    "route",
                    "add",
                    "198.51.101.0/24",
                    "dev",
                    "br-two",
                    "table",
                    "200",
                ],
                &["link", "del", "br-two"],
            ],
        ),
        (
            "last IPv4 address of a device removed (its routes flushed silently)",
            true,
            &[
                &[
                    "route",
                    "add",
                    "203.0.113.128/25",
                    "via",
                    "192.0.2.2",
                    "table",
                    "200",
                ],
                &["addr", "del", "192.0.2.1/24", "dev", "br-ex"],
            ],
        ),
        (
            "a link set down and up with its MAC changed",
            true,
            &[
                &["link", "set", "bgp-nic", "down"],
                &["link", "set", "br-ex", "address", "aa:bb:cc:00:00:01"],
                &["link", "set", "bgp-nic", "up"],
            ],
        ),
    ];
    for (name, flushes, cmds) in steps {
        let before = k.mirror_stats();
        for cmd in *cmds {
            bed.ns
                .ip(cmd)
                .unwrap_or_else(|e| panic!("{name}: ip {}: {e}", cmd.join(" ")));
        }
        let a = assert_mirror_exact(&mut k, &bed, name).await;
        // Only the steps where the kernel flushes routes silently re-dump.
        let redumped = k.mirror_stats().redumps > before.redumps;
        assert_eq!(redumped, *flushes, "{name}: {:?}", k.mirror_stats());
        if *name == "neighbours" {
            let held: Vec<String> = a
                .neighbours
                .iter()
                .map(|n| format!("{} {}", n.dst, n.lladdr))
                .collect();
            assert!(
                held.contains(&"192.0.2.50 fa:16:3e:00:00:99".to_string()),
                "{held:?}"
            );
            assert!(
                !held.iter().any(|n| n.starts_with("192.0.2.51 ")),
                "{held:?}"
            );
        }
    }
    let a = k.observe(&scope()).await.unwrap();
    assert!(!a.links.contains_key(&dev("br-two")));
    assert_eq!(
        a.links[&dev("br-ex")].mac.unwrap().to_string(),
        "aa:bb:cc:00:00:01"
    );
    // A new MAC flushes the device's neighbours, permanent ones too.
    assert!(!a.neighbours.iter().any(|n| n.dev == dev("br-ex")));
    assert_eq!(*k.overruns().borrow(), 0, "no overrun in this test");
}

#[tokio::test]
async fn an_overrun_is_reported_and_the_mirror_recovers_by_a_full_dump() {
    let bed = bed("overrun");
    // The smallest buffer the kernel allows: a burst cannot fit.
    let mut k = node(&bed, Some(1)).await;
    let mut overruns = k.overruns();
    k.observe(&scope()).await.unwrap();
    assert_eq!(*overruns.borrow_and_update(), 0);

    // A burst from another process while this (single-threaded) runtime
    // drains nothing: 500 addresses and 500 routes.
    let mut batch = tempfile::NamedTempFile::new().unwrap();
    for i in 0..500u32 {
        let ip = std::net::Ipv4Addr::from(u32::from(std::net::Ipv4Addr::new(100, 64, 0, 0)) + i);
        writeln!(batch, "addr add {ip}/32 dev bgp-nic").unwrap();
        writeln!(batch, "route add {ip}/32 dev br-ex table 200").unwrap();
    }
    batch.flush().unwrap();
    bed.ns
        .ip(&["-batch", batch.path().to_str().unwrap()])
        .unwrap();

    let a = k.observe(&scope()).await.unwrap();
    assert!(
        overruns.has_changed().unwrap(),
        "the overrun was reported to subscribers"
    );
    assert!(*overruns.borrow_and_update() >= 1);
    assert_eq!(a.routes.iter().filter(|r| r.table == 200).count(), 500);
    assert_eq!(a, fresh(&bed).await, "re-dumped after the overrun");
}

// Multi-threaded, as the agent runs: full dumps go through block_in_place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resync_rereads_everything_and_changes_nothing_when_nothing_changed() {
    let bed = bed("resync");
    let mut k = node(&bed, None).await;
    bed.ns
        .ip(&[
            "route",
            "add",
            "203.0.113.0/24",
            "dev",
            "br-ex",
            "table",
            "200",
        ])
        .unwrap();
    let before = k.observe(&scope()).await.unwrap();
    let redumps = k.mirror_stats().redumps;
    k.resync();
    let after = k.observe(&scope()).await.unwrap();
    assert_eq!(k.mirror_stats().redumps, redumps + 1);
    assert_eq!(before, after);
    assert_eq!(after.routes.len(), 1);
}

#[tokio::test]
async fn only_write_failures_that_contradict_the_mirror_force_a_redump() {
    let bed = bed("failures");
    let mut k = node(&bed, None).await;
    k.observe(&scope()).await.unwrap();
    let start = k.mirror_stats().redumps;

    // A device nobody has: our own lookup fails, the mirror is right.
    let e = k
        .apply(&Op::SetLinkUp { name: dev("nope0") })
        .await
        .unwrap_err();
    assert_eq!(e.errno(), Some(libc_enodev()), "{e}");
    k.observe(&scope()).await.unwrap();
    assert_eq!(k.mirror_stats().redumps, start);

    // The kernel says EEXIST for an address: the part is re-dumped.
    bed.ns
        .ip(&["addr", "add", "192.0.2.9/32", "dev", "br-ex"])
        .unwrap();
    let add = Op::AddAddress(Address {
        dev: dev("br-ex"),
        net: net("192.0.2.9/32"),
    });
    assert!(k.apply(&add).await.is_err());
    let a = k.observe(&scope()).await.unwrap();
    assert_eq!(k.mirror_stats().redumps, start + 1);
    assert_eq!(a, fresh(&bed).await);
}

fn libc_enodev() -> i32 {
    19
}

#[tokio::test]
async fn sysctls_are_reread_in_place_and_reopened_when_their_device_comes_back() {
    let bed = bed("sysctl");
    let mut k = node(&bed, None).await;
    let key = "net.ipv4.conf.br-ex.proxy_arp".to_string();
    let mut s = scope();
    s.sysctl_keys.insert(key.clone());
    let set = |v: &str| {
        let v = v.to_string();
        bed.ns
            .run(move || std::fs::write("/proc/sys/net/ipv4/conf/br-ex/proxy_arp", v).unwrap())
            .unwrap();
    };
    assert_eq!(k.observe(&s).await.unwrap().sysctls[&key], "0");
    set("1");
    assert_eq!(k.observe(&s).await.unwrap().sysctls[&key], "1");
    // The device goes; its sysctl with it.
    bed.ns.ip(&["link", "del", "br-ex"]).unwrap();
    assert!(!k.observe(&s).await.unwrap().sysctls.contains_key(&key));
    // A new device of the same name: its own (fresh) value is read.
    bed.ns
        .ip(&["link", "add", "br-ex", "type", "bridge"])
        .unwrap();
    assert_eq!(k.observe(&s).await.unwrap().sysctls[&key], "0");
    set("1");
    assert_eq!(k.observe(&s).await.unwrap().sysctls[&key], "1");
}
