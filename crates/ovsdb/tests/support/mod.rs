//! Helpers the client's system tests share.

use obgp_ovsdb::Client;

/// The names of the cached Logical_Switch rows, sorted.
pub fn switch_names(client: &Client) -> Vec<String> {
    let mut names: Vec<String> = client
        .cache()
        .snapshot()
        .table("Logical_Switch")
        .values()
        .filter_map(|r| r.str("name").map(String::from))
        .collect();
    names.sort();
    names
}
