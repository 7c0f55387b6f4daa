//! Benchmark: `desired_state` (and `to_node`) on generated NB topologies of
//! 10k, 50k and 100k logical switch ports, about 10% of them local.
//!
//! Run: `cargo bench -p obgp-desired --bench desired_state` (add
//! `-- 10000` to pick sizes). Prints min / median per size; the snapshot
//! build (done once per OVSDB change, not per reconcile) is reported too.

use std::hint::black_box;
use std::time::{Duration, Instant};

use obgp_config::{Config, Driver, ExposingMethod};
use obgp_desired::{desired_state, NodeFacts};
use obgp_ovn::{Snapshot, Tables};
use obgp_ovsdb_data::{Atom, Datum, Row, Uuid};

/// Chassis in the generated cloud; this node is chassis 0, so ~1/CHASSIS of
/// everything is local.
const CHASSIS: usize = 10;
/// VM ports per tenant network.
const PORTS_PER_NET: usize = 40;

struct Gen {
    nb: Tables,
    next: u128,
}

fn s(v: &str) -> Datum {
    Datum::scalar(Atom::String(v.into()))
}

fn map(pairs: &[(&str, String)]) -> Datum {
    Datum::map(
        pairs
            .iter()
            .map(|(k, v)| (Atom::String((*k).into()), Atom::String(v.into())))
            .collect(),
    )
}

fn refs(u: &[Uuid]) -> Datum {
    Datum::set(u.iter().map(|u| Atom::Uuid(*u)).collect())
}

impl Gen {
    fn row(&mut self, table: &str, cols: Vec<(&str, Datum)>) -> Uuid {
        self.next += 1;
        let u = Uuid(self.next);
        let row = Row {
            columns: cols.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        };
        self.nb.entry(table.to_string()).or_default().insert(u, row);
        u
    }

    fn vm(
        &mut self,
        name: String,
        net: &str,
        chassis: usize,
        ip: String,
        cidr: String,
        fip: bool,
    ) -> Uuid {
        let host = format!("compute-{chassis}");
        let mut ext = vec![
            ("neutron:network_name", net.to_string()),
            ("neutron:cidrs", cidr),
            ("neutron:host_id", host.clone()),
            ("neutron:device_owner", "compute:nova".into()),
        ];
        if fip {
            ext.push(("neutron:port_fip", "x".into()));
        }
        self.row(
            "Logical_Switch_Port",
            vec![
                ("name", s(&name)),
                ("up", Datum::scalar(Atom::Boolean(true))),
                (
                    "addresses",
                    s(&format!(
                        "fa:16:3e:{:02x}:{:02x}:{:02x} {ip}",
                        (self.next >> 16) as u8,
                        (self.next >> 8) as u8,
                        self.next as u8
                    )),
                ),
                ("options", map(&[("requested-chassis", host)])),
                ("external_ids", map(&ext)),
            ],
        )
    }
}

/// A cloud with `ports` VM ports: a third on the provider network, the rest
/// on tenant networks of 40 ports behind one router each (gateway on a
/// chassis picked round-robin), one FIP per 5 tenant VMs, one Octavia LB and
/// one port-forwarding LB per router.
fn generate(ports: usize) -> (Tables, Tables) {
    let mut g = Gen {
        nb: Tables::new(),
        next: 0x10_0000,
    };
    let provider_ports = ports / 3;
    let mut pub_ports = vec![g.row(
        "Logical_Switch_Port",
        vec![
            ("name", s("provnet-1")),
            ("type", s("localnet")),
            ("addresses", s("unknown")),
            ("options", map(&[("network_name", "physnet1".into())])),
        ],
    )];
    for i in 0..provider_ports {
        let ip = format!("172.{}.{}.{}", 16 + (i >> 16), (i >> 8) & 255, i & 255);
        let cidr = format!("{ip}/12");
        pub_ports.push(g.vm(
            format!("pvm-{i}"),
            "neutron-pub",
            i % CHASSIS,
            ip,
            cidr,
            false,
        ));
    }
    let nets = (ports - provider_ports).div_ceil(PORTS_PER_NET);
    let mut vm = 0usize;
    for r in 0..nets {
        let router = format!("r{r}");
        let gw_ip = format!("100.{}.{}.{}", 64 + (r >> 16), (r >> 8) & 255, r & 255);
        let gw = g.row(
            "Logical_Router_Port",
            vec![
                ("name", s(&format!("lrp-gw-{r}"))),
                ("mac", s("fa:16:3e:aa:aa:01")),
                ("networks", s(&format!("{gw_ip}/10"))),
                (
                    "external_ids",
                    map(&[
                        ("neutron:network_name", "neutron-pub".into()),
                        ("neutron:router_name", router.clone()),
                    ]),
                ),
                (
                    "status",
                    map(&[("hosting-chassis", format!("sys-{}", r % CHASSIS))]),
                ),
            ],
        );
        let net = format!("neutron-t{r}");
        let prefix = format!("10.{}.{}", (r >> 8) & 255, r & 255);
        let iface = g.row(
            "Logical_Switch_Port",
            vec![
                ("name", s(&format!("iface-{r}"))),
                ("type", s("router")),
                ("up", Datum::scalar(Atom::Boolean(true))),
                ("addresses", s("router")),
                (
                    "external_ids",
                    map(&[
                        ("neutron:network_name", net.clone()),
                        ("neutron:device_owner", "network:router_interface".into()),
                        ("neutron:device_id", router.clone()),
                        ("neutron:cidrs", format!("{prefix}.1/24")),
                    ]),
                ),
            ],
        );
        let mut net_ports = vec![iface];
        let mut nats = Vec::new();
        for k in 0..PORTS_PER_NET.min(ports - provider_ports - vm) {
            let ip = format!("{prefix}.{}", k + 10);
            let name = format!("tvm-{vm}");
            let fip = k % 5 == 0;
            net_ports.push(g.vm(
                name.clone(),
                &net,
                vm % CHASSIS,
                ip.clone(),
                format!("{ip}/24"),
                fip,
            ));
            if fip {
                nats.push(g.row(
                    "NAT",
                    vec![
                        ("type", s("dnat_and_snat")),
                        (
                            "external_ip",
                            s(&format!(
                                "198.{}.{}.{}",
                                18 + (vm >> 16),
                                (vm >> 8) & 255,
                                vm & 255
                            )),
                        ),
                        ("external_mac", s("fa:16:3e:22:22:22")),
                        ("logical_ip", s(&ip)),
                        ("logical_port", s(&name)),
                        ("gateway_port", refs(&[gw])),
                        (
                            "external_ids",
                            map(&[("neutron:fip_network_id", "pub".into())]),
                        ),
                    ],
                ));
            }
            vm += 1;
        }
        g.row(
            "Logical_Switch",
            vec![("name", s(&net)), ("ports", refs(&net_ports))],
        );
        g.row(
            "Load_Balancer",
            vec![
                ("name", s(&format!("lb-{r}"))),
                (
                    "vips",
                    Datum::map(vec![(
                        Atom::String(format!("{prefix}.250:80").into()),
                        Atom::String(format!("{prefix}.10:80").into()),
                    )]),
                ),
                (
                    "external_ids",
                    map(&[
                        ("neutron:vip", format!("{prefix}.250")),
                        ("neutron:vip_port_id", format!("tvm-{}", vm - 1)),
                        ("lr_ref", format!("neutron-{router}")),
                    ]),
                ),
            ],
        );
        g.row(
            "Load_Balancer",
            vec![
                ("name", s(&format!("pf-floatingip-{r}-tcp"))),
                (
                    "vips",
                    Datum::map(vec![(
                        Atom::String(format!("{gw_ip}:2222").into()),
                        Atom::String(format!("{prefix}.10:22").into()),
                    )]),
                ),
                (
                    "external_ids",
                    map(&[("neutron:router_name", format!("neutron-{router}"))]),
                ),
            ],
        );
        g.row(
            "Logical_Router",
            vec![
                ("name", s(&format!("neutron-{router}"))),
                ("ports", refs(&[gw])),
                ("nat", refs(&nats)),
            ],
        );
    }
    g.row(
        "Logical_Switch",
        vec![("name", s("neutron-pub")), ("ports", refs(&pub_ports))],
    );
    g.row(
        "NB_Global",
        vec![(
            "external_ids",
            map(&[("neutron:fip-distributed", "True".into())]),
        )],
    );

    let mut ovs = Tables::new();
    let port = Uuid(1);
    let bridge = Uuid(2);
    ovs.entry("Port".into()).or_default().insert(
        port,
        Row {
            columns: [("name".to_string(), s("patch-provnet-1-to-br-int"))].into(),
        },
    );
    ovs.entry("Bridge".into()).or_default().insert(
        bridge,
        Row {
            columns: [
                ("name".to_string(), s("br-ex")),
                ("ports".to_string(), refs(&[port])),
            ]
            .into(),
        },
    );
    ovs.entry("Open_vSwitch".into()).or_default().insert(
        Uuid(3),
        Row {
            columns: [(
                "external_ids".to_string(),
                map(&[
                    ("hostname", "compute-0".into()),
                    ("system-id", "sys-0".into()),
                    ("ovn-bridge-mappings", "physnet1:br-ex".into()),
                ]),
            )]
            .into(),
        },
    );
    (g.nb, ovs)
}

/// Nanoseconds this thread has spent on a CPU (`/proc/thread-self/schedstat`),
/// so results hold on a machine shared with other builds.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn stats(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[0], v[v.len() / 2])
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let desired_only = std::env::args().any(|a| a == "desired-only");
    let builds_n: usize = std::env::args()
        .find_map(|a| a.strip_prefix("builds=").and_then(|n| n.parse().ok()))
        .unwrap_or(3);
    let iters: usize = std::env::args()
        .find_map(|a| a.strip_prefix("iters=").and_then(|n| n.parse().ok()))
        .unwrap_or(30);
    let sizes = if sizes.is_empty() {
        vec![10_000, 50_000, 100_000]
    } else {
        sizes
    };
    let mut config = Config::default();
    config.default.driver = Driver::NbOvnBgpDriver;
    config.default.exposing_method = ExposingMethod::Underlay;
    config.default.bgp_router_id = Some("192.0.2.1".into());
    config.default.expose_tenant_networks = true;
    let facts = NodeFacts::default();

    println!(
        "{:>8} {:>8} {:>9} {:>12} {:>12} {:>12} {:>12} {:>13}",
        "ports",
        "exposed",
        "node objs",
        "build min",
        "desired min",
        "desired med",
        "desired cpu",
        "+to_node med"
    );
    for n in sizes {
        let (nb, ovs) = generate(n);
        let lsps = nb.get("Logical_Switch_Port").map_or(0, |t| t.len());
        let mut builds = Vec::new();
        let mut snap = Snapshot::default();
        for _ in 0..builds_n {
            let t = Instant::now();
            let next = Snapshot::build(&nb, &ovs);
            builds.push(t.elapsed());
            // Dropping the previous snapshot is not part of the build.
            snap = next;
        }
        assert!(snap.warnings().is_empty(), "{:?}", &snap.warnings()[..1]);
        let mut runs = Vec::new();
        let mut with_node = Vec::new();
        let mut exposed = 0;
        let mut cpu_desired = 0u64;
        let mut objs = 0;
        for _ in 0..iters {
            let c0 = cpu_ns();
            let t = Instant::now();
            let d = desired_state(black_box(&snap), &config, &facts).expect("supported");
            runs.push(t.elapsed());
            cpu_desired += cpu_ns() - c0;
            if desired_only {
                with_node.push(t.elapsed());
                exposed = d.exposed.len();
                continue;
            }
            let node = d.to_node();
            with_node.push(t.elapsed());
            exposed = d.exposed.len();
            objs =
                node.addresses.len() + node.rules.len() + node.routes.len() + node.neighbours.len();
            black_box(node);
        }
        let (bmin, _) = stats(builds);
        let (dmin, dmed) = stats(runs);
        let (_, nmed) = stats(with_node);
        let cpu = Duration::from_nanos(cpu_desired / iters as u64);
        println!("{lsps:>8} {exposed:>8} {objs:>9} {bmin:>12.2?} {dmin:>12.2?} {dmed:>12.2?} {cpu:>12.2?} {nmed:>13.2?}");
    }
}
