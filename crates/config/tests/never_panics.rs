//! Bad input never panics: arbitrary file text, arbitrary values for every
//! option and arbitrary environment overrides end in a config or an error.

use obgp_config::options::OPTIONS;
use obgp_config::{ini, Loader};
use proptest::prelude::*;

/// Any characters, control characters included.
fn any_text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(any::<char>(), 0..max).prop_map(String::from_iter)
}

/// Text built from the characters that matter to the parser.
fn ini_like() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("[DEFAULT]\n".to_string()),
            Just("[ovn]\n".to_string()),
            Just("\n".to_string()),
            Just("  ".to_string()),
            Just("=".to_string()),
            Just(":".to_string()),
            Just("#".to_string()),
            Just("\"".to_string()),
            Just("$".to_string()),
            Just("{".to_string()),
            Just("}".to_string()),
            "[a-zA-Z_]{1,12}",
            "\\PC{0,8}",
            any_text(8),
        ],
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #[test]
    fn the_parser_never_panics(text in ini_like()) {
        let _ = ini::parse(&text);
    }

    #[test]
    fn any_value_of_any_option_is_a_value_or_an_error(idx in 0..OPTIONS.len(), value in any_text(40)) {
        let spec = &OPTIONS[idx];
        let _ = spec.parse(&value);
        let name = format!("OVN_BGP_AGENT_{}__{}", spec.section, spec.name);
        match Loader::new().env([(name, value.clone())]).load() {
            Ok(_) => {}
            Err(e) => {
                // Every refusal names the option.
                let text = e.to_string();
                prop_assert!(text.contains(spec.name), "{text}");
            }
        }
    }

    #[test]
    fn substitution_of_arbitrary_text_terminates(value in "[$a-z_{}.\\\\ ]{0,30}") {
        let _ = Loader::new()
            .env([("OVN_BGP_AGENT_DEFAULT__BGP_NIC".to_string(), value)])
            .load();
    }
}
