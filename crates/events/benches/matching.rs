//! Cost of filtering one OVSDB change through a driver's event classes.
//!
//! `cargo bench -p obgp-events --bench matching` prints the median and p99
//! time of `Filters::matching_change` per change for a stream of NB
//! Logical_Switch_Port updates (port up/down, FIP set, migration), against
//! an agent view of 50k exposed IPs.

use std::collections::{HashMap, HashSet};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use obgp_config::{Config, Driver};
use obgp_events::{AgentView, Filters, RowView};
use obgp_ovsdb_data::{Change, ChangeKind, Row, Uuid};
use serde_json::json;

struct View {
    exposed: HashMap<String, HashSet<String>>,
    providers: HashSet<String>,
    cr_lrps: HashSet<String>,
}

impl AgentView for View {
    fn chassis(&self) -> &str {
        "host-1"
    }
    fn chassis_id(&self) -> &str {
        "sys-1"
    }
    fn has_local_cr_lrps(&self) -> bool {
        !self.cr_lrps.is_empty()
    }
    fn is_local_cr_lrp(&self, router: Option<&str>) -> bool {
        router.is_some_and(|r| self.cr_lrps.contains(r))
    }
    fn is_local_lrp_network(&self, _ls: Option<&str>) -> bool {
        false
    }
    fn is_ip_exposed(&self, ls: Option<&str>, ips: &[&str]) -> bool {
        let Some(set) = ls.and_then(|l| self.exposed.get(l)) else {
            return false;
        };
        ips.iter().any(|ip| set.contains(*ip))
    }
    fn is_ls_provider(&self, ls: Option<&str>) -> bool {
        ls.is_some_and(|l| self.providers.contains(l))
    }
    fn distributed(&self) -> bool {
        true
    }
    fn is_provider_ovn_lb(&self, _name: Option<&str>) -> bool {
        false
    }
    fn lsp(&self, _name: &str) -> Option<RowView<'_>> {
        None
    }
    fn row(&self, _uuid: Uuid) -> Option<RowView<'_>> {
        None
    }
}

fn port(i: usize, up: bool, host: &str, fip: bool) -> Row {
    let mut ids = vec![
        json!(["neutron:network_name", format!("neutron-net{}", i % 100)]),
        json!(["neutron:host_id", host]),
    ];
    if fip {
        ids.push(json!([
            "neutron:port_fip",
            format!("172.24.{}.{}", i / 250 % 250, i % 250)
        ]));
    }
    Row::from_wire(&json!({
        "name": format!("port-{i}"), "type": "",
        "addresses": format!("fa:16:3e:00:{:02x}:{:02x} 10.{}.{}.{}", i / 256 % 256, i % 256, i / 65536 % 256, i / 256 % 256, i % 256),
        "options": ["map", [["requested-chassis", host]]],
        "external_ids": ["map", ids],
        "up": up,
    }))
    .expect("bench row")
}

fn main() {
    let mut config = Config::default().default;
    config.driver = Driver::NbOvnBgpDriver;
    config.expose_tenant_networks = true;
    let filters = Filters::for_config(&config);

    let mut view = View {
        exposed: HashMap::new(),
        providers: (0..100).map(|n| format!("neutron-net{n}")).collect(),
        cr_lrps: (0..50).map(|n| format!("router{n}")).collect(),
    };
    for i in 0..50_000 {
        view.exposed
            .entry(format!("neutron-net{}", i % 100))
            .or_default()
            .insert(format!(
                "10.{}.{}.{}",
                i / 65536 % 256,
                i / 256 % 256,
                i % 256
            ));
    }

    // A stream of realistic updates: up/down flaps, FIP changes, migrations.
    let mut changes = Vec::new();
    for i in 0..2_000 {
        let (new, old) = match i % 4 {
            0 => (port(i, true, "host-1", false), json!({"up": false})),
            1 => (port(i, false, "host-1", false), json!({"up": true})),
            2 => (
                port(i, true, "host-1", true),
                json!({"external_ids": ["map", []]}),
            ),
            _ => (
                port(i, true, "host-2", false),
                json!({"options": ["map", [["requested-chassis", "host-1"]]]}),
            ),
        };
        changes.push(Change {
            table: Arc::from("Logical_Switch_Port"),
            uuid: Uuid(i as u128),
            kind: ChangeKind::Update,
            new: Some(Arc::new(new)),
            old: Some(Arc::new(Row::from_wire(&old).expect("bench old"))),
        });
    }

    let mut samples = Vec::with_capacity(changes.len() * 50);
    let mut matched = 0usize;
    for _ in 0..50 {
        for c in &changes {
            let t = Instant::now();
            let reasons = filters.matching_change(black_box(c), &view);
            samples.push(t.elapsed().as_nanos());
            matched += usize::from(!reasons.is_empty());
        }
    }
    samples.sort_unstable();
    let pct = |p: f64| samples[((samples.len() as f64 - 1.0) * p) as usize];
    println!(
        "matching_change, NB driver ({} classes), {} LSP updates: median {} ns, p99 {} ns, max {} ns ({} matched)",
        filters.all().count(),
        samples.len(),
        pct(0.5),
        pct(0.99),
        samples[samples.len() - 1],
        matched
    );
}
