use super::*;

fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn report() -> ReconcileReport {
    ReconcileReport {
        desired_time: Duration::from_millis(3),
        apply_time: Duration::from_millis(40),
        applied: [("AddAddress".to_string(), 2), ("AddRule".to_string(), 1)].into(),
        commands_applied: [("ApplyFrr".to_string(), 1)].into(),
        failed: vec!["+ link bgp-vrf type vrf: refused".into()],
        failed_kinds: [("AddLink".to_string(), 1)].into(),
        planned: 5,
        desired_changed: true,
        drift_repairs: [("address", 2)].into(),
        frr_apply: Some(crate::FrrApplyCause::Missing),
        ..ReconcileReport::default()
    }
}

fn batch() -> TriggerBatch {
    let event = |class| Trigger::Event {
        class,
        table: "Logical_Switch_Port".into(),
    };
    TriggerBatch {
        reasons: [
            (event("LogicalSwitchPortProviderCreateEvent"), 3),
            (event("LocalOvsChange"), 1),
            (Trigger::Retry, 1),
        ]
        .into(),
        window_wait: Duration::from_millis(80),
        rate_wait: Duration::ZERO,
    }
}

#[test]
fn a_reconcile_report_becomes_counts_by_reason_kind_and_outcome() {
    let m = Metrics::new(&Config::default());
    let outcome = m.observe_reconcile(&batch(), Some(&report()), Duration::from_millis(50), 1);
    assert_eq!(outcome, Outcome::Incomplete, "an op failed");
    m.observe_reconcile(&batch(), None, Duration::from_millis(1), 1);
    let t = m.render();
    let v = |s| value(&t, s).unwrap_or_else(|| panic!("{s} missing in\n{t}"));
    assert_eq!(
        v("ovn_bgp_agent_reconciles_total{reason=\"event\",outcome=\"incomplete\"}"),
        1.0,
        "two event reasons, one reconcile"
    );
    assert_eq!(
        v("ovn_bgp_agent_reconciles_total{reason=\"retry\",outcome=\"error\"}"),
        1.0
    );
    assert_eq!(
        v("ovn_bgp_agent_event_triggers_total{class=\"LogicalSwitchPortProviderCreateEvent\"}"),
        6.0
    );
    assert_eq!(
        v("ovn_bgp_agent_ops_total{kind=\"add_address\",outcome=\"applied\"}"),
        2.0
    );
    assert_eq!(
        v("ovn_bgp_agent_ops_total{kind=\"apply_frr\",outcome=\"applied\"}"),
        1.0
    );
    assert_eq!(
        v("ovn_bgp_agent_ops_total{kind=\"add_link\",outcome=\"failed\"}"),
        1.0
    );
    assert_eq!(v("ovn_bgp_agent_ops_planned"), 5.0);
    assert_eq!(v("ovn_bgp_agent_frr_applies_total{cause=\"missing\"}"), 1.0);
    assert_eq!(v("ovn_bgp_agent_frr_applies_total{cause=\"initial\"}"), 0.0);
    assert_eq!(
        v("ovn_bgp_agent_drift_repairs_total{object=\"address\"}"),
        2.0
    );
    assert_eq!(
        v("ovn_bgp_agent_mass_withdrawal_holds_total"),
        1.0,
        "a running count, not added twice"
    );
    assert_eq!(v("ovn_bgp_agent_reconcile_duration_seconds_count"), 2.0);
    assert_eq!(
        v("ovn_bgp_agent_reconcile_phase_duration_seconds_count{phase=\"apply\"}"),
        1.0,
        "a failed reconcile has no phases"
    );
    assert_eq!(
        v("ovn_bgp_agent_reconcile_phase_duration_seconds_sum{phase=\"apply\"}"),
        0.04
    );
    assert_eq!(
        v("ovn_bgp_agent_queue_wait_seconds_sum{rule=\"merge_window\"}"),
        0.16
    );
    assert_eq!(
        v("ovn_bgp_agent_last_success_timestamp_seconds"),
        0.0,
        "nothing converged yet"
    );
    assert_eq!(
        v("ovn_bgp_agent_build_info{version=\"0.1.0\",driver=\"ovn_bgp_driver\",exposing_method=\"underlay\"}"),
        1.0
    );
}

#[test]
fn a_converged_reconcile_sets_the_last_success_time() {
    let m = Metrics::new(&Config::default());
    let before = unix_now();
    let clean = ReconcileReport::default();
    let outcome = m.observe_reconcile(&batch(), Some(&clean), Duration::ZERO, 0);
    assert_eq!(outcome, Outcome::Converged);
    let t = m.render();
    let at = value(&t, "ovn_bgp_agent_last_success_timestamp_seconds").unwrap();
    assert!(at >= before && at <= unix_now(), "{at}");
    let unread = ReconcileReport {
        unread: vec!["FRR".into()],
        ..ReconcileReport::default()
    };
    assert_eq!(Outcome::of(&unread), Outcome::Incomplete);
}

#[test]
fn database_counters_follow_the_clients_counts() {
    let m = Metrics::new(&Config::default());
    let db = |connected, syncs, resumed| DbStatus {
        database: "OVN_Northbound",
        connected,
        syncs,
        resumed,
        resumed_at_start: syncs > 1,
    };
    m.set_databases(&[db(true, 1, 0)]);
    assert_eq!(
        value(
            &m.render(),
            "ovn_bgp_agent_ovsdb_resumed_at_start{database=\"OVN_Northbound\"}"
        ),
        Some(0.0)
    );
    m.set_databases(&[db(false, 4, 1)]);
    let t = m.render();
    let v = |s| value(&t, s).unwrap_or_else(|| panic!("{s} missing in\n{t}"));
    assert_eq!(
        v("ovn_bgp_agent_ovsdb_connected{database=\"OVN_Northbound\"}"),
        0.0
    );
    assert_eq!(
        v("ovn_bgp_agent_ovsdb_reconnects_total{database=\"OVN_Northbound\"}"),
        3.0
    );
    assert_eq!(
        v("ovn_bgp_agent_ovsdb_resyncs_total{database=\"OVN_Northbound\",kind=\"full\"}"),
        2.0
    );
    assert_eq!(
        v("ovn_bgp_agent_ovsdb_resyncs_total{database=\"OVN_Northbound\",kind=\"resumed\"}"),
        1.0
    );
    assert_eq!(
        v("ovn_bgp_agent_ovsdb_resumed_at_start{database=\"OVN_Northbound\"}"),
        1.0
    );
}

#[test]
fn exposed_counts_are_wanted_only_after_a_scrape_and_a_change() {
    let m = Metrics::new(&Config::default());
    assert!(!m.exposed_wanted(), "nobody scraped");
    let _ = m.render();
    assert!(m.exposed_wanted());
    m.set_exposed(&[((Class::Fip, "ipv4"), 2)].into());
    assert!(!m.exposed_wanted(), "counted");
    let t = m.render();
    assert_eq!(
        value(
            &t,
            "ovn_bgp_agent_exposed_ips{class=\"fip\",family=\"ipv4\"}"
        ),
        Some(2.0)
    );
    assert_eq!(
        value(
            &t,
            "ovn_bgp_agent_exposed_ips{class=\"tenant_vm\",family=\"ipv6\"}"
        ),
        Some(0.0)
    );
    assert!(!m.exposed_wanted(), "scraped, but nothing changed");
    let changed = ReconcileReport {
        desired_changed: true,
        ..ReconcileReport::default()
    };
    m.observe_reconcile(&batch(), Some(&changed), Duration::ZERO, 0);
    assert!(m.exposed_wanted());
}

#[test]
fn the_text_format_names_counters_with_their_suffix_and_drops_openmetrics_lines() {
    let open = "# HELP x_ops Ops.\n# TYPE x_ops counter\nx_ops_total{kind=\"a\"} 1\n\
                # HELP x_t Time.\n# TYPE x_t gauge\n# UNIT x_t seconds\nx_t 2.5\n# EOF\n";
    assert_eq!(
        to_text_format(open),
        "# HELP x_ops_total Ops.\n# TYPE x_ops_total counter\nx_ops_total{kind=\"a\"} 1\n\
         # HELP x_t Time.\n# TYPE x_t gauge\nx_t 2.5\n"
    );
}

#[test]
fn op_kinds_and_reasons_become_low_cardinality_labels() {
    assert_eq!(snake_case("AddAddress"), "add_address");
    assert_eq!(snake_case("ApplyFrr"), "apply_frr");
    assert_eq!(
        reason_label(&Trigger::Resync {
            database: "OVN_Northbound".into()
        }),
        "resync"
    );
}

#[test]
fn frr_texts_are_counted_by_outcome_and_the_last_applied_is_stamped() {
    use crate::{FrrOutcome, FrrResult};
    let m = Metrics::new(&Config::default());
    let t = m.render();
    let v = |t: &str, s: &str| value(t, s).unwrap_or_else(|| panic!("{s} missing in\n{t}"));
    let rejected = "ovn_bgp_agent_frr_texts_total{text=\"ours\",outcome=\"rejected\"}";
    assert_eq!(v(&t, rejected), 0.0, "the series exist from the start");
    assert_eq!(
        v(&t, "ovn_bgp_agent_frr_last_applied_timestamp_seconds"),
        0.0
    );
    let r = ReconcileReport {
        frr_results: vec![
            FrrResult {
                removal: false,
                outcome: FrrOutcome::Rejected("line 3: % Unknown command".into()),
            },
            FrrResult {
                removal: true,
                outcome: FrrOutcome::Applied,
            },
            FrrResult {
                removal: false,
                outcome: FrrOutcome::Failed("vtysh: no answer within 5s".into()),
            },
        ],
        ..ReconcileReport::default()
    };
    m.observe_reconcile(&batch(), Some(&r), Duration::from_millis(5), 0);
    let t = m.render();
    assert_eq!(v(&t, rejected), 1.0);
    assert_eq!(
        v(
            &t,
            "ovn_bgp_agent_frr_texts_total{text=\"removal\",outcome=\"applied\"}"
        ),
        1.0
    );
    assert_eq!(
        v(
            &t,
            "ovn_bgp_agent_frr_texts_total{text=\"ours\",outcome=\"failed\"}"
        ),
        1.0
    );
    assert!(v(&t, "ovn_bgp_agent_frr_last_applied_timestamp_seconds") > 1.0e9);
}

#[test]
fn bgp_sessions_give_per_peer_series_and_an_unread_frr_gives_none() {
    use obgp_netmodel::frr::BgpSession;
    let m = Metrics::new(&Config::default());
    let session = |peer: &str, state: &str| BgpSession {
        vrf: "default".into(),
        family: "ipv4Unicast".into(),
        peer: peer.into(),
        remote_as: Some(65000),
        state: state.into(),
        uptime_s: Some(10.0),
        prefixes_received: Some(3),
        prefixes_sent: Some(7),
    };
    m.set_bgp_sessions(Some(&[
        session("10.255.0.2", "Established"),
        session("10.255.1.2", "Active"),
    ]));
    let t = m.render();
    let v = |s: &str| value(&t, s);
    let l = |peer: &str| format!("{{vrf=\"default\",peer=\"{peer}\",family=\"ipv4Unicast\"}}");
    assert_eq!(
        v(&format!("ovn_bgp_agent_bgp_session_up{}", l("10.255.0.2"))),
        Some(1.0)
    );
    assert_eq!(
        v(&format!("ovn_bgp_agent_bgp_session_up{}", l("10.255.1.2"))),
        Some(0.0)
    );
    assert_eq!(
        v(&format!(
            "ovn_bgp_agent_bgp_prefixes_sent{}",
            l("10.255.0.2")
        )),
        Some(7.0)
    );
    assert_eq!(
        v(&format!(
            "ovn_bgp_agent_bgp_prefixes_received{}",
            l("10.255.0.2")
        )),
        Some(3.0)
    );
    assert_eq!(
        v(&format!(
            "ovn_bgp_agent_bgp_prefixes_sent{}",
            l("10.255.1.2")
        )),
        None,
        "no counts for a session that is down"
    );
    assert!(v("ovn_bgp_agent_bgp_sessions_read_timestamp_seconds") > Some(1.0e9));

    m.set_bgp_sessions(None);
    let t = m.render();
    assert!(
        !t.contains("ovn_bgp_agent_bgp_session_up{"),
        "unknown is not down:\n{t}"
    );
}

#[test]
fn dynamic_counts_the_decisions_of_every_method() {
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/dynamic/basic.json"
    );
    let sc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    let snap = obgp_ovn::Snapshot::from_wire(&sc["ovn"]).unwrap();
    let mut config = Config::default();
    config.default.driver = obgp_config::Driver::NbOvnBgpDriver;
    config.default.exposing_method = obgp_config::ExposingMethod::Dynamic;
    config.default.bgp_router_id = Some("192.0.2.1".into());
    config.default.evpn_local_ip = Some("10.1.1.1".parse().unwrap());
    let d = obgp_desired::desired_state(&snap, &config, &Default::default()).unwrap();
    // The underlay VM on bgp-nic, the l3 VM's two IPs, the l2 VM.
    assert_eq!(
        count_exposed(&d),
        [((Class::Vm, "ipv4"), 3), ((Class::Vm, "ipv6"), 1)].into()
    );
}
