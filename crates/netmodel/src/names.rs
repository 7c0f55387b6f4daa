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

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(s: &str) -> DevName {
        DevName::new(s).unwrap()
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
