#!/usr/bin/env bash
# make deploy-check: validate deploy/ (docs/deployment.md).
#
#  - the manifests against the Kubernetes JSON schemas (kubernetes-validate
#    --strict: unknown fields are errors), for the oldest and newest
#    Kubernetes versions in KUBE_VERSIONS; a copy with a misspelt field must
#    fail, so the check is known to bite;
#  - the manifests against each other and the agent: the ConfigMap's
#    bgp-agent.conf loads with the built agent without an unknown option, the
#    probes ask the address metrics_listen binds, the pack § 6 mounts are
#    there and the configured OVS socket lies under one of them;
#  - the systemd unit with `systemd-analyze verify` (its warnings are
#    errors: verify exits 0 on an unknown key), on a copy whose ExecStart
#    names the binary built here, since verify requires the command to exist
#    and /usr/local/bin/ovn-bgp-agent is not installed on a build machine;
#    every unit it orders itself against exists on this Debian host (make
#    deps installs frr and openvswitch-switch), and its capabilities are
#    known to systemd.
#
# kubernetes-validate and its dependencies are pinned in
# scripts/deploy-check-requirements.txt and installed in a venv under
# target/ (kept between runs; PyPI is needed only the first time).
set -euo pipefail
cd "$(dirname "$0")/.."

KUBE_VERSIONS="1.30.0 1.37.0"
BIN=$PWD/target/debug/ovn-bgp-agent
VENV=target/deploy-check-venv
REQS=scripts/deploy-check-requirements.txt
# Options the manifests may set that the agent does not know yet (none: the
# ConfigMap's config must load with no unknown option).
PENDING_OPTIONS=""

fail() { echo "deploy-check: FAIL: $*" >&2; exit 1; }
start=$(date +%s)

# Debian's python3 (python3-venv), not whatever python3 is first on PATH.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
if ! cmp -s "$REQS" "$VENV/requirements.txt" 2>/dev/null; then
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQS"
  cp "$REQS" "$VENV/requirements.txt"
fi

cargo build --locked -q --bin ovn-bgp-agent

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
manifests=(deploy/*.yaml)

# 1. The schemas.
for v in $KUBE_VERSIONS; do
  "$VENV/bin/kubernetes-validate" --strict --quiet -k "$v" "${manifests[@]}" \
    || fail "deploy/*.yaml against Kubernetes $v"
done
sed 's/^\( *\)terminationGracePeriodSeconds:/\1terminationGracePeriodSecond:/' deploy/daemonset.yaml > "$work/misspelt.yaml"
! "$VENV/bin/kubernetes-validate" --strict --quiet "$work/misspelt.yaml" >/dev/null 2>&1 \
  || fail "kubernetes-validate accepted a misspelt field: the schema check does not bite"

# 2. The manifests against each other and the agent.
"$VENV/bin/python" - "$work" "$PENDING_OPTIONS" "${manifests[@]}" <<'EOF'
import os, sys, yaml
work, pending, paths = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
docs = [d for p in paths for d in yaml.safe_load_all(open(p)) if d]
by_kind = {}
for d in docs:
    by_kind.setdefault(d["kind"], []).append(d)
def fail(msg):
    sys.exit(f"deploy-check: FAIL: {msg}")
(cm,) = by_kind["ConfigMap"]
(ds,) = by_kind["DaemonSet"]
conf = cm["data"]["bgp-agent.conf"]
open(os.path.join(work, "bgp-agent.conf"), "w").write(conf)
# The two options the cross-checks need, read as the agent reads them
# ([DEFAULT], key = value); the agent itself loads the file below.
opts, section = {}, None
for line in conf.splitlines():
    line = line.strip()
    if line.startswith("["):
        section = line.strip("[]")
    elif "=" in line and not line.startswith("#") and section == "DEFAULT":
        k, v = (s.strip() for s in line.split("=", 1))
        opts[k] = v
pod = ds["spec"]["template"]["spec"]
if not pod.get("hostNetwork"):
    fail("the DaemonSet is not hostNetwork: the agent must work in the node's namespace")
(agent,) = [c for c in pod["containers"] if c["name"] == "agent"]
host, port = opts["metrics_listen"].rsplit(":", 1)
for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
    get = agent[probe]["httpGet"]
    if (get.get("host"), str(get["port"])) != (host, port):
        fail(f"{probe} asks {get.get('host')}:{get['port']}, metrics_listen is {host}:{port}")
paths = {"livenessProbe": "/healthz", "readinessProbe": "/readyz", "startupProbe": "/healthz"}
for probe, path in paths.items():
    if agent[probe]["httpGet"]["path"] != path:
        fail(f"{probe} asks {agent[probe]['httpGet']['path']}, not {path}")
if [str(p["containerPort"]) for p in agent.get("ports", [])] != [port]:
    fail(f"the container's ports are not the metrics port {port}")
mounts = {m["mountPath"]: m for m in agent["volumeMounts"]}
for need in ("/run/frr", "/etc/iproute2", "/run/openvswitch", "/etc/ovn-bgp-agent"):
    if need not in mounts:
        fail(f"no mount at {need} (rewrite pack § 6)")
for ro in ("/etc/iproute2", "/run/openvswitch", "/run/frr"):
    if mounts[ro].get("readOnly"):
        fail(f"{ro} is mounted read-only; the agent writes there")
# The node lock (docs/adr/0010-one-agent-per-node.md): the host's directory,
# so a pod, its replacement and a systemd unit lock the same file.
lock = mounts.get("/run/ovn-bgp-agent")
volumes = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
if (not lock or lock.get("readOnly")
        or volumes.get(lock["name"], {}).get("hostPath", {}).get("path") != "/run/ovn-bgp-agent"):
    fail("/run/ovn-bgp-agent must be the host's /run/ovn-bgp-agent, writable (the node lock)")
# state_dir: the host's directory, writable, so the NB cache outlives the pod.
state = opts.get("state_dir")
if state:
    mount = mounts.get(state)
    if (not mount or mount.get("readOnly")
            or volumes.get(mount["name"], {}).get("hostPath", {}).get("path") is None):
        fail(f"state_dir {state} must be a writable hostPath mount (the NB cache outlives the pod)")
sock = opts["ovsdb_connection"]
if not sock.startswith("unix:/run/openvswitch/"):
    fail(f"ovsdb_connection {sock} is not under the mounted /run/openvswitch")
strategy = ds["spec"]["updateStrategy"]
if strategy["type"] != "RollingUpdate" or strategy["rollingUpdate"].get("maxSurge", 0) not in (0, "0"):
    fail("the update strategy must be RollingUpdate with maxSurge 0 (one agent per node)")
open(os.path.join(work, "pending"), "w").write("\n".join(pending))
EOF
"$BIN" --config-file "$work/bgp-agent.conf" config > "$work/config.out" 2> "$work/config.err" \
  || { cat "$work/config.err" >&2; fail "the ConfigMap's bgp-agent.conf does not load"; }
unknown=$(grep -o 'unknown option \[[A-Za-z_]*\] [A-Za-z_]*' "$work/config.err" | awk '{print $4}' | grep -vxF -f "$work/pending" || true)
[ -z "$unknown" ] || fail "the ConfigMap sets options the agent does not know: $unknown"
grep -qxF 'driver = nb_ovn_bgp_driver' "$work/config.out" || fail "the ConfigMap's driver is not in the agent's effective config"

# 3. The systemd unit.
unit=deploy/ovn-bgp-agent.service
grep -q '^ExecStart=/usr/local/bin/ovn-bgp-agent ' "$unit" || fail "$unit: ExecStart is not /usr/local/bin/ovn-bgp-agent"
mkdir "$work/unit"
sed "s|^ExecStart=/usr/local/bin/ovn-bgp-agent |ExecStart=$BIN |" "$unit" > "$work/unit/ovn-bgp-agent.service"
verify() { SYSTEMD_LOG_COLOR=0 systemd-analyze verify "$1" 2>&1 | grep -v 'System has not been booted with systemd\|Failed to connect to bus' || true; }
out=$(verify "$work/unit/ovn-bgp-agent.service")
[ -z "$out" ] || fail "systemd-analyze verify $unit: $out"
# The self-test: a misspelt key must be reported.
sed 's/^RestartSec=/RestartSecs=/' "$work/unit/ovn-bgp-agent.service" > "$work/unit/ovn-bgp-agent-misspelt.service"
[ -n "$(verify "$work/unit/ovn-bgp-agent-misspelt.service")" ] || fail "systemd-analyze verify accepted a misspelt key"
for dep in $(sed -n 's/^\(After\|Before\|Wants\|Requires\|PartOf\|BindsTo\)=//p' "$unit"); do
  found=
  for dir in /etc/systemd/system /lib/systemd/system /usr/lib/systemd/system; do
    [ -e "$dir/$dep" ] && found=1
  done
  [ -n "$found" ] || fail "$unit names $dep, which no installed package provides (make deps installs frr and openvswitch-switch)"
done
for key in CapabilityBoundingSet AmbientCapabilities; do
  caps=$(sed -n "s/^$key=//p" "$unit")
  [ -n "$caps" ] || fail "$unit has no $key"
  # shellcheck disable=SC2086  # one capability per word
  systemd-analyze capability $(tr 'A-Z' 'a-z' <<<"$caps") >/dev/null 2>&1 || fail "$unit: $key has a capability systemd does not know: $caps"
done

echo "deploy-check: OK: ${manifests[*]} valid for Kubernetes $KUBE_VERSIONS and consistent with the agent; $unit verified ($(( $(date +%s) - start )) s)"
