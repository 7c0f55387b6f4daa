//! Running the VM tier's test binaries inside the guest, `jobs` at a time.
//!
//! With one job a binary's output streams straight to the console, as it
//! runs. With more, each binary's stdout and stderr go to one file of its
//! own (in the order it wrote them) which is printed whole, under a
//! header naming the binary, once the binary ends: the console holds one
//! binary's output together, never two interleaved. A binary that fails,
//! cannot start or is still running when the budget runs out is named in
//! its `FAIL` line and in the summary, and fails the batch.

use std::collections::VecDeque;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How often the runner looks at its running binaries. A look is a
/// `waitpid(WNOHANG)` each: nothing for the guest's CPUs.
const POLL: Duration = Duration::from_millis(200);

/// One program of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// What the report lines call it (the binary's file name).
    pub name: String,
    pub program: String,
    pub args: Vec<String>,
}

/// How one job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// Exited non-zero or by a signal (`ExitStatus`'s text).
    Failed(String),
    /// Could not be spawned (the error's text).
    NotStarted(String),
    /// Killed when the budget ran out.
    OverBudget,
    /// Never started: the budget ran out first.
    Skipped,
}

/// One job's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobResult {
    pub name: String,
    pub outcome: Outcome,
    /// From its start to its end (zero if it never ran).
    pub took: Duration,
}

impl JobResult {
    pub fn passed(&self) -> bool {
        self.outcome == Outcome::Passed
    }

    /// The report line: `PASS name (12.3 s)` or `FAIL name (why, 12.3 s)`.
    pub fn line(&self) -> String {
        let secs = self.took.as_secs_f64();
        match &self.outcome {
            Outcome::Passed => format!("PASS {} ({secs:.1} s)", self.name),
            Outcome::Failed(status) => format!("FAIL {} ({status}, {secs:.1} s)", self.name),
            Outcome::NotStarted(e) => format!("FAIL {} (could not start: {e})", self.name),
            Outcome::OverBudget => format!(
                "FAIL {} (killed after {secs:.1} s: the batch's budget ran out)",
                self.name
            ),
            Outcome::Skipped => format!(
                "FAIL {} (not run: the batch's budget ran out first)",
                self.name
            ),
        }
    }
}

/// A job under way.
struct Running {
    index: usize,
    child: Child,
    /// Its captured output; `None` when it streams to our stdout.
    log: Option<PathBuf>,
    started: Instant,
}

/// Runs `jobs`, at most `parallel` at a time, in the given order, and
/// returns one result per job in that order. Captured output goes to
/// files in `log_dir` (created). Prints `obgp-vm test: ...` lines to
/// stdout: a start line per job, then its output (when captured) and its
/// PASS/FAIL line. After `budget`, running jobs are killed and the rest
/// not started: a hung binary is then named and its output so far shown,
/// before whatever runs the batch gives up on the whole.
pub fn run(jobs: &[Job], parallel: usize, budget: Duration, log_dir: &Path) -> Vec<JobResult> {
    let parallel = parallel.max(1);
    let capture = parallel > 1;
    if capture {
        if let Err(e) = fs::create_dir_all(log_dir) {
            println!(
                "obgp-vm test: cannot create {} ({e}); output not captured",
                log_dir.display()
            );
        }
    }
    let started = Instant::now();
    let mut results: Vec<Option<JobResult>> = vec![None; jobs.len()];
    let mut queue: VecDeque<usize> = (0..jobs.len()).collect();
    let mut running: Vec<Running> = Vec::new();
    loop {
        let over_budget = started.elapsed() >= budget;
        while !over_budget && running.len() < parallel {
            let Some(index) = queue.pop_front() else {
                break;
            };
            let log = capture.then(|| log_dir.join(format!("{index}-{}.log", jobs[index].name)));
            match start(&jobs[index], log.as_deref()) {
                Ok(child) => running.push(Running {
                    index,
                    child,
                    log,
                    started: Instant::now(),
                }),
                Err(e) => {
                    let r = JobResult {
                        name: jobs[index].name.clone(),
                        outcome: Outcome::NotStarted(e),
                        took: Duration::ZERO,
                    };
                    println!("obgp-vm test: {}", r.line());
                    results[index] = Some(r);
                }
            }
        }
        if running.is_empty() {
            break;
        }
        let mut still = Vec::new();
        for mut r in running {
            let done = match r.child.try_wait() {
                Ok(Some(status)) => Some(outcome_of(status)),
                Ok(None) if over_budget => {
                    let _ = r.child.kill();
                    let _ = r.child.wait();
                    Some(Outcome::OverBudget)
                }
                Ok(None) => None,
                Err(e) => Some(Outcome::Failed(format!("waiting for it: {e}"))),
            };
            match done {
                Some(outcome) => results[r.index] = Some(finish(&jobs[r.index], &r, outcome)),
                None => still.push(r),
            }
        }
        running = still;
        if over_budget {
            for index in queue.drain(..) {
                let r = JobResult {
                    name: jobs[index].name.clone(),
                    outcome: Outcome::Skipped,
                    took: Duration::ZERO,
                };
                println!("obgp-vm test: {}", r.line());
                results[index] = Some(r);
            }
        }
        if !running.is_empty() {
            std::thread::sleep(POLL);
        }
    }
    results
        .into_iter()
        .zip(jobs)
        .map(|(r, job)| {
            r.unwrap_or_else(|| JobResult {
                name: job.name.clone(),
                outcome: Outcome::Skipped,
                took: Duration::ZERO,
            })
        })
        .collect()
}

/// Spawns `job`, its stdout and stderr both into `log` (one file, so
/// their order is kept) or, without one, inherited.
fn start(job: &Job, log: Option<&Path>) -> Result<Child, String> {
    println!(
        "obgp-vm test: running {} {}",
        job.program,
        job.args.join(" ")
    );
    let mut cmd = Command::new(&job.program);
    cmd.args(&job.args).stdin(Stdio::null());
    if let Some(log) = log {
        let file = fs::File::create(log).map_err(|e| format!("creating {}: {e}", log.display()))?;
        let err = file
            .try_clone()
            .map_err(|e| format!("duplicating {}: {e}", log.display()))?;
        cmd.stdout(file).stderr(err);
    }
    cmd.spawn().map_err(|e| e.to_string())
}

fn outcome_of(status: ExitStatus) -> Outcome {
    if status.success() {
        Outcome::Passed
    } else {
        Outcome::Failed(status.to_string())
    }
}

/// Prints a finished job's captured output, between lines naming it, and
/// its PASS/FAIL line.
fn finish(job: &Job, r: &Running, outcome: Outcome) -> JobResult {
    let result = JobResult {
        name: job.name.clone(),
        outcome,
        took: r.started.elapsed(),
    };
    if let Some(log) = &r.log {
        let text = fs::read(log)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_else(|e| format!("(reading {}: {e})\n", log.display()));
        println!("obgp-vm test: ---- output of {} ----", job.name);
        print!("{text}");
        if !text.is_empty() && !text.ends_with('\n') {
            println!();
        }
        println!("obgp-vm test: ---- end of {} ----", job.name);
        let _ = fs::remove_file(log);
    }
    println!("obgp-vm test: {}", result.line());
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(name: &str, script: &str) -> Job {
        Job {
            name: name.to_string(),
            program: "/bin/sh".to_string(),
            args: vec!["-c".to_string(), script.to_string()],
        }
    }

    #[test]
    fn two_at_a_time_run_together_and_report_in_job_order() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = [
            sh("slow", "sleep 1; echo slow-out; echo slow-err >&2"),
            sh("fast", "echo fast-out; exit 3"),
            sh("third", "sleep 1"),
        ];
        let t = Instant::now();
        let results = run(&jobs, 2, Duration::from_secs(60), dir.path());
        // slow and fast overlap, third starts when fast ends: ~1 s, not 2
        assert!(
            t.elapsed() < Duration::from_millis(1900),
            "{:?}",
            t.elapsed()
        );
        let names: Vec<&str> = results.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["slow", "fast", "third"]);
        assert!(results[0].passed() && results[2].passed());
        assert_eq!(
            results[1].outcome,
            Outcome::Failed("exit status: 3".to_string())
        );
        assert!(results[1].line().starts_with("FAIL fast (exit status: 3, "));
        // the logs were printed and removed
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_budget_kills_the_running_and_skips_the_queued() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = [
            sh("hangs", "sleep 30"),
            sh("quick", "true"),
            sh("queued", "sleep 30"),
            sh("never", "true"),
        ];
        let t = Instant::now();
        let results = run(&jobs, 2, Duration::from_millis(800), dir.path());
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        let outcomes: Vec<&Outcome> = results.iter().map(|r| &r.outcome).collect();
        assert_eq!(
            outcomes,
            [
                &Outcome::OverBudget,
                &Outcome::Passed,
                &Outcome::OverBudget,
                &Outcome::Skipped
            ]
        );
        assert!(results[0].line().starts_with("FAIL hangs (killed after "));
        assert!(results[3].line().starts_with("FAIL never (not run"));
    }

    #[test]
    fn a_program_that_cannot_start_is_a_named_failure() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = [Job {
            name: "missing".to_string(),
            program: "/nonexistent/obgp-test-binary".to_string(),
            args: Vec::new(),
        }];
        for parallel in [1, 2] {
            let results = run(&jobs, parallel, Duration::from_secs(10), dir.path());
            assert!(
                matches!(results[0].outcome, Outcome::NotStarted(_)),
                "{results:?}"
            );
            assert!(results[0]
                .line()
                .starts_with("FAIL missing (could not start: "));
        }
    }

    #[test]
    fn one_at_a_time_streams_and_keeps_no_log() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs");
        let results = run(&[sh("a", "exit 0")], 1, Duration::from_secs(10), &logs);
        assert!(results[0].passed());
        assert!(!logs.exists(), "one job at a time captures nothing");
    }
}
