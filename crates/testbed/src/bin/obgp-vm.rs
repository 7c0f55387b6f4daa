//! `obgp-vm`: run commands or test binaries inside the full-kernel VM tier
//! (Debian's kernel under QEMU TCG, host root shared read-only).
//!
//! ```text
//! obgp-vm build                         prepare the kernel + initramfs cache
//! obgp-vm run [OPTS] -- CMD ARGS...     one boot, CMD's exit status passed through
//! obgp-vm test [OPTS] BIN... [-- ARGS]  one boot, each test binary run with
//!                                       `--ignored --test-threads=1 ARGS`
//! obgp-vm test --cargo-json FILE|-      the test binaries named in cargo's
//!                                       `--message-format=json` output
//! ```
//! OPTS: `--dir DIR` (cache, default `$OBGP_VM_DIR` or `target/vm`),
//! `--timeout SECS` (default 900), `--mem MIB` (default 2048),
//! `--share DIR` (read-write at the same path in the guest, repeatable).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use obgp_testbed::vm::{self, Vm, VmOptions};

const USAGE: &str = "\
obgp-vm: run commands or test binaries in the full-kernel VM tier
(Debian's kernel under QEMU TCG, the host's / shared read-only, root inside)

  obgp-vm build [--dir DIR]                 prepare the kernel + initramfs cache
  obgp-vm run [OPTS] -- CMD ARGS...         one boot; CMD's exit status is ours
  obgp-vm test [OPTS] BIN... [-- ARGS]      one boot; each BIN --ignored --test-threads=1 ARGS
  obgp-vm test [OPTS] --cargo-json FILE|-   the test binaries in cargo's --message-format=json

OPTS: --dir DIR (cache; default $OBGP_VM_DIR or target/vm), --timeout SECS (900),
      --mem MIB (2048), --share DIR (read-write at the same path; repeatable)
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
            let (mut bins, extra, cargo_json) = split_test_args(rest)?;
            if let Some(src) = cargo_json {
                bins.extend(test_binaries_from_cargo_json(&read_source(&src)?)?);
            }
            if bins.is_empty() {
                bail!("test: no test binaries given");
            }
            // listing on the host is cheap, a spawn in the guest is not, so
            // binaries without ignored tests stay out of the boot
            let total = bins.len();
            let mut with_tests = Vec::new();
            for bin in bins {
                if ignored_test_count(&bin)? > 0 {
                    with_tests.push(bin);
                }
            }
            eprintln!(
                "obgp-vm test: {} of {total} test binaries have ignored (VM-tier) tests",
                with_tests.len()
            );
            if with_tests.is_empty() {
                return Ok(ExitCode::SUCCESS);
            }
            let bins = with_tests;
            let exe = std::env::current_exe().context("locating obgp-vm itself")?;
            let mut cmd = vec![exe.display().to_string(), "guest-test".to_string()];
            cmd.extend(bins);
            cmd.push("--".to_string());
            cmd.extend(extra);
            boot_and_run(&opts, &cmd)
        }
        // runs inside the guest: the test binaries one after another
        "guest-test" => {
            let (bins, extra, _) = split_test_args(args)?;
            Ok(guest_test(&bins, &extra))
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

/// `BIN... [--cargo-json SRC] [-- EXTRA...]` -> (bins, extra, cargo json source)
fn split_test_args(rest: Vec<String>) -> Result<(Vec<String>, Vec<String>, Option<String>)> {
    let mut bins = Vec::new();
    let mut cargo_json = None;
    let mut it = rest.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--" => return Ok((bins, it.collect(), cargo_json)),
            "--cargo-json" => cargo_json = Some(it.next().context("--cargo-json needs FILE or -")?),
            _ if a.starts_with("--") => bail!("test: unknown option {a}"),
            _ => bins.push(a),
        }
    }
    Ok((bins, Vec::new(), cargo_json))
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
/// a report line each and a summary; failure if any binary failed.
fn guest_test(bins: &[String], extra: &[String]) -> ExitCode {
    let mut failed = Vec::new();
    for bin in bins {
        let name = Path::new(bin)
            .file_name()
            .map_or(bin.clone(), |n| n.to_string_lossy().into_owned());
        println!(
            "obgp-vm test: running {bin} --ignored --test-threads=1 {}",
            extra.join(" ")
        );
        let started = Instant::now();
        let status = Command::new(bin)
            .args(["--ignored", "--test-threads=1"])
            .args(extra)
            .status();
        let secs = started.elapsed().as_secs_f64();
        match status {
            Ok(s) if s.success() => println!("obgp-vm test: PASS {name} ({secs:.1} s)"),
            Ok(s) => {
                println!("obgp-vm test: FAIL {name} ({s}, {secs:.1} s)");
                failed.push(name);
            }
            Err(e) => {
                println!("obgp-vm test: FAIL {name} (could not start: {e})");
                failed.push(name);
            }
        }
    }
    println!(
        "obgp-vm test: ran in the VM tier (kernel {}): {} binaries, {} passed, {} failed{}",
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
        }
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
        let (bins, extra, json) = split_test_args(args.to_vec()).unwrap();
        assert_eq!(bins, ["a", "b"]);
        assert_eq!(extra, ["--exact", "x"]);
        assert_eq!(json.as_deref(), Some("-"));
        assert!(split_test_args(vec!["--bogus".into()]).is_err());
    }
}
