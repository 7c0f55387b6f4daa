use super::*;
use crate::frr::{advertise_all_vni, l2_vni_block};

/// FRR 8.4.4's `show running-config` after the agent's text for VNI 2001
/// and a hand-written block for 2002 (captured from a real bgpd, as
/// crates/node/tests/frr.rs applies them).
const RUNNING: &str = "frr version 8.4.4\n!\nrouter bgp 64999\n bgp router-id 192.168.100.11\n !\n address-family l2vpn evpn\n  advertise-all-vni\n  vni 2002\n   rd 192.0.2.1:7\n  exit-vni\n  vni 2001\n   rd 64512:2001\n   route-target import 64512:1\n   route-target export 64512:1\n   route-target export 64512:3\n  exit-vni\n exit-address-family\nexit\n!\nrouter bgp 64999 vrf vrf-1001\n address-family l2vpn evpn\n  vni 3003\n  exit-vni\n exit-address-family\nexit\n!\nend\n";

fn rt(s: &str) -> RouteTarget {
    s.parse().unwrap()
}

fn set(v: &[&str]) -> BTreeSet<RouteTarget> {
    v.iter().map(|s| rt(s)).collect()
}

#[test]
fn frr_s_running_text_gives_each_default_instance_vni_block() {
    let got = l2_vnis_of_running_config(RUNNING);
    assert_eq!(got.asn.as_deref(), Some("64999"));
    assert_eq!(
        got.vnis.keys().copied().collect::<Vec<_>>(),
        [2001, 2002],
        "not the VRF instance's 3003"
    );
    assert_eq!(
        got.vnis[&2001],
        L2VniConfig {
            rd: Some(rt("64512:2001")),
            import: set(&["64512:1"]),
            export: set(&["64512:1", "64512:3"]),
        }
    );
    assert_eq!(got.vnis[&2002].rd, Some(rt("192.0.2.1:7")));
}

#[test]
fn the_agents_own_text_reads_back_as_the_config_it_was_rendered_from() {
    let vni = L2Vni {
        vni: 2001,
        rd: Some(rt("64512:2001")),
        route_targets: vec![rt("64512:1")],
        import_targets: vec![rt("64512:4")],
        export_targets: vec![rt("64512:5")],
    };
    let text = advertise_all_vni(&"64999".parse().unwrap(), &[l2_vni_block(&vni)]);
    let got = l2_vnis_of_running_config(&text);
    assert_eq!(got.vnis[&2001], vni.config());
    assert_eq!(vni.config().import, set(&["64512:1", "64512:4"]));
    assert_eq!(vni.config().export, set(&["64512:1", "64512:5"]));
}

#[test]
fn both_and_unparsable_values_are_read_as_far_as_they_parse() {
    let text = "router bgp 1\n address-family l2vpn evpn\n  vni 7\n   route-target both 1:1\n   route-target import *:5\n   rd bogus\n  exit-vni\n  vni x\n exit-address-family\n";
    let got = l2_vnis_of_running_config(text);
    assert_eq!(got.vnis.len(), 1);
    assert_eq!(
        got.vnis[&7],
        L2VniConfig {
            rd: None,
            import: set(&["1:1"]),
            export: set(&["1:1"])
        }
    );
    assert_eq!(l2_vnis_of_running_config(""), L2Running::default());
}

#[test]
fn surplus_lists_what_a_no_line_must_remove() {
    let held = L2VniConfig {
        rd: Some(rt("64512:2001")),
        import: set(&["1:1", "1:2"]),
        export: set(&["1:1"]),
    };
    let want = L2VniConfig {
        rd: Some(rt("64512:9")),
        import: set(&["1:1"]),
        export: set(&["1:1", "1:3"]),
    };
    assert_eq!(
        held.surplus_over(&want),
        L2VniConfig {
            rd: None,
            import: set(&["1:2"]),
            export: BTreeSet::new()
        },
        "a replaced RD needs no `no rd`"
    );
    let no_rd = L2VniConfig { rd: None, ..want };
    assert_eq!(held.surplus_over(&no_rd).rd, Some(rt("64512:2001")));
    assert!(held.surplus_over(&held).is_empty());
}

#[test]
fn removal_text_and_its_effect_on_the_blocks_read_before() {
    let asn = "64999".parse().unwrap();
    let text = l2_vni_removal(
        &asn,
        &[
            L2VniRemoval::Lines {
                vni: 2001,
                lines: L2VniConfig {
                    rd: Some(rt("64512:2001")),
                    import: BTreeSet::new(),
                    export: set(&["64512:3"]),
                },
            },
            L2VniRemoval::Block(2002),
        ],
    );
    assert_eq!(
        text,
        "\nrouter bgp 64999\n  address-family l2vpn evpn\n    vni 2001\n      no rd 64512:2001\n      no route-target export 64512:3\n    exit-vni\n    no vni 2002\n  exit-address-family\n"
    );
    let mut vnis = l2_vnis_of_running_config(RUNNING).vnis;
    forget_l2_vni_removal(&text, &mut vnis);
    assert_eq!(vnis.keys().copied().collect::<Vec<_>>(), [2001]);
    assert_eq!(
        vnis[&2001],
        L2VniConfig {
            rd: None,
            import: set(&["64512:1"]),
            export: set(&["64512:1"])
        }
    );
}

#[test]
fn the_config_travels_in_json_as_frr_prints_it() {
    let c = L2VniConfig {
        rd: Some(rt("192.0.2.1:7")),
        import: set(&["1:1"]),
        export: BTreeSet::new(),
    };
    let j = serde_json::to_value(&c).unwrap();
    assert_eq!(
        j,
        serde_json::json!({"rd": "192.0.2.1:7", "import": ["1:1"], "export": []})
    );
    assert_eq!(serde_json::from_value::<L2VniConfig>(j).unwrap(), c);
    assert!(
        serde_json::from_value::<L2VniConfig>(serde_json::json!({"rd": "x\nno router bgp"}))
            .is_err()
    );
}
