//! Prints how far each seed input of the structure-aware targets goes.
fn main() {
    use obgp_fuzz::{pipeline, wire};
    let mut p = std::collections::BTreeMap::new();
    for s in obgp_fuzz::seed_inputs("pipeline") {
        *p.entry(format!("{:?}", pipeline::run_to(&s))).or_insert(0) += 1;
    }
    let mut w = std::collections::BTreeMap::new();
    for s in obgp_fuzz::seed_inputs("wire") {
        *w.entry(format!("{:?}", wire::run_to(&s))).or_insert(0) += 1;
    }
    println!("pipeline seeds: {p:?}\nwire seeds: {w:?}");
}
