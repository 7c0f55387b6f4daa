//! FRR: the agent's configuration, applied when FRR lacks it (never removed),
//! and only when FRR's state was read.

use obgp_netmodel::Class;

use super::order::{rank, Group};
use super::Planner;
use crate::op::Op;

impl Planner<'_> {
    pub(super) fn frr(&mut self) {
        if let Some(config) = &self.desired.frr_config {
            if self.actual.frr.unknown {
                self.skip(
                    "FRR configuration".to_string(),
                    "FRR's running configuration could not be read",
                );
            } else if !self.actual.frr.has_our_config {
                self.push(
                    Group::Base,
                    rank::FRR,
                    Some(Class::Base),
                    Op::ApplyFrr {
                        config: config.clone(),
                    },
                );
            }
        }
    }
}
