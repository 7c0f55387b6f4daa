//! Turns an option's raw text into a typed value, with oslo.config's
//! conversion rules and the agent's extra checks; and a typed value into JSON.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::str::FromStr;

use obgp_netmodel::{DevName, IpNet};

use crate::options::Kind;

/// A converted option value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Typed {
    Str(String),
    Int(i64),
    Bool(bool),
    List(Vec<String>),
    Ip(IpAddr),
}

impl Typed {
    /// The value as the `config --format json` output shows it.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Typed::Str(s) => s.clone().into(),
            Typed::Int(i) => (*i).into(),
            Typed::Bool(b) => (*b).into(),
            Typed::List(l) => l.clone().into(),
            Typed::Ip(ip) => ip.to_string().into(),
        }
    }

    /// The value as an INI file would spell it.
    pub fn to_ini(&self) -> String {
        match self {
            Typed::Str(s) => s.clone(),
            Typed::Int(i) => i.to_string(),
            Typed::Bool(b) => b.to_string(),
            Typed::List(l) => l.join(","),
            Typed::Ip(ip) => ip.to_string(),
        }
    }
}

impl crate::options::OptSpec {
    /// Converts `raw` as this option's value (see [`parse`]).
    pub fn parse(&self, raw: &str) -> Result<Typed, String> {
        parse(self.kind, raw)
    }
}

/// Converts `raw` (already unquoted by the INI parser) to `kind`. The error
/// says why the value is refused, in words an operator acts on.
pub fn parse(kind: Kind, raw: &str) -> Result<Typed, String> {
    match kind {
        Kind::Str => Ok(Typed::Str(raw.to_string())),
        Kind::Choice(choices) => {
            if choices.contains(&raw) {
                Ok(Typed::Str(raw.to_string()))
            } else {
                Err(format!("must be one of {}", choices.join(", ")))
            }
        }
        Kind::Connection => {
            if is_connection(raw) {
                Ok(Typed::Str(raw.to_string()))
            } else {
                Err("must match ^(tcp|ssl|unix):.+".into())
            }
        }
        Kind::Int { min, max } => {
            let i = parse_int(raw)?;
            if i < min || i > max {
                Err(format!("must be between {min} and {max}"))
            } else {
                Ok(Typed::Int(i))
            }
        }
        Kind::TableId => match parse_int(raw)? {
            253..=255 => {
                Err("must not be a kernel-reserved table (253 default, 254 main, 255 local)".into())
            }
            i @ 1..=4_294_967_295 => Ok(Typed::Int(i)),
            _ => Err("must be between 1 and 4294967295".into()),
        },
        Kind::Bool => parse_bool(raw).map(Typed::Bool),
        Kind::List => Ok(Typed::List(parse_list(raw))),
        Kind::Ip => IpAddr::from_str(raw)
            .map(Typed::Ip)
            .map_err(|_| "must be an IPv4 or IPv6 address".into()),
        Kind::AsNumber => check_as_number(raw).map(|()| Typed::Str(raw.to_string())),
        Kind::RouterId => {
            if raw.is_empty() || Ipv4Addr::from_str(raw).is_ok() {
                Ok(Typed::Str(raw.to_string()))
            } else {
                Err("must be an IPv4 address".into())
            }
        }
        Kind::DevName { optional } => {
            if (optional && raw.is_empty()) || DevName::new(raw).is_ok() {
                Ok(Typed::Str(raw.to_string()))
            } else {
                Err(DEV_NAME_RULE.into())
            }
        }
        Kind::DevNameList => each(raw, |item| DevName::new(item).is_ok(), DEV_NAME_RULE),
        Kind::IpList => each(
            raw,
            |item| IpAddr::from_str(item).is_ok(),
            "every item must be an IP address",
        ),
        Kind::CidrList => each(
            raw,
            |item| IpNet::from_str(item).is_ok(),
            "every item must be a CIDR prefix (address/length)",
        ),
        Kind::ListenAddr => match raw {
            "" => Ok(Typed::Str(String::new())),
            _ => match SocketAddr::from_str(raw) {
                Ok(a) if a.port() != 0 => Ok(Typed::Str(a.to_string())),
                Ok(_) => Err("the port must be 1..=65535, not 0 (probes need a fixed port)".into()),
                Err(_) => Err(
                    "must be IP:PORT, an IPv6 address in brackets ([::1]:9476); no host names"
                        .into(),
                ),
            },
        },
    }
}

const DEV_NAME_RULE: &str =
    "must be a Linux interface name (1 to 15 bytes, no '/', ':' or whitespace, not '.' or '..')";

fn each(raw: &str, ok: impl Fn(&str) -> bool, why: &str) -> Result<Typed, String> {
    let items = parse_list(raw);
    match items.iter().find(|i| !ok(i)) {
        Some(bad) => Err(format!("{why}; {bad:?} is not")),
        None => Ok(Typed::List(items)),
    }
}

/// oslo's regex `^(tcp|ssl|unix):.+` with `re.search`: a prefix match where
/// `.` is any character but a newline.
fn is_connection(raw: &str) -> bool {
    ["tcp:", "ssl:", "unix:"].iter().any(|p| {
        raw.strip_prefix(p)
            .and_then(|rest| rest.chars().next())
            .is_some_and(|c| c != '\n')
    })
}

/// Python's `int()` on the stripped text: optional sign, decimal digits,
/// single underscores between digits. oslo turns an empty value into None;
/// the agent's integer options have no "unset", so empty is refused.
fn parse_int(raw: &str) -> Result<i64, String> {
    let s = raw.trim();
    if s.is_empty() {
        return Err("must be an integer, not empty".into());
    }
    let (neg, digits) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let well_formed = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    if !well_formed {
        return Err("must be an integer".into());
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    let magnitude = clean
        .parse::<i128>()
        .map_err(|_| "integer out of range".to_string())?;
    let value = if neg { -magnitude } else { magnitude };
    i64::try_from(value).map_err(|_| "integer out of range".into())
}

/// oslo's `Boolean` type: true/1/on/yes and false/0/off/no, any case.
fn parse_bool(raw: &str) -> Result<bool, String> {
    match raw.to_lowercase().as_str() {
        "true" | "1" | "on" | "yes" => Ok(true),
        "false" | "0" | "off" | "no" => Ok(false),
        _ => Err("must be a boolean (true/false, yes/no, on/off, 1/0)".into()),
    }
}

/// oslo's `List` of strings: trailing commas dropped, split at commas,
/// every item trimmed (empty items in the middle are kept, as oslo does).
pub fn parse_list(raw: &str) -> Vec<String> {
    let s = raw.trim().trim_end_matches(',');
    if s.is_empty() {
        return Vec::new();
    }
    s.split(',').map(|i| i.trim().to_string()).collect()
}

/// A BGP AS number FRR accepts in `router bgp`: 1..=4294967295, or asdot
/// `X.Y` with both halves 0..=65535 and not `0.0`.
fn check_as_number(raw: &str) -> Result<(), String> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let ok = match raw.split_once('.') {
        None => digits(raw) && raw.parse::<u32>().is_ok_and(|n| n != 0),
        Some((hi, lo)) => {
            digits(hi)
                && digits(lo)
                && match (hi.parse::<u16>(), lo.parse::<u16>()) {
                    (Ok(h), Ok(l)) => (h, l) != (0, 0),
                    _ => false,
                }
        }
    };
    if ok {
        Ok(())
    } else {
        Err("must be an AS number, 1..4294967295 or asdot X.Y".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_accept_what_oslo_accepts_in_any_case() {
        for t in ["true", "TRUE", "Yes", "on", "1"] {
            assert_eq!(parse(Kind::Bool, t), Ok(Typed::Bool(true)), "{t}");
        }
        for f in ["false", "No", "OFF", "0"] {
            assert_eq!(parse(Kind::Bool, f), Ok(Typed::Bool(false)), "{f}");
        }
        for bad in ["", "y", "2", "enabled"] {
            assert!(parse(Kind::Bool, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn integers_follow_python_int_and_check_bounds() {
        let k = Kind::Int { min: 0, max: 65535 };
        assert_eq!(parse(k, " 4789 "), Ok(Typed::Int(4789)));
        assert_eq!(parse(k, "+1_000"), Ok(Typed::Int(1000)));
        for bad in [
            "",
            "4789.0",
            "0x10",
            "1__0",
            "_1",
            "65536",
            "-1",
            "99999999999999999999999",
        ] {
            assert!(parse(k, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn vrf_table_ids_exclude_reserved_tables() {
        assert_eq!(parse(Kind::TableId, "10"), Ok(Typed::Int(10)));
        assert_eq!(
            parse(Kind::TableId, "4294967295"),
            Ok(Typed::Int(4294967295))
        );
        for bad in ["0", "253", "254", "255", "4294967296", "-10"] {
            assert!(parse(Kind::TableId, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn lists_split_on_commas_and_trim() {
        assert_eq!(parse_list(" a , b,c,, "), vec!["a", "b", "c"]);
        assert_eq!(parse_list("a,,b"), vec!["a", "", "b"]);
        assert!(parse_list("  ").is_empty());
    }

    #[test]
    fn connection_strings_need_a_known_scheme_and_a_target() {
        for ok in [
            "tcp:127.0.0.1:6642",
            "ssl:[::1]:6641",
            "unix:/run/ovn/ovnsb_db.sock",
            "tcp:a:1,tcp:b:1",
        ] {
            assert!(parse(Kind::Connection, ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "tcp:",
            "udp:1.2.3.4:1",
            "TCP:1.2.3.4:1",
            "/run/db.sock",
            "unix:\nx",
        ] {
            assert!(parse(Kind::Connection, bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn as_numbers_plain_and_asdot() {
        for ok in ["64999", "1", "4294967295", "1.10", "65535.65535", "0.1"] {
            assert!(parse(Kind::AsNumber, ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "0",
            "4294967296",
            "AS64999",
            "64999 ",
            "1.",
            "65536.1",
            "0.0",
            "-1",
            "1;exit",
        ] {
            assert!(parse(Kind::AsNumber, bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn device_names_reaching_netlink_are_checked() {
        let required = Kind::DevName { optional: false };
        assert!(parse(required, "bgp-nic").is_ok());
        for bad in ["", "a/b", "a b", "waytoolongname16", ".."] {
            assert!(parse(required, bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse(Kind::DevName { optional: true }, ""),
            Ok(Typed::Str(String::new()))
        );
        assert!(parse(Kind::DevNameList, "eth0, eth1").is_ok());
        assert!(parse(Kind::DevNameList, "eth0,bad name")
            .unwrap_err()
            .contains("\"bad name\""));
    }

    #[test]
    fn addresses_and_prefixes_are_checked() {
        assert_eq!(
            parse(Kind::Ip, "10.0.0.1"),
            Ok(Typed::Ip("10.0.0.1".parse().unwrap()))
        );
        assert!(parse(Kind::Ip, "10.0.0").is_err());
        assert!(parse(Kind::Ip, "").is_err());
        assert!(parse(Kind::RouterId, "").is_ok());
        assert!(parse(Kind::RouterId, "2001:db8::1").is_err());
        assert!(parse(Kind::IpList, "10.0.0.1,2001:db8::1").is_ok());
        assert!(parse(Kind::CidrList, "192.168.0.0/16, 2001:db8::/32").is_ok());
        assert!(parse(Kind::CidrList, "192.168.0.0").is_err());
    }

    #[test]
    fn listen_addresses_are_ip_and_port() {
        let k = Kind::ListenAddr;
        assert_eq!(
            parse(k, "127.0.0.1:9476"),
            Ok(Typed::Str("127.0.0.1:9476".into()))
        );
        assert_eq!(parse(k, "[::1]:9476"), Ok(Typed::Str("[::1]:9476".into())));
        assert_eq!(parse(k, ""), Ok(Typed::Str(String::new())), "unset");
        for bad in [
            "localhost:9476",
            "127.0.0.1",
            "::1:9476",
            "127.0.0.1:0",
            "127.0.0.1:65536",
            "127.0.0.1:9476 ",
            "0.0.0.0:9476;x",
        ] {
            assert!(parse(k, bad).is_err(), "{bad:?}");
        }
    }
}
