#!/usr/bin/env bash
# docker/compose-test.sh [--no-build]: the images, run for real.
#   1. docker/build-images.sh (offline: base from Debian packages; podman reuses
#      unchanged layers and the build stages the machine's ccache), unless --no-build;
#   2. one podman network; PostgreSQL 15 (localhost/iofleet-postgres:15); the
#      controller on it (--store=postgresql://iofleet@db:5432/iofleet?passfile=...,
#      the password in a 0600 passfile, never in the URI); agents agent1 and agent2
#      with the profile deploy/seccomp/make-agent-profile.py derives (podman's default plus io_uring),
#      each with a podman volume at /data; agent3 with podman's default profile;
#   3. all three up over REST, with io_uring in agent1/2's inventory and not in
#      agent3's;
#   4. an O_DIRECT psync randread on /data/file0 (a file in each agent's volume) on
#      agent1 and agent2, then the same with ioengine=io_uring: every run succeeds
#      with reads, and the results are rows in PostgreSQL;
#   5. the io_uring job on agent3 (default seccomp) fails, naming io_uring; the
#      images' HEALTHCHECKs report healthy (run once by `podman healthcheck run`);
#   6. removes every container, volume and the network, and checks none is left.
# Needs root and podman (rootful: the host reaches the controller on the network's
# bridge). Exit 0 pass, 1 fail, 77 skipped (printed why). --no-build: use the
# images as built. The images are kept (a rebuild is minutes, not seconds).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
build=1
for a in "$@"; do
  case "$a" in
    --no-build) build=0 ;;
    *) echo "compose-test.sh: unknown argument \"$a\" (--no-build)" >&2; exit 2 ;;
  esac
done
skip() { echo "compose-test: SKIP: $*"; exit 77; }
fail() { echo "compose-test: FAIL: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "needs root (rootful podman)"
command -v podman >/dev/null || skip "podman missing (apt-get install podman debootstrap)"
command -v python3 >/dev/null || skip "python3 missing"
if ! out=$(podman info 2>&1); then
  skip "podman cannot run here: $(tail -n1 <<<"$out")"
fi
# shellcheck source=docker/podman-env.sh
. "$here/podman-env.sh" || skip "podman needs an OCI runtime this host lacks (above)"
tag=${IOFLEET_IMAGE_TAG:-0.1.0}
img_ctl=localhost/iofleet-controller:$tag
img_agent=localhost/iofleet-agent:$tag
img_db=localhost/iofleet-postgres:15
start=$SECONDS
if [ $build -eq 1 ]; then
  command -v debootstrap >/dev/null || podman image exists localhost/iofleet-debian:bookworm ||
    skip "debootstrap missing (apt-get install debootstrap) and no base image"
  "$here/build-images.sh" controller agent postgres || fail "image build failed"
  echo "compose-test: images ready in $((SECONDS - start)) s"
fi
for i in "$img_ctl" "$img_agent" "$img_db"; do
  podman image exists "$i" || skip "image $i missing (docker/build-images.sh)"
done

p=iofleet-ct-$$
volumes_before=$(podman volume ls -q | sort)
net=$p-net
tmp=$(mktemp -d /tmp/iofleet-compose-test.XXXXXX)
containers=("$p-db" "$p-controller" "$p-agent1" "$p-agent2" "$p-agent3")
volumes=("$p-data1" "$p-data2" "$p-data3" "$p-spool1" "$p-spool2" "$p-spool3" "$p-pgdata")
cleanup() {
  local rc=$? c
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
    for c in "${containers[@]}"; do
      podman container exists "$c" 2>/dev/null || continue
      echo "---- $c (last 15 lines)"
      podman logs --tail 15 "$c" 2>&1 | sed 's/^/  /'
    done
  fi
  # -v: also the anonymous volumes of the images' VOLUMEs (the controller's data dir).
  podman rm -f -v -t 0 "${containers[@]}" >/dev/null 2>&1 || true   # (timer removal errors without systemd)
  podman volume rm -f "${volumes[@]}" >/dev/null 2>&1 || true
  podman network rm -f "$net" >/dev/null 2>&1 || true
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT

# ---- 2. the fleet ----
pw=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
install -d -m 0755 "$tmp/db" "$tmp/ctl"
printf '%s\n' "$pw" >"$tmp/db/password"
chmod 0644 "$tmp/db/password"   # read by the image's postgres user; the dir is this test's
printf 'db:5432:iofleet:iofleet:%s\n' "$pw" >"$tmp/ctl/pgpass"
chown 10001:10001 "$tmp/ctl/pgpass"   # the controller's uid; libpq ignores a passfile others can read
chmod 0600 "$tmp/ctl/pgpass"
podman network create "$net" >/dev/null
for v in "${volumes[@]}"; do podman volume create "$v" >/dev/null; done

podman run "${podman_opts[@]}" -d --name "$p-db" --network "$net" --network-alias db \
  -e IOFLEET_DB_PASSWORD_FILE=/run/iofleet-db/password -v "$tmp/db:/run/iofleet-db:ro" \
  -v "$p-pgdata:/var/lib/postgresql/data" "$img_db" >/dev/null 2>>"$tmp/podman.log" ||
  fail "podman run db: $(tail -n 3 "$tmp/podman.log")"
for ((i = 0; ; i++)); do
  podman exec "$p-db" pg_isready -q -h 127.0.0.1 2>/dev/null && break
  [ $i -lt 120 ] || fail "PostgreSQL not ready after 60 s"
  sleep 0.5
done
echo "compose-test: PostgreSQL $(podman exec "$p-db" postgres --version | awk '{print $3}') up"

store="postgresql://iofleet@db:5432/iofleet?passfile=/run/iofleet/pgpass"
podman run "${podman_opts[@]}" -d --name "$p-controller" --network "$net" --network-alias controller \
  -v "$tmp/ctl:/run/iofleet:ro" "$img_ctl" \
  "--store=$store" --init --grpc-listen=0.0.0.0:7070 --http-listen=0.0.0.0:7080 >/dev/null 2>>"$tmp/podman.log" ||
  fail "podman run controller: $(tail -n 3 "$tmp/podman.log")"
ctl_ip=$(podman inspect -f "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" "$p-controller")
[ -n "$ctl_ip" ] || fail "controller has no address on $net"

agent_args=(--controller=controller:7070 --allow-path=/data)
python3 "$repo/deploy/seccomp/make-agent-profile.py" -o "$tmp/iofleet-agent.json" >/dev/null ||
  fail "deploy/seccomp/make-agent-profile.py could not derive the agent's seccomp profile"
for i in 1 2 3; do
  sec=(--security-opt "seccomp=$tmp/iofleet-agent.json")
  profile=iofleet
  if [ $i -eq 3 ]; then sec=(); profile=default; fi
  # CAP_IPC_LOCK rather than --ulimit memlock=-1:-1 (docker/README.md): raising
  # RLIMIT_MEMLOCK above the host's hard limit needs CAP_SYS_RESOURCE, which a
  # host that is itself a container may not have.
  podman run "${podman_opts[@]}" -d --name "$p-agent$i" --hostname "agent$i" --network "$net" "${sec[@]}" \
    --cap-add IPC_LOCK -v "$p-data$i:/data" -v "$p-spool$i:/var/lib/iofleet-agent" \
    "$img_agent" "${agent_args[@]}" --name="agent$i" --labels="fleet=compose,seccomp=$profile" \
    >/dev/null 2>>"$tmp/podman.log" || fail "podman run agent$i: $(tail -n 3 "$tmp/podman.log")"
done

export HTTP=http://$ctl_ip:7080
python3 - <<'PY' || exit 1
import json, os, sys, time, urllib.request, urllib.error

http = os.environ["HTTP"]

def api(method, path, body=None):
    req = urllib.request.Request(f"{http}/api/v1{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except OSError as e:
        return 0, str(e)

def fail(msg):
    print(f"compose-test: FAIL: {msg}")
    sys.exit(1)

# ---- 3. agents up; io_uring where the profile allows it ----
names = ["agent1", "agent2", "agent3"]
deadline = time.time() + 60
while True:
    st, body = api("GET", "/agents")
    agents = {a["name"]: a for a in body.get("agents", [])} if st == 200 and isinstance(body, dict) else {}
    if all(agents.get(x, {}).get("state") == "up" for x in names):
        break
    if time.time() > deadline:
        fail(f"agents not all up after 60 s: {st} {body}")
    time.sleep(0.5)
engines = {x: (agents[x].get("inventory") or {}).get("engines", []) for x in names}
print("compose-test: agents up; engines: " + "; ".join(f"{x} {engines[x]}" for x in names))
for x in ("agent1", "agent2"):
    if "io_uring" not in engines[x]:
        fail(f"{x} runs with the io_uring seccomp profile but reports no io_uring: {engines[x]}")
io_uring_blocked = "io_uring" not in engines["agent3"]

terminal = {"succeeded", "failed", "cancelled", "lost"}

def run_job(name, engine, hosts):
    fio = (f"[global]\nioengine={engine}\nbs=4k\nsize=8m\nfilename=/data/file0\n"
           f"time_based=1\nruntime=2\niodepth=8\n[{name}]\nrw=randread\ndirect=1\n")
    st, body = api("POST", "/jobs", {"name": name, "fio": fio, "hosts": hosts,
                                     "tags": {"suite": "compose-test"}})
    if st != 201 or not isinstance(body, dict) or not body.get("id"):
        fail(f"POST /jobs ({name}) -> {st}: {body}")
    job_id = body["id"]
    deadline = time.time() + 120
    while True:
        st, j = api("GET", f"/jobs/{job_id}")
        runs = j.get("runs", []) if st == 200 and isinstance(j, dict) else []
        if len(runs) == len(hosts) and all(r["state"] in terminal for r in runs):
            return job_id, runs
        if time.time() > deadline:
            fail(f"job {name} ({job_id}) not finished after 120 s: {j}")
        time.sleep(0.5)

# ---- 4. O_DIRECT reads on a file in each agent's volume: psync, then io_uring ----
for engine in ("psync", "io_uring"):
    job_id, runs = run_job(f"compose-{engine}", engine, ["agent1", "agent2"])
    bad = [(r["host"], r["state"], r.get("error")) for r in runs if r["state"] != "succeeded"]
    if bad:
        fail(f"{engine}: runs not succeeded: {bad}")
    for r in runs:
        st, full = api("GET", f"/runs/{r['id']}")
        res = full.get("result") if st == 200 and isinstance(full, dict) else None
        jobs = res.get("jobs") if isinstance(res, dict) else None
        if not jobs:
            fail(f"{engine}: run {r['id']} on {r['host']} has no result: {st} {full}")
        opts = jobs[0].get("job options", {})
        ios = jobs[0].get("read", {}).get("total_ios", 0)
        iops = jobs[0].get("read", {}).get("iops", 0)
        if not ios:
            fail(f"{engine}: run {r['id']} on {r['host']} did no reads: {jobs[0].get('read')}")
        if str(opts.get("direct")) != "1":
            fail(f"{engine}: run {r['id']} result does not say direct=1: job options {opts}")
        print(f"compose-test: {engine} O_DIRECT randread on {r['host']}:/data/file0: "
              f"succeeded, {ios} reads ({iops:.0f} IOPS), run {r['id']}")

# ---- 5. io_uring under podman's default seccomp profile ----
job_id, runs = run_job("compose-io_uring-default-seccomp", "io_uring", ["agent3"])
r = runs[0]
if r["state"] == "succeeded":
    if io_uring_blocked:
        fail("agent3 reported io_uring unavailable but its io_uring run succeeded")
    print("compose-test: NOTE: podman's default seccomp profile allows io_uring on this "
          "host: the io_uring run on agent3 succeeded")
else:
    err = r.get("error") or ""
    st, full = api("GET", f"/runs/{r['id']}")
    if isinstance(full, dict):
        err = err or (full.get("result") or {}).get("error", "") or full.get("error", "")
    if "io_uring" not in err:
        fail(f"io_uring run under the default profile {r['state']} without naming io_uring: {full}")
    print(f"compose-test: io_uring under podman's default seccomp profile: {r['state']}: {err}")
PY

# The images' HEALTHCHECKs (docker/healthcheck.sh, pg_isready), run once each:
# podman schedules them with systemd timers, which a host without systemd lacks.
for c in db controller agent1; do
  out=$(podman healthcheck run "$p-$c" 2>&1) || fail "healthcheck of $c: ${out:-unhealthy}"
done
echo "compose-test: HEALTHCHECK healthy: db, controller, agent1"

# The results are in PostgreSQL (peer auth over the socket, as the image's postgres user).
rows=$(podman exec "$p-db" psql -d iofleet -tAc "SELECT count(*) FROM results WHERE ok" 2>&1) ||
  fail "psql: $rows"
[ "$rows" -ge 4 ] || fail "PostgreSQL holds $rows successful results, want >= 4"
echo "compose-test: PostgreSQL holds $rows successful results"

# ---- 6. teardown leaves nothing ----
trap - EXIT
podman rm -f -v -t 0 "${containers[@]}" >/dev/null 2>>"$tmp/podman.log"
podman volume rm -f "${volumes[@]}" >/dev/null
podman network rm -f "$net" >/dev/null
rm -rf "$tmp"
left=$(podman ps -a --format '{{.Names}}' | grep -F "$p-" || true)
left+=$(podman volume ls --format '{{.Name}}' | grep -F "$p-" || true)
left+=$(podman network ls --format '{{.Name}}' | grep -F "$p-" || true)
left+=$(comm -13 <(echo "$volumes_before") <(podman volume ls -q | sort) | tr '\n' ' ')
[ -z "$left" ] || fail "left after teardown: $left"
echo "compose-test: PASS in $((SECONDS - start)) s (controller + PostgreSQL + 3 agents as containers; teardown clean)"
