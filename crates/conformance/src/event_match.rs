//! (being written)
pub fn run(_files: &[String]) -> anyhow::Result<crate::Summary> {
    anyhow::bail!("the event_match runner is not implemented yet")
}
