//! Arbitrary Unicode text for the never-panics properties: what a
//! hand-edited or hostile OVN database can put in a name, a map key or a
//! bridge mapping.

use proptest::prelude::*;

/// Any Unicode text: control characters, combining marks, 2-, 3- and 4-byte
/// characters, and strings well past the 15-byte device-name limit.
pub fn unicode_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(any::<char>(), 0..24).prop_map(String::from_iter),
        1 => prop::collection::vec(any::<char>(), 24..300).prop_map(String::from_iter),
        // Runs of multi-byte characters that fit a device name or just miss.
        2 => prop::collection::vec(prop::sample::select(&['é', '網', '🦀', 'a', '-', '\u{0}'][..]), 0..17)
            .prop_map(String::from_iter),
    ]
}

/// Unicode text shaped like the lists the parsers split: `a:b`, `a,b`,
/// `a b` (bridge mappings, chassis lists, address strings, CIDR lists).
pub fn unicode_list() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(unicode_text(), 1..4),
        prop::sample::select(&[":", ",", " ", "/"][..]),
        prop::sample::select(&[":", ",", " "][..]),
    )
        .prop_map(|(parts, inner, outer)| {
            parts
                .chunks(2)
                .map(|pair| pair.join(inner))
                .collect::<Vec<_>>()
                .join(outer)
        })
}
