//! A hand-filled agent view and row builders, for the predicates' unit
//! tests and, with the feature `test-support`, the tests of the crates
//! that call the filters: one agent view for every test, not a stub each.

use std::collections::HashMap;

use obgp_ovsdb_data::datum::{Row, Uuid};
use serde_json::Value;

use crate::agent::AgentView;
use crate::view::RowView;

/// Agent state set field by field; unset parts read as empty.
#[derive(Default)]
pub struct FakeAgent {
    pub chassis: String,
    pub chassis_id: String,
    pub cr_lrp_routers: Vec<String>,
    pub lrp_networks: Vec<String>,
    pub exposed: Vec<(String, String)>,
    pub provider_switches: Vec<String>,
    pub distributed: bool,
    pub provider_lbs: Vec<String>,
    pub lsps: HashMap<String, Row>,
    pub rows: HashMap<Uuid, Row>,
}

impl AgentView for FakeAgent {
    fn chassis(&self) -> &str {
        &self.chassis
    }
    fn chassis_id(&self) -> &str {
        &self.chassis_id
    }
    fn has_local_cr_lrps(&self) -> bool {
        !self.cr_lrp_routers.is_empty()
    }
    fn is_local_cr_lrp(&self, router: Option<&str>) -> bool {
        router.is_some_and(|r| self.cr_lrp_routers.iter().any(|x| x == r))
    }
    fn is_local_lrp_network(&self, ls: Option<&str>) -> bool {
        ls.is_some_and(|l| self.lrp_networks.iter().any(|x| x == l))
    }
    fn is_ip_exposed(&self, ls: Option<&str>, ips: &[&str]) -> bool {
        let ls = ls.unwrap_or_default();
        ips.iter()
            .any(|ip| self.exposed.iter().any(|(l, i)| l == ls && i == ip))
    }
    fn is_ls_provider(&self, ls: Option<&str>) -> bool {
        ls.is_some_and(|l| self.provider_switches.iter().any(|x| x == l))
    }
    fn distributed(&self) -> bool {
        self.distributed
    }
    fn is_provider_ovn_lb(&self, name: Option<&str>) -> bool {
        name.is_some_and(|n| self.provider_lbs.iter().any(|x| x == n))
    }
    fn lsp(&self, name_or_uuid: &str) -> Option<RowView<'_>> {
        self.lsps.get(name_or_uuid).map(RowView::complete)
    }
    fn row(&self, uuid: Uuid) -> Option<RowView<'_>> {
        self.rows.get(&uuid).map(RowView::complete)
    }
}

/// A row from RFC 7047 wire notation; panics on a malformed literal (tests only).
pub fn row(v: Value) -> Row {
    Row::from_wire(&v).expect("test row literal")
}

/// A fixed UUID for reference columns.
pub fn uuid(n: u128) -> Uuid {
    Uuid(0x1111_0000_0000_4000_8000_0000_0000_0000 | n)
}

/// `["uuid", "<uuid>"]` for a reference column.
pub fn reference(u: Uuid) -> Value {
    serde_json::json!(["uuid", u.to_string()])
}
