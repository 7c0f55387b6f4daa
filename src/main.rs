//! `ovn-bgp-agent`: the binary. Parses the command line and hands over to the library crates.
fn main() {
    println!("ovn-bgp-agent {}", env!("CARGO_PKG_VERSION"));
}
