#!/usr/bin/env bash
# local-fleet-test.sh: end-to-end check of deploy/local-fleet.
#   1. up.sh 3: a controller and 3 agents, each in its own network namespace;
#   2. GET /api/v1/agents lists agent1..3 up, with their labels, each agent
#      process inside its own namespace;
#   3. POST /api/v1/jobs: a small fio job (psync randread on the scratch file of
#      each agent, via host_overrides) placed on all three hosts;
#   4. polls GET /api/v1/jobs/{id} until every run is terminal; all must have
#      succeeded, with a result;
#   5. down.sh --purge, then checks that no namespace, veth, bridge or process
#      of the fleet is left (and runs down.sh again: it must be idempotent).
# Runs on its own subnet/bridge/namespace names, so it does not disturb a fleet
# started by hand. Needs root, iproute2, curl, python3, and working binaries in
# build/bin (or IOFLEET_BIN_DIR). Exit 0 pass, 1 fail, 77 skipped (printed why).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
fleet=$repo/deploy/local-fleet
bin=${IOFLEET_BIN_DIR:-$repo/build/bin}

skip() { echo "local-fleet-test: SKIP: $*"; exit 77; }
fail() { echo "local-fleet-test: FAIL: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
for b in iofleet-controller iofleet-agent; do
  [ -x "$bin/$b" ] || skip "$bin/$b not built yet"
done
"$bin/iofleet-agent" serve --help >/dev/null 2>&1 || skip "$bin/iofleet-agent has no 'serve' (no gRPC transport in this build)"
command -v python3 >/dev/null || skip "python3 missing"

export IOFLEET_BIN_DIR=$bin
export IOFLEET_FLEET_STATE
IOFLEET_FLEET_STATE=$(mktemp -d /tmp/iofleet-fleet-test.XXXXXX)
export IOFLEET_FLEET_NET=${IOFLEET_TEST_FLEET_NET:-10.77.1}
export IOFLEET_FLEET_BRIDGE=iofbrt0
export IOFLEET_FLEET_NS_PREFIX=iofleet-t-agent
export IOFLEET_FLEET_VETH_PREFIX=ioftv
n=3
http=http://$IOFLEET_FLEET_NET.1:${IOFLEET_FLEET_HTTP_PORT:-7080}

# ip netns add needs a writable /run/netns and the kernel's netns support.
if ! ip netns add iofleet-t-probe 2>/dev/null; then
  rm -rf "$IOFLEET_FLEET_STATE"
  skip "cannot create network namespaces here (ip netns add failed)"
fi
ip netns del iofleet-t-probe

state_copy=""
cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -d "$IOFLEET_FLEET_STATE" ]; then
    echo "---- logs (tails) ----"
    for f in "$IOFLEET_FLEET_STATE"/controller/controller.log "$IOFLEET_FLEET_STATE"/agent*/agent.log; do
      [ -f "$f" ] && { echo "== $f"; tail -n 20 "$f"; }
    done
  fi
  "$fleet/down.sh" --purge >/dev/null 2>&1 || true
  [ -z "$state_copy" ] || rm -rf "$state_copy"
  exit "$rc"
}
trap cleanup EXIT

echo "local-fleet-test: up.sh $n (state $IOFLEET_FLEET_STATE, net $IOFLEET_FLEET_NET.0/24)"
IOFLEET_FLEET_WAIT_S=30 "$fleet/up.sh" "$n"

# ---- 2. agents up, in their own namespaces ----
pids=()
for ((i = 1; i <= n; i++)); do
  pid=$(cat "$IOFLEET_FLEET_STATE/agent$i.pid")
  pids+=("$pid")
  got=$(ip netns identify "$pid" 2>/dev/null || true)
  [ "$got" = "$IOFLEET_FLEET_NS_PREFIX$i" ] || fail "agent$i (pid $pid) runs in netns '$got', want $IOFLEET_FLEET_NS_PREFIX$i"
  addr=$(ip -n "$IOFLEET_FLEET_NS_PREFIX$i" -4 -o addr show dev eth0 | awk '{print $4}')
  [ "$addr" = "$IOFLEET_FLEET_NET.$((10 + i))/24" ] || fail "agent$i address $addr"
done
pids+=("$(cat "$IOFLEET_FLEET_STATE/controller.pid")")

export HTTP=$http N=$n STATE=$IOFLEET_FLEET_STATE
python3 - <<'PY'
import json, os, sys, time, urllib.request, urllib.error

http, n, state = os.environ["HTTP"], int(os.environ["N"]), os.environ["STATE"]

def api(method, path, body=None):
    req = urllib.request.Request(f"{http}/api/v1{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")

def fail(msg):
    print(f"local-fleet-test: FAIL: {msg}")
    sys.exit(1)

names = [f"agent{i}" for i in range(1, n + 1)]
deadline = time.time() + 30
while True:
    st, body = api("GET", "/agents")
    agents = {a["name"]: a for a in body.get("agents", [])} if st == 200 else {}
    if all(agents.get(x, {}).get("state") == "up" for x in names):
        break
    if time.time() > deadline:
        fail(f"agents not all up after 30 s: {st} {body}")
    time.sleep(0.5)
for i, x in enumerate(names, 1):
    want = {"host": x, "rack": f"r{i % 2}", "fleet": "local"}
    got = agents[x].get("labels", {})
    if any(got.get(k) != v for k, v in want.items()):
        fail(f"{x} labels {got}, want {want}")
print("local-fleet-test: %d agents up: %s" % (n, ", ".join("%s %s" % (x, agents[x]["labels"]) for x in names)))

scratch = {x: f"{state}/{x}/scratch/file0" for x in names}
fio = ("[global]\nioengine=psync\nbs=4k\nsize=4m\ntime_based=1\nruntime=2\n"
       f"filename={scratch[names[0]]}\n[randread]\nrw=randread\n")
job = {"name": "local-fleet-test", "fio": fio, "hosts": names,
       "host_overrides": {x: {"filename": scratch[x]} for x in names},
       "tags": {"suite": "local-fleet"}}
st, body = api("POST", "/jobs", job)
if st != 201 or not isinstance(body, dict) or not body.get("id"):
    fail(f"POST /jobs -> {st}: {body}")
job_id = body["id"]
print(f"local-fleet-test: submitted job {job_id} on {names}")

terminal = {"succeeded", "failed", "cancelled", "lost"}
deadline = time.time() + 120
while True:
    st, j = api("GET", f"/jobs/{job_id}")
    runs = j.get("runs", []) if st == 200 else []
    if runs and all(r["state"] in terminal for r in runs):
        break
    if time.time() > deadline:
        fail(f"job {job_id} not finished after 120 s: {j}")
    time.sleep(0.5)
bad = [r for r in runs if r["state"] != "succeeded"]
if bad:
    fail(f"runs not succeeded: {[(r['host'], r['state'], r.get('error')) for r in bad]}")
hosts = sorted(r["host"] for r in runs)
if hosts != sorted(names):
    fail(f"runs placed on {hosts}, want {sorted(names)}")
for r in runs:
    st, full = api("GET", f"/runs/{r['id']}")
    res = full.get("result") if st == 200 else None
    jobs = res.get("jobs") if isinstance(res, dict) else None
    if not jobs:
        fail(f"run {r['id']} on {r['host']} has no result: {st} {full}")
    ios = jobs[0].get("read", {}).get("total_ios", 0)
    if not ios:
        fail(f"run {r['id']} on {r['host']} did no reads: {jobs[0].get('read')}")
    print(f"local-fleet-test: run {r['id']} on {r['host']}: succeeded, {ios} reads")
PY

# ---- 5. teardown leaves nothing ----
"$fleet/down.sh" --purge
leftover=""
ns_left=$(ip netns list | awk '{print $1}' | grep -E "^${IOFLEET_FLEET_NS_PREFIX}[0-9]+$" || true)
[ -z "$ns_left" ] || leftover+=" namespaces: $ns_left;"
veth_left=$(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^${IOFLEET_FLEET_VETH_PREFIX}" || true)
[ -z "$veth_left" ] || leftover+=" veths: $veth_left;"
ip link show "$IOFLEET_FLEET_BRIDGE" >/dev/null 2>&1 && leftover+=" bridge $IOFLEET_FLEET_BRIDGE;"
for p in "${pids[@]}"; do
  if [ -d "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ]; then
    leftover+=" process $p ($(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-60));"
  fi
done
[ -e "$IOFLEET_FLEET_STATE" ] && leftover+=" state dir $IOFLEET_FLEET_STATE;"
[ -z "$leftover" ] || fail "left after down.sh:$leftover"
"$fleet/down.sh" --purge >/dev/null || fail "down.sh is not idempotent (second run failed)"
echo "local-fleet-test: PASS (fleet of $n up, job succeeded on all hosts, teardown clean)"
