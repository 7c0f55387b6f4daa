//! `conformance`: runs upstream's recorded decision tables and scenarios against the rewrite.
fn main() {
    eprintln!("conformance: no runner is implemented yet");
    std::process::exit(2);
}
