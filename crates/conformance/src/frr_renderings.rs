//! The `frr-utils` scenario (`frr-and-evpn-renderings.json`): upstream's
//! `frr.py` functions called one by one, each step with its `inputs` and
//! the `vtysh -f` texts it applied. Each step is rendered from its inputs
//! with the rewrite's own text functions (the VRF leak of
//! `obgp_desired::frr`, the EVPN and ND texts of `obgp_netmodel::frr`) and
//! compared with the recorded texts by the runner's FRR rules (blank lines
//! and `redistribute` order do not count).
//!
//! Upstream keeps module state between calls, and so does the replay:
//! `set_default_redistribute` (a step's `redistribute` input) holds for the
//! later steps; the AS, VRF and EVPN local IP default to the scenario's
//! config; the router-id, when a step gives none, is what `show ip bgp
//! summary json` reports (the step's `vtysh_show_output`, or the initial
//! node's `router_id_reported`). The `vtysh_show` reads themselves are the
//! node layer's and are not compared here.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use anyhow::{anyhow, bail, Context};
use obgp_desired::frr::{vrf_leak, Redistribute};
use obgp_netmodel::frr::{
    add_vrf, del_vrf, nd, AddVrf, Asn, DelVrf, Nd, RedistSource, RouteDistinguisher,
};
use obgp_netmodel::DevName;
use serde_json::Value;

use crate::scenario_file::{Scenario, ScenarioStep};
use crate::verdict::{frr_canonical, Deviations, Verdict};

/// The `driver` of the scenario file this module replays.
pub const DRIVER: &str = "frr-utils";

/// What upstream's `frr.py` remembers between calls, and the config it reads.
struct Upstream<'a> {
    config: &'a BTreeMap<String, Value>,
    /// `DEFAULT_REDISTRIBUTE`, in the order the inputs list it.
    redistribute: Vec<String>,
    /// What `show ip bgp summary json` reports when no step says.
    router_id_reported: Option<String>,
}

impl Upstream<'_> {
    fn config_str(&self, key: &str) -> Option<&str> {
        self.config.get(key).and_then(Value::as_str)
    }
}

/// Compares every step's rendering with its recorded texts.
pub fn judge_steps(sc: &Scenario, deviations: &Deviations) -> anyhow::Result<Verdict> {
    let mut up = Upstream {
        config: &sc.config,
        redistribute: vec!["connected".into()],
        router_id_reported: sc.initial_node["frr"]["router_id_reported"]
            .as_str()
            .map(String::from),
    };
    let mut verdict = Verdict::default();
    for (i, step) in sc.steps.iter().enumerate() {
        let label = i.to_string();
        let want: Vec<&str> = step
            .calls
            .iter()
            .filter(|c| c["kind"] == "frr" && c["op"] == "vtysh_config")
            .map(|c| {
                c["args"]["config"]
                    .as_str()
                    .ok_or_else(|| anyhow!("step {i}: vtysh_config without a config text"))
            })
            .collect::<anyhow::Result<_>>()?;
        let diffs = match render(step, &mut up) {
            Ok(got) => compare(&want, &got),
            Err(e) => vec![format!("cannot render {:?}: {e:#}", step.action)],
        };
        verdict.judge(&sc.name, &label, diffs, deviations);
    }
    Ok(verdict)
}

fn compare(want: &[&str], got: &[String]) -> Vec<String> {
    if want.len() != got.len() {
        return vec![format!(
            "frr texts: want {} text(s) {want:?}, got {} {got:?}",
            want.len(),
            got.len()
        )];
    }
    want.iter()
        .zip(got)
        .filter(|(w, g)| frr_canonical(w) != frr_canonical(g))
        .map(|(w, g)| {
            format!(
                "frr text differs: want {:?}, got {:?}",
                frr_canonical(w),
                frr_canonical(g)
            )
        })
        .collect()
}

/// The texts the rewrite applies for one upstream call.
fn render(step: &ScenarioStep, up: &mut Upstream<'_>) -> anyhow::Result<Vec<String>> {
    let inputs = &step.inputs;
    if let Some(list) = inputs.get("redistribute") {
        up.redistribute = strings(list).context("redistribute")?;
    }
    let action = step.action.as_str();
    if action.contains("vrf_leak") {
        return Ok(vec![leak(inputs, up)?]);
    }
    if action.starts_with("nd_reconfigure") {
        return Ok(vec![nd_text(inputs)?]);
    }
    if let Some(rest) = action.strip_prefix("vrf_reconfigure") {
        // The action is an input when it is not one the templates know.
        let which = match inputs.get("action").and_then(Value::as_str) {
            Some(a) => a,
            None => rest
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .trim_end_matches(','),
        };
        let info = &inputs["evpn_info"];
        return match which {
            "add-vrf" => Ok(vec![add_vrf_text(info, inputs, up)?]),
            "del-vrf" => Ok(vec![del_vrf_text(info, up)?]),
            // Upstream logs the unknown action and applies nothing.
            _ => Ok(vec![]),
        };
    }
    bail!("no rendering for this call")
}

fn strings(v: &Value) -> anyhow::Result<Vec<String>> {
    v.as_array()
        .ok_or_else(|| anyhow!("{v} is not a list"))?
        .iter()
        .map(|s| {
            s.as_str()
                .map(String::from)
                .ok_or_else(|| anyhow!("{s} is not a string"))
        })
        .collect()
}

fn str_input<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

fn asn_of(info: &Value, up: &Upstream<'_>) -> anyhow::Result<Asn> {
    let text = str_input(info, "bgp_as")
        .or_else(|| up.config_str("bgp_AS"))
        .ok_or_else(|| anyhow!("no bgp_as"))?;
    Ok(text.parse()?)
}

fn leak(inputs: &Value, up: &Upstream<'_>) -> anyhow::Result<String> {
    let vrf = str_input(inputs, "vrf")
        .or_else(|| up.config_str("bgp_vrf"))
        .ok_or_else(|| anyhow!("no vrf"))?;
    let vrf = DevName::new(vrf)?;
    let asn = asn_of(inputs, up)?;
    let router_id = str_input(inputs, "bgp_router_id")
        .or_else(|| inputs["vtysh_show_output"]["ipv4Unicast"]["routerId"].as_str())
        .or(up.router_id_reported.as_deref())
        .ok_or_else(|| anyhow!("no router-id"))?;
    let router_id: Ipv4Addr = router_id
        .parse()
        .with_context(|| format!("router-id {router_id:?}"))?;
    let mut set = up.redistribute.clone();
    set.sort();
    set.dedup();
    let redistribute = match set.as_slice() {
        [c] if c == "connected" => Redistribute::Connected,
        [c, k] if c == "connected" && k == "kernel" => Redistribute::KernelAndConnected,
        other => bail!("redistribute {other:?} is not one the agent uses"),
    };
    Ok(vrf_leak(
        vrf.as_str(),
        asn.as_str(),
        router_id,
        redistribute,
    ))
}

fn vni_of(info: &Value) -> anyhow::Result<u32> {
    let vni = info["vni"]
        .as_u64()
        .ok_or_else(|| anyhow!("evpn_info.vni {} is not a number", info["vni"]))?;
    u32::try_from(vni)
        .ok()
        .filter(|v| *v <= obgp_netmodel::MAX_VNI)
        .ok_or_else(|| anyhow!("evpn_info.vni {vni} is not a VNI"))
}

/// `vrf_name`, or upstream's default `vrf-<vni>`.
fn vrf_of(info: &Value, vni: u32) -> anyhow::Result<DevName> {
    Ok(match str_input(info, "vrf_name") {
        Some(name) => DevName::new(name)?,
        None => obgp_netmodel::names::evpn::vrf(vni)
            .ok_or_else(|| anyhow!("no VRF name for VNI {vni}"))?,
    })
}

fn targets(info: &Value, key: &str) -> anyhow::Result<Vec<RouteDistinguisher>> {
    match info.get(key) {
        None => Ok(vec![]),
        Some(list) => strings(list)?
            .iter()
            .map(|s| s.parse().with_context(|| format!("{key} {s:?}")))
            .collect(),
    }
}

fn redist_sources(names: &[String]) -> anyhow::Result<Vec<RedistSource>> {
    names
        .iter()
        .map(|n| match n.as_str() {
            "connected" => Ok(RedistSource::Connected),
            "kernel" => Ok(RedistSource::Kernel),
            other => Err(anyhow!("redistribute {other:?}")),
        })
        .collect()
}

fn add_vrf_text(info: &Value, inputs: &Value, up: &Upstream<'_>) -> anyhow::Result<String> {
    let vni = vni_of(info)?;
    let rd = match targets(info, "route_distinguishers")?.first() {
        Some(rd) => *rd,
        None => {
            let ip = str_input(inputs, "evpn_local_ip")
                .or_else(|| up.config_str("evpn_local_ip"))
                .ok_or_else(|| anyhow!("no route distinguisher and no evpn_local_ip"))?;
            let ip: IpAddr = ip
                .parse()
                .with_context(|| format!("evpn_local_ip {ip:?}"))?;
            RouteDistinguisher::of_ip_and_vni(ip, vni)?
        }
    };
    Ok(add_vrf(&AddVrf {
        vrf: vrf_of(info, vni)?,
        vni,
        asn: asn_of(info, up)?,
        redistribute: redist_sources(&up.redistribute)?,
        rd,
        route_targets: targets(info, "route_targets")?,
        import_targets: targets(info, "import_targets")?,
        export_targets: targets(info, "export_targets")?,
    }))
}

fn del_vrf_text(info: &Value, up: &Upstream<'_>) -> anyhow::Result<String> {
    let vni = vni_of(info)?;
    let vrf = vrf_of(info, vni)?;
    // Upstream's template names `veth-<vrf name>`: these inputs give that.
    let veth = DevName::new(&format!("veth-{vrf}"))?;
    Ok(del_vrf(&DelVrf {
        vrf,
        asn: asn_of(info, up)?,
        interfaces: vec![veth],
    }))
}

fn nd_text(inputs: &Value) -> anyhow::Result<String> {
    let interface = DevName::new(str_input(inputs, "interface").unwrap_or_default())?;
    let prefix = str_input(inputs, "prefix").unwrap_or_default();
    let prefix = prefix
        .parse()
        .with_context(|| format!("prefix {prefix:?}"))?;
    let mut options = BTreeMap::new();
    if let Some(opts) = inputs["opts"].as_object() {
        for (k, v) in opts {
            let v = v
                .as_str()
                .ok_or_else(|| anyhow!("opts.{k} {v} is not a string"))?;
            options.insert(k.clone(), v.to_string());
        }
    }
    Ok(nd(&Nd::from_dhcpv6_options(interface, prefix, &options)?))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::scenario::{replay, Injected};
    use crate::scenario_file::load;
    use crate::verdict::Outcome;

    fn renderings() -> Scenario {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/conformance/scenarios/frr-and-evpn-renderings.json");
        load(&p).unwrap()
    }

    #[test]
    fn every_recorded_rendering_is_reproduced() {
        let sc = renderings();
        let out = replay(
            &sc,
            &Deviations::default(),
            &mut Injected::new(|| unreachable!()),
        );
        assert_eq!(out, Outcome::Passed);
    }

    fn set_text(sc: &mut Scenario, step: usize, text: &str) {
        let call = sc.steps[step]
            .calls
            .iter_mut()
            .find(|c| c["op"] == "vtysh_config")
            .unwrap();
        call["args"]["config"] = Value::from(text);
    }

    #[test]
    fn a_changed_text_or_input_fails_with_the_step() {
        // A different route target in the recorded add-vrf text.
        let mut sc = renderings();
        let text = sc.steps[4].calls[0]["args"]["config"]
            .as_str()
            .unwrap()
            .replace(
                "route-target import 65001:1\n",
                "route-target import 65001:9\n",
            );
        set_text(&mut sc, 4, &text);
        let Outcome::Failed(why) = replay(
            &sc,
            &Deviations::default(),
            &mut Injected::new(|| unreachable!()),
        ) else {
            panic!("expected a failure");
        };
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].starts_with("step 4: frr text differs"), "{why:?}");

        // An input that could reach vtysh unchecked is refused, not rendered.
        let mut sc = renderings();
        sc.steps[5].inputs["evpn_info"]["bgp_as"] = Value::from("64999\nno router bgp");
        let Outcome::Failed(why) = replay(
            &sc,
            &Deviations::default(),
            &mut Injected::new(|| unreachable!()),
        ) else {
            panic!("expected a failure");
        };
        assert!(why[0].starts_with("step 5: cannot render"), "{why:?}");

        // Upstream's unknown action applies nothing; a text recorded for it is missed.
        let mut sc = renderings();
        sc.steps[6].calls = sc.steps[5].calls.clone();
        let Outcome::Failed(why) = replay(
            &sc,
            &Deviations::default(),
            &mut Injected::new(|| unreachable!()),
        ) else {
            panic!("expected a failure");
        };
        assert!(why[0].starts_with("step 6: frr texts: want 1"), "{why:?}");
    }

    #[test]
    fn redistribute_set_holds_for_later_calls() {
        // Step 2 sets {connected, kernel}; without its input step 3 still
        // renders both (step 3 records it again, so drop that copy).
        let mut sc = renderings();
        sc.steps[3]
            .inputs
            .as_object_mut()
            .unwrap()
            .remove("redistribute");
        let out = replay(
            &sc,
            &Deviations::default(),
            &mut Injected::new(|| unreachable!()),
        );
        assert_eq!(out, Outcome::Passed);
        // And without step 2's, the leak renders connected only: a difference.
        let mut sc = renderings();
        sc.steps[2]
            .inputs
            .as_object_mut()
            .unwrap()
            .remove("redistribute");
        let Outcome::Failed(why) = replay(
            &sc,
            &Deviations::default(),
            &mut Injected::new(|| unreachable!()),
        ) else {
            panic!("expected a failure");
        };
        assert!(why[0].starts_with("step 2: frr text differs"), "{why:?}");
    }
}
