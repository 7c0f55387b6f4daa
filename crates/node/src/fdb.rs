//! Static entries of an OVS bridge's MAC learning table, through
//! `ovs-appctl fdb/add` and `fdb/show`. The NB `ovn` exposing method pins
//! each external bridge's own MAC on its internal port this way, so the
//! bridge never re-learns it elsewhere (ADR 0008).
//!
//! `fdb/show` names ports by OpenFlow number (`LOCAL` for the bridge's
//! own port); [`read_static`] gives them by name, with the numbers of
//! `ovs-ofctl show`.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use obgp_netmodel::{DevName, FdbEntry, MacAddr};

use crate::config::KernelConfig;
use crate::deadline::{self, CommandError, Finished};
use crate::error::IoError;
use crate::ovs_name::ovs_name;

/// `ovs-appctl` reaches ovs-vswitchd through `OVS_RUNDIR` (its pidfile
/// and control socket there), as `ovs-ofctl` does.
fn appctl(config: &KernelConfig, args: &[&str]) -> Result<Finished, CommandError> {
    let mut cmd = Command::new(&config.ovs_appctl);
    if let Some(dir) = &config.ovs_rundir {
        cmd.env("OVS_RUNDIR", dir);
    }
    cmd.args(args);
    let what = format!("ovs-appctl {}", args.join(" "));
    deadline::run(cmd, &what, config.ovs_ofctl_timeout)
}

/// Adds (or refreshes) `entry`. Every argument is checked first: they go
/// to `ovs-appctl` as words.
pub fn add_static(config: &KernelConfig, entry: &FdbEntry) -> Result<(), IoError> {
    let bridge = ovs_name(&entry.bridge)?;
    let port = DevName::new(&entry.port)
        .ok()
        .filter(|p| ovs_name(p).is_ok())
        .ok_or_else(|| IoError::Invalid(entry.port.clone()))?;
    if entry.vlan > 4095 {
        return Err(IoError::Invalid(entry.vlan.to_string()));
    }
    let (vlan, mac) = (entry.vlan.to_string(), entry.mac.to_string());
    appctl(config, &["fdb/add", bridge, port.as_str(), &vlan, &mac])
        .map(drop)
        .map_err(IoError::from)
}

/// The static entries of `bridge`, ports by name through `ports` (name →
/// OpenFlow number, as `ovs-ofctl show` gives them). Learned entries are
/// not the agent's and are left out; an entry on a port `ports` lacks is
/// left out too (it is read again once the port is known).
pub fn read_static(
    config: &KernelConfig,
    bridge: &DevName,
    ports: &BTreeMap<String, u32>,
) -> Result<BTreeSet<FdbEntry>, IoError> {
    let out = appctl(config, &["fdb/show", ovs_name(bridge)?])?;
    Ok(parse_fdb_show(
        &String::from_utf8_lossy(&out.stdout),
        bridge,
        ports,
    ))
}

/// Static entries from `fdb/show`: ` port  VLAN  MAC  Age` rows whose age
/// is `static`.
fn parse_fdb_show(
    text: &str,
    bridge: &DevName,
    ports: &BTreeMap<String, u32>,
) -> BTreeSet<FdbEntry> {
    let by_number: BTreeMap<u32, &str> = ports.iter().map(|(n, p)| (*p, n.as_str())).collect();
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let [port, vlan, mac, "static"] = words[..] else {
            continue;
        };
        let (Ok(vlan), Ok(mac)) = (vlan.parse::<u16>(), mac.parse::<MacAddr>()) else {
            continue;
        };
        let port = match port {
            "LOCAL" => Some(bridge.as_str()),
            n => n.parse().ok().and_then(|n| by_number.get(&n).copied()),
        };
        if let Some(port) = port {
            out.insert(FdbEntry {
                bridge: bridge.clone(),
                port: port.to_string(),
                vlan,
                mac,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_static_rows_are_read_with_their_port_names() {
        let br = DevName::new("br-ex").unwrap();
        let ports = BTreeMap::from([("patch-prov".to_string(), 1)]);
        let text = " port  VLAN  MAC                Age\n\
                    \x20   1     0  52:54:00:30:93:ea  static\n\
                    \x20   1     0  52:54:00:30:93:eb    12\n\
                    LOCAL   100  52:54:00:30:93:ec  static\n\
                    \x20   7     0  52:54:00:30:93:ed  static\n\
                    \x20   1     0  zz:54:00:30:93:ed  static\n";
        let seen = parse_fdb_show(text, &br, &ports);
        let entry = |port: &str, vlan, mac: &str| FdbEntry {
            bridge: br.clone(),
            port: port.into(),
            vlan,
            mac: mac.parse().unwrap(),
        };
        assert_eq!(
            seen,
            BTreeSet::from([
                entry("patch-prov", 0, "52:54:00:30:93:ea"),
                entry("br-ex", 100, "52:54:00:30:93:ec"),
            ])
        );
    }

    #[test]
    fn odd_ports_and_vlans_never_reach_ovs_appctl() {
        let config = KernelConfig {
            ovs_appctl: "/nonexistent/ovs-appctl".into(),
            ..KernelConfig::default()
        };
        let entry = |port: &str, vlan| FdbEntry {
            bridge: DevName::new("br-ex").unwrap(),
            port: port.into(),
            vlan,
            mac: "52:54:00:30:93:ea".parse().unwrap(),
        };
        for (port, vlan) in [
            ("-x", 0),
            ("a b", 0),
            ("p;reboot", 0),
            ("é", 0),
            ("patch", 4096),
        ] {
            let e = add_static(&config, &entry(port, vlan)).unwrap_err();
            assert!(matches!(e, IoError::Invalid(_)), "{port} {vlan}: {e}");
        }
        // A valid entry gets as far as starting the program.
        let e = add_static(&config, &entry("patch-prov", 0)).unwrap_err();
        assert!(
            e.to_string()
                .contains("ovs-appctl fdb/add br-ex patch-prov 0 52:54:00:30:93:ea"),
            "{e}"
        );
    }
}
