//! The soak's churn driver: the bench's own objects in the NB (dual-stack
//! provider-network VM ports, routers with a gateway port on the provider
//! network, centralized FIPs on them), the random operations on them, and
//! the bookkeeping of which of their addresses must be on the node.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use anyhow::{bail, Context, Result};
use obgp_testbed::ovsdb::OvsdbServer;
use obgp_topogen::Rng;
use serde_json::{json, Value};

/// The n-th IPv6 address of the bench's VM ports (fd28:30::/64).
pub fn pool_ip6(n: u32) -> Ipv6Addr {
    Ipv6Addr::new(
        0xfd28,
        0x30,
        0,
        0,
        0,
        0,
        (n >> 16) as u16,
        (n & 0xffff) as u16 + 1,
    )
}

/// The n-th address of a /16-ish pool starting at `base`, skipping the .0
/// and .251-.255 last octets (so no address looks like a broadcast).
pub fn pool_ip(base: [u8; 2], n: u32) -> Ipv4Addr {
    let third = n / 250;
    Ipv4Addr::new(
        base[0],
        base[1] + (third / 256) as u8,
        (third % 256) as u8,
        (n % 250 + 1) as u8,
    )
}

/// A bench-owned VM port on the provider network (dual-stack).
pub struct Port {
    pub name: String,
    pub uuid: String,
    pub ip: Ipv4Addr,
    pub ip6: Ipv6Addr,
    pub mac: String,
    /// Bound here (`host-000`) rather than on `host-001`.
    pub home: bool,
}

/// A bench-owned router with its gateway port on the provider network.
pub struct Router {
    pub name: String,
    pub lrp: String,
    pub lrp_uuid: String,
    pub gw_ip: Ipv4Addr,
    /// Its gateway is hosted here (`chassis-000`).
    pub home: bool,
}

/// A centralized FIP (dnat_and_snat NAT) on one of the bench's routers.
pub struct Fip {
    pub uuid: String,
    pub ip: Ipv4Addr,
    pub router: usize,
}

/// The churn driver and its bookkeeping of what the NB holds.
pub struct Churn {
    pub rng: Rng,
    pub provider: String,
    pub provider_id: String,
    /// Tenant VM ports of the topology (name, IP): the FIPs' logical ports.
    pub tenant_vms: Vec<(String, String)>,
    pub ports: Vec<Port>,
    pub routers: Vec<Router>,
    pub fips: Vec<Fip>,
    pub next_port: u32,
    pub next_fip: u32,
    pub max_ports: usize,
    pub counts: BTreeMap<&'static str, u64>,
}

pub fn map(pairs: &[(&str, String)]) -> Value {
    json!([
        "map",
        pairs.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()
    ])
}

/// The uuid an insert's result names.
pub fn inserted_uuid(results: &[Value], i: usize) -> Result<String> {
    results
        .get(i)
        .and_then(|r| r["uuid"][1].as_str())
        .map(String::from)
        .with_context(|| format!("no uuid in the insert result {:?}", results.get(i)))
}

pub fn host(home: bool) -> &'static str {
    if home {
        "host-000"
    } else {
        "host-001"
    }
}

impl Churn {
    pub fn new(nb: &OvsdbServer, provider: String, seed: u64) -> Result<Churn> {
        let provider_id = provider
            .strip_prefix("neutron-")
            .context("the provider switch is named neutron-<id>")?
            .to_string();
        // The topology's tenant VMs (no FIP of their own), for logical_port.
        let mut tenant_vms = Vec::new();
        for row in nb.select_all("Logical_Switch_Port")? {
            let eids: BTreeMap<String, String> = row["external_ids"][1]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|kv| Some((kv[0].as_str()?.into(), kv[1].as_str()?.into())))
                .collect();
            let tenant = eids.get("neutron:device_owner").map(String::as_str)
                == Some("compute:nova")
                && eids.get("neutron:network_name") != Some(&provider)
                && !eids.contains_key("neutron:port_fip");
            let ip = row["addresses"]
                .as_str()
                .and_then(|a| a.split_whitespace().nth(1))
                .map(String::from);
            if let (true, Some(name), Some(ip)) = (tenant, row["name"].as_str(), ip) {
                tenant_vms.push((name.to_string(), ip));
            }
            if tenant_vms.len() >= 500 {
                break;
            }
        }
        if tenant_vms.is_empty() {
            bail!("the topology has no tenant VM port without a FIP");
        }
        Ok(Churn {
            rng: Rng(seed ^ 0x50a4),
            provider,
            provider_id,
            tenant_vms,
            ports: Vec::new(),
            routers: Vec::new(),
            fips: Vec::new(),
            next_port: 0,
            next_fip: 0,
            max_ports: 1000,
            counts: BTreeMap::new(),
        })
    }

    /// The bench-owned addresses that must be on `bgp-nic`.
    pub fn expected(&self) -> BTreeSet<IpAddr> {
        let ports = self.ports.iter().filter(|p| p.home);
        let ports = ports.flat_map(|p| [IpAddr::V4(p.ip), IpAddr::V6(p.ip6)]);
        let gws = self.routers.iter().filter(|r| r.home).map(|r| r.gw_ip);
        let fips = self
            .fips
            .iter()
            .filter(|f| self.routers[f.router].home)
            .map(|f| f.ip);
        ports.chain(gws.chain(fips).map(IpAddr::V4)).collect()
    }

    pub fn add_router(&mut self, nb: &OvsdbServer) -> Result<()> {
        let r = self.routers.len();
        let name = format!("soak-router-{r}");
        let lrp = format!("lrp-soak-gw-{r}");
        let gw_ip = Ipv4Addr::new(172, 28, 0, r as u8 + 1);
        let results = nb.transact(&[
            json!({"op": "insert", "table": "Logical_Router_Port", "uuid-name": "lrp", "row": {
                "name": lrp, "mac": format!("fa:16:3f:28:00:{r:02x}"),
                "networks": ["set", [format!("{gw_ip}/12")]],
                "status": map(&[("hosting-chassis", "chassis-000".into())]),
                "external_ids": map(&[("neutron:is_ext_gw", "True".into()),
                    ("neutron:network_name", self.provider.clone()),
                    ("neutron:router_name", name.clone())])}}),
            json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "lsp", "row": {
                "name": format!("soak-gw-{r}"), "type": "router", "addresses": "router",
                "up": true, "enabled": true,
                "options": map(&[("router-port", lrp.clone()), ("nat-addresses", "router".into())]),
                "external_ids": map(&[("neutron:cidrs", format!("{gw_ip}/12")),
                    ("neutron:device_owner", "network:router_gateway".into()),
                    ("neutron:network_name", self.provider.clone())])}}),
            json!({"op": "insert", "table": "Logical_Router", "row": {
                "name": name, "ports": ["set", [["named-uuid", "lrp"]]], "enabled": true,
                "external_ids": map(&[("neutron:gw_network_id", self.provider_id.clone())])}}),
            json!({"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", self.provider]],
                "mutations": [["ports", "insert", ["set", [["named-uuid", "lsp"]]]]]}),
        ])?;
        let lrp_uuid = inserted_uuid(&results, 0)?;
        self.routers.push(Router {
            name,
            lrp,
            lrp_uuid,
            gw_ip,
            home: true,
        });
        Ok(())
    }

    pub fn port_eids(&self, p: &Port) -> Value {
        map(&[
            ("neutron:cidrs", format!("{}/12 {}/64", p.ip, p.ip6)),
            ("neutron:device_id", format!("soak-dev-{}", p.name)),
            ("neutron:device_owner", "compute:nova".into()),
            ("neutron:host_id", host(p.home).into()),
            ("neutron:network_name", self.provider.clone()),
        ])
    }

    pub fn create_port(&mut self, nb: &OvsdbServer) -> Result<()> {
        let n = self.next_port;
        self.next_port += 1;
        let mut p = Port {
            name: format!("soak-vm-{n}"),
            uuid: String::new(),
            ip: pool_ip([172, 30], n),
            ip6: pool_ip6(n),
            mac: format!(
                "fa:16:3f:{:02x}:{:02x}:{:02x}",
                (n >> 16) & 255,
                (n >> 8) & 255,
                n & 255
            ),
            home: true,
        };
        let addr = format!("{} {} {}", p.mac, p.ip, p.ip6);
        let results = nb.transact(&[
            json!({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": "p", "row": {
                "name": p.name, "type": "", "addresses": addr, "port_security": addr,
                "up": true, "enabled": true,
                "options": map(&[("requested-chassis", host(true).into())]),
                "external_ids": self.port_eids(&p)}}),
            json!({"op": "mutate", "table": "Logical_Switch", "where": [["name", "==", self.provider]],
                "mutations": [["ports", "insert", ["set", [["named-uuid", "p"]]]]]}),
        ])?;
        p.uuid = inserted_uuid(&results, 0)?;
        self.ports.push(p);
        Ok(())
    }

    pub fn delete_port(&mut self, nb: &OvsdbServer) -> Result<()> {
        let i = self.rng.below(self.ports.len());
        let p = self.ports.swap_remove(i);
        nb.transact(&[json!({"op": "mutate", "table": "Logical_Switch",
            "where": [["name", "==", self.provider]],
            "mutations": [["ports", "delete", ["set", [["uuid", p.uuid]]]]]})])?;
        Ok(())
    }

    pub fn migrate_port(&mut self, nb: &OvsdbServer) -> Result<()> {
        let i = self.rng.below(self.ports.len());
        self.ports[i].home = !self.ports[i].home;
        let p = &self.ports[i];
        nb.transact(&[json!({"op": "update", "table": "Logical_Switch_Port",
            "where": [["name", "==", p.name]],
            "row": {"options": map(&[("requested-chassis", host(p.home).into())]),
                "external_ids": self.port_eids(p)}})])?;
        Ok(())
    }

    pub fn fip_on(&mut self, nb: &OvsdbServer) -> Result<()> {
        let router = self.rng.below(self.routers.len());
        let (vm, vm_ip) = self.tenant_vms[self.rng.below(self.tenant_vms.len())].clone();
        let ip = pool_ip([172, 29], self.next_fip);
        self.next_fip += 1;
        let r = &self.routers[router];
        let results = nb.transact(&[
            json!({"op": "insert", "table": "NAT", "uuid-name": "nat", "row": {
                "type": "dnat_and_snat", "external_ip": ip.to_string(), "logical_ip": vm_ip,
                "logical_port": vm, "gateway_port": ["uuid", r.lrp_uuid],
                "external_ids": map(&[("neutron:fip_network_id", self.provider_id.clone()),
                    ("neutron:fip_port_id", vm.clone()), ("neutron:router_name", r.name.clone())])}}),
            json!({"op": "mutate", "table": "Logical_Router", "where": [["name", "==", r.name]],
                "mutations": [["nat", "insert", ["set", [["named-uuid", "nat"]]]]]}),
        ])?;
        let uuid = inserted_uuid(&results, 0)?;
        self.fips.push(Fip { uuid, ip, router });
        Ok(())
    }

    pub fn fip_off(&mut self, nb: &OvsdbServer) -> Result<()> {
        let i = self.rng.below(self.fips.len());
        let f = self.fips.swap_remove(i);
        nb.transact(&[json!({"op": "mutate", "table": "Logical_Router",
            "where": [["name", "==", self.routers[f.router].name]],
            "mutations": [["nat", "delete", ["set", [["uuid", f.uuid]]]]]})])?;
        Ok(())
    }

    pub fn move_gateway(&mut self, nb: &OvsdbServer) -> Result<()> {
        let i = self.rng.below(self.routers.len());
        self.routers[i].home = !self.routers[i].home;
        let r = &self.routers[i];
        let chassis = if r.home { "chassis-000" } else { "chassis-001" };
        nb.transact(&[json!({"op": "update", "table": "Logical_Router_Port",
            "where": [["name", "==", r.lrp]],
            "row": {"status": map(&[("hosting-chassis", chassis.into())])}})])?;
        Ok(())
    }

    /// One random churn operation; returns its kind.
    pub fn step(&mut self, nb: &OvsdbServer) -> Result<&'static str> {
        // Weights: create 25, delete 20, migrate 20, FIP on 15, FIP off 12,
        // gateway move 8; the port pool stays between 1/4 and all of
        // `max_ports`.
        let roll = self.rng.below(100);
        let kind = match roll {
            _ if self.ports.len() < self.max_ports / 4 => "create",
            0..=24 if self.ports.len() < self.max_ports => "create",
            0..=44 => "delete",
            45..=64 => "migrate",
            65..=79 => "fip on",
            80..=91 if !self.fips.is_empty() => "fip off",
            80..=91 => "fip on",
            _ => "gateway move",
        };
        match kind {
            "create" => self.create_port(nb),
            "delete" => self.delete_port(nb),
            "migrate" => self.migrate_port(nb),
            "fip on" => self.fip_on(nb),
            "fip off" => self.fip_off(nb),
            _ => self.move_gateway(nb),
        }
        .with_context(|| format!("churn op `{kind}`"))?;
        *self.counts.entry(kind).or_default() += 1;
        Ok(kind)
    }
}
