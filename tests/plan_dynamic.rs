//! `plan --ovn`, `explain --ovn` and `status --ovn` with `exposing_method =
//! dynamic`, through the built binary, on `fixtures/dynamic/basic.json`
//! with `fixtures/dynamic/bgp-agent.conf` (one provider network of each
//! kind): the underlay network's ops through bgp-nic, the L3 and L2 VNIs'
//! devices (their VXLAN devices once FRR holds the text), the agent's
//! leftover L2 VNI torn down, the foreign look-alikes untouched, and which
//! method each network got and why.

use std::path::PathBuf;

use common::{lines_after, strings, Fixture};
use serde_json::Value;

mod common;

const FIXTURE: Fixture = Fixture("dynamic");

fn fixture(name: &str) -> PathBuf {
    FIXTURE.path(name)
}

fn scenario() -> Value {
    FIXTURE.scenario()
}

fn agent(args: &[&str]) -> String {
    FIXTURE.agent(args)
}

/// The FRR text of the `apply_frr` step `plan --ovn path` gives.
fn planned_frr_text(path: &std::path::Path) -> String {
    let plan: Value = serde_json::from_str(&agent(&[
        "plan",
        "--ovn",
        path.to_str().unwrap(),
        "--format",
        "json",
    ]))
    .unwrap();
    plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["op"]["op"] == "apply_frr")
        .and_then(|s| s["op"]["config"].as_str())
        .expect("an apply_frr step")
        .to_string()
}

/// FRR's own parser accepts `text` (`vtysh --dryrun`, no daemon needed),
/// as the agent checks every text before it applies it.
fn assert_frr_parses(dir: &std::path::Path, text: &str) {
    let file = common::write(dir, "frr.conf", text);
    let out = std::process::Command::new("vtysh")
        .arg("--dryrun")
        .arg("-f")
        .arg(&file)
        .output()
        .expect("vtysh (apt package frr)");
    assert!(
        out.status.success(),
        "FRR refuses the text: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn plan_builds_each_networks_method_side_by_side() {
    let sc = scenario();
    let path = fixture("basic.json");
    let out = agent(&["plan", "--ovn", path.to_str().unwrap()]);
    let base = lines_after(&out, "base wiring:");
    for want in [
        "+ link bgp-vrf type vrf table 10",
        "+ link vrf-1001 type vrf table 1001",
        "~ link br-1001 master vrf-1001",
        "+ link br-2002 type bridge",
        "~ link vrfdd3b5a95-aa master vrf-1001",
        "~ link vrfe2000000-00 master br-2002",
        "+ ovs-port br-ex ovsdd3b5a95-aa",
        "+ ovs-port br-vlan ovse2000000-00 tag=100",
    ] {
        assert!(base.contains(&want), "{want:?} missing:\n{out}");
    }
    assert!(
        !out.contains("br-vlan.100"),
        "no VLAN device for the l2 network:\n{out}"
    );
    for vni in [1001, 2002] {
        assert!(
            out.contains(&format!(
                "link vxlan-{vni}: waiting for FRR to hold the VNI's configuration"
            )),
            "{out}"
        );
    }
    let expose = lines_after(&out, "expose:");
    for want in [
        "+ address 192.168.50.10/32 dev bgp-nic",
        "+ neighbour 10.100.0.10 lladdr fa:16:3e:33:33:33 dev br-2002 permanent",
        "+ neighbour 172.24.4.10 lladdr fa:16:3e:11:11:11 dev vrfdd3b5a95-aa permanent",
    ] {
        assert!(
            expose.iter().any(|l| l.starts_with(want)),
            "{want:?} missing:\n{out}"
        );
    }
    assert!(
        !expose
            .iter()
            .any(|l| l.contains("bgp-nic") && !l.contains("192.168.50.10")),
        "only the underlay network goes through bgp-nic:\n{out}"
    );
    let cleanup: Vec<String> = lines_after(&out, "cleanup:")
        .iter()
        .map(|l| l.trim_start_matches("- ").to_string())
        .collect();
    assert_eq!(cleanup, strings(&sc["expected"]["plan_removes"]), "{out}");
    for text in ["import vrf bgp-vrf", "vrf vrf-1001", "advertise-all-vni"] {
        assert!(
            out.contains(text),
            "{text:?} missing from the FRR text:\n{out}"
        );
    }
    let ops_text: String = out
        .lines()
        .take_while(|l| !l.starts_with("frr text"))
        .collect::<Vec<_>>()
        .join("\n");
    for foreign in strings(&sc["expected"]["never_touched"]) {
        let touched = ops_text.split_whitespace().any(|w| w == foreign.as_str());
        assert!(!touched, "{foreign} touched:\n{out}");
    }
}

#[test]
fn explain_says_which_method_each_network_got_and_why() {
    let path = fixture("basic.json");
    for (ip, want) in [
        (
            "172.24.4.10",
            "got vrf (neutron_bgpvpn:type=l3, neutron_bgpvpn:vni=1001)",
        ),
        (
            "10.100.0.10",
            "got l2vni (neutron_bgpvpn:type=l2, neutron_bgpvpn:vni=2002)",
        ),
        (
            "192.168.50.10",
            "got underlay (no neutron_bgpvpn annotation)",
        ),
    ] {
        let out = agent(&["explain", "--ovn", path.to_str().unwrap(), ip]);
        assert!(out.contains(want), "{ip}: {want:?} missing:\n{out}");
    }
}

#[test]
fn status_gives_each_exposure_its_networks_method() {
    let path = fixture("basic.json");
    let out = agent(&[
        "status",
        "--format",
        "json",
        "--ovn",
        path.to_str().unwrap(),
    ]);
    let s: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let methods: Vec<(String, String)> = s["exposed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let m = e["wiring"]["method"].as_str().unwrap_or("-");
            (
                e["prefix"].as_str().unwrap().to_string(),
                m.split(' ').next().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("10.100.0.10/32", "l2vni"),
        ("172.24.4.10/32", "vrf"),
        ("192.168.50.10/32", "underlay"),
        ("2001:db8::10/128", "vrf"),
    ]
    .map(|(p, m)| (p.to_string(), m.to_string()));
    assert_eq!(methods, want, "{out}");
}

/// The one FRR text of the three methods side by side goes through FRR's
/// own parser (`vtysh --dryrun`, no daemon needed), as the agent checks
/// every text before it applies it: the VRF leak must be closed before
/// the L3 VNI's `vrf` stanza (without it FRR read `exit-vrf` inside
/// `router bgp ... vrf bgp-vrf` and refused the whole text; found by the
/// VM-tier test crates/e2e/tests/evpn_dynamic.rs).
#[test]
fn the_union_of_the_three_frr_texts_is_one_frr_accepts() {
    let path = fixture("basic.json");
    let text = planned_frr_text(&path);
    assert!(
        text.contains("import vrf bgp-vrf")
            && text.contains("vrf vrf-1001")
            && text.contains("advertise-all-vni"),
        "the three methods' texts: {text}"
    );
    assert_frr_parses(&common::scratch("dynamic-frr"), &text);
}

/// Two L3 networks (the plain network annotated `l3` with VNI 500, before
/// the fixture's 1001) give a text FRR's parser accepts: without an `exit`
/// closing VNI 500's `router bgp ... vrf` block FRR read `vrf vrf-1001`
/// inside it and refused the text (`% Unknown command[4]: exit-vrf`;
/// found by the VM-tier test crates/e2e/tests/evpn_dynamic_mixed.rs).
#[test]
fn two_l3_networks_give_one_frr_text_frr_accepts() {
    let mut sc = scenario();
    sc["ovn"]["OVN_Northbound"]["Logical_Switch"]["a5000000-0000-4000-8000-000000000001"]
        ["external_ids"] = serde_json::json!([
        "map",
        [
            ["neutron:network_name", "plain"],
            ["neutron_bgpvpn:type", "l3"],
            ["neutron_bgpvpn:vni", "500"],
        ]
    ]);
    let dir = common::scratch("dynamic-two-l3");
    let path = common::write(&dir, "two-l3.json", &sc.to_string());
    let text = planned_frr_text(&path);
    assert!(
        text.contains("vrf vrf-500") && text.contains("vrf vrf-1001"),
        "two L3 VNIs: {text}"
    );
    assert_frr_parses(&dir, &text);
}
