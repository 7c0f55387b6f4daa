//! Renders the effective configuration for `ovn-bgp-agent config`: as JSON
//! (`{"<section>": {"<option>": value}}`) and as an INI-like listing.
//!
//! Key and certificate options are paths; only the path is ever shown,
//! never a file's contents.

use serde_json::{Map, Value};

use crate::fields;
use crate::options::{AGENT_SECTIONS, OPTIONS};
use crate::Config;

/// Every option the agent knows, under its upstream section and name
/// (`bgp_AS`, not `bgp_as`), including the oslo.log options the agent
/// honours under `DEFAULT`. Lists are arrays, integers numbers, booleans
/// booleans, unset options null.
pub fn effective_json(config: &Config) -> Value {
    let mut out = Map::new();
    for section in AGENT_SECTIONS {
        let mut opts = Map::new();
        for spec in OPTIONS.iter().filter(|o| o.section == *section) {
            let v = fields::get(config, spec).map_or(Value::Null, |t| t.to_json());
            opts.insert(spec.name.to_string(), v);
        }
        out.insert(section.to_string(), Value::Object(opts));
    }
    Value::Object(out)
}

/// The same options as an INI-like listing, one section after the other in
/// the sample's order; unset options show `<None>` as upstream's sample does.
pub fn effective_text(config: &Config) -> String {
    let mut out = String::new();
    for (i, section) in AGENT_SECTIONS.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("[{section}]\n"));
        for spec in OPTIONS.iter().filter(|o| o.section == *section) {
            let v = fields::get(config, spec).map_or_else(|| "<None>".to_string(), |t| t.to_ini());
            out.push_str(&format!("{} = {v}\n", spec.name));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_every_option_with_its_json_type() {
        let j = effective_json(&Config::default());
        assert_eq!(j["DEFAULT"]["bgp_AS"], "64999");
        assert_eq!(j["DEFAULT"]["reconcile_interval"], 300);
        assert_eq!(j["DEFAULT"]["delete_vrf_on_disconnect"], true);
        assert_eq!(j["DEFAULT"]["bgp_router_id"], Value::Null);
        assert_eq!(j["DEFAULT"]["log_file"], Value::Null);
        assert_eq!(
            j["local_ovn_cluster"]["provider_networks_pool_prefixes"],
            serde_json::json!(["192.168.0.0/16"])
        );
        assert_eq!(
            j["ovn"]["ovn_sb_private_key"],
            "/etc/pki/tls/private/ovn_bgp_agent.key"
        );
        let count: usize = j
            .as_object()
            .unwrap()
            .values()
            .map(|s| s.as_object().unwrap().len())
            .sum();
        assert_eq!(count, OPTIONS.len());
    }

    #[test]
    fn text_lists_sections_in_sample_order() {
        let t = effective_text(&Config::default());
        let order: Vec<&str> = t.lines().filter(|l| l.starts_with('[')).collect();
        assert_eq!(
            order,
            ["[DEFAULT]", "[agent]", "[ovn]", "[local_ovn_cluster]"]
        );
        assert!(t.contains("\nbgp_router_id = <None>\n"));
        assert!(t.contains("\nexternal_nics = \n"));
    }
}
