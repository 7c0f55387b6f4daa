//! Sysctls: desired values the node lacks, skipped while their device is
//! missing (never reset).

use obgp_netmodel::{Class, DevName};

use super::order::rank;
use super::Group;
use super::Planner;
use crate::op::Op;

impl Planner<'_> {
    /// The device a `net.ipv{4,6}.conf.<dev>.<leaf>` key names, if any.
    fn sysctl_dev(key: &str) -> Option<String> {
        let rest = key
            .strip_prefix("net.ipv4.conf.")
            .or_else(|| key.strip_prefix("net.ipv6.conf."))?;
        let (dev, _leaf) = rest.rsplit_once('.')?;
        if dev == "all" || dev == "default" {
            return None;
        }
        Some(dev.replace('/', "."))
    }

    pub(super) fn sysctls(&mut self) {
        for s in &self.desired.sysctls {
            if self.actual.sysctls.get(&s.key) == Some(&s.value) {
                continue;
            }
            if let Some(dev) = Self::sysctl_dev(&s.key) {
                let exists = DevName::new(&dev).is_ok_and(|d| self.will_exist(&d));
                if !exists {
                    self.skip(
                        format!("sysctl {}", s.key),
                        format!("device {dev} does not exist"),
                    );
                    continue;
                }
            }
            self.push(
                Group::Base,
                rank::SYSCTL,
                Some(Class::Base),
                Op::SetSysctl(s.clone()),
            );
        }
    }
}
