#!/usr/bin/env bash
# make image-test: build the container image without a container registry and
# run what it holds (docs/deployment.md, "The image in CI").
#
#  1. mmdebstrap makes a Debian bookworm base from Debian's package mirrors
#     (no registry is reachable from CI) and `podman import` loads it;
#  2. `podman build --isolation=chroot --from <that base> --target
#     runtime-prebuilt` builds the Containerfile's base stage on it (its RUN
#     apt-get install of FRR, OVS and iproute2 runs for real) and copies in the
#     dev-profile binary `make test` already built, stripped of its debug
#     info. The Containerfile's Rust build stage is not used: the self-made
#     base has no Rust toolchain, and a release build would add minutes;
#  3. `podman run` cannot work here (crun is not allowed to set the
#     container's rlimits), so the image's rootfs is exported and the checks
#     run in it with chroot: the tools load, `version`, `config` on the
#     sample config (at the path the image's CMD reads) and `plan --ovn` on a
#     conformance scenario; the agent's output in the image must equal the
#     same binary's output outside it.
#
# Root (mmdebstrap, podman and chroot). Removes its images and files on exit
# unless KEEP_IMAGE=1 (then the image stays as localhost/ovn-bgp-agent:ci).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=localhost/ovn-bgp-agent:ci
BASE=localhost/obgp-debian-base:bookworm
BIN=target/debug/ovn-bgp-agent
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

fail() { echo "image-test: FAIL: $*" >&2; exit 1; }
for tool in mmdebstrap podman chroot strip; do
  command -v "$tool" >/dev/null || fail "$tool not found (make deps installs it)"
done
[ "$(id -u)" = 0 ] || fail "needs root (mmdebstrap, podman, chroot)"

start=$(date +%s)
phase_start=$start
phase() { local now; now=$(date +%s); echo "image-test: $1 ($(( now - phase_start )) s)"; phase_start=$now; }

# A no-op after `make test-unit`; builds the one binary when run alone.
cargo build --locked -q --bin ovn-bgp-agent
phase "agent binary ready"

mkdir -p target
work=$(mktemp -d target/image-test.XXXXXX)
cleanup() {
  rm -rf "$work"
  if [ "${KEEP_IMAGE:-0}" != 1 ]; then
    podman rmi -f "$IMAGE" "$BASE" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

# 1. The base: what docker.io/library/debian:bookworm-slim is, made locally.
# Same dpkg exclusions as the slim image (no docs, man pages, locales).
mmdebstrap --variant=apt -q \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  bookworm "$work/rootfs.tar" \
  "deb $MIRROR bookworm main" \
  "deb $MIRROR bookworm-updates main" \
  "deb $SECURITY_MIRROR bookworm-security main"
phase "mmdebstrap base"
podman import -q "$work/rootfs.tar" "$BASE" >/dev/null
rm -f "$work/rootfs.tar"
phase "podman import"

# 2. The image. A context of its own: the Containerfile and the stripped
# binary (38 MB instead of the 200 MB debug build), not the repository.
mkdir "$work/ctx"
cp Containerfile "$work/ctx/"
strip --strip-debug -o "$work/ctx/ovn-bgp-agent" "$BIN"
podman build -q --isolation=chroot --layers=false --from "$BASE" --target runtime-prebuilt \
  -t "$IMAGE" -f "$work/ctx/Containerfile" "$work/ctx" > "$work/build.log" 2>&1 \
  || { cat "$work/build.log" >&2; fail "podman build"; }
phase "podman build ($(podman image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"

# 3. The image's rootfs, and the checks in it.
rootfs=$work/rootfs
mkdir "$rootfs"
cid=$(podman create "$IMAGE")
podman export "$cid" | tar -x -C "$rootfs"
podman rm "$cid" >/dev/null
phase "rootfs exported"

in_image() { chroot "$rootfs" "$@"; }

# The tools the agent runs (and ip for the operator) are there and load
# their libraries.
in_image ovs-vsctl --version | grep -q '^ovs-vsctl (Open vSwitch)' || fail "ovs-vsctl does not run"
in_image ovs-ofctl --version | grep -q '^ovs-ofctl (Open vSwitch)' || fail "ovs-ofctl does not run"
in_image vtysh --help | grep -q '^Usage : vtysh' || fail "vtysh does not run"
in_image ip -V 2>&1 | grep -q 'iproute2' || fail "ip does not run"
# The FRR daemons were left out (the node's FRR runs outside the image).
[ ! -e "$rootfs/usr/lib/frr/bgpd" ] || fail "FRR daemons are in the image"

# version: the binary in the image is the one built here.
want=$("$BIN" version)
got=$(in_image /usr/local/bin/ovn-bgp-agent version)
[ "$got" = "$want" ] || fail "version in the image: '$got', built: '$want'"
[[ $got =~ ^ovn-bgp-agent\ [0-9]+\.[0-9]+\.[0-9]+ ]] || fail "version output: '$got'"

# config: the sample config where the image's CMD reads it (the DaemonSet
# mounts its ConfigMap there).
mkdir -p "$rootfs/etc/ovn-bgp-agent" "$rootfs/tmp/image-test"
cp fixtures/config/bgp-agent.conf.sample "$rootfs/etc/ovn-bgp-agent/bgp-agent.conf"
want=$("$BIN" --config-file fixtures/config/bgp-agent.conf.sample config)
got=$(in_image /usr/local/bin/ovn-bgp-agent --config-file /etc/ovn-bgp-agent/bgp-agent.conf config)
[ "$got" = "$want" ] || fail "config in the image differs from the built binary's"
for line in '[DEFAULT]' 'driver = ovn_bgp_driver' 'bgp_AS = 64999' 'reconcile_interval = 300'; do
  grep -qxF "$line" <<<"$got" || fail "config output lacks '$line'"
done

# plan --ovn: the NB driver on nb-provider-vm (one dual-stack VM on
# physnet1/br-ex bound here), with the scenario's own options; the node
# state is the scenario's initial_node, so nothing on this machine is read.
cat > "$rootfs/tmp/image-test/plan.conf" <<'EOF'
[DEFAULT]
driver = nb_ovn_bgp_driver
exposing_method = underlay
bgp_AS = 64999
bgp_router_id = 192.168.100.11
EOF
cp fixtures/conformance/scenarios/nb-provider-vm.json "$rootfs/tmp/image-test/"
want=$("$BIN" --config-file "$rootfs/tmp/image-test/plan.conf" plan --ovn fixtures/conformance/scenarios/nb-provider-vm.json)
got=$(in_image /usr/local/bin/ovn-bgp-agent --config-file /tmp/image-test/plan.conf plan --ovn /tmp/image-test/nb-provider-vm.json)
[ "$got" = "$want" ] || fail "plan in the image differs from the built binary's"
for line in '+ rt_tables 1 br-ex' \
            '+ rule to 172.24.4.10/32 lookup br-ex (table 1)' \
            '+ neighbour 2001:db8::10 lladdr fa:16:3e:11:11:11 dev br-ex permanent' \
            '+ address 172.24.4.10/32 dev bgp-nic' \
            '+ address 2001:db8::10/128 dev bgp-nic' \
            'bgp router-id 192.168.100.11'; do
  grep -qF -- "$line" <<<"$got" || fail "plan output lacks '$line'"
done
phase "checks in the image passed"

echo "image-test: OK: $IMAGE built from a self-made bookworm base; version, config and plan --ovn agree inside and outside it (total $(( $(date +%s) - start )) s)"
