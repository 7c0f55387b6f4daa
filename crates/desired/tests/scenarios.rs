//! Replays every `nb-*` and `sb-*` golden scenario: the snapshot is built
//! from the scenario's `ovn` (NB, SB and OVS rows), each step's `ovn_transaction` is applied in memory, and
//! `desired_state(..).to_node()` is compared with the recorded node after
//! every sync step and at the end. Differences must be exactly the ones
//! listed in fixtures/conformance/deviations-scenarios.json.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use obgp_config::{AdvertisementMethod, Config, Driver, ExposingMethod};
use obgp_desired::{desired_state, NodeFacts};
use obgp_netmodel::{DesiredNode, FlowAction, LinkKind, TableRef};
use obgp_ovn::fixture::FixtureDb;
use obgp_ovn::{Snapshot, Tables, NB_DB, OVS_DB, SB_DB};
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn read_json(p: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))
}

fn config_of(c: &Value) -> Result<Config> {
    let mut cfg = Config::default();
    let d = &mut cfg.default;
    d.driver = match c["driver"].as_str() {
        Some("nb_ovn_bgp_driver") => Driver::NbOvnBgpDriver,
        Some("ovn_bgp_driver") => Driver::OvnBgpDriver,
        other => bail!("unexpected driver {other:?}"),
    };
    d.exposing_method = match c["exposing_method"].as_str() {
        Some("underlay") => ExposingMethod::Underlay,
        other => bail!("unexpected exposing_method {other:?}"),
    };
    let s = |k: &str| c[k].as_str().map(str::to_string);
    let b = |k: &str| c[k].as_bool().unwrap_or(false);
    d.bgp_as = s("bgp_AS").ok_or_else(|| anyhow!("bgp_AS"))?;
    d.bgp_router_id = s("bgp_router_id");
    d.bgp_nic = s("bgp_nic").unwrap_or(d.bgp_nic.clone());
    d.bgp_vrf = s("bgp_vrf").unwrap_or(d.bgp_vrf.clone());
    d.bgp_vrf_table_id = c["bgp_vrf_table_id"].as_u64().unwrap_or(10) as u32;
    d.expose_tenant_networks = b("expose_tenant_networks");
    d.expose_ipv6_gua_tenant_networks = b("expose_ipv6_gua_tenant_networks");
    d.require_snat_disabled_for_tenant_networks = b("require_snat_disabled_for_tenant_networks");
    d.advertisement_method_tenant_networks =
        match c["advertisement_method_tenant_networks"].as_str() {
            Some("subnet") => AdvertisementMethod::Subnet,
            _ => AdvertisementMethod::Host,
        };
    d.address_scopes = c["address_scopes"].as_array().map(|a| {
        a.iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    });
    Ok(cfg)
}

/// The recorded node, flattened into comparable lines.
fn actual_lines(node: &Value) -> Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    let mut rt: HashMap<u64, String> = HashMap::new();
    for line in node["rt_tables"].as_str().unwrap_or("").lines() {
        let mut w = line.split_whitespace();
        if let (Some(n), Some(name), None) = (w.next(), w.next(), w.next()) {
            if let Ok(n) = n.parse::<u64>() {
                rt.insert(n, name.to_string());
            }
        }
    }
    let table = |t: &Value| -> String {
        let n = t.as_u64().unwrap_or(0);
        if (253..=255).contains(&n) {
            return n.to_string();
        }
        rt.get(&n).cloned().unwrap_or_else(|| n.to_string())
    };
    let mut macs = HashMap::new();
    for l in node["links"].as_array().into_iter().flatten() {
        let name = l["name"].as_str().unwrap_or("");
        let state = l["state"].as_str().unwrap_or("");
        macs.insert(
            name.to_string(),
            l["mac"].as_str().unwrap_or("").to_string(),
        );
        let line = match l["type"].as_str().unwrap_or("") {
            "vrf" => format!("link {name} vrf table={} {state}", l["vrf_table"]),
            "dummy" => format!(
                "link {name} dummy master={} {state}",
                l["master"].as_str().unwrap_or("-")
            ),
            "vlan" => format!(
                "link {name} vlan parent={} id={} {state}",
                l["link"].as_str().unwrap_or("-"),
                l["vlan_id"]
            ),
            "openvswitch" if state == "up" => format!("link {name} existing up"),
            _ => continue,
        };
        out.insert(line);
    }
    for (dev, addrs) in node["addresses"].as_object().into_iter().flatten() {
        for a in addrs.as_array().into_iter().flatten() {
            out.insert(format!("addr {dev} {}", a.as_str().unwrap_or("")));
        }
    }
    for r in node["rules"].as_array().into_iter().flatten() {
        if r["dst"] == "all" {
            continue;
        }
        // Rule destinations compare as networks (the kernel and the
        // conformance runner's node model keep only the prefix).
        let dst = r["dst"].as_str().unwrap_or("");
        let dst = dst
            .parse::<ipnet::IpNet>()
            .map(|n| n.trunc().to_string())
            .unwrap_or_else(|_| dst.to_string());
        out.insert(format!("rule {dst} table={}", table(&r["table"])));
    }
    for r in node["routes"].as_array().into_iter().flatten() {
        out.insert(format!(
            "route table={} {} {} dev={} via={} proto={} scope={} type={}",
            table(&r["table"]),
            r["family"].as_str().unwrap_or(""),
            r["dst"].as_str().unwrap_or(""),
            r["dev"].as_str().unwrap_or("-"),
            r["via"].as_str().unwrap_or("-"),
            r["proto"],
            r["scope"],
            r["type"].as_str().unwrap_or(""),
        ));
    }
    for n in node["neighbours"].as_array().into_iter().flatten() {
        let (dev, dst) = (
            n["dev"].as_str().unwrap_or(""),
            n["dst"].as_str().unwrap_or(""),
        );
        if n["proxy"] == true {
            out.insert(format!("proxy {dev} {dst}"));
        } else {
            out.insert(format!(
                "neigh {dev} {dst} {}",
                n["lladdr"].as_str().unwrap_or("-")
            ));
        }
    }
    for (k, v) in node["sysctls"].as_object().into_iter().flatten() {
        out.insert(format!("sysctl {k}={}", v.as_str().unwrap_or("")));
    }
    for (br, flows) in node["ovs"]["flows"].as_object().into_iter().flatten() {
        let ports: HashMap<u64, &str> = node["ovs"]["bridges"][br]["ports"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(name, ofport)| Some((ofport.as_u64()?, name.as_str())))
            .collect();
        for f in flows.as_array().into_iter().flatten() {
            if f["cookie"] != "0x3e7" {
                continue;
            }
            let mut protocol = "";
            let mut in_port = String::from("-");
            for tok in f["match"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if let Some(p) = tok.strip_prefix("in_port=") {
                    in_port = p
                        .parse::<u64>()
                        .ok()
                        .and_then(|n| ports.get(&n))
                        .map(|s| s.to_string())
                        .unwrap_or_else(|| p.to_string());
                } else {
                    protocol = tok;
                }
            }
            out.insert(format!(
                "flow {br} prio={} {protocol} in_port={in_port} actions={}",
                f["priority"],
                f["actions"].as_str().unwrap_or("")
            ));
        }
    }
    let _ = macs;
    Ok(out)
}

/// The desired node, flattened into the same lines.
fn desired_lines(n: &DesiredNode, node: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mac_of = |dev: &str| -> String {
        node["links"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|l| l["name"] == dev)
            .and_then(|l| l["mac"].as_str())
            .unwrap_or("?")
            .to_string()
    };
    let table = |t: &TableRef| match t {
        TableRef::Id(n) => n.to_string(),
        TableRef::Bridge(b) => b.to_string(),
    };
    for l in &n.links {
        let state = if l.up { "up" } else { "down" };
        let line = match &l.kind {
            LinkKind::Vrf { table } => format!("link {} vrf table={table} {state}", l.name),
            LinkKind::Dummy => format!(
                "link {} dummy master={} {state}",
                l.name,
                l.master
                    .as_ref()
                    .map(|m| m.to_string())
                    .unwrap_or("-".into())
            ),
            LinkKind::Vlan { parent, vlan_id } => {
                format!("link {} vlan parent={parent} id={vlan_id} {state}", l.name)
            }
            LinkKind::Existing => format!("link {} existing {state}", l.name),
            other => format!("link {} {other:?}", l.name),
        };
        out.insert(line);
    }
    for a in n.addresses.keys() {
        out.insert(format!("addr {} {}", a.dev, a.net));
    }
    for r in n.rules.keys() {
        out.insert(format!("rule {} table={}", r.dst.trunc(), table(&r.table)));
    }
    for r in n.routes.keys() {
        out.insert(format!(
            "route table={} {} {} dev={} via={} proto={} scope={} type=unicast",
            table(&r.table),
            if r.v6 { "inet6" } else { "inet" },
            r.dst.map(|d| d.to_string()).unwrap_or("default".into()),
            r.dev.as_ref().map(|d| d.to_string()).unwrap_or("-".into()),
            r.via.map(|v| v.to_string()).unwrap_or("-".into()),
            r.proto,
            r.scope,
        ));
    }
    for nb in n.neighbours.keys() {
        out.insert(format!("neigh {} {} {}", nb.dev, nb.dst, nb.lladdr));
    }
    for p in n.proxy_neighbours.keys() {
        out.insert(format!("proxy {} {}", p.dev, p.dst));
    }
    for s in &n.sysctls {
        out.insert(format!("sysctl {}={}", s.key, s.value));
    }
    for f in &n.flows {
        let actions: Vec<String> = f
            .actions
            .iter()
            .map(|a| match a {
                FlowAction::ModDlDstBridgeMac => {
                    format!("mod_dl_dst:{}", mac_of(f.bridge.as_str()))
                }
                FlowAction::ModDlDstMacOf(d) => format!("mod_dl_dst:{}", mac_of(d.as_str())),
                FlowAction::ModDlDst(m) => format!("mod_dl_dst:{m}"),
                FlowAction::ModDlSrc(m) => format!("mod_dl_src:{m}"),
                FlowAction::Output(p) => format!("output:{p}"),
                FlowAction::StripVlan => "strip_vlan".into(),
                FlowAction::Normal => "NORMAL".into(),
            })
            .collect();
        out.insert(format!(
            "flow {} prio={} {} in_port={} actions={}",
            f.bridge,
            f.priority,
            f.protocol,
            f.in_port,
            actions.join(",")
        ));
    }
    out
}

/// FRR text without blank lines, with each run of `redistribute` lines sorted.
fn normalise_frr(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut run: Vec<String> = Vec::new();
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        if l.trim_start().starts_with("redistribute ") {
            run.push(l.to_string());
            continue;
        }
        run.sort();
        out.append(&mut run);
        out.push(l.to_string());
    }
    run.sort();
    out.append(&mut run);
    out
}

fn differences(desired: &BTreeSet<String>, actual: &BTreeSet<String>) -> BTreeSet<String> {
    let mut d = BTreeSet::new();
    for l in desired.difference(actual) {
        d.insert(format!("desired, not on node: {l}"));
    }
    for l in actual.difference(desired) {
        d.insert(format!("on node, not desired: {l}"));
    }
    d
}

type Deviations = BTreeMap<(String, usize), BTreeSet<String>>;

fn deviations() -> Result<Deviations> {
    let v = read_json(&fixtures().join("conformance/deviations-scenarios.json"))?;
    let mut out = Deviations::new();
    for d in v
        .as_array()
        .ok_or_else(|| anyhow!("deviations: not an array"))?
    {
        // Entries with a labelled step are the conformance runner's: FRR
        // text phases ("frr 0-1") and skips ("skip"). It validates them.
        if d["step"].is_string() {
            continue;
        }
        let (Some(s), Some(step), Some(diff), Some(reason)) = (
            d["scenario"].as_str(),
            d["step"].as_u64(),
            d["difference"].as_str(),
            d["reason"].as_str(),
        ) else {
            bail!("deviation entry {d} lacks scenario/step/difference/reason");
        };
        if reason.trim().is_empty() {
            bail!("deviation {d} has no reason");
        }
        out.entry((s.to_string(), step as usize))
            .or_default()
            .insert(diff.to_string());
    }
    Ok(out)
}

/// Runs one scenario; returns the differences per compared step (the final
/// state is compared under the last step's index).
fn run_scenario(sc: &Value, schemas: &[Value]) -> Result<BTreeMap<usize, BTreeSet<String>>> {
    let cfg = config_of(&sc["config"])?;
    let mut db = FixtureDb::from_wire(&sc["ovn"])?;
    for schema in schemas {
        db = db.with_schema(schema);
    }
    let facts = NodeFacts {
        system_hostname: None,
        frr_router_id: sc["initial_node"]["frr"]["router_id_reported"]
            .as_str()
            .map(str::to_string),
        vxlan_source: None,
        local_bridges: Default::default(),
    };
    let steps = sc["steps"].as_array().ok_or_else(|| anyhow!("no steps"))?;
    let mut diffs = BTreeMap::new();
    for (i, step) in steps.iter().enumerate() {
        if let Some(ops) = step["ovn_transaction"].as_array() {
            // The SB scenarios' updates touch Port_Binding only.
            let sb = ops.iter().all(|o| o["table"] == "Port_Binding");
            db.apply(if sb { SB_DB } else { NB_DB }, ops)
                .with_context(|| format!("step {i} transaction"))?;
        }
        let last = i + 1 == steps.len();
        let is_sync = step["action"]
            .as_str()
            .is_some_and(|a| a.starts_with("sync"));
        if !is_sync && !last {
            continue;
        }
        let node = if last {
            &sc["final_node"]
        } else {
            &step["node_after"]
        };
        let empty = Tables::new();
        let get = |name: &str| db.dbs.get(name).unwrap_or(&empty);
        let snap = Snapshot::build_with_sb(get(NB_DB), get(SB_DB), get(OVS_DB));
        assert!(
            snap.warnings().is_empty(),
            "step {i}: {:?}",
            snap.warnings()
        );
        let desired = desired_state(&snap, &cfg, &facts)?;
        let dn = desired.to_node();
        let mut d = differences(&desired_lines(&dn, node), &actual_lines(node)?);
        if let Some(applied) = sc["frr"]
            .as_array()
            .and_then(|a| a.last())
            .and_then(Value::as_str)
        {
            let want = normalise_frr(applied);
            let got = dn
                .frr_config
                .as_deref()
                .map(normalise_frr)
                .unwrap_or_default();
            if want != got {
                d.insert(format!(
                    "frr text differs: desired {got:?}, applied {want:?}"
                ));
            }
        }
        diffs.insert(i, d);
    }
    Ok(diffs)
}

#[test]
fn every_nb_and_sb_scenario_matches_its_recorded_node_except_listed_deviations() -> Result<()> {
    let dir = fixtures().join("conformance/scenarios");
    let schemas = [
        read_json(&fixtures().join("schemas/ovn-nb.ovsschema"))?,
        read_json(&fixtures().join("schemas/ovn-sb.ovsschema"))?,
    ];
    let allowed = deviations()?;
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                (n.starts_with("nb-") || n.starts_with("sb-")) && n.ends_with(".json")
            })
        })
        .collect();
    names.sort();
    assert!(
        names.len() >= 16,
        "expected the 12 nb-* and 4 sb-* scenarios, found {}",
        names.len()
    );

    let mut failures = Vec::new();
    let mut used: BTreeSet<(String, usize, String)> = BTreeSet::new();
    for path in &names {
        let sc = read_json(path)?;
        let name = sc["name"].as_str().unwrap_or_default().to_string();
        let diffs = run_scenario(&sc, &schemas).with_context(|| name.clone())?;
        for (step, d) in diffs {
            let ok = allowed
                .get(&(name.clone(), step))
                .cloned()
                .unwrap_or_default();
            for diff in &d {
                if ok.contains(diff) {
                    used.insert((name.clone(), step, diff.clone()));
                } else {
                    failures.push(format!("{name} step {step}: {diff}"));
                }
            }
        }
    }
    for ((name, step), diffs) in &allowed {
        // The EVPN scenarios are replayed by the conformance runner only.
        if !(name.starts_with("nb-") || name.starts_with("sb-")) {
            continue;
        }
        for diff in diffs {
            if !used.contains(&(name.clone(), *step, diff.clone())) {
                failures.push(format!(
                    "listed deviation not observed: {name} step {step}: {diff}"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
    Ok(())
}
