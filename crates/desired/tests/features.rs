//! One test per NB-driver feature, each on a small hand-made snapshot.
//!
//! Over 700 lines: one small test per feature, sharing one set of snapshot
//! builders (a file per feature would copy them).

use std::collections::BTreeMap;
use std::net::IpAddr;

use obgp_config::{AdvertisementMethod, Config, Driver, ExposingMethod};
use obgp_desired::{desired_state, Desired, DesiredError, NodeFacts};
use obgp_netmodel::{Class, DesiredNode};
use obgp_ovn::Snapshot;
use serde_json::{json, Map, Value};

/// A tiny NB + OVS world: this node is `compute-1` (system-id `sys-1`),
/// `physnet1` maps to `br-ex`, whose OVS ports include the provnet patch port.
struct World {
    nb: BTreeMap<&'static str, Map<String, Value>>,
    ovs_ext: Vec<(&'static str, String)>,
    n: u32,
}

impl World {
    fn new() -> World {
        let mut w = World {
            nb: BTreeMap::new(),
            ovs_ext: vec![
                ("hostname", "compute-1".into()),
                ("system-id", "sys-1".into()),
                ("ovn-bridge-mappings", "physnet1:br-ex".into()),
            ],
            n: 0,
        };
        let ln = w.row(
            "Logical_Switch_Port",
            json!({"name": "provnet-1", "type": "localnet", "addresses": "unknown",
                   "options": ["map", [["network_name", "physnet1"]]]}),
        );
        w.switch("neutron-pub", &[ln]);
        w
    }

    fn uuid(&mut self) -> String {
        self.n += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.n)
    }

    fn row(&mut self, table: &'static str, row: Value) -> String {
        let u = self.uuid();
        self.nb.entry(table).or_default().insert(u.clone(), row);
        u
    }

    fn switch(&mut self, name: &str, ports: &[String]) -> String {
        let refs: Vec<Value> = ports.iter().map(|p| json!(["uuid", p])).collect();
        self.row(
            "Logical_Switch",
            json!({"name": name, "ports": ["set", refs]}),
        )
    }

    /// A VM port (type ""), up, on `network`, requested on `chassis`.
    fn vm(
        &mut self,
        name: &str,
        network: &str,
        chassis: &str,
        addresses: &str,
        cidrs: &str,
    ) -> String {
        self.row(
            "Logical_Switch_Port",
            json!({"name": name, "up": true, "addresses": addresses,
                   "options": ["map", [["requested-chassis", chassis]]],
                   "external_ids": ["map", [["neutron:network_name", network], ["neutron:cidrs", cidrs],
                                            ["neutron:host_id", chassis]]]}),
        )
    }

    /// Router `r1` with a gateway port on `neutron-pub` hosted on `host`.
    fn gateway(&mut self, host: &str) -> String {
        self.row(
            "Logical_Router_Port",
            json!({"name": "lrp-gw", "mac": "fa:16:3e:aa:aa:01",
                   "networks": ["set", ["172.24.4.100/24", "2001:db8::100/64"]],
                   "external_ids": ["map", [["neutron:network_name", "neutron-pub"],
                                            ["neutron:router_name", "r1"]]],
                   "status": ["map", [["hosting-chassis", host]]]}),
        )
    }

    /// Tenant network `neutron-priv` attached to router `r1`, interface `cidrs`.
    fn tenant_net(&mut self, name: &str, cidrs: &str, extra_ext: &[(&str, &str)]) {
        let mut ext = vec![
            json!(["neutron:network_name", name]),
            json!(["neutron:device_owner", "network:router_interface"]),
            json!(["neutron:device_id", "r1"]),
            json!(["neutron:cidrs", cidrs]),
        ];
        ext.extend(extra_ext.iter().map(|(k, v)| json!([k, v])));
        let iface = self.row(
            "Logical_Switch_Port",
            json!({"name": format!("iface-{name}"), "type": "router", "up": true, "addresses": "router",
                   "external_ids": ["map", ext]}),
        );
        self.switch(name, &[iface]);
    }

    fn router(&mut self, nats: &[String]) {
        let refs: Vec<Value> = nats.iter().map(|p| json!(["uuid", p])).collect();
        self.row(
            "Logical_Router",
            json!({"name": "neutron-r1", "nat": ["set", refs]}),
        );
    }

    fn distributed(&mut self, d: bool) {
        let v = if d { "True" } else { "False" };
        self.row(
            "NB_Global",
            json!({"external_ids": ["map", [["neutron:fip-distributed", v]]]}),
        );
    }

    fn snapshot(&self) -> Snapshot {
        let ext: Vec<Value> = self.ovs_ext.iter().map(|(k, v)| json!([k, v])).collect();
        let nb: Map<String, Value> = self
            .nb
            .iter()
            .map(|(k, v)| (k.to_string(), Value::Object(v.clone())))
            .collect();
        Snapshot::from_wire(&json!({
            "OVN_Northbound": nb,
            "Open_vSwitch": {
                "Open_vSwitch": {"ffffffff-0000-4000-8000-000000000001": {"external_ids": ["map", ext]}},
                "Bridge": {"ffffffff-0000-4000-8000-000000000002": {"name": "br-ex",
                    "ports": ["uuid", "ffffffff-0000-4000-8000-000000000003"]}},
                "Port": {"ffffffff-0000-4000-8000-000000000003": {"name": "patch-provnet-1-to-br-int"}}
            }
        }))
        .expect("fixture")
    }
}

fn config() -> Config {
    let mut c = Config::default();
    c.default.driver = Driver::NbOvnBgpDriver;
    c.default.exposing_method = ExposingMethod::Underlay;
    c.default.bgp_router_id = Some("192.0.2.1".into());
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

fn has_line(n: &DesiredNode, needle: &str) -> bool {
    format!("{n:?}").contains(needle)
}

#[test]
fn provider_vm_on_this_chassis_is_exposed_with_its_mac_as_neighbour_and_proxy_ndp() {
    let mut w = World::new();
    w.vm(
        "vm1",
        "neutron-pub",
        "compute-1",
        "fa:16:3e:11:11:11 172.24.4.10 2001:db8::10",
        "172.24.4.10/24 2001:db8::10/64",
    );
    let d = run(&w, &config());
    assert_eq!(announced(&d), ["172.24.4.10", "2001:db8::10"]);
    let e = &d.exposed[&ip("172.24.4.10")];
    assert_eq!(e.class, Class::Vm);
    let wiring = e.wiring.as_ref().unwrap();
    assert_eq!(wiring.target.dev.as_str(), "br-ex");
    assert_eq!(wiring.lladdr.unwrap().to_string(), "fa:16:3e:11:11:11");
    assert_eq!(
        wiring.proxy_ndp,
        ["2001:db8::".parse::<std::net::Ipv6Addr>().unwrap()]
    );
    let n = d.to_node();
    assert_eq!(n.proxy_neighbours.len(), 1);
    assert_eq!(n.neighbours.len(), 2);
    assert_eq!(n.rules.len(), 2);
}

#[test]
fn provider_vm_bound_elsewhere_or_down_is_not_exposed() {
    let mut w = World::new();
    w.vm(
        "vm2",
        "neutron-pub",
        "compute-2",
        "fa:16:3e:11:11:12 172.24.4.12",
        "172.24.4.12/24",
    );
    let down = w.vm(
        "vm3",
        "neutron-pub",
        "compute-1",
        "fa:16:3e:11:11:13 172.24.4.13",
        "172.24.4.13/24",
    );
    w.nb.get_mut("Logical_Switch_Port").unwrap()[&down]["up"] = json!(false);
    assert!(run(&w, &config()).exposed.is_empty());
}

#[test]
fn port_listing_this_host_anywhere_in_requested_chassis_is_exposed() {
    let mut w = World::new();
    w.vm(
        "vm1",
        "neutron-pub",
        "compute-2,compute-1",
        "fa:16:3e:11:11:11 172.24.4.10",
        "172.24.4.10/24",
    );
    assert_eq!(announced(&run(&w, &config())), ["172.24.4.10"]);
}

#[test]
fn virtual_port_follows_host_id_not_requested_chassis() {
    let mut w = World::new();
    w.row(
        "Logical_Switch_Port",
        json!({"name": "vip", "type": "virtual", "up": true, "addresses": "fa:16:3e:11:11:20 172.24.4.20",
               "options": ["map", [["requested-chassis", "compute-2"]]],
               "external_ids": ["map", [["neutron:network_name", "neutron-pub"], ["neutron:host_id", "compute-1"]]]}),
    );
    let d = run(&w, &config());
    assert_eq!(announced(&d), ["172.24.4.20"]);
    assert_eq!(d.exposed[&ip("172.24.4.20")].class, Class::Vm);
}

#[test]
fn chassis_name_falls_back_to_the_system_hostname() {
    let mut w = World::new();
    w.ovs_ext.retain(|(k, _)| *k != "hostname");
    w.vm(
        "vm1",
        "neutron-pub",
        "node-a",
        "fa:16:3e:11:11:11 172.24.4.10",
        "172.24.4.10/24",
    );
    let facts = NodeFacts {
        system_hostname: Some("node-a".into()),
        frr_router_id: None,
        vxlan_source: None,
        local_bridges: Default::default(),
    };
    let d = desired_state(&w.snapshot(), &config(), &facts).unwrap();
    assert_eq!(announced(&d), ["172.24.4.10"]);
}

#[test]
fn unknown_addresses_expose_neutron_cidrs_without_a_neighbour() {
    let mut w = World::new();
    w.vm(
        "cfgdrive",
        "neutron-pub",
        "compute-1",
        "unknown",
        "172.24.4.30/24",
    );
    let d = run(&w, &config());
    assert_eq!(announced(&d), ["172.24.4.30"]);
    assert!(d.to_node().neighbours.is_empty());
}

#[test]
fn vlan_provider_network_gets_a_vlan_device_and_wires_through_it() {
    let mut w = World::new();
    let ln = w.nb["Logical_Switch_Port"].keys().next().unwrap().clone();
    w.nb.get_mut("Logical_Switch_Port").unwrap()[&ln]["tag"] = json!(100);
    w.vm(
        "vm1",
        "neutron-pub",
        "compute-1",
        "fa:16:3e:11:11:11 172.24.4.10",
        "172.24.4.10/24",
    );
    let d = run(&w, &config());
    assert_eq!(d.bridges[0].vlans[0].dev.as_str(), "br-ex.100");
    assert_eq!(
        d.exposed[&ip("172.24.4.10")]
            .wiring
            .as_ref()
            .unwrap()
            .target
            .dev
            .as_str(),
        "br-ex.100"
    );
    let n = d.to_node();
    assert!(has_line(&n, "net.ipv4.conf.br-ex/100.proxy_arp"));
    assert!(n
        .addresses
        .keys()
        .any(|a| a.dev.as_str() == "br-ex.100" && a.net.to_string() == "169.254.1.100/32"));
}

#[test]
fn base_wiring_covers_every_bridge_mapping_even_without_ports() {
    let mut w = World::new();
    w.ovs_ext[2].1 = "physnet1:br-ex,bad-entry,physnet2:br-two".into();
    let d = run(&w, &config());
    let n = d.to_node();
    assert_eq!(
        n.bridge_tables
            .iter()
            .map(|b| b.as_str())
            .collect::<Vec<_>>(),
        ["br-ex", "br-two"]
    );
    // br-two is the third entry: its addresses use index 3.
    assert!(n
        .addresses
        .keys()
        .any(|a| a.dev.as_str() == "br-two" && a.net.to_string() == "169.254.3.3/32"));
    // Only br-ex has a provnet patch port: MAC-tweak flows for it, ip and ipv6.
    assert_eq!(n.flows.len(), 2);
    assert_eq!(
        n.routes.len(),
        4,
        "a v4 and a v6 default route per bridge table"
    );
}

#[test]
fn gateway_port_hosted_here_is_exposed_with_the_lrp_mac() {
    let mut w = World::new();
    w.gateway("sys-1");
    let d = run(&w, &config());
    assert_eq!(announced(&d), ["172.24.4.100", "2001:db8::100"]);
    let e = &d.exposed[&ip("172.24.4.100")];
    assert_eq!(e.class, Class::Gateway);
    assert_eq!(
        e.wiring.as_ref().unwrap().lladdr.unwrap().to_string(),
        "fa:16:3e:aa:aa:01"
    );
    let mut w2 = World::new();
    w2.gateway("sys-2");
    assert!(run(&w2, &config()).exposed.is_empty());
}

fn tenant_world() -> World {
    let mut w = World::new();
    w.gateway("sys-1");
    w.tenant_net("neutron-priv", "10.0.0.1/24 2620:52:0:10::1/64", &[]);
    w.vm(
        "tvm",
        "neutron-priv",
        "compute-2",
        "fa:16:3e:33:33:33 10.0.0.5 2620:52:0:10::5",
        "10.0.0.5/24 2620:52:0:10::5/64",
    );
    w
}

#[test]
fn tenant_subnet_host_method_routes_the_subnet_and_announces_vm_ips() {
    let mut c = config();
    c.default.expose_tenant_networks = true;
    let d = run(&tenant_world(), &c);
    assert_eq!(d.tenant_subnets.len(), 2);
    let s4 = &d.tenant_subnets[0];
    assert_eq!(s4.rule_dst.to_string(), "10.0.0.1/24");
    assert_eq!(s4.net.to_string(), "10.0.0.0/24");
    assert_eq!(s4.via, Some(ip("172.24.4.100")));
    assert!(!s4.vrf_route);
    assert_eq!(d.tenant_subnets[1].via, Some(ip("2001:db8::100")));
    assert_eq!(d.exposed[&ip("10.0.0.5")].class, Class::TenantVm);
    assert!(d.exposed[&ip("10.0.0.5")].wiring.is_none());
    assert!(d.exposed.contains_key(&ip("2620:52:0:10::5")));
}

#[test]
fn tenant_subnet_method_adds_a_vrf_route_and_no_vm_ips() {
    let mut c = config();
    c.default.expose_tenant_networks = true;
    c.default.advertisement_method_tenant_networks = AdvertisementMethod::Subnet;
    let d = run(&tenant_world(), &c);
    assert_eq!(d.tenant_subnets[0].rule_dst.to_string(), "10.0.0.0/24");
    assert!(d.tenant_subnets[0].vrf_route);
    assert!(!d.exposed.contains_key(&ip("10.0.0.5")));
    let n = d.to_node();
    assert!(n
        .routes
        .keys()
        .any(|r| r.table == obgp_netmodel::TableRef::Id(10)
            && r.dev.as_ref().map(|d| d.as_str()) == Some("bgp-nic")));
    assert!(d.frr_config.unwrap().contains("redistribute kernel"));
}

#[test]
fn tenant_vms_are_not_announced_when_tenant_exposure_is_off() {
    // Upstream would still announce the GUA VM IP here (docs/defects.md).
    let d = run(&tenant_world(), &config());
    assert!(d.tenant_subnets.is_empty());
    assert_eq!(announced(&d), ["172.24.4.100", "2001:db8::100"]);
}

#[test]
fn ipv6_gua_only_exposes_only_global_ipv6_subnets_and_ips() {
    let mut c = config();
    c.default.expose_ipv6_gua_tenant_networks = true;
    let mut w = tenant_world();
    w.tenant_net("neutron-ula", "10.0.1.1/24 fd00:10::1/64", &[]);
    w.vm(
        "uvm",
        "neutron-ula",
        "compute-2",
        "fa:16:3e:33:33:34 10.0.1.5 fd00:10::5",
        "10.0.1.5/24 fd00:10::5/64",
    );
    let d = run(&w, &c);
    let subnets: Vec<String> = d
        .tenant_subnets
        .iter()
        .map(|s| s.rule_dst.to_string())
        .collect();
    assert_eq!(subnets, ["2620:52:0:10::1/64"]);
    assert_eq!(
        announced(&d),
        ["172.24.4.100", "2001:db8::100", "2620:52:0:10::5"]
    );
}

#[test]
fn require_snat_disabled_skips_subnets_behind_snat() {
    let mut c = config();
    c.default.expose_tenant_networks = true;
    c.default.require_snat_disabled_for_tenant_networks = true;
    let mut w = tenant_world();
    let snat = w.row(
        "NAT",
        json!({"type": "snat", "external_ip": "172.24.4.100", "logical_ip": "10.0.0.0/24"}),
    );
    w.router(&[snat]);
    let d = run(&w, &c);
    // The IPv4 subnet has SNAT, the IPv6 one does not.
    let subnets: Vec<String> = d
        .tenant_subnets
        .iter()
        .map(|s| s.rule_dst.to_string())
        .collect();
    assert_eq!(subnets, ["2620:52:0:10::1/64"]);
}

#[test]
fn address_scopes_filter_each_family_of_subnets_and_vms() {
    let mut c = config();
    c.default.expose_tenant_networks = true;
    c.default.address_scopes = Some(vec!["scope-a".into()]);
    let mut w = World::new();
    w.gateway("sys-1");
    w.tenant_net(
        "neutron-a",
        "10.0.0.1/24 2620:52:0:10::1/64",
        &[("neutron:subnet_pool_addr_scope4", "scope-a")],
    );
    w.vm(
        "avm",
        "neutron-a",
        "compute-2",
        "fa:16:3e:33:33:33 10.0.0.5 2620:52:0:10::5",
        "",
    );
    w.tenant_net(
        "neutron-b",
        "10.0.1.1/24",
        &[("neutron:subnet_pool_addr_scope4", "scope-b")],
    );
    w.vm(
        "bvm",
        "neutron-b",
        "compute-2",
        "fa:16:3e:33:33:34 10.0.1.5",
        "",
    );
    let d = run(&w, &c);
    let subnets: Vec<String> = d
        .tenant_subnets
        .iter()
        .map(|s| s.rule_dst.to_string())
        .collect();
    assert_eq!(subnets, ["10.0.0.1/24"]);
    assert_eq!(announced(&d), ["10.0.0.5", "172.24.4.100", "2001:db8::100"]);
}

fn fip_world(vm_chassis: &str, external_mac: bool) -> World {
    let mut w = World::new();
    let gw = w.gateway("sys-1");
    w.tenant_net("neutron-priv", "10.0.0.1/24", &[]);
    w.row(
        "Logical_Switch_Port",
        json!({"name": "fvm", "up": true, "addresses": "fa:16:3e:33:33:33 10.0.0.5",
               "options": ["map", [["requested-chassis", vm_chassis]]],
               "external_ids": ["map", [["neutron:network_name", "neutron-priv"], ["neutron:port_fip", "172.24.4.50"]]]}),
    );
    let mut nat = json!({"type": "dnat_and_snat", "external_ip": "172.24.4.50", "logical_ip": "10.0.0.5",
                         "logical_port": "fvm", "gateway_port": ["uuid", gw],
                         "external_ids": ["map", [["neutron:fip_network_id", "pub"]]]});
    if external_mac {
        nat["external_mac"] = json!("fa:16:3e:22:22:22");
    }
    let nat = w.row("NAT", nat);
    w.router(&[nat]);
    // The provider switch is named neutron-<fip_network_id>.
    let pub_ls = w.nb["Logical_Switch"].keys().next().unwrap().clone();
    w.nb.get_mut("Logical_Switch").unwrap()[&pub_ls]["name"] = json!("neutron-pub");
    w
}

#[test]
fn distributed_fip_of_a_local_vm_is_exposed_with_the_external_mac() {
    let mut w = fip_world("compute-1", true);
    w.distributed(true);
    let d = run(&w, &config());
    let e = &d.exposed[&ip("172.24.4.50")];
    assert_eq!(e.class, Class::Fip);
    assert_eq!(
        e.wiring.as_ref().unwrap().lladdr.unwrap().to_string(),
        "fa:16:3e:22:22:22"
    );
    // The VM's own tenant IP is not announced (tenant exposure is off).
    assert!(!d.exposed.contains_key(&ip("10.0.0.5")));
    let mut remote = fip_world("compute-2", true);
    remote.distributed(true);
    assert!(!run(&remote, &config())
        .exposed
        .contains_key(&ip("172.24.4.50")));
}

#[test]
fn centralized_fip_follows_the_gateway_with_the_lrp_mac() {
    let mut w = fip_world("compute-2", false);
    w.distributed(false);
    let d = run(&w, &config());
    let e = &d.exposed[&ip("172.24.4.50")];
    assert_eq!(
        e.wiring.as_ref().unwrap().lladdr.unwrap().to_string(),
        "fa:16:3e:aa:aa:01"
    );
}

#[test]
fn fip_mode_switches_with_nb_global_fip_distributed() {
    let mut central = fip_world("compute-2", false);
    central.distributed(false);
    assert!(run(&central, &config())
        .exposed
        .contains_key(&ip("172.24.4.50")));
    let mut distributed = fip_world("compute-2", false);
    distributed.distributed(true);
    assert!(!run(&distributed, &config())
        .exposed
        .contains_key(&ip("172.24.4.50")));
    // Absent flag means distributed.
    let absent = fip_world("compute-2", false);
    assert!(!run(&absent, &config())
        .exposed
        .contains_key(&ip("172.24.4.50")));
}

fn lb_world(vip: &str, vip_net: &str, vip_fip: bool) -> World {
    let mut w = World::new();
    w.gateway("sys-1");
    w.tenant_net("neutron-priv", "10.0.0.1/24", &[]);
    w.row(
        "Logical_Switch_Port",
        json!({"name": "vip-port", "addresses": "fa:16:3e:44:44:44",
               "external_ids": ["map", [["neutron:network_name", vip_net]]]}),
    );
    let mut ext = vec![
        json!(["neutron:vip", vip]),
        json!(["neutron:vip_port_id", "vip-port"]),
        json!(["lr_ref", "neutron-r1"]),
    ];
    if vip_fip {
        ext.push(json!(["neutron:vip_fip", "172.24.4.60"]));
        w.row(
            "NAT",
            json!({"type": "dnat_and_snat", "external_ip": "172.24.4.60", "logical_ip": vip,
                   "logical_port": "vip-port", "external_mac": "fa:16:3e:66:66:66",
                   "external_ids": ["map", [["neutron:fip_network_id", "pub"]]]}),
        );
    }
    w.row(
        "Load_Balancer",
        json!({"name": "octavia-lb", "vips": ["map", [[format!("{vip}:80"), "10.0.0.9:80"]]],
               "external_ids": ["map", ext]}),
    );
    w
}

#[test]
fn lb_vip_on_a_provider_network_is_wired_without_a_neighbour() {
    let d = run(&lb_world("172.24.4.80", "neutron-pub", false), &config());
    let e = &d.exposed[&ip("172.24.4.80")];
    assert_eq!(e.class, Class::Lb);
    assert!(e.wiring.as_ref().unwrap().lladdr.is_none());
}

#[test]
fn lb_vip_on_a_tenant_network_is_announced_in_host_mode() {
    let mut c = config();
    c.default.expose_tenant_networks = true;
    let d = run(&lb_world("10.0.0.80", "neutron-priv", false), &c);
    assert!(d.exposed[&ip("10.0.0.80")].wiring.is_none());
    // Without tenant exposure the tenant VIP stays private.
    assert!(
        !run(&lb_world("10.0.0.80", "neutron-priv", false), &config())
            .exposed
            .contains_key(&ip("10.0.0.80"))
    );
}

#[test]
fn lb_vip_fip_is_exposed_with_the_nat_external_mac() {
    let d = run(&lb_world("10.0.0.80", "neutron-priv", true), &config());
    let e = &d.exposed[&ip("172.24.4.60")];
    assert_eq!(
        e.wiring.as_ref().unwrap().lladdr.unwrap().to_string(),
        "fa:16:3e:66:66:66"
    );
}

#[test]
fn port_forwarding_fips_are_exposed_on_the_gateway_bridge_ipv4_and_ipv6() {
    let mut w = World::new();
    w.gateway("sys-1");
    for (name, key) in [
        ("pf-floatingip-f1-tcp", "172.24.4.70:2222"),
        ("pf-floatingip-f2-udp", "[2001:db8::70]:53"),
    ] {
        w.row(
            "Load_Balancer",
            json!({"name": name, "vips": ["map", [[key, "10.0.0.5:22"]]],
                   "external_ids": ["map", [["neutron:router_name", "neutron-r1"]]]}),
        );
    }
    let d = run(&w, &config());
    for fip in ["172.24.4.70", "2001:db8::70"] {
        let e = &d.exposed[&ip(fip)];
        assert_eq!(e.class, Class::Lb);
        assert!(e.wiring.as_ref().unwrap().lladdr.is_none());
    }
    let mut remote = World::new();
    remote.gateway("sys-2");
    remote.row(
        "Load_Balancer",
        json!({"name": "pf-floatingip-f1-tcp", "vips": ["map", [["172.24.4.70:2222", "10.0.0.5:22"]]],
               "external_ids": ["map", [["neutron:router_name", "neutron-r1"]]]}),
    );
    assert!(run(&remote, &config()).exposed.is_empty());
}

#[test]
fn frr_router_id_comes_from_config_then_from_frr() {
    let w = World::new();
    let d = run(&w, &config());
    assert!(d.frr_config.unwrap().contains("bgp router-id 192.0.2.1"));
    let mut c = config();
    c.default.bgp_router_id = None;
    let facts = NodeFacts {
        system_hostname: None,
        frr_router_id: Some("198.51.100.7".into()),
        vxlan_source: None,
        local_bridges: Default::default(),
    };
    let d = desired_state(&w.snapshot(), &c, &facts).unwrap();
    assert!(d.frr_config.unwrap().contains("bgp router-id 198.51.100.7"));
    let d = desired_state(&w.snapshot(), &c, &NodeFacts::default()).unwrap();
    assert!(d.frr_config.is_none());
    assert!(d.notes.iter().any(|n| n.contains("router-id")));
}

#[test]
fn other_drivers_are_a_typed_unsupported_error() {
    // ovn_bgp_driver (SB, underlay), ovn_evpn_driver,
    // ovn_stretched_l2_bgp_driver and every NB method are implemented;
    // the SB driver with another method is not.
    let mut c = config();
    c.default.driver = Driver::OvnStretchedL2BgpDriver;
    let d = desired_state(&World::new().snapshot(), &c, &NodeFacts::default()).unwrap();
    assert!(d.exposed.is_empty() && d.bridges.is_empty());
    // The ovn mode is computed: without `ovn-bridge-mappings-bgp` the
    // local cluster has no segment, which a note says.
    let mut c = config();
    c.default.exposing_method = ExposingMethod::Ovn;
    let d = desired_state(&World::new().snapshot(), &c, &NodeFacts::default()).unwrap();
    let cluster = d.local_cluster.as_ref().expect("the local cluster");
    assert!(cluster.segments.is_empty() && d.bridges.is_empty());
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("ovn-bridge-mappings-bgp is unset")),
        "{:?}",
        d.notes
    );
    // `dynamic` and `l2vni` are built (tests/dynamic.rs, tests/l2vni.rs),
    // without evpn_local_ip too (dynamic skips the networks needing it).
    let mut c = config();
    c.default.exposing_method = ExposingMethod::Dynamic;
    let d = desired_state(&World::new().snapshot(), &c, &NodeFacts::default()).unwrap();
    assert!(d.dynamic.is_some() && d.evpn.is_some());
    let mut c = config();
    c.default.driver = Driver::OvnBgpDriver;
    c.default.exposing_method = ExposingMethod::Dynamic;
    assert!(matches!(
        desired_state(&World::new().snapshot(), &c, &NodeFacts::default()),
        Err(DesiredError::Unsupported { .. })
    ));
}

#[test]
fn the_nb_vrf_mode_needs_evpn_local_ip() {
    let mut c = config();
    c.default.exposing_method = ExposingMethod::Vrf;
    let e = desired_state(&World::new().snapshot(), &c, &NodeFacts::default()).unwrap_err();
    assert!(e.to_string().contains("evpn_local_ip"), "{e}");
}

#[test]
fn invalid_device_names_and_asn_in_config_are_errors_naming_the_option() {
    let mut c = config();
    c.default.bgp_nic = "bgp nic;".into();
    let e = desired_state(&World::new().snapshot(), &c, &NodeFacts::default()).unwrap_err();
    assert!(e.to_string().contains("bgp_nic"), "{e}");
    let mut c = config();
    c.default.bgp_as = "64999\nexit".into();
    let e = desired_state(&World::new().snapshot(), &c, &NodeFacts::default()).unwrap_err();
    assert!(e.to_string().contains("bgp_AS"), "{e}");
}

#[test]
fn missing_patch_port_still_exposes_the_ip_and_defers_the_flow() {
    let mut w = World::new();
    let ln = w.nb["Logical_Switch_Port"].keys().next().unwrap().clone();
    w.nb.get_mut("Logical_Switch_Port").unwrap()[&ln]["name"] = json!("provnet-2");
    w.vm(
        "vm1",
        "neutron-pub",
        "compute-1",
        "fa:16:3e:11:11:11 172.24.4.10",
        "172.24.4.10/24",
    );
    let d = run(&w, &config());
    assert_eq!(announced(&d), ["172.24.4.10"]);
    assert!(d
        .notes
        .iter()
        .any(|n| n.contains("patch-provnet-2-to-br-int")));
}

#[test]
fn garbled_rows_are_skipped_and_the_rest_is_still_computed() {
    let mut w = World::new();
    w.vm(
        "good",
        "neutron-pub",
        "compute-1",
        "fa:16:3e:11:11:11 172.24.4.10",
        "172.24.4.10/24",
    );
    w.vm(
        "badmac",
        "neutron-pub",
        "compute-1",
        "fa:16:3e:11:11 172.24.4.11",
        "172.24.4.11/24",
    );
    w.vm(
        "badip",
        "neutron-pub",
        "compute-1",
        "fa:16:3e:11:11:12 172.24.4.300",
        "172.24.4.12/24",
    );
    w.vm(
        "badcidr",
        "neutron-pub",
        "compute-1",
        "fa:16:3e:11:11:13 172.24.4.13",
        "not-a-cidr",
    );
    w.row(
        "Logical_Router_Port",
        json!({"name": "lrp-bad", "mac": "nope", "status": ["map", [["hosting-chassis", "sys-1"]]]}),
    );
    let s = w.snapshot();
    assert_eq!(s.warnings().len(), 4, "{:?}", s.warnings());
    let d = desired_state(&s, &config(), &NodeFacts::default()).unwrap();
    assert_eq!(announced(&d), ["172.24.4.10"]);
}

#[test]
fn the_same_ip_asked_twice_keeps_the_first_class_and_the_last_wiring() {
    // Centralized mode, but the NAT also carries an external MAC and the VM is
    // bound here: upstream exposes it from the gateway pass (LRP MAC), then
    // from the bound-port pass (external MAC), and `ip neigh replace` keeps
    // the latter.
    let mut w = fip_world("compute-1", true);
    w.distributed(false);
    let d = run(&w, &config());
    let e = &d.exposed[&ip("172.24.4.50")];
    assert_eq!(e.class, Class::Fip);
    assert_eq!(
        e.wiring.as_ref().unwrap().lladdr.unwrap().to_string(),
        "fa:16:3e:22:22:22"
    );
    assert_eq!(
        d.to_node()
            .neighbours
            .keys()
            .filter(|n| n.dst == ip("172.24.4.50"))
            .count(),
        1
    );
}

#[test]
fn incomplete_nat_and_lb_rows_are_skipped_with_a_note_not_a_failure() {
    let mut w = World::new();
    let gw = w.gateway("sys-1");
    w.distributed(false);
    // A centralized FIP without neutron:fip_network_id (upstream: KeyError, sync aborts).
    let nat = w.row(
        "NAT",
        json!({"type": "dnat_and_snat", "external_ip": "172.24.4.51", "logical_ip": "10.0.0.6",
               "logical_port": "nope", "gateway_port": ["uuid", gw]}),
    );
    w.router(&[nat]);
    // An Octavia LB matched through neutron:router_name but without lr_ref
    // (upstream: KeyError, sync aborts).
    w.row(
        "Load_Balancer",
        json!({"name": "octavia", "vips": ["map", [["172.24.4.90:80", "10.0.0.9:80"]]],
               "external_ids": ["map", [["neutron:router_name", "neutron-r1"], ["neutron:vip", "172.24.4.90"],
                                        ["neutron:vip_port_id", "vip-port"]]]}),
    );
    let d = run(&w, &config());
    assert_eq!(announced(&d), ["172.24.4.100", "2001:db8::100"]);
    assert!(
        d.notes.iter().any(|n| n.contains("fip_network_id")),
        "{:?}",
        d.notes
    );
    assert!(
        d.notes.iter().any(|n| n.contains("lr_ref")),
        "{:?}",
        d.notes
    );
}

#[test]
fn an_lb_referencing_the_router_twice_is_exposed_once() {
    let mut w = lb_world("172.24.4.80", "neutron-pub", false);
    let lb = w.nb["Load_Balancer"].keys().next().unwrap().clone();
    let ext = w.nb.get_mut("Load_Balancer").unwrap()[&lb]["external_ids"][1]
        .as_array_mut()
        .unwrap();
    ext.push(json!(["neutron:router_name", "neutron-r1"]));
    let d = run(&w, &config());
    assert_eq!(d.exposed[&ip("172.24.4.80")].class, Class::Lb);
    assert_eq!(d.exposed.len(), 3, "gateway v4, v6 and the VIP");
}

#[test]
fn nonsense_addresses_are_never_exposed_and_each_is_noted_with_its_row() {
    let mut w = World::new();
    let port = w.vm(
        "vm-odd",
        "neutron-pub",
        "compute-1",
        "fa:16:3e:11:11:11 172.24.4.10 127.0.0.1 0.0.0.0 255.255.255.255 224.0.0.5 169.254.1.1 fe80::1 ff02::1 ::1",
        "172.24.4.10/24",
    );
    let d = run(&w, &config());
    assert_eq!(announced(&d), ["172.24.4.10"]);
    for odd in [
        "127.0.0.1",
        "0.0.0.0",
        "255.255.255.255",
        "224.0.0.5",
        "169.254.1.1",
        "fe80::1",
        "ff02::1",
        "::1",
    ] {
        assert!(
            d.notes
                .iter()
                .any(|n| n.contains(&port) && n.contains(&format!(" {odd} is a "))),
            "{odd}: {:#?}",
            d.notes
        );
    }
    // Nothing of them reaches the node either.
    let n = d.to_node();
    assert!(
        !has_line(&n, "127.0.0.1") && !has_line(&n, "0.0.0.0/32"),
        "{n:?}"
    );
}

#[test]
fn a_port_with_a_broadcast_or_multicast_mac_is_not_exposed() {
    for mac in [
        "ff:ff:ff:ff:ff:ff",
        "01:00:5e:00:00:05",
        "00:00:00:00:00:00",
    ] {
        let mut w = World::new();
        let port = w.vm(
            "vm-badmac",
            "neutron-pub",
            "compute-1",
            &format!("{mac} 172.24.4.20"),
            "172.24.4.20/24",
        );
        let d = run(&w, &config());
        assert!(d.exposed.is_empty(), "{mac}: {:?}", announced(&d));
        assert!(
            d.notes.iter().any(|n| n.contains(&port) && n.contains(mac)),
            "{mac}: {:#?}",
            d.notes
        );
        assert!(!has_line(&d.to_node(), mac), "{mac}");
    }
}
