# ovn-bgp-agent (Rust) — developer entry points.
#
#   make demo   run the agent's main job on the built-in demo topology
#   make test   install what the tests need, then run every test tier
#
# Both install the Debian packages they use themselves (Debian 12 or similar,
# as root; the demo only the few it needs). Cargo and a Rust toolchain >= 1.85
# must be there already (rustup; Debian 12's packaged rustc is too old).

CARGO        ?= cargo
export CARGO_TERM_COLOR ?= never

# Debian packages the demo uses (scripts/demo.sh, obgp-demo): ovsdb-server,
# ovs-vswitchd and ovs-ofctl, FRR on the node and as the peer, iproute2 and
# procps (sysctl) for the namespaces, and QEMU, busybox-static and kmod
# (depmod) for the VM it boots on a kernel without vrf/dummy devices.
DEMO_PACKAGES := openvswitch-switch openvswitch-common frr iproute2 procps \
                 qemu-system-x86 busybox-static kmod

# Debian packages every test tier uses: the demo's, plus the OVN tools
# (ovn-northd), openssl for the SSL tests; mmdebstrap, podman and binutils
# (strip) for the container image, python3-venv and systemd for the checks
# of deploy/ (kubernetes-validate, systemd-analyze); prometheus (and its
# promtool) and curl for the metrics tests.
DEB_PACKAGES := $(DEMO_PACKAGES) ovn-common ovn-central ovn-host openssl \
                prometheus curl mmdebstrap podman binutils python3-venv systemd

# Installs the packages of $(1) that dpkg does not list as installed.
define install_missing
@missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q "install ok installed" || echo $$p; done); \
if [ -n "$$missing" ]; then \
  echo "installing:$$missing"; \
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
else echo "$@: all present"; fi
endef

.PHONY: all build deps deps-demo demo test test-unit test-conformance test-vm image-test deploy-check lint fmt clippy check-pure check-cycles bench soak-short clean

all: build

build:
	$(CARGO) build --workspace --locked

## deps: install the system packages every test tier needs (idempotent).
deps:
	$(call install_missing,$(DEB_PACKAGES))

## deps-demo: install only what `make demo` needs (idempotent).
deps-demo:
	$(call install_missing,$(DEMO_PACKAGES))

## lint: formatting, clippy (warnings are errors), the pure crates'
## dependency trees (no tokio, TLS or netlink under them), and no module
## circle inside a crate (scripts/check-module-cycles).
lint: fmt clippy check-pure check-cycles
fmt:
	$(CARGO) fmt --all -- --check
clippy:
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
check-pure:
	@scripts/check-pure-crates.sh
check-cycles:
	@scripts/check-module-cycles-selftest
	@scripts/check-module-cycles

## test: every tier. Unit and real-component tests (ovsdb-server, netns, FRR)
## on this kernel, the conformance runners, the checks of deploy/, the
## container image, the short soak, then the VM tier for what this kernel
## lacks (vrf, dummy, 802.1q, vxlan).
test: deps test-unit test-conformance deploy-check image-test soak-short test-vm

test-unit:
	$(CARGO) test --workspace --locked --no-fail-fast

test-conformance:
	$(CARGO) run --locked -q -p obgp-conformance -- event-match fixtures/conformance/event-match.json fixtures/conformance/event-match-crafted.json
	$(CARGO) run --locked -q -p obgp-conformance -- scenario fixtures/conformance/scenarios/*.json fixtures/ovn-local/*.json

test-vm:
	@scripts/test-vm.sh

## image-test: build the container image without a registry (a Debian base
## made by mmdebstrap, podman build --isolation=chroot) and run its contents
## by chroot (docs/deployment.md). Root; about 1.5 minutes.
image-test: deps
	@scripts/image.sh

## deploy-check: deploy/*.yaml against the Kubernetes schemas and the agent,
## the systemd unit with systemd-analyze verify (docs/deployment.md).
deploy-check: deps
	@scripts/deploy-check.sh

demo: deps-demo
	@scripts/demo.sh

## fuzz-smoke: every fuzz target briefly (~60 s; docs/fuzzing.md).
.PHONY: fuzz-smoke
fuzz-smoke:
	@scripts/fuzz.sh smoke

bench:
	$(CARGO) bench --workspace --locked

# The soak benchmark's short version (docs/soak.md): 2000 ports, 60 s of
# churn, then the end checks; about 2 minutes. Built with the dev profile,
# so in `make test` it reuses the test build instead of a release one. Root.
soak-short: deps
	$(CARGO) bench --profile dev -p obgp-controller --locked --bench soak -- 2000 duration=60

# The soak's end check can fail: a short soak that leaves objects the agent
# did not make on the node (and an FRR apply undone) passes only when the
# end check reports each of them (docs/soak.md). About 40 s. Root.
.PHONY: soak-inject
soak-inject: deps
	$(CARGO) bench --profile dev -p obgp-controller --locked --bench soak -- 500 duration=15 restarts=1 inject-leak

clean:
	$(CARGO) clean
