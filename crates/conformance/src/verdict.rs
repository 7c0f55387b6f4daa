//! How a replay's differences are judged: the outcome of one scenario,
//! the listed deviations (upstream defects the rewrite fixes) that accept
//! a difference, the listed skips, and the FRR text comparison. A leaf:
//! the scenario replay and the FRR rendering and `exposing_method = ovn`
//! checks all report through it.
//!
//! The rules leave the runner no way to look away:
//! - a deviation names one exact difference line at one step: no pattern
//!   (a `*` anywhere in it is refused when the file is read);
//! - a deviation of a replayed scenario that accepted nothing is stale and
//!   fails that scenario, as a listed event vector that agrees does;
//! - a skipped scenario fails unless a `skip` entry gives the reason, and a
//!   `skip` entry of a scenario that ran is stale.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{bail, Context};
use serde::Deserialize;
use serde_json::Value;

/// What one scenario came to.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    Passed,
    /// Passed, except for listed deviations (each with its reason): upstream
    /// defects the rewrite fixes.
    PassedWithDeviations(Vec<String>),
    /// The driver or mode is not implemented, and the deviations file
    /// lists the skip with its reason.
    Skipped(Vec<String>),
    Failed(Vec<String>),
}

/// The `step` of a deviation that lists a skipped scenario.
pub const SKIP_STEP: &str = "skip";

/// One accepted difference, or one accepted skip (`step` = [`SKIP_STEP`]).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deviation {
    pub scenario: String,
    /// The step index (the final node is the last step's), an FRR phase
    /// (`"frr 0-1"`, `"frr 3"`), or [`SKIP_STEP`].
    pub step: Value,
    /// One difference line exactly as the runner prints it (for a skip:
    /// the runner's reason for skipping).
    pub difference: String,
    pub reason: String,
}

impl Deviation {
    fn step_label(&self) -> Option<String> {
        match &self.step {
            Value::Number(n) if n.is_u64() => Some(n.to_string()),
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            _ => None,
        }
    }

    /// Why this entry cannot be used, if it cannot.
    fn invalid(&self) -> Option<String> {
        if self.scenario.trim().is_empty() {
            return Some("no scenario".into());
        }
        let Some(step) = self.step_label() else {
            return Some(format!(
                "step {} is neither a step index nor a label",
                self.step
            ));
        };
        if self.difference.trim().is_empty() {
            return Some("no difference".into());
        }
        if self.difference.contains('*') {
            return Some(format!(
                "difference {:?} is a pattern: a deviation names one exact difference",
                self.difference
            ));
        }
        if self.reason.trim().is_empty() {
            return Some("no reason".into());
        }
        if step == "frr" {
            return Some(
                "step \"frr\": FRR texts are judged per phase (\"frr 0-1\", \"frr 3\")".into(),
            );
        }
        None
    }
}

/// The deviations file: a list of [`Deviation`]s.
#[derive(Debug, Default)]
pub struct Deviations(pub Vec<Deviation>);

impl Deviations {
    /// Reads and validates the file at `path` (none there: no deviations).
    pub fn load(path: &Path) -> anyhow::Result<Deviations> {
        if !path.exists() {
            return Ok(Deviations::default());
        }
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let v: Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let list: Vec<Deviation> = serde_json::from_value(v).with_context(|| {
            format!(
                "{}: a list of entries, each with scenario, step, difference, reason",
                path.display()
            )
        })?;
        Deviations::new(list).with_context(|| format!("{}", path.display()))
    }

    /// The list, refused when an entry is a pattern, lacks a part or
    /// repeats another.
    pub fn new(list: Vec<Deviation>) -> anyhow::Result<Deviations> {
        let mut seen = BTreeSet::new();
        for (i, d) in list.iter().enumerate() {
            if let Some(why) = d.invalid() {
                bail!("entry {i} (scenario {:?}): {why}", d.scenario);
            }
            let key = (d.scenario.clone(), d.step_label(), d.difference.clone());
            if !seen.insert(key) {
                bail!(
                    "entry {i} (scenario {:?}, step {}): listed twice: {:?}",
                    d.scenario,
                    d.step,
                    d.difference
                );
            }
        }
        Ok(Deviations(list))
    }

    /// The index of the entry that accepts `difference` at (scenario, step).
    fn find(&self, scenario: &str, step: &str, difference: &str) -> Option<usize> {
        self.0.iter().position(|d| {
            d.scenario == scenario
                && d.step_label().as_deref() == Some(step)
                && d.difference == difference
        })
    }

    /// The entries of `scenario`, with their index.
    fn of<'a>(&'a self, scenario: &'a str) -> impl Iterator<Item = (usize, &'a Deviation)> + 'a {
        self.0
            .iter()
            .enumerate()
            .filter(move |(_, d)| d.scenario == scenario)
    }
}

/// The differences found in one scenario, sorted into those no deviation
/// accepts (`failures`) and those one does (`accepted`), with the entries
/// that accepted something.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    pub failures: Vec<String>,
    pub accepted: Vec<String>,
    used: BTreeSet<usize>,
}

impl Verdict {
    /// Judges the differences found at `step` of scenario `name`.
    pub fn judge(&mut self, name: &str, step: &str, diffs: Vec<String>, deviations: &Deviations) {
        for d in diffs {
            match deviations.find(name, step, &d) {
                Some(i) => {
                    self.used.insert(i);
                    let reason = &deviations.0[i].reason;
                    self.accepted
                        .push(format!("step {step}: {d} (deviation: {reason})"));
                }
                None => self.failures.push(format!("step {step}: {d}")),
            }
        }
    }

    /// A difference no deviation may accept (the replay itself went wrong).
    pub fn fail(&mut self, what: String) {
        self.failures.push(what);
    }

    /// What the replay of scenario `name` comes to: failed on any
    /// difference not accepted and on any deviation of `name` that
    /// accepted nothing (stale), passed with the accepted ones, or passed.
    pub fn outcome(mut self, name: &str, deviations: &Deviations) -> Outcome {
        for (i, d) in deviations.of(name) {
            if d.step == SKIP_STEP {
                self.failures.push(format!(
                    "listed as skipped ({:?}) but it ran (stale list)",
                    d.difference
                ));
            } else if !self.used.contains(&i) {
                self.failures.push(format!(
                    "step {}: listed deviation {:?} no longer differs (stale list)",
                    d.step_label().unwrap_or_default(),
                    d.difference
                ));
            }
        }
        if !self.failures.is_empty() {
            let mut all = self.failures;
            all.extend(self.accepted);
            Outcome::Failed(all)
        } else if !self.accepted.is_empty() {
            let mut why = vec![format!("{} listed deviation(s)", self.accepted.len())];
            why.extend(self.accepted);
            Outcome::PassedWithDeviations(why)
        } else {
            Outcome::Passed
        }
    }
}

/// A scenario the runner cannot replay (`why`): skipped when the
/// deviations list that skip with its reason, failed otherwise.
pub(crate) fn skipped(name: &str, why: String, deviations: &Deviations) -> Outcome {
    match deviations.find(name, SKIP_STEP, &why) {
        Some(i) => Outcome::Skipped(vec![format!("{why} (listed: {})", deviations.0[i].reason)]),
        None => Outcome::Failed(vec![format!(
            "skipped: {why}; the deviations file gives no reason to skip it \
             (an entry with step \"{SKIP_STEP}\" and this difference)"
        )]),
    }
}

/// What an error while replaying comes to.
pub(crate) fn errored(e: anyhow::Error) -> Outcome {
    Outcome::Failed(vec![format!("{e:#}")])
}

/// FRR text as compared: blank lines and trailing spaces dropped, runs of
/// `redistribute` lines sorted (upstream renders them from a Python set).
pub(crate) fn frr_canonical(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut run: Vec<String> = Vec::new();
    for line in text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
    {
        if line.trim_start().starts_with("redistribute ") {
            run.push(line.to_string());
            continue;
        }
        run.sort();
        out.append(&mut run);
        out.push(line.to_string());
    }
    run.sort();
    out.append(&mut run);
    out
}

#[cfg(test)]
mod tests;
