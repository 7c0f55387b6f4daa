#!/usr/bin/env bash
# Runs the fuzz targets (docs/fuzzing.md).
#
#   scripts/fuzz.sh smoke             every target briefly (~60 s in all): CI
#   scripts/fuzz.sh run TARGET [RUNS] one target for RUNS inputs (default 10M)
#   scripts/fuzz.sh time TARGET SECS  one target for SECS seconds
#
# The targets are libFuzzer binaries (fuzz/, cargo-fuzz, nightly) over the
# harnesses of crates/fuzz. Without cargo-fuzz or a nightly toolchain, smoke
# falls back to the stable replay test, which runs the same harnesses on
# the seeds, the regressions and random inputs (FUZZ_INSTALL=1 installs
# cargo-fuzz from crates.io instead).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

targets=(framer wire pipeline)
smoke_seconds="${FUZZ_SMOKE_SECONDS:-20}"

have_libfuzzer() {
  if ! cargo fuzz --version >/dev/null 2>&1 && [ "${FUZZ_INSTALL:-0}" = 1 ]; then
    cargo install cargo-fuzz --locked
  fi
  cargo fuzz --version >/dev/null 2>&1 && rustup run nightly rustc --version >/dev/null 2>&1
}

# libFuzzer writes what it finds to the first corpus directory (untracked);
# the seeds and the regressions are read only.
fuzz_run() {
  local target=$1; shift
  mkdir -p "fuzz/corpus/$target" "fuzz/regressions/$target"
  (cd fuzz && cargo +nightly fuzz run --sanitizer none --debug-assertions "$target" \
      "corpus/$target" "seeds/$target" "regressions/$target" -- \
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$@")
}

case "${1:-smoke}" in
  smoke)
    if have_libfuzzer; then
      (cd fuzz && cargo +nightly fuzz build --sanitizer none --debug-assertions)
      for t in "${targets[@]}"; do
        fuzz_run "$t" -max_total_time="$smoke_seconds"
      done
    else
      echo "fuzz.sh: no cargo-fuzz or nightly: running the stable replay instead"
      OBGP_FUZZ_CASES="${OBGP_FUZZ_CASES:-3000}" cargo test --locked -p obgp-fuzz --test replay
    fi
    ;;
  run)
    target=${2:?usage: scripts/fuzz.sh run TARGET [RUNS]}
    fuzz_run "$target" -runs="${3:-10000000}"
    ;;
  time)
    target=${2:?usage: scripts/fuzz.sh time TARGET SECONDS}
    fuzz_run "$target" -max_total_time="${3:?usage: scripts/fuzz.sh time TARGET SECONDS}"
    ;;
  *)
    echo "usage: scripts/fuzz.sh [smoke | run TARGET [RUNS] | time TARGET SECONDS]" >&2
    exit 2
    ;;
esac
