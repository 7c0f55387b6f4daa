//! A provider bridge with a non-ASCII name, end to end: the VLAN provider
//! scenario with its bridge renamed `br-éééééé` (15 bytes, a valid device
//! name) goes through `desired_state` and the planner against a node that
//! also holds VLAN links the agent does not own, with non-ASCII parents.
//! Nothing panics, the VLAN device is named by `names::vlan_device` within
//! the kernel's limit, and the foreign links are left alone.

use std::path::Path;

use obgp_config::{Config, Driver, ExposingMethod};
use obgp_desired::{desired_state, NodeFacts};
use obgp_netmodel::{names::vlan_device, DevName, LinkKind};
use obgp_ovn::fixture::FixtureDb;
use obgp_plan::{plan, Actual, Op, SimulatedNode};
use serde_json::{json, Value};

/// 3 ASCII bytes and six 2-byte chars: 15 bytes, 9 chars.
const BRIDGE: &str = "br-éééééé";
/// The provider network's VLAN tag in the scenario.
const TAG: u16 = 100;

/// The scenario with `br-ex` renamed to [`BRIDGE`] in its OVN rows (the
/// bridge mapping, the Bridge, Port and Interface rows) and its nodes.
fn scenario() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/conformance/scenarios/nb-vlan-provider-vm.json");
    let text = std::fs::read_to_string(&path).expect("the VLAN provider scenario");
    assert!(
        text.contains("physnet1:br-ex"),
        "the scenario maps physnet1 to br-ex"
    );
    serde_json::from_str(&text.replace("br-ex", BRIDGE)).expect("scenario json")
}

fn link(name: &str, kind: &str, parent: Option<&str>, vlan: Option<u16>) -> Value {
    json!({"name": name, "type": kind, "mac": "52:54:00:00:00:99", "state": "up",
           "master": null, "link": parent, "vlan_id": vlan, "vrf_table": null})
}

fn dev(s: &str) -> DevName {
    DevName::new(s).expect("a valid device name")
}

#[test]
fn a_non_ascii_provider_bridge_gets_its_vlan_device_and_foreign_links_stay() {
    let sc = scenario();
    let db = FixtureDb::from_wire(&sc["ovn"]).expect("scenario ovn");
    let mut config = Config::default();
    config.default.driver = Driver::NbOvnBgpDriver;
    config.default.exposing_method = ExposingMethod::Underlay;
    config.default.bgp_router_id = Some("192.168.100.11".into());
    let desired = desired_state(&db.snapshot(), &config, &NodeFacts::default())
        .expect("supported driver, valid config")
        .to_node();

    // The desired VLAN device: the naming rule's, within 15 bytes.
    let bridge = dev(BRIDGE);
    let expected = vlan_device(&bridge, TAG);
    // "br-" and ".100" take 7 of the 15 bytes; four é (8 bytes) fill the rest.
    assert_eq!(expected.as_str(), "br-éééé.100", "cut on a char boundary");
    assert!(expected.as_str().len() <= DevName::MAX_LEN);
    let vlans: Vec<_> = desired
        .links
        .iter()
        .filter(|l| matches!(l.kind, LinkKind::Vlan { .. }))
        .collect();
    assert_eq!(vlans.len(), 1, "{vlans:?}");
    assert_eq!(vlans[0].name, expected);
    assert_eq!(
        vlans[0].kind,
        LinkKind::Vlan {
            parent: bridge.clone(),
            vlan_id: TAG
        }
    );

    // The node: the scenario's, plus VLAN links the agent does not own
    // (one on an unmapped non-ASCII parent, one on the mapped bridge under
    // a name the rule does not give) and one it does own but no longer
    // wants (the rule's name for another VLAN on the mapped bridge).
    let stale = vlan_device(&bridge, 4094);
    assert_eq!(stale.as_str(), "br-ééé.4094");
    let mut initial = sc["initial_node"].clone();
    let links = initial["links"].as_array_mut().expect("links");
    links.push(link("網橋網橋網", "ether", None, None));
    links.push(link("網橋網.77", "vlan", Some("網橋網橋網"), Some(77)));
    links.push(link("vlan-é7", "vlan", Some(BRIDGE), Some(7)));
    links.push(link(stale.as_str(), "vlan", Some(BRIDGE), Some(4094)));
    let actual: Actual = serde_json::from_value(initial).expect("initial node");

    let plan = plan(&desired, &actual).expect("a plan");
    let ops: Vec<&Op> = plan.ops().collect();
    assert!(
        ops.iter()
            .any(|op| matches!(op, Op::AddLink { name, .. } if *name == expected)),
        "the VLAN device is created\n{plan}"
    );
    assert!(
        ops.iter()
            .any(|op| matches!(op, Op::DelLink { name } if *name == stale)),
        "the agent's stale VLAN device on the bridge is removed\n{plan}"
    );
    for foreign in ["網橋網橋網", "網橋網.77", "vlan-é7"] {
        let touched: Vec<String> = ops
            .iter()
            .map(|op| op.to_string())
            .filter(|text| text.split_whitespace().any(|w| w == foreign))
            .collect();
        assert!(touched.is_empty(), "{foreign} is touched: {touched:?}");
    }

    // Applied with the kernel's semantics, every op succeeds and the foreign
    // links are still there, unchanged.
    let mut node = SimulatedNode::new(actual.clone());
    node.apply_all(plan.ops());
    let failed: Vec<_> = node.log.iter().filter(|(_, r)| r.is_err()).collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert!(node.actual.links.contains_key(&expected));
    assert!(!node.actual.links.contains_key(&stale));
    for foreign in ["網橋網橋網", "網橋網.77", "vlan-é7"] {
        assert_eq!(
            node.actual.links.get(&dev(foreign)),
            actual.links.get(&dev(foreign)),
            "{foreign}"
        );
    }
}
