//! `plan` with `exposing_method = ovn`: the node ops (the announcements on
//! `bgp_nic`, the cookie-999 flows and FDB entries; no kernel wiring) and
//! the node-local OVN NB transaction. Live, against the local NB the
//! agent writes; offline (`--ovn FILE`), against an empty local NB or the
//! rows of `--local-nb FILE`.

use std::path::Path;

use anyhow::{bail, Context};
use obgp_config::Config;
use obgp_local_cluster::{LocalClusterPlan, Observed};
use obgp_ovsdb_data::{Row, Uuid};
use obgp_plan::Plan;
use serde_json::{json, Value};

use super::ovn_file::{self, OvnFile};
use crate::cli::Format;

/// What `plan` prints in this mode.
pub struct OvnPlan {
    pub node: Plan,
    pub local_nb: LocalClusterPlan,
    /// What the local-NB transaction was planned against.
    pub against: String,
}

/// Plans from files: no database, no node.
pub fn offline(
    config: &Config,
    ovn_file: &Path,
    node_file: Option<&Path>,
    local_nb_file: Option<&Path>,
) -> anyhow::Result<(OvnPlan, ovn_file::NodeSource)> {
    let f = OvnFile::read(ovn_file, node_file, config)?;
    let facts = ovn_file::facts(config, &f);
    let once = obgp_pipeline::once(&f.snapshot, config, &facts, &f.actual)?;
    // The underlay driver's notes, then this mode's.
    for note in &once.desired.notes {
        tracing::info!("{note}");
    }
    let Some(cluster) = &once.desired.local_cluster else {
        bail!(
            "driver = {} computes no node-local cluster: exposing_method = ovn needs nb_ovn_bgp_driver",
            config.default.driver.as_str()
        );
    };
    let (observed, against) = match local_nb_file {
        Some(p) => (
            read_observed(p)?,
            format!("planned against the local NB rows of {}", p.display()),
        ),
        None => (
            Observed::new(),
            "planned offline against an EMPTY local NB (give --local-nb FILE for its rows)"
                .to_string(),
        ),
    };
    let local_nb = obgp_local_cluster::plan(&cluster.local_nb, &observed);
    Ok((
        OvnPlan {
            node: once.plan,
            local_nb,
            against,
        },
        f.node,
    ))
}

pub fn print(p: &OvnPlan, format: Format) -> anyhow::Result<()> {
    match format {
        Format::Text => print!("{}", text(p)),
        Format::Json => super::print_json(&to_json(p)?)?,
    }
    Ok(())
}

fn text(p: &OvnPlan) -> String {
    let mut out = obgp_controller::render_plan(&p.node);
    out.push_str(&format!(
        "\nnode-local OVN NB transaction ({}):\n",
        p.against
    ));
    if p.local_nb.is_empty() {
        out.push_str("  nothing to do: the local NB holds the desired rows\n");
    }
    for op in &p.local_nb.ops {
        out.push_str(&format!("  {op}\n"));
    }
    for problem in &p.local_nb.problems {
        out.push_str(&format!("  problem: {problem}\n"));
    }
    out
}

/// The node plan's JSON with a `local_nb` member: `against`, `lines` (as
/// printed), `transact` (the `transact` parameters), and `problems`.
fn to_json(p: &OvnPlan) -> anyhow::Result<Value> {
    let mut v = serde_json::to_value(&p.node)?;
    let lines: Vec<String> = p.local_nb.ops.iter().map(|o| o.to_string()).collect();
    if let Value::Object(m) = &mut v {
        m.insert(
            "local_nb".into(),
            json!({
                "against": p.against,
                "lines": lines,
                "transact": p.local_nb.transact_params(),
                "problems": p.local_nb.problems,
            }),
        );
    }
    Ok(v)
}

/// Local-NB rows in OVSDB wire notation, by table and uuid.
fn read_observed(path: &Path) -> anyhow::Result<Observed> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let doc: Value = serde_json::from_str(&text)
        .with_context(|| format!("parsing {} as JSON", path.display()))?;
    let tables = doc.get("OVN_Northbound").unwrap_or(&doc);
    let tables = tables
        .as_object()
        .with_context(|| format!("{}: not an object of tables", path.display()))?;
    let mut observed = Observed::new();
    for (table, rows) in tables {
        let rows = rows
            .as_object()
            .with_context(|| format!("{}: table {table} is not an object", path.display()))?;
        let into = observed.entry(table.clone()).or_default();
        for (uuid, row) in rows {
            let u = Uuid::parse(uuid)
                .map_err(|e| anyhow::anyhow!("{}: {table} uuid {uuid:?}: {e}", path.display()))?;
            let r = Row::from_wire(row)
                .map_err(|e| anyhow::anyhow!("{}: {table} row {uuid}: {e}", path.display()))?;
            into.insert(u, r);
        }
    }
    Ok(observed)
}
