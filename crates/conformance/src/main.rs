//! `conformance`: runs upstream's recorded decision tables and golden
//! node-side scenarios against the rewrite.
//!
//! - `conformance event-match FILE...`: the event filters against
//!   `fixtures/conformance/event-match*.json` (see [`event_match`]).
//! - `conformance scenario FILE...`: desired state, planner and a simulated node
//!   against `fixtures/conformance/scenarios/*.json` (see [`scenario`]), and
//!   the `exposing_method = ovn` golden files `fixtures/ovn-local/*.json`
//!   (see [`local_cluster`]).
//!
//! Both print one line per failure, then `N passed, M failed[, K skipped]`,
//! and exit non-zero when anything failed: a difference no deviation lists,
//! a listed deviation that no longer differs (stale), or a skip the
//! deviations do not list. A deviations file that does not validate (a
//! pattern, an entry without its reason) exits 2 naming the entry.

mod event_match;
mod frr_renderings;
mod local_cluster;
mod scenario;
mod scenario_file;
mod verdict;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.split_first() {
        Some((cmd, files)) if cmd == "event-match" => event_match::run(files),
        Some((cmd, files)) if cmd == "scenario" => scenario::run(files),
        _ => {
            eprintln!("usage: conformance <event-match|scenario> FILE...");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(summary) => {
            println!("{summary}");
            if summary.failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("conformance: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The closing line every runner prints.
#[derive(Debug, Default)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    /// Of the passed, how many differ from upstream only where the rewrite
    /// fixes a listed upstream defect.
    pub with_deviations: usize,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} passed", self.passed)?;
        if self.with_deviations > 0 {
            write!(f, " ({} with listed deviations)", self.with_deviations)?;
        }
        write!(f, ", {} failed", self.failed)?;
        if self.skipped > 0 {
            write!(f, ", {} skipped", self.skipped)?;
        }
        Ok(())
    }
}
