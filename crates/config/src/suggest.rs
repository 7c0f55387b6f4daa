//! "Did you mean": for an unknown section or option in a config file, the
//! registered name an operator most likely meant, when one is close enough
//! to be a typo (edit distance, ignoring case) or is the same name in
//! another section.

use crate::options::{self, AGENT_SECTIONS, OPTIONS};

/// The sections a file may have besides the agent's own: the oslo
/// libraries' (`[privsep_*]` stands for every privsep context).
const OSLO_SECTIONS: &[&str] = &["oslo_concurrency", "privsep"];

/// The most edits a name may be away from what was written to be offered:
/// one for short names, up to three for long ones (`ovn_nb_conection`).
fn max_distance(written: &str) -> usize {
    (written.chars().count() / 4).clamp(1, 3)
}

/// The candidate closest to `written` (case-insensitive edit distance, a swap of two neighbours counting as one edit), if
/// within [`max_distance`]. An exact match ignoring case wins outright;
/// ties go to the first candidate, i.e. registry order.
fn closest<'a>(written: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let written_lower = written.to_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::osa_distance(&written_lower, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= max_distance(written))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The names `[section]` accepts and acts on under their current names:
/// its options, or an oslo section's own. Deprecated names are left out
/// (offering one would only lead to a second warning), and so are the oslo
/// `[DEFAULT]` options the agent ignores.
fn names_of(section: &str) -> Vec<&'static str> {
    let own = OPTIONS
        .iter()
        .filter(|spec| spec.section == section)
        .map(|spec| spec.name);
    own.chain(
        options::oslo_section_options(section)
            .unwrap_or_default()
            .iter()
            .copied(),
    )
    .collect()
}

/// What to offer for the unknown `[section] option`: a close name in the
/// same section (`bgp_AS` for `bgp_as`), else the name as written or close
/// to it in another agent section (`[DEFAULT] bgp_AS` for `[ovn] bgp_AS`).
/// `None` when nothing is close.
pub fn option(section: &str, option: &str) -> Option<String> {
    if let Some(name) = closest(option, names_of(section)) {
        return Some(name.to_string());
    }
    let elsewhere: Vec<(&str, &str)> = AGENT_SECTIONS
        .iter()
        .filter(|s| **s != section)
        .flat_map(|s| names_of(s).into_iter().map(move |n| (*s, n)))
        .collect();
    let exact = elsewhere.iter().find(|(_, n)| *n == option);
    let near = || {
        let name = closest(option, elsewhere.iter().map(|(_, n)| *n))?;
        elsewhere.iter().find(|(_, n)| *n == name)
    };
    exact.or_else(near).map(|(s, n)| format!("[{s}] {n}"))
}

/// What to offer for an unknown `[section]`: the closest known section
/// (`DEFAULT` for `default`, `local_ovn_cluster` for `local-ovn-cluster`).
pub fn section(section: &str) -> Option<String> {
    closest(section, AGENT_SECTIONS.iter().chain(OSLO_SECTIONS).copied()).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_or_a_case_slip_in_an_option_names_the_registered_option() {
        assert_eq!(option("DEFAULT", "bgp_as").as_deref(), Some("bgp_AS"));
        assert_eq!(option("DEFAULT", "debg").as_deref(), Some("debug"));
        assert_eq!(
            option("ovn", "ovn_nb_conection").as_deref(),
            Some("ovn_nb_connection")
        );
        assert_eq!(
            option("DEFAULT", "expose_tenant_network").as_deref(),
            Some("expose_tenant_networks")
        );
    }

    #[test]
    fn an_option_of_another_section_is_offered_with_its_section() {
        assert_eq!(option("ovn", "bgp_AS").as_deref(), Some("[DEFAULT] bgp_AS"));
        assert_eq!(
            option("agent", "ovn_nb_ca_cert").as_deref(),
            Some("[ovn] ovn_nb_ca_cert")
        );
        // A misspelt deprecated name gets the current one, in its section.
        assert_eq!(
            option("DEFAULT", "ovn_sb_conection").as_deref(),
            Some("[ovn] ovn_sb_connection")
        );
    }

    #[test]
    fn nothing_is_offered_for_a_name_far_from_every_option() {
        assert_eq!(option("DEFAULT", "completely_unrelated_thing"), None);
        assert_eq!(option("ovn", "x"), None);
        assert_eq!(section("neutron"), None);
    }

    #[test]
    fn a_misspelt_section_names_the_known_one() {
        assert_eq!(section("default").as_deref(), Some("DEFAULT"));
        assert_eq!(
            section("local-ovn-cluster").as_deref(),
            Some("local_ovn_cluster")
        );
        assert_eq!(section("agnet").as_deref(), Some("agent"));
    }
}
