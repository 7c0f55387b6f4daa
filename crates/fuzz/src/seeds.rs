//! The real inputs the structure-aware targets start from: the golden
//! scenarios' OVN databases and node states, and the three schemas, built
//! into the harness so a fuzz input only names which one to start from.

use std::sync::OnceLock;

use serde_json::Value;

/// Every conformance scenario (`fixtures/conformance/scenarios`), by file name.
pub const SCENARIOS: &[(&str, &str)] = &[
    (
        "evpn-nb-vrf.json",
        include_str!("../../../fixtures/conformance/scenarios/evpn-nb-vrf.json"),
    ),
    (
        "evpn-sb-basic.json",
        include_str!("../../../fixtures/conformance/scenarios/evpn-sb-basic.json"),
    ),
    (
        "evpn-sb-lo-local-ip.json",
        include_str!("../../../fixtures/conformance/scenarios/evpn-sb-lo-local-ip.json"),
    ),
    (
        "frr-and-evpn-renderings.json",
        include_str!("../../../fixtures/conformance/scenarios/frr-and-evpn-renderings.json"),
    ),
    (
        "nb-address-scopes.json",
        include_str!("../../../fixtures/conformance/scenarios/nb-address-scopes.json"),
    ),
    (
        "nb-fip-centralized.json",
        include_str!("../../../fixtures/conformance/scenarios/nb-fip-centralized.json"),
    ),
    (
        "nb-fip.json",
        include_str!("../../../fixtures/conformance/scenarios/nb-fip.json"),
    ),
    (
        "nb-gateway-subnet-advertisement.json",
        include_str!(
            "../../../fixtures/conformance/scenarios/nb-gateway-subnet-advertisement.json"
        ),
    ),
    (
        "nb-ipv6-gua-only.json",
        include_str!("../../../fixtures/conformance/scenarios/nb-ipv6-gua-only.json"),
    ),
    (
        "nb-pf-fip.json",
        include_str!("../../../fixtures/conformance/scenarios/nb-pf-fip.json"),
    ),
    (
        "nb-provider-vm-withdraw-by-sync.json",
        include_str!(
            "../../../fixtures/conformance/scenarios/nb-provider-vm-withdraw-by-sync.json"
        ),
    ),
    (
        "nb-provider-vm-withdraw.json",
        include_str!("../../../fixtures/conformance/scenarios/nb-provider-vm-withdraw.json"),
    ),
    (
        "nb-provider-vm.json",
        include_str!("../../../fixtures/conformance/scenarios/nb-provider-vm.json"),
    ),
    (
        "nb-tenant-host-method.json",
        include_str!("../../../fixtures/conformance/scenarios/nb-tenant-host-method.json"),
    ),
    (
        "nb-underlay-routing-tables-regression.json",
        include_str!(
            "../../../fixtures/conformance/scenarios/nb-underlay-routing-tables-regression.json"
        ),
    ),
    (
        "nb-vlan-provider-vm.json",
        include_str!("../../../fixtures/conformance/scenarios/nb-vlan-provider-vm.json"),
    ),
    (
        "sb-gateway-and-tenant-subnet.json",
        include_str!("../../../fixtures/conformance/scenarios/sb-gateway-and-tenant-subnet.json"),
    ),
    (
        "sb-sync-provider-vm.json",
        include_str!("../../../fixtures/conformance/scenarios/sb-sync-provider-vm.json"),
    ),
    (
        "sb-tenant-host.json",
        include_str!("../../../fixtures/conformance/scenarios/sb-tenant-host.json"),
    ),
    (
        "sb-withdraw-provider-vm.json",
        include_str!("../../../fixtures/conformance/scenarios/sb-withdraw-provider-vm.json"),
    ),
    (
        "stretched-l2-basic.json",
        include_str!("../../../fixtures/conformance/scenarios/stretched-l2-basic.json"),
    ),
];

/// The schemas of OVN_Northbound, OVN_Southbound and Open_vSwitch.
pub const SCHEMAS: [&str; 3] = [
    include_str!("../../../fixtures/schemas/ovn-nb.ovsschema"),
    include_str!("../../../fixtures/schemas/ovn-sb.ovsschema"),
    include_str!("../../../fixtures/schemas/vswitch.ovsschema"),
];

/// The scenarios parsed once (a scenario that does not parse is a broken
/// fixture, found by the conformance runner; it is left out here).
pub fn scenarios() -> &'static [(&'static str, Value)] {
    static PARSED: OnceLock<Vec<(&'static str, Value)>> = OnceLock::new();
    PARSED.get_or_init(|| {
        SCENARIOS
            .iter()
            .filter_map(|(name, text)| Some((*name, serde_json::from_str(text).ok()?)))
            .collect()
    })
}

/// The schemas parsed once, as JSON.
pub fn schema_values() -> &'static [Value] {
    static PARSED: OnceLock<Vec<Value>> = OnceLock::new();
    PARSED.get_or_init(|| {
        SCHEMAS
            .iter()
            .filter_map(|text| serde_json::from_str(text).ok())
            .collect()
    })
}
