//! (being written)
pub fn run(_files: &[String]) -> anyhow::Result<crate::Summary> {
    anyhow::bail!("the scenario runner is not implemented yet")
}
