//! What the loader tells an operator about a file or environment it
//! cannot use as written: which variable a bad value came from, the name
//! an unknown option or section most likely meant, warnings in file order,
//! and the connection the driver cannot start without.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use obgp_config::{Config, ConfigError, ConfigSource, Driver, Loader};

/// A fresh directory under cargo's per-test-target tmp dir.
fn scratch(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "messages-{}-{name}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn load_text(text: &str) -> Result<obgp_config::Loaded, ConfigError> {
    let f = scratch("one").join("a.conf");
    std::fs::write(&f, text).unwrap();
    Loader::new().sources([ConfigSource::File(f)]).load()
}

#[test]
fn a_bad_value_through_oslos_prefix_or_a_deprecated_name_names_that_variable() {
    let env = [
        ("OS_DEFAULT__DRIVER".to_string(), "bogus".to_string()),
        (
            "OVN_BGP_AGENT_DEFAULT__OVN_NB_CONNECTION".to_string(),
            "nowhere".to_string(),
        ),
    ];
    match Loader::new().env(env).load() {
        Err(ConfigError::Invalid(v)) => {
            let origins: Vec<(&str, Option<&str>)> = v
                .iter()
                .map(|v| (v.option.as_str(), v.origin.as_deref()))
                .collect();
            assert_eq!(
                origins,
                [
                    ("driver", Some("environment variable OS_DEFAULT__DRIVER")),
                    (
                        "ovn_nb_connection",
                        Some("environment variable OVN_BGP_AGENT_DEFAULT__OVN_NB_CONNECTION")
                    ),
                ]
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn warnings_come_in_file_order_and_offer_the_name_meant() {
    // Sections and options deliberately out of alphabetical order.
    let loaded = load_text(
        "[ovn]\novn_nb_conection = tcp:192.0.2.1:6641\nbgp_AS = 65000\n\
         [defualt]\ndebug = true\n\
         [DEFAULT]\nzzz_unrelated_thing = 1\nexpose_tenant_network = true\nbgp_as = 65000\n",
    )
    .unwrap();
    let text: Vec<String> = loaded.warnings.iter().map(|w| w.to_string()).collect();
    let at = |line: usize| format!("{}:{line}: ", "a.conf");
    let expected = [
        (2, "unknown option [ovn] ovn_nb_conection, ignored; did you mean ovn_nb_connection?"),
        (3, "unknown option [ovn] bgp_AS, ignored; did you mean [DEFAULT] bgp_AS?"),
        (4, "unknown section [defualt], ignored; did you mean [DEFAULT]?"),
        (7, "unknown option [DEFAULT] zzz_unrelated_thing, ignored"),
        (8, "unknown option [DEFAULT] expose_tenant_network, ignored; did you mean expose_tenant_networks?"),
        (9, "unknown option [DEFAULT] bgp_as, ignored; did you mean bgp_AS?"),
    ];
    assert_eq!(text.len(), expected.len(), "{text:#?}");
    for (got, (line, want)) in text.iter().zip(expected) {
        assert!(
            got.ends_with(&format!("{}{want}", at(line))),
            "got {got:?}, want line {line}: {want:?}\nall: {text:#?}"
        );
    }
}

#[test]
fn the_nb_driver_without_ovn_nb_connection_misses_it_and_the_sb_drivers_miss_nothing() {
    let mut config = Config::default();
    assert_eq!(
        config.missing_connection(),
        None,
        "the SB driver falls back to ovn-remote"
    );
    config.default.driver = Driver::NbOvnBgpDriver;
    let missing = config
        .missing_connection()
        .expect("the NB driver needs its NB");
    assert_eq!(
        missing.to_string(),
        "[ovn] ovn_nb_connection: must be set: driver = nb_ovn_bgp_driver reads the OVN \
         Northbound database from it (unset)"
    );
    config.ovn.ovn_nb_connection = Some("tcp:192.0.2.1:6641".into());
    assert_eq!(config.missing_connection(), None);
}
