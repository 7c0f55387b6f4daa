//! `replay TARGET CASES [CORPUS_DIR...]`: runs CASES random and mutated
//! inputs (mutations of the seeds and of the corpus directories' files)
//! through one harness, uninstrumented, and prints the count and the rate;
//! the first input that panics is written to `replay-failure-TARGET`.

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(target), Some(cases)) = (args.first(), args.get(1).and_then(|c| c.parse().ok()))
    else {
        eprintln!("usage: replay TARGET CASES [CORPUS_DIR...]");
        std::process::exit(2);
    };
    let Some((_, run)) = obgp_fuzz::TARGETS.iter().find(|(t, _)| t == target) else {
        eprintln!("replay: no target {target}");
        std::process::exit(2);
    };
    let mut corpus = obgp_fuzz::seed_inputs(target);
    for dir in &args[2..] {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if let Ok(bytes) = std::fs::read(entry.path()) {
                corpus.push(bytes);
            }
        }
    }
    let seed = std::env::var("OBGP_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x0b9f_f022);
    // A panic is reported by the driver; keep the default hook's message.
    let start = Instant::now();
    let result = obgp_fuzz::replay::run_cases(*run, &corpus, cases, seed);
    let secs = start.elapsed().as_secs_f64();
    match result {
        Ok(()) => println!(
            "replay {target}: {cases} inputs, 0 panics, {secs:.0} s ({:.0}/s), corpus {} entries, seed {seed}",
            cases as f64 / secs,
            corpus.len()
        ),
        Err(failure) => {
            let path = format!("replay-failure-{target}");
            let _ = std::fs::write(&path, &failure.input);
            eprintln!("replay {target}: {failure}; input kept in {path}");
            std::process::exit(1);
        }
    }
}
