//! The live SB index, patched row by row through random histories of
//! Chassis, Port_Binding, Logical_DP_Group and Load_Balancer writes
//! (garbled rows and dangling references included), always equals one built
//! from scratch over the same rows, and answers every query as the
//! pre-incremental `SbIndex::build` did (`reference::sb`).

mod reference;

use std::collections::BTreeMap;

use obgp_ovn::{LiveSnapshot, Snapshot, Tables};
use obgp_ovsdb_data::{Row, Uuid};
use proptest::prelude::*;
use proptest::sample::{select, subsequence};
use serde_json::{json, Value};

fn pool(table: u128, n: u128) -> Vec<Uuid> {
    (0..n).map(|i| Uuid((table << 64) | i)).collect()
}
fn chassis() -> Vec<Uuid> {
    pool(1, 3)
}
fn bindings() -> Vec<Uuid> {
    pool(2, 6)
}
fn groups() -> Vec<Uuid> {
    pool(3, 2)
}
fn lbs() -> Vec<Uuid> {
    pool(4, 3)
}
/// Datapaths: only referenced, never rows here (the SB index does not read
/// Datapath_Binding).
fn datapaths() -> Vec<Uuid> {
    pool(5, 3)
}
const NOWHERE: Uuid = Uuid(9 << 64);

// Each pool holds a non-ASCII name (multi-byte and control characters):
// names are arbitrary UTF-8 and must index and compare like any other.
const CHASSIS_NAMES: &[&str] = &["ch-a", "ch-b", "ch-é\u{1b}"];
const PORTS: &[&str] = &["lp0", "lp1", "lp2", "lp-網🦀"];
const PHYSNETS: &[&str] = &["physnet1", "physnet2", "physnét-3"];
const LB_NAMES: &[&str] = &["lb1", "lb2", "lb-ü"];

fn uuid_ref(u: Uuid) -> Value {
    json!(["uuid", u.to_string()])
}

fn uuid_set(us: &[Uuid]) -> Value {
    json!(["set", us.iter().map(|u| uuid_ref(*u)).collect::<Vec<_>>()])
}

fn maybe_ref(pool: Vec<Uuid>) -> impl Strategy<Value = Option<Uuid>> {
    let mut choices: Vec<Option<Uuid>> = pool.into_iter().map(Some).collect();
    choices.extend([Some(NOWHERE), None]);
    select(choices)
}

fn chassis_row() -> impl Strategy<Value = Value> {
    select(vec!["ch-a", "ch-b", "ch-é\u{1b}", ""]).prop_map(|n| json!({"name": n}))
}

fn binding_row() -> impl Strategy<Value = Value> {
    (
        (
            select(vec!["lp0", "lp1", "lp2", "lp-網🦀", ""]),
            select(vec!["", "localnet", "patch", "chassisredirect", "virtual"]),
            select(datapaths()),
            maybe_ref(chassis()),
            proptest::option::of(any::<bool>()),
        ),
        (
            proptest::option::of(select(vec![
                "fa:16:3e:00:00:01 10.0.0.1",
                "unknown",
                "router",
                "zz bad",
            ])),
            proptest::option::of(select(vec![
                "fa:16:3e:aa:aa:01 172.24.4.100 is_chassis_resident(\"lp1\")",
                "fa:16:3e:aa:aa:02 172.24.4.101 is_chassis_resident(\"lp2\")",
                "fa:16:3e:aa:aa:03 172.24.4.102 is_chassis_resident(\"lp-網🦀\")",
                "garbled",
            ])),
            proptest::option::of(select(PHYSNETS.to_vec())),
            select(vec![json!(null), json!(0), json!(100), json!(5000)]),
        ),
    )
        .prop_map(|((lp, ty, dp, ch, up), (mac, nat, physnet, tag))| {
            let mut row = json!({"logical_port": lp, "type": ty, "datapath": uuid_ref(dp)});
            if let Some(c) = ch {
                row["chassis"] = uuid_ref(c);
            }
            if let Some(up) = up {
                row["up"] = json!(up);
            }
            if let Some(m) = mac {
                row["mac"] = json!(m);
            }
            if let Some(n) = nat {
                row["nat_addresses"] = json!(n);
            }
            if let Some(p) = physnet {
                row["options"] = json!(["map", [["network_name", p]]]);
            }
            if !tag.is_null() {
                row["tag"] = tag;
            }
            row
        })
}

fn group_row() -> impl Strategy<Value = Value> {
    let n = datapaths().len();
    subsequence(datapaths(), 0..=n).prop_map(|dps| json!({"datapaths": uuid_set(&dps)}))
}

fn lb_row() -> impl Strategy<Value = Value> {
    let n = datapaths().len();
    (
        select(vec!["lb1", "lb2", "lb-ü", ""]),
        maybe_ref(groups()),
        maybe_ref(groups()),
        maybe_ref(groups()),
        subsequence(datapaths(), 0..=n),
    )
        .prop_map(|(name, ls, dp, lr, dps)| {
            let mut row = json!({"name": name, "datapaths": uuid_set(&dps)});
            for (col, g) in [
                ("ls_datapath_group", ls),
                ("datapath_group", dp),
                ("lr_datapath_group", lr),
            ] {
                if let Some(g) = g {
                    row[col] = uuid_ref(g);
                }
            }
            row
        })
}

type Write = (&'static str, Uuid, Option<Row>);

fn write() -> impl Strategy<Value = Write> {
    fn w(
        table: &'static str,
        pool: Vec<Uuid>,
        row: impl Strategy<Value = Value> + 'static,
    ) -> BoxedStrategy<Write> {
        (select(pool), proptest::option::weighted(0.8, row))
            .prop_map(move |(u, r)| (table, u, r.map(|v| Row::from_wire(&v).expect("wire row"))))
            .boxed()
    }
    prop_oneof![
        1 => w("Chassis", chassis(), chassis_row()),
        4 => w("Port_Binding", bindings(), binding_row()),
        1 => w("Logical_DP_Group", groups(), group_row()),
        2 => w("Load_Balancer", lbs(), lb_row()),
        1 => w("Datapath_Binding", datapaths(), Just(json!({}))),
    ]
}

/// Every SB query over every key the generator can produce, as text.
macro_rules! dump {
    ($sb:expr, $warnings:expr) => {{
        let sb = $sb;
        let mut out: Vec<String> = Vec::new();
        for p in PORTS.iter().chain([""].iter()) {
            out.push(format!("port#{p}: {:?}", sb.port(p)));
            out.push(format!(
                "nat#{p}: {:?}",
                sb.nat_addresses_of(p).collect::<Vec<_>>()
            ));
        }
        for c in CHASSIS_NAMES {
            out.push(format!(
                "on#{c}: {:?}",
                sb.ports_on_chassis(c).collect::<Vec<_>>()
            ));
        }
        for dp in datapaths() {
            out.push(format!(
                "dp#{dp}: {:?}",
                sb.ports_on_datapath(dp).collect::<Vec<_>>()
            ));
            out.push(format!(
                "ln#{dp}: {:?}",
                sb.localnets_of_datapath(dp).collect::<Vec<_>>()
            ));
            out.push(format!(
                "ln1#{dp}: {:?}",
                sb.localnet_of_datapath(dp, |n| n == "physnet2")
            ));
            out.push(format!(
                "vip#{dp}: {:?}",
                sb.lb_vip_ports_on_datapath(dp).collect::<Vec<_>>()
            ));
        }
        for n in PHYSNETS {
            out.push(format!(
                "net#{n}: {:?}",
                sb.localnets_on_network(n).collect::<Vec<_>>()
            ));
        }
        for n in LB_NAMES.iter().chain([""].iter()) {
            out.push(format!("lb#{n}: {:?}", sb.load_balancer(n)));
        }
        out.push(format!("len: {}", sb.len()));
        out.push(format!("warnings: {:?}", $warnings));
        out
    }};
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn live_sb_index_equals_a_fresh_build_after_every_batch(
        batches in proptest::collection::vec(proptest::collection::vec(write(), 1..6), 1..12)
    ) {
        let mut live = LiveSnapshot::default();
        let mut rows: BTreeMap<(&'static str, Uuid), Row> = BTreeMap::new();
        let empty = Tables::new();
        for batch in &batches {
            for (table, uuid, row) in batch {
                match row {
                    Some(r) => rows.insert((*table, *uuid), r.clone()),
                    None => rows.remove(&(*table, *uuid)),
                };
            }
            live.apply_sb(batch.iter().map(|(t, u, r)| (*t, *u, r.as_ref())));
            let got = live.snapshot();
            let mut sb = Tables::new();
            for ((table, uuid), row) in &rows {
                sb.entry(table.to_string()).or_default().insert(*uuid, row.clone());
            }
            let want = Snapshot::build_with_sb(&empty, &sb, &empty);
            prop_assert_eq!(dump!(got.sb(), got.warnings()), dump!(want.sb(), want.warnings()));
            prop_assert!(got == want, "same answers but different internal state");
            let mut oracle_warnings = Vec::new();
            let oracle = reference::sb::SbIndex::build(&sb, &mut oracle_warnings);
            prop_assert_eq!(dump!(got.sb(), got.warnings()), dump!(&oracle, &oracle_warnings[..]));
        }
    }
}
