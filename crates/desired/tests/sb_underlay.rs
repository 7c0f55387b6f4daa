//! One test per SB-driver (`ovn_bgp_driver`, underlay) feature, each on a
//! small hand-made OVN_Southbound + Open_vSwitch snapshot.

use std::collections::BTreeMap;
use std::net::IpAddr;

use obgp_config::{AdvertisementMethod, Config, Driver, ExposingMethod};
use obgp_desired::{desired_state, Desired, NodeFacts};
use obgp_netmodel::Class;
use obgp_ovn::Snapshot;
use serde_json::{json, Map, Value};

const HERE: &str = "sys-1";
const ELSEWHERE: &str = "sys-2";

/// A tiny SB + OVS world: this node is chassis `sys-1`, `physnet1` maps to
/// `br-ex` (with the `provnet-1` patch port), and datapath `pub` is the
/// provider network (localnet `provnet-1` on `physnet1`).
struct World {
    sb: BTreeMap<&'static str, Map<String, Value>>,
    mappings: String,
    system_id: Option<&'static str>,
    chassis: BTreeMap<&'static str, String>,
    datapaths: BTreeMap<&'static str, String>,
    n: u32,
}

impl World {
    fn new() -> World {
        let mut w = World {
            sb: BTreeMap::new(),
            mappings: "physnet1:br-ex".into(),
            system_id: Some(HERE),
            chassis: BTreeMap::new(),
            datapaths: BTreeMap::new(),
            n: 0,
        };
        for c in [HERE, ELSEWHERE] {
            let u = w.row("Chassis", json!({"name": c, "hostname": c}));
            w.chassis.insert(c, u);
        }
        w.localnet("pub", "provnet-1", "physnet1", None);
        w
    }

    fn uuid(&mut self) -> String {
        self.n += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.n)
    }

    fn row(&mut self, table: &'static str, row: Value) -> String {
        let u = self.uuid();
        self.sb.entry(table).or_default().insert(u.clone(), row);
        u
    }

    fn datapath(&mut self, name: &'static str) -> String {
        if let Some(u) = self.datapaths.get(name) {
            return u.clone();
        }
        let u = self.row(
            "Datapath_Binding",
            json!({"external_ids": ["map", [["name", name]]]}),
        );
        self.datapaths.insert(name, u.clone());
        u
    }

    /// A Port_Binding on datapath `dp`; `chassis` binds it.
    fn port(&mut self, dp: &'static str, mut row: Value, chassis: Option<&str>) -> String {
        row["datapath"] = json!(["uuid", self.datapath(dp)]);
        if let Some(c) = chassis {
            row["chassis"] = json!(["uuid", self.chassis[c]]);
        }
        self.row("Port_Binding", row)
    }

    fn localnet(&mut self, dp: &'static str, name: &str, physnet: &str, tag: Option<u16>) {
        let mut row = json!({"logical_port": name, "type": "localnet", "mac": "unknown",
                             "options": ["map", [["network_name", physnet]]]});
        if let Some(t) = tag {
            row["tag"] = json!(t);
        }
        self.port(dp, row, None);
    }

    fn vm(&mut self, dp: &'static str, name: &str, mac: &str, chassis: Option<&str>) -> String {
        self.port(
            dp,
            json!({"logical_port": name, "mac": mac, "up": chassis.is_some()}),
            chassis,
        )
    }

    /// Router `r` with its gateway on `pub` (`172.24.4.100/24`,
    /// `2001:db8::100/64`) hosted on `chassis`, and `nat_addresses` on the
    /// gateway's switch-side patch port.
    fn router(&mut self, chassis: Option<&str>, nat_addresses: &[&str]) {
        let gw = "fa:16:3e:aa:aa:01 172.24.4.100/24 2001:db8::100/64";
        self.port(
            "r",
            json!({"logical_port": "cr-lrp-gw", "type": "chassisredirect", "mac": gw,
                   "options": ["map", [["distributed-port", "lrp-gw"]]]}),
            chassis,
        );
        self.port(
            "r",
            json!({"logical_port": "lrp-gw", "type": "patch", "mac": gw,
                   "options": ["map", [["peer", "gw"]]]}),
            None,
        );
        let nats: Vec<Value> = nat_addresses.iter().map(|n| json!(n)).collect();
        self.port(
            "pub",
            json!({"logical_port": "gw", "type": "patch", "mac": "router",
                   "nat_addresses": ["set", nats],
                   "options": ["map", [["peer", "lrp-gw"]]]}),
            None,
        );
    }

    /// A router interface on tenant datapath `dp` with `mac` (`"<mac> <ip/len>..."`).
    fn router_interface(&mut self, dp: &'static str, id: &str, mac: &str, ext: Value) {
        let lrp = format!("lrp-{id}");
        self.port(
            "r",
            json!({"logical_port": lrp, "type": "patch", "mac": mac,
                   "options": ["map", [["peer", id]]]}),
            None,
        );
        self.port(
            dp,
            json!({"logical_port": id, "type": "patch", "mac": "router",
                   "external_ids": ext, "options": ["map", [["peer", lrp]]]}),
            None,
        );
    }

    fn snapshot(&self) -> Snapshot {
        let mut ext = vec![json!(["ovn-bridge-mappings", self.mappings])];
        if let Some(s) = self.system_id {
            ext.push(json!(["system-id", s]));
        }
        let sb: Map<String, Value> = self
            .sb
            .iter()
            .map(|(t, rows)| (t.to_string(), Value::Object(rows.clone())))
            .collect();
        Snapshot::from_wire(&json!({
            "OVN_Southbound": sb,
            "Open_vSwitch": {
                "Open_vSwitch": {"99999999-0000-4000-8000-000000000001": {
                    "external_ids": ["map", ext],
                    "bridges": ["uuid", "99999999-0000-4000-8000-000000000002"]}},
                "Bridge": {"99999999-0000-4000-8000-000000000002": {
                    "name": "br-ex", "ports": ["uuid", "99999999-0000-4000-8000-000000000003"]}},
                "Port": {"99999999-0000-4000-8000-000000000003": {
                    "name": "patch-provnet-1-to-br-int"}}
            }
        }))
        .expect("well-formed fixture")
    }
}

fn config() -> Config {
    let mut c = Config::default();
    c.default.driver = Driver::OvnBgpDriver;
    c.default.exposing_method = ExposingMethod::Underlay;
    c.default.bgp_router_id = Some("192.0.2.1".into());
    c
}

fn tenant_config() -> Config {
    let mut c = config();
    c.default.expose_tenant_networks = true;
    c
}

fn run(w: &World, c: &Config) -> Desired {
    desired_state(&w.snapshot(), c, &NodeFacts::default()).expect("supported")
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn announced(d: &Desired) -> Vec<String> {
    d.exposed.keys().map(|i| i.to_string()).collect()
}

fn neighbours(d: &Desired) -> Vec<String> {
    d.to_node()
        .neighbours
        .keys()
        .map(|n| format!("{} {} {}", n.dev, n.dst, n.lladdr))
        .collect()
}

fn proxies(d: &Desired) -> Vec<String> {
    d.to_node()
        .proxy_neighbours
        .keys()
        .map(|n| format!("{} {}", n.dev, n.dst))
        .collect()
}

const VM_MAC: &str = "fa:16:3e:11:11:11 172.24.4.10 2001:db8::10";

#[test]
fn provider_vm_bound_here_is_wired_without_a_neighbour() {
    let mut w = World::new();
    w.vm("pub", "vm1", VM_MAC, Some(HERE));
    let d = run(&w, &config());
    assert_eq!(announced(&d), ["172.24.4.10", "2001:db8::10"]);
    let e = &d.exposed[&ip("172.24.4.10")];
    assert_eq!(e.class, Class::Vm);
    let wiring = e.wiring.as_ref().expect("wired");
    assert_eq!(wiring.target.dev.as_str(), "br-ex");
    assert_eq!(wiring.lladdr, None);
    assert!(neighbours(&d).is_empty());
    assert!(proxies(&d).is_empty());
    assert!(d.bridges[0]
        .mac_tweak_ports
        .contains("patch-provnet-1-to-br-int"));
}

#[test]
fn provider_vm_bound_elsewhere_or_unbound_is_not_exposed() {
    let mut w = World::new();
    w.vm("pub", "vm1", VM_MAC, Some(ELSEWHERE));
    w.vm("pub", "vm2", "fa:16:3e:11:11:12 172.24.4.11", None);
    assert!(run(&w, &config()).exposed.is_empty());
}

#[test]
fn vm_on_a_provider_network_not_mapped_here_is_not_exposed() {
    let mut w = World::new();
    w.localnet("other", "provnet-2", "physnet2", None);
    w.vm("other", "vm1", "fa:16:3e:11:11:11 10.9.0.10", Some(HERE));
    assert!(run(&w, &config()).exposed.is_empty());
}

#[test]
fn virtual_port_on_provider_gets_proxy_ndp_for_its_subnet() {
    let mut w = World::new();
    w.port(
        "pub",
        json!({"logical_port": "vip", "type": "virtual", "mac": "fa:16:3e:11:11:13 2001:db8::13",
               "external_ids": ["map", [["neutron:cidrs", "2001:db8::13/64"]]]}),
        Some(HERE),
    );
    let d = run(&w, &config());
    assert_eq!(announced(&d), ["2001:db8::13"]);
    assert_eq!(proxies(&d), ["br-ex 2001:db8::"]);
}

#[test]
fn vlan_provider_vm_is_wired_on_the_vlan_device() {
    let mut w = World::new();
    w.localnet("vlan", "provnet-9", "physnet1", Some(100));
    w.vm("vlan", "vm1", "fa:16:3e:11:11:11 172.25.0.10", Some(HERE));
    let d = run(&w, &config());
    let wiring = d.exposed[&ip("172.25.0.10")].wiring.clone().unwrap();
    assert_eq!(wiring.target.dev.as_str(), "br-ex.100");
    assert_eq!(d.bridges[0].vlans[0].dev.as_str(), "br-ex.100");
}

#[test]
fn gateway_bound_here_gets_its_mac_as_neighbour_and_proxy_ndp() {
    let mut w = World::new();
    w.router(Some(HERE), &[]);
    let d = run(&w, &config());
    assert_eq!(announced(&d), ["172.24.4.100", "2001:db8::100"]);
    assert_eq!(d.exposed[&ip("172.24.4.100")].class, Class::Gateway);
    assert_eq!(
        neighbours(&d),
        [
            "br-ex 172.24.4.100 fa:16:3e:aa:aa:01",
            "br-ex 2001:db8::100 fa:16:3e:aa:aa:01"
        ]
    );
    assert_eq!(proxies(&d), ["br-ex 2001:db8::"]);
    // Tenant networks are off: no subnet.
    assert!(d.tenant_subnets.is_empty());
}

#[test]
fn gateway_on_another_chassis_exposes_nothing() {
    let mut w = World::new();
    w.router(Some(ELSEWHERE), &[]);
    w.router_interface(
        "t",
        "ri",
        "fa:16:3e:bb:bb:01 10.0.0.1/24",
        json!(["map", []]),
    );
    w.vm("t", "tvm", "fa:16:3e:33:33:33 10.0.0.5", Some(HERE));
    let d = run(&w, &tenant_config());
    assert!(d.exposed.is_empty());
    assert!(d.tenant_subnets.is_empty());
}

#[test]
fn tenant_subnet_behind_a_local_gateway_is_routed_via_the_gateway_ip() {
    let mut w = World::new();
    w.router(Some(HERE), &[]);
    w.router_interface(
        "t",
        "ri",
        "fa:16:3e:bb:bb:01 10.0.0.1/24",
        json!(["map", []]),
    );
    let d = run(&w, &tenant_config());
    let s = &d.tenant_subnets[0];
    assert_eq!(s.rule_dst.to_string(), "10.0.0.1/24");
    assert_eq!(s.net.to_string(), "10.0.0.0/24");
    assert_eq!(s.via, Some(ip("172.24.4.100")));
    assert_eq!(s.dev.as_str(), "br-ex");
    assert!(!s.vrf_route, "host method: no VRF route");
}

#[test]
fn tenant_vm_bound_to_any_chassis_is_announced_without_wiring() {
    let mut w = World::new();
    w.router(Some(HERE), &[]);
    w.router_interface(
        "t",
        "ri",
        "fa:16:3e:bb:bb:01 10.0.0.1/24",
        json!(["map", []]),
    );
    w.vm("t", "tvm1", "fa:16:3e:33:33:33 10.0.0.5", Some(ELSEWHERE));
    w.vm("t", "tvm2", "fa:16:3e:33:33:34 10.0.0.6", None);
    let d = run(&w, &tenant_config());
    let e = &d.exposed[&ip("10.0.0.5")];
    assert_eq!(e.class, Class::TenantVm);
    assert!(e.wiring.is_none());
    assert!(!d.exposed.contains_key(&ip("10.0.0.6")), "unbound VM");
}

#[test]
fn dual_stack_router_interface_exposes_both_families() {
    let mut w = World::new();
    w.router(Some(HERE), &[]);
    w.router_interface(
        "t",
        "ri",
        "fa:16:3e:bb:bb:01 10.0.0.1/24 2620:52:0:10::1/64",
        json!(["map", []]),
    );
    w.vm(
        "t",
        "tvm",
        "fa:16:3e:33:33:33 10.0.0.5 2620:52:0:10::5",
        Some(ELSEWHERE),
    );
    let d = run(&w, &tenant_config());
    let subnets: Vec<(String, Option<IpAddr>)> = d
        .tenant_subnets
        .iter()
        .map(|s| (s.net.to_string(), s.via))
        .collect();
    assert_eq!(
        subnets,
        [
            ("10.0.0.0/24".to_string(), Some(ip("172.24.4.100"))),
            ("2620:52:0:10::/64".to_string(), Some(ip("2001:db8::100")))
        ]
    );
    assert!(d.exposed.contains_key(&ip("2620:52:0:10::5")));
}

#[test]
fn ipv6_gua_only_exposes_the_gua_subnet_and_not_ipv4() {
    let mut w = World::new();
    w.router(Some(HERE), &[]);
    w.router_interface(
        "t",
        "ri",
        "fa:16:3e:bb:bb:01 10.0.0.1/24 2620:52:0:10::1/64",
        json!(["map", []]),
    );
    w.vm(
        "t",
        "tvm",
        "fa:16:3e:33:33:33 10.0.0.5 2620:52:0:10::5",
        Some(HERE),
    );
    let mut c = config();
    c.default.expose_ipv6_gua_tenant_networks = true;
    let d = run(&w, &c);
    let nets: Vec<String> = d.tenant_subnets.iter().map(|s| s.net.to_string()).collect();
    assert_eq!(nets, ["2620:52:0:10::/64"]);
    assert!(d.exposed.contains_key(&ip("2620:52:0:10::5")));
    assert!(!d.exposed.contains_key(&ip("10.0.0.5")));
}

#[test]
fn subnet_advertisement_adds_the_vrf_route_and_no_tenant_vm_ips() {
    let mut w = World::new();
    w.router(Some(HERE), &[]);
    w.router_interface(
        "t",
        "ri",
        "fa:16:3e:bb:bb:01 10.0.0.1/24",
        json!(["map", []]),
    );
    w.vm("t", "tvm", "fa:16:3e:33:33:33 10.0.0.5", Some(HERE));
    let mut c = tenant_config();
    c.default.advertisement_method_tenant_networks = AdvertisementMethod::Subnet;
    let d = run(&w, &c);
    assert!(d.tenant_subnets[0].vrf_route);
    // The subnet is announced as a whole: no tenant VM /32.
    assert!(!d.exposed.contains_key(&ip("10.0.0.5")));
}

#[test]
fn unknown_mac_on_provider_exposes_the_neutron_cidrs_ips() {
    let mut w = World::new();
    w.port(
        "pub",
        json!({"logical_port": "cfgdrive", "mac": "unknown", "up": true,
               "external_ids": ["map", [["neutron:cidrs", "172.24.4.12/24"]]]}),
        Some(HERE),
    );
    let d = run(&w, &config());
    assert_eq!(announced(&d), ["172.24.4.12"]);
    assert!(neighbours(&d).is_empty());
}

#[test]
fn address_scopes_keep_only_subnets_in_an_allowed_scope() {
    let mut w = World::new();
    w.router(Some(HERE), &[]);
    w.router_interface(
        "t",
        "ri",
        "fa:16:3e:bb:bb:01 10.0.0.1/24",
        json!(["map", [["neutron:subnet_pool_addr_scope4", "scope-a"]]]),
    );
    w.router_interface(
        "u",
        "ri2",
        "fa:16:3e:bb:bb:02 10.1.0.1/24",
        json!(["map", [["neutron:subnet_pool_addr_scope4", "scope-b"]]]),
    );
    let mut c = tenant_config();
    c.default.address_scopes = Some(vec!["scope-a".into()]);
    let d = run(&w, &c);
    let nets: Vec<String> = d.tenant_subnets.iter().map(|s| s.net.to_string()).collect();
    assert_eq!(nets, ["10.0.0.0/24"]);
}

#[test]
fn fip_of_a_tenant_vm_bound_here_is_wired_on_the_provider_network() {
    let mut w = World::new();
    w.router(
        Some(ELSEWHERE),
        &["fa:16:3e:aa:aa:02 172.24.4.50 is_chassis_resident(\"tvm\")"],
    );
    w.vm("t", "tvm", "fa:16:3e:33:33:33 10.0.0.5", Some(HERE));
    let d = run(&w, &config());
    assert_eq!(announced(&d), ["172.24.4.50"]);
    let e = &d.exposed[&ip("172.24.4.50")];
    assert_eq!(e.class, Class::Fip);
    assert_eq!(e.wiring.as_ref().unwrap().target.dev.as_str(), "br-ex");
}

#[test]
fn gateway_nat_addresses_expose_fips_of_ports_on_this_chassis_only() {
    let mut w = World::new();
    w.router(
        Some(HERE),
        &[
            "fa:16:3e:aa:aa:01 172.24.4.100 is_chassis_resident(\"cr-lrp-gw\")",
            "fa:16:3e:aa:aa:03 172.24.4.60 is_chassis_resident(\"here-vm\")",
            "fa:16:3e:aa:aa:04 172.24.4.61 is_chassis_resident(\"far-vm\")",
        ],
    );
    w.vm("t", "here-vm", "fa:16:3e:33:33:33 10.0.0.5", Some(HERE));
    w.vm("t", "far-vm", "fa:16:3e:33:33:34 10.0.0.6", Some(ELSEWHERE));
    let d = run(&w, &config());
    assert!(d.exposed.contains_key(&ip("172.24.4.60")));
    assert!(!d.exposed.contains_key(&ip("172.24.4.61")));
    // The gateway IP keeps its own wiring (with the MAC), not the NAT entry's.
    let gw = &d.exposed[&ip("172.24.4.100")];
    assert_eq!(gw.class, Class::Gateway);
    assert!(gw.wiring.as_ref().unwrap().lladdr.is_some());
}

#[test]
fn missing_system_id_exposes_nothing_and_says_why() {
    let mut w = World::new();
    w.system_id = None;
    w.vm("pub", "vm1", VM_MAC, Some(HERE));
    let d = run(&w, &config());
    assert!(d.exposed.is_empty());
    assert!(d.notes.iter().any(|n| n.contains("system-id")));
    assert_eq!(d.bridges.len(), 1, "base wiring still applies");
}

#[test]
fn garbled_port_binding_is_skipped_with_a_warning_naming_it() {
    let mut w = World::new();
    let bad = w.vm("pub", "bad", "zz:16:3e:11:11:11 172.24.4.9", Some(HERE));
    w.vm("pub", "vm1", VM_MAC, Some(HERE));
    let snap = w.snapshot();
    let warn = snap
        .warnings()
        .iter()
        .find(|e| e.table == "Port_Binding")
        .expect("a warning");
    assert_eq!(warn.uuid.to_string(), bad);
    assert!(warn.reason.contains("zz:16:3e"), "{}", warn.reason);
    let d = desired_state(&snap, &config(), &NodeFacts::default()).unwrap();
    assert_eq!(announced(&d), ["172.24.4.10", "2001:db8::10"]);
}

/// An OVN LB `lb1` whose VIP port sits on the provider datapath, with the
/// router datapath in `lr_datapath_group` or (when `via_group` is false)
/// only reachable through the member switch `t`'s router interface.
fn provider_lb(w: &mut World, router_dp: &'static str, via_group: bool) {
    w.port(
        "pub",
        json!({"logical_port": "vip-port", "up": false,
               "external_ids": ["map", [["neutron:cidrs", "172.24.4.80/24"],
                                        ["neutron:port_name", "ovn-lb-vip-lb1"]]]}),
        None,
    );
    let t = w.datapath("t");
    let ls_group = w.row("Logical_DP_Group", json!({"datapaths": ["uuid", t]}));
    let mut lb = json!({"name": "lb1", "ls_datapath_group": ["uuid", ls_group]});
    if via_group {
        let r = w.datapath(router_dp);
        let lr_group = w.row("Logical_DP_Group", json!({"datapaths": ["uuid", r]}));
        lb["lr_datapath_group"] = json!(["uuid", lr_group]);
    } else {
        w.router_interface(
            "t",
            "ri",
            "fa:16:3e:bb:bb:01 10.0.0.1/24",
            json!(["map", []]),
        );
    }
    w.row("Load_Balancer", lb);
}

#[test]
fn provider_lb_vip_behind_the_local_gateway_router_is_wired_without_neighbour() {
    for via_group in [true, false] {
        let mut w = World::new();
        w.router(Some(HERE), &[]);
        provider_lb(&mut w, "r", via_group);
        let d = run(&w, &config());
        let e = &d.exposed[&ip("172.24.4.80")];
        assert_eq!(e.class, Class::Lb, "via_group={via_group}");
        assert_eq!(e.wiring.as_ref().unwrap().lladdr, None);
        assert_eq!(e.source.table, "Load_Balancer");
    }
}

#[test]
fn provider_lb_of_another_router_or_remote_gateway_is_not_exposed() {
    let mut w = World::new();
    w.router(Some(HERE), &[]);
    provider_lb(&mut w, "other-router", true);
    assert!(!run(&w, &config()).exposed.contains_key(&ip("172.24.4.80")));

    let mut w = World::new();
    w.router(Some(ELSEWHERE), &[]);
    provider_lb(&mut w, "r", true);
    assert!(run(&w, &config()).exposed.is_empty());
}
