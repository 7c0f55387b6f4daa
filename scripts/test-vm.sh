#!/usr/bin/env bash
# The VM tier: every `#[ignore = "vm tier: ..."]` test of the workspace, run
# inside one boot of a full Debian kernel under QEMU (this CI kernel has no
# vrf, dummy or 802.1q devices). Convention: `#[ignore]` is used for the VM
# tier only, so `--ignored` inside the VM selects exactly those tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo=${CARGO:-cargo}

if grep -rn --include='*.rs' -E '^\s*#\[ignore(\]| = "[^v])' crates src tests 2>/dev/null; then
    echo "test-vm: the #[ignore]s above are not VM-tier tests; use #[ignore = \"vm tier: why\"] only" >&2
    exit 1
fi

mkdir -p target
$cargo test --workspace --locked --no-run --message-format=json-render-diagnostics > target/vm-test-binaries.json
$cargo build --locked -q -p obgp-testbed --bin obgp-vm
echo "test-vm: running the VM-tier tests inside a full-kernel VM (QEMU TCG; the boot takes ~15 s)"
exec target/debug/obgp-vm test --cargo-json target/vm-test-binaries.json
