//! Writes each target's seed inputs to `fuzz/seeds/<target>/` (the
//! committed seed corpus), replacing what was there.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds");
    for (target, _) in obgp_fuzz::TARGETS {
        let dir = root.join(target);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        let seeds = obgp_fuzz::seed_inputs(target);
        for (i, bytes) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i:03}")), bytes)?;
        }
        println!("{target}: {} seeds in {}", seeds.len(), dir.display());
    }
    Ok(())
}
