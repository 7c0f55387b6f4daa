//! `ovn_stretched_l2_bgp_driver`: the VRF routes computed from small
//! hand-made OVN_Southbound snapshots (plain values, no I/O).

use std::collections::BTreeMap;

use obgp_config::{Config, Driver};
use obgp_desired::{desired_state, explain, Desired, Finding, NodeFacts, Query};
use obgp_netmodel::{scope, Class, TableRef};
use obgp_ovn::Snapshot;
use serde_json::{json, Map, Value};

const HERE: &str = "sys-1";
const ELSEWHERE: &str = "sys-2";

/// This node is chassis `sys-1`; datapath `pub` is the provider network.
struct World {
    sb: BTreeMap<&'static str, Map<String, Value>>,
    chassis: BTreeMap<&'static str, String>,
    datapaths: BTreeMap<String, String>,
    n: u32,
}

impl World {
    fn new() -> World {
        let mut w = World {
            sb: BTreeMap::new(),
            chassis: BTreeMap::new(),
            datapaths: BTreeMap::new(),
            n: 0,
        };
        for c in [HERE, ELSEWHERE] {
            let u = w.row("Chassis", json!({"name": c, "hostname": c}));
            w.chassis.insert(c, u);
        }
        w.port(
            "pub",
            json!({"logical_port": "provnet-1", "type": "localnet", "mac": "unknown",
                   "options": ["map", [["network_name", "physnet1"]]]}),
            None,
        );
        w
    }

    fn row(&mut self, table: &'static str, row: Value) -> String {
        self.n += 1;
        let u = format!("00000000-0000-4000-8000-{:012x}", self.n);
        self.sb.entry(table).or_default().insert(u.clone(), row);
        u
    }

    fn datapath(&mut self, name: &str) -> String {
        if let Some(u) = self.datapaths.get(name) {
            return u.clone();
        }
        let u = self.row(
            "Datapath_Binding",
            json!({"external_ids": ["map", [["name", name]]]}),
        );
        self.datapaths.insert(name.to_string(), u.clone());
        u
    }

    fn port(&mut self, dp: &str, mut row: Value, chassis: Option<&str>) -> String {
        row["datapath"] = json!(["uuid", self.datapath(dp)]);
        if let Some(c) = chassis {
            row["chassis"] = json!(["uuid", self.chassis[c]]);
        }
        self.row("Port_Binding", row)
    }

    /// Router `r`'s gateway `gw` with `mac` hosted on `chassis`; `ext` are
    /// the external_ids of its provider-side port. Returns the cr-lrp uuid.
    fn gateway(
        &mut self,
        r: &str,
        gw: &str,
        mac: &str,
        chassis: Option<&str>,
        ext: Value,
    ) -> String {
        let cr = self.port(
            r,
            json!({"logical_port": format!("cr-lrp-{gw}"), "type": "chassisredirect",
                   "mac": mac, "options": ["map", [["distributed-port", format!("lrp-{gw}")]]]}),
            chassis,
        );
        self.port(
            r,
            json!({"logical_port": format!("lrp-{gw}"), "type": "patch", "mac": mac,
                   "options": ["map", [["peer", gw]]]}),
            None,
        );
        self.port(
            "pub",
            json!({"logical_port": gw, "type": "patch", "mac": "router", "external_ids": ext,
                   "options": ["map", [["peer", format!("lrp-{gw}")]]]}),
            None,
        );
        cr
    }

    /// A router interface `lrp-<id>` of router `r` on tenant datapath
    /// `net`; `ext` are the switch-side port's external_ids. Returns the
    /// lrp's uuid.
    fn interface(&mut self, r: &str, net: &str, id: &str, mac: &str, ext: Value) -> String {
        let lrp = self.port(
            r,
            json!({"logical_port": format!("lrp-{id}"), "type": "patch", "mac": mac,
                   "options": ["map", [["peer", id]]]}),
            None,
        );
        self.port(
            net,
            json!({"logical_port": id, "type": "patch", "mac": "router", "external_ids": ext,
                   "options": ["map", [["peer", format!("lrp-{id}")]]]}),
            None,
        );
        lrp
    }

    fn remove(&mut self, uuid: &str) {
        self.sb.get_mut("Port_Binding").unwrap().remove(uuid);
    }

    fn snapshot(&self) -> Snapshot {
        let sb: Map<String, Value> = self
            .sb
            .iter()
            .map(|(t, rows)| (t.to_string(), Value::Object(rows.clone())))
            .collect();
        Snapshot::from_wire(&json!({
            "OVN_Southbound": sb,
            "Open_vSwitch": {
                "Open_vSwitch": {"99999999-0000-4000-8000-000000000001": {
                    "external_ids": ["map", [["system-id", HERE],
                                             ["ovn-bridge-mappings", "physnet1:br-ex"]]]}}
            }
        }))
        .expect("well-formed fixture")
    }
}

const GW: &str = "fa:16:3e:aa:aa:01 172.24.4.100/24 2001:db8::100/64";
const RI: &str = "fa:16:3e:bb:bb:01 10.0.0.1/24 2620:52:0:10::1/64";

fn config(scopes: Option<&[&str]>) -> Config {
    let mut c = Config::default();
    c.default.driver = Driver::OvnStretchedL2BgpDriver;
    c.default.bgp_router_id = Some("192.0.2.1".into());
    c.default.address_scopes = scopes.map(|s| s.iter().map(|x| x.to_string()).collect());
    c
}

fn run(w: &World, c: &Config) -> Desired {
    desired_state(&w.snapshot(), c, &NodeFacts::default()).expect("supported")
}

/// The VRF routes as `<dst> <via or link>`.
fn routes(d: &Desired) -> Vec<String> {
    d.vrf_routes
        .values()
        .map(|r| match r.via {
            Some(v) => format!("{} via {v}", r.net),
            None => format!("{} link", r.net),
        })
        .collect()
}

fn scopes(s4: Option<&str>, s6: Option<&str>) -> Value {
    let mut m = Vec::new();
    if let Some(s) = s4 {
        m.push(json!(["neutron:subnet_pool_addr_scope4", s]));
    }
    if let Some(s) = s6 {
        m.push(json!(["neutron:subnet_pool_addr_scope6", s]));
    }
    json!(["map", m])
}

const DUAL_STACK: [&str; 4] = [
    "10.0.0.0/24 via 172.24.4.100",
    "172.24.4.0/24 link",
    "2001:db8::/64 link",
    "2620:52:0:10::/64 via 2001:db8::100",
];

#[test]
fn dual_stack_subnets_are_routed_through_a_gateway_hosted_elsewhere() {
    let mut w = World::new();
    let cr = w.gateway("r", "gw", GW, Some(ELSEWHERE), scopes(None, None));
    let lrp = w.interface("r", "net1", "ri1", RI, scopes(None, None));
    let d = run(&w, &config(None));
    assert_eq!(routes(&d), DUAL_STACK);
    let tenant = &d.vrf_routes[&"10.0.0.0/24".parse().unwrap()];
    assert_eq!(tenant.class, Class::Subnet);
    let rows: Vec<String> = tenant.rows.iter().map(|r| r.uuid.to_string()).collect();
    assert_eq!(rows, [lrp, cr]);

    let node = d.to_node();
    assert!(node.rules.is_empty() && node.addresses.is_empty() && node.flows.is_empty());
    assert!(node.bridge_tables.is_empty());
    let mut seen = Vec::new();
    for r in node.routes.keys() {
        assert_eq!(r.table, TableRef::Id(10));
        assert_eq!(r.dev.as_ref().unwrap().as_str(), "bgp-nic");
        seen.push((r.dst.unwrap().to_string(), r.scope));
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            ("10.0.0.0/24".to_string(), scope::UNIVERSE),
            ("172.24.4.0/24".to_string(), scope::LINK),
            ("2001:db8::/64".to_string(), scope::UNIVERSE),
            ("2620:52:0:10::/64".to_string(), scope::UNIVERSE),
        ]
    );
    let frr = d.frr_config.unwrap();
    assert!(frr.contains("redistribute kernel") && !frr.contains("connected"));
}

#[test]
fn an_unbound_gateway_and_one_hosted_here_are_routed_alike() {
    for chassis in [None, Some(HERE)] {
        let mut w = World::new();
        w.gateway("r", "gw", GW, chassis, scopes(None, None));
        w.interface("r", "net1", "ri1", RI, scopes(None, None));
        assert_eq!(routes(&run(&w, &config(None))), DUAL_STACK, "{chassis:?}");
    }
}

#[test]
fn a_scope_mismatch_drops_that_family_only() {
    let mut w = World::new();
    w.gateway(
        "r",
        "gw",
        GW,
        Some(ELSEWHERE),
        scopes(Some("s1"), Some("s1")),
    );
    w.interface("r", "net1", "ri1", RI, scopes(Some("s2"), Some("s1")));
    let d = run(&w, &config(Some(&["s1", "s2"])));
    assert_eq!(
        routes(&d),
        ["2001:db8::/64 link", "2620:52:0:10::/64 via 2001:db8::100"]
    );
    // explain names the mismatch for the refused subnet.
    let e = explain(
        &w.snapshot(),
        &config(Some(&["s1", "s2"])),
        &NodeFacts::default(),
        &Query::Port("lrp-ri1".into()),
    )
    .unwrap();
    assert!(
        e.to_string().contains("differs from the gateway's s1"),
        "{e}"
    );
}

#[test]
fn a_scope_not_allowed_is_not_routed_and_unset_scopes_route_everything() {
    let mut w = World::new();
    w.gateway("r", "gw", GW, Some(ELSEWHERE), scopes(Some("s2"), None));
    w.interface("r", "net1", "ri1", RI, scopes(Some("s2"), None));
    assert!(routes(&run(&w, &config(Some(&["s1"])))).is_empty());
    // address_scopes unset: upstream announces whatever the scopes say.
    assert_eq!(routes(&run(&w, &config(None))), DUAL_STACK);
    // Set but empty reads as unset (oslo's empty list).
    assert_eq!(routes(&run(&w, &config(Some(&[])))), DUAL_STACK);
}

#[test]
fn several_routers_share_the_provider_route_and_keep_their_own_next_hop() {
    let mut w = World::new();
    let cr1 = w.gateway(
        "r1",
        "gw1",
        "fa:16:3e:aa:aa:01 172.24.4.100/24",
        Some(HERE),
        scopes(None, None),
    );
    let cr2 = w.gateway(
        "r2",
        "gw2",
        "fa:16:3e:aa:aa:02 172.24.4.101/24",
        None,
        scopes(None, None),
    );
    w.interface(
        "r1",
        "net1",
        "ri1",
        "fa:16:3e:bb:bb:01 10.0.0.1/24",
        scopes(None, None),
    );
    w.interface(
        "r2",
        "net2",
        "ri2",
        "fa:16:3e:bb:bb:02 10.1.0.1/24",
        scopes(None, None),
    );
    let d = run(&w, &config(None));
    assert_eq!(
        routes(&d),
        [
            "10.0.0.0/24 via 172.24.4.100",
            "10.1.0.0/24 via 172.24.4.101",
            "172.24.4.0/24 link"
        ]
    );
    let link = &d.vrf_routes[&"172.24.4.0/24".parse().unwrap()];
    let mut rows: Vec<String> = link.rows.iter().map(|r| r.uuid.to_string()).collect();
    rows.sort();
    let mut want = vec![cr1, cr2];
    want.sort();
    assert_eq!(rows, want);
}

#[test]
fn one_tenant_subnet_behind_two_routers_keeps_the_first_and_notes_the_other() {
    let mut w = World::new();
    w.gateway(
        "r1",
        "gw1",
        "fa:16:3e:aa:aa:01 172.24.4.100/24",
        None,
        scopes(None, None),
    );
    w.gateway(
        "r2",
        "gw2",
        "fa:16:3e:aa:aa:02 172.24.4.101/24",
        None,
        scopes(None, None),
    );
    w.interface(
        "r1",
        "net1",
        "ri1",
        "fa:16:3e:bb:bb:01 10.0.0.1/24",
        scopes(None, None),
    );
    w.interface(
        "r2",
        "net2",
        "ri2",
        "fa:16:3e:bb:bb:02 10.0.0.1/24",
        scopes(None, None),
    );
    let d = run(&w, &config(None));
    assert_eq!(
        routes(&d),
        ["10.0.0.0/24 via 172.24.4.100", "172.24.4.0/24 link"]
    );
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("VRF route 10.0.0.0/24") && n.contains("via 172.24.4.101")),
        "{:?}",
        d.notes
    );
}

#[test]
fn removing_the_router_interface_withdraws_its_subnet_and_the_provider_route() {
    let mut w = World::new();
    w.gateway("r", "gw", GW, Some(ELSEWHERE), scopes(None, None));
    let lrp = w.interface("r", "net1", "ri1", RI, scopes(None, None));
    let keep = w.interface(
        "r",
        "net2",
        "ri2",
        "fa:16:3e:bb:bb:02 10.9.0.1/24",
        scopes(None, None),
    );
    assert_eq!(routes(&run(&w, &config(None))).len(), 5);
    w.remove(&lrp);
    assert_eq!(
        routes(&run(&w, &config(None))),
        ["10.9.0.0/24 via 172.24.4.100", "172.24.4.0/24 link"]
    );
    w.remove(&keep);
    assert!(routes(&run(&w, &config(None))).is_empty());
}

#[test]
fn a_subnet_or_gateway_change_is_followed() {
    let mut w = World::new();
    let cr = w.gateway("r", "gw", GW, Some(ELSEWHERE), scopes(None, None));
    let lrp = w.interface(
        "r",
        "net1",
        "ri1",
        "fa:16:3e:bb:bb:01 10.0.0.1/24",
        scopes(None, None),
    );
    let pb = w.sb.get_mut("Port_Binding").unwrap();
    pb[&lrp]["mac"] = json!("fa:16:3e:bb:bb:01 10.0.0.1/24 10.5.0.1/24");
    // OVN changes the cr-lrp and the gateway's router port together.
    for row in pb.values_mut() {
        if row["logical_port"] == "lrp-gw" {
            row["mac"] = json!("fa:16:3e:aa:aa:09 198.51.100.7/25");
        }
    }
    pb[&cr]["mac"] = json!("fa:16:3e:aa:aa:09 198.51.100.7/25");
    assert_eq!(
        routes(&run(&w, &config(None))),
        [
            "10.0.0.0/24 via 198.51.100.7",
            "10.5.0.0/24 via 198.51.100.7",
            "198.51.100.0/25 link"
        ]
    );
}

#[test]
fn malformed_rows_are_skipped_with_their_uuid_and_the_rest_is_routed() {
    let mut w = World::new();
    w.gateway("r", "gw", GW, Some(ELSEWHERE), scopes(None, None));
    let bad = w.interface(
        "r",
        "net1",
        "ri1",
        "fa:16:3e:bb:bb:01 10.0.0.999/24",
        scopes(None, None),
    );
    w.interface(
        "r",
        "net2",
        "ri2",
        "fa:16:3e:bb:bb:02 10.9.0.1/24",
        scopes(None, None),
    );
    let bad_cr = w.gateway(
        "r2",
        "gw2",
        "zz:16:3e:aa:aa:02 172.24.4.101/24",
        None,
        scopes(None, None),
    );
    w.interface(
        "r2",
        "net3",
        "ri3",
        "fa:16:3e:bb:bb:03 10.3.0.1/24",
        scopes(None, None),
    );
    // An unannounceable gateway address is left out, its other one kept.
    w.gateway(
        "r3",
        "gw3",
        "fa:16:3e:aa:aa:03 127.0.0.1/8 2001:db8::103/64",
        None,
        scopes(None, None),
    );
    w.interface(
        "r3",
        "net4",
        "ri4",
        "fa:16:3e:bb:bb:04 10.4.0.1/24 2620:52:0:40::1/64",
        scopes(None, None),
    );
    let snap = w.snapshot();
    let warned: Vec<String> = snap.warnings().iter().map(ToString::to_string).collect();
    for u in [&bad, &bad_cr] {
        assert!(
            warned.iter().any(|m| m.contains(u.as_str())),
            "{u}: {warned:?}"
        );
    }
    let d = desired_state(&snap, &config(None), &NodeFacts::default()).unwrap();
    assert_eq!(
        routes(&d),
        [
            "10.9.0.0/24 via 172.24.4.100",
            "172.24.4.0/24 link",
            "2001:db8::/64 link",
            "2620:52:0:40::/64 via 2001:db8::103"
        ]
    );
    assert!(
        d.notes.iter().any(|n| n.contains("127.0.0.1")),
        "{:?}",
        d.notes
    );
}

#[test]
fn explain_answers_for_a_tenant_ip_and_a_gateway_ip() {
    let mut w = World::new();
    let cr = w.gateway("r", "gw", GW, Some(ELSEWHERE), scopes(None, None));
    let lrp = w.interface("r", "net1", "ri1", RI, scopes(None, None));
    let snap = w.snapshot();
    let c = config(None);
    let e = explain(&snap, &c, &NodeFacts::default(), &Query::parse("10.0.0.7")).unwrap();
    assert!(e.exposed(), "{e}");
    let routed: Vec<&Finding> = e
        .findings
        .iter()
        .filter(|f| matches!(f, Finding::Routed { .. }))
        .collect();
    let [Finding::Routed {
        subnet, via, rows, ..
    }] = routed[..]
    else {
        panic!("{e}");
    };
    assert_eq!(subnet.to_string(), "10.0.0.0/24");
    assert_eq!(via.unwrap().to_string(), "172.24.4.100");
    let uuids: Vec<&str> = rows.iter().map(|r| r.uuid.as_str()).collect();
    assert_eq!(uuids, [lrp.as_str(), cr.as_str()]);
    let e = explain(
        &snap,
        &c,
        &NodeFacts::default(),
        &Query::parse("172.24.4.100"),
    )
    .unwrap();
    assert!(e.exposed(), "{e}");
    assert!(e.to_string().contains("on-link"), "{e}");
    // The gateway hosted elsewhere is not a refusal in this mode.
    assert_eq!(e.reasons().count(), 0, "{e}");
}
