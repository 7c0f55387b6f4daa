//! Device names the agent derives from other names (one home for each rule).
//!
//! Every derivation is a total function: it cuts on a char boundary within
//! the kernel's 15-byte limit and never panics, whatever the input name
//! holds (non-ASCII bridge names from `ovn-bridge-mappings` or a foreign
//! device on the node included).

use crate::DevName;

/// The VLAN device of `vlan` on `bridge`: upstream's `<bridge[:10]>.<vlan>`.
///
/// Upstream cuts the bridge at 10 characters. For ASCII names that always
/// fits (10 + 1 + 4 bytes); a non-ASCII name would not, so the cut is also
/// held to the bytes left after `.<vlan>`, on a char boundary. ASCII names
/// get upstream's name exactly.
pub fn vlan_device(bridge: &DevName, vlan: u16) -> DevName {
    let suffix = format!(".{vlan}");
    let prefix = prefix_within(bridge.as_str(), 10, DevName::MAX_LEN - suffix.len());
    DevName::from_valid(&format!("{prefix}{suffix}"))
}

/// The longest prefix of `s` of at most `max_chars` characters and
/// `max_bytes` bytes, ending on a char boundary.
fn prefix_within(s: &str, max_chars: usize, max_bytes: usize) -> &str {
    let mut end = 0;
    for (n, (i, c)) in s.char_indices().enumerate() {
        if n == max_chars || i + c.len_utf8() > max_bytes {
            break;
        }
        end = i + c.len_utf8();
    }
    &s[..end]
}

/// The per-VNI device names of the EVPN modes (upstream's
/// `OVN_EVPN_*_PREFIX` constants). A VNI is 24 bits; a name that would not
/// fit the kernel's 15 bytes is `None` (upstream would fail at creation),
/// and the caller skips that VNI with a note.
pub mod evpn {
    use crate::DevName;

    fn named(prefix: &str, tail: &str) -> Option<DevName> {
        DevName::new(&format!("{prefix}{tail}")).ok()
    }

    /// `vrf-<vni>`: the tenant VRF, table = VNI.
    pub fn vrf(vni: u32) -> Option<DevName> {
        named("vrf-", &vni.to_string())
    }
    /// `br-<vni>`: the Linux bridge holding the VXLAN device.
    pub fn bridge(vni: u32) -> Option<DevName> {
        named("br-", &vni.to_string())
    }
    /// `vxlan-<vni>`.
    pub fn vxlan(vni: u32) -> Option<DevName> {
        named("vxlan-", &vni.to_string())
    }
    /// `lo-<vni>`: the SB driver's dummy holding the tenant VM /32s.
    pub fn lo(vni: u32) -> Option<DevName> {
        named("lo-", &vni.to_string())
    }
    /// `veth-vrf-<vni>` / `veth-ovs-<vni>`: the SB driver's veth pair on a
    /// flat provider network (VNIs of up to 6 digits fit).
    pub fn sb_veth(vni: u32) -> Option<(DevName, DevName)> {
        Some((
            named("veth-vrf-", &vni.to_string())?,
            named("veth-ovs-", &vni.to_string())?,
        ))
    }
    /// `vlan-<vni>`: the SB driver's OVS internal port on a VLAN provider
    /// network.
    pub fn sb_vlan(vni: u32) -> Option<DevName> {
        named("vlan-", &vni.to_string())
    }
    /// `vrf<uuid[:11]>` / `ovs<uuid[:11]>`: the NB vrf mode's veth pair,
    /// named after the localnet port's uuid (`str(uuid)[:11]`, 14 bytes).
    pub fn nb_veth(localnet_uuid: &str) -> Option<(DevName, DevName)> {
        let head = localnet_uuid.get(..11)?;
        Some((named("vrf", head)?, named("ovs", head)?))
    }

    /// The VNI that an agent-named EVPN VRF (`vrf-<n>`) carries.
    pub fn vni_of_vrf(name: &str) -> Option<u32> {
        vni_after(name, "vrf-")
    }

    /// The VNI of an agent-named `lo-<n>`.
    pub fn vni_of_lo(name: &str) -> Option<u32> {
        vni_after(name, "lo-")
    }

    /// The VNI of an SB driver's VRF-side veth (`veth-vrf-<n>`).
    pub fn vni_of_sb_veth(name: &str) -> Option<u32> {
        vni_after(name, "veth-vrf-")
    }

    /// Whether `name` has the shape of the NB vrf mode's VRF-side veth:
    /// `vrf` and the first 11 characters of a uuid (8 hex digits, `-`, 2
    /// hex digits).
    pub fn is_nb_vrf_veth(name: &str) -> bool {
        let Some(head) = name.strip_prefix("vrf") else {
            return false;
        };
        let b = head.as_bytes();
        b.len() == 11
            && b[8] == b'-'
            && b.iter()
                .enumerate()
                .all(|(i, c)| i == 8 || c.is_ascii_hexdigit())
    }

    /// The VNI written in decimal after `prefix` (no sign, no leading zero,
    /// at most [`crate::MAX_VNI`]).
    fn vni_after(name: &str, prefix: &str) -> Option<u32> {
        let digits = name.strip_prefix(prefix)?;
        if digits.is_empty()
            || digits.starts_with('0')
            || !digits.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        digits.parse().ok().filter(|v| *v <= crate::MAX_VNI)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(s: &str) -> DevName {
        DevName::new(s).unwrap()
    }

    #[test]
    fn evpn_names_follow_upstreams_prefixes_and_refuse_what_does_not_fit() {
        assert_eq!(evpn::vrf(1001).unwrap().as_str(), "vrf-1001");
        assert_eq!(evpn::bridge(1001).unwrap().as_str(), "br-1001");
        assert_eq!(evpn::vxlan(16_777_215).unwrap().as_str(), "vxlan-16777215");
        assert_eq!(evpn::lo(1001).unwrap().as_str(), "lo-1001");
        let (v, o) = evpn::sb_veth(1001).unwrap();
        assert_eq!((v.as_str(), o.as_str()), ("veth-vrf-1001", "veth-ovs-1001"));
        assert!(evpn::sb_veth(999_999).is_some());
        assert!(evpn::sb_veth(1_000_000).is_none(), "17 bytes");
        let (v, o) = evpn::nb_veth("dd3b5a95-aa01-4c1e-9d0a-1234567890ab").unwrap();
        assert_eq!(
            (v.as_str(), o.as_str()),
            ("vrfdd3b5a95-aa", "ovsdd3b5a95-aa")
        );
        assert!(evpn::nb_veth("short").is_none());
        // A multi-byte char across the cut is refused, not split.
        assert!(evpn::nb_veth("dd3b5a95-aéxxxxx").is_none());
        assert_eq!(evpn::vni_of_vrf("vrf-1001"), Some(1001));
        assert_eq!(evpn::vni_of_sb_veth("veth-vrf-1001"), Some(1001));
        assert_eq!(evpn::vni_of_sb_veth("veth-vrf-01"), None);
        assert_eq!(evpn::vni_of_sb_veth("veth-ovs-1001"), None);
        assert!(evpn::is_nb_vrf_veth(v.as_str()));
        for other in [
            "vrf-1001",
            "vrfdd3b5a95-a",
            "vrfdd3b5a95-aaa",
            "vrfdd3b5a95_aa",
            "vrfzz3b5a95-aa",
        ] {
            assert!(!evpn::is_nb_vrf_veth(other), "{other}");
        }
        for foreign in [
            "vrf-blue",
            "vrf-",
            "vrf-01",
            "vrf-99999999",
            "bgp-vrf",
            "vrf-1x",
        ] {
            assert_eq!(evpn::vni_of_vrf(foreign), None, "{foreign}");
        }
    }

    #[test]
    fn ascii_bridges_get_upstreams_name() {
        assert_eq!(
            vlan_device(&dev("br-provider1"), 4094).as_str(),
            "br-provide.4094"
        );
        assert_eq!(vlan_device(&dev("br-ex"), 100).as_str(), "br-ex.100");
        assert_eq!(vlan_device(&dev("b"), 0).as_str(), "b.0");
    }

    #[test]
    fn non_ascii_bridges_are_cut_on_a_char_boundary_within_the_limit() {
        // 5 two-byte chars (10 bytes) + ".4094" is exactly 15 bytes.
        assert_eq!(vlan_device(&dev("ééééé"), 4094).as_str(), "ééééé.4094");
        // 7 two-byte chars: only 5 fit before ".4094".
        assert_eq!(vlan_device(&dev("ééééééé"), 4094).as_str(), "ééééé.4094");
        // 3-byte chars: 3 fit before ".4094" (9 + 5 = 14 bytes).
        assert_eq!(
            vlan_device(&dev("網橋網橋網"), 4094).as_str(),
            "網橋網.4094"
        );
        // A 4-byte char after 9 bytes of ASCII does not fit with ".10".
        assert_eq!(
            vlan_device(&dev("br-abcdef🦀"), 10).as_str(),
            "br-abcdef.10"
        );
    }

    #[test]
    fn every_valid_bridge_name_gives_a_valid_vlan_device() {
        let names = [
            "a",
            "br-ex",
            "ééééééé",
            "網橋網橋網",
            "🦀🦀🦀",
            "a🦀b🦀c🦀",
            "abcdefghijklmno",
        ];
        for n in names {
            for vlan in [0, 1, 99, 4094, u16::MAX] {
                let v = vlan_device(&dev(n), vlan);
                assert!(v.as_str().len() <= DevName::MAX_LEN, "{n} {vlan}: {v}");
                assert!(v.as_str().ends_with(&format!(".{vlan}")), "{n} {vlan}: {v}");
                assert!(n.starts_with(v.as_str().rsplit_once('.').unwrap().0));
            }
        }
    }
}
