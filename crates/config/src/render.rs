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

/// The option table of `docs/configuration.md`: section, option, type,
/// default (upstream's, or the agent's for its own options, from [`Config::default`]) and notes (deprecated
/// names, checks stricter than upstream's).
pub fn markdown_table() -> String {
    let defaults = Config::default();
    let mut out =
        String::from("| Section | Option | Type | Default | Notes |\n|---|---|---|---|---|\n");
    for spec in OPTIONS {
        let default = match fields::get(&defaults, spec) {
            None => "unset".to_string(),
            Some(crate::Typed::List(l)) if l.is_empty() => "empty list".to_string(),
            Some(v) => format!("`{}`", v.to_ini()),
        };
        let mut notes = Vec::new();
        if spec.section == "DEFAULT"
            && matches!(
                spec.name,
                "debug" | "log_file" | "log_dir" | "use_json" | "use_stderr"
            )
        {
            notes.push("oslo.log option, honoured".to_string());
        }
        for (s, n) in spec.deprecated {
            notes.push(format!("deprecated name: `[{s}] {n}`"));
        }
        if let Some(why) = spec.stricter {
            notes.push(format!("stricter than upstream: {why}"));
        }
        if let Some(why) = spec.agent_only {
            notes.push(format!("this agent's own option (not upstream's): {why}"));
        }
        if let Some(why) = spec.ignored {
            notes.push(format!(
                "accepted, not acted on (a warning at start when set): {why}"
            ));
        }
        out.push_str(&format!(
            "| {} | `{}` | {} | {} | {} |\n",
            spec.section,
            spec.name,
            spec.kind.describe().replace('|', "\\|"),
            default,
            notes.join("; ")
        ));
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

    /// docs/configuration.md carries the generated table verbatim; run with
    /// `UPDATE_DOCS=1` to rewrite it after changing the registry.
    #[test]
    fn the_docs_table_matches_the_registry() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
        let doc = std::fs::read_to_string(&path).expect("docs/configuration.md");
        let (begin, end) = (
            "<!-- options-table:begin -->\n",
            "<!-- options-table:end -->",
        );
        let start = doc.find(begin).expect("begin marker") + begin.len();
        let stop = doc.find(end).expect("end marker");
        let table = markdown_table();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            let updated = format!("{}{table}{}", &doc[..start], &doc[stop..]);
            std::fs::write(&path, updated).unwrap();
        } else {
            assert_eq!(
                &doc[start..stop],
                table,
                "regenerate with UPDATE_DOCS=1 cargo test -p obgp-config"
            );
        }
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
