//! A deterministic, Neutron-shaped OVN Northbound topology, as OVSDB
//! transactions: the shape of upstream's `gen_ovn_topology.py`, in Rust.
//!
//! At scale N (VM ports):
//! - one provider network (`neutron-<uuid>` switch with a `localnet` port,
//!   `network_name=physnet1`, 172.16.0.0/12);
//! - `provider_vm_ratio` of the VMs directly on it, the rest on /24 tenant
//!   networks (`vms_per_net` each, `10.<t/256>.<t%256>.0/24`, with
//!   DHCP_Options), `nets_per_router` networks per router;
//! - each router: a gateway LRP on the provider network with
//!   `status:hosting-chassis`, the matching `router` LSP, one SNAT per
//!   subnet, `dnat_and_snat` FIPs for `fip_ratio` of its VMs (the VM's LSP
//!   gets `neutron:port_fip`);
//! - `lb_ratio * N` Octavia-shaped load balancers on tenant networks, every
//!   second one with a FIP;
//! - VM ports carry Neutron's external_ids and `requested-chassis`.
//!
//! "This" node is `host-<local_host>` / `chassis-<local_host>` (default
//! `host-000`). A VM is local to it with probability `local_fraction`
//! (default 1/hosts); other VMs and router
//! gateways are spread over the remaining hosts. Everything derives from
//! `seed`: the same parameters give byte-identical transactions.

use std::net::Ipv4Addr;

use serde_json::{json, Value};

/// Generator parameters (the Python script's options).
#[derive(Clone, Debug)]
pub struct Params {
    pub vms: usize,
    pub seed: u64,
    pub hosts: usize,
    /// Fraction of VMs (and router gateways) on the local host.
    pub local_fraction: f64,
    /// Index of the local host: `host-NNN` / `chassis-NNN` (< `hosts`).
    pub local_host: usize,
    pub vms_per_net: usize,
    pub nets_per_router: usize,
    pub provider_vm_ratio: f64,
    pub fip_ratio: f64,
    pub lb_ratio: f64,
    /// NB_Global `neutron:fip-distributed`.
    pub distributed: bool,
    /// Operations per transaction (a router's operations are never split).
    pub batch_ops: usize,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            vms: 1000,
            seed: 1,
            hosts: 10,
            local_fraction: 0.1,
            local_host: 0,
            vms_per_net: 50,
            nets_per_router: 2,
            provider_vm_ratio: 0.1,
            fip_ratio: 0.2,
            lb_ratio: 0.01,
            distributed: false,
            batch_ops: 5000,
        }
    }
}

/// splitmix64: small, fast, and stable across versions (unlike a crate's
/// default RNG), so a seed names the same topology forever.
/// splitmix64: the generator's randomness, also for tests that want a
/// seeded history of their own.
pub struct Rng(pub u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn uuid(&mut self) -> String {
        let v = (u128::from(self.next()) << 64) | u128::from(self.next());
        // Version 4, RFC 4122 variant, like uuid.UUID(int=..., version=4).
        let v = (v & !(0xf << 76)) | (0x4 << 76);
        let v = (v & !(0x3 << 62)) | (0x2 << 62);
        obgp_ovsdb_data::Uuid(v).to_string()
    }
}

fn omap(pairs: &[(&str, String)]) -> Value {
    json!([
        "map",
        pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()
    ])
}

fn oset(items: Vec<Value>) -> Value {
    json!(["set", items])
}

fn named(n: &str) -> Value {
    json!(["named-uuid", n])
}

struct Fip {
    id: String,
    ip: Ipv4Addr,
    mac: String,
}

struct Vm {
    id: String,
    dev: String,
    mac: String,
    ip: Ipv4Addr,
    prefix: u8,
    host: usize,
    fip: Option<Fip>,
}

struct Net {
    idx: usize,
    id: String,
    subnet: String,
    cidr: (Ipv4Addr, u8),
    rif_port: String,
    rif_mac: String,
    vms: Vec<Vm>,
}

struct Lb {
    id: String,
    vip: Ipv4Addr,
    vip_port: String,
    vip_mac: String,
    net: usize,
    members: Vec<Ipv4Addr>,
    fip: Option<Fip>,
}

struct Router {
    idx: usize,
    id: String,
    gw_port: String,
    gw_mac: String,
    gw_ip: Ipv4Addr,
    chassis: usize,
    nets: Vec<Net>,
    lbs: Vec<Lb>,
}

/// Counts of what was generated, and how much of it is local to
/// the local host (`Params::local_host`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub vms: usize,
    pub provider_vms: usize,
    pub tenant_networks: usize,
    pub routers: usize,
    pub fips: usize,
    pub lbs: usize,
    pub local_vms: usize,
    pub local_routers: usize,
    /// Logical_Switch_Port rows in total (VMs, router ports, LB VIPs, localnet).
    pub logical_switch_ports: usize,
}

/// A generated topology.
pub struct Topology {
    params: Params,
    project: String,
    sg: String,
    provider_id: String,
    provnet_uuid: String,
    prov_dhcp: (String, String),
    routers: Vec<Router>,
    provider_vms: Vec<Vm>,
}

fn host_name(i: usize) -> String {
    format!("host-{i:03}")
}

fn chassis_name(i: usize) -> String {
    format!("chassis-{i:03}")
}

impl Topology {
    /// Builds the topology for `params`. Long (about 150 lines) on
    /// purpose: one pass draws every name, MAC and address from the seeded
    /// generators in a fixed order, which is what makes a seed's topology
    /// the same from run to run; read top to bottom, it is that order.
    pub fn generate(params: Params) -> Topology {
        let mut rng = Rng(params.seed);
        let hosts = params.hosts.max(1);
        let mut mac_i = 0u32;
        let mut mac = move || {
            mac_i += 1;
            format!(
                "fa:16:3e:{:02x}:{:02x}:{:02x}",
                (mac_i >> 16) & 255,
                (mac_i >> 8) & 255,
                mac_i & 255
            )
        };
        let mut prov_i = 10u32;
        let mut prov_ip = move || {
            let ip = Ipv4Addr::from(u32::from(Ipv4Addr::new(172, 16, 0, 0)) + prov_i);
            prov_i += 1;
            ip
        };
        // Local with probability local_fraction, else round robin over the
        // other hosts (all hosts when there is only one).
        let pick_host = |rng: &mut Rng, i: usize| {
            let local = params.local_host.min(hosts - 1);
            if hosts == 1 || rng.unit() < params.local_fraction {
                local
            } else {
                // Skip the local host in the round robin.
                let other = i % (hosts - 1);
                if other >= local {
                    other + 1
                } else {
                    other
                }
            }
        };
        let project = rng.uuid();
        let sg = rng.uuid();
        let provider_id = rng.uuid();
        let n = params.vms;
        let n_prov = ((n as f64) * params.provider_vm_ratio).round() as usize;
        let n_ten = n - n_prov.min(n);
        let per_net = params.vms_per_net.clamp(1, 180);
        let t_nets = n_ten.div_ceil(per_net);
        let r_count = t_nets.div_ceil(params.nets_per_router.max(1));
        let mut routers: Vec<Router> = (0..r_count)
            .map(|r| {
                let chassis = pick_host(&mut rng, r);
                Router {
                    idx: r,
                    id: rng.uuid(),
                    gw_port: rng.uuid(),
                    gw_mac: mac(),
                    gw_ip: prov_ip(),
                    chassis,
                    nets: Vec::new(),
                    lbs: Vec::new(),
                }
            })
            .collect();
        let mut vm_idx = 0;
        for t in 0..t_nets {
            let cnt = per_net.min(n_ten - t * per_net);
            let base = Ipv4Addr::new(10, (t / 256) as u8, (t % 256) as u8, 0);
            let mut net = Net {
                idx: t,
                id: rng.uuid(),
                subnet: rng.uuid(),
                cidr: (base, 24),
                rif_port: rng.uuid(),
                rif_mac: mac(),
                vms: Vec::new(),
            };
            for k in 0..cnt {
                let host = pick_host(&mut rng, vm_idx);
                let mut vm = Vm {
                    id: rng.uuid(),
                    dev: rng.uuid(),
                    mac: mac(),
                    ip: Ipv4Addr::from(u32::from(base) + 10 + k as u32),
                    prefix: 24,
                    host,
                    fip: None,
                };
                vm_idx += 1;
                if rng.unit() < params.fip_ratio {
                    vm.fip = Some(Fip {
                        id: rng.uuid(),
                        ip: prov_ip(),
                        mac: mac(),
                    });
                }
                net.vms.push(vm);
            }
            routers[t / params.nets_per_router.max(1)].nets.push(net);
        }
        let provider_vms: Vec<Vm> = (0..n_prov)
            .map(|_| {
                let host = pick_host(&mut rng, vm_idx);
                vm_idx += 1;
                Vm {
                    id: rng.uuid(),
                    dev: rng.uuid(),
                    mac: mac(),
                    ip: prov_ip(),
                    prefix: 12,
                    host,
                    fip: None,
                }
            })
            .collect();
        let n_lb = if t_nets > 0 {
            ((n as f64) * params.lb_ratio).round() as usize
        } else {
            0
        };
        for i in 0..n_lb {
            let t = (i * 7919) % t_nets;
            let r = t / params.nets_per_router.max(1);
            let net = routers[r]
                .nets
                .iter()
                .find(|x| x.idx == t)
                .expect("net of its router");
            let base = u32::from(net.cidr.0);
            let lb = Lb {
                id: rng.uuid(),
                vip: Ipv4Addr::from(base + 200 + ((i / t_nets) % 50) as u32),
                vip_port: rng.uuid(),
                vip_mac: mac(),
                net: t,
                members: net.vms.iter().take(3).map(|v| v.ip).collect(),
                fip: (i % 2 == 0).then(|| Fip {
                    id: rng.uuid(),
                    ip: prov_ip(),
                    mac: mac(),
                }),
            };
            routers[r].lbs.push(lb);
        }
        let provnet_uuid = rng.uuid();
        let prov_dhcp = (rng.uuid(), mac());
        Topology {
            params,
            project,
            sg,
            provider_id,
            provnet_uuid,
            prov_dhcp,
            routers,
            provider_vms,
        }
    }

    /// What was generated.
    pub fn summary(&self) -> Summary {
        let local = self.params.local_host.min(self.params.hosts.max(1) - 1);
        let tenant_vms = self
            .routers
            .iter()
            .flat_map(|r| &r.nets)
            .flat_map(|n| &n.vms);
        let all_vms: Vec<&Vm> = tenant_vms.chain(&self.provider_vms).collect();
        let nets: usize = self.routers.iter().map(|r| r.nets.len()).sum();
        let lbs: usize = self.routers.iter().map(|r| r.lbs.len()).sum();
        Summary {
            vms: all_vms.len(),
            provider_vms: self.provider_vms.len(),
            tenant_networks: nets,
            routers: self.routers.len(),
            fips: all_vms.iter().filter(|v| v.fip.is_some()).count(),
            lbs,
            local_vms: all_vms.iter().filter(|v| v.host == local).count(),
            local_routers: self.routers.iter().filter(|r| r.chassis == local).count(),
            // VMs + a router port per network + a gateway port per router +
            // an LB VIP port per LB + the localnet port.
            logical_switch_ports: all_vms.len() + nets + self.routers.len() + lbs + 1,
        }
    }

    /// The provider network's Logical_Switch name.
    pub fn provider_switch(&self) -> String {
        format!("neutron-{}", self.provider_id)
    }

    fn vm_lsp(&self, vm: &Vm, net_id: &str) -> Value {
        let mut eids = vec![
            ("neutron:cidrs", format!("{}/{}", vm.ip, vm.prefix)),
            ("neutron:device_id", vm.dev.clone()),
            ("neutron:device_owner", "compute:nova".to_string()),
            ("neutron:host_id", host_name(vm.host)),
            ("neutron:mtu", String::new()),
            ("neutron:network_name", format!("neutron-{net_id}")),
            ("neutron:port_capabilities", String::new()),
            ("neutron:port_name", String::new()),
            ("neutron:project_id", self.project.clone()),
            ("neutron:revision_number", "4".to_string()),
            ("neutron:security_group_ids", self.sg.clone()),
            ("neutron:subnet_pool_addr_scope4", String::new()),
            ("neutron:subnet_pool_addr_scope6", String::new()),
            ("neutron:vnic_type", "normal".to_string()),
        ];
        if let Some(f) = &vm.fip {
            eids.push(("neutron:port_fip", f.ip.to_string()));
        }
        let addr = format!("{} {}", vm.mac, vm.ip);
        json!({
            "name": vm.id, "type": "", "addresses": addr, "port_security": addr,
            "up": true, "enabled": true,
            "options": omap(&[("requested-chassis", host_name(vm.host)), ("mcast_flood_reports", "true".into())]),
            "external_ids": omap(&eids),
        })
    }

    fn base_ops(&self) -> Vec<Value> {
        vec![
            json!({"op": "delete", "table": "NB_Global", "where": []}),
            json!({"op": "insert", "table": "NB_Global", "row": {
                "external_ids": omap(&[("neutron:fip-distributed", if self.params.distributed { "True" } else { "False" }.into())]),
                "options": omap(&[("mac_prefix", "5a:d1:e2".into()), ("northd_probe_interval", "5000".into())])}}),
            json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "ln", "row": {
                "name": format!("provnet-{}", self.provnet_uuid), "type": "localnet", "addresses": "unknown",
                "options": omap(&[("network_name", "physnet1".into()), ("mcast_flood", "false".into()), ("mcast_flood_reports", "true".into())])}}),
            json!({"op": "insert", "table": "Logical_Switch", "row": {
                "name": self.provider_switch(), "ports": oset(vec![named("ln")]),
                "other_config": omap(&[("mcast_snoop", "false".into()), ("fdb_age_threshold", "0".into())]),
                "external_ids": omap(&[("neutron:network_name", "public".into()), ("neutron:mtu", "1500".into()),
                    ("neutron:provnet-network-type", "flat".into()), ("neutron:revision_number", "2".into()),
                    ("neutron:availability_zone_hints", String::new())])}}),
            json!({"op": "insert", "table": "DHCP_Options", "row": {
                "cidr": "172.16.0.0/12",
                "options": omap(&[("lease_time", "43200".into()), ("mtu", "1500".into()), ("router", "172.16.0.1".into()),
                    ("server_id", "172.16.0.1".into()), ("server_mac", self.prov_dhcp.1.clone())]),
                "external_ids": omap(&[("subnet_id", self.prov_dhcp.0.clone()), ("neutron:revision_number", "0".into())])}}),
        ]
    }

    /// Operations for one router with its networks, VMs, NATs and LBs.
    /// `uuid-name`s are prefixed with the router index so several routers
    /// can share one transaction. Long (about 170 lines) on purpose: the
    /// rows as Neutron writes them, one JSON literal each, in the order
    /// they name each other.
    fn router_ops(&self, r: &Router) -> Vec<Value> {
        let p = |s: &str| format!("r{}_{s}", r.idx);
        let prov_ls = self.provider_switch();
        let router_name = format!("neutron-{}", r.id);
        let gw_lrp = format!("lrp-{}", r.gw_port);
        let mut ops = Vec::new();
        let mut lr_ports = vec![named(&p("gwlrp"))];
        let mut lr_nats = Vec::new();
        let mut lr_lbs = Vec::new();
        ops.push(json!({"op": "insert", "table": "Logical_Router_Port", "uuid-name": p("gwlrp"), "row": {
            "name": gw_lrp, "mac": r.gw_mac, "networks": oset(vec![json!(format!("{}/12", r.gw_ip))]),
            "status": omap(&[("hosting-chassis", chassis_name(r.chassis))]),
            "external_ids": omap(&[("neutron:is_ext_gw", "True".into()), ("neutron:network_name", prov_ls.clone()),
                ("neutron:revision_number", "5".into()), ("neutron:router_name", r.id.clone()),
                ("neutron:subnet_ids", format!("{}-gw", r.id))])}}));
        ops.push(json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": p("gwlsp"), "row": {
            "name": r.gw_port, "type": "router", "addresses": "router", "up": true, "enabled": true,
            "options": omap(&[("router-port", gw_lrp.clone()), ("nat-addresses", "router".into()),
                ("exclude-lb-vips-from-garp", "true".into())]),
            "external_ids": omap(&[("neutron:cidrs", format!("{}/12", r.gw_ip)), ("neutron:device_id", r.id.clone()),
                ("neutron:device_owner", "network:router_gateway".into()), ("neutron:network_name", prov_ls.clone()),
                ("neutron:port_name", String::new()), ("neutron:project_id", String::new()),
                ("neutron:revision_number", "5".into()), ("neutron:vnic_type", "normal".into())])}}));
        for net in &r.nets {
            let j = net.idx;
            let ls_name = format!("neutron-{}", net.id);
            let rif_ip = Ipv4Addr::from(u32::from(net.cidr.0) + 1);
            let cidr = format!("{}/{}", net.cidr.0, net.cidr.1);
            let rif_lrp = format!("lrp-{}", net.rif_port);
            let dh = p(&format!("dh{j}"));
            ops.push(json!({"op": "insert", "table": "DHCP_Options", "uuid-name": dh, "row": {
                "cidr": cidr,
                "options": omap(&[("dns_server", "{8.8.8.8}".into()), ("lease_time", "43200".into()), ("mtu", "1442".into()),
                    ("router", rif_ip.to_string()), ("server_id", rif_ip.to_string()), ("server_mac", net.rif_mac.clone())]),
                "external_ids": omap(&[("subnet_id", net.subnet.clone()), ("neutron:revision_number", "0".into())])}}));
            ops.push(json!({"op": "insert", "table": "Logical_Router_Port", "uuid-name": p(&format!("rl{j}")), "row": {
                "name": rif_lrp, "mac": net.rif_mac, "networks": oset(vec![json!(format!("{rif_ip}/24"))]),
                "external_ids": omap(&[("neutron:is_ext_gw", "False".into()), ("neutron:network_name", ls_name.clone()),
                    ("neutron:revision_number", "3".into()), ("neutron:router_name", r.id.clone()),
                    ("neutron:subnet_ids", net.subnet.clone())])}}));
            lr_ports.push(named(&p(&format!("rl{j}"))));
            let mut ls_ports = vec![named(&p(&format!("rs{j}")))];
            ops.push(json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": p(&format!("rs{j}")), "row": {
                "name": net.rif_port, "type": "router", "addresses": "router", "up": true, "enabled": true,
                "options": omap(&[("router-port", rif_lrp.clone())]),
                "external_ids": omap(&[("neutron:cidrs", format!("{rif_ip}/24")), ("neutron:device_id", r.id.clone()),
                    ("neutron:device_owner", "network:router_interface".into()), ("neutron:network_name", ls_name.clone()),
                    ("neutron:port_name", String::new()), ("neutron:project_id", self.project.clone()),
                    ("neutron:revision_number", "3".into()), ("neutron:vnic_type", "normal".into())])}}));
            ops.push(
                json!({"op": "insert", "table": "NAT", "uuid-name": p(&format!("sn{j}")), "row": {
                "type": "snat", "external_ip": r.gw_ip.to_string(), "logical_ip": cidr,
                "gateway_port": named(&p("gwlrp"))}}),
            );
            lr_nats.push(named(&p(&format!("sn{j}"))));
            for (k, vm) in net.vms.iter().enumerate() {
                let vn = p(&format!("v{j}_{k}"));
                let mut row = self.vm_lsp(vm, &net.id);
                row["dhcpv4_options"] = named(&dh);
                ops.push(json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": vn, "row": row}));
                ls_ports.push(named(&vn));
            }
            for (i, lb) in r.lbs.iter().enumerate().filter(|(_, b)| b.net == j) {
                let ln = p(&format!("lv{j}_{i}"));
                let mut eids = vec![
                    ("neutron:cidrs", format!("{}/24", lb.vip)),
                    ("neutron:device_id", format!("lb-{}", lb.id)),
                    ("neutron:device_owner", "Octavia".into()),
                    ("neutron:network_name", ls_name.clone()),
                    ("neutron:port_name", format!("ovn-lb-vip-{}", lb.id)),
                    ("neutron:project_id", self.project.clone()),
                    ("neutron:revision_number", "2".into()),
                    ("neutron:vnic_type", "normal".into()),
                ];
                if let Some(f) = &lb.fip {
                    eids.push(("neutron:port_fip", f.ip.to_string()));
                }
                ops.push(json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": ln, "row": {
                    "name": lb.vip_port, "type": "", "addresses": format!("{} {}", lb.vip_mac, lb.vip),
                    "up": false, "enabled": true, "external_ids": omap(&eids)}}));
                ls_ports.push(named(&ln));
            }
            ops.push(json!({"op": "insert", "table": "Logical_Switch", "row": {
                "name": ls_name, "ports": oset(ls_ports),
                "other_config": omap(&[("mcast_snoop", "false".into()), ("vlan-passthru", "false".into())]),
                "external_ids": omap(&[("neutron:network_name", format!("net-{j}")), ("neutron:mtu", "1442".into()),
                    ("neutron:revision_number", "2".into()), ("neutron:availability_zone_hints", String::new())])}}));
        }
        let fip_nat = |ops: &mut Vec<Value>,
                       name: String,
                       f: &Fip,
                       logical_ip: Ipv4Addr,
                       port: &str| {
            let external_mac = if self.params.distributed {
                json!(f.mac)
            } else {
                oset(vec![])
            };
            ops.push(json!({"op": "insert", "table": "NAT", "uuid-name": name, "row": {
                "type": "dnat_and_snat", "external_ip": f.ip.to_string(), "logical_ip": logical_ip.to_string(),
                "external_mac": external_mac, "logical_port": port, "gateway_port": named(&p("gwlrp")),
                "options": omap(&[("stateless", "false".into())]),
                "external_ids": omap(&[("neutron:fip_external_mac", f.mac.clone()), ("neutron:fip_id", f.id.clone()),
                    ("neutron:fip_network_id", self.provider_id.clone()), ("neutron:fip_port_id", port.to_string()),
                    ("neutron:revision_number", "1".into()), ("neutron:router_name", router_name.clone())])}}));
        };
        let mut fi = 0;
        for vm in r.nets.iter().flat_map(|n| &n.vms) {
            if let Some(f) = &vm.fip {
                let name = p(&format!("fn{fi}"));
                fip_nat(&mut ops, name.clone(), f, vm.ip, &vm.id);
                lr_nats.push(named(&name));
                fi += 1;
            }
        }
        for (i, lb) in r.lbs.iter().enumerate() {
            let members = lb
                .members
                .iter()
                .map(|m| format!("{m}:80"))
                .collect::<Vec<_>>()
                .join(",");
            let mut vips = vec![(format!("{}:80", lb.vip), members.clone())];
            let ls_of_lb = r
                .nets
                .iter()
                .find(|n| n.idx == lb.net)
                .map(|n| format!("neutron-{}", n.id))
                .unwrap_or_default();
            let mut eids = vec![
                ("enabled", "True".to_string()),
                ("lr_ref", router_name.clone()),
                ("ls_refs", json!({ls_of_lb.clone(): 1}).to_string()),
                ("neutron:member_status", "{}".into()),
                ("neutron:vip", lb.vip.to_string()),
                ("neutron:vip_port_id", lb.vip_port.clone()),
                ("octavia:provider", "ovn".into()),
            ];
            if let Some(f) = &lb.fip {
                eids.push(("neutron:vip_fip", f.ip.to_string()));
                vips.push((format!("{}:80", f.ip), members));
                let name = p(&format!("lf{i}"));
                fip_nat(&mut ops, name.clone(), f, lb.vip, &lb.vip_port);
                lr_nats.push(named(&name));
            }
            let vips: Vec<(&str, String)> =
                vips.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
            ops.push(json!({"op": "insert", "table": "Load_Balancer", "uuid-name": p(&format!("lb{i}")), "row": {
                "name": lb.id, "protocol": "tcp", "vips": omap(&vips),
                "options": omap(&[("hairpin_snat_ip", lb.vip.to_string())]), "external_ids": omap(&eids)}}));
            lr_lbs.push(named(&p(&format!("lb{i}"))));
            ops.push(json!({"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", ls_of_lb]],
                "mutations": [["load_balancer", "insert", oset(vec![named(&p(&format!("lb{i}")))])]]}));
        }
        ops.push(json!({"op": "insert", "table": "Logical_Router", "row": {
            "name": router_name, "ports": oset(lr_ports), "nat": oset(lr_nats), "load_balancer": oset(lr_lbs),
            "enabled": true,
            "options": omap(&[("always_learn_from_arp_request", "false".into()), ("dynamic_neigh_routers", "true".into())]),
            "external_ids": omap(&[("neutron:availability_zone_hints", String::new()), ("neutron:gw_network_id", self.provider_id.clone()),
                ("neutron:gw_port_id", r.gw_port.clone()), ("neutron:revision_number", "4".into()),
                ("neutron:router_name", format!("router-{}", r.idx))])}}));
        ops.push(
            json!({"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", prov_ls]],
            "mutations": [["ports", "insert", oset(vec![named(&p("gwlsp"))])]]}),
        );
        ops
    }

    fn provider_vm_ops(&self, vms: &[Vm], base: usize) -> Vec<Value> {
        let mut ops = Vec::with_capacity(vms.len() + 1);
        let mut ports = Vec::with_capacity(vms.len());
        for (k, vm) in vms.iter().enumerate() {
            let n = format!("p{}", base + k);
            ops.push(
                json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": n,
                "row": self.vm_lsp(vm, &self.provider_id)}),
            );
            ports.push(named(&n));
        }
        ops.push(json!({"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", self.provider_switch()]],
            "mutations": [["ports", "insert", oset(ports)]]}));
        ops
    }

    /// The whole topology as a sequence of OVN_Northbound transactions
    /// (operation lists, without the database name), to run in order on an
    /// empty database.
    pub fn nb_transactions(&self) -> Vec<Vec<Value>> {
        let batch = self.params.batch_ops.max(1);
        let mut txns = vec![self.base_ops()];
        let mut ops = Vec::new();
        for r in &self.routers {
            ops.extend(self.router_ops(r));
            if ops.len() >= batch {
                txns.push(std::mem::take(&mut ops));
            }
        }
        for (i, chunk) in self.provider_vms.chunks(batch).enumerate() {
            ops.extend(self.provider_vm_ops(chunk, i * batch));
            txns.push(std::mem::take(&mut ops));
        }
        if !ops.is_empty() {
            txns.push(ops);
        }
        txns
    }

    /// Loads the topology into an empty OVN_Northbound database through
    /// `session`. Returns the number of transactions.
    pub async fn load(&self, session: &obgp_ovsdb::Session) -> obgp_ovsdb::Result<usize> {
        let txns = self.nb_transactions();
        let n = txns.len();
        for ops in txns {
            session.transact("OVN_Northbound", ops).await?;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
