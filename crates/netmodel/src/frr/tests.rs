use super::*;
use serde_json::Value;

fn dev(s: &str) -> DevName {
    DevName::new(s).unwrap()
}

fn rds(list: &[&str]) -> Vec<RouteTarget> {
    list.iter().map(|s| s.parse().unwrap()).collect()
}

/// The `vtysh_config` texts of a scenario file's step, in order.
fn recorded(file: &str, step: usize) -> Vec<String> {
    let v: Value = serde_json::from_str(file).unwrap();
    v["steps"][step]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["op"] == "vtysh_config")
        .map(|c| c["args"]["config"].as_str().unwrap().to_string())
        .collect()
}

fn frr_texts(file: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(file).unwrap();
    v["frr"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect()
}

const RENDERINGS: &str =
    include_str!("../../../../fixtures/conformance/scenarios/frr-and-evpn-renderings.json");
const NB_VRF: &str = include_str!("../../../../fixtures/conformance/scenarios/evpn-nb-vrf.json");
const SB_BASIC: &str =
    include_str!("../../../../fixtures/conformance/scenarios/evpn-sb-basic.json");

fn add_1001(redistribute: Vec<RedistSource>) -> AddVrf {
    AddVrf {
        vrf: dev("vrf-1001"),
        vni: 1001,
        asn: "64999".parse().unwrap(),
        redistribute,
        rd: RouteDistinguisher::of_ip_and_vni("10.1.1.1".parse().unwrap(), 1001).unwrap(),
        route_targets: vec![],
        import_targets: vec![],
        export_targets: vec![],
    }
}

#[test]
fn add_vrf_renders_the_recorded_texts_byte_for_byte() {
    use RedistSource::*;
    // Step 3: vni only, rd from evpn_local_ip (Python's set gave kernel first).
    assert_eq!(
        recorded(RENDERINGS, 3),
        [add_vrf(&add_1001(vec![Kernel, Connected]))]
    );
    // Step 4: rd, rt, it and et from the annotations.
    let full = AddVrf {
        vrf: dev("vrf-2002"),
        vni: 2002,
        asn: "65001".parse().unwrap(),
        redistribute: vec![Connected],
        rd: "65001:2002".parse().unwrap(),
        route_targets: rds(&["65001:2002"]),
        import_targets: rds(&["65001:1"]),
        export_targets: rds(&["65001:2"]),
    };
    assert_eq!(recorded(RENDERINGS, 4), [add_vrf(&full)]);
    // The SB driver's (twice: start and sync).
    let sb = frr_texts(SB_BASIC);
    assert_eq!(sb[0], add_vrf(&add_1001(vec![Connected])));
    assert_eq!(sb[1], sb[0]);
    // The NB vrf mode's, with every list of the annotations.
    let nb = AddVrf {
        redistribute: vec![Connected, Kernel],
        rd: "64999:1001".parse().unwrap(),
        route_targets: rds(&["64999:1001"]),
        import_targets: rds(&["64999:2001"]),
        export_targets: rds(&["64999:3001"]),
        ..add_1001(vec![])
    };
    assert_eq!(frr_texts(NB_VRF)[0], add_vrf(&nb));
}

#[test]
fn del_vrf_renders_the_recorded_text_with_upstreams_interface() {
    let v = DelVrf {
        vrf: dev("vrf-1001"),
        asn: "64999".parse().unwrap(),
        interfaces: vec![dev("veth-vrf-1001")],
    };
    assert_eq!(recorded(RENDERINGS, 5), [del_vrf(&v)]);
    assert_eq!(frr_texts(SB_BASIC)[2], del_vrf(&v));
    assert_eq!(frr_texts(NB_VRF)[2], del_vrf(&v));
    // The NB vrf mode's real interface instead (upstream defect), or none.
    let nb = DelVrf {
        interfaces: vec![dev("vrfdd3b5a95-aa")],
        ..v.clone()
    };
    assert_eq!(
        del_vrf(&nb),
        "\nno vrf vrf-1001\nno interface vrfdd3b5a95-aa\nno router bgp 64999 vrf vrf-1001\n"
    );
    let bare = DelVrf {
        interfaces: vec![],
        ..v
    };
    assert_eq!(
        del_vrf(&bare),
        "\nno vrf vrf-1001\nno router bgp 64999 vrf vrf-1001\n"
    );
}

fn opts(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn nd_renders_the_recorded_texts_byte_for_byte() {
    let prefix: Ipv6Net = "2001:db8:1::/64".parse().unwrap();
    // Step 7: stateless with two DNS servers.
    let o = opts(&[
        ("dns_server", "{2001:4860:4860::8888, 2001:4860:4860::8844}"),
        ("dhcpv6_stateless", "true"),
    ]);
    let v = Nd::from_dhcpv6_options(dev("vlan-100"), prefix, &o).unwrap();
    assert_eq!(recorded(RENDERINGS, 7), [nd(&v)]);
    // Step 8: no options (SLAAC off).
    let v = Nd::from_dhcpv6_options(dev("vlan-100"), prefix, &opts(&[])).unwrap();
    assert!(!v.autoconfig && v.dns_servers.is_empty());
    assert_eq!(recorded(RENDERINGS, 8), [nd(&v)]);
    // The NB vrf mode's, one DNS server.
    let o = opts(&[
        ("dns_server", "{2001:db8::53}"),
        ("dhcpv6_stateless", "true"),
    ]);
    let v = Nd::from_dhcpv6_options(dev("vrfdd3b5a95-aa"), "2001:db8::/64".parse().unwrap(), &o)
        .unwrap();
    assert_eq!(frr_texts(NB_VRF)[1], nd(&v));
}

#[test]
fn nd_options_are_read_strictly() {
    let p: Ipv6Net = "2001:db8::/64".parse().unwrap();
    let read = |pairs: &[(&str, &str)]| Nd::from_dhcpv6_options(dev("v"), p, &opts(pairs));
    // Only `true` turns SLAAC on, as upstream compares.
    assert!(!read(&[("dhcpv6_stateless", "True")]).unwrap().autoconfig);
    assert!(!read(&[("dhcpv6_stateless", "false")]).unwrap().autoconfig);
    assert_eq!(
        read(&[("dns_server", "2001:db8::1")]).unwrap().dns_servers,
        ["2001:db8::1".parse::<Ipv6Addr>().unwrap()]
    );
    assert!(read(&[("dns_server", "{}")])
        .unwrap()
        .dns_servers
        .is_empty());
    for bad in [
        "{2001:db8::1\n exit}",
        "{10.0.0.1}",
        "{2001:db8::1",
        "{2001:db8::1,}",
        "{fe80::1%eth0}",
    ] {
        assert_eq!(
            read(&[("dns_server", bad)]),
            Err(FrrValueError::BadDnsServers(bad.to_string())),
            "{bad:?}"
        );
    }
}

#[test]
fn asn_and_route_distinguishers_accept_only_their_forms() {
    for good in ["1", "64999", "4294967295", "1.10", "65535.65535"] {
        assert_eq!(good.parse::<Asn>().unwrap().as_str(), good);
    }
    for bad in [
        "",
        "0",
        "0.0",
        "064999",
        "4294967296",
        "65536.1",
        "1.",
        "-1",
        "+1",
        "64999\nexit",
        "６４９９９",
        "1 2",
    ] {
        assert_eq!(
            bad.parse::<Asn>(),
            Err(FrrValueError::BadAsn(bad.to_string())),
            "{bad:?}"
        );
    }
    for good in [
        "64999:1001",
        "0:4294967295",
        "65535:4294967295",
        "4200000000:65535",
        "10.1.1.1:65535",
        "192.0.2.1:0",
    ] {
        let rd: RouteDistinguisher = good.parse().unwrap();
        assert_eq!(rd.to_string(), good);
    }
    for bad in [
        "",
        "64999",
        "64999:",
        ":1",
        "4200000000:65536",
        "10.1.1.1:65536",
        "10.1.1:1",
        "010.1.1.1:1",
        "64999:01",
        "64999:1:2",
        "64999:1\nexit",
        "64999 :1",
        "65001:１",
        "None:1001",
        "4294967296:1",
    ] {
        assert_eq!(
            bad.parse::<RouteDistinguisher>(),
            Err(FrrValueError::BadRouteDistinguisher(bad.to_string())),
            "{bad:?}"
        );
    }
    let ip4: IpAddr = "10.1.1.1".parse().unwrap();
    assert_eq!(
        RouteDistinguisher::of_ip_and_vni(ip4, 1001)
            .unwrap()
            .to_string(),
        "10.1.1.1:1001"
    );
    assert!(RouteDistinguisher::of_ip_and_vni(ip4, 65536).is_err());
    assert!(RouteDistinguisher::of_ip_and_vni("2001:db8::1".parse().unwrap(), 1).is_err());
}

// `show running-config` of FRR 8.4 after the SB driver's add-vrf and
// an ND text, with an operator's own VRF and interface stanzas.
const RUNNING_SB: &str = "Building configuration...

Current configuration:
!
frr version 8.4.4
frr defaults traditional
hostname node1
log syslog informational
service integrated-vtysh-config
!
vrf bgp-vrf
exit-vrf
!
vrf vrf-1001
 vni 1001
exit-vrf
!
vrf vrf-2002
 vni 2002
exit-vrf
!
vrf vrf-blue
 vni 3003
exit-vrf
!
vrf vrf-4004
 vni 4
exit-vrf
!
interface veth-vrf-1001 vrf vrf-1001
 ipv6 nd managed-config-flag
 ipv6 nd prefix 2001:db8:1::/64 no-autoconfig
 no ipv6 nd suppress-ra
exit
!
interface eth1 vrf vrf-1001
 ip address 192.0.2.1/24
exit
!
interface veth-vrf-3003 vrf vrf-blue
exit
!
interface bgp-nic
 ip address 172.16.0.1/32
exit
!
router bgp 64999
 bgp router-id 192.168.100.11
 !
 address-family ipv4 unicast
  import vrf bgp-vrf
 exit-address-family
exit
!
router bgp 64999 vrf vrf-1001
 !
 address-family ipv4 unicast
  redistribute connected
 exit-address-family
 !
 address-family l2vpn evpn
  advertise ipv4 unicast
  advertise ipv6 unicast
  rd 10.1.1.1:1001
 exit-address-family
exit
!
router bgp 64999 vrf vrf-blue
exit
!
end
";

#[test]
fn running_config_gives_the_agents_evpn_vrfs() {
    let got = evpn_vrfs_of_running_config(RUNNING_SB);
    let want = EvpnRunning {
        vrfs: BTreeMap::from([
            (
                1001,
                EvpnVrfSeen {
                    asn: Some("64999".into()),
                    interfaces: BTreeSet::from(["veth-vrf-1001".into()]),
                },
            ),
            // A VRF without its BGP instance (a failed add-vrf half-way).
            (2002, EvpnVrfSeen::default()),
        ]),
        unplaced_interfaces: BTreeSet::new(),
    };
    assert_eq!(got, want);
}

// The NB vrf mode on a release that prints interfaces without their
// VRF (VRF-lite), with CRLF line ends and tab indentation.
#[test]
fn running_config_interfaces_without_their_vrf() {
    let text = "!\r\nvrf vrf-1001\r\n\tvni 1001\r\nexit-vrf\r\n!\r\n\
                interface vrfdd3b5a95-aa\r\n ipv6 nd prefix 2001:db8::/64\r\nexit\r\n!\r\n\
                interface veth-vrf-1001\r\nexit\r\n!\r\n\
                interface veth-vrf-7\r\nexit\r\n!\r\n\
                interface vrfzz3b5a95-aa\r\nexit\r\n!\r\n\
                router bgp 65000.1 vrf vrf-1001\r\nexit\r\n";
    let got = evpn_vrfs_of_running_config(text);
    assert_eq!(
        got.vrfs,
        BTreeMap::from([(
            1001,
            EvpnVrfSeen {
                asn: Some("65000.1".into()),
                interfaces: BTreeSet::from(["veth-vrf-1001".into()]),
            }
        )])
    );
    assert_eq!(
        got.unplaced_interfaces,
        BTreeSet::from(["veth-vrf-7".into(), "vrfdd3b5a95-aa".into()])
    );
}

#[test]
fn running_config_parser_takes_any_text() {
    assert_eq!(evpn_vrfs_of_running_config(""), EvpnRunning::default());
    for junk in [
        "vrf",
        "vrf vrf-1\n",
        " vni 1\n",
        "vrf vrf-1\nvni 1\n",
        "router bgp\nrouter bgp 1 vrf\n",
        "interface\ninterface a vrf\n",
        "vrf vrf-1\n vni x\n",
        "vrf vrf-1\n vni 99999999999\n",
        "\u{0}\u{feff}vrf vrf-1\n vni 1\n",
    ] {
        assert!(
            evpn_vrfs_of_running_config(junk).vrfs.is_empty(),
            "{junk:?}"
        );
    }
    // `vni N` with FRR's optional trailing keyword still counts.
    let t = "vrf vrf-5\n vni 5 prefix-routes-only\nexit-vrf\n";
    assert!(evpn_vrfs_of_running_config(t).vrfs.contains_key(&5));
}

#[test]
fn l2_vni_text_has_advertise_all_vni_and_a_vni_block_only_with_annotations() {
    let bare = L2Vni {
        vni: 2001,
        rd: None,
        route_targets: Vec::new(),
        import_targets: Vec::new(),
        export_targets: Vec::new(),
    };
    assert_eq!(l2_vni_block(&bare), "");
    let asn: Asn = "64999".parse().unwrap();
    assert_eq!(
        advertise_all_vni(&asn, &[l2_vni_block(&bare)]),
        "\nrouter bgp 64999\n  address-family l2vpn evpn\n    advertise-all-vni\n  exit-address-family\n"
    );
    let full = L2Vni {
        rd: Some("64512:2001".parse().unwrap()),
        route_targets: rds(&["64512:1"]),
        import_targets: rds(&["64512:3"]),
        export_targets: rds(&["10.0.0.1:2"]),
        ..bare
    };
    assert_eq!(
        advertise_all_vni(&asn, &[l2_vni_block(&full)]),
        "\nrouter bgp 64999\n  address-family l2vpn evpn\n    advertise-all-vni\n    vni 2001\n      rd 64512:2001\n      route-target import 64512:1\n      route-target export 64512:1\n      route-target export 10.0.0.1:2\n      route-target import 64512:3\n    exit-vni\n  exit-address-family\n"
    );
}
