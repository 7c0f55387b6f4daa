//! The bridge's table number against rt_tables lines in every notation
//! iproute2 reads, and lines it cannot: a number any line names is never
//! chosen, so an operator's table is never the agent's to clean up.

mod support;

use obgp_netmodel::{proto, scope, Class, DesiredNode, RouteType};
use obgp_plan::plan::plan;
use obgp_plan::{Actual, KernelRoute, Op, RtTables};
use support::dev;

/// A node whose table 1 holds an operator's route (proto static), and
/// rt_tables as given.
fn node_with_operator_table_1(rt_tables: &[u8]) -> Actual {
    let mut a = Actual {
        rt_tables: RtTables::parse(rt_tables),
        ..Actual::default()
    };
    a.routes.insert(KernelRoute {
        table: 1,
        v6: false,
        dst: Some("203.0.113.0/24".parse().unwrap()),
        metric: None,
        dev: Some(dev("eth1")),
        via: None,
        proto: proto::STATIC,
        scope: scope::LINK,
        kind: RouteType::Unicast,
    });
    a
}

fn wants_br_ex() -> DesiredNode {
    let mut d = DesiredNode {
        vrf_table: 10,
        ..DesiredNode::default()
    };
    d.bridge_tables.insert(dev("br-ex"));
    d.rules.insert(
        obgp_netmodel::Rule {
            dst: "172.24.4.10/32".parse().unwrap(),
            table: obgp_netmodel::TableRef::Bridge(dev("br-ex")),
            priority: None,
        },
        Class::Vm,
    );
    d
}

/// The table `plan` gives br-ex, and whether it deletes anything of table 1.
fn choose(rt_tables: &[u8]) -> (u32, Vec<Op>) {
    let a = node_with_operator_table_1(rt_tables);
    let p = plan(&wants_br_ex(), &a).unwrap();
    let table = p.tables[&dev("br-ex")];
    let dels = p
        .ops()
        .filter(|op| matches!(op, Op::DelRoute { route, .. } if route.table == 1))
        .cloned()
        .collect();
    (table, dels)
}

#[test]
fn a_hexadecimal_id_is_taken_and_its_routes_are_not_leftovers() {
    let (table, dels) = choose(b"255\tlocal\n254\tmain\n0x1\tcustomer\n");
    assert_eq!(table, 2, "0x1 is table 1, the operator's");
    assert!(dels.is_empty(), "{dels:?}");
}

#[test]
fn the_numbers_of_a_line_not_understood_are_taken() {
    for file in [
        &b"0x1g customer\n"[..],
        b"1customer\n",
        b"one=1 two=0x2\n",
        b"\xff\xfe 1 \xe9\n",
        b"1\n",
    ] {
        let (table, dels) = choose(file);
        assert_ne!(table, 1, "{}", String::from_utf8_lossy(file));
        assert!(dels.is_empty(), "{dels:?}");
    }
    assert_eq!(choose(b"one=1 two=0x2\n").0, 3);
}

#[test]
fn a_hexadecimal_entry_of_the_bridge_is_reused() {
    let a = node_with_operator_table_1(b"0xc8 br-ex\n");
    let p = plan(&wants_br_ex(), &a).unwrap();
    assert_eq!(p.tables[&dev("br-ex")], 200);
    assert!(
        !p.ops().any(|op| matches!(op, Op::AddRtTable { .. })),
        "{p}"
    );
}

#[test]
fn a_file_that_is_not_utf8_plans_from_its_lines() {
    let (table, _) = choose(b"# caf\xe9 \xff\xfe\n2 t\xe9\n3 br-ex\n");
    assert_eq!(table, 3, "br-ex's entry is read past the bytes before it");
    let (table, dels) = choose(b"# \xff\n1 t\xe9\n2 two\n");
    assert_eq!(table, 3);
    assert!(dels.is_empty(), "{dels:?}");
}
