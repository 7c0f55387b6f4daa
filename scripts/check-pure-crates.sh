#!/usr/bin/env bash
# The pure crates (value model, OVN model, desired state, event filters,
# planner, the pipeline composing them) must build without an async runtime, TLS or netlink: their normal
# dependency trees may not name any of these crates. Run by `make lint`.
set -euo pipefail
cd "$(dirname "$0")/.."
pure=(obgp-netmodel obgp-config obgp-ovsdb-data obgp-ovn obgp-desired obgp-events obgp-plan obgp-local-cluster obgp-pipeline)
io='^(tokio|tokio-util|tokio-rustls|rustls|mio|rtnetlink|netlink-packet-route|netlink-packet-core|netlink-sys|netlink-proto|futures-util) '
status=0
for crate in "${pure[@]}"; do
  found=$(cargo tree --locked -e normal -p "$crate" --prefix none | grep -E "$io" | sort -u || true)
  if [ -n "$found" ]; then
    echo "check-pure-crates: $crate pulls I/O crates:"; echo "$found" | sed 's/^/  /'
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "check-pure-crates: ${#pure[@]} pure crates, no tokio, TLS or netlink in their trees"
exit "$status"
