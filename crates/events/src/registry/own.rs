//! The agent's own wake-ups, beside upstream's classes, per driver.

use obgp_config::Driver;
use obgp_ovsdb_data::Change;

use super::Filters;
use crate::agent::AgentView;

impl Filters {
    /// The agent's own reasons for `change`, beyond upstream's classes:
    /// the stretched-L2 driver's ([`crate::stretched::reasons`]), the NB
    /// driver's FIP and port exposure changes ([`crate::nb_own::reasons`])
    /// and, in its EVPN methods, annotation edits
    /// ([`crate::bgpvpn_own::reasons`]),
    /// the SB EVPN driver's gateway moves ([`crate::evpn_own::reasons`]);
    /// the last two read `view`.
    pub fn own_reasons(&self, change: &Change, view: &dyn AgentView) -> Vec<&'static str> {
        match self.driver {
            Driver::OvnStretchedL2BgpDriver => crate::stretched::reasons(change),
            Driver::NbOvnBgpDriver => {
                let mut r = crate::nb_own::reasons(change, view);
                if self.bgpvpn_annotations {
                    r.extend(crate::bgpvpn_own::reasons(change));
                }
                r
            }
            Driver::OvnEvpnDriver => crate::evpn_own::reasons(change, view),
            _ => Vec::new(),
        }
    }
}
