//! `obgp-vm`: run commands or test binaries inside the full-kernel VM tier
//! (Debian's kernel under QEMU TCG, host root shared read-only).
//!
//! ```text
//! obgp-vm build                         prepare the kernel + initramfs cache
//! obgp-vm run [OPTS] -- CMD ARGS...     one boot, CMD's exit status passed through
//! obgp-vm test [OPTS] BIN... [-- ARGS]  one boot, each test binary run with
//!                                       `--ignored --test-threads=1 ARGS`,
//!                                       `--jobs` of them at a time
//! obgp-vm test --cargo-json FILE|-      the test binaries named in cargo's
//!                                       `--message-format=json` output
//! ```
//! OPTS: `--dir DIR` (cache, default `$OBGP_VM_DIR` or `target/vm`),
//! `--timeout SECS` (default 900), `--mem MIB` (default 2048),
//! `--cpus N` (default `$OBGP_VM_CPUS` or 2), `--share DIR` (read-write at
//! the same path in the guest, repeatable). `test` also takes `--jobs N`
//! (default `$OBGP_VM_JOBS` or 2) and `--only NAME,...` (default
//! `$OBGP_VM_ONLY`: only the test targets of these names, e.g. `evpn_l2`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use obgp_testbed::vm::{self, batch, Vm, VmOptions};

const USAGE: &str = "\
obgp-vm: run commands or test binaries in the full-kernel VM tier
(Debian's kernel under QEMU TCG, the host's / shared read-only, root inside)

  obgp-vm build [--dir DIR]                 prepare the kernel + initramfs cache
  obgp-vm run [OPTS] -- CMD ARGS...         one boot; CMD's exit status is ours
  obgp-vm test [OPTS] BIN... [-- ARGS]      one boot; each BIN --ignored --test-threads=1 ARGS
  obgp-vm test [OPTS] --cargo-json FILE|-   the test binaries in cargo's --message-format=json

OPTS: --dir DIR (cache; default $OBGP_VM_DIR or target/vm), --timeout SECS (900),
      --mem MIB (2048), --cpus N (guest CPUs; default $OBGP_VM_CPUS or 2),
      --share DIR (read-write at the same path; repeatable)
test: --jobs N (binaries at a time in the guest; default $OBGP_VM_JOBS or 2),
      --only NAME,... (only these test targets, e.g. evpn_l2; default $OBGP_VM_ONLY)
Exit status 125: obgp-vm itself failed (build, boot, timeout).
";

fn main() -> ExitCode {
    match real_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("obgp-vm: {e:#}");
            ExitCode::from(125)
        }
    }
}

/// Options shared by `run` and `test`.
struct Opts {
    dir: PathBuf,
    vm: VmOptions,
}

fn real_main() -> Result<ExitCode> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprint!("{USAGE}");
        return Ok(ExitCode::from(2));
    }
    let sub = args.remove(0);
    match sub.as_str() {
        "help" | "-h" | "--help" => {
            print!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        "build" => {
            let (opts, rest) = parse_opts(args)?;
            if !rest.is_empty() {
                bail!("build takes no arguments, got {rest:?}");
            }
            let started = Instant::now();
            let vm = Vm::build(&opts.dir)?;
            println!(
                "obgp-vm: kernel {} ready in {} ({:.1} s)",
                vm.kernel_version(),
                opts.dir.display(),
                started.elapsed().as_secs_f64()
            );
            Ok(ExitCode::SUCCESS)
        }
        "run" => {
            let (opts, rest) = parse_opts(args)?;
            let cmd = after_dashes(rest)?;
            boot_and_run(&opts, &cmd)
        }
        "test" => {
            let (opts, rest) = parse_opts(args)?;
            let mut t = TestArgs::parse(rest)?;
            if let Some(src) = &t.cargo_json {
                t.bins
                    .extend(test_binaries_from_cargo_json(&read_source(src)?)?);
            }
            if t.bins.is_empty() {
                bail!("test: no test binaries given");
            }
            let only = t.only.clone().unwrap_or_else(|| {
                std::env::var("OBGP_VM_ONLY")
                    .map(|v| names_list(&v))
                    .unwrap_or_default()
            });
            let total = t.bins.len();
            t.bins
                .retain(|b| only.is_empty() || only.contains(&target_name(b)));
            if t.bins.is_empty() {
                bail!("test: none of the {total} test binaries is a target named {only:?}");
            }
            // listing on the host is cheap, a spawn in the guest is not, so
            // binaries without ignored tests stay out of the boot
            let selected = t.bins.len();
            let mut with_tests = Vec::new();
            for bin in t.bins {
                if ignored_test_count(&bin)? > 0 {
                    with_tests.push(bin);
                }
            }
            eprintln!(
                "obgp-vm test: {} of {selected} test binaries{} have ignored (VM-tier) tests",
                with_tests.len(),
                if only.is_empty() {
                    String::new()
                } else {
                    format!(" (of {total}, --only {})", only.join(","))
                }
            );
            if with_tests.is_empty() {
                return Ok(ExitCode::SUCCESS);
            }
            let jobs = t
                .jobs
                .or_else(|| vm::env_count("OBGP_VM_JOBS"))
                .unwrap_or(DEFAULT_JOBS);
            // the guest stops its binaries before the host stops the guest,
            // so a hung one is named and its output shown
            let budget = opts.vm.timeout.saturating_sub(GUEST_MARGIN);
            let exe = std::env::current_exe().context("locating obgp-vm itself")?;
            let mut cmd = vec![exe.display().to_string(), "guest-test".to_string()];
            cmd.extend(["--jobs".to_string(), jobs.to_string()]);
            cmd.extend(["--budget".to_string(), budget.as_secs().to_string()]);
            cmd.extend(with_tests);
            cmd.push("--".to_string());
            cmd.extend(t.extra);
            boot_and_run(&opts, &cmd)
        }
        // runs inside the guest: the test binaries, `--jobs` at a time
        "guest-test" => {
            let t = TestArgs::parse(args)?;
            let budget = Duration::from_secs(t.budget.unwrap_or(u64::MAX / 4));
            Ok(guest_test(&t.bins, &t.extra, t.jobs.unwrap_or(1), budget))
        }
        other => bail!("unknown subcommand {other:?}: build, run or test"),
    }
}

fn boot_and_run(opts: &Opts, cmd: &[String]) -> Result<ExitCode> {
    let started = Instant::now();
    let vm = Vm::build(&opts.dir)?;
    let build = started.elapsed();
    let argv: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let run = vm.run_with(&argv, &opts.vm)?;
    eprintln!(
        "obgp-vm: exit status {} (kernel {}, build/check {:.1} s, boot+run+poweroff {:.1} s, guest ready at {} s uptime)",
        run.code,
        vm.kernel_version(),
        build.as_secs_f64(),
        run.wall.as_secs_f64(),
        run.guest_ready.map_or("?".to_string(), |t| format!("{t:.1}")),
    );
    Ok(ExitCode::from(u8::try_from(run.code).unwrap_or(1)))
}

fn parse_opts(args: Vec<String>) -> Result<(Opts, Vec<String>)> {
    let mut opts = Opts {
        dir: vm::default_dir(),
        vm: VmOptions::default(),
    };
    let mut rest = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value"));
        match a.as_str() {
            "--dir" => opts.dir = PathBuf::from(value("--dir")?),
            "--timeout" => {
                let v = value("--timeout")?;
                let secs: u64 = v.parse().with_context(|| format!("--timeout {v:?}"))?;
                opts.vm.timeout = Duration::from_secs(secs);
            }
            "--mem" => {
                let v = value("--mem")?;
                opts.vm.mem_mib = v.parse().with_context(|| format!("--mem {v:?}"))?;
            }
            "--cpus" => {
                let v = value("--cpus")?;
                match v.parse::<u32>() {
                    Ok(n) if n > 0 => opts.vm.cpus = n,
                    _ => bail!("--cpus {v:?}: not a positive number"),
                }
            }
            "--share" => opts.vm.shares.push(PathBuf::from(value("--share")?)),
            "--" => {
                rest.push(a);
                rest.extend(it);
                break;
            }
            _ => rest.push(a),
        }
    }
    Ok((opts, rest))
}

fn after_dashes(rest: Vec<String>) -> Result<Vec<String>> {
    let cmd: Vec<String> = match rest.first().map(String::as_str) {
        Some("--") => rest[1..].to_vec(),
        _ => rest,
    };
    if cmd.is_empty() {
        bail!("run: no command (obgp-vm run -- CMD ARGS...)");
    }
    Ok(cmd)
}

/// Test binaries at a time in the guest unless told otherwise
/// (`--jobs`, `$OBGP_VM_JOBS`): one per guest CPU.
const DEFAULT_JOBS: u32 = vm::DEFAULT_CPUS;

/// The part of the guest's time limit left for boot and power-off: the
/// test binaries' budget is the limit minus this.
const GUEST_MARGIN: Duration = Duration::from_secs(60);

/// The arguments of `test` and `guest-test`:
/// `[--jobs N] [--only A,B] [--budget SECS] BIN... [--cargo-json SRC] [-- EXTRA...]`.
#[derive(Debug, Default)]
struct TestArgs {
    bins: Vec<String>,
    extra: Vec<String>,
    cargo_json: Option<String>,
    jobs: Option<u32>,
    only: Option<Vec<String>>,
    budget: Option<u64>,
}

impl TestArgs {
    fn parse(rest: Vec<String>) -> Result<TestArgs> {
        let mut t = TestArgs::default();
        let mut it = rest.into_iter();
        while let Some(a) = it.next() {
            let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value"));
            match a.as_str() {
                "--" => {
                    t.extra = it.collect();
                    break;
                }
                "--cargo-json" => t.cargo_json = Some(value("--cargo-json (FILE or -)")?),
                "--jobs" => {
                    let v = value("--jobs")?;
                    match v.parse::<u32>() {
                        Ok(n) if n > 0 => t.jobs = Some(n),
                        _ => bail!("--jobs {v:?}: not a positive number"),
                    }
                }
                "--only" => t.only = Some(names_list(&value("--only")?)),
                "--budget" => {
                    let v = value("--budget")?;
                    t.budget = Some(v.parse().with_context(|| format!("--budget {v:?}"))?);
                }
                _ if a.starts_with("--") => bail!("test: unknown option {a}"),
                _ => t.bins.push(a),
            }
        }
        Ok(t)
    }
}

/// `a,b, c` -> `[a, b, c]`.
fn names_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(String::from)
        .collect()
}

/// The test target a cargo test executable was built from: its file name
/// without cargo's `-<16 hex digits>` suffix (`deps/evpn_l2-0123456789abcdef`
/// -> `evpn_l2`).
fn target_name(bin: &str) -> String {
    let file = Path::new(bin)
        .file_name()
        .map_or_else(|| bin.to_string(), |n| n.to_string_lossy().into_owned());
    match file.rsplit_once('-') {
        Some((name, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            name.to_string()
        }
        _ => file,
    }
}

fn read_source(src: &str) -> Result<String> {
    if src == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading cargo's JSON from stdin")
    } else {
        std::fs::read_to_string(src).with_context(|| format!("reading {src}"))
    }
}

/// The executables of test targets in `cargo test --no-run --message-format=json`.
fn test_binaries_from_cargo_json(text: &str) -> Result<Vec<String>> {
    let mut bins = Vec::new();
    for line in text.lines().filter(|l| l.starts_with('{')) {
        let msg: serde_json::Value =
            serde_json::from_str(line).with_context(|| format!("cargo JSON line {line:?}"))?;
        let is_test = msg["reason"] == "compiler-artifact" && msg["profile"]["test"] == true;
        if let (true, Some(exe)) = (is_test, msg["executable"].as_str()) {
            bins.push(exe.to_string());
        }
    }
    bins.sort();
    bins.dedup();
    Ok(bins)
}

/// How many ignored tests a libtest binary has (`--list --ignored`).
fn ignored_test_count(bin: &str) -> Result<usize> {
    let out = Command::new(bin)
        .args(["--list", "--ignored", "--format", "terse"])
        .output()
        .with_context(|| format!("listing the tests of {bin}"))?;
    if !out.status.success() {
        bail!(
            "{bin} --list --ignored failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(count_listed_tests(&String::from_utf8_lossy(&out.stdout)))
}

/// Tests in libtest's `--list --format terse` output (`name: test` lines;
/// benches are `name: bench`).
fn count_listed_tests(listing: &str) -> usize {
    listing.lines().filter(|l| l.ends_with(": test")).count()
}

/// Inside the guest: every binary with `--ignored --test-threads=1 EXTRA`,
/// `jobs` at a time (`batch::run`), a report line each and a summary;
/// failure if any binary failed, did not start or ran out of `budget`.
fn guest_test(bins: &[String], extra: &[String], jobs: u32, budget: Duration) -> ExitCode {
    let mut args = vec!["--ignored".to_string(), "--test-threads=1".to_string()];
    args.extend(extra.iter().cloned());
    let batch: Vec<batch::Job> = bins
        .iter()
        .map(|bin| batch::Job {
            name: Path::new(bin)
                .file_name()
                .map_or(bin.clone(), |n| n.to_string_lossy().into_owned()),
            program: bin.clone(),
            args: args.clone(),
        })
        .collect();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "obgp-vm test: {} binaries, {jobs} at a time on {cpus} CPU(s), budget {} s",
        bins.len(),
        budget.as_secs()
    );
    let started = Instant::now();
    let log_dir = std::env::temp_dir().join("obgp-vm-test");
    let results = batch::run(&batch, jobs as usize, budget, &log_dir);
    let failed: Vec<&str> = results
        .iter()
        .filter(|r| !r.passed())
        .map(|r| r.name.as_str())
        .collect();
    println!(
        "obgp-vm test: ran in the VM tier (kernel {}): {} binaries, {} passed, {} failed{} ({:.1} s, {jobs} at a time)",
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim(),
        bins.len(),
        bins.len() - failed.len(),
        failed.len(),
        if failed.is_empty() {
            String::new()
        } else {
            format!(": {}", failed.join(", "))
        },
        started.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_json_yields_test_executables_only() {
        let text = r#"{"reason":"compiler-artifact","profile":{"test":true},"executable":"/t/deps/vm-1"}
{"reason":"compiler-artifact","profile":{"test":false},"executable":"/t/debug/obgp-vm"}
{"reason":"compiler-artifact","profile":{"test":true},"executable":null}
{"reason":"build-finished","success":true}
   Compiling x"#;
        assert_eq!(
            test_binaries_from_cargo_json(text).unwrap(),
            ["/t/deps/vm-1"]
        );
    }

    #[test]
    fn listed_tests_are_counted_benches_are_not() {
        let listing = "a::vm_one: test\nb::vm_two: test\nbench_x: bench\n";
        assert_eq!(count_listed_tests(listing), 2);
        assert_eq!(count_listed_tests(""), 0);
    }

    #[test]
    fn test_arguments_split_at_dashes() {
        let args = ["a", "--cargo-json", "-", "b", "--", "--exact", "x"].map(String::from);
        let t = TestArgs::parse(args.to_vec()).unwrap();
        assert_eq!(t.bins, ["a", "b"]);
        assert_eq!(t.extra, ["--exact", "x"]);
        assert_eq!(t.cargo_json.as_deref(), Some("-"));
        assert!(TestArgs::parse(vec!["--bogus".into()]).is_err());
    }

    #[test]
    fn jobs_only_and_budget_are_read() {
        let args = [
            "--jobs",
            "3",
            "--only",
            "evpn_l2, evpn",
            "--budget",
            "840",
            "a",
        ];
        let t = TestArgs::parse(args.map(String::from).to_vec()).unwrap();
        assert_eq!(t.jobs, Some(3));
        assert_eq!(
            t.only,
            Some(vec!["evpn_l2".to_string(), "evpn".to_string()])
        );
        assert_eq!(t.budget, Some(840));
        assert_eq!(t.bins, ["a"]);
        for bad in [["--jobs", "0"], ["--jobs", "two"], ["--budget", "-1"]] {
            assert!(
                TestArgs::parse(bad.map(String::from).to_vec()).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn target_names_drop_cargos_hash_only() {
        assert_eq!(
            target_name("/t/debug/deps/evpn_l2-0123456789abcdef"),
            "evpn_l2"
        );
        assert_eq!(
            target_name("/t/debug/deps/obgp_e2e-fedcba9876543210"),
            "obgp_e2e"
        );
        // no cargo hash: the file name as it is
        assert_eq!(target_name("/usr/bin/my-test"), "my-test");
        assert_eq!(target_name("evpn-xyz"), "evpn-xyz");
    }
}
