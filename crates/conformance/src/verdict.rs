//! How a replay's differences are judged: the outcome of one scenario,
//! the listed deviations (upstream defects the rewrite fixes) that accept
//! a difference, and the FRR text comparison. A leaf: the scenario replay
//! and the FRR rendering and `exposing_method = ovn` checks all report
//! through it.

use std::path::Path;

use anyhow::Context;
use serde::Deserialize;
use serde_json::Value;

/// What one scenario came to.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    Passed,
    /// Passed, except for listed deviations (each with its reason): upstream
    /// defects the rewrite fixes.
    PassedWithDeviations(Vec<String>),
    /// The driver or mode is not implemented.
    Skipped(Vec<String>),
    Failed(Vec<String>),
}

/// One accepted difference.
#[derive(Clone, Debug, Deserialize)]
pub struct Deviation {
    pub scenario: String,
    /// The step index (the final node is the last step's), or `"frr"`.
    pub step: Value,
    /// A difference line as the runner prints it; a trailing `*` matches any
    /// line with that prefix.
    pub difference: String,
    pub reason: String,
}

/// The deviations file: `{"deviations": [...]}` or a bare list.
#[derive(Debug, Default)]
pub struct Deviations(pub Vec<Deviation>);

impl Deviations {
    pub fn load(path: &Path) -> anyhow::Result<Deviations> {
        if !path.exists() {
            return Ok(Deviations::default());
        }
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let v: Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let list = match v {
            Value::Object(mut o) => o.remove("deviations").unwrap_or(Value::Array(vec![])),
            other => other,
        };
        let list: Vec<Deviation> = serde_json::from_value(list).with_context(|| {
            format!(
                "{}: each entry needs scenario, step, difference, reason",
                path.display()
            )
        })?;
        Ok(Deviations(list))
    }

    /// The reason a difference at (scenario, step) is accepted, if it is.
    fn reason(&self, scenario: &str, step: &str, difference: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|d| {
                let step_ok = match &d.step {
                    Value::Number(n) => n.to_string() == step,
                    Value::String(s) => s == step,
                    _ => false,
                };
                let diff_ok = match d.difference.strip_suffix('*') {
                    Some(prefix) => difference.starts_with(prefix),
                    None => d.difference == difference,
                };
                d.scenario == scenario && step_ok && diff_ok
            })
            .map(|d| d.reason.as_str())
    }
}

impl Outcome {
    /// What a judged replay comes to: failed on any difference not
    /// accepted (the accepted ones listed after them), passed with the
    /// accepted ones, or passed; an error fails it.
    pub fn of(judged: anyhow::Result<Judged>) -> Outcome {
        match judged {
            Ok((failures, accepted)) => {
                if !failures.is_empty() {
                    let mut all = failures;
                    all.extend(accepted);
                    Outcome::Failed(all)
                } else if !accepted.is_empty() {
                    let mut why = vec![format!("{} listed deviation(s)", accepted.len())];
                    why.extend(accepted);
                    Outcome::PassedWithDeviations(why)
                } else {
                    Outcome::Passed
                }
            }
            Err(e) => Outcome::Failed(vec![format!("{e:#}")]),
        }
    }
}

/// The differences found, and those a listed deviation accepts.
pub(crate) type Judged = (Vec<String>, Vec<String>);

/// Compares, filters listed deviations, and sorts the result into
/// `failures` and `accepted`.
pub(crate) fn judge(
    name: &str,
    step: &str,
    diffs: Vec<String>,
    deviations: &Deviations,
    failures: &mut Vec<String>,
    accepted: &mut Vec<String>,
) {
    for d in diffs {
        match deviations.reason(name, step, &d) {
            Some(reason) => accepted.push(format!("step {step}: {d} (deviation: {reason})")),
            None => failures.push(format!("step {step}: {d}")),
        }
    }
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
