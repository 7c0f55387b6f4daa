//! OVN's address strings, read in one place for the NB parser, the SB
//! parser and the event filters (`obgp-events`):
//!
//! - an address-list entry, one element of LSP `addresses` or of SB
//!   Port_Binding `mac`: `"<mac> <ip> <ip>..."`, or one of the keywords
//!   [`UNKNOWN`], [`DYNAMIC`], [`ROUTER`] standing alone;
//! - a `nat_addresses` entry of an SB patch port:
//!   `"<mac> <ip>... is_chassis_resident(\"<port>\")"`.
//!
//! Words are separated by runs of whitespace and the entry is trimmed, as
//! OVN itself reads these columns. (Upstream's Python helpers split on
//! single spaces; the two differ only for entries with several spaces or
//! tabs between words, which OVN and Neutron do not write.) A keyword
//! counts only as the whole entry: `"dynamic 10.0.0.5"` is a MAC word
//! `dynamic` and an IP.
//!
//! [`Entry::read`] only splits, borrowing from the row, for the event
//! filters that look at words; [`Entry::mac_ips`] and
//! [`parse_nat_addresses`] parse into typed values for the snapshot.

use std::net::IpAddr;

use obgp_netmodel::MacAddr;

/// `unknown`: the port accepts traffic for addresses it does not list
/// (config-drive ports: their IPs are in `neutron:cidrs`).
pub const UNKNOWN: &str = "unknown";
/// `dynamic`: OVN assigns the addresses (`dynamic_addresses`).
pub const DYNAMIC: &str = "dynamic";
/// `router`: the switch side of a router port takes its peer's addresses.
pub const ROUTER: &str = "router";

/// Longest value an [`AddressError`] quotes, in characters: a garbled
/// column can be megabytes, the log line should not be.
const QUOTED_MAX: usize = 64;

/// A word of an address string that does not parse, quoted (shortened to
/// [`QUOTED_MAX`] characters).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    #[error("bad MAC {0:?}")]
    Mac(String),
    #[error("bad IP {0:?}")]
    Ip(String),
    /// A `nat_addresses` entry without a MAC, an IP that does not parse,
    /// or no `is_chassis_resident("<port>")` at its end.
    #[error("bad nat_addresses entry {0:?}")]
    NatEntry(String),
}

/// `value`, cut after [`QUOTED_MAX`] characters (on a character boundary).
fn quoted(value: &str) -> String {
    match value.char_indices().nth(QUOTED_MAX) {
        None => value.to_string(),
        Some((cut, _)) => format!("{}…", &value[..cut]),
    }
}

/// One address-list entry, split but not parsed: its words borrow from the
/// row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry<'a> {
    /// Empty, or only whitespace.
    Empty,
    /// [`UNKNOWN`].
    Unknown,
    /// [`DYNAMIC`].
    Dynamic,
    /// [`ROUTER`].
    Router,
    /// `"<mac> <ip>..."`: the first word, and the rest (possibly empty).
    Addresses { mac: &'a str, ips: &'a str },
}

/// A MAC and the IPs that follow it, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MacIps<T> {
    pub mac: MacAddr,
    pub ips: Vec<T>,
}

impl<'a> Entry<'a> {
    /// Splits one entry.
    pub fn read(entry: &'a str) -> Entry<'a> {
        let entry = entry.trim();
        match entry {
            "" => Entry::Empty,
            UNKNOWN => Entry::Unknown,
            DYNAMIC => Entry::Dynamic,
            ROUTER => Entry::Router,
            _ => {
                let (mac, ips) = entry.split_once(char::is_whitespace).unwrap_or((entry, ""));
                Entry::Addresses {
                    mac,
                    ips: ips.trim_start(),
                }
            }
        }
    }

    /// The words after the MAC (none for a keyword or an empty entry).
    pub fn ip_words(&self) -> impl Iterator<Item = &'a str> {
        let ips = match self {
            Entry::Addresses { ips, .. } => *ips,
            _ => "",
        };
        ips.split_whitespace()
    }

    /// Whether a word follows the MAC: upstream's
    /// `port_utils.has_ip_address_defined`.
    pub fn has_ip(&self) -> bool {
        self.ip_words().next().is_some()
    }

    /// The MAC and IPs of a `"<mac> <ip>..."` entry, each IP word read by
    /// `ip`; `None` for a keyword or an empty entry.
    pub fn mac_ips<T>(
        &self,
        ip: impl Fn(&str) -> Option<T>,
    ) -> Option<Result<MacIps<T>, AddressError>> {
        match self {
            Entry::Addresses { mac, ips } => Some(parse_mac_ips(mac, ips, ip)),
            _ => None,
        }
    }
}

/// Parses the two parts of an [`Entry::Addresses`]: the MAC, and each
/// whitespace-separated word of `ips` read by `ip`.
pub fn parse_mac_ips<T>(
    mac: &str,
    ips: &str,
    ip: impl Fn(&str) -> Option<T>,
) -> Result<MacIps<T>, AddressError> {
    let mac = mac
        .parse::<MacAddr>()
        .map_err(|_| AddressError::Mac(quoted(mac)))?;
    let ips = ips
        .split_whitespace()
        .map(|w| ip(w).ok_or_else(|| AddressError::Ip(quoted(w))))
        .collect::<Result<_, _>>()?;
    Ok(MacIps { mac, ips })
}

/// One `nat_addresses` entry of a patch Port_Binding:
/// `"<mac> <ip>... is_chassis_resident(\"<port>\")"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NatAddresses {
    pub mac: MacAddr,
    pub ips: Vec<IpAddr>,
    /// The port whose chassis hosts these addresses.
    pub resident_port: String,
}

/// Parses one `nat_addresses` entry; any part that does not parse makes
/// the whole entry an [`AddressError::NatEntry`].
pub fn parse_nat_addresses(entry: &str) -> Result<NatAddresses, AddressError> {
    let garbled = || AddressError::NatEntry(quoted(entry));
    let entry = entry.trim();
    let (addresses, last) = entry.rsplit_once(char::is_whitespace).ok_or_else(garbled)?;
    let resident_port = last
        .strip_prefix("is_chassis_resident(\"")
        .and_then(|r| r.strip_suffix("\")"))
        .filter(|p| !p.is_empty())
        .ok_or_else(garbled)?
        .to_string();
    let (mac, ips) = match Entry::read(addresses) {
        Entry::Addresses { mac, ips } => (mac, ips),
        _ => return Err(garbled()),
    };
    let MacIps { mac, ips } =
        parse_mac_ips(mac, ips, |w| w.parse::<IpAddr>().ok()).map_err(|_| garbled())?;
    Ok(NatAddresses {
        mac,
        ips,
        resident_port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn host_ip(w: &str) -> Option<IpAddr> {
        w.parse().ok()
    }

    #[test]
    fn keywords_stand_alone_and_carry_no_address() {
        assert_eq!(Entry::read("unknown"), Entry::Unknown);
        assert_eq!(Entry::read(" dynamic "), Entry::Dynamic);
        assert_eq!(Entry::read("router"), Entry::Router);
        assert_eq!(Entry::read(""), Entry::Empty);
        assert_eq!(Entry::read(" \t "), Entry::Empty);
        for keyword in ["unknown", "dynamic", "router", ""] {
            let e = Entry::read(keyword);
            assert!(!e.has_ip(), "{keyword:?}");
            assert_eq!(e.mac_ips(host_ip), None, "{keyword:?}");
        }
        // A keyword followed by a word is not the keyword: its first word
        // is read as a MAC, which it is not.
        let e = Entry::read("dynamic 10.0.0.5");
        assert!(e.has_ip());
        assert_eq!(
            e.mac_ips(host_ip),
            Some(Err(AddressError::Mac("dynamic".into())))
        );
    }

    #[test]
    fn a_mac_and_several_ips_of_both_families() {
        let e = Entry::read("fa:16:3e:11:11:11 10.0.0.5 2001:db8::5  10.0.0.6\t");
        assert_eq!(
            e,
            Entry::Addresses {
                mac: "fa:16:3e:11:11:11",
                ips: "10.0.0.5 2001:db8::5  10.0.0.6",
            }
        );
        assert_eq!(
            e.ip_words().collect::<Vec<_>>(),
            ["10.0.0.5", "2001:db8::5", "10.0.0.6"]
        );
        let parsed = e.mac_ips(host_ip).unwrap().unwrap();
        assert_eq!(parsed.mac, "fa:16:3e:11:11:11".parse().unwrap());
        assert_eq!(
            parsed.ips,
            [ip("10.0.0.5"), ip("2001:db8::5"), ip("10.0.0.6")]
        );
    }

    #[test]
    fn a_mac_alone_has_no_ip() {
        for entry in [
            "fa:16:3e:11:11:11",
            "fa:16:3e:11:11:11 ",
            "  fa:16:3e:11:11:11",
        ] {
            let e = Entry::read(entry);
            assert!(!e.has_ip(), "{entry:?}");
            assert_eq!(
                e.mac_ips(host_ip).unwrap().unwrap().ips,
                Vec::<IpAddr>::new()
            );
        }
    }

    #[test]
    fn the_ip_reader_decides_on_prefix_lengths() {
        let e = Entry::read("fa:16:3e:aa:aa:01 10.0.0.1/24 2620:52:0:10::1/64");
        assert_eq!(
            e.mac_ips(host_ip),
            Some(Err(AddressError::Ip("10.0.0.1/24".into())))
        );
        let nets = e.mac_ips(crate::neutron::parse_ip_net).unwrap().unwrap();
        assert_eq!(nets.ips[0].to_string(), "10.0.0.1/24");
        assert_eq!(nets.ips[1].to_string(), "2620:52:0:10::1/64");
    }

    #[test]
    fn garbage_names_the_word_that_does_not_parse() {
        assert_eq!(
            Entry::read("zz 1.2.3.4").mac_ips(host_ip),
            Some(Err(AddressError::Mac("zz".into())))
        );
        assert_eq!(
            Entry::read("fa:16:3e:11:11:11 10.0.0.5 10.0.0.300").mac_ips(host_ip),
            Some(Err(AddressError::Ip("10.0.0.300".into())))
        );
        let e = AddressError::Ip("10.0.0.300".into());
        assert_eq!(e.to_string(), "bad IP \"10.0.0.300\"");
    }

    #[test]
    fn non_ascii_is_garbage_not_a_panic() {
        // U+00A0 (no-break space) separates words like any whitespace.
        let e = Entry::read("fa:16:3e:11:11:11\u{a0}10.0.0.5");
        assert_eq!(e.ip_words().collect::<Vec<_>>(), ["10.0.0.5"]);
        assert_eq!(
            Entry::read("fä:16:3e:11:11:11 10.0.0.5").mac_ips(host_ip),
            Some(Err(AddressError::Mac("fä:16:3e:11:11:11".into())))
        );
        assert_eq!(
            Entry::read("fa:16:3e:11:11:11 １0.0.0.5").mac_ips(host_ip),
            Some(Err(AddressError::Ip("１0.0.0.5".into())))
        );
        assert!(
            parse_nat_addresses("fa:16:3e:00:00:01 1.2.3.4 is_chassis_resident(\"é\")").is_ok()
        );
    }

    #[test]
    fn over_long_input_parses_and_its_errors_stay_short() {
        let many: Vec<String> = (0..10_000u32)
            .map(|i| format!("10.{}.{}.{}", i >> 16, (i >> 8) & 0xff, i & 0xff))
            .collect();
        let entry = format!("fa:16:3e:11:11:11 {}", many.join(" "));
        let parsed = Entry::read(&entry).mac_ips(host_ip).unwrap().unwrap();
        assert_eq!(parsed.ips.len(), 10_000);

        let word = "é".repeat(100_000);
        let err = Entry::read(&format!("fa:16:3e:11:11:11 {word}"))
            .mac_ips(host_ip)
            .unwrap()
            .unwrap_err();
        let AddressError::Ip(quoted) = &err else {
            panic!("{err:?}")
        };
        assert_eq!(
            quoted.chars().count(),
            QUOTED_MAX + 1,
            "cut, with an ellipsis"
        );
        assert!(quoted.ends_with('…'));
        let err = parse_nat_addresses(&format!("{word} is_chassis_resident(\"p\")")).unwrap_err();
        assert!(err.to_string().len() < 200, "{err}");
    }

    #[test]
    fn nat_addresses_name_their_resident_port() {
        let n = parse_nat_addresses(
            "fa:16:3e:aa:aa:01 172.24.4.100 2001:db8::100 is_chassis_resident(\"cr-lrp-5\")",
        )
        .unwrap();
        assert_eq!(n.mac, "fa:16:3e:aa:aa:01".parse().unwrap());
        assert_eq!(n.ips, [ip("172.24.4.100"), ip("2001:db8::100")]);
        assert_eq!(n.resident_port, "cr-lrp-5");
        // A MAC alone is an entry without IPs.
        let n = parse_nat_addresses("fa:16:3e:aa:aa:01 is_chassis_resident(\"p\")").unwrap();
        assert!(n.ips.is_empty());
    }

    #[test]
    fn garbled_nat_addresses_quote_the_entry() {
        for bad in [
            "",
            "is_chassis_resident(\"p\")",
            "fa:16:3e:00:00:01 1.2.3.4",
            "fa:16:3e:00:00:01 1.2.3.4 resident(x)",
            "fa:16:3e:00:00:01 1.2.3.4 is_chassis_resident(\"\")",
            "zz 1.2.3.4 is_chassis_resident(\"p\")",
            "fa:16:3e:00:00:01 1.2.3.x is_chassis_resident(\"p\")",
        ] {
            assert_eq!(
                parse_nat_addresses(bad),
                Err(AddressError::NatEntry(bad.into())),
                "{bad:?}"
            );
        }
    }
}
