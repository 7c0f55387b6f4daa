//! The deviation, staleness and skip rules with plain values.

use super::*;

fn entry(scenario: &str, step: Value, difference: &str) -> Deviation {
    Deviation {
        scenario: scenario.into(),
        step,
        difference: difference.into(),
        reason: "upstream defect X".into(),
    }
}

const DIFF: &str = "on node, not desired: neigh br-ex 172.24.4.10 fa:16:3e:11:11:11";

#[test]
fn a_wildcard_deviation_is_refused_with_the_entry() {
    for pattern in ["frr text differs: *", "on node, not desired: neigh *", "*"] {
        let err = Deviations::new(vec![entry("s", Value::from(3), pattern)]).unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains("is a pattern") && msg.contains(pattern),
            "{msg}"
        );
    }
}

#[test]
fn an_entry_without_reason_or_step_or_listed_twice_is_refused() {
    let mut no_reason = entry("s", Value::from(1), DIFF);
    no_reason.reason = " ".into();
    assert!(Deviations::new(vec![no_reason]).is_err());
    assert!(Deviations::new(vec![entry("s", Value::Null, DIFF)]).is_err());
    assert!(Deviations::new(vec![entry("s", Value::from("frr"), DIFF)]).is_err());
    let twice = vec![
        entry("s", Value::from(1), DIFF),
        entry("s", Value::from("1"), DIFF),
    ];
    let err = Deviations::new(twice).unwrap_err();
    assert!(format!("{err:#}").contains("listed twice"), "{err:#}");
    assert!(Deviations::new(vec![entry("s", Value::from(1), DIFF)]).is_ok());
}

#[test]
fn a_deviation_accepts_only_its_exact_difference_at_its_step() {
    let list = Deviations::new(vec![entry("s", Value::from(3), DIFF)]).unwrap();
    let mut v = Verdict::default();
    v.judge("s", "3", vec![DIFF.into()], &list);
    // The same line at another step, a longer line, another scenario.
    v.judge("s", "2", vec![DIFF.into()], &list);
    v.judge("s", "3", vec![format!("{DIFF} extra")], &list);
    v.judge("t", "3", vec![DIFF.into()], &list);
    assert_eq!(v.accepted.len(), 1, "{v:?}");
    assert_eq!(v.failures.len(), 3, "{v:?}");
}

#[test]
fn accepted_differences_pass_with_their_reason() {
    let list = Deviations::new(vec![entry("s", Value::from("frr 0-1"), DIFF)]).unwrap();
    let mut v = Verdict::default();
    v.judge("s", "frr 0-1", vec![DIFF.into()], &list);
    let Outcome::PassedWithDeviations(why) = v.outcome("s", &list) else {
        panic!("expected a pass with deviations");
    };
    assert_eq!(why[0], "1 listed deviation(s)");
    assert!(
        why[1].ends_with("(deviation: upstream defect X)"),
        "{why:?}"
    );
}

#[test]
fn a_stale_deviation_fails_its_scenario() {
    let list = Deviations::new(vec![
        entry("s", Value::from(3), DIFF),
        entry("other", Value::from(3), DIFF),
    ])
    .unwrap();
    // Scenario s no longer shows the difference.
    let Outcome::Failed(why) = Verdict::default().outcome("s", &list) else {
        panic!("a stale deviation must fail the scenario");
    };
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(
        why[0].starts_with("step 3: listed deviation") && why[0].ends_with("(stale list)"),
        "{why:?}"
    );
    // A scenario without entries is not judged by another's.
    assert_eq!(Verdict::default().outcome("third", &list), Outcome::Passed);
}

#[test]
fn a_missing_frr_text_fails_unless_listed_exactly() {
    let missing = "frr text missing: upstream applied [\"vrf vrf-1\"], the rewrite nothing";
    let mut v = Verdict::default();
    v.judge("s", "frr 1", vec![missing.into()], &Deviations::default());
    assert!(matches!(
        v.outcome("s", &Deviations::default()),
        Outcome::Failed(_)
    ));
}

#[test]
fn an_unlisted_skip_fails_and_a_listed_one_is_skipped_with_its_reason() {
    let why = "exposing_method ovn is not implemented".to_string();
    let Outcome::Failed(f) = skipped("s", why.clone(), &Deviations::default()) else {
        panic!("an unlisted skip must fail");
    };
    assert!(f[0].starts_with("skipped: exposing_method ovn"), "{f:?}");
    let list = Deviations::new(vec![entry("s", Value::from(SKIP_STEP), &why)]).unwrap();
    let Outcome::Skipped(s) = skipped("s", why.clone(), &list) else {
        panic!("a listed skip is a skip");
    };
    assert!(s[0].contains("upstream defect X"), "{s:?}");
    // Listed for another reason: still a failure.
    let other = skipped("s", "driver x is not implemented".into(), &list);
    assert!(matches!(other, Outcome::Failed(_)), "{other:?}");
    // Listed as skipped, but it ran: stale.
    let Outcome::Failed(f) = Verdict::default().outcome("s", &list) else {
        panic!("a listed skip of a scenario that ran is stale");
    };
    assert!(f[0].contains("but it ran (stale list)"), "{f:?}");
}

#[test]
fn frr_texts_compare_without_blank_lines_and_redistribute_order() {
    let a = "\nrouter bgp 1\n\n  redistribute kernel\n  redistribute connected\n exit\n";
    let b = "router bgp 1\n  redistribute connected\n  redistribute kernel\n exit";
    assert_eq!(frr_canonical(a), frr_canonical(b));
    assert_ne!(frr_canonical(a), frr_canonical("router bgp 2\n"));
}
