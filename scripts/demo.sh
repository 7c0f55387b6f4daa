#!/usr/bin/env bash
# `make demo`: build the agent and the demo, then run the demo: throwaway OVN
# databases with the demo topology (fixtures/demo), a node namespace with
# OVS br-ex and FRR, an FRR peer, and the real ovn-bgp-agent in between.
# On a kernel without vrf/dummy devices obgp-demo runs itself in the VM tier.
# Needs root (namespaces, FRR, OVS) and the packages `make deps-demo` installs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo=${CARGO:-cargo}
if [ "$(id -u)" != 0 ]; then
    echo "demo: needs root (network namespaces, ovs-vswitchd, FRR)" >&2
    exit 1
fi
echo "demo: building ovn-bgp-agent and obgp-demo"
$cargo build --locked -q --bin ovn-bgp-agent -p ovn-bgp-agent
$cargo build --locked -q --bin obgp-demo -p obgp-e2e
dir=${CARGO_TARGET_DIR:-target}
exec "$dir/debug/obgp-demo" "$@"
